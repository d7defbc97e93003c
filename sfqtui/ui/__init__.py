"""The Textual dashboard: views that render state rebuilt from the event log."""
