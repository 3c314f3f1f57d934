"""The live side of a replay: one worker's environments, rebuilt and stepped in this process.

Each environment is a :class:`~palaestra.environment.world.World` built as a run's
environment process builds it (same class, params, seed, reward and state transformer), in
this process: the replay calls its ``start_world`` and ``update`` directly, so the
values it checks, converts and records are exactly those a run records. The rows it would
have written are kept (:class:`Tape`) to be compared with the store's, or written as a copy.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from palaestra.core.description.specs import EnvironmentSpec
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import Row, RowSink
from palaestra.environment.aio import Awaiter
from palaestra.environment.environment import Environment
from palaestra.environment.world import World

SHUTDOWN_TIMEOUT = 300.0
"""Seconds an environment's asynchronous ``shutdown`` may take (a run's default
``answer_timeout``)."""


class Tape(RowSink):
    """A row sink that keeps the rows (unencoded) instead of pushing them to a writer."""

    def __init__(self) -> None:
        super().__init__(None, "world_states")
        self.kept: list[m.WorldStateRow] = []

    def add(self, row: Row) -> None:
        if isinstance(row, m.WorldStateRow):
            self.kept.append(row)


class LiveWorld:
    """The environments of one worker of a phase, in the phase's order.

    Args:
        specs: The environments as recorded.
        seeds: One seed per worker, by environment uid.
        worker: The worker replayed.
        check_values: Check sensor values and rewards against their spaces, as the run did.
    """

    def __init__(
        self,
        specs: list[EnvironmentSpec],
        seeds: Mapping[str, list[int]],
        worker: int,
        check_values: bool = True,
    ) -> None:
        self.check_values = check_values
        self.awaiter = Awaiter(f"replay-{worker}")  # (one loop for asynchronous ones)
        self.worlds: dict[str, World] = {}
        self.tapes: dict[str, Tape] = {}
        self.started = False
        for index, spec in enumerate(specs):
            world = World(
                f"replay-{spec.uid}-{worker}",
                environment=spec,
                environment_id=index,
                worker=worker,
                seed=seeds[spec.uid][worker],
                awaiter=self.awaiter,
            )
            tape = Tape()
            world.out.rows = tape
            self.worlds[spec.uid] = world
            self.tapes[spec.uid] = tape

    @property
    def environments(self) -> dict[str, Environment]:
        """The live environment plug-ins, by uid: inspect them, change them, call them."""
        return {uid: world.env for uid, world in self.worlds.items()}

    def start(self) -> dict[str, Any]:
        """Start the world (reset it after its first episode); the baseline's sensor values
        by full uid."""
        values: dict[str, Any] = {}
        for world in self.worlds.values():
            baseline = world.start_world(self.started, self.check_values)
            values.update((s.uid, s.value) for s in baseline.sensors)
        self.started = True
        return values

    def step(
        self, setpoints: Mapping[str, dict[str, Any]], stop: Collection[str] = ()
    ) -> dict[str, tuple[m.EnvState, m.WorldStateRow]]:
        """Step every environment once with its set points (by environment uid, each by
        full actuator uid); ``stop``: the environments an agent asked to end the episode after
        this step (as its objective rule did in the run). Returns each one's state and its row."""
        stepped = {}
        for uid, world in self.worlds.items():
            cut = len(world.declared.prefix)
            own = {key[cut:]: value for key, value in setpoints.get(uid, {}).items()}
            world.stop_requested = uid in stop
            state = world.update(own)
            stepped[uid] = (state, self.tapes[uid].kept.pop())
        return stepped

    def shutdown(self) -> None:
        """Shut the environments down (their ``shutdown``), ignoring nothing."""
        try:
            for world in self.worlds.values():
                world.shutdown(SHUTDOWN_TIMEOUT)
        finally:
            self.awaiter.close()
