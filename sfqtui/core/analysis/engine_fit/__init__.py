"""Fitting the engine model (core/engines/model.py) to measured service times (docs/engine.md, "Fitting the model").

``lived``: what each request lived through in the engine, rebuilt from when it was sent
and when it came back; ``solve``: the step times that explain those lives best;
``fit``: the split into fitted and held-out requests, the search over the engine's places,
and the errors on the requests the fit never saw.
"""
