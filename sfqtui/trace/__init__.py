"""Files: trace and event-log Parquet (polars and pyarrow live here, never in the core)."""
