"""The replay engine: a trace, a scheduler, slots and a service model in; §7 events out."""
