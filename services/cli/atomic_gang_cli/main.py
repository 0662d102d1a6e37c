"""Entry point of ``atomic-gang``; sub-commands are thin wrappers over modules."""

from __future__ import annotations

import argparse
import sys

from atomic_gang.errors import REASONS
from atomic_gang.settings import SettingsError, load_settings
from atomic_gang_cli.validate import run


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="atomic-gang",
        description="Tools for atomic-gang-provisioner users and CI pipelines.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser(
        "validate",
        help="check the gang annotations of every Job in YAML files",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Check every Job (and CronJob jobTemplate) in multi-document YAML files with\n"
            "the same rules as the admission webhook. One line per violation:\n"
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
    return parser


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if args.command == "reasons":
        sys.stdout.write("\n".join(REASONS) + "\n")
        sys.exit(0)
    try:
        settings = load_settings(args.config)
    except SettingsError as exc:
        sys.stderr.write(f"atomic-gang: {exc}\n")
        sys.exit(2)
    sys.exit(run(args.files, settings, sys.stdout, sys.stderr))
