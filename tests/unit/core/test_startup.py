"""Both services start the same way (atomic_gang.startup): the same --config option,
the same refusal of a misspelt variable, and the same probe answers."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry

from atomic_gang import startup
from atomic_gang.settings import SettingsError
from atomic_gang_provisioner.config import ServerSettings as ProvisionerServer
from atomic_gang_provisioner.httpserver import serve
from atomic_gang_webhook.app import AppState, create_app
from atomic_gang_webhook.config import ServerSettings as WebhookServer
from tests.support.jobs import settings


class Ready:
    def __init__(self) -> None:
        self.ready = True

    def __call__(self) -> bool:
        return self.ready


@pytest.fixture
def provisioner() -> Iterator[tuple[httpx.Client, Ready]]:
    ready = Ready()
    http = serve(host="127.0.0.1", port=0, registry=CollectorRegistry(), ready=ready)
    with httpx.Client(base_url=f"http://127.0.0.1:{http.server_port}", timeout=10) as client:
        yield client, ready
    http.shutdown()


def test_both_services_answer_the_probes_alike(provisioner: tuple[httpx.Client, Ready]) -> None:
    prov, prov_ready = provisioner
    state = AppState(settings=settings())
    hook = TestClient(create_app(state))
    for ready in (True, False):
        prov_ready.ready = state.ready = ready
        for path in ("/healthz", "/readyz"):
            a, b = prov.get(path), hook.get(path)
            assert (a.status_code, a.json()) == (b.status_code, b.json()), path
            assert a.headers["content-type"] == b.headers["content-type"] == "application/json"
    assert prov.get("/readyz").json() == {"ready": False}


@pytest.mark.parametrize(
    ("model", "prefix"),
    [
        pytest.param(ProvisionerServer, "ATOMIC_GANG_PROVISIONER_", id="provisioner"),
        pytest.param(WebhookServer, "ATOMIC_GANG_WEBHOOK_", id="webhook"),
    ],
)
def test_a_misspelt_or_bad_variable_is_a_settings_error(
    monkeypatch: pytest.MonkeyPatch, model: type[ProvisionerServer | WebhookServer], prefix: str
) -> None:
    monkeypatch.setenv(prefix + "LOG_LEVLE", "debug")
    with pytest.raises(SettingsError, match="LOG_LEVLE"):
        startup.server_settings(model, prefix=prefix)
    monkeypatch.delenv(prefix + "LOG_LEVLE")
    monkeypatch.setenv(prefix + "LOG_LEVEL", "loud")
    with pytest.raises(SettingsError, match=f"invalid {prefix}\\* settings"):
        startup.server_settings(model, prefix=prefix)


def test_a_settings_error_exits_2_naming_the_service(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_, startup.exit_on_settings_error("svc"):
        raise SettingsError("settings: required but empty: clusterName")
    assert exit_.value.code == 2
    assert capsys.readouterr().err == "svc: settings: required but empty: clusterName\n"
