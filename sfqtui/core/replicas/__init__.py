"""Several balancer replicas (semantics §11): their settings, routers, share sync's exchange,
and the layer a replay's loop calls to route arrivals and name each event's replica (``group``)."""
