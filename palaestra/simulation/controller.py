"""The simulation controller of one worker: starts its environments and episodes, ends its phase.

Who acts when is a :class:`~palaestra.core.turns.TurnPolicy` that each controller names
(:class:`~palaestra.simulation.vanilla.Vanilla`: every agent on every step;
:class:`~palaestra.simulation.taking_turns.TakingTurns`: one agent per step), applied to each
game by a :class:`~palaestra.core.turns.Game`. The worker's games (one, or
``envs_per_worker``) are played in rounds (:mod:`palaestra.core.rounds`, the one per-round
path) by the phase's one environment over its links to the Muscles, or by this controller,
which steps the games of every environment (:mod:`palaestra.simulation.remote_games`); the
simulation params' ``driver`` chooses (see :data:`DRIVERS`). The controller talks to each peer
over its own DEALER socket: request, answer, no broker. All of that runs in the controller's
hot loop (:mod:`palaestra.core.supervision.hotloop`) on blocking sockets; the asyncio thread only
relays the parent's requests and answers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, ClassVar

from palaestra.core.description import names
from palaestra.core.description.loading import load_class
from palaestra.core.description.specs import ClassSpec
from palaestra.core.plugin import call
from palaestra.core.rounds import Kept, play_rounds
from palaestra.core.supervision.esm import Component, ComponentRuntime, on
from palaestra.core.supervision.hotloop import HotLoop, closing_producer, run_hot
from palaestra.core.supervision.watch import Waiting, watch
from palaestra.core.termination import TerminationCondition
from palaestra.core.turns import BUILT_IN, TurnPolicy, class_name
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import evaluation_values, send
from palaestra.simulation.episode_report import EpisodeReport
from palaestra.simulation.peers import AgentPeer, Peer, ask_all
from palaestra.simulation.remote_games import RemoteGames, Seats

LOG = logging.getLogger(__name__)

DRIVERS = ("auto", "controller", "environment")
"""Values of the simulation param ``driver``: who plays the rounds of the worker's games.
``controller``: the simulation controller (any number of environments; it sends each
environment the set points of a round's games); ``environment``: the phase's only environment,
straight over its links to the Muscles (two messages per round fewer); ``auto`` (the default):
the environment when there is one and the controller's policy is a built-in one (with several
games per worker: any policy), else the controller. Both give the same world states and
actions."""


def params_problems(params: Mapping[str, Any], environments: int) -> list[tuple[str, str]]:
    """What is wrong with a phase's simulation params: (key, problem) pairs; empty if fine."""
    problems = []
    if not isinstance(params.get("check_values", True), bool):
        got = params["check_values"]
        problems.append(("check_values", f"expected true or false, got {got!r}."))
    driver = params.get("driver", "auto")
    if driver not in DRIVERS:
        expected = ", ".join(DRIVERS)
        problems.append(("driver", f"expected one of {expected}, got {driver!r}."))
    elif driver == "environment" and environments != 1:
        problems.append(
            (
                "driver",
                f"'environment' needs exactly one environment, the phase has {environments}.",
            )
        )
    return problems


class SimulationController(Component):
    """Runs the episodes of one worker under :attr:`policy`.

    Args:
        name: The process name.
        worker: The worker's index.
        conditions: The phase's and the run's termination conditions.
        params: The run file's simulation params (see :data:`DRIVERS` for ``driver``).
        answer_timeout: Seconds a peer may take to answer.
        phase: The phase's index (in each :class:`~palaestra.core.wire.messages.EpisodeEnded`).
        phase_id: The phase's id in the store (of its ``episodes`` rows).
        store_endpoint: The store writer's record socket (None: no store).

    Each episode that ends is told to the parent (its
    :class:`~palaestra.core.wire.messages.EpisodeEnded`, in batches: see
    :data:`~palaestra.simulation.episode_report.PROGRESS_SECONDS`)
    and to the store writer (an ``episodes`` row, in batches, and at an episode's end
    :data:`~palaestra.simulation.episode_report.EPISODE_FLUSH_SECONDS` after the last push).
    """

    policy: ClassVar[type[TurnPolicy] | None] = None
    """The order of turns; every controller names one."""

    def __init__(
        self,
        name: str,
        *,
        worker: int,
        conditions: Sequence[ClassSpec] = (),
        params: dict[str, Any] | None = None,
        answer_timeout: float = 300.0,
        phase: int = 0,
        phase_id: int = 0,
        store_endpoint: str | None = None,
    ) -> None:
        super().__init__(name)
        self.report = EpisodeReport(phase, phase_id, store_endpoint)  # its ended episodes
        if self.policy is None:
            raise TypeError(
                f"{class_name(type(self))} names no turn policy: set its class attribute "
                "'policy' to a palaestra.core.turns.TurnPolicy subclass"
            )
        self.turns = call(self.policy)
        self.condition_specs = list(conditions)  # for the environment that drives the games
        self.worker = worker
        self.params = params or {}  # (a subclass may read params of its own)
        self.driver = str(self.params.get("driver", "auto"))
        self.check_values = bool(self.params.get("check_values", True))
        self.answer_timeout = answer_timeout
        self.waiting: list[Waiting] = []
        # made here (a bad one fails the setup); the games' own are made where they are played,
        # these judge the evaluations (evaluation_done)
        self.conditions: list[TerminationCondition] = [
            call(load_class(c.name), **c.params) for c in conditions
        ]
        self.environments: list[Peer] = []
        self.agents: list[AgentPeer] = []
        self.endpoints: list[m.AgentEndpoint] = []  # the agents' as the run names them
        self.lanes = 1  # games per worker
        self.baselines: list[m.EnvBaseline] = []
        self.kept = Kept()  # what the rounds it plays keep over the phase

    async def setup(self, runtime: ComponentRuntime) -> dict[str, str]:
        self.runtime = runtime
        runtime.start_task(watch(self.waiting))
        return {}

    def _waiting(self, process: str, grace: float = 0.0) -> Waiting:
        waiting = Waiting(process, self.answer_timeout, grace)
        self.waiting.append(waiting)
        return waiting

    def _starting(self, process: str, grace: float, request: m.SimulationSetup) -> Waiting:
        """The wait for environment ``process``'s first ``start_environment()`` (a
        co-simulation starting), part of the phase's start: ``start_timeout``, or
        ``answer_timeout`` if that is longer."""
        limit, setting = request.start_timeout, "start_timeout"
        if self.answer_timeout > limit:
            limit, setting = self.answer_timeout, "answer_timeout"
        waiting = Waiting(process, limit, grace, setting, "answer its first start_environment()")
        self.waiting.append(waiting)
        return waiting

    # --- the parent's requests (asyncio thread) ------------------------------------------

    @on(m.SimulationSetup)
    def handle_setup(self, request: m.SimulationSetup) -> None:
        """Start the hot loop; it answers with the baseline once the environments started
        (the parent's other messages, such as a Shutdown, are not held up meanwhile)."""
        self.hot = loop = HotLoop(self.runtime, self.name)  # (known before it runs)
        run_hot(self.runtime, self.name, lambda hot: self._serve(hot, request), loop)

    @on(m.SimulationRun)
    def handle_run(self, request: m.SimulationRun) -> None:
        self.hot.post(request)  # answered with SimulationDone when the episodes are over

    async def close(self) -> None:
        if hasattr(self, "hot"):
            await self.hot.stop()

    def _send_parent(self, message: m.Msg) -> None:
        self.runtime.start_task(self.runtime.send_parent(message))

    # --- the hot loop ---------------------------------------------------------------------

    def _serve(self, hot: HotLoop, request: m.SimulationSetup) -> None:
        report = self.report
        report.connect(hot, partial(hot.call, self._send_parent))
        try:
            with closing_producer(report.rows, self.name):
                self._serve_episodes(hot, request)
        finally:  # the episodes not yet told: the console counts what the store holds
            report.tell_parent(time.monotonic())

    def _serve_episodes(self, hot: HotLoop, request: m.SimulationSetup) -> None:
        # an environment waits for Muscles, a Muscle for its Brain, each with the same limit
        # and naming whom it waits for: let them speak first
        grace = max(1.0, min(5.0, self.answer_timeout / 2))
        self.environments = [
            Peer(
                e.uid,
                e.endpoint,
                self._starting(names.environment(e.uid, self.worker), 2 * grace, request),
                hot,
            )
            for e in request.environments
        ]
        self._start_environments(reset=False, episode=request.first_episode or None)
        for peer in self.environments:  # their steps: answer_timeout
            peer.waiting = self._waiting(peer.waiting.name, 2 * grace)
        answer = m.SimulationBaseline(
            worker=self.worker,
            sensors=[s for b in self.baselines for s in b.sensors],
            actuators=[a for b in self.baselines for a in b.actuators],
        )
        hot.call(self._send_parent, answer)
        run: m.SimulationRun = hot.command()
        self.endpoints, self.lanes = run.agents, run.envs_per_worker
        self.agents = [
            AgentPeer(
                a.name,
                a.endpoint,
                self._waiting(names.muscle(a.name, self.worker), grace),
                hot,
                a.sensors,
                a.actuators,
            )
            for a in run.agents
        ]
        episodes = self._play_lanes(run)
        self.report.tell_parent(time.monotonic())
        hot.call(
            self._send_parent,
            m.SimulationDone(worker=self.worker, episodes=episodes, steps=self.report.steps),
        )
        hot.command()  # nothing more to do: wait for the stop

    def _start_environments(self, reset: bool, episode: int | None = None) -> None:
        start = m.EnvStart(reset=reset, check_values=self.check_values, episode=episode)
        self.baselines = ask_all(self.environments, [start] * len(self.environments))

    def environment_drives(self, games: int) -> bool:
        """Whether the phase's one environment drives the episodes of the worker's ``games``
        (see :data:`DRIVERS`)."""
        if self.driver == "environment":
            if len(self.environments) != 1:
                raise ValueError(
                    f"simulation param driver: 'environment' needs exactly one environment, "
                    f"the phase has {len(self.environments)}"
                )
            return True
        if self.driver == "controller":
            return False
        # (with several games it plays any order of turns in its rounds)
        return len(self.environments) == 1 and (games > 1 or type(self.turns) in BUILT_IN)

    def _judged(self, evaluation: int, every: int, end: m.LaneEpisodeDone | None) -> bool:
        """Each agent's Brain judges evaluation ``evaluation``'s rollouts (through its
        Muscle), told where they ended (``end``: the first game's rollout; one follows each
        ``every`` training episodes of a game); the results go to the store; whether a
        condition ends the phase on them."""
        judge = m.AgentEvaluate(evaluation=evaluation)
        if end is not None:  # (its last experience's step is the episode's count of steps)
            judge = m.AgentEvaluate(
                evaluation=evaluation, worker=end.worker, episode=end.episode, step=end.steps
            )
        results: list[m.AgentEvaluated] = ask_all(self.agents, [judge] * len(self.agents))
        self._store_results(evaluation, every, end, results)
        return any(call(c.evaluation_done, evaluation, results) for c in self.conditions)

    def _store_results(
        self,
        evaluation: int,
        every: int,
        end: m.LaneEpisodeDone | None,
        results: list[m.AgentEvaluated],
    ) -> None:
        """The ``evaluations`` rows of the results, sent to the store writer at once (after
        the episodes that ended before them), where the run has a store."""
        rows = self.report.rows
        if rows.socket is None:
            return
        training = (evaluation + 1) * every
        if end is None:  # (no game ended its rollout: the first game's, as it is numbered)
            rollout = (self.worker * self.lanes, training + evaluation)
        else:
            rollout = (end.worker, end.episode)
        at = time.time()
        ids = {a.name: a.agent_id for a in self.endpoints}
        values = [evaluation_values(ids[r.agent], r, (training, *rollout), at) for r in results]
        rows.flush()
        send(rows.socket, m.Rows(table="evaluations", rows=values))

    def _told_before(self, evaluated: list[list[m.AgentEvaluated]]) -> bool:
        """Tell the conditions the results of the evaluations a resumed phase completed before
        its cut (``evaluated``: evaluation 0, 1, ...), in order, as the uninterrupted run told
        them; whether they end the phase (the cut came after its last evaluation)."""
        for evaluation, results in enumerate(evaluated):
            if any(call(c.evaluation_done, evaluation, results) for c in self.conditions):
                LOG.info("%s: evaluation %d ended the phase before the cut", self.name, evaluation)
                return True
        return False

    def _play_lanes(self, run: m.SimulationRun) -> int:
        """Play the worker's games (``envs_per_worker``) in rounds, each its episodes from the
        run's first episode on, and tell each episode's end as it happens; with
        ``evaluate_every``, every game plays one evaluation rollout after each
        ``evaluate_every`` of its episodes and the Brains judge them (once per worker). The
        number of episodes played (of all games, rollouts included)."""
        lanes, episodes, first = run.envs_per_worker, run.episodes, run.first_episode
        evaluate_every, step_rate = run.evaluate_every, run.step_rate
        drives = self.environment_drives(lanes)
        LOG.info(
            "%s: episodes driven by %s (%d game%s per worker)",
            self.name,
            f"the environment {self.environments[0].name}" if drives else "me in rounds",
            lanes,
            "" if lanes == 1 else "s",
        )
        played = 0
        until = 0
        evaluation = first // evaluate_every if evaluate_every else 0
        if self._told_before(run.evaluated):
            return played
        while True:
            if evaluate_every:  # each game's episodes before its next evaluation
                until = (evaluation + 1) * evaluate_every
            if played:
                self._start_environments(reset=True)
            plan = self._plan(drives, episodes, first if not played else 0, until, step_rate)
            count, done, _ = self._lanes(drives, lanes, plan)
            played += count
            if done.end_phase or not done.reached:
                break
            LOG.info("%s: evaluation %d of %d games", self.name, evaluation, lanes)
            self._start_environments(reset=True)
            plan = self._plan(drives, 1, 0, 0, step_rate, evaluation=True)
            count, _, end = self._lanes(drives, lanes, plan)
            played += count
            if self._judged(evaluation, evaluate_every, end):
                LOG.info("%s: evaluation %d ends the phase", self.name, evaluation)
                break
            if done.over:
                break
            evaluation += 1
        self.report.rows.flush()
        return played

    def _plan(
        self,
        drives: bool,
        episodes: int,
        first: int,
        until: int,
        step_rate: float,
        evaluation: bool = False,
    ) -> m.EnvLanes:
        """What the games play next (see :class:`~palaestra.core.wire.messages.EnvLanes`)."""
        env = self.environments[0].name
        return m.EnvLanes(
            agents=[
                m.EpisodeAgent(
                    process=a.process,
                    sensors=a.sensors,
                    acts_here=env in a.environments if drives else bool(a.environments),
                )
                for a in self.agents
            ],
            conditions=self.condition_specs,
            episodes=episodes,
            first_episode=first,
            policy=class_name(type(self.turns)),
            step_rate=step_rate,
            until=until,
            evaluation=evaluation,
        )

    def _lanes(
        self, drives: bool, lanes: int, plan: m.EnvLanes
    ) -> tuple[int, m.EnvLanesDone, m.LaneEpisodeDone | None]:
        """One play of the games: the episodes played, how the games stopped, and the last
        episode end of the first game (the lowest lane) that ended one."""
        env = self.environments[0]
        if not drives:  # linked to every peer before the Muscles are told to play
            for peer in [*self.environments, *self.agents]:
                peer.linked()
        self._begin_episode(
            plan.first_episode, env.name if drives else "", plan.evaluation, lanes=lanes
        )
        played = 0
        first: m.LaneEpisodeDone | None = None
        agent_names = {a.process: a.name for a in self.agents}

        def ended(answer: m.LaneEpisodeDone) -> None:
            nonlocal played, first
            if first is None or answer.worker <= first.worker:
                first = answer
            self.report.ended(  # to the parent and the store
                m.EpisodeEnded(
                    phase=self.report.phase,
                    worker=answer.worker,
                    episode=answer.episode,
                    started_at=answer.started_at,
                    ended_at=answer.ended_at,
                    steps=answer.steps,
                    terminated=answer.terminated,
                    truncated=answer.truncated,
                    rewards={agent_names.get(p, p): total for p, total in answer.rewards.items()},
                )
            )
            played += 1

        if not drives:
            table = RemoteGames(
                self.environments, self.baselines, self.agents, lanes * self.worker
            )
            seats = Seats(self.name, self.agents)
            over = play_rounds(table, seats, plan, self.kept, self.hot.sleep, ended)
            return played, over, first
        env.tell(plan)
        while True:  # no answer_timeout on the games: the environment watches its steps
            answer = m.decode(env.receive())
            if isinstance(answer, m.LaneEpisodeDone):
                ended(answer)
            elif isinstance(answer, m.EnvLanesDone):
                return played, answer, first
            else:
                raise TypeError(f"{self.name}: {type(answer).__name__} from {env.name}")

    def _begin_episode(self, episode: int, driver: str, evaluation: bool, lanes: int) -> None:
        sensors = {s.uid: s for b in self.baselines for s in b.sensors}
        actuators = {a.uid: a for b in self.baselines for a in b.actuators}
        ask_all(
            self.agents,
            [
                m.AgentEpisode(
                    episode=episode,
                    sensors=[sensors[uid] for uid in agent.sensors],
                    actuators=[actuators[uid] for uid in agent.actuators],
                    driver=driver,
                    evaluation=evaluation,
                    lanes=lanes,
                )
                for agent in self.agents
            ],
        )
