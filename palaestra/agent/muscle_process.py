"""The rollout-worker process: runs one Muscle and its Objective for one worker.

Per step it receives the agent's sensor values (from the environment that drives the episode,
or from the simulation controller), completes the previous transition (rewards, objective),
sends it with ``data_for_brain`` to the Brain, applies the Brain's update, sends the new
set points to the environments, and records the Muscle's statistics. In a test phase the
Muscle loads the trained model (``prepare_model``, after ``setup``) from the agent's brain
dumps before its first step. The Brain and the environments are reached over direct links
(:mod:`palaestra.core.channel`, no broker); the simulation controller over ZMQ.
"""

from __future__ import annotations

import logging
import pickle
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np
import zmq

from palaestra.agent.context import BrainDumps, MuscleContext
from palaestra.agent.filter import FilterChain
from palaestra.agent.hot_reload import (
    HotReload,
    muscle_reload,
    rebuilt_muscle,
    retire,
    watching,
)
from palaestra.agent.memory import Memory
from palaestra.agent.muscle import PROPOSAL, Muscle, proposal
from palaestra.agent.muscle_lanes import MuscleLanes
from palaestra.agent.objective import Objective, objective_value
from palaestra.agent.objective_stop import ObjectiveStop
from palaestra.agent.previous import Previous
from palaestra.agent.statistics import record_statistics
from palaestra.core import messages as m
from palaestra.core import names
from palaestra.core.channel import Channel, PeerGone
from palaestra.core.codec import SpaceCache
from palaestra.core.esm import Component, ComponentRuntime
from palaestra.core.hotloop import HotLoop, closing_producer, run_hot
from palaestra.core.information import (
    ActuatorInformation,
    RewardInformation,
    SensorInformation,
    json_value,
)
from palaestra.core.loading import load_class
from palaestra.core.mode import Mode
from palaestra.core.plugin import PluginContractError, PluginError, call
from palaestra.core.plugin_records import recorder_for, send_records
from palaestra.core.recording_control import RecordingSwitch
from palaestra.core.records import (
    RowSink,
    UnencodableValue,
    code_reload_values,
    connect_store,
    muscle_action_values,
    plugin_record_values,
    recorded,
    send,
    statistics_values,
    unencodable_key,
)
from palaestra.core.seeds import derive_seed
from palaestra.core.space_checks import Check, value_check
from palaestra.core.specs import UPDATE_LAG_ASYNC, AgentSpec
from palaestra.core.transport import endpoint_for, link_for
from palaestra.core.watch import Waiting, watch

LOG = logging.getLogger(__name__)


class MuscleProcess(Component):
    """One agent's Muscle in one worker."""

    objective: Objective

    def __init__(
        self,
        name: str,
        *,
        agent: AgentSpec,
        agent_id: int,
        worker: int,
        mode: str,
        seed: int,
        brain_endpoint: str,
        environments: dict[str, str] | None = None,
        store_endpoint: str | None,
        sensors: list[m.InfoDesc],
        actuators: list[m.InfoDesc],
        answer_timeout: float = 300.0,
        update_lag: int = 0,
        dumps: dict[str, bytes] | None = None,
        dump_source: str = "",
        record_every: int = 1,
        phase_id: int = 0,
    ) -> None:
        super().__init__(name)
        self.phase_id = phase_id  # of its plug-in records and code reloads
        self.record_every = record_every  # which steps get a row: see PhaseConfig
        self.dumps = BrainDumps(loaded=dumps or {}, source=dump_source, owner=name)
        self.environment_endpoints = environments or {}
        self.acts_on = {uid.partition(".")[0] for uid in agent.actuators}
        self.links: dict[str, Channel] = {}  # to the environments, by uid
        self.update_lag = update_lag
        self.awaiting = False
        # update_lag async: experiences the Brain has not answered yet (sent or still in the
        # outbox, which holds those its link had no room for)
        self.outstanding = 0
        self.outbox: deque[bytes] = deque()
        self.outbox_bytes = 0
        self.outbox_warned = False
        self.brain_waiting = Waiting(names.brain(agent.name), answer_timeout, grace=1.0)
        self.agent = agent
        self.agent_id = agent_id
        self.worker = worker
        self.mode = mode
        self.seed = seed
        self.brain_endpoint = brain_endpoint
        self.store_endpoint = store_endpoint
        self.spaces = SpaceCache()
        self.memory = Memory(agent.muscle_memory.rows, agent.muscle_memory.bytes)
        self.sensor_uids: list[str] = []
        self.sensor_spaces: list[Any] = []
        self.actuator_uids: list[str] = []
        self.actuator_spaces: list[Any] = []
        self.episode = 0
        self.previous: Previous | None = None
        self.rows = RowSink(None, "muscle_actions", shape=self._shape)  # the store's once running
        self.statistics = RowSink(None, "statistics", shape=self._statistics_shape)
        self.records = RowSink(None, "plugin_records", shape=self._plugin_shape)
        self.recorder = recorder_for(name)
        self.record_source = f"muscle:{agent.name}"  # of its plug-in records
        self.switch = RecordingSwitch()
        self.acted_paused = False  # recording was paused when the last step was acted on
        reload = muscle_reload(name, agent) if agent.hot_reload else None  # before the build
        self.muscle = self._construct(agent, sensors, actuators)
        self.filters = FilterChain(agent.filters)
        self.objective_stop = ObjectiveStop(agent.objective_stop) if agent.objective_stop else None
        self.end_phase = False  # the Brain said its phase rule holds: no further episode
        self.objective_reached = False
        self.evaluation = False  # the episode is an evaluation rollout
        self.games: MuscleLanes | None = None  # with envs_per_worker: the worker's games
        self.own_mode: Mode | None = None  # the Muscle's own mode, restored after evaluation
        self.last_update: bytes | None = None  # the Brain's newest, pickled: for a hot reload
        self.reload: HotReload | None = None
        if reload is not None:
            self.use_reload(reload)

    # --- hot reload ----------------------------------------------------------------------

    def use_reload(self, reload: HotReload) -> None:
        """Look for changed plug-in files with ``reload`` before each step (or round), if it
        has any file to watch."""
        if watching(self.name, reload, self.agent, brain=False):
            reload.rebuild = self._rebuild
            self.reload = reload

    def stepper(self) -> Callable[[m.AgentStep], m.AgentActions]:
        """What takes a step: :meth:`step`, or with a hot reload :meth:`_reloading_step`."""
        return self.step if self.reload is None else self._reloading_step

    def _reloading_step(self, message: m.AgentStep) -> m.AgentActions:
        """A step that first looks for changed plug-in files (every ``CHECK_INTERVAL``)."""
        assert self.reload is not None
        if self.reload.due():
            self.reload_check(self.worker, self.episode, message.step)
        return self.step(message)

    def reload_check(self, worker: int, episode: int, step: int) -> None:
        """Look for changed plug-in files now (a hot reload is on); a reload's rows name where
        it happened (with ``envs_per_worker``: the round's first game)."""
        assert self.reload is not None
        outcomes = self.reload.check()
        if outcomes:
            rows = self.reload.rows(outcomes, worker, episode, step)
            shaped = [code_reload_values(self.phase_id, row) for row in rows]
            send(self.records.socket, m.Rows(table="code_reloads", rows=shaped))

    def _rebuild(self, classes: dict[str, type]) -> None:
        """New Muscle and Objective instances from reloaded classes, swapped in when both
        were built (a failure keeps the old ones)."""
        old = self.muscle
        muscle, objective = rebuilt_muscle(
            self.agent, classes, old, self.objective, self.mode, self.last_update
        )
        self.objective = objective
        if muscle is old:
            return
        self.muscle = muscle
        for agent_filter in self.filters.filters:
            agent_filter.muscle = muscle
        for sink in (self.rows, self.statistics, self.records):
            if sink.plugin is not None:
                sink.plugin = (muscle, sink.plugin[1])
        retire(self.name, old)

    def _shape(self, row: m.MuscleActionRow) -> tuple[Any, ...]:
        """The row ready to insert (see :class:`~palaestra.core.messages.Rows`)."""
        return muscle_action_values(self.agent_id, self.worker, row)

    def _statistics_shape(self, row: m.StatisticsRow) -> tuple[Any, ...]:
        return statistics_values(self.agent_id, row)

    def _plugin_shape(self, row: m.PluginRecordRow) -> tuple[Any, ...]:
        return plugin_record_values(self.phase_id, row)

    def _record_statistics(self, step: int) -> None:
        """Store what the Muscle added with ``add_statistics`` (and ``context.record``) during
        this step."""
        record_statistics(self.muscle, self.statistics, "muscle", self.worker, self.episode, step)
        source = self.record_source
        send_records(self.recorder, self.records, source, self.worker, self.episode, step)

    def _construct(
        self, agent: AgentSpec, sensors: list[m.InfoDesc], actuators: list[m.InfoDesc]
    ) -> Muscle:
        muscle: Muscle = call(load_class(agent.muscle.name), **agent.muscle.params)
        self.objective = call(load_class(agent.objective.name), **agent.objective.params)
        self._set_schema(sensors, actuators)
        muscle.attach(
            MuscleContext(
                name=agent.name,
                uid=self.name,
                worker=self.worker,
                mode=self.mode,
                seed=self.seed,
                sensors=self.spaces.build(SensorInformation, sensors),
                actuators=self.spaces.build(ActuatorInformation, actuators),
                rng=np.random.default_rng(self.seed),
                dumps=self.dumps,
                recorder=self.recorder,
            )
        )
        return muscle

    def _set_schema(self, sensors: list[m.InfoDesc], actuators: list[m.InfoDesc]) -> None:
        self.sensor_uids = [d.uid for d in sensors]
        self.sensor_spaces = [self.spaces.space(d.uid, d.space) for d in sensors]
        self.actuator_uids = [d.uid for d in actuators]
        self.actuator_spaces = [self.spaces.space(d.uid, d.space) for d in actuators]
        self.setpoint_checks: dict[str, Check] = {
            uid: value_check(space)
            for uid, space in zip(self.actuator_uids, self.actuator_spaces, strict=True)
        }
        self.seed_actuators()

    def seed_actuators(self) -> None:
        """Seed each actuator space (for ``sample()``) from the worker's seed: at every
        episode's start, so a seeded random Muscle repeats its episodes' draws."""
        for uid, space in zip(self.actuator_uids, self.actuator_spaces, strict=True):
            if space is not None:
                space.seed(derive_seed(self.seed, "actuator", uid))

    async def setup(self, runtime: ComponentRuntime) -> dict[str, str]:
        self.runtime = runtime
        endpoint = endpoint_for(runtime.run_dir, names.endpoint(self.name, "muscle"))
        self.filters.set_up(muscle=self.muscle)
        call(self.muscle.setup)
        # The trained model, after setup and before the first step: a Muscle that builds its
        # model in setup (harl's PipelineMuscle) loads into it. palaestrAI 3.5.18's rollout
        # worker calls it before setup, but only if the Muscle's mode is TEST by then, which it
        # never is (the mode is set with each step's request): it never calls it there.
        if self.mode == "test":
            call(self.muscle.prepare_model)
        loop = HotLoop(runtime, self.name)
        router, announced = loop.bind(zmq.ROUTER, endpoint)
        self.hot = run_hot(runtime, self.name, lambda hot: self._serve(hot, router), loop)
        runtime.start_task(watch([self.brain_waiting]))
        return {"muscle": announced}

    def _serve(self, hot: HotLoop, router: zmq.Socket[bytes]) -> None:
        """The hot loop: begin episodes and step, consulting the Brain."""
        self.hot_loop = hot
        store = connect_store(hot, self.store_endpoint)
        self.rows = RowSink(
            store, "muscle_actions", plugin=(self.muscle, "propose_actions"), shape=self._shape
        )
        self.statistics = RowSink(
            store,
            "statistics",
            plugin=(self.muscle, "add_statistics"),
            shape=self._statistics_shape,
        )
        self.records = RowSink(
            store, "plugin_records", plugin=(self.muscle, "record"), shape=self._plugin_shape
        )
        wait = hot.poller(router)
        step = self.stepper()
        with closing_producer(self.rows, self.name, self.statistics, self.records):
            while True:
                wait()
                sender, payload = router.recv_multipart()
                message = m.decode(payload)
                if isinstance(message, m.AgentStep):  # the controller drives the episode
                    reply = step(message)
                    if message.done:  # the controller waits for the end of an episode
                        router.send_multipart([sender, m.encode(reply)])
                elif isinstance(message, m.AgentEvaluate):  # its rollouts are over
                    router.send_multipart([sender, self._evaluate(message)])
                elif isinstance(message, m.AgentEpisode):
                    self.begin_episode(message)
                    # acknowledged: the episode's first step may come from another peer
                    router.send_multipart([sender, m.encode(m.AgentActions(setpoints={}))])
                    if message.lanes:  # the driver's rounds of all the worker's games
                        if self.games is None:  # (kept over the phase: its games go on)
                            self.games = MuscleLanes(self, message.lanes)
                        self.games.play(self.links[message.driver])
                else:
                    raise TypeError(f"{self.name} cannot handle {type(message).__name__}")

    def _link(self, hot: HotLoop) -> None:
        """Link to the Brain and the worker's environments (all are up once episodes begin)."""
        brain = hot.connect(self.brain_endpoint, names.brain(self.agent.name))
        environments = {
            uid: hot.connect(link_for(endpoint), names.environment(uid, self.worker))
            for uid, endpoint in self.environment_endpoints.items()
        }
        self.wire(brain, environments)

    def wire(self, brain: Channel, environments: dict[str, Channel]) -> None:
        """Use these links to the Brain and to the worker's environments (by uid); a test
        wires in-memory links (:class:`palaestra.testing.FakeLink`)."""
        self.brain = brain
        self.links = environments
        acts_on = self.acts_on
        self.acting_links = [(uid, link) for uid, link in environments.items() if uid in acts_on]

    def begin_episode(self, message: m.AgentEpisode) -> None:
        if not hasattr(self, "brain"):
            self._link(self.hot_loop)
        if message.episode > 0 and not message.lanes:  # (each game resets its own episodes)
            call(self.muscle.reset)
        self._evaluating(message.evaluation)
        self.episode = message.episode
        self.previous = None
        self._set_schema(message.sensors, message.actuators)

    def _evaluating(self, evaluation: bool) -> None:
        """Begin an evaluation rollout (test mode, the Brain not told) or a normal episode."""
        if evaluation == self.evaluation:
            return
        muscle = self.muscle.__dict__
        if evaluation:
            self.own_mode = muscle.get("_palaestra_mode")
            muscle["_palaestra_mode"] = Mode.TEST
        elif self.own_mode is None:
            muscle.pop("_palaestra_mode", None)
        else:
            muscle["_palaestra_mode"] = self.own_mode
        self.evaluation = evaluation

    def _evaluate(self, message: m.AgentEvaluate) -> bytes:
        """Ask the Brain to judge the evaluation's rollouts; its answer, to pass on."""
        self._send(self.brain, m.encode(message))
        self.brain_waiting.begin()
        try:
            answer = self.brain.recv()
        except PeerGone:
            self.hot_loop.idle()  # its parent reports why
        self.brain_waiting.end()
        return answer

    def step(self, message: m.AgentStep) -> m.AgentActions:
        """Complete the last transition, consult the Brain, act.

        With ``update_lag`` 0 the Brain's answer to this step's experience is applied before
        acting (palaestrAI's order). With 1, the answer to the previous step's experience is
        applied and this step's goes out without waiting: the Brain thinks while the world
        steps. The first step of an episode and its end are always waited for. With
        ``async`` (:data:`~palaestra.core.specs.UPDATE_LAG_ASYNC`) only the end is: see
        :meth:`_async_step`.
        """
        transition = None
        previous = self.previous
        if previous is not None and message.rewards is not None:
            transition = self._complete(previous, message)
            if self.objective_stop is not None:
                self.objective_reached = self.objective_stop.reached(transition.objective)
            if recorded(previous.step, message.done, self.record_every) and not self.acted_paused:
                self.rows.add(
                    m.MuscleActionRow(
                        self.episode,
                        previous.step,
                        dict(zip(self.sensor_uids, previous.sensor_values, strict=True)),
                        previous.setpoint_values,
                        {r.uid: r.value for r in message.rewards},
                        transition.objective,
                        message.done,
                        message.terminated,
                        message.truncated,
                        previous.stale,
                    )
                )
        if self.evaluation:  # not learned from: the Brain hears nothing of it
            return self._evaluation_step(message)
        if self.update_lag == UPDATE_LAG_ASYNC:
            return self._async_step(message, transition, previous)
        if self.awaiting:
            self._apply_brain_answer()
        data = previous.data if previous is not None else _NONE_PICKLE
        self._send(
            self.brain,
            m.encode(
                m.Experience(
                    worker=self.worker,
                    transition=transition,
                    data=data,
                    done=message.done,
                    episode=self.episode,
                    step=message.step,
                )
            ),
        )
        self.awaiting = True
        if self.update_lag == 0 or previous is None or message.done:
            self._apply_brain_answer()
        if message.done:
            self.previous = None
            self._record_statistics(message.step)
            self.rows.flush()
            self.statistics.flush()
            return m.AgentActions(setpoints={}, end_phase=self.end_phase)
        actions = self._act(message)
        self.acted_paused = self.switch.paused()
        self._record_statistics(message.step)
        return actions

    def _async_step(
        self, message: m.AgentStep, transition: m.Transition | None, previous: Previous | None
    ) -> m.AgentActions:
        """``update_lag: async``: apply the Brain's answers that are there, act with the
        policy the Muscle has (stale if an answer to an earlier step is still out), and send
        the experience without waiting. Only the episode's end waits for every answer, so
        the Brain has learned from all of it before the episode ends (and its dumps have)."""
        experience = m.encode(
            m.Experience(
                worker=self.worker,
                transition=transition,
                data=previous.data if previous is not None else _NONE_PICKLE,
                done=message.done,
                episode=self.episode,
                step=message.step,
            )
        )
        stale = self.send_async(experience, message.done)
        if message.done:
            self.previous = None
            self._record_statistics(message.step)
            self.rows.flush()
            self.statistics.flush()
            return m.AgentActions(setpoints={}, end_phase=self.end_phase)
        actions = self._act(message, stale)
        self.acted_paused = self.switch.paused()
        self._record_statistics(message.step)
        return actions

    def send_async(self, experience: bytes, settle: bool) -> bool:
        """``update_lag: async``: send ``experience`` to the Brain without waiting (what the
        link has no room for waits in the outbox) and apply the answers that are there; with
        ``settle``, wait for every answer. Whether an answer is still out: the Muscle acts
        with a stale policy."""
        self.outbox.append(experience)
        self.outbox_bytes += len(experience)
        if settle:
            self._settle_with_brain()
            return False
        brain = self.brain
        while self.outstanding and brain.ready():
            self._take_async_answer()
        stale = self.outstanding > 0
        self.outstanding += 1
        self._send_outbox()
        if self.outbox_bytes > OUTBOX_BYTES:  # the Brain fell far behind: wait for it
            self._warn_outbox()
            while self.outbox_bytes > OUTBOX_BYTES:
                self._take_async_answer()
                self._send_outbox()
        return stale

    def _settle_with_brain(self) -> None:
        """Send the experiences still in the outbox and apply every answer (blocking): the
        Brain answers those it has while the rest wait for room on the link."""
        self.outstanding += 1  # the episode's last experience, in the outbox
        while self.outbox:
            if not self._send_outbox():  # the link is full: the Brain answers one of them
                self._take_async_answer()
        while self.outstanding:
            self._take_async_answer()

    def _send_outbox(self) -> bool:
        """Send what the link to the Brain takes now, oldest first; whether anything went."""
        outbox = self.outbox
        sent = False
        while outbox and self._try_send(outbox[0]):
            self.outbox_bytes -= len(outbox.popleft())
            sent = True
        return sent

    def _warn_outbox(self) -> None:
        if not self.outbox_warned:
            self.outbox_warned = True
            LOG.warning(
                "%s: its Brain is more than %d MiB of experience behind: the Muscle waits for "
                "it until it is below that (update_lag: async)",
                self.name,
                OUTBOX_BYTES >> 20,
            )

    def _take_async_answer(self) -> None:
        self._apply_brain_answer()
        self.outstanding -= 1

    def _try_send(self, data: bytes) -> bool:
        try:
            return self.brain.try_send(data)
        except PeerGone:
            self.hot_loop.idle()  # its parent reports why

    def _evaluation_step(self, message: m.AgentStep) -> m.AgentActions:
        if message.done:
            self.previous = None
            self._record_statistics(message.step)
            self.rows.flush()
            self.statistics.flush()
            return m.AgentActions(setpoints={}, end_phase=self.end_phase)
        actions = self._act(message)
        self.acted_paused = self.switch.paused()
        self._record_statistics(message.step)
        return actions

    def _apply_brain_answer(self) -> None:
        self.brain_waiting.begin()
        try:
            answer = m.decode(self.brain.recv())
        except PeerGone:
            self.hot_loop.idle()  # its parent reports why; the watch names it if not
        self.brain_waiting.end()
        self.awaiting = False
        if not isinstance(answer, m.BrainUpdate):
            raise TypeError(f"{self.name}: unexpected {type(answer).__name__} from the brain")
        if answer.end_phase:
            self.end_phase = True
        if answer.update is not None:
            self.last_update = answer.update
            call(self.muscle.update, pickle.loads(answer.update))

    def _complete(self, previous: Previous, message: m.AgentStep) -> m.Transition:
        """The transition from ``previous`` that ``message`` completes (it has rewards)."""
        rewards = message.rewards or []
        done, terminated, truncated = message.done, message.terminated, message.truncated
        reward_infos = self.spaces.build(RewardInformation, rewards)
        self.memory.append(
            self.name,
            sensor_readings=previous.sensors,
            actuator_setpoints=previous.setpoints,
            rewards=reward_infos,
            done=done,
            terminated=terminated,
            truncated=truncated,
        )
        value = objective_value(self.objective, call(self.objective.internal_reward, self.memory))
        self.memory.append(self.name, objective=value)
        return m.Transition(
            previous.seen_values,
            previous.setpoint_values,
            rewards,
            value,
            done,
            terminated,
            truncated,
        )

    def _act(self, message: m.AgentStep, stale: bool | None = None) -> m.AgentActions:
        sensors = [
            SensorInformation(space.from_json_value(v) if space is not None else v, space, uid)
            for uid, space, v in zip(
                self.sensor_uids, self.sensor_spaces, message.values, strict=True
            )
        ]
        available = [
            ActuatorInformation(None, space, uid)
            for uid, space in zip(self.actuator_uids, self.actuator_spaces, strict=True)
        ]
        seen_values = message.values
        if self.filters:  # the Muscle (and the Brain's memory) get what the filters made
            seen, setpoints, data_for_brain = self.filters.act(
                self.muscle.propose_actions, sensors, available
            )
            seen_values = [json_value(s) for s in seen]
        else:
            setpoints, data_for_brain = proposal(
                self.muscle, call(self.muscle.propose_actions, sensors, available)
            )
        values = self.setpoint_values(setpoints, message.step, self.episode)
        self._send_setpoints(values, message.step)
        self.previous = Previous(
            message.step,
            sensors,
            list(setpoints),
            message.values,
            values,
            pickle.dumps(data_for_brain, protocol=pickle.HIGHEST_PROTOCOL),
            seen_values,
            stale,
        )
        return m.AgentActions(setpoints=values, stop=self.objective_reached)

    def setpoint_values(self, setpoints: Any, step: int, episode: int) -> dict[str, Any]:
        """The set points ``propose_actions`` chose, as values by actuator uid, checked before
        anything is applied, in one pass: an actuator this agent was not given, or a value
        outside its actuator's declared space, fails the step naming the Muscle (not the
        environment that would have tripped over it)."""
        checks = self.setpoint_checks
        values: dict[str, Any] = {}
        foreign = False
        for actuator in setpoints:
            try:
                uid, value = str(actuator.uid), actuator.value
            except AttributeError as exc:  # not ActuatorInformation
                raise self._not_setpoints(setpoints, step, episode) from exc
            check = checks.get(uid)
            if check is None:
                foreign = True
            elif not check(value):
                raise self._outside(uid, value, step, episode)
            values[uid] = json_value(actuator)
        if foreign:
            raise self._foreign(values)
        return values

    def _not_setpoints(self, setpoints: Any, step: int, episode: int) -> PluginContractError:
        found = ", ".join(sorted({type(a).__name__ for a in setpoints}))
        return PluginContractError(
            self.muscle,
            "propose_actions",
            f"returned set points of type {found} at step {step} of episode {episode}: {PROPOSAL}",
        )

    def _outside(self, uid: str, value: Any, step: int, episode: int) -> PluginContractError:
        space = self.actuator_spaces[self.actuator_uids.index(uid)]
        return PluginContractError(
            self.muscle,
            "propose_actions",
            f"set actuator '{uid}' to {value!r} at step {step} of episode {episode}, which is "
            f"not in its declared space {space}; nothing was applied",
        )

    def _foreign(self, values: dict[str, Any]) -> PluginContractError:
        """The error for set points of actuators this agent was not given."""
        foreign = sorted(uid for uid in values if uid not in self.setpoint_checks)
        given = ", ".join(self.actuator_uids[:10])
        more = f" and {len(self.actuator_uids) - 10} more" if len(self.actuator_uids) > 10 else ""
        return PluginContractError(
            self.muscle,
            "propose_actions",
            f"set actuator {', '.join(map(repr, foreign))}, which agent '{self.agent.name}' "
            f"was not given (its actuators: {given or 'none'}{more}); nothing was applied",
        )

    def _send_setpoints(self, values: dict[str, Any], step: int) -> None:
        """Straight to each environment this agent acts on, by the environment's own ids."""
        links = self.acting_links
        by_env: dict[str, dict[str, Any]] = {uid: {} for uid, _ in links}
        for uid, value in values.items():
            env_uid, _, local = uid.partition(".")
            if env_uid in by_env:
                by_env[env_uid][local] = value
        try:
            stop = self.objective_reached
            messages = [
                m.encode(m.AgentActions(setpoints=by_env[uid], stop=stop)) for uid, _ in links
            ]
        except (TypeError, ValueError, OverflowError) as exc:
            raise self._unsendable(values, step, exc)  # noqa: B904 - its cause is set
        for (_, link), data in zip(links, messages, strict=True):
            self._send(link, data)

    def _unsendable(self, values: dict[str, Any], step: int, exc: Exception) -> PluginError:
        """The error for a set point that cannot be sent (nothing of the step was sent)."""
        uid = unencodable_key(values) or "?"
        value = values.get(uid)
        cause = UnencodableValue(
            f"the value of set point '{uid}' ({type(value).__name__}) at step {step} of "
            f"episode {self.episode} cannot be sent: {exc}. Values must be numbers, strings, "
            "booleans, None, or lists and dicts of them (give the actuator a space to convert "
            "numpy values)"
        )
        error = PluginError(self.muscle, "propose_actions")
        error.__cause__ = cause
        return error

    def _send(self, link: Channel, data: bytes) -> None:
        try:
            link.send(data)
        except PeerGone:
            self.hot_loop.idle()  # its parent reports why

    async def close(self) -> None:
        await self.hot.stop()  # the loop pushes its last rows and closes the producer

    async def teardown(self) -> None:
        call(self.muscle.teardown)


_NONE_PICKLE = pickle.dumps(None)
OUTBOX_BYTES = 64 << 20
"""With ``update_lag: async``, experiences waiting for room on the link to a Brain that fell
behind are kept up to this many bytes; beyond, the Muscle waits for the Brain (so a Brain
slower than the world for good slows it rather than filling the memory)."""
