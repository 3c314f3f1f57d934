"""Whatever escapes a plug-in fails the run naming the plug-in's class and method.

Exceptions in constructors (named ``module:Class.__init__``, never by the metaclass),
``sys.exit()`` and ``KeyboardInterrupt`` in plug-in methods, and termination conditions, under
both drivers of an episode.
"""

from __future__ import annotations

import pytest

from tests.conftest import Edit, Workspace, slow_after

pytestmark = pytest.mark.timeout(120)

_MUSCLE = "muscle: {name: palaestra.agent:DummyMuscle, params: {count_upwards: true}}"
_CONDITION = "palaestra.simulation:VanillaSimControllerTerminationCondition"
_SIMULATION = "      simulation:\n"


def failed_run(ws: Workspace, *edits: Edit) -> str:
    """Run taking_turns_run.yml with ``edits``; it must fail: returns the stored reason."""
    run_file = ws.variant("taking_turns_run.yml", *edits)
    result = ws.run("experiment-start", str(run_file), timeout=60)
    assert result.returncode == 1, result.stderr[-3000:]
    assert result.stderr.count("Error: run ") == 1
    status, reason = ws.instance_status()
    assert status == "error"
    assert reason.splitlines()[0] in result.stderr
    return reason


def muscle(params: str) -> Edit:
    return (_MUSCLE, f"muscle: {{name: misbehaving:{params}}}")


@pytest.mark.parametrize("method", slow_after(["__init__", "setup", "propose_actions"]))
@pytest.mark.parametrize(
    ("how", "kind"), [("exit", "SystemExit"), ("interrupt", "KeyboardInterrupt")]
)
def test_a_plugin_leaving_the_process_is_named_with_its_method(
    workspace: Workspace, method: str, how: str, kind: str
) -> None:
    params = f"ExitingMuscle, params: {{method: {method}, how: {how}}}"
    reason = failed_run(workspace, muscle(params))
    headline = reason.splitlines()[0]
    assert headline.startswith(f"Muscle-one-0 (misbehaving:ExitingMuscle.{method}): {kind}")
    assert "ended unexpectedly" not in reason


def test_a_failing_constructor_is_named_by_its_class_not_the_metaclass(
    workspace: Workspace,
) -> None:
    reason = failed_run(workspace, muscle("FailingInitMuscle, params: {}"))
    assert reason.startswith(
        "Muscle-one-0 (misbehaving:FailingInitMuscle.__init__): ValueError: no model file"
    )
    assert "ABCMeta" not in reason


@pytest.mark.parametrize("driver", ["controller", "environment"])
def test_a_failing_termination_condition_is_named(workspace: Workspace, driver: str) -> None:
    process = "SimulationController-0" if driver == "controller" else "Environment-board-0"
    reason = failed_run(
        workspace,
        (_CONDITION, "misbehaving:FailingCondition"),
        (_SIMULATION, f"{_SIMULATION}        params: {{driver: {driver}}}\n"),
    )
    assert reason.startswith(
        f"{process} (misbehaving:FailingCondition.episode_done): RuntimeError: condition broke"
    )


def test_a_termination_condition_that_cannot_be_built_is_named(workspace: Workspace) -> None:
    reason = failed_run(
        workspace,
        (_CONDITION, "misbehaving:FailingCondition"),
        ("params: {}\n      phase_config", "params: {after: -1}\n      phase_config"),
    )
    assert "(misbehaving:FailingCondition.__init__): ValueError: bad condition params" in reason


def test_a_plugin_module_exiting_at_import_fails_the_check_not_palaestra(
    workspace: Workspace,
) -> None:
    """A module that calls ``sys.exit(0)`` when imported ended ``experiment-start`` at once
    with exit 0 (nothing checked, run or stored, nothing said)."""
    (workspace.path / "quitting.py").write_text(
        "import sys\nfrom palaestra.agent import DummyBrain\nsys.exit(0)\n"
        "class Brain(DummyBrain):\n    pass\n"
    )
    run_file = workspace.variant(
        "dummy_run.yml",
        (
            "brain: {name: palaestra.agent.dummy_brain:DummyBrain, params: {}}",
            "brain: {name: quitting:Brain, params: {}}",
        ),
    )
    for command in ("experiment-check-syntax", "experiment-start"):
        result = workspace.run(command, str(run_file))
        assert result.returncode == 2, result.stderr[-3000:]
        assert "module 'quitting' failed to import: SystemExit: 0 (" in result.stderr
        assert "quitting.py, line 3: sys.exit(0))" in result.stderr
    assert not workspace.store.exists()


def test_a_thread_a_plugin_module_starts_at_import_does_not_hold_the_command(
    workspace: Workspace,
) -> None:
    """The command imports the run file's plug-in modules to check them; one that starts a
    thread (no daemon) that never ends kept ``palaestra check`` and ``experiment-start`` from
    ending once their work was done (the run finished, the command hung)."""
    (workspace.path / "polling.py").write_text(
        "import threading, time\nfrom palaestra.agent import DummyBrain\n"
        "threading.Thread(target=lambda: time.sleep(10**6), name='poller').start()\n"
        "class Brain(DummyBrain):\n    pass\n"
    )
    run_file = workspace.variant(
        "dummy_run.yml",
        (
            "brain: {name: palaestra.agent.dummy_brain:DummyBrain, params: {}}",
            "brain: {name: polling:Brain, params: {}}",
        ),
    )
    for command in ("experiment-check-syntax", "experiment-start"):
        result = workspace.run(command, str(run_file), timeout=30)
        assert result.returncode == 0, result.stderr[-3000:]
        assert (
            "Warning: thread 'poller', which importing plug-in module 'polling' started here, "
            "still runs; palaestra ends without waiting for it." in result.stderr
        )
    assert workspace.instance_status()[0] == "finished"
