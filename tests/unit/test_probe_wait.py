"""The environment probe's wait for its child, :class:`palaestra.experiment.probe._Prober`."""

from __future__ import annotations

import math
import os

import pytest

from palaestra.core.description.specs import EnvironmentSpec
from palaestra.experiment.probe import _Prober

SPEC = EnvironmentSpec(name="palaestra.environment:DummyEnvironment", uid="env", params={})


@pytest.mark.parametrize("timeout", [math.inf, 1e9, 1e20])
def test_a_probe_timeout_beyond_what_poll_takes_waits_for_the_result(timeout: float) -> None:
    """probe_timeout .inf or 1e9 failed the run file's check with a bare OverflowError
    traceback (poll takes a C int of milliseconds); the wait is now made in parts."""
    read, write = os.pipe()
    try:
        os.write(write, b'result {"sensors": ["0"], "actuators": ["1"]}\ndone\n')
        found = _Prober(SPEC, timeout, forked=True)._result(read, pid=0)
    finally:
        os.close(read)
        os.close(write)
    assert found == {"sensors": ["0"], "actuators": ["1"]}
