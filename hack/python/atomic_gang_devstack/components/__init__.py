"""The stack's components and the default set, in dependency order.

The cloud side (moto with the fault layer and its set-up, the GangNodePool
CRD, provisioner replicas, the node-join simulator) is appended on request, and
so are the real node and, on it, cert-manager plus our chart (``in_cluster``).
"""

from __future__ import annotations

from atomic_gang_devstack.component import Component
from atomic_gang_devstack.components.cloud import FakeAws, GangCrd, Provisioner
from atomic_gang_devstack.components.control_plane import (
    ApiServer,
    ControllerManager,
    Etcd,
    Scheduler,
)
from atomic_gang_devstack.components.incluster import (
    CertManagerCAInjector,
    CertManagerController,
    CertManagerCrds,
    ChartRelease,
)
from atomic_gang_devstack.components.jobset import JobSetController, JobSetCrd
from atomic_gang_devstack.components.kueue import Kueue
from atomic_gang_devstack.components.kwok import FakeNodes, Kwok
from atomic_gang_devstack.components.node import Containerd, Kubelet, NodeHost, NodeImages
from atomic_gang_devstack.components.policy import GangNodePolicy
from atomic_gang_devstack.components.queues import KueueQueues
from atomic_gang_devstack.components.simulated import FakeAwsSetup, NodeSim
from atomic_gang_devstack.components.trainer import TrainerController, TrainerCrds, TrainerRuntimes
from atomic_gang_devstack.components.webhook import GangWebhook, WebhookRegistration
from atomic_gang_devstack.state import StackOptions


def default_components(options: StackOptions) -> list[Component]:
    comps: list[Component] = [NodeHost()] if options.real_node else []
    comps += [
        Etcd(),
        ApiServer(real_node=options.real_node),
        ControllerManager(),
        Scheduler(),
        Kwok(),
    ]
    if options.jobset:  # the CRD first: Kueue's JobSet integration needs it at start
        comps += [JobSetCrd(), JobSetController()]
    if options.trainer:  # the same for the TrainJob integration; it builds JobSets
        comps += [TrainerCrds(), TrainerController(), TrainerRuntimes()]
    comps.append(Kueue(jobset=options.jobset, trainer=options.trainer))
    if options.webhook:
        comps += [GangWebhook(), WebhookRegistration(), GangNodePolicy()]
    if options.queues:
        comps.append(KueueQueues())
    if options.fake_nodes:
        comps.append(FakeNodes())
    if options.cloud or options.provisioners or options.nodesim:
        comps += [FakeAws(), FakeAwsSetup(), GangCrd()]
        comps += [Provisioner(i) for i in range(options.provisioners)]
    if options.nodesim:
        comps.append(NodeSim())
    if options.real_node:
        comps += [Containerd(), NodeImages(), Kubelet()]
    if options.in_cluster:
        comps += [CertManagerCrds(), CertManagerController(), CertManagerCAInjector()]
        comps.append(ChartRelease())
    return comps
