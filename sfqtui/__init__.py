"""sfqtui: replay, explain and watch Start-time Fair Queueing in LLM load balancers."""

__version__ = "0.1.0"
