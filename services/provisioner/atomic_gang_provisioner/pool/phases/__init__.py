"""One module per GangNodePool phase, each with a pure ``decide(pool, observed, now)``."""
