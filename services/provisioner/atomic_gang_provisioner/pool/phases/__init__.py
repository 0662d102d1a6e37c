"""One module per GangNodePool phase, each a story: ``story(pool, observed, now)``."""
