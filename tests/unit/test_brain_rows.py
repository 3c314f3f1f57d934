"""The rows a Brain process keeps in its memory (in one process, no sockets): what a Brain
reads back, and how little of them the garbage collector has to scan."""

from __future__ import annotations

import gc
import pickle

import numpy as np

from palaestra.agent.brain_process import BrainProcess
from palaestra.core.description.specs import AgentSpec, ClassSpec
from palaestra.core.information import ActuatorInformation, SensorInformation
from palaestra.core.mode import Mode
from palaestra.core.spaces import Box, Discrete
from palaestra.core.wire import messages as m

STATE = Box(-np.inf, np.inf, shape=(4,))
PUSH = Discrete(2)
REWARD = Box(0.0, 1.0, shape=())


def brain_process() -> BrainProcess:
    agent = AgentSpec(
        name="player",
        brain=ClassSpec(name="palaestra.agent.dummy_brain:DummyBrain"),
        muscle=ClassSpec(name="palaestra.agent.dummy_muscle:DummyMuscle"),
        objective=ClassSpec(name="palaestra.agent.dummy_objective:DummyObjective"),
        sensors=("pole.state",),
        actuators=("pole.push",),
    )
    setup = m.AgentSetup(
        agent=agent,
        agent_id=1,
        phase_id=1,
        run_uid="rows",
        phase_index=0,
        phase_name="phase_0",
        mode=Mode.TRAIN,
        workers=1,
        brain_seed=1,
        muscle_seeds=[2],
        sensors=[m.InfoDesc("pole.state", STATE.to_dict(), [0.0] * 4)],
        actuators=[m.InfoDesc("pole.push", PUSH.to_dict(), 0)],
    )
    return BrainProcess("Brain-player", setup=setup, store_endpoint=None)


def round_of(games: int, step: int) -> m.Experiences:
    """A round's experiences as they come over the wire (encoded and decoded)."""
    items = [
        m.Experience(
            worker=game,
            transition=m.Transition(
                [[0.25 * game, 0.5, -0.5, float(step)]],
                {"pole.push": game % 2},
                [m.InfoDesc("pole.reward", REWARD.to_dict(), 1.0)],
                0.5,
                False,
                False,
                False,
            ),
            data=pickle.dumps(None),
            done=False,
            episode=0,
            step=step,
        )
        for game in range(games)
    ]
    decoded = m.decode(m.encode(m.Experiences(worker=0, items=items)))
    assert isinstance(decoded, m.Experiences)
    return decoded


def test_a_kept_row_reads_back_as_the_transition_it_was_made_of() -> None:
    process = brain_process()
    memory = process.brain.memory
    for item in round_of(3, 7).items:
        process._remember(memory, f"Muscle-player-{item.worker}", item)
    row = memory.tail(1)
    assert len(memory) == 3
    (sensor,) = row.sensor_information[0]
    assert isinstance(sensor, SensorInformation)
    assert sensor.uid == "pole.state" and sensor.space == STATE
    np.testing.assert_array_equal(sensor.value, np.array([0.5, 0.5, -0.5, 7.0], np.float32))
    (setpoint,) = row.setpoint_information[0]
    assert isinstance(setpoint, ActuatorInformation)
    assert (setpoint.uid, setpoint.value, setpoint.space) == ("pole.push", 0, PUSH)
    (reward,) = row.reward_information[0]
    assert (reward.uid, float(reward.value)) == ("pole.reward", 1.0)


def test_a_kept_row_is_a_few_objects_for_the_garbage_collector() -> None:
    """A Brain keeps up to 100,000 rows; each of their objects the collector tracks is scanned
    at every full collection (with 17 a row, the collector took 5 of the Brain's 12 µs a
    step at 64 games a worker; ``benchmarks/vector_envs.py``)."""
    process = brain_process()
    memory = process.brain.memory
    rounds = [round_of(64, step) for step in range(10)]
    gc.collect()
    tracked = len(gc.get_objects())
    for experiences in rounds:
        for item in experiences.items:
            process._remember(memory, f"Muscle-player-{item.worker}", item)
    del rounds, experiences, item
    gc.collect()  # (what the rows no longer hold is gone)
    per_row = (len(gc.get_objects()) - tracked) / len(memory)
    # the row, its sensors (lazily built: their values and their shared maker) and set
    # points, its rewards' list and objects
    assert len(memory) == 640 and per_row <= 7.5
