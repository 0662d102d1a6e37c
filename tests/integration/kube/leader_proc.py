"""A candidate in its own process, for the SIGKILL failover test.

Usage: ``python leader_proc.py KUBECONFIG NAMESPACE LEASE IDENTITY``. Prints
``LEADING`` once it holds the Lease, then runs until killed.
"""

from __future__ import annotations

import sys
import threading

from atomic_gang_provisioner.kube import KubeClient, LeaderElectionConfig, LeaderElector
from tests.integration.kube.timings import DURATION, RENEW, RETRY


def main() -> None:
    kubeconfig, namespace, lease, identity = sys.argv[1:5]
    config = LeaderElectionConfig(
        lease_name=lease,
        namespace=namespace,
        identity=identity,
        lease_duration=DURATION,
        renew_deadline=RENEW,
        retry_period=RETRY,
    )
    elector = LeaderElector(
        KubeClient.from_kubeconfig(kubeconfig),
        config,
        on_started_leading=lambda: print("LEADING", flush=True),
        on_stopped_leading=lambda: print("STOPPED", flush=True),
    )
    elector.start()
    threading.Event().wait()


if __name__ == "__main__":
    main()
