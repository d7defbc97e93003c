"""The engine model (docs/engine.md): an engine's parameters (``model``), a replay's engines
(``settings``), the engines behind the balancer on a replay's clock (``pool``), and their
limits under ``--slots auto`` (``limits``). The emulator admits requests by the same rule."""
