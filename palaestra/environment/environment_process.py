"""The environment process: runs one Environment for one worker and records world states."""

from __future__ import annotations

import inspect
from typing import Any

import zmq

from palaestra.core import messages as m
from palaestra.core.codec import describe
from palaestra.core.esm import Component
from palaestra.core.hotloop import HotLoop, Stopped, run_hot
from palaestra.core.information import ActuatorInformation, json_value
from palaestra.core.loading import load_class
from palaestra.core.records import RowSink, connect_store
from palaestra.core.runtime import PluginError
from palaestra.core.specs import EnvironmentSpec
from palaestra.core.transport import endpoint_for
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
    ) -> None:
        super().__init__(name)
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
        return {"env": endpoint}

    def _serve(self, hot: HotLoop, endpoint: str) -> None:
        """The hot loop: answer the simulation controller, record each step."""
        router = hot.socket(zmq.ROUTER)
        router.bind(endpoint)
        self.rows = RowSink(
            connect_store(hot, self.store_endpoint),
            lambda rows: m.WorldStateRows(
                environment_id=self.environment_id, worker=self.worker, rows=rows
            ),
        )
        wait = hot.poller(router)
        try:
            while True:
                wait()
                sender, payload = router.recv_multipart()
                message = m.decode(payload)
                if isinstance(message, m.EnvUpdate):
                    reply: m.Msg = self.update(message)
                elif isinstance(message, m.EnvStart):
                    reply = self.start_world(message.reset)
                else:
                    raise TypeError(f"{self.name} cannot handle {type(message).__name__}")
                router.send_multipart([sender, m.encode(reply)])
        except Stopped:
            self.rows.close(self.name)
            raise
        except BaseException:
            self.rows.close(self.name, block=False)
            raise

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

    def update(self, message: m.EnvUpdate) -> m.EnvState:
        setpoints = message.setpoints
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
