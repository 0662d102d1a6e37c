"""The webhook's process-wide state: settings, metrics, limits, the log budgets."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from atomic_gang import GangSettings
from atomic_gang_webhook.config import MAX_BODY_BYTES
from atomic_gang_webhook.metrics import WebhookMetrics


@dataclass
class LogBudget:
    """At most ``per_second`` denial lines a second: a CI job looping on a bad Job must
    not flood the log (every denial is still counted in the metrics)."""

    per_second: int = 20
    window: int = 0
    used: int = 0
    suppressed: int = 0

    def take(self, now: float) -> int | None:
        """None: stay quiet; else the number of lines suppressed since the last one."""
        second = int(now)
        if second != self.window:
            self.window, self.used = second, 0
        if self.used >= self.per_second:
            self.suppressed += 1
            return None
        self.used += 1
        skipped, self.suppressed = self.suppressed, 0
        return skipped


class BudgetFilter(logging.Filter):
    """Rate-limits a logger's records with a LogBudget: uvicorn logs a warning for
    every unparseable request, which a hostile client can send by the thousand."""

    def __init__(self, budget: LogBudget) -> None:
        super().__init__()
        self.budget = budget

    def filter(self, record: logging.LogRecord) -> bool:
        skipped = self.budget.take(time.monotonic())
        if skipped is None:
            return False
        if skipped:
            record.suppressed_since_last = skipped
        return True


@dataclass
class AppState:
    settings: GangSettings
    metrics: WebhookMetrics = field(default_factory=WebhookMetrics.create)
    max_body_bytes: int = MAX_BODY_BYTES
    ready: bool = True
    log_budget: LogBudget = field(default_factory=LogBudget)  # denial lines
    malformed_budget: LogBudget = field(default_factory=LogBudget)  # "malformed review" lines
