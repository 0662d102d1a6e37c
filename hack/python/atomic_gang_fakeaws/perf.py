"""moto's per-resource tag lookup, made O(1).

``TaggedEC2Resource.get_tags`` asks ``describe_tags`` to regex-scan every tag of
every resource, once per resource per filter, so a tag-filtered
DescribeInstances grows with the square of the instance count (about 50 s at
8,000 instances). Reading the resource's own entry gives the same list.
"""

from __future__ import annotations

from typing import Any

from moto.ec2.models.core import TaggedEC2Resource
from moto.ec2.utils import EC2_PREFIX_TO_RESOURCE, get_prefix


def get_tags(self: Any) -> list[dict[str, str]]:
    rid = getattr(self, "id", None)
    if not rid:
        return []
    tags: dict[str, str] = self.ec2_backend.tags.get(rid) or {}
    kind = EC2_PREFIX_TO_RESOURCE.get(get_prefix(rid), "")
    return [
        {"resource_id": rid, "key": k, "value": v, "resource_type": kind} for k, v in tags.items()
    ]


PATCHES: list[tuple[Any, str, Any]] = [(TaggedEC2Resource, "get_tags", get_tags)]
