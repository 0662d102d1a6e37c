"""Our Kueue objects: AdmissionCheck, ResourceFlavor, ClusterQueue, LocalQueue.

Kueue keeps a ClusterQueue inactive (admitting nothing) while one of its
AdmissionChecks lacks ``Active=True``. Setting that condition is the job of
our provisioner's AdmissionCheck reconciler; until the provisioner runs in
the stack, ``options.check_stand_in`` makes the launcher set it.
"""

from __future__ import annotations

import datetime as dt
import json

from atomic_gang_devstack import dev_objects as dev
from atomic_gang_devstack.component import Component, Context


class KueueQueues(Component):
    name = "kueue-queues"
    needs = ("kueue",)
    ready_timeout = 60.0

    def start(self, ctx: Context) -> None:
        ctx.kubectl.apply(
            [
                dev.resource_flavor(),
                dev.admission_check(),
                dev.cluster_queue(),
                dev.local_queue(ctx.options.namespace),
            ]
        )
        if ctx.options.check_stand_in:
            mark_check_active(ctx)

    def wait_ready(self, ctx: Context) -> None:
        if not ctx.options.check_stand_in:
            return  # the queue turns Active once the real controller reports in
        ctx.kubectl.run(
            "wait",
            "--for=condition=Active",
            f"--timeout={self.ready_timeout:.0f}s",
            f"clusterqueue/{dev.CLUSTER_QUEUE}",
        )


def mark_check_active(ctx: Context) -> None:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    ctx.kubectl.run(
        "patch",
        "admissioncheck",
        dev.ADMISSION_CHECK,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(dev.active_condition(now)),
    )
