"""TakingTurns: one agent acts per environment step, in the order of the run file."""

from __future__ import annotations

from palaestra.simulation.controller import SimulationController


class TakingTurns(SimulationController):
    """Agent ``i`` acts on steps ``i, i + n, ...``; its rewards are those of the step that
    followed its own action."""

    turns = "round_robin"

    def run_episode(self) -> None:
        self.episode_over = False
        step = 0
        agents = self.agents
        while not self.episode_over:
            agent = agents[step % len(agents)]
            agent.rewards = self.step([agent], step)
            step += 1
        self.finish_episode()


TakingTurnsSimulationController = TakingTurns
