"""Checks users run on their own plug-ins before a run, and fakes to test the step path.

``check_environment``, ``check_muscle`` and ``check_brain`` build the plug-in the way palaestra
does (constructor with the run file's params, the context attached before ``setup``), drive it
through its contract for a few steps in this process, and raise :class:`PluginCheckError`
naming the method and what is wrong::

    from palaestra.testing import check_environment
    check_environment("my_pkg.grid:GridEnvironment", {"size": 4})

:class:`FakeLink` (an in-memory link with a Channel's ``send`` and ``recv``),
:class:`RowRecorder` (a row sink that keeps the rows) and :class:`LocalRounds` (plays a
worker's games, one or many, in rounds: the environment's and the Muscles' round path, with
their plug-ins, in this process) test the step path without processes or sockets;
:func:`muscle_step` plays one observation through a Muscle process's round path;
:func:`brain_process` sets up a Brain process in this process and :func:`brain_link_of` is a
Muscle's link to it (each message through the Brain process's own path).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import pickle
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Literal, cast

import numpy as np

from palaestra.agent.brain import Brain
from palaestra.agent.brain_process import BrainProcess
from palaestra.agent.context import BrainContext, BrainDumps, MuscleContext
from palaestra.agent.muscle import Muscle, proposal
from palaestra.agent.muscle_lanes import MuscleLanes, proposed_columns, sensor_columns
from palaestra.agent.muscle_process import MuscleProcess
from palaestra.agent.muscle_schema import Schema
from palaestra.agent.statistics import record_statistics
from palaestra.core.description.loading import load_class
from palaestra.core.description.name_rules import dump_key
from palaestra.core.description.specs import AgentSpec, ClassSpec, EnvironmentSpec
from palaestra.core.errors import InvalidInputError
from palaestra.core.information import (
    ActuatorInformation,
    SensorInformation,
    json_value,
)
from palaestra.core.plugin import PluginContractError, PluginError
from palaestra.core.supervision.hotloop import HotLoop
from palaestra.core.wire import messages as m
from palaestra.core.wire.channel import Channel
from palaestra.core.wire.codec import describe
from palaestra.core.wire.records import COLUMNS, RowSink
from palaestra.environment import checks
from palaestra.environment.aio import UNAWAITED, Awaiter, discard
from palaestra.environment.environment import Environment, EnvironmentContext
from palaestra.environment.environment_process import EnvironmentProcess
from palaestra.environment.lanes import play_lanes
from palaestra.environment.shapes import ShapeFix
from palaestra.environment.world import construct


class PluginCheckError(InvalidInputError):
    """A plug-in does not keep its contract; the message names the method and the problem."""


def check_environment(
    environment: str | type[Environment], params: dict[str, Any] | None = None, steps: int = 3
) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
    """Start, step (with sampled set points; reset after an episode ends), reset and shut down
    an environment, checking what each returns as a run checks it (the checks of
    :mod:`palaestra.environment.checks`: sensor values and rewards in their spaces, every
    sensor a start declared reported by each step, none it did not declare).

    Returns the sensors and actuators of its baseline, as agents would see them unprefixed.
    """
    name = environment if isinstance(environment, str) else _name(environment)
    try:
        env = construct(EnvironmentSpec(name=name, uid="checked", params=params or {}), seed=0)
    except PluginError as exc:  # (its constructor raised: the cause)
        cause = exc.__cause__
        raise PluginCheckError(f"{exc.plugin} raised {cause!r}") from cause
    env.attach(EnvironmentContext(uid="checked", worker=0, seed=0))
    awaiter = Awaiter("check_environment")  # an asynchronous environment's event loop
    shapes = ShapeFix("check_environment")  # (a value of its space's size: reshaped, warned)
    try:
        sensors, actuators = last = _baseline(env, "start_environment", awaiter, shapes)
        declared = {str(s.uid): s.space for s in sensors}
        for actuator in actuators:
            actuator.space.seed(0)  # (each has one: _baseline checked)
        for _ in range(steps):
            state = _call(
                env,
                "update",
                [
                    ActuatorInformation(a.space.sample() if a.space else a.value, a.space, a.uid)
                    for a in actuators
                ],
                awaiter=awaiter,
            )
            if _state(env, state, declared, shapes):  # as a run does after an episode's end
                last = _baseline(env, "reset", awaiter, shapes, last)
                declared = {str(s.uid): s.space for s in last[0]}
        _baseline(env, "reset", awaiter, shapes, last)
    except BaseException:
        with contextlib.suppress(Exception):  # the check's own failure is what is reported
            awaiter(env, "shutdown", env.shutdown(), closing=True)  # what it started ends
        awaiter.close()
        raise
    try:
        _call(env, "shutdown", awaiter=awaiter)
    finally:
        awaiter.close()
    return sensors, actuators


def check_muscle(
    muscle: str | type[Muscle],
    params: dict[str, Any] | None = None,
    *,
    sensors: Sequence[SensorInformation],
    actuators: Sequence[ActuatorInformation],
    steps: int = 3,
    games: int = 3,
) -> None:
    """Set up a Muscle, let it act on ``sensors`` and check its set points and brain data;
    a Muscle that overrides ``propose_actions_batch`` also acts in ``games`` games at once
    (as with ``envs_per_worker``), each answer checked the same way, and so does one that
    overrides ``propose_actions_columns`` (on each sensor's column)."""
    instance = _construct(muscle, params)
    if not isinstance(instance, Muscle):
        raise PluginCheckError(f"{_name(type(instance))} is not a palaestra Muscle")
    instance.attach(
        MuscleContext(
            name="checked",
            uid="checked-0",
            worker=0,
            mode="train",
            seed=0,
            sensors=list(sensors),
            actuators=list(actuators),
            rng=np.random.default_rng(0),
        )
    )
    _call(instance, "setup")
    schema = Schema("checked", 0)  # the declared actuators: what a run checks against
    schema.set([describe(s) for s in sensors], [describe(a) for a in actuators])
    batched = type(instance).propose_actions_batch is not Muscle.propose_actions_batch
    on_columns = type(instance).propose_actions_columns is not Muscle.propose_actions_columns
    for step in range(steps):
        available = [ActuatorInformation(None, a.space, a.uid) for a in actuators]
        answer = _call(instance, "propose_actions", list(sensors), available)
        _statistics(instance, "propose_actions")
        try:  # a pair, or the set points alone (as a run takes them)
            setpoints, data = proposal(instance, answer)
        except PluginContractError as exc:
            raise PluginCheckError(str(exc)) from None
        _check_setpoints(instance, "propose_actions", (setpoints, data), schema, step)
        if batched:
            _check_batch(instance, sensors, actuators, games, schema)
        if on_columns:
            _check_columns(instance, (sensors, actuators), games)
        _call(instance, "update", None)
    _call(instance, "reset")
    _call(instance, "teardown")


_Given = tuple[Sequence[SensorInformation], Sequence[ActuatorInformation]]
"""The sensors and actuators a Muscle is checked with."""


def _check_batch(
    instance: Muscle,
    sensors: Sequence[SensorInformation],
    actuators: Sequence[ActuatorInformation],
    games: int,
    schema: Schema,
) -> None:
    """``propose_actions_batch`` for ``games`` games gives a pair of lists of ``games`` items,
    each a valid answer."""
    method = "propose_actions_batch"
    available = [
        [ActuatorInformation(None, a.space, a.uid) for a in actuators] for _ in range(games)
    ]
    answer = _call(instance, method, [list(sensors) for _ in range(games)], available)
    _statistics(instance, method)
    if not (isinstance(answer, tuple) and len(answer) == 2):
        _fail(instance, method, "must return (set points of each game, data of each game)")
    setpoints, data = list(answer[0]), list(answer[1])
    if len(setpoints) != games or len(data) != games:
        _fail(
            instance,
            method,
            f"returned {len(setpoints)} set point lists and {len(data)} data items for "
            f"{games} games: expected one of each per game",
        )
    for game_setpoints, game_data in zip(setpoints, data, strict=True):
        _check_setpoints(instance, method, (game_setpoints, game_data), schema, 0)


def _check_columns(instance: Muscle, given: _Given, games: int) -> None:
    """``propose_actions_columns`` for ``games`` games (each sensor's column as a run makes it
    from the ``given`` sensors), its answer checked as a run checks it."""
    method = "propose_actions_columns"
    sensors, actuators = given
    schema = Schema("checked", 0)
    schema.set([describe(s) for s in sensors], [describe(a) for a in actuators])
    columns = sensor_columns(
        schema.sensor_uids, schema.sensor_spaces, [[json_value(s) for s in sensors]] * games
    )
    answer = _call(instance, method, columns, schema.actuators(), games)
    _statistics(instance, method)
    try:
        chosen, data = proposed_columns(instance, answer, games)
        for uid, column in chosen.items():
            schema.setpoint_column(instance, uid, column, games, lambda j: f"in game {j}")
    except PluginContractError as exc:
        raise PluginCheckError(str(exc)) from None
    _picklable(instance, method, data)


def _check_setpoints(
    instance: Muscle, method: str, answer: tuple[Any, Any], schema: Schema, step: int
) -> None:
    """The set points of ``answer`` (set points, data for the Brain) are checked as a run
    checks them (:meth:`~palaestra.agent.muscle_schema.Schema.setpoint_values`: each an
    ActuatorInformation of an actuator the agent was given, its value in that actuator's
    declared space), and its data can be pickled."""
    setpoints, data = answer
    try:
        schema.setpoint_values(instance, setpoints, step, 0)
    except PluginContractError as exc:
        raise PluginCheckError(str(exc)) from None
    _picklable(instance, method, data)


def check_brain(
    brain: str | type[Brain],
    params: dict[str, Any] | None = None,
    *,
    sensors: Sequence[SensorInformation],
    actuators: Sequence[ActuatorInformation],
    data: Sequence[Any] = (None, 0, 1),
) -> None:
    """Set up a Brain, let it think about ``data``, and round-trip it through a brain dump."""
    written: dict[str, bytes] = {}  # the newest of each tag, as a next phase loads them
    instance = _construct(brain, params)
    if not isinstance(instance, Brain):
        raise PluginCheckError(f"{_name(type(instance))} is not a palaestra Brain")
    context = BrainContext(
        name="checked",
        run_uid="check",
        phase_index=0,
        phase_name="check",
        mode="train",
        seed=0,
        sensors=list(sensors),
        actuators=list(actuators),
        dumps=BrainDumps(write=lambda d, tag: written.__setitem__(dump_key(tag), d)),
    )
    instance.attach(context)
    _call(instance, "setup")
    _call(instance, "load")
    for item in data:
        _picklable(instance, "thinking", _call(instance, "thinking", "checked-0", item))
        _statistics(instance, "thinking")
    _call(instance, "store")
    _statistics(instance, "store")
    if written:  # a brain that dumps must be able to start from its dump
        again = _construct(brain, params)
        loaded = BrainDumps(loaded=written, source="check")
        again.attach(dataclasses.replace(context, dumps=loaded))
        _call(again, "setup")
        _call(again, "load")
    _call(instance, "teardown")


# --- helpers -------------------------------------------------------------------------------


def _name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


_RAISED = (Exception, SystemExit)
"""What a plug-in's method may raise that a check reports as its failure: ``sys.exit(0)`` in a
plug-in fails a run, and must not end the checking script with exit 0 as if all went well."""


def _construct(plugin: str | type, params: dict[str, Any] | None) -> Any:
    cls = load_class(plugin) if isinstance(plugin, str) else plugin
    try:
        return cls(**(params or {}))
    except _RAISED as exc:
        raise PluginCheckError(f"{_name(cls)}(**{params or {}}) failed: {exc!r}") from exc


def _call(plugin: Any, method: str, *args: Any, awaiter: Awaiter | None = None) -> Any:
    """``plugin.method(*args)``; a coroutine it returns is awaited on ``awaiter``'s loop (an
    environment's), and refused without one (palaestra awaits no other plug-in method)."""
    try:
        result = getattr(plugin, method)(*args)
        if awaiter is not None:
            return awaiter(plugin, method, result)
    except PluginCheckError:
        raise
    except PluginError as exc:  # raised inside the awaited coroutine
        cause = exc.__cause__
        raise PluginCheckError(f"{_name(type(plugin))}.{method} raised {cause!r}") from cause
    except _RAISED as exc:
        raise PluginCheckError(f"{_name(type(plugin))}.{method} raised {exc!r}") from exc
    if inspect.isawaitable(result):
        discard(result)
        _fail(plugin, method, UNAWAITED)
    return result


def _fail(plugin: Any, method: str, problem: str) -> None:
    raise PluginCheckError(f"{_name(type(plugin))}.{method}: {problem}")


def _statistics(plugin: Any, method: str) -> None:
    """Pop what ``plugin`` added with ``add_statistics`` during ``method``, as a run pops them
    after each of its calls (so a key added once per call is no key added twice), and check
    that the store could hold each value."""
    try:
        record_statistics(plugin, RowRecorder("statistics"), "checked", 0, 0, 0)
    except PluginError as exc:
        cause = exc.__cause__
        raise PluginCheckError(
            f"{_name(type(plugin))}.{method}: add_statistics: {cause}"
        ) from cause


def _picklable(plugin: Any, method: str, value: Any) -> None:
    try:
        pickle.dumps(value)
    except Exception as exc:  # noqa: BLE001 - pickling user objects raises anything
        _fail(plugin, method, f"returned {type(value).__name__}, which cannot be pickled ({exc})")


def _baseline(
    env: Environment,
    method: str,
    awaiter: Awaiter,
    shapes: ShapeFix,
    before: tuple[list[Any], list[Any]] | None = None,
) -> tuple[list[Any], list[Any]]:
    """Check what a start or reset (after the start ``before``) returned as a run does;
    returns its sensors and actuators (each with a space: the check samples the
    actuators')."""
    result = _call(env, method, awaiter=awaiter)
    try:
        sensors, actuators = checks.baseline(env, method, result, fix=shapes.fixed)
        if before is not None:
            uids = ([str(s.uid) for s in before[0]], [str(a.uid) for a in before[1]])
            checks.kept_by_reset(env, uids, sensors, actuators)
    except PluginContractError as exc:
        raise PluginCheckError(str(exc)) from None
    for kind, infos in (("sensor", sensors), ("actuator", actuators)):
        for info in infos:
            if info.space is None:
                _fail(env, method, f"{kind} {info.uid} has no space")
    return sensors, actuators


def _state(env: Environment, state: Any, declared: dict[str, Any], shapes: ShapeFix) -> bool:
    """Check what ``update`` returned as a run checks a start's first step (every step here);
    returns ``done``."""
    try:
        return checks.first_state(env, state, declared, shapes.fixed)[2]
    except PluginContractError as exc:
        raise PluginCheckError(str(exc)) from None


# --- fakes for the step path -----------------------------------------------------------------


class FakeLink(Channel):
    """An in-memory link with a :class:`~palaestra.core.wire.channel.Channel`'s ``send`` and
    ``recv``, for driving a process's step path in this process.

    Every message sent is kept, decoded, in :attr:`sent`. ``recv`` returns what :meth:`put`
    queued, or what ``answer`` returned for a message sent (None: no answer); with nothing
    queued it raises ``LookupError``, where a real link would block for ever.
    """

    __slots__ = ("inbox", "sent", "answer", "decode")

    def __init__(
        self,
        peer: str,
        answer: Callable[[Any], m.Msg | None] | None = None,
        decode: Callable[[bytes], Any] = m.decode,
    ) -> None:
        # no socket, so no Channel.__init__
        self.peer = peer
        self.inbox: deque[bytes] = deque()
        self.sent: list[Any] = []
        self.answer = answer
        self.decode = decode  # (as the process at the other end decodes)

    def send(self, data: bytes) -> None:
        message = self.decode(data)
        self.sent.append(message)
        if self.answer is not None:
            reply = self.answer(message)
            if reply is not None:
                self.put(reply)

    def try_send(self, data: bytes) -> bool:
        """:meth:`send`: an in-memory link is never full."""
        self.send(data)
        return True

    def ready(self) -> bool:
        """Whether :meth:`recv` has something queued."""
        return bool(self.inbox)

    def put(self, message: m.Msg) -> None:
        """Queue ``message`` for the next ``recv``."""
        self.inbox.append(m.encode(message))

    def recv(self, ready: bool = False) -> bytes:
        if not self.inbox:
            raise LookupError(f"nothing to receive from {self.peer}: a real link would block")
        return self.inbox.popleft()

    def fileno(self) -> int:
        return -1

    def close(self) -> None:
        self.inbox.clear()


class RowRecorder(RowSink):
    """A row sink that keeps every row in :attr:`recorded` instead of storing it: a row
    message as it is, a shaped row of ``table`` as a dict by its columns."""

    def __init__(self, table: str = "") -> None:
        super().__init__(None, table)  # (nothing is pushed)
        self.recorded: list[Any] = []

    def add(self, row: Any) -> None:
        self.recorded.append(row)

    def add_shaped(self, rows: list[tuple[Any, ...]], size: int) -> None:
        columns = COLUMNS[self.table]
        self.recorded.extend(dict(zip(columns, row, strict=True)) for row in rows)


def brain_link(brain: Any, muscle_id: str = "checked-0") -> FakeLink:
    """A link to ``brain`` (a Brain plug-in, set up): each experience is answered with what
    its ``thinking`` returns, as the Brain process would."""

    def think(message: m.Message) -> m.Msg:
        if not isinstance(message, m.Experiences):
            raise TypeError(f"a Brain cannot handle {type(message).__name__}")
        update = None
        for item in message.items:  # (the newest update of the round)
            data = None if item.data is None else pickle.loads(item.data)
            made = brain.thinking(muscle_id, data)
            update = update if made is None else made
        return m.BrainUpdate(update=None if update is None else pickle.dumps(update))

    return FakeLink(f"Brain-{muscle_id}", think)


def brain_process(
    agent: AgentSpec,
    sensors: Sequence[m.InfoDesc],
    actuators: Sequence[m.InfoDesc],
    *,
    mode: Literal["train", "test"] = "train",
    seed: int = 1,
) -> BrainProcess:
    """A Brain process of ``agent`` in this process, as its conductor sets it up for worker 0
    (its Brain constructed and attached; no store: its rows are only checked). Drive it with
    :func:`brain_link_of`."""
    setup = m.AgentSetup(
        agent=agent,
        agent_id=1,
        phase_id=1,
        run_uid="local",
        phase_index=0,
        phase_name="phase_0",
        mode=mode,
        workers=1,
        brain_seed=seed,
        muscle_seeds=[seed + 1],
        sensors=list(sensors),
        actuators=list(actuators),
    )
    return BrainProcess(f"Brain-{agent.name}", setup=setup, store_endpoint=None)


def brain_link_of(brain: BrainProcess) -> FakeLink:
    """A Muscle's link to ``brain`` (:func:`brain_process`): each message sent on it is
    handled by the Brain process's own path (its memory rows, ``thinking``, statistics and
    dumps), and its answer is the link's to receive."""
    link = FakeLink(brain.name, decode=m.decode_kept)
    back = _Answers(link)
    link.answer = lambda message: brain.handle(back, message)
    return link


class _Answers(FakeLink):
    """A Brain process's end of :func:`brain_link_of`: what it sends is queued on the
    Muscle's end as it is (not kept, not decoded)."""

    __slots__ = ("muscle_end",)

    def __init__(self, muscle_end: FakeLink) -> None:
        super().__init__(muscle_end.peer)
        self.muscle_end = muscle_end

    def send(self, data: bytes) -> None:
        self.muscle_end.inbox.append(data)


def muscle_step(muscle: MuscleProcess, observation: m.AgentStep) -> m.AgentActions:
    """Play ``observation`` (of the worker's one game, in the Muscle's current episode) as the
    round of one game a driver sends, through the Muscle process's round path (a hot reload
    looks for changed files first); its answer:
    the set points by full actuator uid, whether the agent's objective rule holds (``stop``)
    and whether its Brain's phase rule does (``end_phase``)."""
    if muscle.games is None:
        muscle.games = MuscleLanes(muscle, 1)
    round_of_one = m.AgentSteps(lanes=[0], episodes=[muscle.episode], steps=[observation])
    answer = muscle.games.serve(round_of_one, lambda data: None)
    return m.AgentActions(
        setpoints=answer.setpoints[0], stop=answer.stop[0], end_phase=answer.end_phase
    )


class LocalRounds:
    """Plays a worker's games (an :class:`EnvironmentProcess` with one or more) in rounds in
    this process, through the path a run takes (:func:`palaestra.environment.lanes.play_lanes`
    and each Muscle's :class:`~palaestra.agent.muscle_lanes.MuscleLanes`): the links between
    them are :class:`FakeLink` s, no process or socket is involved.

    Give each game's rows a :class:`RowRecorder` to look at them, wire each Muscle with
    :meth:`wire` (its Brain link, e.g. :func:`brain_link`), :meth:`start` the worlds, then
    :meth:`play`.
    """

    def __init__(self, environment: EnvironmentProcess) -> None:
        self.environment = environment
        self.muscles: dict[str, MuscleProcess] = {}
        self.told: list[m.Message] = []  # what the environment told its controller
        self.baseline: m.EnvBaseline | None = None

    def start(self) -> m.EnvBaseline:
        """Start every game's world; the first game's baseline (each game's is alike)."""
        env = self.environment
        self.baseline = env.world.start_world(reset=False)
        for game in env.games[1:]:
            game.start_world(reset=False)
        return self.baseline

    def wire(self, muscle: MuscleProcess, brain: Channel) -> None:
        env = self.environment

        def answer(message: m.Message) -> m.Msg:  # what the Muscle's process does with it
            if not isinstance(message, m.AgentSteps):
                raise TypeError(f"a Muscle cannot handle {type(message).__name__} here")
            assert muscle.games is not None
            return muscle.games.answer(message)

        muscle.wire(brain, {env.world.spec.uid: FakeLink(env.name)})
        env.links[muscle.name] = FakeLink(muscle.name, answer)
        self.muscles[muscle.name] = muscle

    def play(
        self,
        episodes: int,
        policy: str = "palaestra.core.turns:AllAct",
        conditions: Sequence[ClassSpec] = (),
    ) -> m.EnvLanesDone:
        """Play ``episodes`` episodes of each game (started: :meth:`start`) with the turn
        ``policy`` and the termination ``conditions``; the environment's last answer (each
        episode's end is in :attr:`told`)."""
        env = self.environment
        baseline = self.baseline
        if baseline is None:
            raise LookupError("start the games' worlds first (LocalRounds.start)")
        sensors = {s.uid: s for s in baseline.sensors}
        actuators = {a.uid: a for a in baseline.actuators}
        for muscle in self.muscles.values():
            muscle.begin_episode(
                m.AgentEpisode(
                    episode=0,
                    sensors=[sensors[uid] for uid in muscle.agent.sensors],
                    actuators=[actuators[uid] for uid in muscle.agent.actuators],
                    driver=env.world.spec.uid,
                    lanes=len(env.games),
                )
            )
            muscle.games = MuscleLanes(muscle, len(env.games))
        prefix = env.world.declared.prefix
        agents = [
            m.EpisodeAgent(
                process=name,
                sensors=list(muscle.agent.sensors),
                acts_here=any(uid.startswith(prefix) for uid in muscle.agent.actuators),
            )
            for name, muscle in self.muscles.items()
        ]
        message = m.EnvLanes(
            agents=agents, conditions=list(conditions), episodes=episodes, policy=policy
        )
        return play_lanes(env, cast(HotLoop, None), message, cast(Any, self), b"controller")

    def send_multipart(self, parts: list[bytes]) -> None:
        """(The environment's router to its controller.)"""
        self.told.append(m.decode(parts[1]))
