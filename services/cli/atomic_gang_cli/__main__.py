"""``python -m atomic_gang_cli``."""

from atomic_gang_cli.main import main

main()
