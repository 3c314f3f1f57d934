"""The environment process: runs one Environment for one worker and records world states."""

from __future__ import annotations

import inspect
from typing import Any

import zmq

from palaestra.core import messages as m
from palaestra.core.codec import describe
from palaestra.core.esm import Component
from palaestra.core.hotloop import HotLoop, closing_producer, run_hot
from palaestra.core.information import ActuatorInformation, json_value
from palaestra.core.loading import load_class
from palaestra.core.records import RowSink, connect_store
from palaestra.core.runtime import PluginError
from palaestra.core.specs import EnvironmentSpec
from palaestra.core.transport import endpoint_for
from palaestra.core.watch import Waiting, watch
from palaestra.environment.environment import Environment, EnvironmentContext


def construct(spec: EnvironmentSpec, seed: int) -> Environment:
    """Instantiate the environment with its params (and ``uid``/``seed`` if it takes them)."""
    cls = load_class(spec.name)
    kwargs = dict(spec.params)
    accepted = inspect.signature(cls).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in accepted.values())
    for key, value in (("uid", spec.uid), ("seed", seed), ("broker_uri", "")):
        if key in accepted or takes_any:
            kwargs.setdefault(key, value)
    try:
        return cls(**kwargs)  # type: ignore[no-any-return]
    except Exception as exc:
        raise PluginError(cls, "__init__") from exc


class EnvironmentProcess(Component):
    def __init__(
        self,
        name: str,
        *,
        environment: EnvironmentSpec,
        environment_id: int,
        worker: int,
        seed: int,
        store_endpoint: str | None,
        answer_timeout: float = 300.0,
    ) -> None:
        super().__init__(name)
        # waiting for the set points of a Muscle (named when we wait): it speaks after its
        # Brain would have, before the simulation controller would blame us
        self.muscles = Waiting(
            "Muscle", answer_timeout, grace=max(1.0, min(5.0, answer_timeout / 2))
        )
        self.expected: list[bytes] | None = None
        self.controller = b""
        self.pending: dict[bytes, dict[str, Any]] = {}
        self.spec = environment
        self.environment_id = environment_id
        self.worker = worker
        self.env = construct(environment, seed)
        self.env.attach(EnvironmentContext(uid=environment.uid, worker=worker, seed=seed))
        self.store_endpoint = store_endpoint
        self.actuators: list[ActuatorInformation] = []
        self.sensor_index: dict[str, int] = {}
        self.sensor_uids: list[str] = []
        self.full_sensor_uids: list[str] = []
        self.prefix = f"{environment.uid}."
        self.episode = -1
        self.step = 0

    async def setup(self, runtime: Any) -> dict[str, str]:
        endpoint = endpoint_for(runtime.run_dir, f"{self.name}-env")
        self.hot = run_hot(runtime, self.name, lambda hot: self._serve(hot, endpoint))
        runtime.start_task(watch([self.muscles]))
        return {"env": endpoint}

    def _serve(self, hot: HotLoop, endpoint: str) -> None:
        """The hot loop: step when the expected Muscles' set points are in; record each step."""
        router = hot.socket(zmq.ROUTER)
        router.bind(endpoint)
        self.rows = RowSink(
            connect_store(hot, self.store_endpoint),
            lambda rows: m.WorldStateRows(
                environment_id=self.environment_id, worker=self.worker, rows=rows
            ),
        )
        wait = hot.poller(router)
        with closing_producer(self.rows, self.name):
            while True:
                wait()
                sender, payload = router.recv_multipart()
                message = m.decode(payload)
                if isinstance(message, m.AgentActions):
                    self.pending[sender] = message.setpoints
                elif isinstance(message, m.EnvStep):
                    self.controller = sender
                    self.expected = [name.encode() for name in message.expect]
                elif isinstance(message, m.EnvStart):
                    router.send_multipart([sender, m.encode(self.start_world(message.reset))])
                    continue
                else:
                    raise TypeError(f"{self.name} cannot handle {type(message).__name__}")
                if self._all_in():
                    router.send_multipart([self.controller, m.encode(self.update())])

    def start_world(self, reset: bool) -> m.EnvBaseline:
        method = "reset" if reset else "start_environment"
        try:
            sensors, actuators = tuple(getattr(self.env, method)())[:2]
        except Exception as exc:
            raise PluginError(self.env, method) from exc
        self.episode += 1
        self.step = 0
        self.actuators = list(actuators)
        self.sensor_uids = [str(s.uid) for s in sensors]
        self.sensor_index = {uid: i for i, uid in enumerate(self.sensor_uids)}
        prefix = self.prefix
        self.full_sensor_uids = [prefix + uid for uid in self.sensor_uids]
        return m.EnvBaseline(
            sensors=[describe(s, prefix + str(s.uid)) for s in sensors],
            actuators=[describe(a, prefix + str(a.uid)) for a in actuators],
        )

    def _all_in(self) -> bool:
        """Whether the step can be taken; else note which Muscle we are waiting for."""
        expected = self.expected
        if expected is None:
            return False
        pending = self.pending
        for name in expected:
            if name not in pending:
                self.muscles.name = name.decode()
                if not self.muscles.since:
                    self.muscles.begin()
                return False
        self.muscles.end()
        return True

    def update(self) -> m.EnvState:
        """Apply the expected Muscles' set points (in the controller's order) and step."""
        pending = self.pending
        setpoints: dict[str, Any] = {}
        for name in self.expected or ():
            setpoints.update(pending.pop(name))
        self.expected = None
        actuators = []
        for template in self.actuators:
            uid = str(template.uid)
            space = template.space
            if uid in setpoints:
                value = setpoints[uid]
                value = space.from_json_value(value) if space is not None else value
            else:
                value = template.value
            actuators.append(ActuatorInformation(value, space, uid))
        try:
            state = tuple(self.env.update(actuators))
        except Exception as exc:
            raise PluginError(self.env, "update") from exc
        sensors, rewards, done = state[0], state[1], bool(state[2])
        values: list[Any] = [None] * len(self.sensor_uids)
        for sensor in sensors:
            index = self.sensor_index.get(str(sensor.uid))
            if index is not None:
                values[index] = json_value(sensor)
        reward_descs = [describe(r) for r in rewards]
        self.step += 1
        self.rows.add(
            (
                self.episode,
                self.step,
                dict(zip(self.full_sensor_uids, values, strict=True)),
                {self.prefix + uid: value for uid, value in setpoints.items()},
                {r.uid: r.value for r in reward_descs},
                done,
            )
        )
        return m.EnvState(values=values, rewards=reward_descs, done=done)

    async def close(self) -> None:
        await self.hot.stop()  # the loop pushes its last rows and closes the producer

    async def teardown(self) -> None:
        try:
            self.env.shutdown()
        except Exception as exc:
            raise PluginError(self.env, "shutdown") from exc
