"""PettingZooEnvironment: a PettingZoo game, its players bound to palaestra agents by name
(a run file: ``experiments/tictactoe_turns.yml``; ``docs/gymnasium-pettingzoo.md``).

``env`` names a PettingZoo module (its ``env()`` for ``api: aec``, its ``parallel_env()`` for
``api: parallel``); ``factory: module:callable`` builds one instead; ``env_kwargs`` go to it.

Names: each PettingZoo agent's observation is the sensor ``<agent>.obs`` and its action the
actuator ``<agent>.action``, split like gymnasium's (``<agent>.obs.<key>``, see
:mod:`palaestra.environment.spaces_map`); its reward is the reward ``<agent>.reward``. A
palaestra agent is bound to a PettingZoo agent by the sensors and actuators the run file gives
it; its objective picks its own reward by that uid.

* **AEC** games take turns: use ``palaestra.simulation:TakingTurns`` and list the palaestra
  agents in the order of the game's ``possible_agents``, so that palaestra's turn order
  (:class:`~palaestra.core.turns.RoundRobin`) is PettingZoo's ``agent_selection`` order; a
  game that selects another agent fails the run saying so. Each step applies the acting
  agent's action and reports that agent's ``<agent>.reward`` as PettingZoo's ``last()`` gives
  it before the step: what it received since its previous turn. When the game is over,
  PettingZoo steps every agent once more without an action; those steps carry each agent's
  final reward, and the episode ends when no agent is left. Every player needs an agent, and
  under TakingTurns the agents are the players in that order: the run file's check refuses
  others (:mod:`palaestra.experiment.runfile_turns`), reading the players from
  :meth:`PettingZooEnvironment.players_taking_turns`.
* **Parallel** games act together: use ``palaestra.simulation:Vanilla``; each step applies
  every live agent's action and reports every agent's reward; the episode ends when no agent
  is left. A player no agent drives plays its actuator's default.

The first reset of the process passes palaestra's seed; ``check`` works as in
:class:`~palaestra.environment.gymnasium.GymnasiumEnvironment`. Needs the ``gym`` extra.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from palaestra.core.description.extras import require
from palaestra.core.errors import InvalidInputError
from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.environment import checks, params
from palaestra.environment.environment import Environment, EnvironmentBaseline, EnvironmentState
from palaestra.environment.gymnasium import (
    CHECKS,
    REWARD_SPACE,
    call_made,
    load_callable,
    load_factory,
)
from palaestra.environment.spaces_map import Leaf, informed, join, leaves, split

APIS = ("aec", "parallel")


class PettingZooEnvironment(Environment):
    """A PettingZoo AEC or Parallel environment.

    Args:
        uid: The environment's uid in the run file.
        broker_uri: Unused (palaestrAI's argument).
        seed: The seed when palaestra gives none.
        env: A PettingZoo module (``pettingzoo.classic.tictactoe_v3``); or give ``factory``.
        api: ``aec`` (turns) or ``parallel`` (all at once).
        env_kwargs: Keyword arguments for the module's constructor or the factory.
        factory: ``module:callable`` returning a PettingZoo environment of ``api``.
        check: ``first``, ``every_step`` or ``off``, as for GymnasiumEnvironment.

    Raises:
        InvalidInputError: A module or factory that cannot be loaded, a wrong param, or a
            space palaestra cannot map (exit code 2).
    """

    def __init__(
        self,
        uid: str | None = None,
        broker_uri: str | None = None,
        seed: int = 0,
        env: str | None = None,
        api: str = "aec",
        env_kwargs: Mapping[str, Any] | None = None,
        factory: str | None = None,
        check: str = "first",
    ) -> None:
        super().__init__(uid, broker_uri, seed)
        require("pettingzoo", "the environment PettingZooEnvironment")
        self.where = f"environment '{uid or ''}' ({env or factory})"
        if api not in APIS:
            raise InvalidInputError(
                f"{self.where}: params.api: expected aec or parallel, got {api!r}"
            )
        self.api, self.check = api, params.choice(self.where, "check", check, CHECKS)
        self.env: Any = _make(env, factory, api, dict(env_kwargs or {}), self.where)
        self.players: list[str] = list(self.env.possible_agents)
        self.obs_leaves: dict[str, list[Leaf]] = {
            p: leaves(self.env.observation_space(p), f"{p}.obs", self.where) for p in self.players
        }
        self.action_leaves: dict[str, list[Leaf]] = {
            p: leaves(self.env.action_space(p), f"{p}.action", self.where) for p in self.players
        }
        self.last_obs: dict[str, Any] = {}
        self.seeded = False
        self.dtype_warned = False
        self.episode = -1
        self.step = 0
        self.ended: dict[str, str] = {}  # player -> "terminated" | "truncated"

    # --- start -------------------------------------------------------------------------

    def start_environment(self) -> EnvironmentBaseline:
        """Reset the game (with the seed the first time); every player's observation."""
        seed = None if self.seeded else int(self.seed)
        self.seeded = True
        if self.api == "aec":
            self.env.reset(seed=seed)
            observations = {p: self.env.observe(p) for p in self.players}
        else:
            observations, _infos = self.env.reset(seed=seed)
        self.episode += 1
        self.step = 0
        self.ended = {}
        self.last_obs = {}
        self._keep(observations, "reset")
        actuators = [
            actuator
            for player in self.players
            for actuator in informed(ActuatorInformation, self.action_leaves[player])
        ]
        return EnvironmentBaseline(self._sensors(), actuators)

    def players_taking_turns(self) -> list[tuple[str, list[str]]]:
        """An AEC game's players in its order of turns, each with its actuator ids; none for a
        Parallel game (every player acts each step; an actuator no agent sets keeps its
        default). The run file's check reads them from the started environment: every player
        needs an agent, and under TakingTurns the phase's agents are the players, one each, in
        this order (:mod:`palaestra.experiment.runfile_turns`)."""
        if self.api != "aec":
            return []
        return [(p, [leaf.uid for leaf in self.action_leaves[p]]) for p in self.players]

    # --- steps -------------------------------------------------------------------------

    def update(self, actuators: Sequence[ActuatorInformation]) -> EnvironmentState:
        given = {str(a.uid): a.value for a in actuators}
        self.step += 1
        if self.api == "aec":
            rewards = self._aec_step(given)
        else:
            rewards = self._parallel_step(given)
        done = not self.env.agents
        terminated = done and "terminated" in self.ended.values()
        return EnvironmentState(
            self._sensors(),
            rewards,
            done,
            terminated=terminated,
            truncated=done and not terminated,
        )

    def _aec_step(self, given: dict[str, Any]) -> list[RewardInformation]:
        env = self.env
        player = env.agent_selection
        expected = self.players[(self.step - 1) % len(self.players)]
        if player != expected:
            raise InvalidInputError(
                f"{self.where}: in step {self.step} of episode {self.episode} PettingZoo "
                f"selected '{player}', but palaestra's TakingTurns gives the turn to the "
                f"agent bound to '{expected}' (the run file's agents must follow the game's "
                f"possible_agents order {self.players}, and the game must take turns in it)"
            )
        _, reward, terminated, truncated, _ = env.last(observe=False)
        over = terminated or truncated
        if over:
            self.ended.setdefault(player, "terminated" if terminated else "truncated")
        action = None if over else join(given, self.action_leaves[player])
        try:
            env.step(action)
        except Exception as exc:
            raise checks.GymnasiumStepError(self, action, exc) from exc
        self._keep({p: env.observe(p) for p in env.agents}, "update")
        self._check_reward(player, reward)
        value = checks.reward_value(self, f"reward of '{player}'", reward)
        return [RewardInformation(value, REWARD_SPACE, f"{player}.reward")]

    def _parallel_step(self, given: dict[str, Any]) -> list[RewardInformation]:
        env = self.env
        actions = {p: join(given, self.action_leaves[p]) for p in env.agents}
        try:
            observations, rewards, terminations, truncations, _infos = env.step(actions)
        except Exception as exc:
            raise checks.GymnasiumStepError(self, actions, exc) from exc
        for player in self.players:
            if terminations.get(player):
                self.ended.setdefault(player, "terminated")
            elif truncations.get(player):
                self.ended.setdefault(player, "truncated")
        self._keep(observations, "update")
        infos = []
        for player, reward in rewards.items():
            self._check_reward(player, reward)
            value = checks.reward_value(self, f"reward of '{player}'", reward)
            infos.append(RewardInformation(value, REWARD_SPACE, f"{player}.reward"))
        return infos

    # --- values ------------------------------------------------------------------------

    def _checking(self) -> bool:
        return self.check == "every_step" or (self.check == "first" and self.step <= 1)

    def _keep(self, observations: Mapping[str, Any], method: str) -> None:
        """Remember each player's newest observation (a player that left keeps its last)."""
        for player, observation in observations.items():
            if self._checking():
                checks.gym_value(
                    self,
                    method,
                    f"observation of '{player}'",
                    self.env.observation_space(player),
                    observation,
                )
            self.last_obs[player] = observation

    def _check_reward(self, player: str, reward: Any) -> None:
        if self._checking():
            checks.gym_reward(self, f"reward of '{player}'", reward)

    def _sensors(self) -> list[SensorInformation]:
        sensors: list[SensorInformation] = []
        for player in self.players:
            parts = self.obs_leaves[player]
            observation = self.last_obs.get(player)  # None: never observed, the defaults
            values = None if observation is None else split(observation, parts)
            sensors.extend(informed(SensorInformation, parts, values))
        return sensors

    def shutdown(self) -> bool:
        self.env.close()
        return True


def _make(
    env: str | None, factory: str | None, api: str, kwargs: dict[str, Any], where: str
) -> Any:
    """The PettingZoo environment of module ``env`` or ``factory`` (exactly one given)."""
    if (env is None) == (factory is None):
        raise InvalidInputError(
            f"{where}: params: give exactly one of env (a PettingZoo module such as "
            "pettingzoo.classic.tictactoe_v3) and factory ('module:callable')"
        )
    if env is not None:
        attr = "env" if api == "aec" else "parallel_env"
        name, make = f"{env}:{attr}", load_callable(env, attr, where)
    else:
        name, make = str(factory), load_factory(str(factory), where)
    made = call_made(make, kwargs, where, name)
    wanted = "AECEnv" if api == "aec" else "ParallelEnv"
    from pettingzoo.utils import env as pz

    if not isinstance(made, getattr(pz, wanted)):
        raise InvalidInputError(
            f"{where}: '{name}' returned {type(made).__name__}, expected a "
            f"PettingZoo {wanted} for api: {api}"
        )
    return made
