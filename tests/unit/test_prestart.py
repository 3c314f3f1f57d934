"""A child forked before its spec is known (palaestra/core/supervision/prestart.py), in this
process: one not handed over ends on its pipe's end, whatever its preparation did, and only
its role is handed over. The hand-over itself: tests/system/test_prestart.py."""

from __future__ import annotations

import msgspec
import pytest

from palaestra.core.supervision.prestart import Prestarted
from palaestra.core.supervision.processes import ChildSpec, Deferred
from palaestra.core.supervision.remote_child import EXIT_NO_SPEC


def _ended_quietly(early: Prestarted) -> int | None:
    process = early._process
    assert process is not None and process.is_alive()
    early.close()
    return process.exitcode


@pytest.mark.timeout(30)
def test_a_child_not_handed_over_ends_when_closed() -> None:
    early = Prestarted("StoreWriter", "json:dumps", "prepared")
    assert _ended_quietly(early) == EXIT_NO_SPEC
    early.close()  # (twice: nothing more)


@pytest.mark.timeout(30)
def test_a_preparation_that_fails_leaves_the_child_waiting_for_its_spec() -> None:
    """The child's real start imports the module again and reports what fails there."""
    early = Prestarted("StoreWriter", "palaestra_no_such_module:prepare", "x")
    assert _ended_quietly(early) == EXIT_NO_SPEC


@pytest.mark.timeout(30)
def test_a_closed_child_is_handed_over_to_no_one() -> None:
    early = Prestarted("StoreWriter", "json:dumps", "prepared")
    early.close()
    assert early.launch(_spec("StoreWriter")) is None


@pytest.mark.timeout(30)
def test_only_a_spec_of_its_role_takes_the_child() -> None:
    early = Prestarted("StoreWriter", "json:dumps", "prepared")
    try:
        assert early.launch(_spec("Brain")) is None
        assert early._process is not None  # still there for the writer
    finally:
        early.close()


class _NoArgs(msgspec.Struct):
    pass


def _spec(role: str) -> ChildSpec:
    return ChildSpec(
        name=role,
        role=role,
        component=Deferred("palaestra.store.writer:StoreWriter"),  # (never built here)
        args=_NoArgs(),
        run_dir="/nonexistent",
        parent_endpoint="ipc:///nonexistent",
    )
