"""What a request costs and how long it holds a slot: the cost estimator of semantics §6
(``estimator``) and the fixed service model of §2 (``service``). The proxy prices with the
same estimator."""
