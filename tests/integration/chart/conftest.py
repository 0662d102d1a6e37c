"""Every render the chart tests look at, done once per session and in parallel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.chart.render import REQUIRED, Rendered, helm_path, merge, render_many

LONG_CLUSTER = "c" * 90  # forces the hash-truncated instance-profile name
CUSTOM: dict[str, Any] = {
    "clusterName": "prod-eks",
    "controllerName": "atomic-gang.k8s.aws/ec2-atomic",
    "defaults": {
        "region": "eu-west-1",
        "nodeRoleArn": "arn:aws:iam::123456789012:role/gang-node",
        "mode": "fleet",
        "keepWarmTTL": "30m",
        "maxLifetime": "12h",
    },
    "limits": {"maxGangSize": 16, "maxKeepWarmTTL": "2h"},
    "allowedInstanceTypes": ["p5.*", "p4d.24xlarge"],
    "allowedNodeRoleArns": [
        "arn:aws:iam::123456789012:role/gang-node",
        "arn:aws:iam::123456789012:role/path/other-node",
    ],
    "reapIntervalSeconds": 30,
    "joinDeadlineSeconds": 900,
    "acquireAttemptsBeforeRetry": 3,
    "maxConcurrentPoolReconciles": 9,
    "healthGraceSeconds": 0,
    "acquireRetry": {"backoffBaseSeconds": 1.5, "backoffMaxSeconds": 60},
    "leaderElection": {
        "namespace": "leases",
        "leaseDurationSeconds": 30,
        "renewDeadlineSeconds": 20,
        "retryPeriodSeconds": 4,
    },
    "iam": {"selfManageInstanceProfile": True},
    "jobSetUsername": "system:serviceaccount:batch-system:jobset",
    "trainerUsername": "system:serviceaccount:kubeflow:kubeflow-trainer-controller-manager",
    "kueue": {
        "clusterQueue": {"nominalQuota": {"cpu": 512, "memory": "2Ti", "nvidia.com/gpu": "64"}},
        "localQueueNamespaces": ["team-a", "team-b"],
    },
}

# name -> values merged over REQUIRED (None: exactly REQUIRED).
POSITIVE: dict[str, dict[str, Any] | None] = {
    "default": None,
    "custom": CUSTOM,
    "helm-certs": {"webhook": {"certMode": "helm"}},
    "provided": {
        "webhook": {
            "certMode": "provided",
            "provided": {"secretName": "my-tls", "caBundle": "Q0EK"},
        }
    },
    "dev-url": {"webhook": {"devUrl": "https://127.0.0.1:18443"}},
    "dev-url-helm": {"webhook": {"devUrl": "https://127.0.0.1:18443/", "certMode": "helm"}},
    "dev-url-host": {"webhook": {"devUrl": "https://host.docker.internal:9443"}},
    "irsa": {
        "auth": {"mode": "irsa"},
        "serviceAccount": {"roleArn": "arn:aws:iam::123456789012:role/ctl"},
    },
    "static": {"auth": {"mode": "static", "static": {"secretName": "aws-keys"}}},
    "node": {"auth": {"mode": "node"}},
    "no-kueue": {
        "kueue": {
            "create": {
                "admissionCheck": False,
                "resourceFlavor": False,
                "clusterQueue": False,
                "localQueues": False,
            },
            "clusterQueue": {"nominalQuota": None},
        }
    },
    "extras": {
        "metrics": {
            "serviceMonitor": {"enabled": True},
            "prometheusRule": {"enabled": True},
            "dashboards": {"enabled": True},
        },
        "nodeBootstrap": {"enabled": True},
        "clusterName": LONG_CLUSTER,
        "allowedNodeRoleArns": [
            REQUIRED["defaults"]["nodeRoleArn"],
            "arn:aws:iam::123456789012:role/team/second",
        ],
    },
    "irsa-existing-sa": {"auth": {"mode": "irsa"}, "serviceAccount": {"create": False}},
    "static-bootstrap": {
        "auth": {"mode": "static", "static": {"secretName": "aws-keys"}},
        "nodeBootstrap": {"enabled": True},
    },
    "irsa-bootstrap": {
        "auth": {"mode": "irsa"},
        "serviceAccount": {"roleArn": "arn:aws:iam::123456789012:role/ctl"},
        "nodeBootstrap": {
            "enabled": True,
            "serviceAccount": {"roleArn": "arn:aws:iam::123456789012:role/bootstrap"},
        },
    },
    "eks-names": {"clusterName": "My_Cluster-" + "x" * 89, "nodeBootstrap": {"enabled": True}},
    "metrics-readers": {
        "metrics": {
            "serviceMonitor": {"enabled": True},
            "readers": [
                {"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"},
                {"kind": "Group", "name": "sre"},
            ],
        },
        "networkPolicy": {
            "enabled": True,
            "controller": {
                "metricsNamespaces": ["monitoring", "obs"],
                "metricsFrom": [{"ipBlock": {"cidr": "10.0.0.0/16"}}],
            },
        },
    },
    "metrics-open": {
        "metrics": {"authentication": "none", "serviceMonitor": {"enabled": True}},
        "networkPolicy": {"enabled": True, "controller": {"metricsNamespaces": []}},
    },
    "alerts-custom": {
        "metrics": {
            "prometheusRule": {
                "enabled": True,
                "labels": {"release": "kube-prometheus"},
                "runbookBaseUrl": "https://example.com/ops/operations.md",
                "gangPendingSeconds": 600,
                "certificateExpiryDays": 30,
            },
            "dashboards": {
                "enabled": True,
                "labels": {"team": "ml"},
                "annotations": {"grafana_folder": "ML"},
            },
        },
        "webhook": {
            "name": "gang-jobs.example.com",
            "trainJobName": "gang-trainjobs.example.com",
            "trainingRuntimeName": "gang-runtimes.example.com",
        },
    },
    "no-webhook-no-le": {
        "webhook": {"enabled": False},
        "leaderElection": {"enabled": False},
        "replicaCount": 1,  # without leader election, one replica (two would both be active)
        "podDisruptionBudget": {"enabled": False},
        "networkPolicy": {"enabled": False},
        "serviceAccount": {"create": False, "name": "pre-made"},
    },
    "probes-from-nodes": {
        "controller": {"healthPort": 9090},
        "networkPolicy": {"controller": {"probeFrom": [{"ipBlock": {"cidr": "10.1.0.0/16"}}]}},
    },
}

# name -> (values replacing REQUIRED parts, text the error must contain).
NEGATIVE: dict[str, tuple[dict[str, Any], str]] = {
    "no-cluster-name": ({"clusterName": ""}, "/clusterName"),
    "no-region": ({"defaults": {"region": ""}}, "/defaults/region"),
    "no-quota": ({"kueue": {"clusterQueue": {"nominalQuota": None}}}, "nominalQuota"),
    "zero-cpu": ({"kueue": {"clusterQueue": {"nominalQuota": {"cpu": 0}}}}, "nominalQuota/cpu"),
    "zero-cpu-string": (
        {"kueue": {"clusterQueue": {"nominalQuota": {"cpu": "0.0"}}}},
        "nominalQuota/cpu",
    ),
    "zero-memory": (
        {"kueue": {"clusterQueue": {"nominalQuota": {"memory": "0Gi"}}}},
        "nominalQuota/memory",
    ),
    "unknown-top-level": ({"replicas": 3}, "additional properties 'replicas' not allowed"),
    "unknown-setting": ({"defaults": {"regoin": "us-east-1"}}, "'regoin' not allowed"),
    "bad-cert-mode": ({"webhook": {"certMode": "selfSigned"}}, "/webhook/certMode"),
    "irsa-without-role": ({"auth": {"mode": "irsa"}}, "/serviceAccount/roleArn"),
    "provided-without-secret": ({"webhook": {"certMode": "provided"}}, "/webhook/provided"),
    "dev-url-plain-http": ({"webhook": {"devUrl": "http://127.0.0.1:9443"}}, "/webhook/devUrl"),
    "bad-integration-mode": ({"integrationMode": "job"}, "/integrationMode"),
    "bad-failure-policy": ({"webhook": {"failurePolicy": "Retry"}}, "/webhook/failurePolicy"),
    "bad-trainjob-hook-name": (
        {"webhook": {"trainJobName": "trainjobs"}},
        "/webhook/trainJobName",
    ),
    "empty-trainer-user": ({"trainerUsername": ""}, "/trainerUsername"),
    "bad-runbook-url": (
        {"metrics": {"prometheusRule": {"runbookBaseUrl": "docs/operations.md"}}},
        "/metrics/prometheusRule/runbookBaseUrl",
    ),
    "irsa-bootstrap-without-role": (
        {
            "auth": {"mode": "irsa"},
            "serviceAccount": {"roleArn": "arn:aws:iam::123456789012:role/ctl"},
            "nodeBootstrap": {"enabled": True},
        },
        "/nodeBootstrap/serviceAccount/roleArn",
    ),
    "cluster-name-dash-first": ({"clusterName": "-c"}, "/clusterName"),
    "cluster-name-dot": ({"clusterName": "my.cluster"}, "/clusterName"),
    "cluster-name-101": ({"clusterName": "c" * 101}, "/clusterName"),
    "reader-sa-without-namespace": (
        {"metrics": {"readers": [{"kind": "ServiceAccount", "name": "prometheus"}]}},
        "/metrics/readers/0': missing property 'namespace'",
    ),
    "metrics-auth-unknown": ({"metrics": {"authentication": "basic"}}, "/metrics/authentication"),
}


# name -> (values merged over REQUIRED, text of the chart's own error): rules across
# values that the schema cannot express.
REFUSED: dict[str, tuple[dict[str, Any], str]] = {
    "two-active-controllers": (
        {"leaderElection": {"enabled": False}},
        "leaderElection.enabled=false with replicaCount 2: every replica would be active",
    ),
    "probes-on-the-metrics-port": (
        {"controller": {"healthPort": 8080}},
        "controller.healthPort 8080 is controller.httpPort too",
    ),
    "default-role-not-allowed": (
        {"allowedNodeRoleArns": ["arn:aws:iam::123456789012:role/other"]},
        "defaults.nodeRoleArn arn:aws:iam::123456789012:role/eks-gang-node-role is not in"
        " allowedNodeRoleArns",
    ),
}


@pytest.fixture(scope="session")
def helm() -> Path:
    return helm_path()


@pytest.fixture(scope="session")
def renders(helm: Path) -> dict[str, Rendered]:
    cases = {name: merge(REQUIRED, over or {}) for name, over in POSITIVE.items()}
    cases |= {f"bad:{name}": merge(REQUIRED, over) for name, (over, _) in NEGATIVE.items()}
    cases |= {f"refused:{name}": merge(REQUIRED, over) for name, (over, _) in REFUSED.items()}
    cases["none"] = {}
    return render_many(helm, cases)


@pytest.fixture(scope="session")
def default(renders: dict[str, Rendered]) -> Rendered:
    r = renders["default"]
    assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="session")
def helm_defaults(renders: dict[str, Rendered]) -> Rendered:
    """The chart with no values at all."""
    return renders["none"]
