"""The requests a replay reads: the trace in compact columns (``trace``), read a chunk at a time
(``chunks``), and the window of the chunks a replay can still mention (``window``)."""
