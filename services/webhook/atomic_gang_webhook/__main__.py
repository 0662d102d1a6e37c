"""``python -m atomic_gang_webhook``."""

from atomic_gang_webhook.main import main

main()
