"""Many independent replays at once, on Dask distributed: plan the runs, measure each, collect one row per run."""
