"""The runtime configuration: where the store is, where dumps go, how much to log, the limits.

Sources, later ones winning: built-in defaults; the file given with ``palaestra -c FILE`` (or,
without ``-c``, ``./palaestra-runtime.yaml`` if it exists); the environment variables
``PALAESTRA_STORE_URI``, ``PALAESTRA_DATA_PATH`` and ``PALAESTRA_START_METHOD``.

This is the one reader of it and the one place of its defaults: the executor, the CLI and the
store's query functions (which read the configured store) all call :func:`load_runtime_config`.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from palaestra.core.description import limits
from palaestra.core.errors import RuntimeConfigError, did_you_mean

AUTO = "auto"
FORK = "fork"
FORKSERVER = "forkserver"
SPAWN = "spawn"
START_METHODS = (AUTO, FORK, FORKSERVER, SPAWN)
"""The values of the runtime config's ``start_method``."""
ENV_VAR = "PALAESTRA_START_METHOD"
"""The environment variable that overrides the runtime config's ``start_method``."""

DEFAULT_FILE = "palaestra-runtime.yaml"
DEFAULT_STORE_URI = "sqlite:///palaestra.db"
BACKENDS = ("local", "ray")
"""Where a run's processes can run (the runtime config's ``backend``)."""
SECONDS = ("answer_timeout", "start_timeout", "store_timeout", "probe_timeout")
"""The settings that are a number of seconds > 0; every other one is a string."""


@dataclass(frozen=True)
class RuntimeConfig:
    store_uri: str = DEFAULT_STORE_URI
    data_path: str = "./_outputs"
    log_level: str = "WARNING"
    answer_timeout: float = limits.ANSWER_TIMEOUT
    """Seconds an Environment, Muscle or Brain may take to answer one step before the run
    fails, naming it (a deadlock or endless loop in a plug-in)."""
    start_timeout: float = limits.START_TIMEOUT
    """Seconds a phase's processes (and the store writer) may take to start: to construct
    their plug-ins (a Brain loading a model, say)."""
    store_timeout: float = limits.STORE_TIMEOUT
    """Seconds the store writer may take to answer one request of the run (record a phase,
    store what it produced) before the run fails, naming the writer and why."""
    probe_timeout: float = limits.PROBE_TIMEOUT
    """Seconds an environment may take to be constructed, started and shut down while a run
    file's sensor and actuator ids are checked; one that takes longer is killed, with a
    warning, and its ids are checked when the run starts."""
    start_method: str = AUTO
    """How the run's processes start: ``fork`` (fast), ``forkserver`` or ``spawn`` (for
    plug-ins that use CUDA), or ``auto``: fork unless CUDA is initialised in the executor once
    the plug-in modules are imported (see :mod:`palaestra.core.supervision.start_methods`)."""
    backend: str = "local"
    """Where the run's processes run: ``local`` (children of the executor, on this machine) or
    ``ray`` (placed on a Ray cluster; needs ``pip install 'palaestra[ray]'`` and a PostgreSQL
    store)."""
    ray_address: str = ""
    """With ``backend: ray``: the address of an existing Ray cluster (``host:port`` or
    ``ray://host:port``); empty: palaestra starts a local Ray instance for the run."""

    def dump(self) -> str:
        out = io.StringIO()
        YAML().dump(asdict(self), out)
        return out.getvalue()


def load_runtime_config(
    path: str | None = None, environ: Mapping[str, str] = os.environ
) -> RuntimeConfig:
    config = RuntimeConfig()
    if path is None and os.path.exists(DEFAULT_FILE):
        path = DEFAULT_FILE
    if path is not None:
        config = replace(config, **_read(path))
    if environ.get("PALAESTRA_STORE_URI"):
        config = replace(config, store_uri=environ["PALAESTRA_STORE_URI"])
    if environ.get("PALAESTRA_DATA_PATH"):
        config = replace(config, data_path=environ["PALAESTRA_DATA_PATH"])
    if environ.get(ENV_VAR):
        _check_start_method(f"the environment variable {ENV_VAR}", environ[ENV_VAR])
        config = replace(config, start_method=environ[ENV_VAR])
    return config


def _read(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = YAML(typ="safe").load(f)
    except OSError as exc:
        raise RuntimeConfigError(
            f"{path}: cannot read the runtime config: {exc.strerror}"
        ) from exc
    except UnicodeDecodeError as exc:
        raise RuntimeConfigError(f"{path}: not a UTF-8 text file") from exc
    except YAMLError as exc:
        raise RuntimeConfigError(f"{path}: not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise RuntimeConfigError(f"{path}: expected a mapping of settings")
    for key, value in data.items():
        _check(path, key, value)
    return dict(data)


def _check(path: str, key: object, value: object) -> None:
    if key not in KNOWN:
        hint = did_you_mean(str(key), KNOWN)
        raise RuntimeConfigError(
            f"{path}: unknown setting '{key}'" + (f". {hint}" if hint else "")
        )
    if key in SECONDS:
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise RuntimeConfigError(
                f"{path}: {key}: expected a number of seconds > 0, got {value!r}"
            )
    elif not isinstance(value, str):
        raise RuntimeConfigError(f"{path}: {key}: expected a string, got {value!r}")
    elif key == "start_method":
        _check_start_method(f"{path}: start_method", value)
    elif key == "backend" and value not in BACKENDS:
        hint = did_you_mean(value, BACKENDS)
        raise RuntimeConfigError(
            f"{path}: backend: expected one of {', '.join(BACKENDS)}, got {value!r}"
            + (f". {hint}" if hint else "")
        )


def _check_start_method(where: str, value: str) -> None:
    if value not in START_METHODS:
        hint = did_you_mean(value, START_METHODS)
        raise RuntimeConfigError(
            f"{where}: expected one of {', '.join(START_METHODS)}, got {value!r}"
            + (f". {hint}" if hint else "")
        )


KNOWN = frozenset(f.name for f in fields(RuntimeConfig))
