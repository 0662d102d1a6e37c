"""The objects the dev stack creates: our Kueue queues and our webhook registration.

Pure builders returning plain dicts; the components apply them. Names here are
the ones the docs and the tests use.
"""

from __future__ import annotations

import base64
from typing import Any

from atomic_gang import keys
from atomic_gang.settings import DEFAULT_CONTROLLER_NAME

Obj = dict[str, Any]
KUEUE_API = "kueue.x-k8s.io/v1beta2"

ADMISSION_CHECK = "atomic-gang-check"
RESOURCE_FLAVOR = "atomic-gang-flavor"
CLUSTER_QUEUE = "atomic-gang-cluster-queue"
LOCAL_QUEUE = "atomic-gang-queue"
WEBHOOK_CONFIG = "atomic-gang-webhook"
WEBHOOK_NAME = "jobs.atomic-gang.k8s.aws"
JOBSET_WEBHOOK_NAME = "jobsets.atomic-gang.k8s.aws"
TRAINJOB_WEBHOOK_NAME = "trainjobs.atomic-gang.k8s.aws"
RUNTIME_WEBHOOK_NAME = "trainingruntimes.atomic-gang.k8s.aws"
Rule = tuple[str, str, tuple[str, ...], str]  # (group, version, resources, scope)
JOBSETS: Rule = ("jobset.x-k8s.io", "v1alpha2", ("jobsets",), "Namespaced")
TRAINJOBS: Rule = ("trainer.kubeflow.org", "v1alpha1", ("trainjobs",), "Namespaced")
RUNTIMES: Rule = (
    "trainer.kubeflow.org",
    "v1alpha1",
    ("trainingruntimes", "clustertrainingruntimes"),
    "*",
)
WEBHOOK_PATH = "/validate/batch/v1/job"
EXCLUDED_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease", "kueue-system")
PROBE_VALUE = "devstack-probe-not-a-number"
QUOTA = {"cpu": "1000", "memory": "4Ti", "nvidia.com/gpu": "1000"}

# Dev settings for our webhook (and later the provisioner); chart value names.
DEV_SETTINGS: Obj = {
    "clusterName": "atomic-gang-dev",
    "defaults": {
        "region": "us-east-1",
        "nodeRoleArn": "arn:aws:iam::123456789012:role/eks-gang-node-role",
    },
    "allowedInstanceTypes": ["p4d.24xlarge", "p5.*", "g6.*", "trn1.*", "m5.*", "c5.*"],
    # Tenants may not pick their own image: these two, or the SSM default.
    "allowedAmiIds": ["ami-0123456789abcdef0", "ami-0de*"],
}


def resource_flavor() -> Obj:
    return {
        "apiVersion": KUEUE_API,
        "kind": "ResourceFlavor",
        "metadata": {"name": RESOURCE_FLAVOR},
        # A quota bucket only, as the chart's: the podSetUpdates pin the gang roles.
        "spec": {},
    }


def admission_check() -> Obj:
    return {
        "apiVersion": KUEUE_API,
        "kind": "AdmissionCheck",
        "metadata": {"name": ADMISSION_CHECK},
        "spec": {"controllerName": DEFAULT_CONTROLLER_NAME},
    }


def cluster_queue() -> Obj:
    return {
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": {"name": CLUSTER_QUEUE},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": list(QUOTA),
                    "flavors": [
                        {
                            "name": RESOURCE_FLAVOR,
                            "resources": [{"name": r, "nominalQuota": q} for r, q in QUOTA.items()],
                        }
                    ],
                }
            ],
            "admissionChecksStrategy": {"admissionChecks": [{"name": ADMISSION_CHECK}]},
        },
    }


def local_queue(namespace: str, name: str = LOCAL_QUEUE) -> Obj:
    return {
        "apiVersion": KUEUE_API,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": CLUSTER_QUEUE},
    }


def active_condition(now: str) -> Obj:
    """Status patch body that marks the AdmissionCheck Active (the controller's job)."""
    return {
        "status": {
            "conditions": [
                {
                    "type": "Active",
                    "status": "True",
                    "reason": "Active",
                    "message": "marked active by the devstack stand-in controller",
                    "lastTransitionTime": now,
                    "observedGeneration": 1,
                }
            ]
        }
    }


def validating_webhook(*, url: str, ca_pem: bytes, timeout_seconds: int = 5) -> Obj:
    """Our fail-closed ValidatingWebhookConfiguration, pointing at a URL, as the chart's:
    one webhook each for Jobs, JobSets, TrainJobs and the Trainer's runtimes, all on the
    one endpoint (the request's kind says which)."""
    kinds = (
        (WEBHOOK_NAME, ("batch", "v1", ("jobs",), "Namespaced")),
        (JOBSET_WEBHOOK_NAME, JOBSETS),
        (TRAINJOB_WEBHOOK_NAME, TRAINJOBS),
        (RUNTIME_WEBHOOK_NAME, RUNTIMES),
    )
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": WEBHOOK_CONFIG},
        "webhooks": [
            _webhook(name, rule, url=url, ca_pem=ca_pem, timeout=timeout_seconds)
            for name, rule in kinds
        ],
    }


def _webhook(name: str, rule: Rule, *, url: str, ca_pem: bytes, timeout: int) -> Obj:
    group, version, resources, scope = rule
    return {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": {"url": url, "caBundle": base64.b64encode(ca_pem).decode()},
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "timeoutSeconds": timeout,
        "namespaceSelector": {
            "matchExpressions": [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "NotIn",
                    "values": list(EXCLUDED_NAMESPACES),
                }
            ]
        },
        "rules": [
            {
                "apiGroups": [group],
                "apiVersions": [version],
                "operations": ["CREATE", "UPDATE"],
                "resources": list(resources),
                "scope": scope,
            }
        ],
    }


def probe_job(namespace: str) -> Obj:
    """A Job our webhook must reject; server-side dry-run of it proves registration."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "devstack-webhook-probe",
            "namespace": namespace,
            "annotations": {keys.COUNT: PROBE_VALUE},
        },
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}],
                }
            }
        },
    }
