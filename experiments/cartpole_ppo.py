"""PPO on CartPole-v1, as palaestra plug-ins: a Brain that learns, a Muscle that acts.

Read it top to bottom: the hyper-parameters, the network, how an action is chosen, the PPO
learner (whole episodes in, one clipped-surrogate update every ``rollout_steps`` steps), then
the two plug-ins that put the learner in palaestra's processes. Run it with
``experiments/cartpole_ppo.yml`` (a train phase, then 100 greedy test episodes from the dump);
``benchmarks/cartpole_floor.py`` runs the same learner in a plain gymnasium loop, and
``benchmarks/learning_cartpole.py`` compares the two.

In cleanrl's spirit (one file, no framework), with the settings of rl-baselines3-zoo's PPO
for CartPole-v1 adapted to one environment: short rollouts of whole episodes, many epochs,
``gamma`` 0.98 and ``gae_lambda`` 0.8, a learning rate annealed to 0 over the budget.

Truncation: CartPole-v1 stops at 500 steps. An episode cut off there is not a failure: its last
reward is bootstrapped with the critic's value of the state it was cut off in (a terminated
episode's is not). The Brain takes the flags from its memory rows (``terminated`` /
``truncated``) when palaestra records them; otherwise an episode that ends after exactly
``time_limit`` steps counts as truncated. palaestra does not give the Brain the observation the
last step ended in, so the Brain bootstraps with the value of the last one its Muscle acted on
(the floor has the true final observation; in CartPole the two are a step apart).

torch is imported here, at the top: this file is an example, not part of palaestra (install
``palaestra[torch]``).
"""

from __future__ import annotations

import dataclasses
import io
from typing import Any

import numpy as np
import torch
from torch import nn

from palaestra.agent import Brain, Muscle

# --- hyper-parameters ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Hyper:
    """PPO's settings; a run file's ``brain.params`` set any of them."""

    episodes: int = 300  # the training budget: the learning rate falls to 0 over it
    hidden: int = 64  # two hidden layers of this width, tanh, for the actor and the critic
    lr: float = 1e-3
    rollout_steps: int = 256  # update once this many steps of finished episodes are in
    epochs: int = 10
    minibatch: int = 64
    gamma: float = 0.98
    gae_lambda: float = 0.8
    clip: float = 0.2
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    time_limit: int = 500  # CartPole-v1's: used only when the rows do not say "truncated"


# --- the network --------------------------------------------------------------------------


def _layer(n_in: int, n_out: int, std: float = float(np.sqrt(2))) -> nn.Linear:
    layer = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, 0.0)
    return layer


class ActorCritic(nn.Module):
    """A policy (logits over the actions) and a value function, with separate bodies."""

    def __init__(self, obs_dim: int, n_actions: int, hidden: int) -> None:
        super().__init__()
        self.shape = {"obs_dim": obs_dim, "n_actions": n_actions, "hidden": hidden}
        self.actor = nn.Sequential(
            _layer(obs_dim, hidden), nn.Tanh(), _layer(hidden, hidden), nn.Tanh(),
            _layer(hidden, n_actions, std=0.01),
        )  # fmt: skip
        self.critic = nn.Sequential(
            _layer(obs_dim, hidden), nn.Tanh(), _layer(hidden, hidden), nn.Tanh(),
            _layer(hidden, 1, std=1.0),
        )  # fmt: skip

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(obs).squeeze(-1)


def model_bytes(model: ActorCritic) -> bytes:
    """The model as bytes: its shape and weights (what an update and a dump carry)."""
    buffer = io.BytesIO()
    torch.save({"shape": model.shape, "weights": model.state_dict()}, buffer)
    return buffer.getvalue()


def model_from_bytes(data: bytes) -> ActorCritic:
    saved = torch.load(io.BytesIO(data), weights_only=True)
    model = ActorCritic(**saved["shape"])
    model.load_state_dict(saved["weights"])
    return model


# --- acting -------------------------------------------------------------------------------


@torch.no_grad()
def act(model: ActorCritic, obs: np.ndarray, rng: np.random.Generator | None) -> tuple[int, float]:
    """An action for ``obs`` and its log-probability: sampled with ``rng``, or the most
    probable one (greedy) when ``rng`` is None."""
    logits = model.actor(torch.as_tensor(obs, dtype=torch.float32))
    logp = torch.log_softmax(logits, -1).numpy()
    if rng is None:
        action = int(np.argmax(logp))
    else:  # inverse-CDF sampling: the first action whose cumulative probability passes u
        probs = np.exp(logp)
        u = rng.random() * probs.sum()
        action = min(int(np.searchsorted(np.cumsum(probs), u)), len(probs) - 1)
    return action, float(logp[action])


# --- the learner --------------------------------------------------------------------------


@dataclasses.dataclass
class Episode:
    """One finished episode: what was seen, done, and got (``logps`` as acted)."""

    obs: list[np.ndarray]
    actions: list[int]
    logps: list[float]
    rewards: list[float]
    truncated: bool  # cut off by a time limit: bootstrap from ``final_obs``
    final_obs: np.ndarray | None = None  # where it was cut off (None: the last of ``obs``)


class PPO:
    """Collects whole episodes and updates the model every ``rollout_steps`` steps."""

    def __init__(self, obs_dim: int, n_actions: int, hyper: Hyper, seed: int) -> None:
        torch.manual_seed(seed)
        self.hyper = hyper
        self.model = ActorCritic(obs_dim, n_actions, hyper.hidden)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=hyper.lr, eps=1e-5)
        self.generator = torch.Generator().manual_seed(seed)  # minibatch order
        self.rollout: list[Episode] = []
        self.episodes = 0  # finished episodes seen
        self.updates = 0
        self.last_stats: dict[str, float] = {}

    def add(self, episode: Episode) -> bool:
        """Take a finished episode; update if the rollout is full. True if it updated."""
        self.rollout.append(episode)
        self.episodes += 1
        if sum(len(e.actions) for e in self.rollout) < self.hyper.rollout_steps:
            return False
        self.update()
        self.rollout = []
        return True

    @torch.no_grad()
    def _advantages(self, episode: Episode) -> tuple[torch.Tensor, torch.Tensor]:
        """GAE(lambda) advantages and returns of one episode, with the current critic."""
        h = self.hyper
        values = self.model.value(torch.as_tensor(np.array(episode.obs), dtype=torch.float32))
        last = 0.0
        if episode.truncated:
            final = episode.final_obs if episode.final_obs is not None else episode.obs[-1]
            last = float(self.model.value(torch.as_tensor(final, dtype=torch.float32)))
        next_values = torch.cat([values[1:], torch.tensor([last])])
        rewards = torch.as_tensor(episode.rewards, dtype=torch.float32)
        deltas = rewards + h.gamma * next_values - values
        advantages = torch.zeros_like(deltas)
        running = 0.0
        for t in reversed(range(len(deltas))):
            running = float(deltas[t]) + h.gamma * h.gae_lambda * running
            advantages[t] = running
        return advantages, advantages + values

    def update(self) -> None:
        """The clipped-surrogate PPO update on the collected episodes."""
        h = self.hyper
        for group in self.optimizer.param_groups:  # anneal over the budget
            group["lr"] = h.lr * max(0.0, 1.0 - self.episodes / h.episodes)
        parts = [self._advantages(e) for e in self.rollout]
        advantages = torch.cat([a for a, _ in parts])
        returns = torch.cat([r for _, r in parts])
        obs = torch.as_tensor(np.array([o for e in self.rollout for o in e.obs]))
        obs = obs.to(torch.float32)
        actions = torch.as_tensor([a for e in self.rollout for a in e.actions])
        old_logps = torch.as_tensor([p for e in self.rollout for p in e.logps])
        n = len(actions)
        for _ in range(h.epochs):
            order = torch.randperm(n, generator=self.generator)
            for start in range(0, n, h.minibatch):
                batch = order[start : start + h.minibatch]
                self._step(
                    obs[batch], actions[batch], old_logps[batch], advantages[batch], returns[batch]
                )
        self.updates += 1

    def _step(
        self,
        obs: torch.Tensor,
        actions: torch.Tensor,
        old_logps: torch.Tensor,
        advantages: torch.Tensor,
        returns: torch.Tensor,
    ) -> None:
        h = self.hyper
        logps_all = torch.log_softmax(self.model.actor(obs), -1)
        logps = logps_all.gather(1, actions[:, None]).squeeze(1)
        entropy = -(logps_all.exp() * logps_all).sum(-1).mean()
        if len(advantages) > 1:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        ratio = (logps - old_logps).exp()
        policy_loss = -torch.min(
            ratio * advantages, ratio.clamp(1 - h.clip, 1 + h.clip) * advantages
        ).mean()
        value_loss = 0.5 * ((self.model.value(obs) - returns) ** 2).mean()
        loss = policy_loss + h.vf_coef * value_loss - h.ent_coef * entropy
        self.optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.model.parameters(), h.max_grad_norm)
        self.optimizer.step()
        self.last_stats = {
            "policy_loss": policy_loss.item(),
            "value_loss": value_loss.item(),
            "entropy": entropy.item(),
        }


# --- the palaestra plug-ins ---------------------------------------------------------------


def observation(sensors: list[Any]) -> np.ndarray:
    """The agent's sensor values, flattened into one float32 vector, in the sensors' order."""
    return np.concatenate([np.ravel(np.asarray(s.value, dtype=np.float32)) for s in sensors])


class PPOBrain(Brain):
    """The learner. Its Muscle sends ``(observation, action, log-probability)`` of each action;
    ``thinking`` gets it with the transition that action led to (the newest row of the
    Muscle's memory: its objective is the reward, its flags say how the episode ended). At the
    end of an episode the episode goes to :class:`PPO`; after an update the Brain answers with
    the new model, which palaestra hands to every Muscle before its next action.

    Args:
        threads: torch's intra-op threads (1 is fastest for a network this small).
        **hyper: Any field of :class:`Hyper`.
    """

    def __init__(self, threads: int = 1, **hyper: Any) -> None:
        torch.set_num_threads(threads)
        self.hyper = Hyper(**hyper)
        self.ppo: PPO | None = None
        self.loaded: bytes | None = None  # a dump to start from (a later train phase)
        self.open: dict[str, Episode] = {}  # each Muscle's episode so far
        self.stored_updates = -1

    def setup(self) -> None:
        obs_dim = sum(int(np.prod(s.space.shape)) for s in self.sensors)
        n_actions = int(self.actuators[0].space.n)
        self.ppo = PPO(obs_dim, n_actions, self.hyper, self.seed)
        if self.loaded is not None:
            self.ppo.model = model_from_bytes(self.loaded)
            self.ppo.optimizer = torch.optim.Adam(self.ppo.model.parameters(), lr=self.hyper.lr)

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        assert self.ppo is not None
        if self.mode != "train":
            return None  # a test phase's Muscles act with the model they loaded
        if data_from_muscle is None:  # an episode's first step: no transition yet
            return model_bytes(self.ppo.model) if self.ppo.updates == 0 else None
        episode = self.open.setdefault(muscle_id, Episode([], [], [], [], truncated=False))
        obs, action, logp = data_from_muscle
        rows = self.memory.muscle_memory(muscle_id)
        episode.obs.append(obs)
        episode.actions.append(action)
        episode.logps.append(logp)
        episode.rewards.append(float(rows.objective[-1]))
        if not rows.dones[-1]:
            return None
        del self.open[muscle_id]
        truncated = rows.truncated[-1]
        if truncated is None:  # palaestra did not record the flags: judge by the length
            truncated = len(episode.actions) >= self.hyper.time_limit
        episode.truncated = bool(truncated)
        self.add_statistics("episode_return", sum(episode.rewards))
        self.add_statistics("truncated", episode.truncated)
        if not self.ppo.add(episode):
            return None
        for key, value in self.ppo.last_stats.items():
            self.add_statistics(key, value)
        return model_bytes(self.ppo.model)

    def store(self) -> None:
        assert self.ppo is not None
        if self.mode != "train":
            return  # it learned nothing new
        if self.ppo.updates != self.stored_updates:  # dump only a model not dumped yet
            self.store_brain_dump(model_bytes(self.ppo.model), tag="model")
            self.stored_updates = self.ppo.updates

    def load(self) -> None:
        dump = self.load_brain_dump(tag="model")
        self.loaded = None if dump is None else dump.read()


class PPOMuscle(Muscle):
    """Acts with the newest model its Brain sent: sampled in a train phase, greedy (the most
    probable action) in a test phase, where it loads the model from the Brain's dump.

    Args:
        threads: torch's intra-op threads.
    """

    def __init__(self, threads: int = 1) -> None:
        torch.set_num_threads(threads)
        self.model: ActorCritic | None = None

    def prepare_model(self) -> None:
        dump = self.load(tag="model")
        if dump is None:
            raise RuntimeError("PPOMuscle: no 'model' dump to test with (train first)")
        self.model = model_from_bytes(dump.read())

    def update(self, update: Any) -> None:
        self.model = model_from_bytes(update)

    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        if self.model is None:
            raise RuntimeError("PPOMuscle: asked to act before its Brain sent a model")
        obs = observation(sensors)
        action, logp = act(self.model, obs, self.rng if self.mode == "train" else None)
        actuators_available[0](action)
        return actuators_available, (obs, action, logp)
