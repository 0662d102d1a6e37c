"""Pins come from hack/build-bins.sh; binaries are cached by version."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from atomic_gang_devstack import bins


def test_parse_pins_reads_default_versions() -> None:
    text = "ETCD_VERSION=${ETCD_VERSION:-v3.6.16}\nK8S_VERSION=${K8S_VERSION:-v1.36.3}\nX=1\n"
    assert bins.parse_pins(text) == {"ETCD": "v3.6.16", "K8S": "v1.36.3"}


def test_every_binary_has_a_pin_in_the_real_script() -> None:
    pins = bins.parse_pins(bins.BUILD_SCRIPT.read_text(encoding="utf-8"))
    assert {pin for pin, _ in bins.BINARIES.values()} <= set(pins)


def test_paths_are_versioned_under_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATOMIC_GANG_CACHE", str(tmp_path))
    monkeypatch.setenv("KWOK_VERSION", "v9.9.9")
    b = bins.Bins.load()
    assert b.path("kwok") == tmp_path / "bin" / "kwok-v9.9.9"
    assert b.source("kwok") == tmp_path / "kwok-v9.9.9-src"
    assert b.path("kubectl").name == f"kubectl-{b.pins['K8S']}"
    assert "kwok" in b.missing()


def test_pins_are_in_the_ranges_issue_3_asks_for() -> None:
    pins = bins.parse_pins(bins.BUILD_SCRIPT.read_text(encoding="utf-8"))
    assert pins["ETCD"].startswith("v3.6.")
    assert pins["K8S"].startswith("v1.36.")
    assert pins["KWOK"].startswith("v0.8.")
    assert pins["HELM"].startswith("v3.")
    assert pins["KUEUE"] == "v0.19.1"
    assert pins["KUEUE_FLOOR"] == "v0.18.3"  # the spec's floor, tested beside the default
    assert pins["TRAINER"] == "v2.2.1"  # the Kubeflow Trainer both Kueues' go.mod name


def test_the_floor_bins_name_the_floor_kueue_and_keep_every_other_pin() -> None:
    b = bins.Bins.load()
    floor = b.floor()
    assert floor.path("kueue").name == "kueue-v0.18.3"
    assert floor.source("kueue").name == "kueue-v0.18.3-src"
    assert floor.path("kube-apiserver") == b.path("kube-apiserver")


def _stub_script(tmp_path: Path, b: bins.Bins, *, builds: bool = True) -> Path:
    """A build script that records its arguments, one call a line, and "builds" the *.todo files."""
    script = tmp_path / "build-bins.sh"
    body = f'#!/bin/sh\necho "$@" >> {tmp_path / "calls.txt"}\n'
    if builds:
        body += f'for f in {b.root}/bin/*.todo; do [ -e "$f" ] && mv "$f" "${{f%.todo}}"; done\n'
        sources = " ".join(str(b.source(m)) for m in ("kueue", "kwok", "jobset", "trainer"))
        body += f"mkdir -p {sources}\n"
    script.write_text(body + "exit 0\n", encoding="utf-8")
    script.chmod(0o755)
    return script


def _cache(
    tmp_path: Path, *, missing: tuple[str, ...] = (), no_src: tuple[str, ...] = ()
) -> bins.Bins:
    """A cache with every pinned binary and source tree except ``missing`` (left as *.todo)."""
    pins = bins.parse_pins(bins.BUILD_SCRIPT.read_text(encoding="utf-8"))
    b = bins.Bins(root=tmp_path / "cache", pins=pins)
    (b.root / "bin").mkdir(parents=True)
    for name in bins.BINARIES:
        path = b.path(name)
        if name in missing:
            path = path.with_name(path.name + ".todo")
        path.write_text("#!/bin/sh\n", encoding="utf-8")
        path.chmod(0o755)
    for module in ("kueue", "kwok", "jobset", "trainer"):
        if module not in no_src:
            b.source(module).mkdir()
    return b


def _calls(tmp_path: Path) -> list[str]:
    calls = tmp_path / "calls.txt"
    return calls.read_text(encoding="utf-8").splitlines() if calls.exists() else []


def test_ensure_does_not_run_the_build_when_the_cache_is_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = _cache(tmp_path)
    monkeypatch.setattr(bins, "BUILD_SCRIPT", _stub_script(tmp_path, b))

    b.ensure()

    assert b.missing() == []
    assert _calls(tmp_path) == []


@pytest.mark.parametrize(
    ("missing", "no_src", "expected"),
    [
        pytest.param(("etcd",), (), "etcd", id="one-binary"),
        pytest.param(("kubectl", "kwok"), (), "kube kwok", id="kube-group-and-kwok"),
        pytest.param((), ("kueue",), "kueue", id="source-link-only"),
        pytest.param(("jobset",), ("jobset",), "jobset", id="jobset-controller-and-source"),
        pytest.param(("trainer",), ("trainer",), "trainer", id="trainer-controller-and-source"),
        pytest.param((), ("trainer",), "trainer", id="trainer-source-link-only"),
        pytest.param(
            ("cert-manager-cainjector", "helm"), (), "cert-manager helm", id="helm-and-cert-manager"
        ),
    ],
)
def test_ensure_builds_only_the_missing_components(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    missing: tuple[str, ...],
    no_src: tuple[str, ...],
    expected: str,
) -> None:
    b = _cache(tmp_path, missing=missing, no_src=no_src)
    monkeypatch.setattr(bins, "BUILD_SCRIPT", _stub_script(tmp_path, b))

    b.ensure()

    assert _calls(tmp_path) == [expected]
    assert b.missing() == []


def test_ensure_fails_when_the_build_leaves_a_binary_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = _cache(tmp_path, missing=("kwok",))
    monkeypatch.setattr(bins, "BUILD_SCRIPT", _stub_script(tmp_path, b, builds=False))

    with pytest.raises(bins.BinaryMissingError, match="still missing: kwok"):
        b.ensure()
    assert _calls(tmp_path) == ["kwok"]


def test_ensure_uses_the_cache_dir_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for pin in bins.parse_pins(bins.BUILD_SCRIPT.read_text(encoding="utf-8")):
        monkeypatch.delenv(f"{pin}_VERSION", raising=False)
    b = _cache(tmp_path, missing=("etcd",))
    monkeypatch.setenv("ATOMIC_GANG_CACHE", str(b.root))
    loaded = bins.Bins.load()  # pins from the real script, before it is stubbed
    monkeypatch.setattr(bins, "BUILD_SCRIPT", _stub_script(tmp_path, b))

    loaded.ensure(("etcd", "kueue"))

    assert loaded.root == b.root
    assert _calls(tmp_path) == ["etcd"]


def test_a_build_key_is_part_of_the_cache_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """helm's build flags changed (release ldflags): a helm cached the old way is not reused."""
    text = bins.BUILD_SCRIPT.read_text(encoding="utf-8")
    assert bins.parse_build_keys(text)["HELM"] == "rel1"
    monkeypatch.setenv("ATOMIC_GANG_CACHE", str(tmp_path))
    b = bins.Bins.load()
    assert b.path("helm").name == f"helm-{b.pins['HELM']}-rel1"
    assert b.path("kwok").name == f"kwok-{b.pins['KWOK']}"  # no key, no suffix
    monkeypatch.setenv("HELM_BUILD", "rel2")
    assert bins.Bins.load().path("helm").name.endswith("-rel2")


def test_the_real_node_binaries_are_pinned_and_asked_for_by_name() -> None:
    pins = bins.parse_pins(bins.BUILD_SCRIPT.read_text(encoding="utf-8"))
    assert pins["CONTAINERD"].startswith("v2.")
    assert set(bins.NODE) <= set(bins.BINARIES)
    assert not set(bins.NODE) & set(bins.CONTROL_PLANE)
    assert bins.BINARIES["kubelet"] == ("K8S", "kubelet")  # the same wrapper module as the rest


def test_ensure_on_the_floor_bins_builds_the_floor_kueue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The script is told which Kueue to build: the floor's, not its default."""
    b = _cache(tmp_path)
    floor = b.floor()
    script = _stub_script(tmp_path, floor)
    script.write_text(
        script.read_text().replace('echo "$@"', 'echo "$@ $KUEUE_VERSION"'), encoding="utf-8"
    )
    monkeypatch.setattr(bins, "BUILD_SCRIPT", script)
    todo = floor.path("kueue").with_name(floor.path("kueue").name + ".todo")
    todo.write_text("#!/bin/sh\n", encoding="utf-8")
    todo.chmod(0o755)

    floor.ensure(("kueue",))

    assert _calls(tmp_path) == ["kueue v0.18.3"]
    assert floor.missing(("kueue",)) == []
    assert b.missing(("kueue",)) == []  # the default Kueue was there all along


def test_every_component_is_listed_in_the_header_and_built_by_default() -> None:
    text = bins.BUILD_SCRIPT.read_text(encoding="utf-8")
    header = re.search(r"^# Components: (.*)$", text, re.MULTILINE)
    default = re.search(r"^ALL=\((.*)\)$", text, re.MULTILINE)
    assert header is not None
    assert default is not None
    assert header.group(1).split() == default.group(1).split()
    for component in {c for _, c in bins.BINARIES.values()}:
        assert component in default.group(1).split()
        assert f"build_{component.replace('-', '_')}() {{" in text


def test_nodeadm_check_is_pinned_keyed_by_its_source_and_not_waited_for() -> None:
    """Built from hack/go/nodeadm-userdata: an edit there must name a new binary (its
    cache name carries the sources' digest), and the go.mod requires the pinned nodeadm."""
    text = bins.BUILD_SCRIPT.read_text(encoding="utf-8")
    src = bins.REPO_ROOT / "hack" / "go" / "nodeadm-userdata"
    sources = b"".join((src / n).read_bytes() for n in ("go.mod", "go.sum", "main.go"))
    digest = hashlib.sha256(sources).hexdigest()[:8]
    assert bins.parse_build_keys(text)["NODEADMCHECK"] == digest, (
        f"hack/go/nodeadm-userdata changed: set NODEADMCHECK_BUILD to {digest}"
    )
    pin = bins.parse_pins(text)["NODEADM"]
    assert re.fullmatch(r"v0\.0\.0-\d{14}-[0-9a-f]{12}", pin)  # the module has no tags
    gomod = (src / "go.mod").read_text(encoding="utf-8")
    assert f"require github.com/awslabs/amazon-eks-ami/nodeadm {pin}\n" in gomod
    assert bins.BINARIES["nodeadm-check"] == ("NODEADM", "nodeadm-check")
    assert "nodeadm-check" not in bins.CONTROL_PLANE
