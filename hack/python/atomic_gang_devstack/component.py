"""The component contract and the context every component runs in.

A component has a name, the names it needs ready first, and ``start`` /
``wait_ready`` / ``stop`` / ``healthy``. A :class:`ProcessComponent` is one
long-running process; a plain :class:`Component` is a setup step (objects
applied to the apiserver) that has nothing to stop. New pieces of the stack
(moto, the provisioner, the node-join simulator) are appended as components.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from atomic_gang_devstack import kubeconfig, pki, procs, waits
from atomic_gang_devstack.bins import Bins
from atomic_gang_devstack.kubectl import Kubectl
from atomic_gang_devstack.ports import PortPicker
from atomic_gang_devstack.state import StackOptions, StackState

SA_TOKEN_HOURS = 24 * 365


@dataclass
class Context:
    """Everything components share during one launcher run.

    Components start on threads of their own (each as soon as what it needs
    is ready), so changes to the state go through :attr:`lock`; :attr:`abort`
    tells every waiting component to give up once one has failed.
    """

    options: StackOptions
    state: StackState
    bins: Bins
    ca: pki.Issued | None = None
    picker: PortPicker = field(default_factory=PortPicker)
    lock: threading.RLock = field(default_factory=threading.RLock)
    abort: threading.Event = field(default_factory=threading.Event)

    @property
    def dir(self) -> Path:
        return self.options.state_dir

    @property
    def pki_dir(self) -> Path:
        return self.dir / "pki"

    def log_path(self, name: str) -> Path:
        return self.dir / "logs" / f"{name}.log"

    def port(self, key: str) -> int:
        """The port for ``key``, picked free on first use and remembered in the state."""
        with self.lock:
            if key not in self.state.ports:
                self.state.ports[key] = self.picker.pick()
            return self.state.ports[key]

    def save(self) -> None:
        with self.lock:
            self.state.save()

    @property
    def apiserver_url(self) -> str:
        return f"https://127.0.0.1:{self.port('apiserver')}"

    @property
    def ca_file(self) -> Path:
        return self.pki_dir / "ca.crt"

    def admin_kubeconfig(self) -> Path:
        return self.dir / "kubeconfigs" / "admin.yaml"

    @property
    def kubectl(self) -> Kubectl:
        return Kubectl(
            self.bins.path("kubectl"), self.admin_kubeconfig(), self.dir / "kubectl-cache"
        )

    def _require_ca(self) -> pki.Issued:
        if self.ca is None:
            self.ca = pki.load(self.ca_file, self.pki_dir / "ca.key")
        return self.ca

    def serving_cert(
        self, stem: str, hosts: tuple[str, ...] = ("127.0.0.1", "localhost")
    ) -> tuple[Path, Path]:
        """Write a serving cert/key signed by the cluster CA; return their paths."""
        return pki.issue(self._require_ca(), stem, hosts=hosts, server=True).write(
            self.pki_dir, stem
        )

    def client_kubeconfig(self, stem: str, user: str, orgs: tuple[str, ...] = ()) -> Path:
        """Issue a client certificate for ``user`` and write a kubeconfig that uses it."""
        cert = pki.issue(self._require_ca(), user, orgs=orgs, client=True)
        crt, key = cert.write(self.pki_dir, f"client-{stem}")
        cfg = kubeconfig.kubeconfig(
            server=self.apiserver_url, ca_file=self.ca_file, cert_file=crt, key_file=key, user=user
        )
        return kubeconfig.write(self.dir / "kubeconfigs" / f"{stem}.yaml", cfg)

    def service_account_kubeconfig(self, stem: str, namespace: str, name: str) -> Path:
        """A kubeconfig with a token of the ServiceAccount ``namespace/name`` (TokenRequest,
        valid for a year): the identity a pod of it would have. For names a client
        certificate cannot carry (an X.509 common name has at most 64 characters)."""
        token = self.kubectl.run(
            "create", "token", name, "-n", namespace, f"--duration={SA_TOKEN_HOURS}h"
        ).stdout.strip()
        user = f"system:serviceaccount:{namespace}:{name}"
        cfg = kubeconfig.token_kubeconfig(
            server=self.apiserver_url, ca_file=self.ca_file, token=token, user=user
        )
        return kubeconfig.write(self.dir / "kubeconfigs" / f"{stem}.yaml", cfg)


class Component:
    """A setup step or a process; see :class:`ProcessComponent`."""

    name: ClassVar[str]
    needs: ClassVar[tuple[str, ...]] = ()
    ready_timeout: ClassVar[float] = 60.0

    def start(self, ctx: Context) -> None:
        """Begin starting; must not block on readiness."""

    def wait_ready(self, ctx: Context) -> None:
        """Block until ready or raise :class:`waits.ComponentFailedError`."""

    def stop(self, ctx: Context) -> None:
        """Undo ``start``; processes recorded in the state are stopped by the stack."""

    def healthy(self, ctx: Context) -> bool:
        return True


class ProcessComponent(Component):
    """One long-running process, health-checked by :meth:`probe`."""

    def prepare(self, ctx: Context) -> None:
        """Write config files and apply prerequisites before the process starts."""

    def argv(self, ctx: Context) -> list[str]:
        raise NotImplementedError

    def env(self, ctx: Context) -> Mapping[str, str] | None:
        return None

    def probe(self, ctx: Context) -> bool:
        raise NotImplementedError

    def start(self, ctx: Context) -> None:
        self.prepare(ctx)
        rec = procs.spawn(
            self.name,
            self.argv(ctx),
            log=ctx.log_path(self.name),
            env=self.env(ctx),
            die_with_parent=not ctx.options.detach,
        )
        with ctx.lock:
            ctx.state.procs[self.name] = rec
            ctx.state.save()

    def wait_ready(self, ctx: Context) -> None:
        rec = ctx.state.procs[self.name]
        waits.wait_until(
            lambda: self.probe(ctx),
            name=self.name,
            what="healthy",
            timeout=self.ready_timeout,
            proc=rec,
            cancel=ctx.abort,
        )

    def healthy(self, ctx: Context) -> bool:
        rec = ctx.state.procs.get(self.name)
        if rec is None or not procs.alive(rec):
            return False
        try:
            return self.probe(ctx)
        except Exception:
            return False
