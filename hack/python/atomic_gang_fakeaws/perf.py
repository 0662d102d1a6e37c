"""Two of moto's hot spots, same results, less time.

* ``TaggedEC2Resource.get_tags`` asks ``describe_tags`` to regex-scan every tag
  of every resource, once per resource per filter, so a tag-filtered
  DescribeInstances grows with the square of the instance count (about 50 s at
  8,000 instances). Reading the resource's own entry gives the same list.
* EKS CreateCluster validates the role ARN's partition by building a new boto3
  Session each time (~0.1 s); the partition list is computed once instead.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import boto3
from moto.ec2.models.core import TaggedEC2Resource
from moto.ec2.utils import EC2_PREFIX_TO_RESOURCE, get_prefix
from moto.eks import models as eks_models
from moto.eks.exceptions import InvalidParameterException

ROLE_ARN = re.compile(r"arn:(?P<partition>.+):iam::(?P<account_id>[0-9]{12}):role/.+")


def get_tags(self: Any) -> list[dict[str, str]]:
    rid = getattr(self, "id", None)
    if not rid:
        return []
    tags: dict[str, str] = self.ec2_backend.tags.get(rid) or {}
    kind = EC2_PREFIX_TO_RESOURCE.get(get_prefix(rid), "")
    return [
        {"resource_id": rid, "key": k, "value": v, "resource_type": kind} for k, v in tags.items()
    ]


@functools.cache
def _partitions() -> frozenset[str]:
    return frozenset(boto3.session.Session().get_available_partitions())


def validate_role_arn(arn: str) -> None:
    match = ROLE_ARN.match(arn or "")
    if not match or match.group("partition") not in _partitions():
        raise InvalidParameterException(message="Invalid Role Arn: '" + str(arn) + "'")


PATCHES: list[tuple[Any, str, Any]] = [
    (TaggedEC2Resource, "get_tags", get_tags),
    (eks_models, "validate_role_arn", validate_role_arn),
]
