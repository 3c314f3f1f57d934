"""Writing a replay into the store as a new run instance linked to its source.

The copy has the source's run, phases, environments and agents, and:

* ``world_states``: the replayed rows, made as a run makes them (the environment's own row,
  through the store writer's conversion);
* ``episodes``: one row per replayed episode (its steps, how it ended, each agent's episode
  reward, as the episode loop counts them; its times those of the replay);
* ``muscle_actions``: one row per completed transition of each agent, in the order of turns of
  the phase's policy (:func:`palaestra.core.turns.run_episode` driven by the replayed steps):
  sensor readings and rewards from the replay, set points from the record (the replay drives
  with them), ``objective`` copied from the record (an Objective may depend on its Brain and
  its whole memory; no agent runs in a replay).

For a record made by the current version and deterministic plug-ins, the copy equals its
source row for row (ids and timestamps aside).
"""

from __future__ import annotations

import socket
import time
import uuid
from collections import defaultdict
from collections.abc import Sequence

import msgspec
from sqlalchemy import Connection, select

from palaestra.core.description.name_rules import stored_reason
from palaestra.core.termination import EpisodeEndsWithEnvironment
from palaestra.core.turns import EpisodeResult, Stepped, run_episode
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import (
    episode_values,
    muscle_action_values,
    stored_rewards,
    world_state_values,
)
from palaestra.replay.record import PhaseRecord, RecordedAgent
from palaestra.replay.steps import EpisodeReplay
from palaestra.store import schema
from palaestra.store import tables as t
from palaestra.store.bulk import TABLES, insert_one, insert_rows
from palaestra.store.engine import make_engine
from palaestra.store.rows import Row, StoreURI, resolve_store_uri
from palaestra.store.tables import utcnow
from palaestra.version import __version__


class _Tape:
    """The replayed steps as a :class:`~palaestra.core.turns.Driver`: each step gives what
    the replay gave; the episode is over after the last one. Keeps each agent's
    observations."""

    def __init__(self, taken: Sequence[Stepped]) -> None:
        self.taken = taken
        self.next = 0
        self.seen: dict[str, list[m.AgentStep]] = defaultdict(list)

    def observe(self, agent: RecordedAgent, observation: m.AgentStep) -> None:
        self.seen[agent.process].append(observation)

    def step(self, acting: Sequence[RecordedAgent]) -> Stepped:
        stepped = self.taken[self.next]
        self.next += 1
        return msgspec.structs.replace(stepped, done=[self.next == len(self.taken)])

    def finish(self, agents: Sequence[RecordedAgent]) -> None:
        """Nothing to wait for."""


def rebuild(
    record: PhaseRecord, worker: int, replay: EpisodeReplay
) -> tuple[dict[str, list[m.MuscleActionRow]], EpisodeResult | None]:
    """Each agent's ``muscle_actions`` rows of the replayed episode, by agent name, and what
    the episode loop says of the episode (its ``episodes`` row; None if it had no step)."""
    if not replay.taken:
        return {}, None
    tape = _Tape(replay.taken)
    result = run_episode(
        record.policy(),
        tape,
        record.agents,
        [EpisodeEndsWithEnvironment()],
        dict(replay.baseline),
    )
    found: dict[str, list[m.MuscleActionRow]] = {}
    for agent in record.agents:
        recorded = {
            row["step"]: row
            for row in record.muscle_actions.get((agent.name, worker, replay.episode), [])
        }
        found[agent.name] = _transitions(agent, replay.episode, tape.seen[agent.name], recorded)
    return found, result


def _transitions(
    agent: RecordedAgent, episode: int, seen: list[m.AgentStep], recorded: dict[int, Row]
) -> list[m.MuscleActionRow]:
    """The rows a Muscle records: an observation with rewards completes the transition of
    the one it acted on before."""
    rows = []
    previous: m.AgentStep | None = None
    for observation in seen:
        if previous is not None and observation.rewards is not None:
            source = recorded.get(previous.step, {})
            rows.append(
                m.MuscleActionRow(
                    episode,
                    previous.step,
                    dict(zip(agent.sensors, previous.values, strict=True)),
                    source.get("actuator_setpoints", {}),
                    stored_rewards(observation.rewards),
                    source.get("objective"),
                    observation.done,
                    observation.terminated,
                    observation.truncated,
                )
            )
        if not observation.done:
            previous = observation
    return rows


class Copy:
    """Collects replayed episodes, then writes them as a new instance of the source's run."""

    def __init__(self, run: str, source: str, store_uri: StoreURI | None) -> None:
        self.run = run
        self.source = source
        self.store_uri = store_uri
        self.phases: dict[int, PhaseRecord] = {}
        self.world: list[tuple[int, str, int, m.WorldStateRow]] = []
        self.actions: list[tuple[int, str, int, m.MuscleActionRow]] = []
        self.episodes: list[m.EpisodeEnded] = []
        self.started_at = utcnow()

    def add(self, record: PhaseRecord, worker: int, replay: EpisodeReplay) -> None:
        """Keep the rows of one replayed episode."""
        self.phases.setdefault(record.index, record)
        for step in replay.kept:
            for uid, row in step.items():
                self.world.append((record.index, uid, worker, row))
        actions, result = rebuild(record, worker, replay)
        for name, transitions in actions.items():
            self.actions.extend((record.index, name, worker, t) for t in transitions)
        if result is not None:
            self.episodes.append(
                m.EpisodeEnded(
                    phase=record.index,
                    worker=worker,
                    episode=replay.episode,
                    started_at=replay.started_at,
                    ended_at=time.time(),
                    steps=result.steps,
                    terminated=result.terminated,
                    truncated=result.truncated,
                    rewards=result.rewards,  # by process: an agent's is its name here
                )
            )

    def write(self, reason: str) -> str:
        """Write the new instance (status ``finished``, ``reason``, kept as
        :func:`~palaestra.core.description.name_rules.stored_reason` keeps a run's reason: a
        divergence's values may be long); returns its uid."""
        store = resolve_store_uri(self.store_uri)
        engine = store if not isinstance(store, str) else make_engine(store)
        try:
            schema.ensure_current(engine)
            with engine.begin() as connection:
                return self._write(connection, reason)
        finally:
            if isinstance(store, str):
                engine.dispose()

    def _write(self, connection: Connection, reason: str) -> str:
        instances = t.experiment_run_instances
        source = connection.execute(
            select(instances.c.id, instances.c.experiment_run_id).where(
                instances.c.uid == self.source
            )
        ).one()
        uid = str(uuid.uuid4())
        instance_id = insert_one(
            connection,
            instances,
            uid=uid,
            experiment_run_id=source.experiment_run_id,
            status="finished",
            reason=stored_reason(reason),
            started_at=self.started_at,
            finished_at=utcnow(),
            palaestra_version=__version__,
            host=socket.gethostname(),
            package_versions=None,
            code_revision=None,
            source_instance_id=source.id,
        )
        env_ids: dict[tuple[int, str], int] = {}
        agent_ids: dict[tuple[int, str], int] = {}
        phase_ids: dict[int, int] = {}
        for record in self.phases.values():
            env_ids.update(self._phase(connection, instance_id, record, agent_ids, phase_ids))
        self._rows(connection, env_ids, agent_ids)
        for index, phase_id in phase_ids.items():
            ended = [episode_values(phase_id, e) for e in self.episodes if e.phase == index]
            if ended:
                insert_rows(connection, TABLES["episodes"], ended)
        return uid

    def _phase(
        self,
        connection: Connection,
        instance_id: int,
        record: PhaseRecord,
        agent_ids: dict[tuple[int, str], int],
        phase_ids: dict[int, int],
    ) -> dict[tuple[int, str], int]:
        row = record.phase_row
        phase_id = phase_ids[record.index] = insert_one(
            connection,
            t.experiment_run_phases,
            experiment_run_instance_id=instance_id,
            index=record.index,
            **{k: row[k] for k in ("name", "mode", "workers", "episodes", "config", "status")},
            started_at=utcnow(),
            finished_at=utcnow(),
        )
        for agent in record.agent_rows:
            agent_ids[(record.index, agent["agent"])] = insert_one(
                connection,
                t.agents,
                experiment_run_phase_id=phase_id,
                name=agent["agent"],
                **{k: agent[k] for k in ("brain", "muscle", "objective", "config", "seeds")},
                loaded_from=agent["loaded_from"],
            )
        return {
            (record.index, env["environment"]): insert_one(
                connection,
                t.environments,
                experiment_run_phase_id=phase_id,
                uid=env["environment"],
                **{k: env[k] for k in ("name", "params", "seeds")},
            )
            for env in record.environment_rows
        }

    def _rows(
        self,
        connection: Connection,
        env_ids: dict[tuple[int, str], int],
        agent_ids: dict[tuple[int, str], int],
    ) -> None:
        world = [
            world_state_values(env_ids[(index, uid)], worker, row)
            for index, uid, worker, row in self.world
        ]
        actions = [
            muscle_action_values(agent_ids[(index, name)], worker, action)
            for index, name, worker, action in self.actions
        ]
        if world:
            insert_rows(connection, TABLES["world_states"], world)
        if actions:
            insert_rows(connection, TABLES["muscle_actions"], actions)
