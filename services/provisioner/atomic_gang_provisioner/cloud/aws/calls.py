"""One AWS call, classified and retried.

botocore exceptions become :class:`CloudError` here (transport failures get
pseudo-codes such as ``ReadTimeout``, and no usable credentials
``CredentialsUnavailable``), so callers tell an AWS failure from a bug by its
type alone. Only throttled and transient errors are
retried, after a jittered backoff, with the very same parameters: a launch is
retried with the same ClientToken, so a lost response cannot double-launch.

Every call first takes its tokens from the :class:`ApiBudget`. Other calls wait for
them (the injected sleeper); a launch never waits inside a reconcile: short of
tokens, or throttled by EC2, it raises at once with the seconds until a token is back,
and the pool retries the same ClientToken then.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from botocore.exceptions import (
    ClientError,
    ConnectTimeoutError,
    CredentialRetrievalError,
    HTTPClientError,
    MetadataRetrievalError,
    NoAuthTokenError,
    NoCredentialsError,
    PartialCredentialsError,
    ReadTimeoutError,
    SSOError,
    TokenRetrievalError,
)
from botocore.exceptions import ConnectionError as BotoConnectionError
from botocore.parsers import ResponseParserError

from atomic_gang_provisioner.cloud.error_codes import OVER_BUDGET, CloudError
from atomic_gang_provisioner.cloud.retry import Backoff, Sleeper
from atomic_gang_provisioner.cloud.turns.budget import ApiBudget

LAUNCHES = frozenset({"run_instances", "create_fleet"})

# Credentials that cannot be had right now: missing, or their provider (the Pod Identity
# agent, IMDS for auth.mode=node, STS for IRSA) failing.
_NO_CREDENTIALS = (
    NoCredentialsError,
    PartialCredentialsError,
    CredentialRetrievalError,
    MetadataRetrievalError,
    NoAuthTokenError,
    TokenRetrievalError,
    SSOError,
)


def to_cloud_error(exc: Exception) -> CloudError | None:
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return CloudError(
            str(err.get("Code", "Unknown")), str(err.get("Message", "")), http_status=status
        )
    if isinstance(exc, ReadTimeoutError):
        return CloudError("ReadTimeout", str(exc))
    if isinstance(exc, ConnectTimeoutError):
        return CloudError("ConnectTimeout", str(exc))
    if isinstance(exc, BotoConnectionError | HTTPClientError):
        return CloudError("ConnectionError", str(exc))
    if isinstance(exc, _NO_CREDENTIALS):
        return CloudError("CredentialsUnavailable", f"{type(exc).__name__}: {exc}")
    if isinstance(exc, ResponseParserError):
        return CloudError("InternalError", f"unparseable response: {exc}", http_status=500)
    return None


class Caller:
    """Runs client methods within the budget and the retry policy; reports every request
    it sent with its outcome (``ok`` or the error's class: ``throttled``, ``capacity``, …)
    to ``on_call``."""

    def __init__(
        self,
        *,
        backoff: Backoff,
        sleeper: Sleeper,
        on_call: Callable[[str, str], None] | None = None,
        budget: ApiBudget | None = None,
    ) -> None:
        self.backoff = backoff
        self.sleeper = sleeper
        self.on_call = on_call
        self.budget = budget

    def _take(self, operation: str, params: dict[str, Any]) -> None:
        if self.budget is None:
            return
        instances = int(params.get("MaxCount", 0)) if operation == "run_instances" else 0
        while wait := self.budget.take(operation, instances=instances):
            if operation in LAUNCHES:
                raise CloudError(OVER_BUDGET, f"{operation}: no token", retry_after=wait)
            self.sleeper(wait)

    def call(self, client: Any, operation: str, **params: Any) -> dict[str, Any]:
        attempt = 0
        while True:
            self._take(operation, params)
            try:
                result: dict[str, Any] = getattr(client, operation)(**params)
                self._sent(operation, "ok")
                return result
            except Exception as exc:
                err = to_cloud_error(exc)
                self._sent(operation, "unexpected" if err is None else err.kind)
                if err is None:
                    raise
                if err.kind == "throttled" and self.budget is not None:
                    err.retry_after = self.budget.throttled(operation)
                    if operation in LAUNCHES:
                        raise err from exc  # the pool retries this ClientToken then
                    if attempt + 1 < self.backoff.max_attempts:
                        attempt += 1
                        continue  # the next take waits for the refill
                if not err.retryable or attempt + 1 >= self.backoff.max_attempts:
                    raise err from exc
            self.sleeper(self.backoff.delay(attempt))
            attempt += 1

    def _sent(self, operation: str, outcome: str) -> None:
        if self.on_call is not None:
            self.on_call(operation, outcome)

    def pages(
        self, client: Any, operation: str, key: str, **params: Any
    ) -> Iterator[dict[str, Any]]:
        """Follow NextToken; each page is retried on its own."""
        token: str | None = None
        while True:
            page = self.call(client, operation, **params, **({"NextToken": token} if token else {}))
            yield from page.get(key, [])
            token = page.get("NextToken")
            if not token:
                return
