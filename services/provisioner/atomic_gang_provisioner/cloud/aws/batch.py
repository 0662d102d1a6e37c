"""The EC2 calls many pools make at once, coalesced: DescribeInstances by ids,
TerminateInstances and CreateTags (one call per tag set).

EC2 fails a whole DescribeInstances or TerminateInstances when one id is unknown
(``InvalidInstanceID.NotFound`` naming it, or ``.Malformed``). A describe drops the
ids the error names and asks again (halving the set when it names none), so an id
EC2 forgot is simply absent from its caller's answer. A terminate or tag batch that
fails so is sent again caller by caller: only the caller whose id is bad gets the
error, and no other pool's request fails with it.

A describe request may name ids other pools will soon ask about (``also``): they
fill the room the call has left, never an extra call, and their answers are
recorded (``observed.py``) for those pools' own checks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from atomic_gang_provisioner.cloud.aws import parse
from atomic_gang_provisioner.cloud.aws.calls import Caller
from atomic_gang_provisioner.cloud.aws.observed import Observations
from atomic_gang_provisioner.cloud.batcher import Batcher, Windows
from atomic_gang_provisioner.cloud.error_codes import CloudError
from atomic_gang_provisioner.cloud.values import Instance

IDS_PER_CALL = 500  # Karpenter's DescribeInstances batch size
UNKNOWN_ID = frozenset({"InvalidInstanceID.NotFound", "InvalidInstanceID.Malformed"})
_ID = re.compile(r"i-[0-9a-zA-Z]+")
Ids = tuple[str, ...]
TagCall = tuple[Ids, tuple[tuple[str, str], ...]]
DescribeAsk = tuple[Ids, Ids]  # (the caller's ids, other pools' ids to ask along)


def chunks(items: Sequence[str], size: int) -> list[list[str]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def union(requests: Iterable[Ids]) -> list[str]:
    return sorted({i for ids in requests for i in ids})


def padded(own: list[str], extra: Iterable[str], per_call: int) -> list[str]:
    """``own``, then as many of ``extra`` as fit in the room its last call has left:
    asking along costs no call of its own (and nothing at all when ``own`` is empty)."""
    room = -len(own) % per_call
    mine = set(own)
    return own + [i for i in dict.fromkeys(extra) if i not in mine][:room]


class Ec2Batches:
    def __init__(self, *, ec2: Any, caller: Caller, windows: Windows, seen: Observations) -> None:
        self._ec2 = ec2
        self._caller = caller
        self.seen = seen
        self.describe: Batcher[DescribeAsk, tuple[Instance, ...]] = Batcher(
            name="describe-instances", run=self._describe, windows=windows
        )
        self.terminate: Batcher[Ids, None] = Batcher(
            name="terminate-instances", run=self._terminate, windows=windows
        )
        self.tag: Batcher[TagCall, None] = Batcher(
            name="create-tags", run=self._tag, windows=windows
        )

    def _describe(self, requests: Sequence[DescribeAsk]) -> list[tuple[Instance, ...]]:
        own = union(ids for ids, _ in requests)
        asked = padded(own, (i for _, also in requests for i in also), IDS_PER_CALL)
        sent = self.seen.now()
        found: dict[str, Instance] = {}
        for chunk in chunks(asked, IDS_PER_CALL):
            found.update(self._describe_known(chunk))
        self.seen.record(found.values(), at=sent)
        return [tuple(found[i] for i in sorted(set(ids)) if i in found) for ids, _ in requests]

    def _describe_known(self, ids: list[str]) -> dict[str, Instance]:
        """Every instance of ``ids`` EC2 knows, however many of them it does not."""
        out: dict[str, Instance] = {}
        parts = [ids]
        while parts:
            part = parts.pop()
            try:
                pages = self._caller.pages(
                    self._ec2, "describe_instances", "Reservations", InstanceIds=part
                )
                out.update((i.instance_id, i) for i in parse.instances_of_reservations(pages))
            except CloudError as err:
                if err.code not in UNKNOWN_ID:
                    raise
                bad = set(_ID.findall(err.message)) & set(part)
                if bad:
                    parts.append([i for i in part if i not in bad])
                elif len(part) > 1:
                    parts += [part[: len(part) // 2], part[len(part) // 2 :]]
        return out

    def _terminate(self, requests: Sequence[Ids]) -> list[Exception | None]:
        def send(ids: list[str]) -> None:
            for chunk in chunks(ids, IDS_PER_CALL):
                self._caller.call(self._ec2, "terminate_instances", InstanceIds=chunk)

        return _together_else_alone(requests, lambda rs: send(union(rs)))

    def _tag(self, requests: Sequence[TagCall]) -> list[Exception | None]:
        by_tags: dict[tuple[tuple[str, str], ...], list[int]] = {}
        for n, (_, tags) in enumerate(requests):
            by_tags.setdefault(tags, []).append(n)
        out: list[Exception | None] = [None] * len(requests)
        for tags, members in by_tags.items():
            pairs = [{"Key": k, "Value": v} for k, v in tags]

            def send(rs: Sequence[Ids], pairs: list[dict[str, str]] = pairs) -> None:
                for chunk in chunks(union(rs), IDS_PER_CALL):
                    self._caller.call(self._ec2, "create_tags", Resources=chunk, Tags=pairs)

            answers = _together_else_alone([requests[n][0] for n in members], send)
            for n, answer in zip(members, answers, strict=True):
                out[n] = answer
        return out


def _together_else_alone(
    requests: Sequence[Ids], send: Callable[[Sequence[Ids]], None]
) -> list[Exception | None]:
    """One call for all; when an unknown id fails it, one call per caller."""
    try:
        send(requests)
        return [None] * len(requests)
    except CloudError as err:
        if err.code not in UNKNOWN_ID or len(requests) == 1:
            raise
    out: list[Exception | None] = []
    for ids in requests:
        try:
            send([ids])
            out.append(None)
        except CloudError as err:
            out.append(err)
    return out
