"""The dashboard's side of a live proxy: the client of its event stream (semantics §8), the source the views read, and the recording of what was seen."""
