"""Runs: what the dashboard opens (a trace replayed, a saved log, a live stream), each with
its own event table, timeline and cursor. No widgets here: the UI renders runs, and
headless tools can hold and step them too."""
