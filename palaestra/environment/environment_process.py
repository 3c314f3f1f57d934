"""The environment process: runs one Environment for one worker and records world states.

The simulation controller talks to it over ZMQ (start, reset, step, run an episode). The
Muscles of the worker link to it (:mod:`palaestra.core.channel`): their set points arrive on
those links, and in an episode the environment drives itself, its observations go out on them.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
import time
from collections.abc import Sequence
from typing import Any

import zmq

from palaestra.core import messages as m
from palaestra.core import names
from palaestra.core.channel import Channel, Listener, PeerGone
from palaestra.core.codec import describe
from palaestra.core.esm import Component, ComponentRuntime
from palaestra.core.hotloop import HotLoop, closing_producer, run_hot
from palaestra.core.information import (
    ActuatorInformation,
    RewardInformation,
    SensorInformation,
    json_value,
)
from palaestra.core.loading import load_class
from palaestra.core.pacing import ON_TIME, Pacer
from palaestra.core.plugin import PluginContractError, call
from palaestra.core.plugin_records import recorder_for, send_records
from palaestra.core.recording_control import RecordingSwitch
from palaestra.core.records import (
    RowSink,
    connect_store,
    plugin_record_values,
    recorded,
    send,
    world_state_values,
)
from palaestra.core.simtime import SimTime
from palaestra.core.space_checks import Check, value_check
from palaestra.core.specs import ClassSpec, EnvironmentSpec
from palaestra.core.termination import TerminationCondition
from palaestra.core.transport import endpoint_for, link_for, with_link
from palaestra.core.watch import Waiting, watch
from palaestra.environment import checks
from palaestra.environment.aio import Awaiter
from palaestra.environment.environment import Environment, EnvironmentContext, EnvironmentState
from palaestra.environment.lanes import play_lanes, same_world
from palaestra.environment.reset import EnvironmentResetRequest
from palaestra.environment.reset_call import call_reset
from palaestra.environment.shapes import ShapeFix

LOG = logging.getLogger(__name__)


def construct(spec: EnvironmentSpec, seed: int) -> Environment:
    """Instantiate the environment with its params (and ``uid``/``seed`` if it takes them)."""
    cls = load_class(spec.name)
    kwargs = dict(spec.params)
    accepted = inspect.signature(cls).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in accepted.values())
    for key, value in (("uid", spec.uid), ("seed", seed), ("broker_uri", "")):
        if key in accepted or takes_any:
            kwargs.setdefault(key, value)
    return call(cls, **kwargs)  # type: ignore[no-any-return]


def _build(spec: ClassSpec) -> Any:
    """A plug-in of the environment item (``reward``, ``state_transformer``), with its params."""
    return call(load_class(spec.name), **spec.params)


def _renamed(sensor: SensorInformation, uid: str) -> SensorInformation:
    """A shallow copy of ``sensor`` under ``uid`` (the environment's own object is kept)."""
    renamed = copy.copy(sensor)
    renamed.uid = uid
    return renamed


class EnvironmentProcess(Component):
    def __init__(
        self,
        name: str,
        *,
        environment: EnvironmentSpec,
        environment_id: int,
        worker: int,
        seed: int,
        store_endpoint: str | None,
        phase_id: int = 0,
        answer_timeout: float = 300.0,
        run_uid: str = "",
        instance_uid: str = "",
        phase_index: int = 0,
        data_path: str = "",
        record_every: int = 1,
        lane_seeds: Sequence[int] = (),
    ) -> None:
        super().__init__(name)
        lanes = len(lane_seeds)
        if lanes > 1:  # the worker's games, seen as workers worker * N + i (see lanes)
            worker, seed = worker * lanes, lane_seeds[0]
        self.record_every = record_every  # which steps get a row: see PhaseConfig
        # waiting for the set points of a Muscle (named when we wait): it speaks after its
        # Brain would have, before the simulation controller would blame us
        self.muscles = Waiting(
            "Muscle", answer_timeout, grace=max(1.0, min(5.0, answer_timeout / 2))
        )
        self.expected: list[str] | None = None
        self.controller = b""
        self.pending: dict[str, dict[str, Any]] = {}
        self.stop_requested = False
        self.links: dict[str, Channel] = {}  # by Muscle process name
        self._polled: list[Any] = []
        self.values: list[Any] = []
        self.last_values: list[Any] = []  # the sensor values after the last step
        self.warned_repeats = False
        self.shapes = ShapeFix(name)  # values in another shape than their Box's, reshaped
        # our own plug-in's step: if it never returns, we say so ourselves (a second after
        # the executor's judge would have, which can also tell how: see core.liveness)
        self.stepping = Waiting(name, answer_timeout, grace=1.0)
        self.answer_timeout = answer_timeout
        # awaits what an asynchronous environment returns, on one loop for the process
        self.awaiter = Awaiter(name)
        self.spec = environment
        self.environment_id = environment_id
        self.phase_id = phase_id
        self.worker = worker
        self.env = construct(environment, seed)
        self.recorder = recorder_for(name)
        self.record_source = f"env:{environment.uid}"  # of its plug-in records
        self.switch = RecordingSwitch()
        self.paused = False  # recording is paused: steps run, no rows (see recording_gaps)
        self.env.attach(
            EnvironmentContext(
                uid=environment.uid,
                worker=worker,
                seed=seed,
                run_uid=run_uid,
                instance_uid=instance_uid,
                phase_index=phase_index,
                data_path=data_path,
                recorder=self.recorder,
            )
        )
        if environment.reward is not None:  # the environment calls it itself
            self.env.reward = _build(environment.reward)
        self.transformer: Any = (
            _build(environment.state_transformer) if environment.state_transformer else None
        )
        self.store_endpoint = store_endpoint
        self.actuators: list[ActuatorInformation] = []
        self.first_step = True
        self.declared: dict[str, Any] = {}
        self.value_checks: list[Check] | None = None
        self.check_rewards = True
        self.reward_checks: dict[int, tuple[Any, Check]] = {}
        self.sensor_index: dict[str, int] = {}
        self.sensor_uids: list[str] = []
        self.full_sensor_uids: list[str] = []
        self.prefix = f"{environment.uid}."
        self.episode = -1
        self.step = 0
        self.late_by: float | None = None  # of the step being taken (paced phases; see EnvStep)
        self.asked_at = 0.0  # when the controller asked for the paced step being taken
        self.pacer: Pacer | None = None  # of the paced episodes this environment drives
        self.played: list[int] | None = None  # the games it drives: each one's episodes so far
        # ... and each one's termination conditions (made once for the phase)
        self.conditions: list[list[TerminationCondition]] | None = None
        self.rows = RowSink(None, "world_states", shape=self._shape)  # the store's, once running
        self.records = RowSink(None, "plugin_records", shape=self._plugin_shape)
        self.games = (
            [self]
            + [  # with envs_per_worker N > 1: its N games, each a core like it
                EnvironmentProcess(
                    name,
                    environment=environment,
                    environment_id=environment_id,
                    phase_id=phase_id,
                    worker=worker + i,
                    seed=lane_seed,
                    store_endpoint=None,
                    answer_timeout=answer_timeout,
                    run_uid=run_uid,
                    instance_uid=instance_uid,
                    phase_index=phase_index,
                    data_path=data_path,
                    record_every=record_every,
                )
                for i, lane_seed in enumerate(lane_seeds[1:], start=1)
            ]
        )
        for game in self.games[1:]:
            game.awaiter = self.awaiter

    def _shape(self, row: m.WorldStateRow) -> tuple[Any, ...]:
        """The row ready to insert (see :class:`~palaestra.core.messages.Rows`)."""
        return world_state_values(self.environment_id, self.worker, row)

    def _plugin_shape(self, row: m.PluginRecordRow) -> tuple[Any, ...]:
        return plugin_record_values(self.phase_id, row)

    def advanced(self, values: list[Any]) -> None:
        """The world took a step (alone or in a batch of games) and reads ``values`` now: the
        step counts, and what the environment recorded during it becomes rows."""
        self.last_values = values
        self.step += 1
        self.first_step = False
        self._send_records()

    def _send_records(self) -> None:
        """Add what the environment recorded with ``context.record`` as rows of this step."""
        source = self.record_source
        send_records(self.recorder, self.records, source, self.worker, self.episode, self.step)

    def recording(self) -> bool:
        """Whether this step's row is written: not while recording is paused. A change is
        told to the store as the start or the end of a gap (``recording_gaps``)."""
        paused = self.switch.paused()
        if paused != self.paused:
            self.paused = paused
            self.rows.flush()
            mark = m.RecordingGapMark(
                phase_id=self.phase_id,
                worker=self.worker,
                episode=self.episode,
                step=self.step,
                paused=paused,
            )
            send(self.rows.socket, mark)
        return not paused

    async def setup(self, runtime: ComponentRuntime) -> dict[str, str]:
        endpoint = endpoint_for(runtime.run_dir, names.endpoint(self.name, "env"))
        self.listener = Listener(link_for(endpoint))  # bound before anyone is told of it
        link = runtime.links.listen(self.listener)  # its gateway, in a run across hosts
        loop = HotLoop(runtime, self.name)
        router, announced = loop.bind(zmq.ROUTER, endpoint)
        self.hot = run_hot(runtime, self.name, lambda hot: self._serve(hot, router), loop)
        steppings = [game.stepping for game in self.games]
        runtime.start_task(watch([self.muscles, *steppings]))
        return {"env": with_link(announced, link)}

    def _serve(self, hot: HotLoop, router: zmq.Socket[bytes]) -> None:
        """The hot loop: step when the expected Muscles' set points are in; record each step."""
        hot.own(self.listener)
        self.rows = RowSink(
            connect_store(hot, self.store_endpoint),
            "world_states",
            plugin=(self.env, "update"),
            shape=self._shape,
        )
        self.records = RowSink(
            self.rows.socket,
            "plugin_records",
            plugin=(self.env, "record"),
            shape=self._plugin_shape,
        )
        games = self.games[1:]
        for game in games:
            game.rows = RowSink(
                self.rows.socket, "world_states", plugin=(game.env, "update"), shape=game._shape
            )
            game.records = RowSink(
                self.rows.socket,
                "plugin_records",
                plugin=(game.env, "record"),
                shape=game._plugin_shape,
            )
        self.selector = hot.selector()
        self.selector.add(self.listener)
        wait = hot.poller(router)
        sinks = [sink for game in games for sink in (game.rows, game.records)]
        with closing_producer(self.rows, self.name, self.records, *sinks):
            while True:
                links = self.selector.items()
                if links != self._polled:  # a Muscle linked or hung up
                    self._polled, wait = links, hot.poller(router, *links)
                for item in wait():
                    if item is router:
                        self._control(hot, router)
                    elif item is self.listener:
                        self._accept(hot)
                    elif isinstance(item, Channel):
                        self._take_actions(item)
                if self.all_in():
                    if self.late_by is not None:  # paced: was a Muscle late?
                        self._held_up()
                    router.send_multipart([self.controller, m.encode(self.update())])

    def _control(self, hot: HotLoop, router: zmq.Socket[bytes]) -> None:
        sender, payload = router.recv_multipart()
        message = m.decode(payload)
        if isinstance(message, m.EnvStep):
            self.controller = sender
            self.expected = message.expect
            self.late_by = message.late_by
            self.asked_at = time.perf_counter() if message.late_by is not None else 0.0
        elif isinstance(message, m.EnvStart):
            baseline = self.start_world(message.reset, message.check_values)
            for game in self.games[1:]:
                game.start_world(message.reset, message.check_values)
                same_world(self, game)
            if message.episode is not None:  # a resumed worker's first episode
                for game in self.games:
                    game.episode = message.episode
            router.send_multipart([sender, m.encode(baseline)])
        elif isinstance(message, m.EnvLanes):
            over = play_lanes(self, hot, message, router, sender)
            router.send_multipart([sender, m.encode(over)])
        else:
            raise TypeError(f"{self.name} cannot handle {type(message).__name__}")

    def _accept(self, hot: HotLoop, wait: bool = False) -> None:
        """Take a Muscle's link: one that is pending, or (``wait``) the next one."""
        link = hot.accept(self.listener, wait)
        if link is not None:
            self.links[link.peer] = link
            self.selector.add(link)

    def _take_actions(self, link: Channel) -> None:
        """Read a Muscle's set points (a Muscle that hung up is dropped: see channel)."""
        try:
            action = m.decode(link.recv())
        except PeerGone:
            self.selector.discard(link)
            return
        if not isinstance(action, m.AgentActions):
            raise TypeError(f"{self.name}: {type(action).__name__} from {link.peer}")
        self.pending[link.peer] = action.setpoints
        if action.stop:  # an agent reached its objective rule: this step is the last
            self.stop_requested = True

    def start_world(self, reset: bool, check_values: bool = True) -> m.EnvBaseline:
        """Start (or reset) the world, check what it returned, and describe it.

        With ``check_values``, every step checks each sensor value and reward against its
        space (see :mod:`palaestra.environment.checks`); the first step after a start is
        always checked in full.
        """
        method = "reset" if reset else "start_environment"
        if reset:
            result = call_reset(self.env, self.reset_request(), self.awaiter)
        else:
            result = self.awaiter(self.env, method, call(self.env.start_environment))
        repeated: list[str] = []
        sensors, actuators = checks.baseline(self.env, method, result, repeated, self.shapes.fixed)
        if repeated and not self.warned_repeats:
            self.warned_repeats = True
            LOG.warning(
                "%s: %s.%s() returned actuator %s more than once (same uid and space); "
                "palaestra uses each once",
                self.name,
                type(self.env).__name__,
                method,
                ", ".join(f"'{uid}'" for uid in dict.fromkeys(repeated)),
            )
        self.episode += 1
        self.step = 0
        self.first_step = True
        self.declared = {str(s.uid): s.space for s in sensors}
        self.value_checks = [value_check(s.space) for s in sensors] if check_values else None
        self.check_rewards = check_values
        self.reward_checks = {}
        self.actuators = actuators
        self.sensor_uids = [str(s.uid) for s in sensors]
        self.sensor_index = {uid: i for i, uid in enumerate(self.sensor_uids)}
        prefix = self.prefix
        self.full_sensor_uids = [prefix + uid for uid in self.sensor_uids]
        baseline = m.EnvBaseline(
            sensors=[describe(s, prefix + str(s.uid)) for s in sensors],
            actuators=[describe(a, prefix + str(a.uid)) for a in actuators],
        )
        self.values = [desc.value for desc in baseline.sensors]
        self.last_values = self.values
        self._send_records()
        return baseline

    def reset_request(self) -> EnvironmentResetRequest:
        """What palaestrAI's simulation controller would send with a reset."""
        context = self.env.context
        return EnvironmentResetRequest(
            sender_simulation_controller_id=names.controller(self.worker),
            receiver_environment_id=self.spec.uid,
            experiment_run_id=context.run_uid if context is not None else "",
            experiment_run_instance_id=context.instance_uid if context is not None else "",
            experiment_run_phase=context.phase_index if context is not None else 0,
        )

    def _held_up(self) -> None:
        """A paced step the controller asked for begins only now that the last set points
        are in: the time it waited for them adds to its lateness (see EnvStep.late_by)."""
        held = time.perf_counter() - self.asked_at
        if held > ON_TIME and self.late_by is not None:
            self.late_by += held

    def all_in(self) -> bool:
        """Whether the step can be taken; else note which Muscle we are waiting for."""
        expected = self.expected
        if expected is None:
            return False
        pending = self.pending
        for name in expected:
            if name not in pending:
                self.muscles.name = name
                if not self.muscles.since:
                    self.muscles.begin()
                return False
        self.muscles.end()
        return True

    def _collected(self) -> dict[str, Any]:
        """The expected Muscles' set points, merged in the controller's order."""
        pending = self.pending
        setpoints: dict[str, Any] = {}
        for name in self.expected or ():
            setpoints.update(pending.pop(name))
        self.expected = None
        return setpoints

    def update(self, setpoints: dict[str, Any] | None = None) -> m.EnvState:
        """Apply set points (by default: the expected Muscles') and step the world."""
        if setpoints is None:
            setpoints = self._collected()
        actuators = []
        for template in self.actuators:
            uid = str(template.uid)
            space = template.space
            if uid in setpoints:
                value = setpoints[uid]
                value = space.from_json_value(value) if space is not None else value
            else:
                value = template.value
            actuators.append(ActuatorInformation(value, space, uid))
        self.stepping.begin()
        result: Any = self.awaiter(self.env, "update", call(self.env.update, actuators))
        if self.transformer is not None:
            result = self._transform(result)
        self.stepping.end()
        is_state = isinstance(result, EnvironmentState)  # else palaestra's tuple
        if self.first_step:  # checked in full
            sensors, rewards, done = checks.first_state(
                self.env, result, self.declared, self.shapes.fixed
            )
        elif is_state:
            sensors, rewards, done = result.sensor_information, result.rewards, bool(result.done)
        else:
            state = tuple(result)
            sensors, rewards, done = state[0], state[1], bool(state[2])
        done, terminated, truncated = self._ends(result if is_state else None, done)
        # a last step may report no readings (palaestrAI's environments do): the last stand
        values = self.last_values if done and not sensors else self._values(sensors)
        reward_descs = self._rewards(rewards)
        self.advanced(values)
        if self.recording() and recorded(self.step - 1, done, self.record_every):
            # (its steps count from 1)
            simtime = result.simtime if is_state else None
            self._record_step(
                values, setpoints, reward_descs, simtime, (done, terminated, truncated)
            )
        return m.EnvState(
            values=values,
            rewards=reward_descs,
            done=done,
            terminated=terminated,
            truncated=truncated,
            late_by=self.late_by,
        )

    def _record_step(
        self,
        values: list[Any],
        setpoints: dict[str, Any],
        rewards: list[m.InfoDesc],
        simtime: Any,
        ends: tuple[bool, bool | None, bool | None],
    ) -> None:
        """Add the step's ``world_states`` row."""
        done, terminated, truncated = ends
        self.rows.add(
            m.WorldStateRow(
                self.episode,
                self.step,
                dict(zip(self.full_sensor_uids, values, strict=True)),
                {self.prefix + uid: value for uid, value in setpoints.items()},
                {r.uid: r.value for r in rewards},
                done,
                self._simtime(simtime) if simtime is not None else None,
                terminated,
                truncated,
                self.late_by,
            )
        )

    def _ends(
        self, state: EnvironmentState | None, done: bool
    ) -> tuple[bool, bool | None, bool | None]:
        """``done``, ``terminated`` and ``truncated`` of the step (None: the environment does not
        say); an agent that reached its objective rule ends the episode, cut short."""
        terminated = None if state is None else _flag(state.terminated)
        truncated = None if state is None else _flag(state.truncated)
        if self.stop_requested:
            done, self.stop_requested = True, False
            if terminated is not None or truncated is not None:
                truncated = truncated or not terminated
        return done, terminated, truncated

    def _transform(self, result: Any) -> EnvironmentState:
        """The step's state as the run file's state transformer rewrites it: it sees and
        returns the sensors with the uids agents see (``"<env uid>.<sensor>"``)."""
        if isinstance(result, EnvironmentState):
            state = result
        else:
            sensors, rewards, done = checks.state_parts(self.env, result)
            state = EnvironmentState(list(sensors), list(rewards), done, world_state=sensors)
        prefix = self.prefix
        state.sensor_information = [
            _renamed(s, prefix + str(s.uid)) for s in state.sensor_information
        ]
        transformer: Any = self.transformer
        new = call(transformer.__call__, state)
        if not isinstance(new, EnvironmentState):
            raise PluginContractError(
                transformer,
                "__call__",
                f"returned {type(new).__name__}, expected an EnvironmentState",
            )
        cut = len(prefix)
        new.sensor_information = [
            _renamed(s, str(s.uid)[cut:]) if str(s.uid).startswith(prefix) else s
            for s in new.sensor_information
        ]
        return new

    def _simtime(self, simtime: Any) -> dict[str, Any]:
        """The plain form of the sim time a state reports, for ``world_states.simtime``."""
        if type(simtime) is SimTime:
            return simtime.to_dict()
        try:  # another SimTime class of the same shape (palaestrAI's own)
            return SimTime(simtime.simtime_ticks, simtime.simtime_timestamp).to_dict()
        except (AttributeError, TypeError, ValueError) as e:
            raise PluginContractError(
                self.env,
                "update",
                f"returned an EnvironmentState with simtime = {simtime!r}, expected a "
                f"palaestra.core.simtime.SimTime or None ({e})",
            ) from None

    def _values(self, sensors: Sequence[SensorInformation]) -> list[Any]:
        """The sensor values in baseline order, as JSON; each checked against its space
        unless that is switched off. An unknown or missing sensor always fails the run."""
        values: list[Any] = [None] * len(self.sensor_uids)
        index_of = self.sensor_index.get
        value_checks = self.value_checks
        for sensor in sensors:
            index = index_of(str(sensor.uid))
            if index is None:
                raise checks.unknown_sensor(self.env, str(sensor.uid), self.sensor_uids)
            if value_checks is not None and not value_checks[index](sensor.value):
                declared = self.declared[self.sensor_uids[index]]
                fixed = self.shapes.fixed(self.env, "update", "sensor", sensor, declared)
                if fixed is None:
                    raise checks.outside(self.env, "sensor", sensor, declared)
                sensor = fixed
            values[index] = json_value(sensor)
        if len(sensors) < len(values):  # (the first step also finds a sensor given twice)
            reported = {str(s.uid) for s in sensors}
            raise checks.missing_sensors(
                self.env, [uid for uid in self.sensor_uids if uid not in reported]
            )
        return values

    def _rewards(self, rewards: Sequence[RewardInformation]) -> list[m.InfoDesc]:
        if not self.check_rewards:
            return [describe(r) for r in rewards]
        known = self.reward_checks
        described = []
        for reward in rewards:
            space = reward.space
            entry = known.get(id(space))
            if entry is None or entry[0] is not space:  # a space not seen yet
                entry = known[id(space)] = (space, value_check(space))
            if not entry[1](reward.value):
                fixed = self.shapes.fixed(self.env, "update", "reward", reward, space)
                if fixed is None:
                    raise checks.outside(self.env, "reward", reward, space)
                reward = fixed
            described.append(describe(reward))
        return described

    def link_to(self, hot: HotLoop, process: str) -> Channel:
        """The link of Muscle ``process`` (it linked when its episode began)."""
        while process not in self.links:
            self._accept(hot, wait=True)
        return self.links[process]

    async def close(self) -> None:
        await self.hot.stop()  # the loop pushes its last rows and closes the producer

    async def teardown(self) -> None:
        await asyncio.to_thread(self.shutdown_world)

    def shutdown_world(self) -> None:
        """Each game's ``shutdown`` (a coroutine awaited within ``answer_timeout``), then
        what an asynchronous environment left running on its loop is cancelled."""
        try:
            for game in self.games:
                shutdown = call(game.env.shutdown)
                self.awaiter(game.env, "shutdown", shutdown, self.answer_timeout, closing=True)
        finally:
            left = self.awaiter.close()
            if left:
                LOG.debug("%s: cancelled %s at shutdown", self.name, ", ".join(left))


def _flag(value: Any) -> bool | None:
    """An environment's ``terminated``/``truncated`` as a plain bool (None: not said)."""
    return None if value is None else bool(value)
