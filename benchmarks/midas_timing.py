"""palaestrai-mosaik's MosaikEnvironment that notes when each ``update`` began and ended.

For ``benchmarks/palaestrai_midas.py``: what palaestra adds to the co-simulation's own time per
step is the time between one ``update``'s end and the next one's start within an episode (the
observations to the Muscles, their set points back, the rows), against ``update``'s own time
(mosaik stepping the grid). At ``shutdown`` the notes of the process are written as JSON to
``<timing_file>.<pid>.json``.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from palaestrai_mosaik import MosaikEnvironment  # type: ignore[import-not-found]


class TimedMosaikEnvironment(MosaikEnvironment):  # type: ignore[misc]
    def __init__(self, *args: Any, timing_file: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.timing_file = timing_file
        self.episodes: list[list[tuple[float, float]]] = []

    async def start_environment(self) -> Any:
        self.episodes.append([])
        return await super().start_environment()

    async def update(self, actuators: Any) -> Any:
        began = time.perf_counter()
        state = await super().update(actuators)
        self.episodes[-1].append((began, time.perf_counter()))
        return state

    async def shutdown(self, reset: bool = False) -> Any:
        if self.timing_file and any(self.episodes):
            with open(f"{self.timing_file}.{os.getpid()}.json", "w", encoding="utf-8") as f:
                json.dump(self.episodes, f)
        return await super().shutdown(reset)
