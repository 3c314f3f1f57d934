"""Vanilla: every agent acts on the same observation, then the world steps once."""

from __future__ import annotations

from palaestra.simulation.controller import SimulationController


class Vanilla(SimulationController):
    turns = "all"

    def run_episode(self) -> None:
        self.episode_over = False
        step = 0
        agents = self.agents
        while not self.episode_over:
            rewards = self.step(agents, step)
            for agent in agents:
                agent.rewards = rewards
            step += 1
        self.finish_episode()


VanillaSimulationController = Vanilla
VanillaSimController = Vanilla
