"""The replay's parts without a store or processes: comparing a step with its record, the live
world, stepping through an episode recorded by that world, the order of turns of the rebuilt
``muscle_actions``, and the command's help."""

from __future__ import annotations

import math
from typing import Any

import pytest

from palaestra.core.description.specs import EnvironmentSpec
from palaestra.core.turns import AllAct, RoundRobin, TurnPolicy
from palaestra.core.wire import messages as m
from palaestra.replay.compare import Divergence, first_difference
from palaestra.replay.copy import rebuild
from palaestra.replay.live import LiveWorld
from palaestra.replay.record import PhaseRecord, RecordedAgent
from palaestra.replay.session import nondeterministic
from palaestra.replay.steps import WorkerReplay
from tests.conftest import cli_runner

DUMMY = "palaestra.environment.dummy_environment:DummyEnvironment"


def row(sensors: dict[str, Any], rewards: m.StoredRewards, done: bool) -> m.WorldStateRow:
    return m.WorldStateRow(0, 1, sensors, {}, rewards, done)


def test_first_difference_names_the_first_value_that_differs() -> None:
    recorded = {"sensors": {"e.0": 1, "e.1": [1, 2]}, "rewards": {"r": 0.5}, "done": False}

    assert first_difference(recorded, row({"e.0": 1, "e.1": (1, 2)}, {"r": 0.5}, False)) is None
    assert first_difference(recorded, row({"e.0": 2, "e.1": [1, 2]}, {"r": 0.5}, False)) == (
        "sensor",
        "e.0",
        1,
        2,
    )
    assert first_difference(recorded, row({"e.0": 1, "e.1": [1, 2]}, {"r": 0.25}, False)) == (
        "reward",
        "r",
        0.5,
        0.25,
    )
    assert first_difference(recorded, row({"e.0": 1}, {"r": 0.5}, False)) == (
        "sensor",
        "e.1",
        [1, 2],
        "missing",
    )
    assert first_difference(recorded, row(recorded["sensors"], {"r": 0.5}, True)) == (
        "done",
        "",
        False,
        True,
    )


def test_a_recorded_nan_replayed_as_nan_is_no_divergence() -> None:
    recorded = {"sensors": {"e.0": math.nan}, "rewards": {}, "done": False}

    assert first_difference(recorded, row({"e.0": math.nan}, {}, False)) is None
    assert first_difference(recorded, row({"e.0": 0.0}, {}, False)) is not None


def test_a_divergence_says_where_and_what() -> None:
    found = Divergence(0, 1, 2, 3, "env", "sensor", "env.4", 5, 6)
    done = Divergence(0, 1, 2, 3, "env", "done", "env", False, True)

    assert str(found) == (
        "phase 0, worker 1, episode 2, step 3: sensor 'env.4' was 5 in the record, 6 in the replay"
    )
    assert "step 3: done of 'env' was False in the record, True in the replay" in str(done)


def recorded_phase(
    policy: type[TurnPolicy] = AllAct, episodes: int = 2, discrete: bool = False
) -> PhaseRecord:
    """A phase "recorded" by stepping a live world with set points of its own, as a run's
    environments would have recorded it (no store needed)."""
    specs = [
        EnvironmentSpec(name=DUMMY, uid="e", params={"discrete": discrete, "max_iter": 4}),
        EnvironmentSpec(name=DUMMY, uid="f", params={"discrete": discrete, "max_iter": 5}),
    ]
    seeds = {"e": [5], "f": [6]}
    world = LiveWorld(specs, seeds, 0)
    states: dict[tuple[str, int, int], list[dict[str, Any]]] = {}
    for episode in range(episodes):
        world.start()
        for step in range(4):
            setpoints = {"e": {"e.0": float(step)}, "f": {"f.1": 2.0 * step}}
            for uid, (_, live) in world.step(setpoints).items():
                states.setdefault((uid, 0, episode), []).append(
                    {
                        "sensors": live.sensors,
                        "setpoints": live.setpoints,
                        "rewards": live.rewards,
                        "done": live.done,
                        "step": live.step,
                    }
                )
    agents = [RecordedAgent("a", ["e.0", "f.1"]), RecordedAgent("b", ["f.2"])]
    return PhaseRecord(
        run="r",
        instance="i",
        index=0,
        name="p",
        workers=1,
        episodes=episodes,
        check_values=True,
        environments=specs,
        seeds=seeds,
        policy=policy,
        agents=agents,
        phase_row={},
        environment_rows=[],
        agent_rows=[],
        world_states=states,
        muscle_actions={},
    )


def test_a_replay_of_what_the_world_recorded_reproduces_it_episode_after_episode() -> None:
    record = recorded_phase()
    replayer = WorkerReplay(record, 0)

    first = replayer.episode(0)
    steps = list(first)
    second = replayer.episode(1).run()

    assert [s.step for s in steps] == [1, 2, 3, 4]
    assert all(s.divergence is None and not s.diverged_by_user for s in steps)
    assert steps[-1].live["e"].done and not steps[-1].live["f"].done
    assert steps[1].setpoints == {"e.0": 1.0, "f.1": 2.0}
    assert steps[2].environments["e"].iter == 4  # the live plug-in, after the last step
    assert second is None


def test_a_later_episode_replays_the_ones_before_it_so_the_random_state_matches() -> None:
    record = recorded_phase()

    replay = WorkerReplay(record, 0).episode(1)

    assert replay.run() is None
    recorded = [r["sensors"] for r in record.world_states[("e", 0, 1)]]
    assert [rows["e"].sensors for rows in replay.kept] == recorded


def test_a_changed_record_diverges_at_the_step_and_uid_that_changed() -> None:
    record = recorded_phase()
    record.world_states[("f", 0, 0)][2]["rewards"] = {"Dummy Reward": 99}

    divergence = WorkerReplay(record, 0).episode(0).run()

    assert divergence is not None
    assert (divergence.step, divergence.environment, divergence.kind) == (3, "f", "reward")
    assert (divergence.uid, divergence.recorded, divergence.replayed) == ("Dummy Reward", 99, 3)


def test_until_stops_the_episode_after_that_step() -> None:
    steps = list(WorkerReplay(recorded_phase(), 0).episode(0, until=2))

    assert [s.step for s in steps] == [1, 2]


def test_substituted_set_points_drive_the_rest_of_the_episode_uncompared() -> None:
    record = recorded_phase(discrete=True)
    record.world_states[("e", 0, 0)][3]["sensors"] = {}  # would diverge, were it compared
    replay = WorkerReplay(record, 0).episode(0)

    next(replay)
    taken = replay.send({"e.0": 42, "f.1": 7})
    rest = list(replay)

    assert taken.diverged_by_user and taken.divergence is None
    assert taken.live["e"].setpoints == {"e.0": 42} and taken.live["f"].setpoints == {"f.1": 7}
    assert all(s.diverged_by_user and s.divergence is None for s in rest)
    assert rest[-1].live["e"].done  # over when an environment says done, as a run would be
    assert replay.divergence is None


@pytest.mark.parametrize(
    ("policy", "acted"),
    [(AllAct, {"a": [0, 1, 2, 3], "b": [0, 1, 2, 3]}), (RoundRobin, {"a": [0, 2], "b": [1, 3]})],
)
def test_rebuilt_muscle_actions_follow_the_order_of_turns(
    policy: type[TurnPolicy], acted: dict[str, list[int]]
) -> None:
    record = recorded_phase(policy)
    record.muscle_actions = {
        ("a", 0, 0): [
            {"step": s, "actuator_setpoints": {"e.0": s}, "objective": s / 2} for s in acted["a"]
        ]
    }
    replay = WorkerReplay(record, 0).episode(0)
    replay.run()

    found = rebuild(record, 0, replay)[0]

    assert {name: [r.step for r in rows] for name, rows in found.items()} == acted
    a = found["a"]
    assert [r.setpoints for r in a] == [{"e.0": s} for s in acted["a"]]
    assert [r.objective for r in a] == [s / 2 for s in acted["a"]]
    assert [r.done for r in a] == [False] * (len(a) - 1) + [True]
    assert a[0].sensors == {"e.0": replay.baseline["e.0"], "f.1": replay.baseline["f.1"]}
    # (both environments name their reward "Dummy Reward": the row keeps both, as a list)
    last_rewards = [{"uid": r.uid, "value": r.value} for r in replay.taken[a[-1].step].rewards]
    assert len(last_rewards) == 2 and a[-1].rewards == last_rewards
    assert all(r.setpoints == {} and r.objective is None for r in found["b"])


def test_nondeterministic_names_the_environments_that_say_so() -> None:
    record = recorded_phase()
    plain = nondeterministic(record)
    record.environments[1] = EnvironmentSpec(
        name="tests.plugins.replay_plugins:UnreplayableEnvironment", uid="f"
    )

    assert plain == []
    assert nondeterministic(record) == ["f (tests.plugins.replay_plugins:UnreplayableEnvironment)"]


def test_the_command_help_shows_an_example_and_the_exit_codes() -> None:
    from palaestra.cli.main import cli

    shown = cli_runner().invoke(cli, ["experiment-replay", "--help"])

    assert shown.exit_code == 0
    assert "palaestra experiment-replay my-run --phase 0 --episode 2 --worker 1" in shown.stdout
    assert "replay_deterministic = False" in shown.stdout
    for option in ("--instance", "--phase", "--episode", "--worker", "--until", "--record"):
        assert option in shown.stdout


def test_rewards_kept_as_a_list_are_compared_in_their_order() -> None:
    """(a row keeps rewards whose uid repeats, two environments' ``r``, as a list)"""
    both = [{"uid": "r", "value": 1.0}, {"uid": "r", "value": 0.5}]
    recorded = {"sensors": {}, "rewards": both, "done": False}

    assert first_difference(recorded, row({}, [dict(d) for d in both], False)) is None
    changed = [both[0], {"uid": "r", "value": 0.25}]
    assert first_difference(recorded, row({}, changed, False)) == ("reward", "r", 0.5, 0.25)
    assert first_difference(recorded, row({}, both[:1], False)) == ("reward", "r", 0.5, "missing")
    assert first_difference(recorded, row({}, {"r": 1.0}, False)) == (
        "reward",
        "r",
        0.5,
        "missing",
    )
