"""`record: {every: N}` keeps each episode's last step's `world_states` row in every
environment of a worker, also in one that was not done itself (another environment of the
worker, or another game's end, ended the episode): its row is made when the episode turns out
to be over (the reset, or the end of the phase)."""

from __future__ import annotations

from typing import Any

from msgspec.structs import astuple

from palaestra.core.description.specs import EnvironmentSpec
from palaestra.environment.batch import Batch
from palaestra.environment.world import World
from palaestra.testing import RowRecorder

DUMMY_ENV = "palaestra.environment.dummy_environment:DummyEnvironment"
CARTPOLE = "palaestra.environment.cartpole:CartPole"


def world(name: str, worker: int = 0, every: int = 3) -> World:
    made = World(
        f"Environment-env-{worker}",
        environment=EnvironmentSpec(name=name, uid="env", params={}),
        environment_id=1,
        worker=worker,
        seed=7 + worker,
        record_every=every,
    )
    made.out.rows = RowRecorder("world_states")
    return made


def steps(rows: list[Any]) -> list[tuple[int, int]]:
    """(episode, step) of each recorded row."""
    return [
        (row["episode"], row["step"]) if isinstance(row, dict) else astuple(row)[:2]
        for row in rows
    ]


def test_a_world_not_done_itself_records_the_last_step_when_its_episode_ends() -> None:
    env = world(DUMMY_ENV)
    env.start_world(reset=False)
    for _ in range(5):  # (its own episode goes on: max_iter 10)
        assert not env.update({}).done
    assert isinstance(env.out.rows, RowRecorder)
    assert steps(env.out.rows.recorded) == [(0, 1), (0, 4)]
    env.start_world(reset=True)  # another environment ended the episode at step 5
    assert steps(env.out.rows.recorded) == [(0, 1), (0, 4), (0, 5)]
    env.update({})
    env.record_last()  # the phase ended after the new episode's first step: recorded already
    env.update({})
    env.record_last()  # ... and after its second
    assert steps(env.out.rows.recorded)[3:] == [(1, 1), (1, 2)]


def test_a_recorded_last_step_is_not_recorded_twice() -> None:
    env = world(DUMMY_ENV)
    env.start_world(reset=False)
    for _ in range(4):
        env.update({})
    env.start_world(reset=True)  # its step 4 was recorded
    env.record_last()
    assert isinstance(env.out.rows, RowRecorder)
    assert steps(env.out.rows.recorded) == [(0, 1), (0, 4)]


def test_games_stepped_in_a_batch_record_their_last_step_when_their_episode_ends() -> None:
    games = [world(CARTPOLE, worker) for worker in range(2)]
    for game in games:
        game.start_world(reset=False)
    sink = games[0].out.rows
    assert isinstance(sink, RowRecorder)
    sink.socket = object()  # type: ignore[assignment]  # (rows are stored: kept here)
    batch = Batch(games[0])
    for _ in range(5):
        states = batch.step([(game, {"push": 1}, False) for game in games])
        assert not any(state.done for state in states)
    assert steps(sink.recorded) == [(0, 1), (0, 1), (0, 4), (0, 4)]
    games[0].start_world(reset=True)  # game 0's episode ended elsewhere at step 5
    games[1].record_last()  # the phase ended: game 1's episode too
    last = [(row["worker"], row["step"]) for row in sink.recorded[4:]]
    assert last == [(0, 5), (1, 5)]
    assert all(row["done"] in (0, False) for row in sink.recorded[4:])
