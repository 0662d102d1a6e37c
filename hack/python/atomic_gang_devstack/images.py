"""Our two images, built without Docker: buildah on a local stand-in for the base.

``Dockerfile.webhook`` and ``Dockerfile.controller`` are built unchanged with
``buildah build --storage-driver vfs --isolation chroot --pull=never``; only
their ``PYTHON_IMAGE`` build argument points at a local base made with
``debootstrap`` from Debian's packages (python3 3.11, as in python:3.11-slim).
The stand-in trusts the host's CA bundle (outbound TLS here is intercepted) and
tells pip so through ``/etc/pip.conf``. Everything is cached by its inputs: the
base by its recipe, each image by the hash of its build context, so a warm
``make images`` only looks. The pause image (the pod sandbox) is built here too.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from atomic_gang_devstack.bins import REPO_ROOT, Bins, install_node_deps

log = logging.getLogger("atomic_gang_devstack.images")
BASE_SUITE = "bookworm"
BASE_MIRROR = os.environ.get("ATOMIC_GANG_DEBIAN_MIRROR", "http://deb.debian.org/debian")
BASE_PACKAGES = ("python3", "python3-venv", "python-is-python3", "ca-certificates")
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
PIP_CONF = "[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n"
BASE_RECIPE = 2  # bump when the recipe below changes in a way its inputs do not show
REPOSITORY = "localhost/atomic-gang-provisioner"
SERVICES = {"controller": REPOSITORY, "webhook": f"{REPOSITORY}-webhook"}
CONTEXT = ("pyproject.toml", "README.md", "shared", "services", "docker")  # .dockerignore
TRIM = ("usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale", "var/cache/apt")


class ImageBuildError(RuntimeError):
    """A buildah or debootstrap step failed; the message carries its output."""


def _run(argv: list[str], *, timeout: float = 1800) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=timeout)
    if done.returncode != 0:
        raise ImageBuildError(f"{' '.join(argv)}\n-> exit {done.returncode}\n{done.stderr[-4000:]}")
    return done.stdout


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:16]


def context_digest(root: Path = REPO_ROOT) -> str:
    """Hash of every file the Dockerfiles can COPY (the .dockerignore allow-list)."""
    h = hashlib.sha256()
    for top in CONTEXT:
        paths = [root / top] if (root / top).is_file() else sorted((root / top).rglob("*"))
        for path in paths:
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class Buildah:
    """buildah with storage of our own under the cache (never /var/lib/containers)."""

    root: Path

    def __call__(self, *args: str, timeout: float = 1800) -> str:
        store = ["--root", str(self.root / "storage"), "--runroot", str(self.root / "run")]
        return _run(["buildah", *store, "--storage-driver", "vfs", *args], timeout=timeout)

    def image_id(self, ref: str) -> str | None:
        try:
            return self("inspect", "--type", "image", "--format", "{{.FromImageID}}", ref).strip()
        except ImageBuildError:
            return None


@dataclass(frozen=True)
class Built:
    """One image in the local store: its reference, its id and a docker-archive of it."""

    ref: str
    image_id: str
    archive: Path


class Images:
    """Build (or find) the base, the pause image and our two images."""

    def __init__(self, bins: Bins | None = None) -> None:
        self.bins = bins or Bins.load()
        self.cache = self.bins.root / "images"
        self.buildah = Buildah(self.cache / "buildah")

    def base_ref(self) -> str:
        ca = HOST_CA.read_bytes() if HOST_CA.exists() else b""
        recipe = f"{BASE_RECIPE} {BASE_SUITE} {BASE_MIRROR} {' '.join(BASE_PACKAGES)} {TRIM}"
        key = _digest(recipe.encode(), ca, PIP_CONF.encode())
        return f"localhost/atomic-gang-base:{BASE_SUITE}-{key}"

    def base(self) -> str:
        ref = self.base_ref()
        if self.buildah.image_id(ref) is None:
            self._debootstrap(ref)
        return ref

    def _debootstrap(self, ref: str) -> None:
        log.info("building the stand-in base %s (debootstrap %s)", ref, BASE_SUITE)
        with tempfile.TemporaryDirectory(prefix="agp-base-", dir=self.cache) as tmp:
            rootfs = Path(tmp) / "rootfs"
            include = ",".join(BASE_PACKAGES)
            _run(["debootstrap", "--variant=minbase", f"--include={include}", BASE_SUITE,
                  str(rootfs), BASE_MIRROR])  # fmt: skip
            for sub in TRIM:
                shutil.rmtree(rootfs / sub, ignore_errors=True)
            for lists in (rootfs / "var/lib/apt/lists").glob("*_*"):
                lists.unlink()
            if HOST_CA.exists():
                shutil.copyfile(HOST_CA, rootfs / "etc/ssl/certs/ca-certificates.crt")
            (rootfs / "etc/pip.conf").write_text(PIP_CONF, encoding="utf-8")
            tar = Path(tmp) / "rootfs.tar"
            _run(["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(tar), "."])
            ctr = self.buildah("from", "scratch").strip()
            try:
                self.buildah("add", ctr, str(tar), "/")
                self.buildah("config", "--env", "LANG=C.UTF-8", "--cmd", "python3", ctr)
                self.buildah("commit", "--rm", ctr, ref)
            except ImageBuildError:
                self.buildah("rm", ctr)
                raise

    def pause(self) -> Built:
        k8s = self.bins.version("kubelet")
        pause_c = _go_mod_dir(f"k8s.io/kubernetes@{k8s}") / "build/pause/linux/pause.c"
        ref = f"localhost/atomic-gang-pause:{k8s}-{_digest(pause_c.read_bytes())}"
        if self.buildah.image_id(ref) is None:
            log.info("building the pause image %s", ref)
            with tempfile.TemporaryDirectory(prefix="agp-pause-", dir=self.cache) as tmp:
                binary = Path(tmp) / "pause"
                _run(["gcc", "-Os", "-Wall", "-static", f"-DVERSION={k8s}-local", "-o",
                      str(binary), str(pause_c)])  # fmt: skip
                ctr = self.buildah("from", "scratch").strip()
                self.buildah("copy", "--chmod", "0755", ctr, str(binary), "/pause")
                self.buildah("config", "--entrypoint", '["/pause"]', "--user", "65535:65535", ctr)
                self.buildah("commit", "--rm", ctr, ref)
        return self.export(ref)

    def service_ref(self, service: str) -> str:
        key = _digest(context_digest().encode(), self.base_ref().encode())
        return f"{SERVICES[service]}:dev-{key}"

    def service(self, service: str) -> Built:
        ref = self.service_ref(service)
        if self.buildah.image_id(ref) is None:
            base, dockerfile = self.base(), REPO_ROOT / f"Dockerfile.{service}"
            log.info("building %s from Dockerfile.%s on %s", ref, service, base)
            self.buildah(
                "build", "--isolation", "chroot", "--pull=never", "--layers=false",
                "--build-arg", f"PYTHON_IMAGE={base}", "-f", str(dockerfile),
                "-t", ref, str(REPO_ROOT),
            )  # fmt: skip
        return self.export(ref)

    def export(self, ref: str) -> Built:
        """A docker-archive of ``ref`` (what ``ctr images import`` reads), cached by image id."""
        image_id = self.buildah.image_id(ref)
        if image_id is None:
            raise ImageBuildError(f"{ref} is not in {self.buildah.root}")
        archive = self.cache / "archives" / f"{image_id[:16]}.tar"
        if not archive.exists():
            archive.parent.mkdir(parents=True, exist_ok=True)
            tmp = archive.with_suffix(".tmp")
            tmp.unlink(missing_ok=True)
            self.buildah("push", ref, f"docker-archive:{tmp}:{ref}")
            tmp.rename(archive)
        return Built(ref=ref, image_id=f"sha256:{image_id}", archive=archive)

    def all(self) -> dict[str, Built]:
        """pause, controller and webhook: built or reused."""
        self.cache.mkdir(parents=True, exist_ok=True)
        return {"pause": self.pause(), **{s: self.service(s) for s in SERVICES}}


def _go_mod_dir(module: str) -> Path:
    env = {**os.environ, "GOFLAGS": "-mod=mod"}
    done = subprocess.run(
        ["go", "mod", "download", "-json", module],
        capture_output=True, text=True, check=True, timeout=600, env=env,
    )  # fmt: skip
    return Path(json.loads(done.stdout)["Dir"])


def main() -> int:
    """``python -m atomic_gang_devstack.images``: build (or reuse) every image; print them."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s images %(message)s")
    install_node_deps()  # buildah, debootstrap, gcc from Debian's packages when missing
    try:
        built = Images().all()
    except ImageBuildError as exc:
        log.error("%s", exc)
        return 1
    for name, image in built.items():
        sys.stdout.write(f"{name:10} {image.ref}  {image.image_id}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
