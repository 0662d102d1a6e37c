"""The simulated AWS as a separate process (server mode), seeded with one cluster."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def fakeaws_server(workdir: Path, *, region: str, cluster: str) -> Iterator[dict[str, Any]]:
    """Yields ``{"endpoint": URL, "world": the seeded world}``; stopped on exit."""
    world_file = workdir / "world.json"
    argv = [sys.executable, "-m", "atomic_gang_fakeaws", "serve", "--port", "0", "--region"]
    argv += [region, "--seed-cluster", cluster, "--world-file", str(world_file), "--no-throttling"]
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        text=True,
        env={
            "PATH": "/usr/bin:/bin",
            "AWS_ACCESS_KEY_ID": "x",
            "AWS_SECRET_ACCESS_KEY": "x",
            "MOTO_EC2_LOAD_DEFAULT_AMIS": "false",
        },
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # printed once the world is seeded
        endpoint = json.loads(line)["endpoint"]
        yield {"endpoint": endpoint, "world": json.loads(world_file.read_text())}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
