"""Entry point of ``atomic-gang``; sub-commands are thin wrappers over modules."""

from __future__ import annotations

import argparse
import sys

from atomic_gang.errors import REASONS
from atomic_gang.settings import DEFAULT_CONTROLLER_NAME, SettingsError, load_settings
from atomic_gang_cli.explain import gather, render
from atomic_gang_cli.kube import ClusterUnreachableError, Reader
from atomic_gang_cli.validate import run


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="atomic-gang",
        description="Tools for atomic-gang-provisioner users and CI pipelines.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser(
        "validate",
        help="check the gang annotations of every Job, JobSet and TrainJob in YAML files",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Check every Job, JobSet and TrainJob (and CronJob jobTemplate, and Kubeflow\n"
            "Trainer runtime) in multi-document YAML files with the same rules as the\n"
            "admission webhook. One line per violation:\n"
            "  <file>:<kind>/<name>: <annotation-key>: <message>\n\n"
            "exit status: 0 all valid, 1 some invalid, 2 unreadable input or settings\n\n"
            "examples:\n"
            "  atomic-gang validate --config settings.yaml k8s/*.yaml\n"
            "  kustomize build overlays/prod | atomic-gang validate -"
        ),
    )
    v.add_argument("files", nargs="+", metavar="FILE", help="YAML files; '-' reads stdin")
    v.add_argument(
        "--config",
        metavar="SETTINGS.yaml",
        help="the settings file the services use (chart value names): defaults, "
        "limits and allowlists; without it the built-in defaults apply",
    )
    sub.add_parser("reasons", help="list the stable reason codes of violations")
    _explain_parser(sub)
    return parser


def _explain_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    e = sub.add_parser(
        "explain",
        help="why is my gang Job, JobSet or TrainJob pending? a timeline and the one reason",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Read the Job (JobSet, TrainJob), its Kueue Workload, our AdmissionCheck on it, its\n"
            "GangNodePool and the Events of all three; print a short timeline and the one\n"
            "reason it waits: quota, capacity shortfall n/K, waiting for a capacity block\n"
            "to start, joining k/N, or a permanent error and its fix.\n\n"
            "Needs only read access: get jobs (jobsets, trainjobs), list workloads and events\n"
            "in its namespace, get admissionchecks and gangnodepools (cluster-scoped), and list\n"
            "events in 'default' for the pool's Events (docs/operations.md: RBAC).\n"
            "What RBAC forbids is reported, not fatal.\n\n"
            "exit status: 0 explained, 1 no such object, 2 cluster unreachable\n\n"
            "examples:\n"
            "  atomic-gang explain team-a/train-llm\n"
            "  atomic-gang explain jobset/team-a/allreduce\n"
            "  atomic-gang explain trainjob/team-a/llama\n"
            "  atomic-gang explain --kubeconfig ~/.kube/prod --context eks-prod team-a/train-llm"
        ),
    )
    e.add_argument(
        "job",
        metavar="[jobset/|trainjob/]NAMESPACE/NAME",
        help="the Job as <namespace>/<name> (or job/<namespace>/<name>), the JobSet as "
        "jobset/<namespace>/<name>, the TrainJob as trainjob/<namespace>/<name>",
    )
    e.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
    e.add_argument("--context", help="kubeconfig context (default: the current one)")
    e.add_argument(
        "--controller-name",
        default=DEFAULT_CONTROLLER_NAME,
        help="controllerName of our AdmissionCheck (the chart value; default %(default)s)",
    )
    e.add_argument("--limit", type=int, default=15, help="timeline entries shown (newest)")


# the prefix of explain's argument -> kind
KINDS = {"job": "Job", "jobset": "JobSet", "trainjob": "TrainJob"}


def target(arg: str) -> tuple[str, str, str] | None:
    """(kind, namespace, name) of ``[job/|jobset/|trainjob/]namespace/name``; None when
    malformed."""
    parts = arg.split("/")
    if len(parts) == 3 and parts[0].lower() in KINDS:
        kind, namespace, name = KINDS[parts[0].lower()], parts[1], parts[2]
    elif len(parts) == 2:
        kind, namespace, name = "Job", parts[0], parts[1]
    else:
        return None
    return (kind, namespace, name) if namespace and name else None


def _explain(args: argparse.Namespace) -> int:
    found = target(args.job)
    if found is None:
        sys.stderr.write(
            f"atomic-gang explain: {args.job!r} is not <namespace>/<name>, "
            "jobset/<namespace>/<name> or trainjob/<namespace>/<name>\n"
        )
        return 2
    kind, namespace, name = found
    try:
        reader = Reader.from_kubeconfig(args.kubeconfig, context=args.context)
        seen = gather(reader, namespace, name, controller_name=args.controller_name, kind=kind)
    except ClusterUnreachableError as exc:
        sys.stderr.write(f"atomic-gang explain: {exc}\n")
        return 2
    if seen is None:
        denied = f" ({'; '.join(reader.denied)})" if reader.denied else ""
        sys.stderr.write(f"atomic-gang explain: no {kind} {namespace}/{name}{denied}\n")
        return 1
    sys.stdout.write(render(seen, limit=args.limit))
    return 0


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if args.command == "explain":
        sys.exit(_explain(args))
    if args.command == "reasons":
        sys.stdout.write("\n".join(REASONS) + "\n")
        sys.exit(0)
    try:
        settings = load_settings(args.config)
    except SettingsError as exc:
        sys.stderr.write(f"atomic-gang: {exc}\n")
        sys.exit(2)
    sys.exit(run(args.files, settings, sys.stdout, sys.stderr))
