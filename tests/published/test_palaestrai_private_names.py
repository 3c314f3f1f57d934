"""palaestrAI private attribute names that published plug-ins read, offered as read-only
properties over palaestra's public ones (no harl needed)."""

from __future__ import annotations

import numpy as np

from palaestra.agent.context import MuscleContext
from palaestra.agent.dummy_muscle import DummyMuscle
from palaestra.types import Mode


def test_a_muscle_reads_its_mode_under_palaestrais_private_name() -> None:
    """harl's SACMuscle.propose_actions reads ``self._mode`` (palaestrAI's attribute behind
    ``mode``); it is the phase's mode, the same object as ``mode``."""
    for mode in (Mode.TRAIN, Mode.TEST):
        muscle = DummyMuscle()
        muscle.attach(
            MuscleContext("a", "Muscle-a-0", 0, mode, 1, [], [], np.random.default_rng(1))
        )
        assert muscle._mode is muscle.mode is mode
        assert (muscle._mode != Mode.TRAIN) is (mode == Mode.TEST)
