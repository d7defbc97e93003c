"""Reusable widgets: line views that redraw only changed lines, fitted lines and columns, prompts, clicks."""
