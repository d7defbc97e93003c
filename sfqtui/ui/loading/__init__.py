"""The runs and their loading: background jobs that only post messages, and the handler that takes them in."""
