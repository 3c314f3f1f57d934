"""A Muscle serving its worker's games (one, or ``phase_config.envs_per_worker``): a round a
message.

Whoever plays the worker's games (:mod:`palaestra.core.rounds`: the environment process that
hosts them, over the Muscle's link to it, or the simulation controller, over its socket) sends
one :class:`~palaestra.core.wire.messages.AgentSteps` per step round with the agent's observation
of each game it acts in (and of each episode that ended). For each observation, the Muscle
completes the game's last transition (its own objective memory, its ``muscle_actions`` row
under the game's lane as worker), sends the round's experience to the Brain in one
:class:`~palaestra.core.wire.messages.Experiences`, applies the Brain's one answer, calls
:meth:`~palaestra.agent.muscle.Muscle.propose_actions_batch` once for the games that act and
answers with one :class:`~palaestra.core.wire.messages.LaneActions`.

A game's lane is ``worker * N + i`` for its index ``i``: the store, the Brain's memory and the
statistics see each game as a worker of its own.
"""

from __future__ import annotations

import contextlib
import pickle
import reprlib
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, NoReturn, Protocol

import numpy as np

from palaestra.agent.brain_link import BrainLink
from palaestra.agent.filter import FilterChain
from palaestra.agent.hot_reload import HotReload
from palaestra.agent.lazy_rows import RewardRows
from palaestra.agent.memory import Memory, Row
from palaestra.agent.muscle import Muscle, proposal
from palaestra.agent.muscle_records import MuscleRecords
from palaestra.agent.muscle_schema import Schema, unsendable
from palaestra.agent.objective import Objective, objective_values
from palaestra.agent.objective_stop import ObjectiveStop
from palaestra.agent.previous import Previous
from palaestra.core.description.specs import UPDATE_LAG_ASYNC, AgentSpec
from palaestra.core.information import (
    ActuatorInformation,
    SensorInformation,
    json_value,
    rows_of,
)
from palaestra.core.nonfinite import json_text
from palaestra.core.plugin import PluginContractError, call
from palaestra.core.spaces import Box
from palaestra.core.supervision.hotloop import HotLoop
from palaestra.core.wire import messages as m
from palaestra.core.wire.channel import Channel, PeerGone, send_then
from palaestra.core.wire.records import (
    FLAG,
    column_texts,
    object_keys,
    object_text,
    recorded,
    reward_total,
    stored_rewards,
    unencodable_key,
    uniform,
)


class Host(Protocol):
    """The Muscle process as its rounds use it
    (:class:`~palaestra.agent.muscle_process.MuscleProcess`): its plug-ins (swapped by a hot
    reload), its agent's schema, its link to the Brain, its rows and where it stands."""

    name: str
    worker: int
    agent: AgentSpec
    muscle: Muscle
    objective: Objective
    filters: FilterChain
    objective_stop: ObjectiveStop | None
    schema: Schema
    brain: BrainLink
    out: MuscleRecords  # its rows, statistics and plug-in records
    reload: HotReload | None
    hot: HotLoop

    @property
    def end_phase(self) -> bool:
        """Its Brain reached its phase rule."""

    @property
    def evaluation(self) -> bool:
        """The episode is an evaluation rollout."""

    def reload_check(self, worker: int, episode: int, step: int) -> None:
        """Look for changed plug-in files now (a hot reload is on)."""

    def send_to(self, link: Channel, data: bytes) -> None:
        """Send ``data`` on ``link`` (a peer that hung up: its parent reports why)."""


class _Game:
    """What the Muscle keeps of one game: its lane, episode, last action and objective
    memory."""

    __slots__ = (
        "lane",
        "episode",
        "previous",
        "memory",
        "stop",
        "started",
        "objective_stop",
    )

    def __init__(self, lane: int, memory: Memory, objective_stop: ObjectiveStop | None) -> None:
        self.lane = lane
        self.episode = 0
        self.previous: Previous | None = None  # its last action, until its rewards come
        self.memory = memory
        self.stop = False  # the agent's objective rule holds in this game
        self.started = False  # an episode of this game began (the next one resets)
        self.objective_stop = objective_stop  # the agent's objective rules, on this game's values


_Entry = tuple[int, _Game, m.AgentStep, Previous | None, int]
"""An observation of a round: its position, game, the game's last action and episode."""
_Acting = tuple[int, _Game, m.AgentStep]
"""A game that acts in a round: its position in the round, the game, its observation."""
_Inputs = tuple[list[list[SensorInformation]], list[list[ActuatorInformation]]]
"""What the Muscle is given for the games that act: each one's sensors and actuators."""
_Columns = dict[str, Any]
"""What a Muscle that acts on columns is given: each sensor's values in the games that act."""
_Kept = tuple[_Game, Previous, m.AgentStep, float, int]
"""A completed transition that gets a ``muscle_actions`` row: its game, its action, the step
that completes it, its objective value and its episode."""


class MuscleLanes:
    """The games of one Muscle process, played round by round over the driver's link."""

    def __init__(self, process: Host, lanes: int) -> None:
        self.process = process
        agent = process.agent
        self.games = [
            _Game(
                lane,
                Memory(agent.muscle_memory.rows, agent.muscle_memory.bytes),
                ObjectiveStop(agent.objective_stop) if agent.objective_stop else None,
            )
            for lane in range(process.worker * lanes, (process.worker + 1) * lanes)
        ]
        # every game of the round begins an episode (one game: its first step; several: their
        # first round): the Brain's answer is waited for, as for an episode's end
        self.begins = False
        self.stale = False  # update_lag async: the round is acted on before an answer came
        self.keys_of: list[str] | None = None  # the sensor uids whose row keys are ``keys``
        self.keys: list[str] = []
        self.rewards = RewardRows(process.schema.spaces)  # a memory row's, built when read
        self.stats: Callable[[], object] | None = None  # a round's statistics, stored once sent
        self.rows: Callable[[], object] | None = None  # its muscle_actions rows, made once sent

    @property
    def by_columns(self) -> bool:
        """Whether the Muscle acts on a round's columns (it overrides
        ``propose_actions_columns``, and the agent has no filters; asked each round)."""
        process = self.process
        overrides = (
            type(process.muscle).propose_actions_columns is not Muscle.propose_actions_columns
        )
        return overrides and not process.filters

    @property
    def batched(self) -> bool:
        """Whether the Muscle acts in all games in one call (it overrides
        ``propose_actions_batch``; asked each round, as a hot reload may change the class)."""
        return type(self.process.muscle).propose_actions_batch is not Muscle.propose_actions_batch

    def play(self, link: Channel) -> None:
        """Answer the driver's rounds over ``link`` until its last."""
        process = self.process
        while True:
            try:
                message = m.decode(link.recv())
            except PeerGone:
                process.hot.idle()  # its parent reports why
            if not isinstance(message, m.AgentSteps):
                raise TypeError(f"{process.name}: {type(message).__name__} from {link.peer}")
            self.serve(message, partial(process.send_to, link))
            if message.last:
                return

    def serve(self, message: m.AgentSteps, send: Callable[[bytes], object]) -> m.LaneActions:
        """Play a round of the driver's and ``send`` the answer (encoded, and returned); a hot
        reload looks for changed files first."""
        process = self.process
        if process.reload is not None and message.steps and process.reload.due():
            lane = self.games[message.lanes[0]].lane  # (its rows name the round's first game)
            process.reload_check(lane, message.episodes[0], message.steps[0].step)
        return self.answer(message, lambda answer: send(self._encoded(message, answer)))

    def answer(
        self, message: m.AgentSteps, send: Callable[[m.LaneActions], object] | None = None
    ) -> m.LaneActions:
        """Play the round, ``send`` its answer (if given) and return it. What waits for the
        answer to be out is done after sending, while the games step: the round's rows and
        statistics (see :meth:`round`), and with ``update_lag`` 1 what is left of the round.
        The rows and statistics of an episode that ended leave the Muscle with its end (a run
        killed later keeps them); a Muscle that fails to act keeps the rows of the transitions
        it completed."""
        ends = message.last or any([step.done for step in message.steps])
        try:
            answer, learn = self.round(message, ends)
        except BaseException:
            held = self._held()
            if held is not None:
                with contextlib.suppress(Exception):
                    held()
            raise
        if ends:  # its rows are complete before the answer (see round)
            self.process.out.push()
        after = self._held()
        if send is None:
            if after is not None:
                after()
        elif after is None:
            send(answer)
        else:  # (also if sending fails: what a stop pushes keeps them)
            send_then(partial(send, answer), after)
        if learn is not None:
            learn()
        return answer

    def _held(self) -> Callable[[], object] | None:
        """What waits for the round's answer to be out (each taken: done once): its rows, then
        its statistics (also if the rows fail, whose error is raised)."""
        rows, self.rows = self.rows, None
        stats, self.stats = self.stats, None
        if rows is None or stats is None:
            return rows or stats
        return partial(send_then, rows, stats)

    def _encoded(self, message: m.AgentSteps, answer: m.LaneActions) -> bytes:
        """The answer to send; set points that cannot be sent fail the round naming the
        Muscle, the game's step and the value."""
        try:
            return m.encode(answer)
        except (TypeError, ValueError, OverflowError) as exc:
            for setpoints, step in zip(answer.setpoints, message.steps, strict=True):
                if unencodable_key(setpoints) is not None:
                    episode = self.games[message.lanes[0]].episode
                    muscle = self.process.muscle
                    raise unsendable(muscle, setpoints, step.step, episode, exc) from None
            raise

    def round(
        self, message: m.AgentSteps, ends: bool
    ) -> tuple[m.LaneActions, Callable[[], object] | None]:
        """One step round (``ends``: it ends an episode of one of its games, or is the phase's
        last): complete the transitions, consult the Brain, act in every game that goes on;
        the answer, and what is left to do after sending it.

        With ``update_lag`` 1 (and no objective rule, whose stop the transitions decide, no
        evaluation, and a round in which a game goes on and not every game begins an episode)
        the Muscle acts first, with the Brain's answer to the last round, and completes the
        transitions and tells the Brain after answering: while the games step. In a round
        that ends an episode the transitions (their rows) are completed before the answer:
        the environment tells of the end once its agents answered, and by then its rows must
        be the Muscle's to push; only the Brain is told after answering. Otherwise the Muscle
        completes the transitions and tells its Brain before it acts, and shapes the round's
        ``muscle_actions`` rows once its answer is sent (:attr:`rows`), unless the round ends
        an episode (then while the Brain thinks).
        """
        process = self.process
        count = len(message.steps)
        if not count:  # no game played at all
            return m.LaneActions(setpoints=[], stop=[], end_phase=process.end_phase), None
        entries, acting = self._entries(message)
        setpoints: list[dict[str, Any]] = [{}] * count
        stop = [False] * count
        first_acts = (
            acting
            and process.brain.update_lag == 1
            and process.objective_stop is None
            and not process.evaluation
            and not self.begins
        )
        if first_acts:
            if process.brain.awaiting:
                process.brain.answer()
            later: Callable[[], object]
            if ends:  # (its rows before the answer, the Brain told after)
                items, kept = self._complete_all(entries)
                self._rows(kept)
                later = partial(self._consult, items, False)
            else:
                later = partial(self._learn, entries, False)
            each = self._act(acting, setpoints, stop)
            return self._answer(message, setpoints, stop, each, ends), later
        # (what the Muscle is given made while the Brain thinks; the round's rows once its
        # answer is sent, while the games step, unless it ends an episode)
        inputs = self._learn(entries, not acting, acting, later_rows=not ends)
        each = bool(acting) and self._act(acting, setpoints, stop, inputs)
        return self._answer(message, setpoints, stop, each, ends), None

    def _entries(self, message: m.AgentSteps) -> tuple[list[_Entry], list[_Acting]]:
        """Each observation with its game, the game's last action (the one it completes) and
        episode; and the games that act. A game that begins an episode is reset, one whose
        episode ended forgets its action."""
        games = self.games
        entries = []
        acting = []
        begun = 0
        for k, (index, episode, step) in enumerate(
            zip(message.lanes, message.episodes, message.steps, strict=True)
        ):
            game = games[index]
            if episode != game.episode or not game.started:  # (an agent may not act first)
                self._begin(game, episode)
                begun += 1
            entries.append((k, game, step, game.previous, game.episode))
            if step.done:
                game.previous = None
            else:
                acting.append((k, game, step))
        self.begins = begun == len(entries)
        return entries, acting

    def _learn(
        self,
        entries: list[_Entry],
        all_done: bool,
        acting: Sequence[_Acting] = (),
        later_rows: bool = False,
    ) -> _Inputs | _Columns | None:
        """Complete each game's transition and tell the Brain; while it thinks, shape the
        round's rows (``later_rows``: once the answer is sent, :attr:`rows`) and make what the
        Muscle is given for the games ``acting`` (returned; None if none act)."""
        items, kept = self._complete_all(entries)
        inputs: _Inputs | _Columns | None = None
        if later_rows and kept:
            self.rows = partial(self._rows, kept)

        def meanwhile() -> None:
            nonlocal inputs
            if not later_rows:
                self._rows(kept)
            if acting:
                inputs = self._inputs(acting)

        self._consult(items, all_done, meanwhile)
        return inputs

    def _complete_all(self, entries: list[_Entry]) -> tuple[list[m.Experience], list[_Kept]]:
        """Complete each game's transition (its memory, then the Objective's values of the
        round's memories in one call): the experiences to tell the Brain, and what the
        round's ``muscle_actions`` rows are shaped from (together, :meth:`_rows`)."""
        process = self.process
        every = process.out.every
        each_step = every == 1  # (every step's row: no call a game)
        name = process.name
        reward_rows = self.rewards
        memories: list[Memory] = []
        rows: list[Row] = []  # (each completed transition's memory row, its objective set below)
        for _, game, step, last, _ in entries:
            if last is not None and step.rewards is not None:
                ends = (step.done, step.terminated, step.truncated)
                memory = game.memory
                parts = last.parts
                if parts is not None:  # (a row of its values: its objects made when read)
                    maker, amounts = reward_rows.made(step.rewards)
                    source = (last.sensor_values, last.setpoint_values, maker, amounts)
                    rows.append(memory.add_values(name, parts, source, ends))
                else:
                    rewards = reward_rows(step.rewards)
                    row = memory.add_transition(name, last.sensors, last.setpoints, rewards, ends)
                    rows.append(row)
                memories.append(memory)
        values = objective_values(process.objective, memories)
        at = 0  # (the next completed transition's row and value)
        items: list[m.Experience] = []
        kept: list[_Kept] = []  # their rows
        for _, game, step, previous, episode in entries:
            if previous is not None and step.rewards is not None:
                value = rows[at].objective = values[at]
                at += 1
                if game.objective_stop is not None:
                    game.stop = game.objective_stop.reached(value)
                kept_row = each_step or recorded(previous.step, step.done, every)
                if kept_row and not previous.paused:
                    kept.append((game, previous, step, value, episode))
                items.append(
                    m.Experience(
                        worker=game.lane,
                        transition=m.Transition(
                            previous.seen_values, previous.setpoint_values, step.rewards
                        ),
                        data=previous.data,
                        done=step.done,
                        episode=episode,
                        step=step.step,
                        objective=value,
                        terminated=step.terminated,
                        truncated=step.truncated,
                    )
                )
            else:
                items.append(
                    m.Experience(
                        worker=game.lane,
                        transition=None,
                        data=previous.data if previous is not None else None,
                        done=step.done,
                        episode=episode,
                        step=step.step,
                    )
                )
        return items, kept

    def _rows(self, kept: list[_Kept]) -> None:
        """Buffer the round's ``muscle_actions`` rows, their sensors and rewards encoded for
        the round at once where they can be (see :meth:`_texts`)."""
        if not kept:
            return
        uids = self.process.schema.sensor_uids
        if uids is not self.keys_of:  # (the sensors of the episode: their keys made once)
            self.keys_of, self.keys = uids, object_keys(uids)
        keys = self.keys
        texts, reward_texts = self._texts(kept, keys, uids)
        shaped: list[tuple[Any, ...]] = []
        size = 0
        agent_id = self.process.out.agent_id
        reward_text = _reward_text
        flag = FLAG
        for j, (game, previous, step, value, episode) in enumerate(kept):
            rewards = step.rewards or []
            try:
                sensors = (
                    texts[j]
                    if texts is not None
                    else object_text(keys, uids, previous.sensor_values)
                )
                setpoints = json_text(previous.setpoint_values)  # (as fast as a column's)
                rewards_text, total = (
                    reward_texts[j] if reward_texts is not None else reward_text(rewards)
                )
            except (TypeError, ValueError, OverflowError) as exc:
                self._unencodable(uids, previous, step, value, episode, exc)
            shaped.append(
                (
                    agent_id,
                    game.lane,
                    episode,
                    previous.step,
                    sensors,
                    setpoints,
                    rewards_text,
                    total,
                    value,
                    flag[step.done],
                    flag[step.terminated],
                    flag[step.truncated],
                    flag[previous.stale],
                )
            )
            size += len(sensors) + len(setpoints) + len(rewards_text) + 48
        self.process.out.rows.add_shaped(shaped, size)

    @staticmethod
    def _texts(
        kept: list[_Kept], keys: list[str], uids: list[str]
    ) -> tuple[list[str] | None, list[tuple[str, float | None]] | None]:
        """The JSON text of the round's rows' sensors (encoded a column at a time) and rewards
        with their totals (see :func:`_reward_texts`); None for those each row makes alone
        (where one cannot be made, it is named)."""
        texts: list[str] | None = None
        if len(kept) > 1 and all([len(row[1].sensor_values) == len(uids) for row in kept]):
            columns = [[row[1].sensor_values[i] for row in kept] for i in range(len(uids))]
            with contextlib.suppress(TypeError, ValueError, OverflowError):
                texts = column_texts(keys, uids, columns, len(kept))
        return texts, _reward_texts([row[2].rewards or [] for row in kept])

    def _unencodable(
        self,
        uids: list[str],
        previous: Previous,
        step: m.AgentStep,
        value: float,
        episode: int,
        exc: Exception,
    ) -> NoReturn:
        """Fail naming the value of a ``muscle_actions`` row that has no JSON text."""
        self.process.out.rows.unencodable(
            m.MuscleActionRow(
                episode,
                previous.step,
                dict(zip(uids, previous.sensor_values, strict=True)),
                previous.setpoint_values,
                stored_rewards(step.rewards or []),
                value,
                step.done,
            ),
            exc,
        )

    def _answer(
        self,
        message: m.AgentSteps,
        setpoints: list[dict[str, Any]],
        stop: list[bool],
        each: bool,
        ends: bool,
    ) -> m.LaneActions:
        """The answer to the round; the Muscle's statistics and records of its call are stored
        (under the round's first game) once it is sent (:attr:`stats`), in a round that
        ``ends`` an episode before (they leave with its end). Where the Muscle was called for
        ``each`` game, each call's were stored under its game."""
        process = self.process
        answer = m.LaneActions(setpoints=setpoints, stop=stop, end_phase=process.end_phase)
        if each:
            return answer
        first = message.steps[0]
        lane = self.games[message.lanes[0]]
        self.stats = partial(process.out.add, process.muscle, lane.lane, lane.episode, first.step)
        if ends:
            self.stats()
            self.stats = None
        return answer

    def _begin(self, game: _Game, episode: int) -> None:
        """A game begins an episode: the Muscle is reset before each but the game's first."""
        if game.started or episode > 0:  # (a resumed phase's first episode too)
            call(self.process.muscle.reset)
            if len(self.games) == 1:  # (several games draw on in the spaces they share)
                self.process.schema.seed_actuators()
        game.started = True
        game.episode = episode
        game.previous = None  # (its stop holds on: a rule that held at the end still does)

    def _consult(
        self,
        items: list[m.Experience],
        all_done: bool,
        meanwhile: Callable[[], object] | None = None,
    ) -> None:
        """Send the round's experience to the Brain and do ``meanwhile`` (off the path of a
        step: the Brain thinks); apply its answer now (``update_lag`` 0, the first round, the
        last) or before the next round (``update_lag`` 1)."""
        process = self.process
        brain = process.brain
        if not process.evaluation:
            experiences = m.encode(m.Experiences(worker=process.worker, items=items))
            if brain.update_lag == UPDATE_LAG_ASYNC:  # settled when a round has no game going on
                self.stale = brain.send_async(experiences, all_done)
            else:
                brain.tell(experiences)
                if meanwhile is not None:
                    meanwhile()
                    meanwhile = None
                if brain.update_lag == 0 or self.begins or all_done:
                    brain.answer()
        if meanwhile is not None:
            meanwhile()

    def _inputs(self, acting: Sequence[_Acting]) -> _Inputs | _Columns:
        """What the Muscle is given for the games that act: each game's sensors and the
        actuators it sets, or (:attr:`by_columns`) each sensor's column (made while the Brain
        thinks, see :meth:`round`)."""
        schema = self.process.schema
        values = [step.values for _, _, step in acting]
        if self.by_columns:
            return sensor_columns(schema.sensor_uids, schema.sensor_spaces, values)
        sensors = _sensors(schema.sensor_uids, schema.sensor_spaces, values)
        # each game its own objects: a Muscle may set the values of those it is given
        availables = rows_of(
            ActuatorInformation, schema.actuator_uids, schema.actuator_spaces, None, len(acting)
        )
        return sensors, availables

    def _act(
        self,
        acting: list[_Acting],
        setpoints: list[dict[str, Any]],
        stop: list[bool],
        inputs: _Inputs | _Columns | None = None,
    ) -> bool:
        """Call the Muscle for the games that act (once, or once per game) with ``inputs``
        (made now if not given); fill in their set points. Whether the calls were per game
        (each recorded its game's statistics)."""
        process = self.process
        schema = process.schema
        if inputs is None:
            inputs = self._inputs(acting)
        if isinstance(inputs, dict):
            self._act_columns(acting, setpoints, stop, inputs)
            return False
        sensors, availables = inputs
        seen_values: list[list[Any]]
        each = bool(process.filters) or not self.batched
        if each:  # one call per game, as with one game
            chosen, data, seen_values = self._each(acting, sensors, availables)
        else:
            chosen, data = self._batch(sensors, availables)
            seen_values = [step.values for _, _, step in acting]
        paused = process.out.switch.paused()
        stale = self.stale if process.brain.update_lag == UPDATE_LAG_ASYNC else None
        muscle = process.muscle
        for (k, game, step), game_sensors, game_setpoints, game_data, game_seen in zip(
            acting, sensors, chosen, data, seen_values, strict=True
        ):
            values = schema.setpoint_values(muscle, game_setpoints, step.step, game.episode)
            setpoints[k] = values
            stop[k] = game.stop
            game.previous = Previous(
                step.step,
                game_sensors,
                list(game_setpoints),
                step.values,
                values,
                _pickled(
                    game_data, muscle, "propose_actions" if each else "propose_actions_batch"
                ),
                game_seen,
                stale,
                paused,
            )
        return each

    def _act_columns(
        self,
        acting: list[_Acting],
        setpoints: list[dict[str, Any]],
        stop: list[bool],
        columns: _Columns,
    ) -> None:
        """The Muscle's ``propose_actions_columns`` for the games that act, its set points
        checked a column at a time; each game's set points and last action (its sensor and
        set point objects made when a memory row is first read)."""
        process = self.process
        schema = process.schema
        muscle = process.muscle
        count = len(acting)
        chosen, data = proposed_columns(
            muscle, call(muscle.propose_actions_columns, columns, schema.actuators(), count), count
        )

        def where(j: int) -> str:
            _, game, step = acting[j]
            return f"in game {game.lane} at step {step.step} of episode {game.episode}"

        values = [
            (uid, schema.setpoint_column(muscle, uid, column, count, where))
            for uid, column in chosen.items()
        ]
        parts = schema.parts
        paused = process.out.switch.paused()
        stale = self.stale if process.brain.update_lag == UPDATE_LAG_ASYNC else None
        method = "propose_actions_columns"
        pickled = None if data is None else [_pickled(item, muscle, method) for item in data]
        only = values[0] if len(values) == 1 else None  # (one actuator: a dict, no loop)
        for j, (k, game, step) in enumerate(acting):
            if only is not None:
                game_setpoints = {only[0]: only[1][j]}
            else:
                game_setpoints = {uid: column[j] for uid, column in values}
            setpoints[k] = game_setpoints
            stop[k] = game.stop
            seen = step.values
            game.previous = Previous(
                step.step,
                (),  # (its memory row's objects: made of its values when read, by parts)
                (),
                seen,
                game_setpoints,
                None if pickled is None else pickled[j],
                seen,
                stale,
                paused,
                parts,
            )

    def _each(
        self,
        acting: list[_Acting],
        sensors: list[list[SensorInformation]],
        availables: list[list[ActuatorInformation]],
    ) -> tuple[list[Sequence[ActuatorInformation]], list[Any], list[list[Any]]]:
        """The Muscle's ``propose_actions`` (through its filters, if any) once per game, as one
        game per worker calls it: what it adds with ``add_statistics`` in a call is the
        statistics of that game's step (its lane's row), so a Muscle written for one game
        works unchanged."""
        process = self.process
        out = process.out
        muscle = process.muscle
        chosen: list[Sequence[ActuatorInformation]] = []
        data: list[Any] = []
        seen_values: list[list[Any]] = []
        for (_, game, step), game_sensors, game_available in zip(
            acting, sensors, availables, strict=True
        ):
            if process.filters:
                seen, game_setpoints, game_data = process.filters.act(
                    muscle.propose_actions, game_sensors, game_available
                )
                seen_values.append([json_value(s) for s in seen])
            else:
                game_setpoints, game_data = proposal(
                    muscle, call(muscle.propose_actions, game_sensors, game_available)
                )
                seen_values.append(step.values)
            chosen.append(game_setpoints)
            data.append(game_data)
            out.add(muscle, game.lane, game.episode, step.step)
        return chosen, data, seen_values

    def _batch(
        self, sensors: list[list[SensorInformation]], available: list[list[ActuatorInformation]]
    ) -> tuple[list[Sequence[ActuatorInformation]], list[Any]]:
        """The Muscle's ``propose_actions_batch``, its answer checked."""
        muscle = self.process.muscle
        result: Any = call(muscle.propose_actions_batch, sensors, available)
        count = len(sensors)
        try:
            chosen, data = result
            chosen, data = list(chosen), list(data)
        except (TypeError, ValueError):
            chosen = data = None
        if chosen is None or data is None or len(chosen) != count or len(data) != count:
            raise PluginContractError(
                muscle,
                "propose_actions_batch",
                f"returned {type(result).__name__}: expected a pair of lists with {count} "
                "items each (the set points and the data for the Brain of each game, in the "
                "order of the sensors)",
            )
        return chosen, data


def _sensors(
    uids: list[str], spaces: list[Any], values: list[list[Any]]
) -> list[list[SensorInformation]]:
    """Each game's sensors, their values decoded by space: the values of a sensor with a
    box-like space (an array of its shape) decoded for every game at once, each game's value
    a row of that array (the array ``from_json_value`` gives, of the same dtype and shape)."""
    count = len(values)
    if count == 1:  # one game: each value decoded alone
        return [
            [
                SensorInformation(v if space is None else space.from_json_value(v), space, uid)
                for uid, space, v in zip(uids, spaces, values[0], strict=True)
            ]
        ]
    columns = [  # (an array's rows: each game's value)
        list(column) if type(column) is np.ndarray else column
        for column in sensor_columns(uids, spaces, values).values()
    ]
    return rows_of(SensorInformation, uids, spaces, columns, count)


def sensor_columns(uids: list[str], spaces: list[Any], values: list[list[Any]]) -> _Columns:
    """Each sensor's values in the games, decoded by its space: an array of ``(games,
    *shape)`` for a box-like space (a row per game: the array ``from_json_value`` gives),
    else a list of each game's value."""
    count = len(values)
    columns: _Columns = {}
    for i, (uid, space) in enumerate(zip(uids, spaces, strict=True)):
        column: Any = [game[i] for game in values]
        if space is not None and type(space).from_json_value is Box.from_json_value:
            try:
                column = np.asarray(column, dtype=space.dtype).reshape(count, *space.shape)
            except (TypeError, ValueError):  # (each alone, as one game would)
                column = [space.from_json_value(v) for v in column]
        elif space is not None:
            column = [space.from_json_value(v) for v in column]
        columns[uid] = column
    return columns


def _pickled(data: Any, muscle: Muscle, method: str) -> bytes | None:
    """The data for a Brain as it travels: pickled (None: a stateless model's, not pickled).

    Raises:
        PluginContractError: ``data``, which the Muscle's ``method`` returned, cannot be
            pickled (a lambda, a lock, an open file): the Muscle is named, not palaestra's
            pickling.
    """
    if data is None:
        return None
    try:
        return pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        raise PluginContractError(
            muscle,
            method,
            f"returned {type(data).__name__} {reprlib.repr(data)} as the data for the Brain, "
            f"which cannot be pickled ({exc}): it goes to the Brain's thinking; return plain "
            "data, arrays or tensors (or None)",
        ) from None


def proposed_columns(
    muscle: Muscle, result: Any, count: int
) -> tuple[dict[str, Any], Sequence[Any] | None]:
    """What ``propose_actions_columns`` returned, as (columns by actuator uid, data for the
    Brain of each game or None).

    Raises:
        PluginContractError: Not a pair of a mapping and a sequence of ``count`` (or None).
    """
    try:
        chosen, data = result
        chosen = dict(chosen)
        if data is not None:
            data = list(data)
    except (TypeError, ValueError):
        chosen = None
    if chosen is None or (data is not None and len(data) != count):
        raise PluginContractError(
            muscle,
            "propose_actions_columns",
            f"returned {type(result).__name__}: expected a pair of the set points (a column "
            f"of {count} values by actuator uid) and the data for the Brain ({count} items, "
            "one per game, or None)",
        )
    return chosen, data


def _reward_texts(rewards: list[list[m.InfoDesc]]) -> list[tuple[str, float | None]] | None:
    """:func:`_reward_text` of each row's ``rewards``, made once where there are several rows
    and each has the first one's uids and values (see :func:`uniform`); else None (each row's
    is made alone, which names a value that has no text)."""
    first = rewards[0]
    if len(rewards) < 2 or not first or any([len(row) != len(first) for row in rewards]):
        return None
    for i, desc in enumerate(first):
        column = [row[i] for row in rewards]
        if any([d.uid != desc.uid for d in column]) or not uniform([d.value for d in column]):
            return None
    try:
        return [_reward_text(first)] * len(rewards)
    except (TypeError, ValueError, OverflowError):
        return None


def _reward_text(rewards: list[m.InfoDesc]) -> tuple[str, float | None]:
    """The JSON text of a row's rewards (:func:`stored_rewards`: by uid, a list where a uid
    repeats) and their total, every reward's value counted (made each time: a small dict's text
    costs less than a key to keep it by)."""
    stored = stored_rewards(rewards)
    if type(stored) is dict:
        return json_text(stored), reward_total(stored.values())
    return json_text(stored), reward_total([r.value for r in rewards])
