"""``atomic-gang``: the command-line face of the shared core (CI, pre-commit)."""
