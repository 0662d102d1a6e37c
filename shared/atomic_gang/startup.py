"""How both services start: one pattern, so they read, fail and answer probes alike.

``parser`` gives the ``--config`` option (the gang settings file, default
``$ATOMIC_GANG_CONFIG``); ``server_settings`` reads a service's ``<PREFIX>*`` process
settings, refusing a misspelt variable; ``gang_settings`` reads the settings file and
checks what the service cannot run without. Any of that failing is a
:class:`SettingsError`, which ``exit_on_settings_error`` turns into one stderr line
naming the field and exit status 2, before anything listens or connects. ``liveness``
and ``readiness`` are the probes' answers (JSON) on both services.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from pydantic import ValidationError
from pydantic_settings import BaseSettings

from atomic_gang.settings import GangSettings, SettingsError, check_env_names, load_settings

S = TypeVar("S", bound=BaseSettings)
CONFIG_ENV = "ATOMIC_GANG_CONFIG"


def parser(prog: str, description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument(
        "--config",
        default=os.environ.get(CONFIG_ENV, ""),
        help=f"settings YAML (chart value names); default ${CONFIG_ENV}",
    )
    return p


def server_settings(model: type[S], *, prefix: str, **overrides: Any) -> S:
    """The process settings from ``<prefix>*`` variables (``overrides``: the flags)."""
    try:
        check_env_names(prefix, model.model_fields)
        return model(**overrides)
    except ValidationError as exc:
        raise SettingsError(f"invalid {prefix}* settings: {exc}") from exc


def gang_settings(config: str, *required: str) -> GangSettings:
    settings = load_settings(config or None)
    settings.require(*required)
    return settings


@contextmanager
def exit_on_settings_error(prog: str) -> Iterator[None]:
    try:
        yield
    except SettingsError as exc:
        sys.stderr.write(f"{prog}: {exc}\n")
        sys.exit(2)


def liveness() -> tuple[int, dict[str, Any]]:
    return 200, {"status": "ok"}


def readiness(ready: bool) -> tuple[int, dict[str, Any]]:
    return (200 if ready else 503), {"ready": ready}
