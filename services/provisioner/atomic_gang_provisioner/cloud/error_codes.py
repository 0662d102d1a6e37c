"""Every AWS error code the engine acts on, classified in this one file.

Only ``throttled`` and ``transient`` are retried (jittered backoff, same
ClientToken). ``capacity`` is a shortfall (nothing billed), ``quota`` gets its
own reason, ``not_found`` is a fact about a resource, and everything else is
``permanent``: surfaced verbatim with a hint.
"""

from __future__ import annotations

from typing import Final, Literal

from atomic_gang_provisioner.api.reasons import FailureReason

ErrorClass = Literal["capacity", "throttled", "transient", "quota", "not_found", "permanent"]
RETRYABLE: Final[frozenset[ErrorClass]] = frozenset({"throttled", "transient"})

CAPACITY: Final = frozenset(
    {
        "InsufficientInstanceCapacity",
        "InsufficientHostCapacity",
        "InsufficientReservedInstanceCapacity",
        "InsufficientCapacity",
        "InsufficientCapacityOnHost",
        "ReservationCapacityExceeded",
        "UnfulfillableCapacity",
        "MaxSpotInstanceCountExceeded",
        "InsufficientFreeAddressesInSubnet",
        # At launch: a cluster placement group busy in another AZ (no room here now). At
        # delete: instances still in the group; the placement module reads the code.
        "InvalidPlacementGroup.InUse",
    }
)
THROTTLED: Final = frozenset(
    {
        "RequestLimitExceeded",
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "TooManyRequestsException",
        "RequestThrottled",
        "RequestThrottledException",
        "SlowDown",
        # Pseudo-code: our own budget for the class is spent (no call was sent).
        "OverBudget",
    }
)
TRANSIENT: Final = frozenset(
    {
        "InternalError",
        "InternalFailure",
        "InternalServerError",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "Unavailable",
        "RequestTimeout",
        "RequestTimeoutException",
        "PriorRequestNotComplete",
        "IDPCommunicationError",
        # Pseudo-codes the adapter uses for transport failures (no HTTP answer).
        "ReadTimeout",
        "ConnectTimeout",
        "ConnectionError",
        # No usable AWS credentials (their agent or IMDS may come back; a bad auth.mode
        # keeps the AdmissionCheck inactive until fixed).
        "CredentialsUnavailable",
    }
)
QUOTA: Final = frozenset({"VcpuLimitExceeded", "InstanceLimitExceeded", "MaxFleetCountExceeded"})
NOT_FOUND: Final = frozenset(
    {
        "InvalidInstanceID.NotFound",
        "InvalidNetworkInterfaceID.NotFound",
        "InvalidFleetId.NotFound",
        "InvalidLaunchTemplateName.NotFoundException",
        "InvalidLaunchTemplateId.NotFound",
        "InvalidLaunchTemplateId.VersionNotFound",
        "InvalidCapacityReservationId.NotFound",
        "ParameterNotFound",
        "NoSuchEntity",
        "ResourceNotFoundException",
    }
)
IDEMPOTENCY_MISMATCH: Final = "IdempotentParameterMismatch"
OVER_BUDGET: Final = "OverBudget"
# Permanent errors with a reason of their own (any other is FailureReason.PERMANENT_ERROR);
# the reason says whether the Job's annotations are at fault.
NAMED_PERMANENT: Final[dict[str, FailureReason]] = {
    "NodeRoleNotAuthorized": FailureReason.NODE_ROLE_NOT_AUTHORIZED,
    "SubnetNotInCluster": FailureReason.INVALID_SUBNET,
    # No listed reservation can ever hold the gang (type, AZ, size, state): the Job is wrong.
    "CapacityReservationMismatch": FailureReason.CAPACITY_RESERVATION_MISMATCH,
    # Only blocks with too little time left, or past their drain point: Kueue requeues.
    "CapacityBlockTooShort": FailureReason.CAPACITY_BLOCK_TOO_SHORT,
    "CapacityBlockEnding": FailureReason.CAPACITY_BLOCK_ENDING,
    "EfaNotSupported": FailureReason.EFA_NOT_SUPPORTED,
    "EfaSecurityGroup": FailureReason.EFA_SECURITY_GROUP,
    "PlacementGroupConflict": FailureReason.PLACEMENT_GROUP_CONFLICT,
    "InvalidPlacementGroup.Unknown": FailureReason.PLACEMENT_GROUP_NOT_FOUND,
}

_HINTS: Final[dict[str, str]] = {
    "InvalidAMIID.NotFound": "check atomic-gang.k8s.aws/ami-id, or drop it to use the SSM image",
    "InvalidAMIID.Malformed": "atomic-gang.k8s.aws/ami-id must look like ami-0123456789abcdef0",
    "UnauthorizedOperation": "attach docs/iam/controller-policy.json to the controller role",
    "AccessDenied": "attach docs/iam/controller-policy.json to the controller role",
    "AccessDeniedException": "attach docs/iam/controller-policy.json to the controller role",
    "NoSuchEntity": "create the convention-named instance profile holding the node role",
    "InvalidParameterValue": "check the instance type, subnets and node role annotations",
    "InvalidSubnetID.NotFound": "check atomic-gang.k8s.aws/subnets",
    "InvalidInstanceType": "check atomic-gang.k8s.aws/instance-type",
    "Unsupported": "this instance type is not offered in that AZ; list other zones",
    "ParameterNotFound": "no EKS-optimized AL2023 AMI for this version/arch/variant; set ami-id",
    IDEMPOTENCY_MISMATCH: "the launch inputs changed within one generation; it will be retried",
    "InstanceProfileNotFound": (
        "create the instance profile atomic-gang-instance-profile-<cluster>-<role-name>"
        " holding the node role (see docs/operations.md, Node access), or set"
        " iam.selfManageInstanceProfile and grant docs/iam/self-managed-instance-profile.json"
    ),
    "CredentialsUnavailable": (
        "the controller found no usable AWS credentials: check the chart's auth.mode"
        " and the controller role it names (podIdentity association, IRSA role, Secret)"
    ),
    "InstanceProfileNotYetVisible": "IAM is eventually consistent; it will be retried",
    "InstanceProfileRoleMismatch": "add the node role to the convention-named instance profile",
    "NoPlacement": "the cluster has no subnet in the requested AZs; check the AZ annotations",
    "SubnetNotInCluster": "list subnets of the cluster's VPC in atomic-gang.k8s.aws/subnets",
    "AwsAuthUnreadable": "grant the chart's Role for kube-system/aws-auth; it will be retried",
    "CapacityReservationMismatch": (
        "the reservation's AZ and instance type must match the pool's annotations"
    ),
    "EfaNotSupported": "drop atomic-gang.k8s.aws/efa, lower it, or pick an EFA instance type",
    "EfaSecurityGroup": "add the rules named above to the security group (we never modify it)",
    "PlacementGroupConflict": "delete that placement group, or give the pool another name",
    "InvalidPlacementGroup.Unknown": "check atomic-gang.k8s.aws/placement-group-name",
}


def classify(code: str, http_status: int | None = None, message: str = "") -> ErrorClass:
    """The class of an AWS error code; unknown codes fall back on the HTTP status."""
    if code == "InvalidParameterValue" and "iamInstanceProfile" in message:
        # The profile was verified through IAM before the launch, so EC2 not knowing it
        # yet is IAM's eventual consistency (seconds after a create), not a bad input.
        return "transient"
    for cls, codes in _TABLE:
        if code in codes:
            return cls
    if code.endswith(".NotFound") or code.endswith("NotFoundException"):
        return "not_found"
    if http_status is not None and http_status >= 500 and http_status != 501:
        return "transient"
    return "permanent"


def hint_for(code: str) -> str:
    return _HINTS.get(code, "")


_TABLE: Final[tuple[tuple[ErrorClass, frozenset[str]], ...]] = (
    ("capacity", CAPACITY),
    ("throttled", THROTTLED),
    ("transient", TRANSIENT),
    ("quota", QUOTA),
    ("not_found", NOT_FOUND),
)


class CloudError(Exception):
    """An AWS call that failed, already classified."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        http_status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.http_status = http_status
        self.kind: ErrorClass = classify(code, http_status, message)
        # Throttled: when a token will be back (our mirror of EC2's bucket says).
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE

    @property
    def reason(self) -> FailureReason:
        """What a pool or a caller records for this error."""
        if self.kind == "capacity":
            return FailureReason.INSUFFICIENT_CAPACITY
        if self.kind == "quota":
            return FailureReason.QUOTA_EXCEEDED
        if self.retryable:
            return FailureReason.THROTTLED
        return NAMED_PERMANENT.get(self.code, FailureReason.PERMANENT_ERROR)
