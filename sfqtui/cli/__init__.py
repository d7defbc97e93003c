"""The `sfqtui` command line (typer)."""
