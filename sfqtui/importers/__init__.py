"""`sfqtui import`: real public traces to the semantics §1 schema."""
