"""The pure core: schedulers, the replay engine, the cost estimator and log audits.

Nothing under this package may import textual, rich, polars, pyarrow or numpy;
`tests/house/test_layers.py` and the import-linter contracts in `pyproject.toml` hold it to that.
"""
