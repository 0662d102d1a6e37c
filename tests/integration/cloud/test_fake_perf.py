"""The layer's shortcuts through moto's hot spots give moto's own answers."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import backends as moto_backends
from moto import mock_aws
from moto.ec2.models import ec2_backends

from atomic_gang_fakeaws import perf
from atomic_gang_fakeaws.patches import install_patches
from atomic_gang_fakeaws.server import ThreadedFakeServer
from tests.integration.cloud.conftest import REGION


@pytest.fixture
def backend() -> Iterator[Any]:
    with mock_aws():
        ec2 = boto3.client("ec2", region_name=REGION)
        for name in ("first", "second"):
            ec2.register_image(Name=name, RootDeviceName="/dev/xvda")
        yield ec2_backends["123456789012"][REGION]


def ids(images: list[Any]) -> list[str]:
    return sorted(i.id for i in images)


@pytest.mark.parametrize(
    "filters",
    [
        pytest.param("known", id="an-existing-id"),
        pytest.param("ami-0123456789abcdef0", id="an-unknown-id"),
        pytest.param("ami-*", id="a-glob-goes-to-moto"),
        pytest.param(["known"], id="a-list-goes-to-moto"),
    ],
)
def test_describe_images_by_image_id_answers_as_moto_does(backend: Any, filters: Any) -> None:
    known = next(iter(backend.amis))
    value = [known] if filters == ["known"] else known if filters == "known" else filters
    ours = perf.describe_images(backend, filters={"image-id": value})
    assert ids(ours) == ids(perf._DESCRIBE_IMAGES(backend, filters={"image-id": value}))
    assert ours or filters == "ami-0123456789abcdef0"


def test_describe_images_with_other_arguments_goes_to_moto(backend: Any) -> None:
    first = sorted(backend.amis)[0]
    assert ids(perf.describe_images(backend, ami_ids=[first])) == [first]
    both = perf.describe_images(backend, filters={"image-id": first, "state": "available"})
    assert ids(both) == [first]
    assert len(perf.describe_images(backend)) == len(backend.amis)


def test_moto_modules_are_listed_once_with_the_same_answer() -> None:
    install_patches()
    assert moto_backends.list_of_moto_modules is perf.list_of_moto_modules
    fresh = tuple(perf._LIST_MOTO_MODULES())
    assert {"ec2", "eks"} <= set(fresh)
    assert perf.list_of_moto_modules() == fresh


def test_the_server_logs_failed_requests_not_answered_ones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = ThreadedFakeServer().start()
    try:
        ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=server.endpoint)
        with caplog.at_level(logging.INFO, logger="werkzeug"):
            ec2.describe_instances()
            with pytest.raises(ClientError):
                ec2.describe_instances(InstanceIds=["i-0123456789abcdef0"])
    finally:
        server.stop()
    lines = [r.getMessage() for r in caplog.records if r.name == "werkzeug"]
    assert len(lines) == 1, lines
    assert '" 400 ' in lines[0]
