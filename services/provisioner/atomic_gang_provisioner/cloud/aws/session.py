"""boto3 clients with botocore's own retries switched off.

The engine retries by itself (classified, jittered, same ClientToken), so one
Python call is exactly one HTTP request, which keeps the call counts honest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config


@dataclass(frozen=True, slots=True)
class AwsClients:
    ec2: Any
    eks: Any
    ssm: Any
    iam: Any


def make_clients(
    *,
    region: str,
    endpoint_url: str | None = None,
    session: Any = None,
    read_timeout: float = 30.0,
) -> AwsClients:
    """Clients for one region; ``endpoint_url`` points them all at a moto server."""
    sess = session or boto3.session.Session()
    config = Config(
        region_name=region,
        retries={"total_max_attempts": 1, "mode": "standard"},
        connect_timeout=5,
        read_timeout=read_timeout,
    )

    def client(name: str) -> Any:
        return sess.client(name, region_name=region, endpoint_url=endpoint_url, config=config)

    return AwsClients(ec2=client("ec2"), eks=client("eks"), ssm=client("ssm"), iam=client("iam"))
