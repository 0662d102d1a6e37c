"""Moto's hot spots, same results, less time.

* ``TaggedEC2Resource.get_tags`` asks ``describe_tags`` to regex-scan every tag
  of every resource, once per resource per filter, so a tag-filtered
  DescribeInstances grows with the square of the instance count (about 50 s at
  8,000 instances). Reading the resource's own entry gives the same list.
* EKS CreateCluster validates the role ARN's partition by building a new boto3
  Session each time (~0.1 s); the partition list is computed once instead.
* The server finds each request's backend by listing moto's package directory
  (``list_of_moto_modules``: ~150 ``isdir`` calls a request); the listing is taken once.
* Every launched instance reads its AMI through ``describe_images`` with an
  ``image-id`` filter, which copies and glob-matches every known AMI (hundreds);
  an id without glob characters is looked up directly.

In bench.scale's launch rush they took a good part of the fake's CPU, on a box the
whole control plane shares (docs/benchmarks.md#what-shaped-the-scale-figures).
"""

from __future__ import annotations

import functools
import re
from typing import Any

import boto3
from moto import backends as moto_backends
from moto.ec2.models.amis import AmiBackend
from moto.ec2.models.core import TaggedEC2Resource
from moto.ec2.utils import EC2_PREFIX_TO_RESOURCE, get_prefix
from moto.eks import models as eks_models
from moto.eks.exceptions import InvalidParameterException

GLOB = re.compile(r"[*?[]")  # fnmatch's pattern characters
_DESCRIBE_IMAGES = AmiBackend.describe_images
_LIST_MOTO_MODULES = moto_backends.list_of_moto_modules
_MOTO_MODULES = tuple(_LIST_MOTO_MODULES())
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


def list_of_moto_modules() -> tuple[str, ...]:
    return _MOTO_MODULES


def describe_images(
    self: Any,
    ami_ids: list[str] | None = None,
    filters: dict[str, Any] | None = None,
    exec_users: list[str] | None = None,
    owners: list[str] | None = None,
) -> Any:
    """An instance's own AMI by id (``filters={"image-id": id}`` alone): one lookup."""
    image = (filters or {}).get("image-id")
    only_id = filters is not None and len(filters) == 1 and not (ami_ids or exec_users or owners)
    if only_id and isinstance(image, str) and not GLOB.search(image):
        found = self.amis.get(image)
        return [found] if found is not None else []
    return _DESCRIBE_IMAGES(self, ami_ids, filters, exec_users, owners)


PATCHES: list[tuple[Any, str, Any]] = [
    (TaggedEC2Resource, "get_tags", get_tags),
    (eks_models, "validate_role_arn", validate_role_arn),
    (moto_backends, "list_of_moto_modules", list_of_moto_modules),
    (AmiBackend, "describe_images", describe_images),
]
