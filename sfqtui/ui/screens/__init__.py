"""Screens over the dashboard: the calibration view and the keys' help."""
