"""One patch on moto's ``BaseResponse.call_action``: every call of every
service passes here, in-process and in server mode alike.

It logs the call, applies EC2 throttling, fires fault rules (errors before the
side effect; lost responses after it) and leaves the call's own fidelity
fixes to the per-action patches in ``ec2_launch`` and ``ec2_fidelity``.
"""

from __future__ import annotations

import contextlib
import html
import json
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from moto.core.responses import BaseResponse

from atomic_gang_fakeaws.errors import AwsError, LostResponseError, request_limit_exceeded
from atomic_gang_fakeaws.rules import Rule
from atomic_gang_fakeaws.state import Call, FakeState, active

_ORIGINAL: Callable[[Any], Any] = BaseResponse.call_action
_tls = threading.local()
BEFORE: dict[str, Callable[[FakeState, Any], None]] = {}
EVERY: list[Callable[[FakeState, Any], None]] = []  # before each call, e.g. the layer's clock


def current_rule() -> Rule | None:
    rule: Rule | None = getattr(_tls, "rule", None)
    return rule


def take_drop_flag() -> bool:
    """Server mode: whether the middleware must drop this request's connection."""
    flag = bool(getattr(_tls, "drop", False))
    _tls.drop = False
    return flag


def _flatten(value: Any, prefix: str, out: dict[str, str]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(value, list):
        for i, v in enumerate(value, 1):
            _flatten(v, f"{prefix}.{i}", out)
    else:
        out[prefix] = str(value)


def flat_params(resp: Any) -> dict[str, str]:
    query = getattr(resp, "querystring", None) or {}
    if query:
        skip = {"Action", "Version"}
        return {k: str(v[0]) for k, v in query.items() if k not in skip and v}
    out: dict[str, str] = {}
    with contextlib.suppress(TypeError, ValueError):
        _flatten(json.loads(resp.body or "{}"), "", out)
    return out


_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/")


def caller_key(resp: Any) -> str:
    """The request's access key id (moto's own lookup only knows 20-char AKIA keys)."""
    found = _CREDENTIAL.search(str((getattr(resp, "headers", None) or {}).get("Authorization", "")))
    return found.group(1) if found else ""


def _resources(action: str, params: dict[str, str]) -> int:
    if action == "RunInstances":
        return int(params.get("MaxCount", "1") or 1)
    if action == "TerminateInstances":
        return sum(1 for k in params if k.startswith("InstanceId."))
    return 0


def _before(state: FakeState, resp: Any, call: Call) -> Rule | None:
    for every in EVERY:
        every(state, resp)
    scope = f"{resp.current_account}/{resp.region}"
    metered = call.service == "ec2" and call.caller not in state.unthrottled
    if metered and not state.throttler.admit(
        scope=scope, action=call.action, resources=_resources(call.action, call.params)
    ):
        raise request_limit_exceeded()
    hook = BEFORE.get(call.action)
    if hook is not None:
        hook(state, resp)
    rule = state.take_rule(service=call.service, action=call.action, params=call.params)
    if rule is not None and rule.effect == "error":
        raise AwsError(rule.code, rule.message, status=rule.status, service=call.service)
    return rule


def _text(body: Any) -> str:
    return body.decode(errors="replace") if isinstance(body, bytes) else str(body)


def _error_code(body: Any) -> str:
    text = _text(body)
    found = re.search(r"<Code>([^<]+)</Code>", text) or re.search(r'"__type":\s*"([^"]+)"', text)
    return found.group(1).split("#")[-1] if found else "?"


def _error_message(body: Any) -> str:
    text = _text(body)
    found = re.search(r"<Message>([^<]*)</Message>", text)
    if found:
        return html.unescape(found.group(1))
    with contextlib.suppress(ValueError, AttributeError):
        doc = json.loads(text)
        return str(doc.get("message") or doc.get("Message") or "")
    return ""


def _lose(state: FakeState, action: str, result: Any) -> Any:
    if state.server_mode:
        _tls.drop = True
        return result
    raise LostResponseError(action)


def _original(resp: Any, state: FakeState) -> Any:
    try:
        return _ORIGINAL(resp)
    except NotImplementedError as err:
        if not state.server_mode:
            raise
        # moto's server would answer an HTML 500 that botocore retries; say what it is.
        raise AwsError(
            "NotImplemented", f"moto does not implement this: {err}", status=501
        ) from err


def call_action(self: Any) -> Any:
    state = active()
    if state is None:
        return _ORIGINAL(self)
    service = str(self.service_name or "")
    call = state.log(
        service=service,
        action=self._get_action(),
        params=flat_params(self),
        region=self.region,
        caller=caller_key(self),
    )
    started = time.perf_counter()
    try:
        rule = _before(state, self, call)
        if rule is not None and rule.effect == "timeout":
            call.outcome = "timeout"
            return _lose(state, call.action, (500, {}, ""))
        _tls.rule = rule
        status, headers, body = _original(self, state)
    except AwsError as err:
        call.outcome, call.status = f"error:{err.error_code}", err.code
        call.message = _error_message(err.description)
        raise
    finally:
        _tls.rule = None
        call.seconds = time.perf_counter() - started
    call.status = int(status)
    call.outcome = "ok" if call.status < 400 else f"error:{_error_code(body)}"
    call.message = "" if call.status < 400 else _error_message(body)
    if rule is not None and rule.effect == "lost_response" and call.status < 400:
        call.outcome = "lost"
        return _lose(state, call.action, (status, headers, body))
    return status, headers, body


PATCHES = [(BaseResponse, "call_action", call_action)]
