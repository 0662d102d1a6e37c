"""One real webhook process (uvicorn over TLS) per module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.webhook_proc import WebhookProcess, run_webhook


@pytest.fixture(scope="module")
def webhook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookProcess]:
    tmp: Path = tmp_path_factory.mktemp("webhook")
    with run_webhook(tmp) as wh:
        yield wh
