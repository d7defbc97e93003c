"""The panes of one run: meter band, event log (with its filter and search), why panel, cost shares, status line, replicas."""
