"""Rules the pool phases share, each a pure function of the pool, what was observed and
the clock: a Capacity Block's start and end (``block``), a formed gang's health
(``health``) and the gang's network spread (``spread``). They are not phases: no pool is
ever "in" one; the phases in ``pool/phases`` call them."""
