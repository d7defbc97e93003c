"""The replay of semantics §2: a trace, a scheduler, slots and servers in; §7 events out."""
