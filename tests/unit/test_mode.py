"""The mode a plug-in sees compares equal to palaestrAI's ``Mode`` members and to strings."""

from __future__ import annotations

import msgspec
import numpy as np

from palaestra.agent.context import BrainContext, MuscleContext
from palaestra.agent.dummy_brain import DummyBrain
from palaestra.agent.dummy_muscle import DummyMuscle
from palaestra.types import Mode


def test_mode_members_are_palaestrais_and_equal_their_strings() -> None:
    assert [m.name for m in Mode] == ["TRAIN", "TEST", "EVALUATE"]
    assert Mode.TRAIN == "train" and Mode.TEST == "test" and Mode.EVALUATE == "evaluate"
    assert Mode.TRAIN.value == "train"
    assert Mode("test") is Mode.TEST
    assert {"train": 1}[Mode.TRAIN] == 1  # hashes as its string
    assert msgspec.json.encode(Mode.TEST) == b'"test"'


def test_the_mode_a_brain_and_a_muscle_see_is_a_mode() -> None:
    brain = DummyBrain()
    brain.attach(BrainContext("a", "run", 0, "p", "train", 1, [], []))
    assert brain.mode is Mode.TRAIN
    assert brain.mode == Mode.TRAIN and brain.mode == "train" and brain.mode != Mode.TEST
    muscle = DummyMuscle()
    muscle.attach(MuscleContext("a", "Muscle-a-0", 0, "test", 1, [], [], np.random.default_rng()))
    assert muscle.mode is Mode.TEST
    assert muscle.mode == "test"
