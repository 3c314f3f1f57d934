"""When the PostgreSQL tests run, skip or fail (tests/conftest.py): a server asked for with
``PALAESTRA_TEST_POSTGRES`` must answer; without it, no local server means a skip."""

from __future__ import annotations

import socket

import pytest

from tests.conftest import LOCAL_POSTGRES, postgres_admin, server_answers


def answering(uri: str) -> str | None:
    return None


def silent(uri: str) -> str | None:
    return "connection refused"


def a_closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unset_and_a_local_server_answers_uses_it() -> None:
    assert postgres_admin(None, answering) == LOCAL_POSTGRES


def test_unset_and_no_local_server_skips_saying_why_and_what_to_set() -> None:
    with pytest.raises(pytest.skip.Exception) as skipped:
        postgres_admin(None, silent)
    assert str(skipped.value) == (
        f"no PostgreSQL server answers at {LOCAL_POSTGRES} (connection refused); set "
        "PALAESTRA_TEST_POSTGRES to a server's URL to run these tests"
    )


def test_asked_for_and_absent_fails() -> None:
    asked = "postgresql+psycopg://ci@db:5432/test"
    with pytest.raises(pytest.fail.Exception) as failed:
        postgres_admin(asked, silent)
    assert str(failed.value) == (
        f"PALAESTRA_TEST_POSTGRES={asked}: the server does not answer: connection refused"
    )
    assert postgres_admin(asked, answering) == asked


def test_empty_turns_them_off() -> None:
    with pytest.raises(pytest.skip.Exception, match="turned off"):
        postgres_admin("", answering)


def test_a_server_that_is_not_there_does_not_answer() -> None:
    why = server_answers(f"postgresql+psycopg://postgres@127.0.0.1:{a_closed_port()}/test")
    assert why is not None and "refused" in why.lower()
