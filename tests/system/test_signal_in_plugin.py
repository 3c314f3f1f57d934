"""A plug-in that installs a signal handler in a per-step method is told why it cannot."""

from __future__ import annotations

import pytest

from tests.conftest import Workspace

pytestmark = pytest.mark.timeout(120)


def test_signal_signal_in_update_fails_the_run_naming_the_method_and_the_reason(
    workspace: Workspace,
) -> None:
    run_file = workspace.variant(
        "dummy_run.yml",
        (
            "palaestra.environment.dummy_environment:DummyEnvironment",
            "strays:SignalEnvironment",
        ),
    )
    result = workspace.run("experiment-start", str(run_file), timeout=60)
    assert result.returncode == 1, result.stderr
    first = result.stderr.splitlines()[0]
    assert first.startswith(
        "Error: run 'dummy-run' failed: Environment-myenv-0 (strays:SignalEnvironment.update): "
        "SignalOffMainThread: signal.signal(SIGUSR1, ...) called in thread "
    )
    assert "runs the per-step methods of Brains, Muscles and Environments in a worker" in first
    assert "Install them in the plug-in's constructor" in first
    status, reason = workspace.instance_status()
    assert status == "error"
    assert "strays:SignalEnvironment.update" in reason and "worker thread" in reason
