"""The runtime configuration: where the store is, where dumps go, how much to log, the limits.

Sources, later ones winning: built-in defaults; the file given with ``palaestra -c FILE`` (or,
without ``-c``, ``./palaestra-runtime.yaml`` if it exists); the environment variables
``PALAESTRA_STORE_URI``, ``PALAESTRA_DATA_PATH``, ``PALAESTRA_START_METHOD`` and
``PALAESTRA_CPU_AFFINITY``.

This is the one reader of it and the one place of its defaults: the executor, the CLI and the
store's query functions (which read the configured store) all call :func:`load_runtime_config`.
"""

from __future__ import annotations

import io
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from palaestra.core.description import limits
from palaestra.core.description.uri import hide_password
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
AFFINITIES = ("none", "worker")
"""The values of the runtime config's ``cpu_affinity``."""
AFFINITY_VAR = "PALAESTRA_CPU_AFFINITY"
"""The environment variable that overrides the runtime config's ``cpu_affinity``."""
WRITER_PRIORITIES = ("normal", "background")
"""The values of the runtime config's ``writer_priority``."""
WRITER_PRIORITY_VAR = "PALAESTRA_WRITER_PRIORITY"
"""The environment variable that overrides the runtime config's ``writer_priority``."""
SECONDS = ("answer_timeout", "start_timeout", "stop_timeout", "store_timeout", "probe_timeout")
"""The settings that are a number of seconds > 0."""
SPIN_KEY = "spin_us"
"""The setting that is a number of microseconds >= 0; every other one but :data:`SECONDS` is a
string."""
SPIN_VAR = "PALAESTRA_SPIN_US"
"""The environment variable that overrides the runtime config's ``spin_us``."""
GROUPS_KEY = "round_groups"
GROUPS_VAR = "PALAESTRA_ROUND_GROUPS"
"""The environment variable that overrides the runtime config's ``round_groups`` (and that
carries it to the run's processes)."""
ROUND_GROUPS = (AUTO, "1", "2", "3", "4")
"""The values of ``round_groups`` (a number in the file is taken as its text)."""
CHOICES = {
    "start_method": START_METHODS,
    "cpu_affinity": AFFINITIES,
    "backend": BACKENDS,
    "writer_priority": WRITER_PRIORITIES,
    GROUPS_KEY: ROUND_GROUPS,
}
"""The settings that take one of a few values, and those values."""
CHOICE_VARS = {
    ENV_VAR: "start_method",
    AFFINITY_VAR: "cpu_affinity",
    GROUPS_VAR: GROUPS_KEY,
    WRITER_PRIORITY_VAR: "writer_priority",
}
"""The environment variables that override a setting of a few values, and the setting."""


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
    stop_timeout: float = limits.STOP_TIMEOUT
    """Seconds each group of a phase's processes may take to stop at its end (the Muscles
    and controllers, then the Brains with their last dumps, then the environments), pushing
    their last rows to the store writer."""
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
    cpu_affinity: str = "none"
    """``none``: the operating system places the run's processes. ``worker``: the processes
    of rollout worker ``w`` (with one worker also the Brains) run on the ``w``-th CPU the
    executor may use, round the CPUs, so that they hand each step to each other without waking
    another CPU (see :mod:`palaestra.core.supervision.affinity`)."""
    spin_us: float = limits.SPIN_US
    """Microseconds a process waiting for its peer on the per-step path polls before it
    sleeps (0: it sleeps at once): a message that comes within them costs neither side a
    wake-up of another CPU. It spins only while its waits are that short and the CPUs are not
    busy (see :mod:`palaestra.core.wire.channel`)."""
    round_groups: str = AUTO
    """In how many groups a worker's games (``envs_per_worker`` of 8 or more) play, whose
    rounds overlap: while the agents think about one group's games, the next group's step
    (see :func:`palaestra.core.rounds.play_rounds`). ``auto``: two from 192 games on, or where
    the environment's process may use 4 CPUs or more, else one (there, the overlap costs more
    CPU than it saves time)."""
    writer_priority: str = "normal"
    """``normal``: the store writer shares the CPUs like the run's other processes.
    ``background``: it takes only a CPU that no other process wants (see
    :func:`palaestra.core.supervision.affinity.to_background`), so that a worker's process that a
    step wakes takes its CPU at once; the writer catches up between steps, and a producer whose
    bounded queue is full waits for it. Not the default: where other work keeps every CPU busy,
    a background writer gets almost no time, and the run's requests to it (a phase's start and
    end) wait for that. With ``backend: ray`` the writer keeps its priority."""

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
        values = _read(path)
        if SPIN_KEY in values:  # (an int in the file: the config's float)
            values[SPIN_KEY] = float(values[SPIN_KEY])
        if GROUPS_KEY in values:  # (a number in the file: its text)
            values[GROUPS_KEY] = str(values[GROUPS_KEY])
        config = replace(config, **values)
    if environ.get("PALAESTRA_STORE_URI"):
        config = replace(config, store_uri=environ["PALAESTRA_STORE_URI"])
    if environ.get("PALAESTRA_DATA_PATH"):
        config = replace(config, data_path=environ["PALAESTRA_DATA_PATH"])
    for variable, key in CHOICE_VARS.items():
        if environ.get(variable):
            where = f"the environment variable {variable}"
            _check_one_of(where, environ[variable], CHOICES[key])
            changed: dict[str, Any] = {key: environ[variable]}
            config = replace(config, **changed)
    if environ.get(SPIN_VAR):
        where = f"the environment variable {SPIN_VAR}"
        config = replace(config, spin_us=_microseconds(where, environ[SPIN_VAR], text=True))
    return taken(config)


def taken(config: RuntimeConfig) -> RuntimeConfig:
    """``config`` as a run takes it, however it was made (read, or built by a caller of the
    Python API): ``~`` in ``data_path`` and in a SQLite store's path the home directory (SQLite
    and ``os.makedirs`` would make a directory named ``~`` in the working directory), the
    store URI as :func:`normal_store_uri` writes it, and checked (:func:`check_store_uri`).

    Raises:
        RuntimeConfigError: The store would lose the run's results.
    """
    store_uri = normal_store_uri(config.store_uri)
    scheme, sep, path = store_uri.partition(":///")
    if sep and scheme.startswith("sqlite") and path.startswith("~"):
        store_uri = f"{scheme}:///{os.path.expanduser(path)}"
    check_store_uri(store_uri)
    return replace(config, data_path=os.path.expanduser(config.data_path), store_uri=store_uri)


NO_STORE = ("", "none", "off")
"""The ``store_uri`` values that record nothing."""
STORE_FORMS = (
    "sqlite:///<file> (from the working directory), sqlite:////<absolute path>, "
    "postgresql://<user>@<host>:<port>/<database>, or none to record nothing"
)
"""The store URIs palaestra takes, in words."""
_POSTGRES = ("postgres", "postgresql")
"""PostgreSQL's schemes without a driver, as libpq and most tools write them."""


def normal_store_uri(store_uri: str) -> str:
    """``store_uri`` without the spaces around it, its scheme in lower case (as a URI's is
    read), and PostgreSQL's plain schemes (``postgresql://``, ``postgres://``) as the driver
    palaestra uses, psycopg 3 (``postgresql+psycopg://``): the store writer took only that,
    and SQLAlchemy reads ``postgres://`` as no database at all."""
    uri = store_uri.strip()
    scheme, sep, rest = uri.partition("://")
    if not sep:
        return uri
    scheme = scheme.lower()
    return f"{'postgresql+psycopg' if scheme in _POSTGRES else scheme}://{rest}"


def check_store_uri(store_uri: str) -> None:
    """Refuse a store URI that palaestra cannot write: a text that is no URI, a database it
    has no writer for, and a SQLite store that is not a file (one in memory is the store
    writer's alone, and ``sqlite://palaestra.db``, two slashes: a host, not a path, is one
    too; a run with either finished with exit 0 and its results nowhere), and one that the
    store writer and the readers would read otherwise (:func:`check_store_uri_parts`).

    Raises:
        RuntimeConfigError: Naming the URI (its password hidden) and what to write instead.
    """
    scheme, sep, rest = store_uri.partition("://")
    shown = hide_password(store_uri)
    if not sep:
        if store_uri.strip().lower() in NO_STORE:
            return
        a_file = ":" not in store_uri and store_uri.endswith(".db")
        suggestion = f" (a file: sqlite:///{shown})" if a_file else ""
        raise RuntimeConfigError(
            f"store_uri {shown!r} is no store URI{suggestion}; expected {STORE_FORMS}"
        )
    base = scheme.lower().partition("+")[0]
    authority, slash, database = rest.partition("/")
    if authority.count("@") > 1:  # (the first '@' ends the password: its rest, a host)
        host = authority.rpartition("@")[2]
        raise RuntimeConfigError(
            f"store_uri '{scheme}://***@{host}{slash}{database}': its user or password holds "
            "'@', which a URI writes as %40 (the password would be cut at its first '@' and "
            "the rest taken for the host)"
        )
    if base != "sqlite" and base not in _POSTGRES:
        raise RuntimeConfigError(
            f"store_uri {shown!r}: palaestra has no store writer for {scheme!r}; "
            f"expected {STORE_FORMS}"
        )
    if base == "sqlite":
        _check_sqlite_file(store_uri, scheme, rest)
    check_store_uri_parts(store_uri)


def _check_sqlite_file(store_uri: str, scheme: str, rest: str) -> None:
    """Refuse a SQLite store URI that names no file: the store would be in memory."""
    shown = hide_password(store_uri)
    path = rest[1:] if rest.startswith("/") else None
    if path is None and rest:
        raise RuntimeConfigError(
            f"store_uri {shown!r}: a SQLite store's file follows three slashes: "
            f"{hide_password(f'{scheme}:///{rest}')} (from the working directory) or "
            f"{scheme}:////<absolute path>; "
            f"with two, the store would be kept in the store writer's memory and the results "
            f"lost"
        )
    if not path or path.partition("?")[0] == ":memory:":
        raise RuntimeConfigError(
            f"store_uri {shown!r} is a store in memory, the store writer's alone: the "
            f"results would be lost as the run ends. Name a file (sqlite:///palaestra.db), or "
            f"set store_uri: none to record nothing"
        )


_PORT = re.compile(r"(?:[^:/]*(?::[^@]*)?@)?(?:\[[^/?]+\]|[^/:?]+)?(?::(?P<port>[^/?]*))?")
"""A URI's part after ``://`` up to its port, as SQLAlchemy's ``make_url`` reads it: a user
(and password) before the first ``@``, a host (``[...]`` for IPv6) and, after a colon, the
port."""


def check_store_uri_parts(store_uri: str) -> None:
    """Refuse a store URI that the store writer (the database driver: sqlite3, libpq) and
    the readers, the migrations and the exports (SQLAlchemy) would read differently: each of
    them checks a URI with this one rule before it opens a store (:func:`check_store_uri`, for
    a runtime config, calls it too).

    * A SQLite URI with a query (``?``): SQLAlchemy opened the file before the ``?`` (of
      ``sqlite:////tmp/q?uery.db``, ``/tmp/q``), dropping what follows; the store writer
      refused it. A ``?`` of a file's name is written ``%3F``, which both read as ``?``.
    * A port that is no number, or none after the host's colon (``db:/runs``): libpq took the
      latter for the default port, SQLAlchemy refused both.

    Raises:
        RuntimeConfigError: Naming the URI (its password hidden) and how to write it.
    """
    uri = normal_store_uri(store_uri)
    scheme, _, rest = uri.partition("://")
    shown = hide_password(uri)
    if scheme.partition("+")[0] == "sqlite":
        path, query, _ = rest.partition("?")
        if query:
            written = hide_password(uri.replace("?", "%3F"))
            raise RuntimeConfigError(
                f"store_uri {shown!r}: a SQLite store's URI takes no query (what follows "
                f"its '?'): the store would be the file {path[1:] or ':memory:'} for the "
                f"readers, and the store writer refuses it. Write the file's name alone, a '?' "
                f"in it as %3F: {written}"
            )
        return
    found = _PORT.match(rest)
    port = found["port"] if found else None
    if port is not None and not (port.isascii() and port.isdigit()):
        said = repr(port) if port else "none after the host's colon"
        raise RuntimeConfigError(
            f"store_uri {shown!r}: its port is no number ({said}); write the port's number "
            "after the host's colon (db.example:5432), or neither for the default port"
        )


def _microseconds(where: str, value: object, text: bool = False) -> float:
    """``value`` (with ``text``: a number's text) as a number of microseconds from 0 to
    :data:`~palaestra.core.description.limits.SPIN_MAX_US`."""
    number: object = value
    if text and isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = None
    if (
        isinstance(number, bool)
        or not isinstance(number, int | float)
        or not 0 <= number <= limits.SPIN_MAX_US
    ):
        raise RuntimeConfigError(
            f"{where}: expected a number of microseconds from 0 to {limits.SPIN_MAX_US:,.0f}, "
            f"got {value!r}"
        )
    return float(number)


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
    if key == SPIN_KEY:
        _microseconds(f"{path}: {key}", value)
    elif key == GROUPS_KEY:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise RuntimeConfigError(f"{path}: {key}: expected auto or 1 to 4, got {value!r}")
        _check_one_of(f"{path}: {key}", str(value), CHOICES[key])
    elif key in SECONDS:
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise RuntimeConfigError(
                f"{path}: {key}: expected a number of seconds > 0, got {value!r}"
            )
    elif not isinstance(value, str):
        raise RuntimeConfigError(f"{path}: {key}: expected a string, got {value!r}")
    elif key in CHOICES:
        _check_one_of(f"{path}: {key}", value, CHOICES[key])
    elif key == "log_level" and not isinstance(logging.getLevelName(value.upper()), int):
        raise RuntimeConfigError(
            f"{path}: {key}: expected one of {', '.join(LOG_LEVELS)} (in any case), got {value!r}"
        )


def _check_one_of(where: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        hint = did_you_mean(value, choices)
        raise RuntimeConfigError(
            f"{where}: expected one of {', '.join(choices)}, got {value!r}"
            + (f". {hint}" if hint else "")
        )


KNOWN = frozenset(f.name for f in fields(RuntimeConfig))
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
"""The values of ``log_level`` (Python's level names: also ``NOTSET``, ``WARN``, ``FATAL``)."""
