"""On the real node: a tenant's pod holding 200 slow connections to the active
controller's port never gets it restarted. The kubelet's probes go to the probe port
(``controller.healthPort``), and the metrics port sheds its oldest slow client instead of
refusing new ones."""

from __future__ import annotations

import re
import time

import httpx
import pytest

from atomic_gang_devstack.components.node import node_images
from tests.e2e.cluster.conftest import CONTROLLER_SELECTOR, Cluster, bound_pod, is_ready
from tests.e2e.kube import wait_for
from tests.support.wait import wait_for as wait_value

pytestmark = pytest.mark.e2e
METRICS_PORT, HEALTH_PORT = 8080, 8081  # the chart's controller.httpPort and healthPort
HELD = 200
CAP = 32  # the metrics port's connection cap (httpserver.Limits.connections)
ATTACK_SECONDS = 45  # past the liveness probe's 3 failures of 10 s: a restart would show
# The attacker keeps HELD connections open, each with a request head it never finishes,
# dialling again for every one the server cuts; it says how many it holds and lost.
ATTACKER = """
import select, socket, sys, time
host, port, want = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
held, cut, said = [], 0, 0.0
def dial():
    s = socket.create_connection((host, port), timeout=2)
    s.sendall(b"GET /metrics HTTP/1.1\\r\\nHost: x\\r\\n")
    return s
while True:
    while len(held) < want:
        try:
            held.append(dial())
        except OSError:
            cut += 1
            break
    ready, _, _ = select.select(held, [], [], 0.5)
    for s in ready:
        try:
            data = s.recv(1)
        except OSError:
            data = b""
        if not data:
            held.remove(s)
            s.close()
            cut += 1
    if time.monotonic() - said > 2:
        print(f"held={len(held)} cut={cut}", flush=True)
        said = time.monotonic()
"""


def held_and_cut(cluster: Cluster, name: str, namespace: str) -> tuple[int, int]:
    lines = re.findall(r"held=(\d+) cut=(\d+)", cluster.logs(name, namespace))
    return (int(lines[-1][0]), int(lines[-1][1])) if lines else (0, 0)


def test_200_slow_connections_from_a_tenant_pod_leave_the_controllers_probes_answering(
    cluster: Cluster, namespace: str
) -> None:
    leader = wait_value(cluster.leader, timeout=60, what="a leader")
    (pod,) = [p for p in cluster.pods(CONTROLLER_SELECTOR) if p["metadata"]["name"] == leader]
    ip = pod["status"]["podIP"]
    restarts = pod["status"]["containerStatuses"][0]["restartCount"]
    image = node_images(cluster.ctx)["controller"].ref
    attack = ("/opt/venv/bin/python", "-c", ATTACKER, ip, str(METRICS_PORT), str(HELD))
    cluster.kube.apply(bound_pod("slow-clients", namespace, image, attack))
    wait_for(
        lambda: held_and_cut(cluster, "slow-clients", namespace)[0] > CAP,
        timeout=60,
        what=f"the tenant's pod holding more connections than the cap ({CAP})",
    )

    end = time.monotonic() + ATTACK_SECONDS
    samples = 0
    while time.monotonic() < end:
        now = cluster.kube.get("pod", leader, "-n", pod["metadata"]["namespace"])
        assert is_ready(now), now["status"]
        assert now["status"]["containerStatuses"][0]["restartCount"] == restarts
        for path in ("/healthz", "/readyz"):
            answer = httpx.get(f"http://{ip}:{HEALTH_PORT}{path}", timeout=5)  # the probes'
            assert answer.status_code == 200, (path, answer.text)
        samples += 1
    held, cut = held_and_cut(cluster, "slow-clients", namespace)
    # The attack ran to the end, holding more connections than the server serves at once
    # (its cap, 32): what the server cut is dialled again, a dial past a full backlog
    # waits out its timeout, so the count moves between the cap and HELD.
    assert held > CAP
    assert cut > 0  # the server cut its slow clients (the cap sheds, the head deadline)
    assert samples >= 5
