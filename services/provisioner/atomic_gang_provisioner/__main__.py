"""``python -m atomic_gang_provisioner``."""

from atomic_gang_provisioner.main import main

main()
