"""Vanilla: every agent acts on the same observation, then the world steps once."""

from __future__ import annotations

import asyncio
from typing import Any

from palaestra.simulation.controller import SimulationController


class Vanilla(SimulationController):
    async def run_episode(self) -> None:
        self.episode_over = False
        step = 0
        agents = self.agents
        while not self.episode_over:
            if len(agents) == 1:
                answers = [await self.act(agents[0], step)]
            else:
                answers = await asyncio.gather(*(self.act(agent, step) for agent in agents))
            setpoints: dict[str, Any] = {}
            for answer in answers:
                setpoints.update(answer)
            rewards = await self.step_environments(setpoints)
            for agent in agents:
                agent.rewards = rewards
            step += 1
        await self.finish_episode()


VanillaSimulationController = Vanilla
VanillaSimController = Vanilla
