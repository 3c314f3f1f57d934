"""palaestrAI-style learning plug-ins: tagged dumps through a stream left at its end,
statistics, a Muscle that loads its model in a test phase, and a Brain that checks that every
Muscle acts with its newest policy.

Written as harl's brains and muscles are: ``BrainDumper.store_brain_dump(bio, self._dumpers,
tag)`` right after writing ``bio`` (so it is positioned at its end), ``add_statistics`` after
an update, and ``prepare_model`` loading the actor with ``BrainDumper.load_brain_dump(
self._model_loaders, tag)``.
"""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np

from palaestra.agent import Brain, BrainDumper, Muscle

RB_BYTES = 100_000
"""The size of the "replay buffer" dump: larger than any buffer a stream would leave unread."""


class TaggedBrain(Brain):
    """Learns a "weight": +1 per experience in a train phase, sent to the Muscles as the update.

    Its ``store`` writes three tagged dumps through one BytesIO left at its end: ``actor``
    (the weight), ``critic`` (the weight negated) and ``rb`` (:data:`RB_BYTES` bytes); its
    ``load`` reads them back by tag and fails if one is missing or damaged (or if it is called
    with nothing to load, as in a first phase).
    """

    def __init__(self) -> None:
        self.weight = 0
        self.loaded: int | None = None

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        if self.mode != "train":
            return None  # a test phase's Muscles act with what they loaded
        if data_from_muscle is None:
            return {"weight": self.weight}
        self.weight += 1
        self.add_statistics("weight", self.weight)
        self.add_statistics("loss", np.float32(1 / self.weight))
        self.add_statistics("grads", np.arange(3) * self.weight)
        return {"weight": self.weight}

    def store(self) -> None:
        bio = io.BytesIO()
        bio.write(json.dumps({"weight": self.weight}).encode())
        BrainDumper.store_brain_dump(bio, self._dumpers, "actor")
        bio.seek(0)
        bio.truncate(0)
        bio.write(json.dumps({"weight": -self.weight}).encode())
        BrainDumper.store_brain_dump(bio, self._dumpers, "critic")
        bio.seek(0)
        bio.truncate(0)
        bio.write(bytes([self.weight % 256]) * RB_BYTES)
        self.store_brain_dump(bio, tag="rb")

    def load(self) -> None:
        actor = BrainDumper.load_brain_dump(self._dumpers, "actor")
        if actor is None:  # harl logs an ERROR here: palaestrAI calls load only to load
            raise RuntimeError("load() was called with no dump to load")
        critic = self.load_brain_dump(tag="critic")
        rb = self.load_brain_dump(tag="rb")
        if critic is None or rb is None:
            raise RuntimeError("the actor was dumped, but not the critic or the replay buffer")
        weight = json.loads(actor.read())["weight"]
        if json.loads(critic.read())["weight"] != -weight or len(rb.read()) != RB_BYTES:
            raise RuntimeError("the tagged dumps do not belong together")
        self.weight = self.loaded = weight
        self.add_statistics("loaded_weight", weight)


class TaggedMuscle(Muscle):
    """Sets every Discrete actuator to its weight (modulo the space); records the weight it
    acted with as a statistic. In a test phase it loads the actor in ``prepare_model``; with
    ``expect`` it fails unless that is the weight it loaded."""

    def __init__(self, expect: int | None = None) -> None:
        self.expect = expect
        self.weight: int | None = None

    def prepare_model(self) -> None:
        assert self._model_loaders, "no model loaders"
        bio = BrainDumper.load_brain_dump(self._model_loaders, "actor")
        if bio is None:
            raise RuntimeError("no actor to test with")
        self.weight = json.loads(bio.read())["weight"]
        if self.expect is not None and self.weight != self.expect:
            raise RuntimeError(f"loaded the actor of weight {self.weight}, not {self.expect}")
        replay = self.load("rb")
        if replay is None or len(replay.read()) != RB_BYTES:
            raise RuntimeError("the replay buffer dump is not whole")

    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        if self.weight is None:
            raise RuntimeError("asked to act before it has a model")
        for actuator in actuators_available:
            actuator(int(self.weight % actuator.space.n))
        self.add_statistics("acted_with", self.weight)
        return actuators_available, True  # as harl's: None is the first step's

    def update(self, update: Any) -> None:
        if update is not None:
            self.weight = update["weight"]


class NewestPolicyBrain(Brain):
    """Updates the Muscle of worker 0 (a new version at each of its experiences; the very first
    experience, of any worker, makes version 1), and fails as soon as a Muscle acted with an
    older policy than the newest there was when it was last answered: with several workers,
    each Muscle must get the newest policy at its next step, as palaestrAI's learner gives it."""

    def __init__(self) -> None:
        self.version = 0
        self.answered: dict[str, int] = {}

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        expected = self.answered.get(muscle_id)
        if data_from_muscle is not None and expected is not None and data_from_muscle != expected:
            raise RuntimeError(
                f"{muscle_id} acted with policy {data_from_muscle}; the newest when it was "
                f"answered was {expected}"
            )
        update = None
        # the first experience of any worker makes version 1 (so every other Muscle must be
        # given it at its next step, whatever the order the workers run in); after that only
        # worker 0's experiences make new versions
        if muscle_id.endswith("-0") or self.version == 0:
            self.version += 1
            update = self.version
        self.answered[muscle_id] = self.version
        return update


class VersionMuscle(Muscle):
    """Acts with the policy version its Brain last sent (0 before any), and tells it which."""

    def __init__(self) -> None:
        self.version = 0

    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        for actuator in actuators_available:
            actuator(int(self.version % actuator.space.n))
        self.add_statistics("version", self.version)
        return actuators_available, self.version

    def update(self, update: Any) -> None:
        self.version = update


class UnstorableStatisticBrain(TaggedBrain):
    """Adds a statistic the store cannot hold, at its third experience."""

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        update = super().thinking(muscle_id, data_from_muscle)
        if self.weight == 3:
            self.add_statistics("model", object())
        return update
