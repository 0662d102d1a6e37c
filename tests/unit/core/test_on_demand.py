"""``capacity-reservation-id: ""`` means on-demand, exactly as when it is absent, and
the webhook, the CLI and the controller agree, because templated manifests render
an unset reservation as an empty string."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

from atomic_gang import GangValidationError, validate_job
from atomic_gang import keys as k
from atomic_gang_cli.main import main as cli
from atomic_gang_provisioner.workload import decision
from atomic_gang_provisioner.workload.owners import judge
from atomic_gang_provisioner.workload.plan import Inputs
from atomic_gang_provisioner.workload.view import view
from atomic_gang_webhook.app import AppState, create_app
from tests.support.jobs import gang_job, settings
from tests.support.pools import KNOBS, T0
from tests.support.reviews import body
from tests.unit.workload.test_decide import CHECK, workload

EMPTY = [pytest.param("", id="empty"), pytest.param("   ", id="blank")]


@pytest.mark.parametrize("value", EMPTY)
def test_the_shared_rules_resolve_it_to_no_reservation(value: str) -> None:
    spec = validate_job(gang_job(annotations={k.CAPACITY_RESERVATION_ID: value}), settings())
    assert spec is not None
    assert spec.capacity_reservation_id is None
    assert spec == validate_job(gang_job(), settings())


def test_a_malformed_id_is_still_an_error() -> None:
    with pytest.raises(GangValidationError) as err:
        validate_job(gang_job(annotations={k.CAPACITY_RESERVATION_ID: "cr-x"}), settings())
    assert set(err.value.reasons) == {"InvalidCapacityReservationId"}


@pytest.mark.parametrize("value", EMPTY)
def test_the_webhook_admits_it(value: str) -> None:
    client = TestClient(create_app(AppState(settings=settings())))
    job = gang_job(annotations={k.CAPACITY_RESERVATION_ID: value})
    answer = client.post("/validate/batch/v1/job", content=body(job)).json()
    assert answer["response"]["allowed"] is True, answer


def test_the_cli_accepts_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "settings.yaml"
    config.write_text(yaml.safe_dump(settings().model_dump(mode="json")))
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(gang_job(annotations={k.CAPACITY_RESERVATION_ID: ""})))
    with pytest.raises(SystemExit) as exit_:
        cli(["validate", "--config", str(config), str(path)])
    assert (exit_.value.code, capsys.readouterr().out) == (0, "")


def test_the_controller_creates_an_on_demand_pool() -> None:
    plan = decision.decide(
        Inputs(
            wl=view(workload()),
            our_checks=frozenset({CHECK}),
            owner=judge(gang_job(annotations={k.CAPACITY_RESERVATION_ID: ""}), settings()),
            pool=None,
            settings=settings(),
            now=T0,
            failed_retry_seconds=int(KNOBS.backoff_max),
        )
    )
    assert plan.create_pool is not None, plan.checks
    shape = plan.create_pool.spec.shape
    assert shape.capacityReservationId is None
    assert shape.gang_spec(pool="p", keep_warm_ttl="1m").capacity_reservation_id is None
