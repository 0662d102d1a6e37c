"""EC2 engine: API calls per acquisition, shortfall, release and reaper sweep (and
what ``placement``/``efa`` add), and the engine's CPU time per acquisition.

Runs in-process against moto plus the fidelity layer (throttling off, no
faults), counting every call that reaches "AWS" from the layer's call log.
Calls are split into the launch call (RunInstances/CreateFleet), reads
(Describe*/Get*) and other writes. "cold" is a fresh engine (empty caches, no
launch template yet); "warm" is the steady state of a pool's next generation.

The reaper sweep lists 5,000 managed instances. moto pages DescribeInstances
by *reservations* (EC2 pages by instances), so the bench seeds one instance
per reservation, which makes a moto page of 1000 equal to EC2's. Seeding goes
straight into moto's backend; the listing goes through the engine. moto needs
about 9 s to serialise each page of 1000 instances; that is moto, not us.

Usage: .venv/bin/python -m bench.ec2_calls [--acquisitions 30] [--sweep 5000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import botocore.session
from moto import mock_aws
from moto.core.botocore_stubber import BotocoreStubber
from moto.ec2.models import ec2_backends

from atomic_gang import GangSpec, GoDuration, Mode, keys
from atomic_gang_fakeaws import FakeAws, installed
from atomic_gang_fakeaws.world import World, seed_world
from atomic_gang_provisioner.cloud import AcquireRequest, Launched, ReleaseRequest, Shortfall
from atomic_gang_provisioner.cloud.aws import Ec2Provider, EngineConfig, make_clients
from atomic_gang_provisioner.cloud.turns.budget import BucketSpec, BudgetLimits

REGION, CLUSTER, TYPE = "us-east-1", "bench", "p4d.24xlarge"
LAUNCH = {"RunInstances", "CreateFleet"}
MOTO_CPU = [0.0]


def _timed_stubber() -> None:
    """Account the CPU moto spends answering, so the engine's share can be separated."""
    original = BotocoreStubber.__call__

    def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return original(self, *args, **kwargs)
        finally:
            MOTO_CPU[0] += time.process_time() - start

    BotocoreStubber.__call__ = timed  # type: ignore[method-assign]


def split(calls: list[dict[str, Any]]) -> dict[str, Any]:
    ec2 = [c for c in calls if c["service"] == "ec2"]
    launch = [c for c in ec2 if c["action"] in LAUNCH]
    reads = [c for c in ec2 if c["action"].startswith(("Describe", "Get"))]
    other = [c for c in ec2 if c not in launch and c not in reads]
    return {
        "ec2": len(ec2),
        "launch": len(launch),
        "reads": len(reads),
        "writes": len(other),
        "non_ec2": len(calls) - len(ec2),
        "actions": dict(Counter(f"{c['service']}:{c['action']}" for c in calls)),
    }


_ANY = BucketSpec(1e9, 1e9)
UNBOUNDED = BudgetLimits(
    run_instances=_ANY, run_instances_instances=_ANY, mutating=_ANY, non_mutating=_ANY
)


class Bench:
    def __init__(self, fake: FakeAws, world: World, clients: Any) -> None:
        self.fake, self.world, self.clients = fake, world, clients

    def engine(self, **config: Any) -> Ec2Provider:
        """An engine whose client-side launch budget never makes a case wait: counted
        here are the calls a case makes, not how the budget spaces them."""
        return Ec2Provider(
            clients=self.clients,
            config=EngineConfig(cluster=CLUSTER, limits=UNBOUNDED, **config),
            sleeper=lambda s: None,
        )

    def spec(
        self, pool: str, mode: Mode = "runinstances", count: int = 4, **network: Any
    ) -> GangSpec:
        return GangSpec(
            pool=pool,
            count=count,
            instance_type=TYPE,
            mode=mode,
            region=REGION,
            node_role_arn=self.world.node_role_arn,
            keep_warm_ttl=GoDuration.of(minutes=10),
            max_lifetime=GoDuration.of(hours=4),
            ami_variant="nvidia",
            **network,
        )

    def launch(self, engine: Ec2Provider, spec: GangSpec, gen: int) -> tuple[Launched, Any]:
        result, counts = self.measure(engine.acquire, AcquireRequest(spec=spec, generation=gen))
        assert isinstance(result, Launched), result
        return result, counts

    def measure(self, fn: Callable[..., Any], *args: Any) -> tuple[Any, dict[str, Any]]:
        self.fake.clear_calls()
        result = fn(*args)
        return result, split(self.fake.calls())


def acquisitions(b: Bench, mode: Mode, rounds: int) -> dict[str, Any]:
    engine = b.engine()
    pool = f"acq-{mode}"
    out: dict[str, Any] = {}
    cpu_total, cpu_moto = [], []
    for gen in range(rounds):
        before_moto, before = MOTO_CPU[0], time.process_time()
        request = AcquireRequest(spec=b.spec(pool, mode), generation=gen)
        result, counts = b.measure(engine.acquire, request)
        cpu_total.append(time.process_time() - before)
        cpu_moto.append(MOTO_CPU[0] - before_moto)
        assert isinstance(result, Launched), result
        out.setdefault("cold" if gen == 0 else "warm", counts)
        engine.release(
            ReleaseRequest(
                instance_ids=result.instance_ids, fleet_ids=tuple(filter(None, [result.fleet_id]))
            )
        )
    warm_total, warm_moto = cpu_total[1:], cpu_moto[1:]
    out["cpu_ms"] = {
        "total": round(statistics.median(warm_total) * 1000, 2),
        "moto": round(statistics.median(warm_moto) * 1000, 2),
        "engine": round(
            statistics.median(t - m for t, m in zip(warm_total, warm_moto, strict=True)) * 1000, 2
        ),
    }
    return out


def network(b: Bench) -> dict[str, Any]:
    """``placement: cluster`` + ``efa: true`` against the same pool without them: a new
    pool on a warm engine, its next generation, the topology read, a restarted
    controller adopting the group, the group's deletion after release."""
    engine = b.engine()
    engine.acquire(AcquireRequest(spec=b.spec("warm-up"), generation=0))  # caches warm
    out: dict[str, Any] = {}
    cases: tuple[tuple[str, dict[str, Any]], ...] = (
        ("plain", {}),
        ("placement_efa", {"placement": "cluster", "efa": "max"}),
    )
    for label, extra in cases:
        spec = b.spec(f"net-{label}", **extra)
        first, out[f"{label}_new_pool"] = b.launch(engine, spec, 0)
        engine.release(ReleaseRequest(instance_ids=first.instance_ids))
        nxt, out[f"{label}_next_generation"] = b.launch(engine, spec, 1)
        if extra:
            _, out["topology_read"] = b.measure(
                lambda ids: engine.read_topology_later(ids).result(), nxt.instance_ids
            )
            engine.release(ReleaseRequest(instance_ids=nxt.instance_ids))
            restarted = b.engine()
            restarted.acquire(AcquireRequest(spec=b.spec("warm-up-2"), generation=0))
            again, out["restart_adopts_group"] = b.launch(restarted, spec, 2)
            restarted.release(ReleaseRequest(instance_ids=again.instance_ids))
            _, out["delete_group"] = b.measure(restarted.delete_placement_group, spec.pool)
    return out


def shortfalls(b: Bench) -> dict[str, Any]:
    """A pool's repeated shortfall (its launch template already exists): 3 AZs, 1 slot each."""
    for zone in b.world.subnets:
        b.fake.set_capacity(zone, TYPE, 1)
    # The engine remembers a short capacity cell for a while and makes the next attempt
    # wait (Waiting, no call): measured here is the attempt after that memory has lapsed.
    engine = b.engine(capacity_ttl_seconds=0.0)
    out = {}
    for mode in ("runinstances", "fleet"):
        spec = b.spec(f"short-{mode}", mode)
        first = engine.acquire(AcquireRequest(spec=spec, generation=0))
        assert isinstance(first, Shortfall), first
        result, counts = b.measure(engine.acquire, AcquireRequest(spec=spec, generation=1))
        assert isinstance(result, Shortfall), result
        out[mode] = counts
    for zone in b.world.subnets:
        b.fake.set_capacity(zone, TYPE, None)
    return out


def releases(b: Bench) -> dict[str, Any]:
    engine = b.engine()
    out = {}
    for label, enis in (("no_eni", 0), ("one_cni_eni", 1)):
        result = engine.acquire(AcquireRequest(spec=b.spec(f"rel-{label}"), generation=0))
        assert isinstance(result, Launched)
        ec2 = ec2_backends["123456789012"][REGION]
        for iid in result.instance_ids[:enis]:
            subnet = ec2.get_subnet(b.world.subnets["us-east-1a"])
            cni = {
                "cluster.k8s.amazonaws.com/name": CLUSTER,
                "node.k8s.amazonaws.com/instance_id": iid,
            }
            eni = ec2.create_network_interface(subnet, [], description=f"aws-K8S-{iid}", tags=cni)
            ec2.attach_network_interface(eni.id, iid, 1)
        done, counts = b.measure(engine.release, ReleaseRequest(instance_ids=result.instance_ids))
        assert done.done, done
        out[label] = counts
    return out


def sweep(b: Bench, n: int) -> dict[str, Any]:
    ec2 = ec2_backends["123456789012"][REGION]
    tags = {keys.MANAGED: "true", keys.CLUSTER: CLUSTER, keys.POOL: "sweep", keys.GENERATION: "0"}
    start = time.perf_counter()
    for _ in range(n):  # one instance per reservation: see the module docstring
        ec2.run_instances(
            "ami-12345678",
            1,
            None,
            [],
            is_instance_type_default=True,
            tags={"instance": tags},
            client_token="seed",
            block_device_mappings=[],  # no root volume: moto's volume lookups are O(n)
        )
    seeded = time.perf_counter() - start
    engine = b.engine()
    start = time.perf_counter()
    owned, counts = b.measure(engine.list_owned)
    return {
        "instances": len(owned),
        "describe_calls": counts["reads"],
        "target": -(-n // 1000),
        "seconds": round(time.perf_counter() - start, 2),
        "seed_seconds": round(seeded, 2),
    }


@contextmanager
def world() -> Iterator[Bench]:
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench")  # moto placeholders
    os.environ["MOTO_EC2_LOAD_DEFAULT_AMIS"] = "false"
    session = boto3.session.Session(
        botocore_session=botocore.session.get_session(), region_name=REGION
    )
    with mock_aws(), installed(throttling=False) as fake:
        seeded = seed_world(session.client, region=REGION, cluster=CLUSTER)
        yield Bench(fake, seeded, make_clients(region=REGION, session=session))


def _at_least_two(raw: str) -> int:
    value = int(raw)
    if value < 2:
        raise argparse.ArgumentTypeError(f"{value}: needs 2 or more (one cold, then warm ones)")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--acquisitions",
        type=_at_least_two,
        default=30,
        help="rounds per mode (>= 2: the first is cold, the median is over the warm ones)",
    )
    parser.add_argument("--sweep", type=int, default=5000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    _timed_stubber()
    report: dict[str, Any] = {}
    with world() as b:
        for mode in ("runinstances", "fleet"):
            report[f"acquire_{mode}"] = acquisitions(b, mode, args.acquisitions)
        report["shortfall"] = shortfalls(b)
        report["network"] = network(b)
        report["release"] = releases(b)
    with world() as b:
        report["sweep"] = sweep(b, args.sweep)
    print(json.dumps(report, indent=2) if args.json else render(report))


def _row(name: str, c: dict[str, Any]) -> str:
    return (
        f"| {name} | {c['ec2']} | {c['launch']} | {c['reads']} | {c['writes']} | {c['non_ec2']} |"
    )


def render(r: dict[str, Any]) -> str:
    lines = [
        "| case | EC2 calls | launch | reads | other writes | non-EC2 |",
        "|---|---|---|---|---|---|",
    ]
    for mode in ("runinstances", "fleet"):
        acq = r[f"acquire_{mode}"]
        lines.append(_row(f"acquire {mode}, cold", acq["cold"]))
        lines.append(_row(f"acquire {mode}, warm", acq["warm"]))
    for mode, c in r["shortfall"].items():
        lines.append(_row(f"shortfall {mode} (3 AZs)", c))
    for label, c in r["release"].items():
        lines.append(_row(f"release 4 instances, {label.replace('_', ' ')}", c))
    for label, c in r["network"].items():
        lines.append(_row(label.replace("_", " ").replace("placement efa", "placement+efa"), c))
    s = r["sweep"]
    lines += [
        "",
        f"reaper sweep: {s['instances']} instances listed in {s['describe_calls']}"
        f" DescribeInstances calls (target {s['target']}), {s['seconds']} s in moto",
        "",
    ]
    lines.append("| engine CPU per warm acquisition (median) | total ms | moto ms | engine ms |")
    lines.append("|---|---|---|---|")
    for mode in ("runinstances", "fleet"):
        cpu = r[f"acquire_{mode}"]["cpu_ms"]
        lines.append(f"| {mode} | {cpu['total']} | {cpu['moto']} | {cpu['engine']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
