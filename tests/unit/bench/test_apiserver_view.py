"""The apiserver's own view of a window: writes by verb and resource, and its timings
of them, from /metrics text."""

from __future__ import annotations

import pytest

from bench import apiserver_view


def request_line(code: str, resource: str, sub: str, verb: str, value: int) -> str:
    return (
        f'apiserver_request_total{{code="{code}",component="apiserver",dry_run="",group="",'
        f'resource="{resource}",scope="resource",subresource="{sub}",verb="{verb}",'
        f'version="v1"}} {value}'
    )


def _histogram(name: str, labels: str, count: int, total: float) -> list[str]:
    return [
        f"# TYPE {name} histogram",
        f'{name}_bucket{{{labels},le="+Inf"}} {count}',
        f"{name}_sum{{{labels}}} {total}",
        f"{name}_count{{{labels}}} {count}",
    ]


METRICS = "\n".join(
    [
        "# HELP apiserver_request_total [STABLE] Counter of apiserver requests.",
        "# TYPE apiserver_request_total counter",
        request_line("200", "nodes", "status", "PATCH", 40),
        request_line("409", "nodes", "status", "PATCH", 2),
        request_line("200", "gangnodepools", "status", "PUT", 7),
        request_line("201", "events", "", "POST", 3),
        request_line("200", "pods", "", "LIST", 900),
        *_histogram(
            "apiserver_request_duration_seconds",
            'resource="gangnodepools",subresource="status",verb="PUT"',
            7,
            0.7,
        ),
        *_histogram(
            "apiserver_request_duration_seconds", 'resource="pods",subresource="",verb="LIST"', 9, 9
        ),
        *_histogram("etcd_request_duration_seconds", 'operation="update",type="x"', 4, 0.2),
        *_histogram("etcd_request_duration_seconds", 'operation="update",type="y"', 6, 0.3),
        *_histogram(
            "apiserver_admission_webhook_admission_duration_seconds",
            'name="vworkload.kb.io",operation="UPDATE",rejected="false",type="validating"',
            2,
            0.16,
        ),
        "# TYPE something_else counter",
        'something_else_total{verb="PUT"} 5',
    ]
)


def test_writes_sum_every_code_and_reads_are_left_out() -> None:
    counts = apiserver_view.apiserver_counts(METRICS)
    writes = {k: v for k, v in counts.items() if k.startswith("writes ")}
    assert writes == {
        "writes PATCH nodes/status": 42.0,
        "writes PUT gangnodepools/status": 7.0,
        "writes POST events": 3.0,
    }
    assert not any("LIST" in k for k in counts)


def test_histograms_give_means_over_their_rows() -> None:
    means = apiserver_view.means_ms(apiserver_view.apiserver_counts(METRICS))
    assert means["write PUT gangnodepools/status"] == pytest.approx((7.0, 100.0))
    assert means["etcd update"] == pytest.approx((10.0, 50.0))  # both types, one row
    assert means["webhook vworkload.kb.io UPDATE"] == pytest.approx((2.0, 80.0))


def test_the_report_names_the_rows_a_reaction_is_made_of(
    capsys: pytest.CaptureFixture[str],
) -> None:
    window = apiserver_view.apiserver_counts(METRICS)
    apiserver_view.report({"seconds": 2.0, "by_kind": window})
    out = capsys.readouterr().out
    assert "apiserver writes meanwhile (2 s, every client): 26/s; PATCH nodes/status 42" in out
    assert "write PUT gangnodepools/status 100 ms (7)" in out
    assert "etcd update 50 ms (10)" in out
    assert "webhook vworkload.kb.io UPDATE 80 ms (2)" in out
