"""The learner process: runs one Brain, answering its Muscles on a ROUTER socket.

For each :class:`~palaestra.core.messages.Experience` it appends the transition to the Brain's
memory, calls ``thinking``, stores a dump when an episode ended, and answers with the update.
Dumps go to the store writer and to a file under the run's dump directory.
"""

from __future__ import annotations

import logging
import os
import pickle
from typing import Any

import zmq

from palaestra.agent.brain import Brain
from palaestra.agent.context import BrainContext, BrainDumps
from palaestra.core import messages as m
from palaestra.core.codec import SpaceCache
from palaestra.core.esm import Component
from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.core.loading import load_class
from palaestra.core.records import close_producer, connect_store
from palaestra.core.runtime import PluginError

LOG = logging.getLogger(__name__)


class BrainProcess(Component):
    """One agent's Brain."""

    def __init__(self, name: str, *, setup: m.AgentSetup, store_endpoint: str | None) -> None:
        super().__init__(name)
        self.request = setup
        self.store_endpoint = store_endpoint
        self.spaces = SpaceCache()
        self.sensors = self.spaces.build(SensorInformation, setup.sensors)
        self.actuators = self.spaces.build(ActuatorInformation, setup.actuators)
        self.actuator_spaces = {str(a.uid): a.space for a in self.actuators}
        self.pending_dumps: list[m.BrainDump] = []
        self.stored = True  # nothing learned yet that a dump would lose
        cls = load_class(setup.agent.brain.name)
        try:
            self.brain: Brain = cls(**setup.agent.brain.params)
        except Exception as exc:
            raise PluginError(cls, "__init__") from exc
        self.brain.attach(
            BrainContext(
                name=setup.agent.name,
                run_uid=setup.run_uid,
                phase_index=setup.phase_index,
                phase_name=setup.phase_name,
                mode=setup.mode,
                seed=setup.brain_seed,
                sensors=self.sensors,
                actuators=self.actuators,
                dumps=BrainDumps(loaded=setup.dump, write=self._write_dump),
            )
        )

    def _write_dump(self, data: bytes, tag: str) -> None:
        path = ""
        if self.request.dump_dir:
            os.makedirs(self.request.dump_dir, exist_ok=True)
            suffix = f"-{tag}" if tag else ""
            path = os.path.join(self.request.dump_dir, f"{self.request.agent.name}{suffix}.bin")
            with open(path, "wb") as f:
                f.write(data)
        self.pending_dumps.append(
            m.BrainDump(agent_id=self.request.agent_id, tag=tag, path=path, dump=data)
        )

    async def setup(self, runtime: Any) -> dict[str, str]:
        self.router, endpoint = runtime.bind(zmq.ROUTER, "brain")
        self.store = connect_store(runtime, self.store_endpoint)
        for method in ("setup", "load"):
            try:
                getattr(self.brain, method)()
            except Exception as exc:
                raise PluginError(self.brain, method) from exc
        if self.request.dump is not None:
            LOG.info("%s started from a brain dump of %d bytes", self.name, len(self.request.dump))
        runtime.start_task(self._serve())
        return {"brain": endpoint}

    async def _serve(self) -> None:
        router = self.router
        brain = self.brain
        memory = brain.memory
        names: dict[bytes, str] = {}
        while True:
            sender, payload = await router.recv_multipart()
            message = m.decode(payload)
            if not isinstance(message, m.Experience):
                raise TypeError(f"{self.name} cannot handle {type(message).__name__}")
            muscle_id = names.get(sender)
            if muscle_id is None:
                muscle_id = names[sender] = f"{self.request.agent.name}-{message.worker}"
            transition = message.transition
            if transition is not None:
                memory.append(
                    muscle_id,
                    sensor_readings=self._sensor_infos(transition.sensors),
                    actuator_setpoints=self._setpoint_infos(transition.setpoints),
                    rewards=self.spaces.build(RewardInformation, transition.rewards),
                    done=transition.done,
                    objective=transition.objective,
                )
            try:
                update = brain.thinking(muscle_id, pickle.loads(message.data))
            except Exception as exc:
                raise PluginError(brain, "thinking") from exc
            self.stored = False
            if message.done:
                self._store_brain()
                await self._send_dumps()
            payload = None if update is None else pickle.dumps(update, pickle.HIGHEST_PROTOCOL)
            await router.send_multipart([sender, m.encode(m.BrainUpdate(update=payload))])

    def _sensor_infos(self, values: list[Any]) -> list[SensorInformation]:
        return [
            SensorInformation(_native(t.space, v), t.space, t.uid)
            for t, v in zip(self.sensors, values, strict=False)
        ]

    def _setpoint_infos(self, values: dict[str, Any]) -> list[ActuatorInformation]:
        spaces = self.actuator_spaces
        return [
            ActuatorInformation(_native(spaces.get(uid), v), spaces.get(uid), uid)
            for uid, v in values.items()
        ]

    async def _send_dumps(self) -> None:
        dumps, self.pending_dumps = self.pending_dumps, []
        if self.store is not None:
            for dump in dumps:
                await self.store.send(m.encode(dump))

    def _store_brain(self) -> None:
        try:
            self.brain.store()
        except Exception as exc:
            raise PluginError(self.brain, "store") from exc
        self.stored = True

    async def close(self) -> None:
        """Stopped before the episode ended (interrupt, failure elsewhere): dump once."""
        if not self.stored:
            self._store_brain()
        await self._send_dumps()
        await close_producer(self.store, self.name)

    async def teardown(self) -> None:
        try:
            self.brain.teardown()
        except Exception as exc:
            raise PluginError(self.brain, "teardown") from exc


def _native(space: Any, value: Any) -> Any:
    return space.from_json_value(value) if space is not None else value
