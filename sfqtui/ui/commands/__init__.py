"""The command palette: its entries, exports and re-runs, typed against what they need from the app."""
