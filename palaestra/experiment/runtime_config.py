"""The runtime configuration: where the store is, where dumps go, how much to log.

Sources, later ones winning: built-in defaults; the file given with ``palaestra -c FILE`` (or,
without ``-c``, ``./palaestra-runtime.yaml`` if it exists); the environment variables
``PALAESTRA_STORE_URI`` and ``PALAESTRA_DATA_PATH``.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from palaestra.core.errors import RuntimeConfigError, did_you_mean

DEFAULT_FILE = "palaestra-runtime.yaml"


@dataclass(frozen=True)
class RuntimeConfig:
    store_uri: str = "sqlite:///palaestra.db"
    data_path: str = "./_outputs"
    log_level: str = "WARNING"
    answer_timeout: float = 300.0
    """Seconds an Environment, Muscle or Brain may take to answer one step before the run
    fails, naming it (a deadlock or endless loop in a plug-in)."""
    probe_timeout: float = 30.0
    """Seconds an environment may take to be constructed, started and shut down while a run
    file's sensor and actuator ids are checked; one that takes longer is killed, with a
    warning, and its ids are checked when the run starts."""

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
    known = {f.name for f in fields(RuntimeConfig)}
    for key, value in data.items():
        if key not in known:
            hint = did_you_mean(str(key), known)
            raise RuntimeConfigError(
                f"{path}: unknown setting '{key}'" + (f". {hint}" if hint else "")
            )
        if key in ("answer_timeout", "probe_timeout"):
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise RuntimeConfigError(
                    f"{path}: {key}: expected a number of seconds > 0, got {value!r}"
                )
        elif not isinstance(value, str):
            raise RuntimeConfigError(f"{path}: {key}: expected a string, got {value!r}")
    return dict(data)
