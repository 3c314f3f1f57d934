"""One game of a worker: an environment plug-in, its episode and its rows.

A :class:`World` holds what one instance of the environment needs to play: the plug-in
(constructed with its params and seed), the sensors and actuators its start declared and
the checks of their values, the episode and step it is at, how the step ends, and the sinks of
its ``world_states`` and plug-in record rows. It starts (:meth:`World.start_world`) and steps
(:meth:`World.update`, or a batch of worlds in one call: :mod:`palaestra.environment.batch`)
with no process or socket: the environment process hosts the worker's worlds (one, or
``envs_per_worker``) and plays them (:mod:`palaestra.environment.lanes`); a replay steps its
own (:mod:`palaestra.replay.live`).
"""

from __future__ import annotations

import copy
import inspect
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from palaestra.core.description import names
from palaestra.core.description.loading import load_class
from palaestra.core.description.specs import ClassSpec, EnvironmentSpec
from palaestra.core.information import (
    ActuatorInformation,
    RewardInformation,
    SensorInformation,
    json_value,
)
from palaestra.core.plugin import PluginContractError, call
from palaestra.core.simtime import SimTime
from palaestra.core.space_checks import Check, value_check
from palaestra.core.supervision.watch import Waiting
from palaestra.core.wire import messages as m
from palaestra.core.wire.codec import describe
from palaestra.core.wire.records import recorded, stored_rewards
from palaestra.environment import checks
from palaestra.environment.aio import Awaiter
from palaestra.environment.environment import Environment, EnvironmentContext, EnvironmentState
from palaestra.environment.reset import EnvironmentResetRequest
from palaestra.environment.reset_call import call_reset
from palaestra.environment.shapes import ShapeFix
from palaestra.environment.world_rows import WorldRows

LOG = logging.getLogger(__name__)


SUPPLIED = ("uid", "seed", "broker_uri")
"""What palaestra gives an environment's constructor beside its params, where it takes them
and the params do not (palaestrAI's environments take all three)."""


def construct(spec: EnvironmentSpec, seed: int) -> Environment:
    """Instantiate the environment with its params (and :data:`SUPPLIED` where it takes
    them)."""
    cls = load_class(spec.name)
    kwargs = dict(spec.params)
    accepted = inspect.signature(cls).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in accepted.values())
    for key, value in zip(SUPPLIED, (spec.uid, seed, ""), strict=True):
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


@dataclass(slots=True, eq=False)
class Declared:
    """What a world's plug-in declared at its last start (or reset): its sensors (their uids,
    their uids with the environment's prefix, spaces and the checks of their values), its
    actuators, and whether (and against what) its rewards are checked."""

    prefix: str  # the environment's uid and a dot
    spaces: dict[str, Any] = field(default_factory=dict)  # by the sensor's own uid
    sensor_uids: list[str] = field(default_factory=list)
    full_sensor_uids: list[str] = field(default_factory=list)
    sensor_index: dict[str, int] = field(default_factory=dict)
    value_checks: list[Check] | None = None
    check_rewards: bool = True
    reward_checks: dict[int, tuple[Any, Check]] = field(default_factory=dict)  # by space id
    actuators: list[ActuatorInformation] = field(default_factory=list)
    actuator_table: list[tuple[str, ActuatorInformation]] = field(default_factory=list)  # by uid
    warned_repeats: bool = False  # an actuator a start returned twice was named once

    def take(
        self,
        sensors: Sequence[SensorInformation],
        actuators: list[ActuatorInformation],
        check_values: bool,
    ) -> None:
        """What a start declared (``check_values``: every step's values are checked)."""
        self.spaces = {str(s.uid): s.space for s in sensors}
        self.value_checks = [value_check(s.space) for s in sensors] if check_values else None
        self.check_rewards = check_values
        self.reward_checks = {}
        self.actuators = actuators
        self.actuator_table = [(str(a.uid), a) for a in actuators]
        self.sensor_uids = [str(s.uid) for s in sensors]
        self.sensor_index = {uid: i for i, uid in enumerate(self.sensor_uids)}
        self.full_sensor_uids = [self.prefix + uid for uid in self.sensor_uids]


class World:
    """One game of a worker (see the module's description).

    Args:
        name: The name of the process it plays in (messages, its plug-in's waits).
        environment: The environment of the run file.
        environment_id: The environment's id in the store.
        worker: The worker (with ``envs_per_worker``: the game's lane) its rows are under.
        seed: The seed of its plug-in.
        awaiter: What awaits an asynchronous plug-in's coroutines (one per process; None:
            its own).
        answer_timeout: How long a step of its plug-in may take before it is named.
    """

    def __init__(
        self,
        name: str,
        *,
        environment: EnvironmentSpec,
        environment_id: int,
        worker: int,
        seed: int,
        awaiter: Awaiter | None = None,
        answer_timeout: float = 300.0,
        phase_id: int = 0,
        run_uid: str = "",
        instance_uid: str = "",
        phase_index: int = 0,
        data_path: str = "",
        record_every: int = 1,
    ) -> None:
        self.name = name
        self.stop_requested = False  # an agent reached its objective rule: the step is the last
        self.last_values: list[Any] = []  # the sensor values after the last start or step
        self.shapes = ShapeFix(name)  # values in another shape than their Box's, reshaped
        # our own plug-in's step: if it never returns, we say so ourselves (a second after
        # the executor's judge would have, which can also tell how: see core.liveness)
        self.stepping = Waiting(name, answer_timeout, grace=1.0)
        self.awaiter = awaiter if awaiter is not None else Awaiter(name)
        self.spec = environment
        self.worker = worker
        self.env = construct(environment, seed)
        self.out = WorldRows(  # its rows' sinks: the store's once its process serves
            name, environment.uid, environment_id, phase_id, worker, record_every
        )
        self.env.attach(
            EnvironmentContext(
                uid=environment.uid,
                worker=worker,
                seed=seed,
                run_uid=run_uid,
                instance_uid=instance_uid,
                phase_index=phase_index,
                data_path=data_path,
                recorder=self.out.recorder,
            )
        )
        if environment.reward is not None:  # the environment calls it itself
            self.env.reward = _build(environment.reward)
        self.transformer: Any = (
            _build(environment.state_transformer) if environment.state_transformer else None
        )
        self.first_step = True
        self.declared = Declared(f"{environment.uid}.")  # what its plug-in's last start declared
        self.episode = -1
        self.step = 0
        self.late_by: float | None = None  # of the step being taken (paced; see EnvRound)
        # with `record: {every: N}`, the row of the last step when it was not recorded: the
        # episode's last if another environment (or game's agent) ended it (see record_last)
        self.unrecorded: Callable[[], None] | None = None

    def sensor_values(self) -> dict[str, Any]:
        """The world's sensor values now, by full uid."""
        return dict(zip(self.declared.full_sensor_uids, self.last_values, strict=True))

    def advanced(self, values: list[Any]) -> None:
        """The world took a step (alone or in a batch of games) and reads ``values`` now: the
        step counts, and what the environment recorded during it becomes rows."""
        self.last_values = values
        self.step += 1
        self.first_step = False
        out = self.out
        if out.recorder.records:  # (most steps: nothing)
            out.send_records(self.episode, self.step)

    def recording(self) -> bool:
        """Whether this step's row is written (see :meth:`WorldRows.recording`)."""
        return self.out.recording(self.episode, self.step)

    def start_world(self, reset: bool, check_values: bool = True) -> m.EnvBaseline:
        """Start (or reset) the world, check what it returned, and describe it.

        With ``check_values``, every step checks each sensor value and reward against its
        space (see :mod:`palaestra.environment.checks`); the first step after a start is
        always checked in full.
        """
        method = "reset" if reset else "start_environment"
        if reset:
            self.record_last()  # (the episode before it is over)
            result = call_reset(self.env, self.reset_request(), self.awaiter)
        else:
            self.unrecorded = None
            result = self.awaiter(self.env, method, call(self.env.start_environment))
        repeated: list[str] = []
        sensors, actuators = checks.baseline(self.env, method, result, repeated, self.shapes.fixed)
        if reset:
            before = self.declared
            uids = (before.sensor_uids, [uid for uid, _ in before.actuator_table])
            checks.kept_by_reset(self.env, uids, sensors, actuators)
        if repeated and not self.declared.warned_repeats:
            self.declared.warned_repeats = True
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
        self.declared.take(sensors, actuators, check_values)
        prefix = self.declared.prefix
        baseline = m.EnvBaseline(
            sensors=[describe(s, prefix + str(s.uid)) for s in sensors],
            actuators=[describe(a, prefix + str(a.uid)) for a in actuators],
        )
        self.last_values = [desc.value for desc in baseline.sensors]
        self.out.send_records(self.episode, self.step)
        return baseline

    def record_last(self) -> None:
        """The episode is over: with `record: {every: N}`, its last step's row if it was not
        recorded (another environment of the worker, not this one, ended the episode)."""
        row, self.unrecorded = self.unrecorded, None
        if row is not None:
            row()

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

    def update(
        self, setpoints: dict[str, Any], held: list[Callable[[], None]] | None = None
    ) -> m.EnvState:
        """Apply set points (by the environment's own actuator ids) and step the world; with
        ``held``, the step's row is made when its caller calls what it appended there (after
        sending the step's observations, so that the agents act meanwhile)."""
        actuators = []
        for uid, template in self.declared.actuator_table:
            space = template.space  # (as the batch reads it: the start's object may change it)
            value = setpoints.get(uid, _UNSET)
            if value is _UNSET:
                value = template.value  # (the start's value: none was set)
            elif space is not None:
                value = space.from_json_value(value)
            actuators.append(ActuatorInformation(value, space, uid))
        self.stepping.begin()
        result: Any = self.awaiter(self.env, "update", call(self.env.update, actuators))
        if self.transformer is not None:
            result = self._transform(result)
        self.stepping.end()
        is_state = isinstance(result, EnvironmentState)  # else palaestra's tuple
        try:  # (a later step's result is read as the first's was: its types are checked then)
            sensors, rewards, done = self._parts(result, is_state)
            done, terminated, truncated = self._ends(result if is_state else None, done)
            # a last step may report no readings (palaestrAI's environments do): the last stand
            values = self.last_values if done and not sensors else self._values(sensors)
            reward_descs = self._rewards(rewards)
        except (TypeError, IndexError, AttributeError):  # not what update() returns: say what
            checks.first_state(self.env, result, self.declared.spaces, self.shapes.fixed)
            raise  # (it is: the failure is not the plug-in's)
        self.advanced(values)
        if self.recording():
            every = self.out.every
            # (its steps count from 1)
            simtime = result.simtime if is_state else None
            row = partial(
                self._record_step,
                (self.episode, self.step, self.late_by),
                values,
                setpoints,
                reward_descs,
                simtime,
                (done, terminated, truncated),
            )
            if recorded(self.step - 1, done, every):
                self.unrecorded = None
                if held is None:
                    row()
                else:
                    held.append(row)
            elif every > 1:  # the episode's last if another environment ends it
                self.unrecorded = row
        return m.EnvState(
            values=values,
            rewards=reward_descs,
            done=done,
            terminated=terminated,
            truncated=truncated,
        )

    def _parts(self, result: Any, is_state: bool) -> tuple[Any, Any, bool]:
        """The sensors, rewards and ``done`` of what ``update`` returned: an episode's first
        step's checked in full, every step's ``done`` checked to be a bool."""
        if self.first_step:
            return checks.first_state(self.env, result, self.declared.spaces, self.shapes.fixed)
        if is_state:
            sensors, rewards, done = result.sensor_information, result.rewards, result.done
        else:
            state = tuple(result)
            sensors, rewards, done = state[0], state[1], state[2]
        if done is not False and done is not True:
            done = checks.done_flag(self.env, done)
        return sensors, rewards, done

    def _record_step(
        self,
        when: tuple[int, int, float | None],
        values: list[Any],
        setpoints: dict[str, Any],
        rewards: list[m.InfoDesc],
        simtime: Any,
        ends: tuple[bool, bool | None, bool | None],
    ) -> None:
        """Add the ``world_states`` row of a step (``when``: its episode, its step and how late
        it began)."""
        episode, step, late_by = when
        done, terminated, truncated = ends
        self.out.rows.add(
            m.WorldStateRow(
                episode,
                step,
                dict(zip(self.declared.full_sensor_uids, values, strict=True)),
                {self.declared.prefix + uid: value for uid, value in setpoints.items()},
                stored_rewards(rewards),
                done,
                self._simtime(simtime) if simtime is not None else None,
                terminated,
                truncated,
                late_by,
            )
        )

    def _ends(
        self, state: EnvironmentState | None, done: bool
    ) -> tuple[bool, bool | None, bool | None]:
        """``done``, ``terminated`` and ``truncated`` of the step (None: the environment does not
        say); an agent that reached its objective rule ends the episode, cut short."""
        terminated = truncated = None
        if state is not None:
            transformed = self.transformer is not None
            terminated = checks.end_flag(self.env, "terminated", state.terminated, transformed)
            truncated = checks.end_flag(self.env, "truncated", state.truncated, transformed)
        if self.stop_requested:
            return stopped(self, terminated, truncated)
        return done, terminated, truncated

    def _transform(self, result: Any) -> EnvironmentState:
        """The step's state as the run file's state transformer rewrites it: it sees and
        returns the sensors with the uids agents see (``"<env uid>.<sensor>"``)."""
        if isinstance(result, EnvironmentState):
            state = result
        else:
            sensors, rewards, done = checks.state_parts(self.env, result)
            state = EnvironmentState(list(sensors), list(rewards), done, world_state=sensors)
        prefix = self.declared.prefix
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
        values: list[Any] = [None] * len(self.declared.sensor_uids)
        index_of = self.declared.sensor_index.get
        value_checks = self.declared.value_checks
        for sensor in sensors:
            index = index_of(str(sensor.uid))
            if index is None:
                raise checks.unknown_sensor(self.env, str(sensor.uid), self.declared.sensor_uids)
            if value_checks is not None and not value_checks[index](sensor.value):
                declared = self.declared.spaces[self.declared.sensor_uids[index]]
                fixed = self.shapes.fixed(self.env, "update", "sensor", sensor, declared)
                if fixed is None:
                    raise checks.outside(self.env, "sensor", sensor, declared)
                sensor = fixed
            values[index] = json_value(sensor)
        if len(sensors) < len(values):  # (the first step also finds a sensor given twice)
            reported = {str(s.uid) for s in sensors}
            raise checks.missing_sensors(
                self.env, [uid for uid in self.declared.sensor_uids if uid not in reported]
            )
        return values

    def _rewards(self, rewards: Sequence[RewardInformation]) -> list[m.InfoDesc]:
        if not self.declared.check_rewards:
            return [describe(r) for r in rewards]
        known = self.declared.reward_checks
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

    def shutdown(self, timeout: float) -> None:
        """The plug-in's ``shutdown`` (a coroutine awaited within ``timeout`` seconds)."""
        shutdown = call(self.env.shutdown)
        self.awaiter(self.env, "shutdown", shutdown, timeout, closing=True)


def same_world(first: World, game: World) -> None:
    """Fail unless ``game`` has the sensors and actuators of the worker's first game (their
    Muscle acts in all with the same spaces)."""
    mine, theirs = game.declared, first.declared
    if mine.sensor_uids != theirs.sensor_uids or [str(a.uid) for a in mine.actuators] != [
        str(a.uid) for a in theirs.actuators
    ]:
        raise PluginContractError(
            game.env,
            "start_environment",
            f"of game {game.worker} reported sensors {mine.sensor_uids} and actuators "
            f"{[str(a.uid) for a in mine.actuators]}, the first game of the worker "
            f"{theirs.sensor_uids} and {[str(a.uid) for a in theirs.actuators]}: with "
            "envs_per_worker every instance must offer the same sensors and actuators",
        )


def stopped(
    game: World, terminated: bool | None, truncated: bool | None
) -> tuple[bool, bool | None, bool | None]:
    """The ends of a step an agent asked to be the game's last (its objective rule): done, and
    cut short where the environment says how its episodes end."""
    game.stop_requested = False
    if terminated is not None or truncated is not None:
        truncated = truncated or not terminated
    return True, terminated, truncated


_UNSET = object()
