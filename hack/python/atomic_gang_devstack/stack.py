"""The launcher: start each component once its dependencies are ready; stop all.

``up`` is idempotent: with a healthy stack already recorded in the state
directory it only reports it. A failing component stops the whole start; the
error names the component, its log file and the log's last lines, and every
process started so far is stopped again (unless ``keep_on_failure``).
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from atomic_gang_devstack import pki, procs, state
from atomic_gang_devstack.bins import Bins
from atomic_gang_devstack.component import Component, Context
from atomic_gang_devstack.node import host
from atomic_gang_devstack.state import StackOptions, StackState
from atomic_gang_devstack.waits import AbortedError

log = logging.getLogger("atomic_gang_devstack")


def _raise_root_cause(futures: Sequence[Future[None]]) -> None:
    """Re-raise the first real failure in start order (not the knock-on aborts)."""
    errors = [e for e in (f.exception() for f in futures) if e is not None]
    for err in errors:
        if not isinstance(err, AbortedError):
            raise err
    if errors:
        raise errors[0]


def waves(components: Sequence[Component]) -> list[list[Component]]:
    """Group components into start waves; each wave needs only earlier waves."""
    names = [c.name for c in components]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate component names in {names}")
    unknown = {n for c in components for n in c.needs} - set(names)
    if unknown:
        raise ValueError(f"unknown dependencies: {sorted(unknown)}")
    done: set[str] = set()
    out: list[list[Component]] = []
    pending = list(components)
    while pending:
        wave = [c for c in pending if set(c.needs) <= done]
        if not wave:
            raise ValueError(f"dependency cycle among {[c.name for c in pending]}")
        out.append(wave)
        done |= {c.name for c in wave}
        pending = [c for c in pending if c.name not in done]
    return out


@dataclass
class Stack:
    """A set of components bound to one state directory."""

    options: StackOptions
    components: Sequence[Component]

    def __post_init__(self) -> None:
        waves(self.components)  # validate the graph early
        self.ctx: Context | None = None

    def _context(self, st: StackState) -> Context:
        bins = Bins.load()
        if self.options.kueue_version:
            bins = bins.with_kueue(self.options.kueue_version)
        return Context(options=self.options, state=st, bins=bins)

    def running(self) -> Context | None:
        """The context of a recorded, fully healthy stack, or None."""
        st = state.load(self.options.state_dir)
        if st is None or not st.ready:
            return None
        ctx = self._context(st)
        names = {c.name for c in self.components}
        if set(st.started) != names or not all(c.healthy(ctx) for c in self.components):
            return None
        return ctx

    def up(self, *, keep_on_failure: bool = False) -> Context:
        with state.locked(self.options.state_dir):
            ctx = self.running()
            if ctx is not None:
                log.info("stack already running; nothing to do")
                self.ctx = ctx
                return ctx
            self._down_locked()  # leftovers of a broken or different stack
            for problem in host.sweep():  # what an abandoned stack's node left on the host
                log.warning("host sweep: %s", problem)
            ctx = self._fresh_context()
            try:
                self._start_all(ctx)
            except BaseException:
                if not keep_on_failure:
                    self._stop_all(ctx)
                raise
            self.ctx = ctx
            return ctx

    def _fresh_context(self) -> Context:
        d = self.options.state_dir
        for sub in ("pki", "kubeconfigs", "logs"):
            shutil.rmtree(d / sub, ignore_errors=True)
        st = StackState(options=self.options)
        ctx = self._context(st)
        ctx.ca = pki.new_ca("atomic-gang-local-ca")
        ctx.ca.write(ctx.pki_dir, "ca")
        st.save()
        return ctx

    def _start_all(self, ctx: Context) -> None:
        t0 = time.monotonic()
        order = [c for wave in waves(self.components) for c in wave]
        futures: dict[str, Future[None]] = {}
        # Submitted in dependency order and one thread each, so a component's
        # dependencies are always already submitted and can never starve it.
        with ThreadPoolExecutor(max_workers=len(order), thread_name_prefix="devstack") as pool:
            for c in order:
                deps = [futures[n] for n in c.needs]
                futures[c.name] = pool.submit(self._bring_up, ctx, c, deps)
            wait(futures.values(), return_when=FIRST_EXCEPTION)
            if any(f.done() and f.exception() for f in futures.values()):
                ctx.abort.set()
        _raise_root_cause([futures[c.name] for c in order])
        ctx.state.ready = True
        ctx.state.ready_seconds = round(time.monotonic() - t0, 1)
        ctx.save()
        if self.options.kubeconfig_out is not None:
            self.options.kubeconfig_out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ctx.admin_kubeconfig(), self.options.kubeconfig_out)
        log.info("stack ready in %.1fs", ctx.state.ready_seconds)

    @staticmethod
    def _bring_up(ctx: Context, comp: Component, deps: list[Future[None]]) -> None:
        for dep in deps:
            dep.result()  # a failed dependency fails this component with the same error
        if ctx.abort.is_set():
            raise AbortedError(f"{comp.name}: not started: another component failed")
        t = time.monotonic()
        with ctx.lock:
            ctx.state.started.append(comp.name)
        comp.start(ctx)
        ctx.save()
        log.info("started %s (%.1fs)", comp.name, time.monotonic() - t)
        t = time.monotonic()
        comp.wait_ready(ctx)
        log.info("%s ready in %.1fs", comp.name, time.monotonic() - t)

    def down(self) -> bool:
        """Stop everything recorded in the state directory. False if nothing was there."""
        with state.locked(self.options.state_dir):
            return self._down_locked()

    def _down_locked(self) -> bool:
        st = state.load(self.options.state_dir)
        if st is None:
            return False
        self._stop_all(self._context(st))
        (self.options.state_dir / state.STATE_FILE).unlink(missing_ok=True)
        if self.options.kubeconfig_out is not None:
            self.options.kubeconfig_out.unlink(missing_ok=True)
        return True

    def _stop_all(self, ctx: Context) -> None:
        by_name = {c.name: c for c in self.components}
        stuck: list[procs.StopTimeoutError] = []
        # Reverse start order: Kueue and the webhook go before the apiserver they talk to.
        for name in reversed(ctx.state.started):
            comp = by_name.get(name)
            if comp is not None:
                comp.stop(ctx)
            rec = ctx.state.procs.get(name)
            try:
                if rec is not None and procs.stop(rec):
                    log.info("stopped %s (pid %d)", name, rec.pid)
            except procs.StopTimeoutError as exc:
                stuck.append(exc)  # stop the others first; the state keeps its record
        ctx.state.ready = False
        ctx.state.save()
        if stuck:
            raise stuck[0]

    def _component(self, name: str) -> Component:
        for c in self.components:
            if c.name == name:
                return c
        raise KeyError(f"no component {name!r}")

    def stop_component(self, name: str) -> None:
        """Stop one running component (tests use it to prove fail-closed behaviour)."""
        ctx = self._require_ctx()
        self._component(name).stop(ctx)
        rec = ctx.state.procs.pop(name, None)
        if rec is not None:
            procs.stop(rec)
        ctx.state.save()

    def start_component(self, name: str) -> None:
        """Start one component again, on the ports it had, and wait until it is ready."""
        ctx = self._require_ctx()
        comp = self._component(name)
        comp.start(ctx)
        ctx.state.save()
        comp.wait_ready(ctx)

    def _require_ctx(self) -> Context:
        if self.ctx is None:
            st = state.load(self.options.state_dir)
            if st is None:
                raise RuntimeError(f"no stack recorded in {self.options.state_dir}")
            self.ctx = self._context(st)
        return self.ctx

    def status(self) -> dict[str, str]:
        """Component name -> "healthy" / "unhealthy" / "not started"."""
        st = state.load(self.options.state_dir)
        if st is None:
            return {c.name: "not started" for c in self.components}
        ctx = self._context(st)
        return {
            c.name: ("healthy" if c.healthy(ctx) else "unhealthy")
            if c.name in st.started
            else "not started"
            for c in self.components
        }
