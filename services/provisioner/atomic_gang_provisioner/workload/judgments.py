"""What is judged once per object version: a verdict kept by the object's uid with the
resourceVersion it was made at.

Judging a gang owner runs every rule the webhook runs (each annotation parsed, each pod
template walked); judging a ResourceFlavor reads its node labels and tolerations as a pod
template would. The answer changes only with the object's version, so a Workload
reconcile whose owner and flavors have not changed reads the kept verdicts back and
parses and validates nothing.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from atomic_gang_provisioner.views.base import ObjectView

T = TypeVar("T")
# Verdicts kept at once: the objects in play, and a margin; the least recently read goes.
KEPT = 4096


class Judgments(Generic[T]):
    """``judge``'s verdict on each object, made once per version. Several Workload workers
    read at once: one lock (the judging itself runs outside it)."""

    def __init__(self, judge: Callable[[Mapping[str, Any]], T], *, kept: int = KEPT) -> None:
        self._judge = judge
        self._kept = kept
        self._verdicts: OrderedDict[str, tuple[str, T]] = OrderedDict()
        self._lock = threading.Lock()
        self.made = 0  # verdicts made, each a parse and a validation

    def of(self, obj: Mapping[str, Any]) -> T:
        seen = ObjectView(obj)
        uid, version = seen.uid, seen.resource_version
        with self._lock:
            kept = self._verdicts.get(uid)
            if kept is not None and version and kept[0] == version:
                self._verdicts.move_to_end(uid)
                return kept[1]
        verdict = self._judge(obj)
        with self._lock:
            self.made += 1
            self._verdicts[uid] = (version, verdict)
            self._verdicts.move_to_end(uid)
            while len(self._verdicts) > self._kept:
                self._verdicts.popitem(last=False)
        return verdict
