"""Every annotation, label, taint and tag key the project reads or writes.

Keys live under one prefix. The user-facing set (annotations plus the pool
label) is what the webhook and the provisioner validate; the rest are written
by the provisioner onto nodes, EC2 tags and Kueue podSetUpdates.
"""

from typing import Final

PREFIX: Final = "atomic-gang.k8s.aws/"
QUEUE_NAME_LABEL: Final = "kueue.x-k8s.io/queue-name"
# Kueue's elastic Job (Workload slices, on by default from v0.18): its N may change while
# it runs, which a gang's fixed set of N nodes cannot follow.
ELASTIC_JOB: Final = "kueue.x-k8s.io/elastic-job"

# The pool key is a *label* on the Job; everything else is an annotation.
POOL: Final = PREFIX + "pool"
COUNT: Final = PREFIX + "count"
INSTANCE_TYPE: Final = PREFIX + "instance-type"
MODE: Final = PREFIX + "mode"
REGION: Final = PREFIX + "region"
AVAILABILITY_ZONES: Final = PREFIX + "availability-zones"
SUBNETS: Final = PREFIX + "subnets"
NODE_ROLE_ARN: Final = PREFIX + "node-role-arn"
KEEP_WARM_TTL: Final = PREFIX + "keep-warm-ttl"
MAX_LIFETIME: Final = PREFIX + "max-lifetime"
AMI_VARIANT: Final = PREFIX + "ami-variant"
AMI_ID: Final = PREFIX + "ami-id"
CAPACITY_RESERVATION_ID: Final = PREFIX + "capacity-reservation-id"
MIN_RUNTIME: Final = PREFIX + "min-runtime"
PLACEMENT: Final = PREFIX + "placement"
PLACEMENT_GROUP_NAME: Final = PREFIX + "placement-group-name"
EFA: Final = PREFIX + "efa"
MAX_SPREAD: Final = PREFIX + "max-spread"
# What a formed gang does when nodes break: "auto" (default) replaces only the broken
# nodes in one atomic launch and keeps the rest; "never" releases the whole set and the
# Workload gets Retry.
REPAIR: Final = PREFIX + "repair"
# JobSets and TrainJobs: the replicatedJobs whose pods are the gang (comma-separated;
# default: all of a JobSet's, a TrainJob's trainer nodes, node).
GANG_ROLES: Final = PREFIX + "gang-roles"

ANNOTATION_KEYS: Final = (
    COUNT,
    INSTANCE_TYPE,
    MODE,
    REGION,
    AVAILABILITY_ZONES,
    SUBNETS,
    NODE_ROLE_ARN,
    KEEP_WARM_TTL,
    MAX_LIFETIME,
    AMI_VARIANT,
    AMI_ID,
    CAPACITY_RESERVATION_ID,
    MIN_RUNTIME,
    PLACEMENT,
    PLACEMENT_GROUP_NAME,
    EFA,
    MAX_SPREAD,
    REPAIR,
    GANG_ROLES,
)
ANNOTATION_KEY_SET: Final = frozenset(ANNOTATION_KEYS)
LABEL_KEYS: Final = (POOL,)
USER_KEYS: Final = (*LABEL_KEYS, *ANNOTATION_KEYS)
# A Job defines at most 20 keys under our prefix; far more is a typo storm or an
# attack, reported once (TooManyKeys) instead of once per key.
MAX_GANG_KEYS: Final = 64

# Written by the provisioner (node labels, EC2 tags, taint). Never user input.
MANAGED: Final = PREFIX + "managed"
CLUSTER: Final = PREFIX + "cluster"
GROUP: Final = PREFIX + "group"
GENERATION: Final = PREFIX + "generation"
KEEP_WARM_UNTIL: Final = PREFIX + "keep-warm-until"
MAX_LIFETIME_TAG: Final = PREFIX + "max-lifetime"
# A Capacity Block instance's cap (RFC 3339): released by then, before EC2 terminates it.
RELEASE_BY_TAG: Final = PREFIX + "release-by"
GANG_TAINT: Final = PREFIX + "gang"
# On a gang node found broken (instance lost, NotReady or a bad health condition past its
# grace): NoExecute, so that its pods leave at once and none lands there again.
BROKEN_TAINT: Final = PREFIX + "broken"
# NoExecute, not NoSchedule: the kubelet itself refuses a pod that does not tolerate a
# NoExecute taint, even one bound with spec.nodeName (which skips the scheduler and so
# every NoSchedule taint). Nodes launched before carry NoSchedule: the toleration our
# podSetUpdates add names no effect, so it matches both.
GANG_TAINT_EFFECT: Final = "NoExecute"
# Every effect under which a toleration of the gang key reaches gang nodes.
GANG_TAINT_EFFECTS: Final = ("NoSchedule", "NoExecute")

# Node-selector keys our podSetUpdates set; a Job template must not set them.
SELECTOR_KEYS: Final = (POOL, GROUP)
