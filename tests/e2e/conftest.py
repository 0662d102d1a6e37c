"""The e2e harness: one real local control plane per session, one namespace per test.

Missing binaries are built (hack/build-bins.sh) right after collection, outside
any per-test timeout, and so are the real node's images when the in-cluster
tier is collected; a build failure fails the session, it never skips. The
stack is the same launcher ``make dev-up`` uses, in a temporary state dir, so
it coexists with a running dev stack.
"""

from __future__ import annotations

import fcntl
import re
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from xdist.remote import Producer
from xdist.scheduler import LoadScopeScheduling

from atomic_gang_devstack.bins import CONTROL_PLANE, NODE, Bins
from atomic_gang_devstack.component import Context
from atomic_gang_devstack.components import default_components
from atomic_gang_devstack.images import Images
from atomic_gang_devstack.stack import Stack
from atomic_gang_devstack.state import StackOptions
from tests.e2e.kube import Kube, queued_namespace

_TIMINGS: dict[str, float] = {}


@dataclass(frozen=True)
class LocalStack:
    stack: Stack
    ctx: Context
    kube: Kube


E2E = Path(__file__).resolve().parent
# Run side by side (pytest-xdist, ``-n N --dist loadgroup``), each e2e package stays whole
# on one worker, so the stack it starts (or the session's it shares) starts once there.
# The real node's tier and the image builds share one group: the teardown test holds the
# host to its state before the node, and no image build may mount or unpack beside it.
SHARED_GROUPS = {"cluster": "host", "images": "host"}
# Packages whose every test starts a stack of its own (a bench run, a demo story): each
# test is a group of its own, and fills a worker's gap.
EACH_TEST = frozenset({"bench", "demo"})
# The longest groups first, so that the workers end together (docs/development.md,
# "Where the time goes"); the others follow in the order they were collected.
FIRST = ("kueue_contract", "host", "system", "provisioner", "bench", "demo")


def _package(nodeid: str) -> str:
    parts = nodeid.split("::", 1)[0].split("/")
    return parts[2] if len(parts) > 3 and parts[:2] == ["tests", "e2e"] else "e2e"


def group_of(nodeid: str) -> str:
    """``tests/e2e/system/test_faults.py::test_x`` → ``system`` (``host`` for the node tier
    and the image builds, the test itself in a package of self-contained tests)."""
    package = _package(nodeid)
    if package in EACH_TEST:
        return nodeid
    return SHARED_GROUPS.get(package, package)


class PackageScheduling(LoadScopeScheduling):  # type: ignore[misc]  # xdist is untyped
    """xdist's loadgroup, with each e2e package as a group, in the order collected (the
    longest first). xdist's own loadgroup reads ``xdist_group`` marks into node ids, which
    pytest 9 no longer lets a plugin rewrite, so the groups are read off the paths here."""

    def _split_scope(self, nodeid: str) -> str:
        return group_of(nodeid)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> PackageScheduling | None:
    if config.getvalue("dist") != "loadgroup":
        return None
    config.option.loadscopereorder = False  # keep the order the collection set
    return PackageScheduling(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {group: i for i, group in enumerate(FIRST)}

    def first(item: pytest.Item) -> int:
        package = _package(item.nodeid)
        return rank.get(SHARED_GROUPS.get(package, package), len(FIRST))

    items.sort(key=first)  # stable: within a rank, the order collected


@contextmanager
def _one_builder() -> Iterator[None]:
    """One worker builds what is missing while the others wait, then find it built."""
    root = Bins.load().root
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".e2e-build.lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def pytest_collection_finish(session: pytest.Session) -> None:
    if not any(item.get_closest_marker("e2e") for item in session.items):
        return
    with _one_builder():
        _build(session)


def _build(session: pytest.Session) -> None:
    t0 = time.monotonic()
    capture = session.config.pluginmanager.getplugin("capturemanager")
    in_cluster = any("tests/e2e/cluster/" in item.nodeid for item in session.items)
    contract = any("tests/e2e/kueue_contract/" in item.nodeid for item in session.items)
    with capture.global_and_fixture_disabled():  # show the build's progress live
        # Raises BinaryMissingError or ImageBuildError: the session fails, nothing is skipped.
        Bins.load().ensure(CONTROL_PLANE + (NODE if in_cluster else ()))
        if contract:  # the same scenarios on the floor Kueue, and a kind we do not serve
            Bins.load().floor().ensure(("kueue",))
            Bins.load().ensure_sources(("lws",))
        _TIMINGS["binaries checked/built (s)"] = time.monotonic() - t0
        if in_cluster:  # the real node's images (a cold build takes minutes: not in a test)
            t1 = time.monotonic()
            Images().all()
            _TIMINGS["images checked/built (s)"] = time.monotonic() - t1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _TIMINGS:
        terminalreporter.section("local control plane")
        for what, seconds in _TIMINGS.items():
            terminalreporter.write_line(f"{what}: {seconds:.1f}")


@pytest.fixture(scope="session")
def local_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    # detach=False: if this pytest session dies hard, its control plane dies with it.
    options = StackOptions(state_dir=tmp_path_factory.mktemp("devstack"), detach=False, cloud=True)
    stack = Stack(options, default_components(options))
    t0 = time.monotonic()
    ctx = stack.up()
    _TIMINGS["stack start (s)"] = time.monotonic() - t0
    try:
        kube = Kube(ctx.bins.path("kubectl"), ctx.admin_kubeconfig(), ctx.dir / "kubectl-cache")
        yield LocalStack(stack, ctx, kube)
    finally:
        t1 = time.monotonic()
        stack.down()
        _TIMINGS["stack stop (s)"] = time.monotonic() - t1


@pytest.fixture
def kube(local_stack: LocalStack) -> Kube:
    return local_stack.kube


def _namespace_name(test_name: str) -> str:
    # Short enough that a pool's name, ``<namespace>.<label>``, stays within 63 characters.
    slug = re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-")[:24].rstrip("-")
    return f"e2e-{slug}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def namespace(kube: Kube, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace with a LocalQueue ``atomic-gang-queue`` on our ClusterQueue."""
    name = _namespace_name(request.node.name)
    queued_namespace(kube, name)
    yield name
    kube.run("delete", "namespace", name, "--wait=false", check=False)
