"""Opening a store: the SQLAlchemy engine for a store URI and its SQLite tuning.

Every failure to open a store becomes a :class:`~palaestra.core.errors.StoreError` (exit code
3) naming the URI, with any password masked. Its schema is :mod:`palaestra.store.schema`'s.
Readers open a SQLite store read-only, so a store on read-only media can be read; writers are
refused one they cannot write, naming the file.
"""

from __future__ import annotations

import os
import sqlite3
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from palaestra.core.description.config import (
    DEFAULT_STORE_URI as DEFAULT_STORE_URI,  # the one default
)
from palaestra.core.description.config import NO_STORE, check_store_uri_parts
from palaestra.core.description.uri import hide_password
from palaestra.core.errors import StoreError
from palaestra.core.nonfinite import json_text
from palaestra.store.driver import (
    SQLITE_BUSY_TIMEOUT_MS,
    json_value,
    require_writable,
    tune,
)

NOT_A_URL = (ArgumentError, ValueError)
"""What SQLAlchemy's ``make_url`` raises for a text that is no database URL: a
:class:`ValueError` where the port is no number (``host:5432x``, ``host:``)."""


def mask_uri(uri: str) -> str:
    """Return ``uri`` with its password (if any) replaced by ``***``."""
    try:
        return make_url(uri).render_as_string(hide_password=True)
    except NOT_A_URL:
        return hide_password(uri)


def make_engine(uri: str, *, read_only: bool = False) -> Engine:
    """Create the engine of the store at ``uri`` and check that it can be opened.

    SQLite files get WAL journaling, ``synchronous=NORMAL``, foreign keys and a busy timeout;
    the directory of the file is created if missing. With ``read_only``, a SQLite file is
    opened read-only (``mode=ro``; also ``immutable=1`` where its directory cannot be written,
    as on read-only media, where SQLite could create no ``-shm`` file), nothing is created and
    its journal mode is left as it is. JSON columns are (de)serialized with msgspec,
    infinities and NaN as the strings ``"inf"``, ``"-inf"`` and ``"nan"`` (see
    :func:`palaestra.core.nonfinite.to_strict_json`), read back as floats.

    Args:
        uri: A SQLAlchemy database URL, e.g. ``sqlite:///palaestra.db``.
        read_only: Only read: for the commands that list, show, export and query.

    Returns:
        A connected-once engine.

    Raises:
        RuntimeConfigError: The URI is one the store writer would read otherwise (a SQLite
            URI's query, a port that is no number: :func:`~palaestra.core.description.config.
            check_store_uri_parts`).
        StoreError: The URI is invalid, its driver is missing, or the store cannot be opened
            (without ``read_only``: a SQLite file or directory that cannot be written).
    """
    url = _parse(uri)
    path = sqlite_file(url)
    options: dict[str, Any] = {}
    if path is not None and read_only:
        options["creator"] = _read_only_connector(path)
    elif path is not None:
        require_writable(path.absolute(), uri)
    try:
        engine = create_engine(
            url, json_serializer=json_text, json_deserializer=json_value, **options
        )
    except ArgumentError as exc:
        raise StoreError(f"store {mask_uri(uri)}: cannot create an engine: {exc}") from exc
    except ImportError as exc:
        raise StoreError(
            f"store {mask_uri(uri)}: its database driver is not installed: {exc}"
        ) from exc
    if url.get_backend_name() == "sqlite":
        event.listen(engine, "connect", _tune_read_only if read_only else _tune_sqlite)
    _check_connection(engine, uri)
    return engine


def _parse(uri: str) -> URL:
    if uri.strip().lower() in NO_STORE:  # (a run records nothing with it: nothing to open)
        raise StoreError(
            f"store_uri is {uri!r}, which records nothing: there is no store to open. Point at "
            "the store the runs wrote: PALAESTRA_STORE_URI=sqlite:////abs/path/palaestra.db, "
            "or store_uri in a runtime config file given with -c FILE"
        )
    check_store_uri_parts(uri)  # (the store writer's rule: both read a URI alike)
    try:
        return make_url(uri)
    except NOT_A_URL as exc:
        raise StoreError(f"store {mask_uri(uri)}: not a valid database URL: {exc}") from exc


def sqlite_file(url: URL) -> Path | None:
    """The file of a SQLite store URL (``~`` expanded, as given: maybe relative); None for other
    stores, memory and ``file:`` URIs."""
    database = url.database or ""
    if url.get_backend_name() != "sqlite" or database in ("", ":memory:"):
        return None
    if database.startswith("file:"):
        return None
    return Path(database).expanduser()


def _read_only_connector(path: Path) -> Callable[[], sqlite3.Connection]:
    """What opens ``path`` read-only; immutable where no ``-shm`` file exists nor can be made."""
    query = "mode=ro"
    if not os.access(path.parent, os.W_OK) and not Path(f"{path}-shm").exists():
        query += "&immutable=1"
    quoted = urllib.parse.quote(os.fsencode(path.absolute()))  # (as bytes: any file's name)
    target = f"file:{quoted}?{query}"

    def connect() -> sqlite3.Connection:
        return sqlite3.connect(target, uri=True, check_same_thread=False)

    return connect


def _tune_sqlite(dbapi_connection: Any, connection_record: Any) -> None:
    tune(dbapi_connection)


def _tune_read_only(dbapi_connection: Any, connection_record: Any) -> None:
    dbapi_connection.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")


def _check_connection(engine: Engine, uri: str) -> None:
    try:
        with engine.connect():
            pass
    except SQLAlchemyError as exc:
        engine.dispose()
        raise StoreError(f"store {mask_uri(uri)}: cannot open the store: {reason(exc)}") from exc


def reason(exc: BaseException) -> str:
    """The first line of what the database driver said (SQLAlchemy's ``orig``), else of
    ``exc``."""
    original = getattr(exc, "orig", None)
    return str(original if original is not None else exc).splitlines()[0]
