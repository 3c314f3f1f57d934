"""A worker's games stepped in one call (:meth:`Environment.update_batch`), a round at a time.

With ``envs_per_worker`` N > 1 and an environment class that overrides
:meth:`~palaestra.environment.environment.Environment.update_batch`, the games that act in a
round are stepped in one call with arrays (one per actuator, a row per game) and answer with
arrays (:class:`~palaestra.environment.environment.BatchState`). What each game reports is
then checked per column (a value outside its space names the game that reported it), turned
into each game's observation, and its ``world_states`` rows are shaped for the whole round in
one pass: the rows, the observations and the episodes are those of stepping each game alone
with :meth:`~palaestra.environment.environment.Environment.update`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from palaestra.core.memo import Memo, text_key
from palaestra.core.nonfinite import json_text
from palaestra.core.plugin import PluginContractError, call
from palaestra.core.space_checks import Check, column_inside, value_check
from palaestra.core.spaces import Space
from palaestra.core.turns import ONE, Stepped
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import (
    FLAG,
    column_texts,
    dict_texts,
    object_keys,
    object_text,
    recorded,
    stored_rewards,
    uniform,
)
from palaestra.environment.checks import show
from palaestra.environment.environment import BatchState, steps_in_batches
from palaestra.environment.world import World, stopped


def stepped_in_batches(games: Sequence[World]) -> bool:
    """Whether a worker's ``games`` step with :meth:`Environment.update_batch`: several games
    of a class that overrides it, without a state transformer."""
    cls = type(games[0].env)
    return (
        len(games) > 1
        and steps_in_batches(cls)
        and games[0].transformer is None
        and all(type(game.env) is cls for game in games)
    )


class Batch:
    """Steps the games of a worker that act in a round with one call; ``first``: its first
    game, whose row sink takes the round's rows."""

    def __init__(self, first: World) -> None:
        self.first = first
        self.cls = type(first.env)
        self.rewards: Memo[tuple[list[m.InfoDesc], str]] = Memo()  # by the values
        self.setpoints: Memo[str] = Memo()  # set point JSON text by the items

    def step(
        self,
        moves: Sequence[tuple[World, dict[str, Any], bool]],
        held: list[Callable[[], None]] | None = None,
    ) -> list[m.EnvState]:
        """Step the games of ``moves`` (game, its merged set points, whether an agent asked
        it to stop) at once; each game's state. Their ``world_states`` rows are made now or,
        with ``held``, when its caller calls what it appended there: after sending the
        observations, so that the agents act meanwhile, and before any of these games steps
        or restarts again (the rows read each game's episode, step and lateness then)."""
        states: list[m.EnvState] = self._step(moves, False, held)
        return states

    def stepped(
        self,
        moves: Sequence[tuple[World, dict[str, Any], bool]],
        held: list[Callable[[], None]] | None = None,
    ) -> list[Stepped]:
        """:meth:`step`, each game's state made as the rounds this process plays take it."""
        states: list[Stepped] = self._step(moves, True, held)
        return states

    def _step(
        self,
        moves: Sequence[tuple[World, dict[str, Any], bool]],
        made: bool,
        held: list[Callable[[], None]] | None,
    ) -> Any:
        """:meth:`step` (``made``: each state a :class:`Stepped`, else an ``EnvState``)."""
        games = [game for game, _, _ in moves]
        first = games[0]
        count = len(games)
        arrays = {}
        for template in first.declared.actuators:
            uid, space, default = str(template.uid), template.space, template.value
            values = [setpoints.get(uid, default) for _, setpoints, _ in moves]
            arrays[uid] = _stacked(values, space)
        for game, (_, _, stop) in zip(games, moves, strict=True):
            if stop:  # an agent reached its objective rule: the game's step is its last
                game.stop_requested = True
        first.stepping.begin()
        batch = call(self.cls.update_batch, [game.env for game in games], arrays)
        first.stepping.end()
        columns = self._sensors(games, batch, count)
        rewards, reward_texts = self._rewards(games, batch, count)
        flags = _ends(first, batch, count)
        states, each, ends = self._states(games, columns, rewards, flags, made)
        # (the sensors and whether recording is paused, as at the step; each game's episode,
        # step and lateness are read when the rows are made, before the game steps again)
        taken = (first.declared.full_sensor_uids, first.out.switch.paused())
        rows = partial(
            self._rows,
            games,
            taken,
            moves,
            (columns, each),
            reward_texts,
            ends,
        )
        if held is None:
            rows()
        else:
            held.append(rows)
        return states

    def _states(
        self,
        games: list[World],
        columns: list[list[Any]],
        rewards: list[list[m.InfoDesc]],
        flags: tuple[list[bool], list[bool | None], list[bool | None]],
        made: bool,
    ) -> tuple[list[Any], list[list[Any]], list[tuple[bool, bool | None, bool | None]]]:
        """Each game's state (``made``: a :class:`Stepped`), sensor values and ends; each game
        has taken its step."""
        done, terminated, truncated = flags
        uids = self.first.declared.full_sensor_uids
        states: list[Any] = []
        ends_of = []
        one = ONE
        each = _game_values(columns, len(games))
        for k, (game, values) in enumerate(zip(games, each, strict=True)):
            ends = (
                stopped(game, terminated[k], truncated[k])
                if game.stop_requested
                else (done[k], terminated[k], truncated[k])
            )
            ends_of.append(ends)
            game.advanced(values)
            if made:  # (a state has a value for each sensor uid, in their order)
                states.append(
                    Stepped(
                        zip(uids, values),  # noqa: B905
                        rewards[k],
                        one[ends[0]],
                        one[ends[1]],
                        one[ends[2]],
                    )
                )
            else:
                states.append(
                    m.EnvState(
                        values=values,
                        rewards=rewards[k],
                        done=ends[0],
                        terminated=ends[1],
                        truncated=ends[2],
                    )
                )
        return states, each, ends_of

    def _rows(
        self,
        games: list[World],
        taken: tuple[list[str], bool],
        moves: Sequence[tuple[World, dict[str, Any], bool]],
        values: tuple[list[list[Any]], list[list[Any]]],
        reward_texts: list[str],
        ends_of: list[tuple[bool, bool | None, bool | None]],
    ) -> None:
        """The ``world_states`` rows of the games' last steps (``taken``: the sensors' full uids
        and whether recording was paused at the step; ``values``: the sensors' columns and each
        game's values), shaped for the round in one pass."""
        uids, paused = taken
        columns, each = values
        keys = object_keys(uids)
        out = self.first.out  # (the round's rows go to the first game's sink)
        every = out.every
        storing = out.rows.socket is not None  # (its values need no check: ours)
        environment_id = out.environment_id
        rows: list[tuple[Any, ...]] = []
        size = 0
        # each game's sensors and set points as JSON text, encoded a column at a time (when
        # every step has its row; else the rows' own)
        texts: list[str] | None = None
        setpoint_texts: list[str] | None = None
        if storing and not paused and every == 1:
            texts = column_texts(keys, uids, columns, len(moves))
            setpoint_texts = dict_texts(
                [points for _, points, _ in moves], self.first.declared.prefix
            )
        for k, game in enumerate(games):
            ends = ends_of[k]
            step = game.step
            if game.out.paused != paused:  # (told to the store in order with the rows)
                out.rows.add_shaped(rows, size)
                rows, size = [], 0
                out.rows.flush()
                game.recording()
            game.unrecorded = None
            # (every step's row: no call a game)
            if storing and not paused and (every == 1 or recorded(step - 1, ends[0], every)):
                sensors = texts[k] if texts is not None else object_text(keys, uids, each[k])
                setpoints = (
                    setpoint_texts[k]
                    if setpoint_texts is not None
                    else self._setpoint_text(moves[k][1])
                )
                rows.append(
                    (
                        environment_id,
                        game.worker,
                        game.episode,
                        step,
                        sensors,
                        setpoints,
                        reward_texts[k],
                        FLAG[ends[0]],
                        FLAG[ends[1]],
                        FLAG[ends[2]],
                        None,
                        game.late_by,
                    )
                )
                size += len(sensors) + len(setpoints) + len(reward_texts[k]) + 32
            elif storing and not paused:  # the episode's last if another environment ends it
                game.unrecorded = partial(
                    self._last_row,
                    game,
                    (game.episode, step, game.late_by),
                    (each[k], moves[k][1], reward_texts[k]),
                    ends,
                )
        out.rows.add_shaped(rows, size)

    def _last_row(
        self,
        game: World,
        when: tuple[int, int, float | None],
        values: tuple[list[Any], dict[str, Any], str],
        ends: tuple[bool, bool | None, bool | None],
    ) -> None:
        """The ``world_states`` row of a game's step that `record: {every: N}` left out, made
        once the episode turned out to end there (see :meth:`World.record_last`)."""
        episode, step, late_by = when
        sensor_values, points, reward_text = values
        uids = game.declared.full_sensor_uids
        sensors = object_text(object_keys(uids), uids, sensor_values)
        setpoints = self._setpoint_text(points)
        out = self.first.out
        row = (
            out.environment_id,
            game.worker,
            episode,
            step,
            sensors,
            setpoints,
            reward_text,
            FLAG[ends[0]],
            FLAG[ends[1]],
            FLAG[ends[2]],
            None,
            late_by,
        )
        out.rows.add_shaped([row], len(sensors) + len(setpoints) + len(reward_text) + 32)

    def _sensors(self, games: list[World], batch: Any, count: int) -> list[list[Any]]:
        """Each declared sensor's values (JSON), a column of one per game; checked."""
        first = games[0]
        if not isinstance(batch, BatchState):
            raise PluginContractError(
                first.env,
                "update_batch",
                f"returned {type(batch).__name__}, expected a BatchState",
            )
        reported = {str(s.uid): s for s in batch.sensor_information}
        if len(reported) != len(batch.sensor_information) or reported.keys() != set(
            first.declared.sensor_uids
        ):
            raise PluginContractError(
                first.env,
                "update_batch",
                f"reported sensors {sorted(reported)}; it must report each sensor its start "
                f"declared once: {first.declared.sensor_uids}",
            )
        columns = []
        for index, uid in enumerate(first.declared.sensor_uids):
            info = reported[uid]
            space = first.declared.spaces[uid]
            values = _column(first, "sensor", info, space, count)
            if first.declared.value_checks is not None:
                _check(games, "sensor", info, space, values, first.declared.value_checks[index])
            columns.append(_json_column(values, space))
        return columns

    def _rewards(
        self, games: list[World], batch: BatchState, count: int
    ) -> tuple[list[list[m.InfoDesc]], list[str]]:
        """Each game's rewards as the agents get them, and as JSON text for its row."""
        first = games[0]
        described = []
        for reward in batch.rewards:
            space = reward.space
            values = _column(first, "reward", reward, space, count)
            if first.declared.check_rewards:
                _check(games, "reward", reward, space, values, value_check(space))
            desc = m.InfoDesc(
                str(reward.uid), space.to_text() if space is not None else None, None
            )
            described.append((desc, _json_column(values, space)))
        memo = self.rewards

        def make(k: int) -> tuple[list[m.InfoDesc], str]:
            descs = [m.InfoDesc(d.uid, d.space, column[k]) for d, column in described]
            return descs, json_text(stored_rewards(descs))

        if all(uniform(column) for _, column in described):  # (every game's the same)
            key = text_key([(d.uid, column[0]) for d, column in described])
            descs, text = memo.get_or_make(key, make, 0) if memo.pays else make(0)
            return [descs] * count, [text] * count
        rewards, texts = [], []
        for k in range(count):
            if memo.pays:
                key = text_key([(d.uid, column[k]) for d, column in described])
                hit = memo.get_or_make(key, make, k)
            else:
                hit = make(k)
            rewards.append(hit[0])  # (the same list for the same rewards: summed once)
            texts.append(hit[1])
        return rewards, texts

    def _setpoint_text(self, setpoints: dict[str, Any]) -> str:
        """The JSON text of a row's set points (by full uid: the games share the prefix),
        kept by their items where each value is an int or a str (equal ones are written
        alike: not so 1, 1.0 and True)."""
        items = tuple(setpoints.items())
        for _, value in items:
            if type(value) not in _EXACT:
                return self._full_uids(setpoints)
        memo = self.setpoints
        return (
            memo.get_or_make(items, self._full_uids, setpoints)
            if memo.pays
            else self._full_uids(setpoints)
        )

    def _full_uids(self, setpoints: dict[str, Any]) -> str:
        prefix = self.first.declared.prefix
        return json_text({prefix + uid: value for uid, value in setpoints.items()})


_EXACT = (int, str)
"""The types whose equal values have one JSON text."""


def _game_values(columns: list[list[Any]], count: int) -> list[list[Any]]:
    """Each of ``count`` games' sensor values, from a column per sensor."""
    return list(map(list, zip(*columns, strict=True))) if columns else [[] for _ in range(count)]


def _stacked(values: list[Any], space: Space | None) -> Any:
    """The set points of the games as one array of the space's dtype (an object array where
    one is missing or there is no space)."""
    if space is not None and all([v is not None for v in values]):
        shape = getattr(space, "shape", None)
        dtype = getattr(space, "dtype", None)
        if shape is not None and dtype is not None:
            try:
                return np.asarray(values, dtype=dtype).reshape(len(values), *shape)
            except (TypeError, ValueError):
                pass
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def _column(first: World, kind: str, info: Any, space: Space | None, count: int) -> Any:
    """The stacked values of a sensor or reward, with a row per game."""
    values = info.value
    if not isinstance(values, np.ndarray):
        values = np.asarray(values)
    shape = getattr(space, "shape", None)
    if values.shape[:1] != (count,) or (shape is not None and values.shape[1:] != shape):
        expected = f"({count}, {', '.join(map(str, shape))})" if shape is not None else count
        raise PluginContractError(
            first.env,
            "update_batch",
            f"returned {kind} '{info.uid}' with values of shape {values.shape}, expected "
            f"{expected}: one row per game",
        )
    return values


def _check(
    games: list[World],
    kind: str,
    info: Any,
    space: Space | None,
    values: Any,
    check: Check,
) -> None:
    """Fail, naming the first game whose value is outside ``space``."""
    if space is None or column_inside(space, values):
        return
    for k, value in enumerate(values):
        if not check(value):
            raise PluginContractError(
                games[k].env,
                "update_batch",
                f"returned {kind} '{info.uid}' = {show(value)} for game {games[k].worker} "
                f"(row {k} of the batch), which is not in its declared space {space}",
            )


def _json_column(values: Any, space: Space | None) -> list[Any]:
    """The values of a column as JSON values, one per game."""
    if space is not None:
        return list(space.to_json_value(values))
    return list(values.tolist())


def _ends(
    first: World, batch: BatchState, count: int
) -> tuple[list[bool], list[bool | None], list[bool | None]]:
    """``done``, ``terminated`` and ``truncated`` of each game, as plain values."""
    terminated: list[bool | None] = (
        [None] * count
        if batch.terminated is None
        else _flags(first, "terminated", batch.terminated, count)
    )
    truncated: list[bool | None] = (
        [None] * count
        if batch.truncated is None
        else _flags(first, "truncated", batch.truncated, count)
    )
    if batch.done is not None:
        done = [bool(d) for d in _flags(first, "done", batch.done, count)]
    else:
        done = [bool(a) or bool(b) for a, b in zip(terminated, truncated, strict=True)]
    return done, terminated, truncated


def _flags(first: World, name: str, flags: Any, count: int) -> list[bool | None]:
    """The games' ``name`` (``terminated``, ``truncated``, ``done``) as plain bools (None for
    a game that does not say ``terminated`` or ``truncated``).

    Raises:
        PluginContractError: ``flags`` are not bools (numpy's too; or None, but for
            ``done``), as a game's own ``update`` may not say them otherwise
            (:func:`~palaestra.environment.checks.end_flag`), or not one per game.
    """
    values = np.asarray(flags)
    if values.dtype.kind != "b":  # ("no", 0.5 and None are no bools, though numpy makes them)
        unsaid = _unsaid(flags) if name != "done" else None
        if unsaid is None:
            said = "one bool per game (numpy's too)"
            if name != "done":
                said += ", or None for a game that does not say"
            raise PluginContractError(
                first.env, "update_batch", f"returned {name} = {show(flags)}, expected {said}"
            )
        values = np.asarray(unsaid, dtype=object)
    values = values.reshape(-1)
    if values.shape != (count,):
        raise PluginContractError(
            first.env,
            "update_batch",
            f"returned {values.shape[0]} flags for {count} games (terminated, truncated and "
            "done have one per game)",
        )
    flags_list: list[bool | None] = values.tolist()
    return flags_list


def _unsaid(flags: Any) -> list[bool | None] | None:
    """``flags`` (a game's ``terminated`` or ``truncated`` each) as bools and None, where some
    game does not say (None, as its own ``update`` may: it is stored so, as the game alone
    stores it); None if any is neither a bool (numpy's too) nor None."""
    try:
        items = list(flags)
    except TypeError:
        return None
    if not all(flag is None or isinstance(flag, bool | np.bool_) for flag in items):
        return None
    return [None if flag is None else bool(flag) for flag in items]
