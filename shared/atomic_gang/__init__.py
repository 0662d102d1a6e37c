"""atomic_gang: the typed core shared by the webhook, the provisioner and the CLI.

It turns a Job's ``atomic-gang.k8s.aws/*`` annotations and pool label into one
frozen :class:`GangSpec`, with the controller defaults resolved, or raises
:class:`GangValidationError` listing every violation at once.
"""

from atomic_gang.durations import GoDuration
from atomic_gang.errors import GangValidationError, Reason, Violation
from atomic_gang.job import (
    Findings,
    review_job,
    review_job_update,
    validate_job,
)
from atomic_gang.parse import parse_gang
from atomic_gang.settings import GangSettings, load_settings
from atomic_gang.spec import AmiVariant, GangSpec, Mode

__all__ = [
    "AmiVariant",
    "Findings",
    "GangSettings",
    "GangSpec",
    "GangValidationError",
    "GoDuration",
    "Mode",
    "Reason",
    "Violation",
    "load_settings",
    "parse_gang",
    "review_job",
    "review_job_update",
    "validate_job",
]
