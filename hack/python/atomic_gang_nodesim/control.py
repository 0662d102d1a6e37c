"""The simulator's control API (JSON over HTTP on loopback) and its client.

- ``GET /healthz``: 200 once the first tick ran; live instances by phase.
- ``GET /state``: the knobs, every live instance seen (phase, pool, Node, reason), and
  the last 1,000 that are gone (with the phase they ended in).
- ``PUT /boot-delay`` ``{"seconds", "jitter"}``: boot time of instances seen from now on.
- ``PUT /device-delay`` ``{"seconds"}``: from a Node's registration to its device plugins'
  resources in allocatable, for Nodes registered from now on (0: at registration).
- ``POST /drops`` ``{"instanceId" | "pool" | "nth", "count"}``: those joins never happen;
  ``DELETE /drops`` forgets every rule.
- ``POST /not-ready`` / ``POST /ready`` ``{"instanceId"}``: hold its Node NotReady / release it.
- ``POST /terminate`` ``{"instanceId"}``: TerminateInstances behind the provisioner's back.
- ``POST /condition`` ``{"instanceId", "type", "status", "reason", "message"}``: hold this
  Node condition as the EKS node monitoring agent reports it (a failed GPU).
"""

from __future__ import annotations

import collections
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
from pydantic import ValidationError

from atomic_gang_nodesim.health import release_not_ready
from atomic_gang_nodesim.knobs import AgentCondition, BootDelay, DevicePlugins, DropRule
from atomic_gang_nodesim.sim import Simulator, log, rfc3339_now


class Controls:
    """The knobs as verbs (the control API calls these); each wakes the loop."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim

    def _changed(self) -> None:
        self.sim.wake.set()

    def set_boot(self, boot: BootDelay) -> None:
        with self.sim.lock:
            self.sim.knobs.boot = boot
        self._changed()

    def set_devices(self, devices: DevicePlugins) -> None:
        with self.sim.lock:
            self.sim.knobs.devices = devices

    def add_drop(self, rule: DropRule) -> None:
        with self.sim.lock:
            self.sim.knobs.drops.append(rule)

    def clear_drops(self) -> None:
        with self.sim.lock:
            self.sim.knobs.drops.clear()

    def not_ready(self, instance_id: str) -> None:
        with self.sim.lock:
            if instance_id not in self.sim.knobs.notReady:
                self.sim.knobs.notReady.append(instance_id)
        self._changed()

    def ready(self, instance_id: str) -> None:
        with self.sim.lock:
            if instance_id in self.sim.knobs.notReady:
                self.sim.knobs.notReady.remove(instance_id)
            t = self.sim.tracked.get(instance_id)
            node = t.node if t is not None and t.phase == "joined" else ""
        if node:
            release_not_ready(self.sim.kube, node)

    def terminate(self, instance_id: str) -> None:
        """Terminate behind the provisioner's back (a hardware failure, a user's mistake)."""
        self.sim.view.terminate(instance_id)
        log.info("terminated %s behind the provisioner's back", instance_id)
        self._changed()

    def condition(self, cond: AgentCondition) -> None:
        """Hold ``cond`` on the instance's Node from now on (one per type and instance)."""
        if not cond.since:
            cond = cond.model_copy(update={"since": rfc3339_now()})
        with self.sim.lock:
            kept = [
                c
                for c in self.sim.knobs.conditions
                if (c.instanceId, c.type) != (cond.instanceId, cond.type)
            ]
            self.sim.knobs.conditions = [*kept, cond]
        self._changed()

    def health(self) -> dict[str, Any]:
        with self.sim.lock:
            phases = collections.Counter(t.phase for t in self.sim.tracked.values())
        return {"ok": self.sim.ticks > 0, "ticks": self.sim.ticks, "phases": dict(phases)}

    def snapshot(self) -> dict[str, Any]:
        with self.sim.lock:
            return {
                "ticks": self.sim.ticks,
                "describeSeconds": round(self.sim.describe_seconds, 3),
                "knobs": self.sim.knobs.model_dump(),
                "instances": {i: t.as_dict() for i, t in self.sim.tracked.items()},
                "gone": {i: t.as_dict() for i, t in self.sim.gone.items()},
            }


Handler = Callable[[Controls, dict[str, Any]], Any]

ROUTES: dict[tuple[str, str], Handler] = {
    ("GET", "/healthz"): lambda c, b: c.health(),
    ("GET", "/state"): lambda c, b: c.snapshot(),
    ("PUT", "/boot-delay"): lambda c, b: c.set_boot(BootDelay.model_validate(b)),
    ("PUT", "/device-delay"): lambda c, b: c.set_devices(DevicePlugins.model_validate(b)),
    ("POST", "/drops"): lambda c, b: c.add_drop(DropRule.model_validate(b)),
    ("DELETE", "/drops"): lambda c, b: c.clear_drops(),
    ("POST", "/not-ready"): lambda c, b: c.not_ready(str(b["instanceId"])),
    ("POST", "/ready"): lambda c, b: c.ready(str(b["instanceId"])),
    ("POST", "/terminate"): lambda c, b: c.terminate(str(b["instanceId"])),
    ("POST", "/condition"): lambda c, b: c.condition(AgentCondition.model_validate(b)),
}


def _handler(controls: Controls) -> type[BaseHTTPRequestHandler]:
    class ControlHandler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            route = ROUTES.get((self.command, self.path.split("?", 1)[0]))
            if route is None:
                self._reply(404, {"error": f"no route {self.command} {self.path}"})
                return
            try:
                size = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(size) or b"{}")
                out = route(controls, body)
            except (KeyError, ValueError, ValidationError) as exc:
                self._reply(400, {"error": str(exc)})
                return
            healthz = self.path == "/healthz"
            ok = not healthz or bool(out["ok"])
            self._reply(200 if ok else 503, {"ok": True} if out is None else out)

        def _reply(self, status: int, body: Any) -> None:
            data = json.dumps(body, default=str).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            return

    return ControlHandler


def serve(controls: Controls, *, host: str, port: int) -> ThreadingHTTPServer:
    """Start the control API on a daemon thread; ``port`` 0 picks a free one."""
    server = ThreadingHTTPServer((host, port), _handler(controls))
    threading.Thread(target=server.serve_forever, daemon=True, name="nodesim-control").start()
    return server


class NodeSimClient:
    """HTTP client for a running simulator's control API."""

    def __init__(self, url: str) -> None:
        self._http = httpx.Client(base_url=url.rstrip("/"), timeout=30)

    def _send(self, method: str, path: str, body: Any = None) -> Any:
        resp = self._http.request(method, path, json=body)
        resp.raise_for_status()
        return resp.json()

    def phases(self) -> dict[str, int]:
        """Live instances by phase (booting, joined, dropped, failed): a cheap summary."""
        found: dict[str, int] = self._send("GET", "/healthz")["phases"]
        return found

    def healthy(self) -> bool:
        try:
            return self._http.get("/healthz").is_success
        except httpx.HTTPError:
            return False

    def state(self) -> dict[str, Any]:
        found: dict[str, Any] = self._send("GET", "/state")
        return found

    def set_boot_delay(self, seconds: float, jitter: float = 0.0) -> None:
        self._send("PUT", "/boot-delay", {"seconds": seconds, "jitter": jitter})

    def set_device_delay(self, seconds: float) -> None:
        self._send("PUT", "/device-delay", {"seconds": seconds})

    def drop(self, *, count: int = 1, **selector: Any) -> None:
        """``drop(pool="p")``, ``drop(instanceId="i-…")`` or ``drop(nth=3)``."""
        self._send("POST", "/drops", {**selector, "count": count})

    def clear_drops(self) -> None:
        self._send("DELETE", "/drops")

    def not_ready(self, instance_id: str) -> None:
        self._send("POST", "/not-ready", {"instanceId": instance_id})

    def ready(self, instance_id: str) -> None:
        self._send("POST", "/ready", {"instanceId": instance_id})

    def terminate(self, instance_id: str) -> None:
        self._send("POST", "/terminate", {"instanceId": instance_id})

    def set_condition(
        self,
        instance_id: str,
        type_: str,
        status: str,
        *,
        reason: str = "",
        message: str = "",
        since: str = "",
    ) -> None:
        """Hold a Node condition on the instance's Node as the node monitoring agent
        would: ``set_condition(iid, "AcceleratedHardwareReady", "False",
        reason="NvidiaXID79Error")``; ``since``: its lastTransitionTime (RFC 3339; now
        by default)."""
        body = {
            "instanceId": instance_id,
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
            "since": since,
        }
        self._send("POST", "/condition", body)

    def close(self) -> None:
        self._http.close()
