"""Entry point: ``atomic-gang-webhook`` serves HTTPS on one uvicorn process.

Settings are loaded and checked before anything listens; an invalid setting
exits with status 2 and a message naming the field.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

import uvicorn
from pydantic import ValidationError

from atomic_gang import logs
from atomic_gang.settings import GangSettings, SettingsError, check_env_names, load_settings
from atomic_gang_webhook.app import AppState, create_app
from atomic_gang_webhook.config import ServerSettings
from atomic_gang_webhook.gate import ConnectionGate, protocol_class
from atomic_gang_webhook.state import BudgetFilter, LogBudget
from atomic_gang_webhook.tls import ReloadingCertificate, not_after

log = logging.getLogger("atomic_gang_webhook")


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="atomic-gang-webhook",
        description="Validating admission webhook for atomic-gang Jobs (HTTPS only). "
        "Server options come from ATOMIC_GANG_WEBHOOK_* env vars "
        "(HOST, PORT, CERT_FILE, KEY_FILE, LOG_LEVEL, MAX_CONNECTIONS, *_TIMEOUT, ...; "
        "see README); gang rules from the settings file.",
    )
    parser.add_argument(
        "--config",
        default=os.environ.get("ATOMIC_GANG_CONFIG", ""),
        help="settings YAML (chart value names); default $ATOMIC_GANG_CONFIG",
    )
    parser.add_argument("--port", type=int, help="override ATOMIC_GANG_WEBHOOK_PORT")
    return parser.parse_args(argv)


def load(argv: list[str] | None) -> tuple[ServerSettings, GangSettings]:
    args = _parse_args(argv)
    try:
        check_env_names("ATOMIC_GANG_WEBHOOK_", ServerSettings.model_fields)
        server = ServerSettings()
        if args.port:
            server = server.model_copy(update={"port": args.port})
        settings = load_settings(args.config or None)
        settings.require("defaults.region")
    except ValidationError as exc:
        raise SettingsError(f"invalid ATOMIC_GANG_WEBHOOK_* settings: {exc}") from exc
    return server, settings


def main(argv: list[str] | None = None) -> None:
    try:
        server, settings = load(argv)
    except SettingsError as exc:
        sys.stderr.write(f"atomic-gang-webhook: {exc}\n")
        sys.exit(2)
    logs.configure(server.log_level)
    logging.getLogger("uvicorn.error").addFilter(BudgetFilter(LogBudget()))
    state = AppState(settings=settings, max_body_bytes=server.max_body_bytes)
    try:
        cert = ReloadingCertificate(
            server.cert_file,
            server.key_file,
            check_interval=server.cert_check_interval,
            on_reload=lambda path: _on_reload(state, path),
        )
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"atomic-gang-webhook: cannot load TLS pair: {exc}\n")
        sys.exit(2)
    _on_reload(state, server.cert_file, count=False)
    gate = ConnectionGate(
        server.limits(),
        cert.server_context(),  # the hot-reloading context
        on_close=lambda reason: state.metrics.connections_closed.labels(reason).inc(),
    )
    state.metrics.open_connections.set_function(lambda: gate.open)
    log.info("serving", extra={"host": server.host, "port": server.port, "scheme": "https"})
    uvicorn.Server(_uvicorn_config(server, state, gate)).run()


def _uvicorn_config(
    server: ServerSettings, state: AppState, gate: ConnectionGate
) -> uvicorn.Config:
    # TLS is the gate's (gate.py): uvicorn listens on TCP and never sees the SSLContext.
    return uvicorn.Config(
        create_app(state),
        host=server.host,
        port=server.port,
        log_config=None,
        access_log=False,
        # The API server calls us directly: X-Forwarded-* would only be a spoofing
        # surface, and parsing them costs every review. No "server: uvicorn" banner.
        proxy_headers=False,
        server_header=False,
        # The gate, then httptools over a write-coalescing transport with guards
        # (one TLS record and send() per response; header caps and deadlines).
        http=protocol_class(gate),
        ws="none",
        timeout_keep_alive=int(server.idle_timeout),
        timeout_graceful_shutdown=10,
    )


def _on_reload(state: AppState, cert_file: str, *, count: bool = True) -> None:
    if count:
        state.metrics.cert_reloads.inc()
    try:
        state.metrics.cert_expiry.set(not_after(cert_file))
    except (OSError, ValueError):
        log.warning("cannot read certificate expiry", extra={"cert_file": cert_file})
