"""The step engine: the order of turns in a game, and the bookkeeping every driver shares.

A :class:`TurnPolicy` says who acts at step ``k``, who is rewarded with step ``k``'s rewards,
and when the episode is over given the termination conditions. A :class:`Game` keeps one
game's episode and applies the policy and the conditions to it; every way an episode runs goes
through it: a live run's rounds (:mod:`palaestra.core.rounds`), and a replay
(:mod:`palaestra.replay.copy`) through :func:`run_episode` and a :class:`Driver` that plays back
its steps. Real-time pacing is a :class:`~palaestra.core.pacing.Pacer` each round waits on.
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable, Sequence
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

import msgspec

from palaestra.core.plugin import FAILURES, PluginContractError, PluginError, call
from palaestra.core.termination import (
    EpisodeEndsWithEnvironment,
    TerminationCondition,
    decides_episodes,
)
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import reward_total


class Actor(Protocol):
    """An agent as the engine sees it: its Muscle's process and the sensors it reads."""

    @property
    def process(self) -> str: ...

    @property
    def sensors(self) -> list[str]: ...


A = TypeVar("A", bound=Actor)
A_contra = TypeVar("A_contra", bound=Actor, contravariant=True)


class TurnPolicy:
    """Who acts when, and who gets which rewards.

    Override :meth:`acting`; :meth:`rewarded` (default: the agents that acted) and
    :meth:`episode_over` (default: as soon as a termination condition says so) are hooks.
    A policy is built without arguments in every process that drives an episode, so it must
    not depend on anything but its arguments and its class.
    """

    def acting(self, step: int, agents: Sequence[A]) -> Sequence[A]:
        """The agents that act on step ``step`` (0-based in the episode), in order."""
        raise NotImplementedError

    def rewarded(self, step: int, acting: Sequence[A], agents: Sequence[A]) -> Sequence[A]:
        """The agents whose next observation carries the rewards of step ``step``."""
        return acting

    def episode_over(
        self, done: Sequence[bool], conditions: Sequence[TerminationCondition]
    ) -> bool:
        """Whether the episode ends after a step whose environments reported ``done``."""
        return any(call(c.episode_done, done) for c in conditions)


class AllAct(TurnPolicy):
    """Vanilla: every agent acts on the same observation, then the world steps once; each is
    rewarded with the rewards of that step."""

    def acting(self, step: int, agents: Sequence[A]) -> Sequence[A]:
        return agents


class RoundRobin(TurnPolicy):
    """TakingTurns: agent ``i`` acts on steps ``i, i + n, ...``, in the order of the run file,
    and is rewarded with the rewards of the step that followed its own action."""

    def acting(self, step: int, agents: Sequence[A]) -> Sequence[A]:
        return [agents[step % len(agents)]]


BUILT_IN: tuple[type[TurnPolicy], ...] = (AllAct, RoundRobin)
"""The policies palaestra ships; an environment may drive them without being asked to."""


def class_name(cls: type) -> str:
    """``module:Class``, the form run files and messages name classes by."""
    return f"{cls.__module__}:{cls.__qualname__}"


class Stepped(msgspec.Struct, frozen=True, gc=False):
    """What one step of the world gave: new sensor values by uid, the rewards, and each
    environment's ``done``, ``terminated`` and ``truncated`` (None where an environment does
    not say; empty: none says). A struct without gc: made for each game each step, in a third
    of a named tuple's time."""

    values: Iterable[tuple[str, Any]]
    rewards: list[m.InfoDesc]
    done: Sequence[bool]
    terminated: Sequence[bool | None] = ()
    truncated: Sequence[bool | None] = ()


ONE: dict[bool | None, tuple[Any]] = {True: (True,), False: (False,), None: (None,)}
"""A game's one environment's ``done``, ``terminated`` or ``truncated`` as a :class:`Stepped`
holds them (the same tuple each step: not a new list a game)."""


Ends = tuple[bool | None, bool | None]
"""``(terminated, truncated)`` of an episode or a step; ``(None, None)``: not said."""
UNSAID: Ends = (None, None)
GOING_ON: Ends = (False, False)


def episode_ends(stepped: Stepped) -> Ends:
    """How an episode that ends after ``stepped`` ended.

    ``terminated`` if an environment reached a terminal state; otherwise ``truncated`` (a time
    limit, a termination condition or an agent's objective cut it short). ``(None, None)`` if
    no environment says either (it reports ``done`` alone).
    """
    flags = [*stepped.terminated, *stepped.truncated]
    if all(flag is None for flag in flags):
        return UNSAID
    terminated = any(flag is True for flag in stepped.terminated)
    return terminated, not terminated


def _says_ends(stepped: Stepped) -> bool:
    """Whether an environment said ``terminated`` or ``truncated`` (True or False) this step."""
    return any(flag is not None for flag in (*stepped.terminated, *stepped.truncated))


class EpisodeResult(NamedTuple):
    """What :func:`run_episode` gives: the number of steps, how the episode ended, and each
    agent's episode reward by its Muscle's process (the sum of the reward totals of its
    completed transitions, see :func:`~palaestra.core.wire.records.reward_total`; absent if none
    had a numeric reward)."""

    steps: int
    terminated: bool | None
    truncated: bool | None
    rewards: dict[str, float]


class Driver(Protocol[A_contra]):
    """How an episode's messages travel; :func:`run_episode` decides what they say."""

    def observe(self, agent: A_contra, observation: m.AgentStep) -> None:
        """Hand ``observation`` to ``agent``'s Muscle (it answers with set points, except to
        one with ``done``)."""

    def step(self, acting: Sequence[A_contra]) -> Stepped:
        """Step the world once the set points of ``acting`` are in."""

    def finish(self, agents: Sequence[A_contra]) -> None:
        """Wait until each agent acknowledged its last observation (the one with ``done``)."""


def run_episode(
    policy: TurnPolicy,
    driver: Driver[A],
    agents: Sequence[A],
    conditions: Sequence[TerminationCondition],
    values: dict[str, Any],
) -> EpisodeResult:
    """Run one episode of one :class:`Game`; returns its steps, how it ended and the agents'
    episode rewards. ``values`` holds the current sensor values by uid (the baseline's when
    called) and is updated in place."""
    game = Game(policy, agents, conditions, values)
    while True:
        for agent, seen in game.observations():
            driver.observe(agent, seen)
        if game.stepped(driver.step(game.acting)):
            break
    for agent, seen in game.last():
        driver.observe(agent, seen)
    driver.finish(agents)
    return game.result()


class Game(Generic[A]):
    """One game's episode as every driver keeps it: its step, the agents' last rewards, their
    reward sums, its sensor values, how it ends.

    A driver asks :meth:`observations`, steps the world with :attr:`acting`'s set points and
    hands what it gave to :meth:`stepped` until that says the episode is over; :meth:`last`
    then gives every agent's last observation (with ``done`` and the episode's
    ``terminated``/``truncated``, see :func:`episode_ends`; earlier ones say ``False`` for both,
    or None where the environments do not say) and :meth:`result` the episode. An observation
    carries the rewards its agent was last given (None before its first). :meth:`begin` starts
    the game's next episode.
    """

    __slots__ = (
        "policy",
        "agents",
        "conditions",
        "step",
        "ends",
        "rewards",
        "sums",
        "values",
        "acting",
        "_by_done",
        "_all_act",
        "_acting_rewarded",
    )

    def __init__(
        self,
        policy: TurnPolicy,
        agents: Sequence[A],
        conditions: Sequence[TerminationCondition],
        values: dict[str, Any],
    ) -> None:
        self.policy = policy
        self.agents = agents
        self.conditions = conditions
        # the environments' done decides alone: no condition or policy to ask each step
        deciding = [c for c in conditions if decides_episodes(c)]
        self._by_done = (
            type(policy).episode_over is TurnPolicy.episode_over
            and bool(deciding)
            and all(_ends_with_environment(c) for c in deciding)
        )
        # the built-in answers, without a call each step: every agent acts, and is rewarded
        self._all_act = type(policy).acting is AllAct.acting
        self._acting_rewarded = type(policy).rewarded is TurnPolicy.rewarded
        self.begin(values)

    def begin(self, values: dict[str, Any]) -> None:
        """A new episode from the sensor ``values`` by uid (kept, and updated in place)."""
        self.step = 0
        self.ends: Ends = UNSAID
        self.rewards: dict[str, list[m.InfoDesc] | None] = {a.process: None for a in self.agents}
        self.sums = RewardSums()
        self.values = values
        self.acting: Sequence[A] = ()

    def observations(self) -> list[tuple[A, m.AgentStep]]:
        """The observations of the agents that act on this step (they become
        :attr:`acting`)."""
        if self._all_act:
            acting = self.agents
        else:
            try:  # (no cost while nothing is raised)
                acting = self.policy.acting(self.step, self.agents)
            except FAILURES as exc:
                raise self._failed("acting", self.step) from exc
        self.acting = acting
        try:
            if len(acting) == 1:  # (one agent: a game of one player, or its turn)
                agent = acting[0]
                return [(agent, self._seen(agent, False))]
            return [(agent, self._seen(agent, False)) for agent in acting]
        except (TypeError, AttributeError, KeyError):  # (no cost while nothing is raised)
            self._check_acting(acting)
            raise  # (the policy's answer is fine: the failure is not its)

    def _check_acting(self, acting: Any) -> None:
        """Fail naming the policy where ``acting`` (what its ``acting`` returned) is not a
        sequence of the agents it was given."""
        agents = self.agents
        processes = {a.process for a in agents}
        try:
            known = all(getattr(a, "process", None) in processes for a in acting)
        except TypeError:  # (not iterable)
            known = False
        if not known or not isinstance(acting, Sequence):
            raise PluginContractError(
                self.policy,
                "acting",
                f"returned {type(acting).__name__} {reprlib.repr(acting)} on step {self.step}: "
                "expected a list of some of the agents it was given (its argument "
                f"`agents`: {', '.join(str(a.process) for a in agents)}), in the order they act",
            )

    def stepped(self, stepped: Stepped) -> bool:
        """The world stepped with the acting agents' set points and gave ``stepped``: whether
        the episode is over."""
        step = self.step
        self.values.update(stepped.values)
        rewards = self.rewards
        if self._acting_rewarded:
            rewarded = self.acting
        else:
            try:
                rewarded = self.policy.rewarded(step, self.acting, self.agents)
            except FAILURES as exc:
                raise self._failed("rewarded", step) from exc
        for agent in rewarded:
            rewards[agent.process] = stepped.rewards
        self.step = step + 1
        if self._by_done:
            over = any(stepped.done)
        else:
            over = self._episode_over(stepped.done, step)
        if over:
            self.ends = episode_ends(stepped)
        elif self.ends is UNSAID and _says_ends(stepped):
            self.ends = GOING_ON
        return over

    def _episode_over(self, done: Sequence[bool], step: int) -> bool:
        """The policy's ``episode_over`` after step ``step``."""
        try:
            return self.policy.episode_over(done, self.conditions)
        except PluginError:  # (a termination condition's, named already)
            raise
        except FAILURES as exc:
            raise self._failed("episode_over", step) from exc

    def _failed(self, method: str, step: int) -> PluginError:
        """The error for the policy's ``method`` raising on step ``step``, naming the policy's
        class, the method and the step (its exception becomes the cause)."""
        return PluginError(self.policy, method, f"at step {step}")

    def last(self) -> list[tuple[A, m.AgentStep]]:
        """Every agent's last observation of the episode (with ``done``)."""
        return [(agent, self._seen(agent, True)) for agent in self.agents]

    def result(self) -> EpisodeResult:
        """The episode's steps, how it ended and the agents' episode rewards."""
        return EpisodeResult(self.step, self.ends[0], self.ends[1], self.sums.totals)

    def _seen(self, agent: A, done: bool) -> m.AgentStep:
        """What ``agent`` observes now: its sensors' values, the rewards it was last given and,
        with ``done``, how the episode ended."""
        values, ends, process, sensors = self.values, self.ends, agent.process, agent.sensors
        rewards = self.rewards[process]
        seen = m.AgentStep(
            step=self.step,
            values=[values[sensors[0]]]
            if len(sensors) == 1  # (one sensor: no loop)
            else [values[uid] for uid in sensors],
            rewards=rewards,
            done=done,
            terminated=ends[0],
            truncated=ends[1],
        )
        self.sums.observed(process, rewards)
        return seen


def _ends_with_environment(condition: TerminationCondition) -> bool:
    """Whether ``condition`` ends an episode exactly when an environment is done: its
    ``episode_done`` is :class:`EpisodeEndsWithEnvironment`'s (palaestrAI's
    ``VanillaSimControllerTerminationCondition`` is one), so it need not be asked each step."""
    return type(condition).episode_done is EpisodeEndsWithEnvironment.episode_done


class RewardSums:
    """Each agent's episode reward as its Muscle records it: an observation with rewards that
    follows one the agent acted on completes a transition (a ``muscle_actions`` row) whose
    reward total adds to the sum. The rewards of a step are shared by the agents given them,
    so their total is made once."""

    __slots__ = ("acted", "totals", "_last", "_last_total")

    def __init__(self) -> None:
        self.acted: set[str] = set()
        self.totals: dict[str, float] = {}
        self._last: list[m.InfoDesc] | None = None
        self._last_total: float | None = None

    def observed(self, process: str, rewards: list[m.InfoDesc] | None) -> None:
        if process not in self.acted:
            self.acted.add(process)
            return
        if rewards is None:
            return
        if rewards is not self._last:
            self._last = rewards
            self._last_total = reward_total([r.value for r in rewards])
        total = self._last_total
        if total is not None:
            self.totals[process] = self.totals.get(process, 0.0) + total
