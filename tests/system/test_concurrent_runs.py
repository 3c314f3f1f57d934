"""Two instances of one run file at once, on one store: each phase continues from its own
instance's brain dumps (the mechanism: ``StoreFindDump.instance_id``, tested in
tests/unit/test_store_writer.py)."""

from __future__ import annotations

import json
import sqlite3
import time

import pytest

from tests.conftest import Workspace, finish

pytestmark = pytest.mark.timeout(120)

DUMMY_ENV = "name: palaestra.environment.dummy_environment:DummyEnvironment"


def test_each_of_two_instances_of_a_run_at_once_continues_from_its_own_dumps(
    workspace: Workspace,
) -> None:
    """The first instance is held at its first step until the second has run both phases:
    its phase 1 loaded the second's phase 0 dumps (or none), the newest instance's, and still
    ended ``finished``."""
    run_file = workspace.variant(
        "dummy_run.yml", (DUMMY_ENV, "name: limit_plugins:FirstComerEnvironment")
    )
    first = workspace.start("start", "-q", str(run_file))
    deadline = time.monotonic() + 60
    while not (workspace.path / "claim").exists():  # (its first step waits at the gate)
        assert first.poll() is None, first.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "the first instance did not reach its first step"
        time.sleep(0.05)
    second = workspace.run("start", "-q", str(run_file))
    assert second.returncode == 0, second.stderr[-3000:]
    (workspace.path / "gate").touch()
    code, _, err = finish(first, 60)
    assert code == 0, err[-3000:]

    with sqlite3.connect(workspace.store) as conn:
        instances = [i for (i,) in conn.execute("select id from experiment_run_instances")]
        assert len(instances) == 2
        loaded = conn.execute(
            "select i.id, a.name, a.loaded_from from agents a "
            "join experiment_run_phases p on a.experiment_run_phase_id = p.id "
            "join experiment_run_instances i on p.experiment_run_instance_id = i.id "
            'where p."index" = 1'
        ).fetchall()
        dumped_by = dict(
            conn.execute(
                "select b.id, p.experiment_run_instance_id from brain_states b "
                "join agents a on b.agent_id = a.id "
                "join experiment_run_phases p on a.experiment_run_phase_id = p.id "
                'where p."index" = 0'
            ).fetchall()
        )
    assert len(loaded) == 4  # two agents in phase 1 of each instance
    for instance, agent, source in loaded:
        assert source is not None, f"{agent} of instance {instance} loaded no dump"
        state = json.loads(source)["brain_state_id"]
        assert dumped_by[state] == instance, f"{agent} of instance {instance} loaded {source}"
