"""An event log in memory: the columnar table, states rebuilt at any event, the cursor over it."""
