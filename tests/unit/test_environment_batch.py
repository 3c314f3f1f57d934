"""Environments stepped in batches (``Environment.update_batch``): CartPole's batch is its
``update`` bit for bit, the default loops over ``update``, which classes palaestra steps in
batches, and the rows shaped for a whole round are the rows shaped one by one."""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.core.memo import Memo
from palaestra.core.nonfinite import json_text
from palaestra.core.spaces import Box, Discrete
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import (
    RowSink,
    column_texts,
    object_keys,
    object_text,
    uniform,
)
from palaestra.environment.cartpole import CartPole
from palaestra.environment.dummy_environment import DummyEnvironment
from palaestra.environment.environment import (
    BatchState,
    Environment,
    EnvironmentState,
    steps_in_batches,
)


def poles(count: int, max_steps: int = 500) -> list[CartPole]:
    games = []
    for seed in range(count):
        pole = CartPole(seed=seed, max_steps=max_steps)
        pole.start_environment()
        games.append(pole)
    return games


def test_cartpole_steps_a_batch_as_each_game_steps_alone() -> None:
    """Row k of the batch is what game k's own ``update`` gives: the same float32 state, the
    same ends, the same state afterwards; over resets and time limits."""
    alone, batched = poles(16, max_steps=40), poles(16, max_steps=40)
    pushes = np.random.default_rng(3).integers(0, 2, size=(300, 16))
    ends = 0
    for push in pushes:
        states = [
            pole.update([ActuatorInformation(np.int64(p), pole.push_space, "push")])
            for pole, p in zip(alone, push, strict=True)
        ]
        batch = CartPole.update_batch(batched, {"push": push})
        assert isinstance(batch, BatchState)
        sensors = batch.sensor_information[0].value
        assert sensors.dtype == np.float32 and sensors.shape == (16, 4)
        assert np.array_equal(sensors, np.stack([s.sensor_information[0].value for s in states]))
        assert batch.terminated.tolist() == [s.terminated for s in states]
        assert batch.truncated.tolist() == [s.truncated for s in states]
        assert batch.rewards[0].value.tolist() == [s.rewards[0].value for s in states]
        for one, other, state in zip(alone, batched, states, strict=True):
            assert np.array_equal(one.state, other.state) and one.steps == other.steps
            if state.done:
                ends += 1
                one.start_environment()
                other.start_environment()
    assert ends > 16  # (episodes ended by falling and by the time limit)


class Counter(Environment):
    """A world of one number that counts the set points it is given."""

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.total = 0
        self.space = Box(-100.0, 100.0, shape=(1,))

    def start_environment(self) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
        self.total = 0
        return [SensorInformation(np.zeros(1), self.space, "total")], [
            ActuatorInformation(0, Discrete(3), "add")
        ]

    def update(self, actuators: Sequence[ActuatorInformation]) -> EnvironmentState:
        self.total += int(actuators[0].value)
        reward = RewardInformation(float(self.total), Box(-100.0, 100.0, shape=()), "total")
        done = self.total >= 3
        return EnvironmentState(
            [SensorInformation(np.array([self.total], dtype=np.float32), self.space, "total")],
            [reward],
            done,
            terminated=done,
            truncated=False,
        )


def test_the_default_batch_steps_each_game_with_its_update() -> None:
    games = [Counter(seed=k) for k in range(3)]
    for game in games:
        game.start_environment()
    batch = Counter.update_batch(games, {"add": np.array([0, 1, 2])})
    batch = Counter.update_batch(games, {"add": np.array([1, 1, 1])})
    assert batch.sensor_information[0].uid == "total"
    assert batch.sensor_information[0].value.tolist() == [[1.0], [2.0], [3.0]]
    assert batch.rewards[0].value.tolist() == [1.0, 2.0, 3.0]
    assert batch.terminated.tolist() == [False, False, True]
    assert batch.done.tolist() == [False, False, True]


class OwnUpdate(CartPole):
    def update(self, actuators: Sequence[ActuatorInformation]) -> EnvironmentState:
        return super().update(actuators)


class OwnBoth(OwnUpdate):
    @classmethod
    def update_batch(cls, games: Sequence[Environment], setpoints: dict[str, Any]) -> BatchState:
        return super().update_batch(games, setpoints)


@pytest.mark.parametrize(
    ("cls", "batched"),
    [(CartPole, True), (OwnUpdate, False), (OwnBoth, True), (DummyEnvironment, False)],
)
def test_a_class_steps_in_batches_where_its_batch_knows_its_update(
    cls: type[Environment], batched: bool
) -> None:
    """A subclass that overrides only ``update`` is stepped game by game: the batch it
    inherits would step past its ``update``."""
    assert steps_in_batches(cls) is batched


@pytest.mark.parametrize(
    "values",
    [
        [[0.25, -1.5, 3.0]],
        [[1, 2], "text", True],
        [None, [math.nan, math.inf]],
        [{"nested": [1.0, -math.inf]}],
    ],
)
def test_object_text_is_json_text_of_the_dict(values: list[Any]) -> None:
    uids = [f"env.s{k}" for k in range(len(values))]
    assert object_text(object_keys(uids), uids, values) == json_text(
        dict(zip(uids, values, strict=True))
    )


@pytest.mark.parametrize(
    "columns",
    [
        [[1, 2, 3]],
        [[[1.5, 2.0], [3.0, 4.0]], [True, False]],
        [[[], [1]]],
        [[[1, 2]]],
        [[5]],
        [[None, 1]],
        [[math.nan, 1.0], [[math.inf, 1.0], [2.0, 3.0]]],
        [[[[1]], 2]],  # a nested list beside a number
        [[[1], [[2]]]],
        [[[[1], [2], [3]], 4, 5, 6]],
        [[[1, "],["], [2]]],  # a string holding the separator
        [["x,y", "z"]],
        [[{"k": 1}, {"k": [1, 2]}]],
        [[], []],  # no rows
        [],  # no sensors
    ],
)
def test_column_texts_are_each_rows_object_text(columns: list[list[Any]]) -> None:
    """A column encoded at once and cut into its rows gives each row's text as
    :func:`object_text` makes it, whatever the values (those it cannot cut are encoded one by
    one)."""
    uids = [f"env.s{k}" for k in range(len(columns))]
    keys = object_keys(uids)
    count = len(columns[0]) if columns else 3
    rows = [[column[k] for column in columns] for k in range(count)]
    assert column_texts(keys, uids, columns, count) == [
        object_text(keys, uids, row) for row in rows
    ]


def test_shaped_rows_go_out_with_encoded_ones_in_one_batch() -> None:
    sent: list[m.Rows] = []

    class Socket:
        def setsockopt(self, *args: Any) -> None:
            pass

        def send(self, data: bytes, flags: int = 0) -> None:
            sent.append(m.decode(data))  # type: ignore[arg-type]

    sink = RowSink(
        Socket(),  # type: ignore[arg-type]
        "world_states",
        batch=4,
        shape=lambda row: (0, 1, row.episode, row.step),
    )
    sink.add(m.WorldStateRow(0, 1, {}, {}, {}, False))
    sink.add_shaped([(0, 2, 0, 2), (0, 3, 0, 3)], 30)
    assert not sent
    sink.add_shaped([(0, 4, 0, 4)], 10)
    assert [list(map(list, s.rows)) for s in sent] == [
        [[0, 1, 0, 1], [0, 2, 0, 2], [0, 3, 0, 3], [0, 4, 0, 4]]
    ]


def test_a_batchs_set_point_texts_are_kept_only_for_values_of_one_text() -> None:
    """(1, 1.0 and True are equal, their JSON texts not: a set point text kept by the items
    is kept only where each value is an int or a str)"""
    from palaestra.environment.batch import Batch

    batch = Batch.__new__(Batch)  # (only its texts: no world to step)
    batch.first = SimpleNamespace(declared=SimpleNamespace(prefix="pole."))  # type: ignore[assignment]
    batch.setpoints = Memo()
    values = [1, True, 1.0, 1, "a", 0.0, -0.0, False, 0, [1], None]
    texts = [batch._setpoint_text({"push": value}) for value in values]
    assert texts == [json_text({"pole.push": value}) for value in values]
    assert set(batch.setpoints) == {(("push", 1),), (("push", "a"),), (("push", 0),)}


@pytest.mark.parametrize(
    "setpoints",
    [
        [{"push": 1}, {"push": 0}, {"push": 1}],
        [{"push": 1.5, "turn": -0.0}, {"push": math.nan, "turn": 0.0}],
        [{"push": [1, 2]}, {"push": [math.inf, 3]}, {"push": None}],
        [{"push": "left"}, {"push": True}, {"push": 1}],
    ],
)
def test_set_point_texts_made_a_column_at_a_time_are_each_rows_own(
    setpoints: list[dict[str, Any]],
) -> None:
    """A round's set points as JSON text a column at a time (the environment's rows, with its
    uid before each key): each game's own text, as the game's own makes it."""
    from palaestra.core.wire.records import dict_texts
    from palaestra.environment.batch import Batch

    batch = Batch.__new__(Batch)  # (only its texts: no world to step)
    batch.first = SimpleNamespace(declared=SimpleNamespace(prefix="pole."))  # type: ignore[assignment]
    batch.setpoints = Memo()
    assert dict_texts(setpoints, "pole.") == [batch._setpoint_text(p) for p in setpoints]
    assert dict_texts(setpoints) == [json_text(p) for p in setpoints]


@pytest.mark.parametrize(
    "setpoints",
    [
        [{"push": 1, "turn": 0}, {"turn": 0, "push": 1}],  # another order: another text
        [{"push": 1}, {"turn": 0}],
        [{"push": 1}],  # one game: its own
        [{}, {}],
        [{"push": 1j}, {"push": 1}],  # no JSON form: named where the game's is made
    ],
)
def test_set_point_texts_are_each_rows_own_where_their_keys_differ(
    setpoints: list[dict[str, Any]],
) -> None:
    from palaestra.core.wire.records import dict_texts

    assert dict_texts(setpoints, "pole.") is None


@pytest.mark.parametrize(
    ("column", "shared"),
    [
        ([1.0, 1.0, 1.0], True),
        (["a", "a"], True),
        ([2, 2], True),
        ([1.0, 1.0, 0.5], False),
        ([1, 1.0], False),  # equal, with other texts
        ([True, 1], False),
        ([0.0, 0.0], False),  # a float zero: its sign told apart value by value
        ([0.0, -0.0], False),
        ([math.nan, math.nan], True),  # one NaN object: one text
        ([float("nan"), float("nan")], False),  # (not equal)
        ([[1.0], [1.0]], False),  # lists: each its own
        ([None, None], False),
    ],
)
def test_a_rounds_rows_share_a_text_only_where_every_value_has_the_same(
    column: list[Any], shared: bool
) -> None:
    """(A round's rewards are made once where every game's are the same: ``uniform``.)"""
    assert uniform(column) is shared
    if shared:
        assert len({json_text(v) for v in column}) == 1


@pytest.mark.parametrize(
    ("values", "shared"),
    [
        ([[1.0], [1.0], [1.0]], True),
        ([[1.0, 2], [1.0, 2]], True),
        ([[math.inf], [math.inf]], True),
        ([[1.0], [0.5]], False),
        ([[0.0], [-0.0]], False),
        ([[1], [1.0]], False),
        ([[[1.0, 2.0]], [[1.0, 2.0]]], False),
        ([[1.0], []], False),
        ([[], []], False),
        ([[1.0]], False),  # one row: its own
    ],
)
def test_a_muscles_reward_texts_made_once_for_a_round_are_each_rows_own(
    values: list[list[Any]], shared: bool
) -> None:
    from palaestra.agent.muscle_lanes import _reward_text, _reward_texts

    rows = [[m.InfoDesc(f"r{i}", None, v) for i, v in enumerate(row)] for row in values]
    made = _reward_texts(rows)
    assert (made is not None) is shared
    if made is not None:
        assert made == [_reward_text(row) for row in rows]


def test_a_muscles_reward_texts_are_each_rows_own_where_the_uids_differ() -> None:
    from palaestra.agent.muscle_lanes import _reward_texts

    rows = [[m.InfoDesc("a", None, 1.0)], [m.InfoDesc("b", None, 1.0)]]
    assert _reward_texts(rows) is None


def test_a_muscles_row_keeps_both_rewards_of_one_name_and_counts_both() -> None:
    """(two environments of a phase that name a reward alike: by uid, one would be lost; a
    row's rewards are then a list of each, in the order they came)"""
    from palaestra.agent.muscle_lanes import _reward_text, _reward_texts

    both = [m.InfoDesc("reward", None, 1.0), m.InfoDesc("reward", None, 0.5)]
    text = '[{"uid":"reward","value":1.0},{"uid":"reward","value":0.5}]'
    assert _reward_text(both) == (text, 1.5)
    assert _reward_texts([both, list(both), list(both)]) == [(text, 1.5)] * 3
    # unique uids: by uid, as ever
    assert _reward_text([m.InfoDesc("a", None, 1.0), m.InfoDesc("b", None, 0.5)]) == (
        '{"a":1.0,"b":0.5}',
        1.5,
    )


class SaysFlags(CartPole):
    """CartPole whose batch says ``flags`` for one of ``terminated``, ``truncated`` or
    ``done`` (``which``), one per game."""

    which = "terminated"
    flags: Any = None

    @classmethod
    def update_batch(cls, games: Sequence[Environment], setpoints: dict[str, Any]) -> BatchState:
        state = super().update_batch(games, setpoints)
        setattr(state, cls.which, cls.flags)
        return state


def batch_of(count: int, cls: str = "SaysFlags") -> tuple[Any, list[Any]]:
    from palaestra.core.description.specs import EnvironmentSpec
    from palaestra.environment.batch import Batch
    from palaestra.environment.world import World

    name = f"{__name__}:{cls}"
    games = [
        World(
            f"Environment-pole-{k}",
            environment=EnvironmentSpec(name=name, uid="pole", params={}),
            environment_id=1,
            worker=k,
            seed=3 + k,
        )
        for k in range(count)
    ]
    for game in games:
        game.start_world(reset=False)
    return Batch(games[0]), games


@pytest.mark.parametrize("which", ["terminated", "truncated", "done"])
@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (np.array(["no", "no"]), "array(['no', 'no'], dtype='<U2') (shape (2,), dtype <U2)"),
        ([0, 1], "[0, 1]"),
        (np.array([0.0, 0.5]), "array([0. , 0.5]) (shape (2,), dtype float64)"),
        ([True, None], "[True, None]"),
        ([True, "no"], "[True, 'no']"),
    ],
)
def test_a_batchs_flags_that_are_no_bools_fail_naming_the_environment(
    which: str, flags: Any, said: str
) -> None:
    """As a game's own ``terminated``, ``truncated`` and ``done`` that are no bools do (its
    ``update``): a batch's were made bools as numpy makes them, ``"no"`` and 0.5 True, None
    False, and stored so. (None is a game's own ``terminated`` or ``truncated`` that it does
    not say: not a ``done``.)"""
    from palaestra.core.plugin import PluginContractError

    if said == "[True, None]" and which != "done":
        return  # (see test_a_batchs_flags_may_say_none_for_a_game_that_does_not_say)
    SaysFlags.which, SaysFlags.flags = which, flags
    batch, games = batch_of(2)
    with pytest.raises(PluginContractError) as caught:
        batch.step([(game, {"push": 1}, False) for game in games])
    assert str(caught.value).startswith(
        f"{__name__}:SaysFlags.update_batch returned {which} = {said}, expected one bool per "
        "game (numpy's too)"
    ), str(caught.value)


@pytest.mark.parametrize("which", ["terminated", "truncated"])
@pytest.mark.parametrize("flags", [[True, None], np.array([np.True_, None]), (None, None)])
def test_a_batchs_flags_may_say_none_for_a_game_that_does_not_say(which: str, flags: Any) -> None:
    """A game's own ``update`` may leave ``terminated`` and ``truncated`` None; so may row
    ``k`` of a batch, stored as the game alone stores it."""
    SaysFlags.which, SaysFlags.flags = which, flags
    batch, games = batch_of(2)
    states = batch.step([(game, {"push": 1}, False) for game in games])
    assert [getattr(state, which) for state in states] == [
        None if f is None else True for f in flags
    ]
    assert [state.done for state in states] == [f is not None for f in flags]


@pytest.mark.parametrize(
    "flags", [np.array([False, True]), [False, True], [np.False_, np.True_], (False, True)]
)
def test_a_batchs_flags_as_bools_are_read_as_bools(flags: Any) -> None:
    SaysFlags.which, SaysFlags.flags = "truncated", flags
    batch, games = batch_of(2)
    states = batch.step([(game, {"push": 1}, False) for game in games])
    assert [state.truncated for state in states] == [False, True]
    assert [state.done for state in states] == [False, True]


class EachSays(Counter):
    """A Counter whose ``update`` says ``value`` for ``which`` (``terminated``, ``truncated`` or
    ``done`` of its EnvironmentState; with ``as_tuple`` the ``done`` of a tuple), stepped in
    batches by the default ``update_batch``, which its own reaches through ``super()``."""

    which = "terminated"
    value: Any = None
    as_tuple = False

    def update(self, actuators: Sequence[ActuatorInformation]) -> Any:
        state = super().update(actuators)
        if self.as_tuple:
            return state.sensor_information, state.rewards, self.value
        setattr(state, self.which, self.value)
        return state

    @classmethod
    def update_batch(cls, games: Sequence[Environment], setpoints: dict[str, Any]) -> BatchState:
        return super().update_batch(games, setpoints)


def says(which: str, value: Any, as_tuple: bool = False) -> list[Any]:
    """The states of a step of two :class:`EachSays` games in one batch."""
    EachSays.which, EachSays.value, EachSays.as_tuple = which, value, as_tuple
    batch, games = batch_of(2, "EachSays")
    return batch.step([(game, {"add": 1}, False) for game in games])


@pytest.mark.parametrize(
    ("which", "value", "as_tuple", "problem"),
    [
        ("terminated", "no", False, "an EnvironmentState with terminated = 'no'"),
        ("truncated", 0, False, "an EnvironmentState with truncated = 0"),
        ("truncated", np.array([False]), False, "an EnvironmentState with truncated = array("),
        ("done", "no", False, "done = 'no', expected a bool"),
        ("done", 1.0, True, "done = 1.0, expected a bool"),
    ],
)
def test_the_default_batchs_flags_that_are_no_bools_fail_naming_the_environment(
    which: str, value: Any, as_tuple: bool, problem: str
) -> None:
    """The default ``update_batch`` reads each game's ``terminated``, ``truncated`` and
    ``done`` as a game stepped alone has them read: one that is no bool fails naming the class
    and its ``update`` (they were made bools, ``"no"`` True, and stored so). It fails inside
    the class's own ``update_batch``, whose error the process reports as the contract's."""
    from palaestra.core.plugin import PluginError
    from palaestra.core.supervision.runtime import error_info

    with pytest.raises(PluginError) as caught:
        says(which, value, as_tuple)
    info = error_info("Environment-pole-0", caught.value)
    assert info.kind == "PluginContractError" and not info.traceback
    assert info.message.startswith(f"{__name__}:EachSays.update returned {problem}"), info.message


@pytest.mark.parametrize("which", ["terminated", "truncated", "done"])
def test_the_default_batch_reads_numpys_bools_as_bools(which: str) -> None:
    states = says(which, np.True_ if which == "done" else np.False_)
    assert [type(getattr(state, which)) for state in states] == [bool, bool]
    assert says("done", np.True_, as_tuple=True)[0].done is True


def test_the_default_batch_keeps_flags_its_games_do_not_say() -> None:
    """Where no game says ``terminated`` (or ``truncated``: None, or a tuple), the rows have
    none, as each game's own step's (they said False)."""
    assert [state.terminated for state in says("terminated", None)] == [None, None]
    alone = says("done", False, as_tuple=True)
    assert [(s.done, s.terminated, s.truncated) for s in alone] == [(False, None, None)] * 2


class OneSays(Counter):
    """A Counter whose game of seed 3 says its step ended the episode in a terminal state; the
    others do not say (``terminated`` None), as a game of palaestrAI's that reports ``done``
    alone. Stepped in batches by the default ``update_batch``."""

    def update(self, actuators: Sequence[ActuatorInformation]) -> Any:
        state = super().update(actuators)
        says = self.seed == 3
        return EnvironmentState(
            state.sensor_information, state.rewards, says, terminated=says or None
        )

    @classmethod
    def update_batch(cls, games: Sequence[Environment], setpoints: dict[str, Any]) -> BatchState:
        return super().update_batch(games, setpoints)


def test_a_game_that_does_not_say_terminated_stores_none_beside_one_that_does() -> None:
    """N games of a worker store what N workers of one game store: the default batch stored
    False for a game that does not say ``terminated`` (None, as it stores alone) where another
    game of the round said True. (A round's rows take their flags from the ends its states
    carry.)"""
    batch, games = batch_of(2, "OneSays")
    together = batch.step([(game, {"add": 1}, False) for game in games])
    batch, games = batch_of(2, "OneSays")
    rounds = batch.stepped([(game, {"add": 1}, False) for game in games])
    _, alone = batch_of(2, "OneSays")  # the same two games, each stepped alone
    each = [game.update({"add": 1}) for game in alone]
    assert [s.terminated for s in each] == [True, None]
    assert [s.terminated for s in together] == [s.terminated for s in each]
    assert [tuple(s.terminated) for s in rounds] == [(True,), (None,)]
    assert [s.done for s in together] == [s.done for s in each] == [True, False]
