"""The Ray backend's checks and its connection: the extra, the store, the cluster's address.

``backend: ray`` (the runtime config, or ``experiment-start --backend ray``) needs three things,
checked in this order before any process of a run starts:

1. the ``palaestra[ray]`` extra (:func:`require_ray`; else exit 2 with the install line);
2. a store that several hosts can share (:func:`check_store_for_ray`): PostgreSQL, or ``none``
   (nothing recorded, nothing to share); SQLite is refused (exit 2): a file on one host that
   processes on other hosts cannot reach, and one writer at a time;
3. a cluster (:func:`connect`): ``ray_address`` names an existing one (``host:port`` of its GCS,
   ``ray://host:port`` of its Ray Client server, or ``auto``); unreachable, the command exits 3
   within ``timeout`` seconds naming the address. Empty, a local Ray instance is started for
   the command and shut down at its end.

:func:`check_backend` is the hook the executor and the command line call for 1 and 2;
:func:`session` opens 3 from a runtime config. Ray's own log lines (its start, its token-auth
notice, its workers' output) stay out of the terminal: they go to Ray's session logs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from palaestra.core.description.extras import require
from palaestra.core.errors import EXIT_STORE_UNUSABLE, InvalidInputError, PalaestraError
from palaestra.experiment.runtime_config import RuntimeConfig

__all__ = [
    "CONNECT_TIMEOUT",
    "ClusterUnreachableError",
    "check_backend",
    "check_store_for_ray",
    "connect",
    "require_ray",
    "session",
]

CONNECT_TIMEOUT = 30.0
"""Seconds to reach a cluster's address and join it before the command exits 3."""

_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
"""The start of an HTTP/2 connection and an empty SETTINGS frame: a GCS (gRPC) answers with a
SETTINGS frame of its own; a port where no gRPC server listens does not."""


class ClusterUnreachableError(PalaestraError):
    """The Ray cluster of ``ray_address`` cannot be reached or joined, or (``address`` empty) a
    local Ray instance cannot be started (exit code 3, as for a store that cannot be
    reached)."""

    exit_code = EXIT_STORE_UNUSABLE

    def __init__(self, address: str, why: str) -> None:
        self.address = address
        if not address:
            super().__init__(
                f"a local Ray instance could not be started: {why}. Ray's logs are in "
                "/tmp/ray/session_latest/logs; or set ray_address to a running cluster's."
            )
            return
        super().__init__(
            f"the Ray cluster at ray_address '{address}' cannot be reached: {why}. "
            "Check that the cluster runs (`ray status --address ...` on its head) and that "
            "ray_address in the runtime config names its GCS address (host:port, as "
            "`ray start --head` prints it) or ray://host:port; leave it empty to start a "
            "local Ray instance."
        )


def require_ray(purpose: str = "backend: ray") -> ModuleType:
    """Import ray, or fail with exit 2 and ``pip install 'palaestra[ray]'``."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage reports, no notice
    return require("ray", purpose)


def check_store_for_ray(store_uri: str) -> None:
    """Refuse a store that the runs on a Ray cluster cannot share.

    PostgreSQL (any driver) and ``none`` pass; SQLite fails. Other URLs pass here and meet the
    store's own checks when it is opened.

    Raises:
        InvalidInputError: An SQLite store (exit 2), saying how to set a PostgreSQL one.
    """
    scheme = store_uri.strip().partition(":")[0].partition("+")[0].lower()
    if scheme != "sqlite":
        return
    raise InvalidInputError(
        f"backend: ray needs a PostgreSQL store, but store_uri is '{store_uri}': an SQLite "
        "file lives on one host and takes one writer at a time, while the runs of a Ray "
        "cluster write from many. Set store_uri: postgresql+psycopg://user@host:5432/database "
        "(an address every node of the cluster reaches) in the runtime config (-c FILE) or "
        "PALAESTRA_STORE_URI, with `pip install 'palaestra[postgres]'`; or store_uri: none to "
        "record nothing; or backend: local."
    )


def check_backend(config: RuntimeConfig) -> None:
    """With ``backend: ray``: the extra is installed and the store can be shared (exit 2
    otherwise). Nothing with ``backend: local``. Call it before any process starts."""
    if config.backend != "ray":
        return
    check_store_for_ray(config.store_uri)
    require_ray()


@contextlib.contextmanager
def session(config: RuntimeConfig, *, num_cpus: int | None = None) -> Iterator[ModuleType]:
    """:func:`check_backend`, then :func:`connect` to ``config.ray_address``."""
    check_backend(config)
    with connect(config.ray_address, CONNECT_TIMEOUT, num_cpus=num_cpus) as ray:
        yield ray


@contextlib.contextmanager
def connect(
    address: str, timeout: float = CONNECT_TIMEOUT, *, num_cpus: int | None = None
) -> Iterator[ModuleType]:
    """Join the Ray cluster at ``address`` (or start a local one if it is empty) for the block.

    Args:
        address: ``host:port`` (a GCS), ``ray://host:port`` (a Ray Client server), ``auto``
            (the cluster started on this host with ``ray start``), or empty: a local instance.
        timeout: Seconds to reach and join the cluster.
        num_cpus: A local instance's CPUs (default: this machine's); ignored for a cluster.

    Yields:
        The ``ray`` module, connected. At the end of the block it disconnects (a local
        instance is shut down with its processes).

    Raises:
        MissingExtraError: ray is not installed (exit 2).
        ClusterUnreachableError: Nothing answers at ``address`` within ``timeout`` (exit 3).
    """
    ray = require_ray()
    address = address.strip()
    if address and address != "auto":
        _probe(address, timeout)
    arguments: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,
        "logging_level": logging.ERROR,
        "configure_logging": True,
    }
    if address:
        arguments["address"] = address
    else:  # "local": a new instance, never one found by RAY_ADDRESS or a `ray start` here
        arguments["address"] = "local"
        arguments["num_cpus"] = num_cpus or os.cpu_count() or 1
    _quiet_ray_loggers()
    _init_within(ray, arguments, address, timeout)
    try:
        yield ray
    finally:
        ray.shutdown()


def _probe(address: str, timeout: float) -> None:
    """A TCP connection to the address's port, and a gRPC (HTTP/2) answer on it, in time."""
    host, port = _host_port(address)
    try:
        with socket.create_connection((host, port), timeout=timeout) as conn:
            conn.settimeout(timeout)
            conn.sendall(_HTTP2_PREFACE)
            head = conn.recv(9)
    except TimeoutError:
        raise ClusterUnreachableError(address, f"no answer within {timeout:g} s") from None
    except OSError as exc:
        raise ClusterUnreachableError(address, exc.strerror or str(exc)) from None
    if len(head) < 9 or head[3] != 0x04:  # the server's first frame: SETTINGS
        raise ClusterUnreachableError(
            address, f"something listens on port {port}, but it is not a Ray GCS (no gRPC)"
        )


def _host_port(address: str) -> tuple[str, int]:
    rest = address.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    host = host.strip("[]")  # [::1]:6379
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InvalidInputError(
            f"ray_address '{address}': expected host:port (the cluster's GCS address), "
            "ray://host:port, auto, or empty for a local Ray instance."
        )
    return host, int(port)


def _init_within(ray: Any, arguments: dict[str, Any], address: str, timeout: float) -> None:
    """``ray.init``; joining a cluster on a thread of its own, waited for ``timeout`` s: on an
    address that accepts connections but never lets a driver join, Ray retries for minutes."""
    failure: list[BaseException] = []

    def init() -> None:
        try:
            ray.init(**arguments)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            failure.append(exc)

    if not address:  # on this thread: Ray's processes die with the thread that started them
        _init_keeping_sigterm(ray, arguments)  # (PR_SET_PDEATHSIG); bounded by Ray itself
        return
    thread = threading.Thread(target=init, name="palaestra-ray-init", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise ClusterUnreachableError(address, f"could not join it within {timeout:g} s")
    if failure:
        error = failure[0]
        raise ClusterUnreachableError(address, f"{type(error).__name__}: {error}") from error


def _init_keeping_sigterm(ray: Any, arguments: dict[str, Any]) -> None:
    """``ray.init`` of a local instance on the main thread, the SIGTERM handler kept.

    There Ray puts in its own, ``sys.exit(15)``, and leaves it: the command's handler (which
    stops the runs and exits 143) was gone for the rest of the command, which exited 15
    without its table. A SIGTERM while Ray starts (its handler's ``SystemExit(15)``) is given
    to the command's handler once Ray is shut down.
    """
    kept = signal.getsignal(signal.SIGTERM)
    try:
        ray.init(**arguments)
    except SystemExit as exc:
        if exc.code != signal.SIGTERM:
            raise
        ray.shutdown()
        _restore_sigterm(kept)
        signal.raise_signal(signal.SIGTERM)
        raise  # (the command's handler did not raise: it ends as Ray would have)
    except Exception as exc:  # noqa: BLE001 - Ray raises many kinds; all mean the same
        ray.shutdown()
        raise ClusterUnreachableError("", f"{type(exc).__name__}: {exc}") from exc
    finally:
        _restore_sigterm(kept)


def _restore_sigterm(handler: Any) -> None:
    if handler is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)


def _quiet_ray_loggers() -> None:
    """Ray's notices (its token authentication, a handler not set off the main thread) are
    warnings on the ``ray`` logger; the run's own messages say what matters."""
    logging.getLogger("ray").setLevel(logging.ERROR)
