"""Entry point: ``atomic-gang-webhook`` serves HTTPS on one uvicorn process.

Settings are loaded and checked before anything listens; an invalid setting
exits with status 2 and a message naming the field.
"""

from __future__ import annotations

import logging

import uvicorn

from atomic_gang import logs, startup
from atomic_gang.settings import GangSettings, SettingsError
from atomic_gang_webhook.app import AppState, create_app
from atomic_gang_webhook.config import ServerSettings
from atomic_gang_webhook.gate import ConnectionGate, protocol_class
from atomic_gang_webhook.state import BudgetFilter, LogBudget
from atomic_gang_webhook.tls import ReloadingCertificate, not_after

log = logging.getLogger("atomic_gang_webhook")
PROG = "atomic-gang-webhook"
PREFIX = "ATOMIC_GANG_WEBHOOK_"


def load(argv: list[str] | None) -> tuple[ServerSettings, GangSettings]:
    p = startup.parser(
        PROG,
        "Validating admission webhook for atomic-gang Jobs (HTTPS only). Server options come "
        f"from {PREFIX}* env vars (HOST, PORT, CERT_FILE, KEY_FILE, LOG_LEVEL, "
        "MAX_CONNECTIONS, *_TIMEOUT, ...; see docs/operations.md); gang rules from the "
        "settings file.",
    )
    p.add_argument("--port", type=int, help=f"override {PREFIX}PORT")
    args = p.parse_args(argv)
    flags = {"port": args.port} if args.port else {}
    server = startup.server_settings(ServerSettings, prefix=PREFIX, **flags)
    return server, startup.gang_settings(args.config, "defaults.region")


def main(argv: list[str] | None = None) -> None:
    with startup.exit_on_settings_error(PROG):
        server, settings = load(argv)
        logs.configure(server.log_level)
        logging.getLogger("uvicorn.error").addFilter(BudgetFilter(LogBudget()))
        state = AppState(settings=settings, max_body_bytes=server.max_body_bytes)
        cert = _certificate(server, state)
    gate = ConnectionGate(
        server.limits(),
        cert.server_context(),  # the hot-reloading context
        on_close=lambda reason: state.metrics.connections_closed.labels(reason).inc(),
    )
    state.metrics.open_connections.set_function(lambda: gate.open)
    log.info("serving", extra={"host": server.host, "port": server.port, "scheme": "https"})
    uvicorn.Server(_uvicorn_config(server, state, gate)).run()


def _certificate(server: ServerSettings, state: AppState) -> ReloadingCertificate:
    try:
        cert = ReloadingCertificate(
            server.cert_file,
            server.key_file,
            check_interval=server.cert_check_interval,
            on_reload=lambda path: _on_reload(state, path),
        )
    except (OSError, ValueError) as exc:
        raise SettingsError(f"cannot load TLS pair: {exc}") from exc
    _on_reload(state, server.cert_file, count=False)
    return cert


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
