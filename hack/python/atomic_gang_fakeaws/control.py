"""The control API, shared by the in-process facade and the HTTP server.

:class:`FakeAws` wraps the active :class:`FakeState`: set capacity, add
capacity reservations (``reservations.ReservationSpec``), read the layer's
own Capacity Block terminations, add and clear fault rules, switch throttling, read the
call log (the network verbs come from ``netcontrol``). :class:`ControlClient` offers the
same verbs over HTTP for a layer started with ``python -m atomic_gang_fakeaws serve``.
"""

from __future__ import annotations

from typing import Any

import httpx
from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.ec2.models import ec2_backends

from atomic_gang_fakeaws.netcontrol import NetworkControl, NetworkControlClient
from atomic_gang_fakeaws.reservations import CapacityReservation, ReservationSpec
from atomic_gang_fakeaws.rules import Rule
from atomic_gang_fakeaws.state import FakeState


class FakeAws(NetworkControl):
    def __init__(self, state: FakeState) -> None:
        self.state = state

    def set_capacity(self, zone: str, instance_type: str, count: int | None) -> None:
        self.state.set_capacity(zone, instance_type, count)

    def set_default_capacity(self, count: int | None) -> None:
        self.state.default_capacity = count

    def add_reservation(self, reservation_id: str, **fields: Any) -> None:
        """Add or replace one (fields: :class:`ReservationSpec`'s, snake_case)."""
        self.put_reservation(ReservationSpec(reservation_id=reservation_id, **fields))

    def put_reservation(self, spec: ReservationSpec) -> None:
        with self.state.lock:
            self.state.reservations[spec.reservation_id] = CapacityReservation.from_spec(
                spec, now=self.state.wall(), account=DEFAULT_ACCOUNT_ID
            )

    def block_terminations(self) -> list[dict[str, Any]]:
        with self.state.lock:
            return [t.as_dict() for t in self.state.block_terminations]

    def add_rule(self, rule: Rule | dict[str, Any]) -> Rule:
        return self.state.add_rule(rule if isinstance(rule, Rule) else Rule(**rule))

    def clear_rules(self) -> None:
        with self.state.lock:
            self.state.rules.clear()

    def set_throttling(self, enabled: bool) -> None:
        self.state.throttler.enabled = enabled
        self.state.throttler.reset()

    def set_eni_detach_polls(self, polls: int) -> None:
        self.state.eni_detach_polls = polls

    def calls(self, action: str | None = None) -> list[dict[str, Any]]:
        with self.state.lock:
            return [c.as_dict() for c in self.state.calls if action in (None, c.action)]

    def clear_calls(self) -> None:
        with self.state.lock:
            self.state.calls.clear()

    def instance_states(
        self, *, tags: dict[str, str], region: str, account: str = DEFAULT_ACCOUNT_ID
    ) -> dict[str, str]:
        """The state of every instance carrying all of ``tags``, read straight from the
        backend: a harness's view (the node simulator's, standing in for kubelets, which
        call no EC2 API), so it costs no DescribeInstances and is not in the call log."""
        backend = ec2_backends[account][region]
        out: dict[str, str] = {}
        for reservation in list(backend.reservations.values()):
            for inst in list(reservation.instances):
                have = backend.tags.get(inst.id) or {}
                if all(have.get(k) == v for k, v in tags.items()):
                    out[inst.id] = inst.state
        return out


class ControlClient(NetworkControlClient):
    """HTTP client for the server's ``/_fake`` API."""

    def __init__(self, endpoint: str) -> None:
        self._http = httpx.Client(base_url=endpoint.rstrip("/") + "/_fake", timeout=10)

    def _send(self, method: str, path: str, body: Any = None) -> Any:
        resp = self._http.request(method, path, json=body)
        resp.raise_for_status()
        return resp.json()

    def set_capacity(self, zone: str, instance_type: str, count: int | None) -> None:
        self._send(
            "PUT", "/capacity", {"zone": zone, "instanceType": instance_type, "count": count}
        )

    def set_default_capacity(self, count: int | None) -> None:
        self._send("PUT", "/default-capacity", {"count": count})

    def add_reservation(self, reservation_id: str, **fields: Any) -> None:
        """As :meth:`FakeAws.add_reservation`; validated here, sent camelCase."""
        spec = ReservationSpec(reservation_id=reservation_id, **fields)
        self._send("POST", "/reservations", spec.wire())

    def block_terminations(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self._send("GET", "/block-terminations")
        return found

    def add_rule(self, rule: dict[str, Any]) -> dict[str, Any]:
        found: dict[str, Any] = self._send("POST", "/rules", rule)
        return found

    def clear_rules(self) -> None:
        self._send("DELETE", "/rules")

    def set_throttling(self, enabled: bool) -> None:
        self._send("PUT", "/throttling", {"enabled": enabled})

    def calls(self, action: str | None = None) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self._send(
            "GET", "/calls" + (f"?action={action}" if action else "")
        )
        return found

    def clear_calls(self) -> None:
        self._send("DELETE", "/calls")

    def instance_states(self, *, tags: dict[str, str], region: str) -> dict[str, str]:
        found: dict[str, str] = self._send(
            "POST", "/instance-states", {"tags": tags, "region": region}
        )
        return found

    def close(self) -> None:
        self._http.close()
