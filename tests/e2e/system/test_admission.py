"""A bad gang Job is rejected by our webhook before Kueue sees it."""

from __future__ import annotations

import pytest

from atomic_gang import keys
from atomic_gang.resources import WORKLOADS
from tests.e2e.system.conftest import unique
from tests.e2e.system.harness import System, sample_job

pytestmark = pytest.mark.e2e


def test_a_bad_job_never_reaches_kueue(system: System, namespace: str) -> None:
    job = sample_job("bad", namespace, pool=unique("bad"))
    job["spec"]["parallelism"] = 3  # count is 4
    job["metadata"]["annotations"][keys.PREFIX + "keep-warm-tll"] = "5m"  # a typo
    done = system.kubectl.apply(job, check=False)
    assert done.returncode != 0
    # Our webhook's causes, as kubectl prints them: every violation, with its reason code.
    assert 'The jobs "bad" is invalid' in done.stderr
    assert "[CountMismatch]" in done.stderr
    assert "[UnknownKey]" in done.stderr
    assert "keep-warm-ttl" in done.stderr  # the "did you mean" hint
    assert system.kubectl.run("get", "job", "bad", "-n", namespace, check=False).returncode != 0
    assert system.kube.list(WORKLOADS, namespace=namespace).items == []
