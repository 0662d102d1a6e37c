"""The apiserver's write latency as any client sees it: a ConfigMap PATCH every 200 ms
from a process of its own (so no bench or controller thread shares its interpreter),
one ``<epoch seconds> <latency seconds>`` line each, until stopped or orphaned.

Usage: .venv/bin/python -m bench.apiserver_probe KUBECONFIG OUT [--every 0.2]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time
from pathlib import Path

from atomic_gang.resources import CONFIG_MAPS
from atomic_gang_provisioner.kube import KubeClient
from atomic_gang_provisioner.kube.api_errors import AlreadyExistsError, KubeError

NAME, NAMESPACE = "bench-apiserver-probe", "default"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("kubeconfig", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--every", type=float, default=0.2, help="seconds between writes")
    args = ap.parse_args()
    stopping: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    parent = os.getppid()
    kube = KubeClient.from_kubeconfig(args.kubeconfig)
    with contextlib.suppress(AlreadyExistsError):
        kube.create(CONFIG_MAPS, {"metadata": {"name": NAME, "namespace": NAMESPACE}})
    with args.out.open("w") as out:
        n = 0
        while not stopping and os.getppid() == parent:
            n += 1
            start = time.time()
            try:
                kube.patch(CONFIG_MAPS, NAME, {"data": {"n": str(n)}}, namespace=NAMESPACE)
            except KubeError as err:  # a refused or timed-out write is no latency sample
                print(f"apiserver_probe: write {n} failed: {err}", file=sys.stderr)
            else:
                out.write(f"{start:.6f} {time.time() - start:.6f}\n")
                out.flush()
            time.sleep(args.every)  # the probe's own pace, not a synchronisation


if __name__ == "__main__":
    main()
