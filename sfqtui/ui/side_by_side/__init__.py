"""Runs side by side in lockstep, what each pane says at a step, and lessons."""
