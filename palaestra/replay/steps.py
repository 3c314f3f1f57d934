"""Replaying one episode of one worker, step by step: the iterator behind ``open``.

An :class:`EpisodeReplay` steps the live environments with the recorded set points and yields
a :class:`Step` per environment step, with the recorded and the replayed values side by side,
the live environment objects (inspect them, change them, call their methods between steps),
and :meth:`Step.substitute` to drive the rest of the episode with set points of one's own:
from then on the replay is a new trajectory, compared with nothing (:attr:`Step.diverged_by_user`)
and over when an environment says ``done``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from palaestra.core.turns import Stepped
from palaestra.core.wire import messages as m
from palaestra.environment.environment import Environment
from palaestra.replay.compare import Divergence, first_difference
from palaestra.replay.live import LiveWorld
from palaestra.replay.record import PhaseRecord, UnknownPartError
from palaestra.store.rows import Row


@dataclass
class Step:
    """One replayed environment step of every environment of the worker.

    Attributes:
        phase: The phase's index.
        worker: The worker.
        episode: The episode (0-based).
        step: The step (1-based, as ``world_states.step``).
        recorded: The recorded ``world_states`` row by environment uid (``sensors``,
            ``setpoints``, ``rewards``, ``done``); None past the end of the record.
        live: The replayed row by environment uid (a
            :class:`~palaestra.core.wire.messages.WorldStateRow`: ``sensors``, ``setpoints``,
            ``rewards``, ``done``, ``terminated``, ``truncated``), what a run would record.
        setpoints: The set points applied in this step, by full actuator uid.
        environments: The live environment plug-ins by uid.
        divergence: The first value of this step that differs from the record, or None (also
            once the user substituted set points: nothing is compared then).
        diverged_by_user: Set points were substituted at or before this step.
        records: What plug-ins recorded with ``context.record`` for this step
            (``plugin_records`` rows: ``source``, ``key``, ``value``, ...): the environments'
            of this step, the Muscles' and Brains' of the step they acted in (theirs count
            from 0: ``step - 1``).
    """

    phase: int
    worker: int
    episode: int
    step: int
    recorded: dict[str, Row | None]
    live: dict[str, m.WorldStateRow]
    setpoints: dict[str, Any]
    environments: dict[str, Environment]
    divergence: Divergence | None
    diverged_by_user: bool
    replay: EpisodeReplay = field(repr=False)
    records: list[Row] = field(default_factory=list)

    def substitute(self, setpoints: Mapping[str, Any]) -> None:
        """Drive the rest of the episode with ``setpoints`` (by full actuator uid, e.g.
        ``{"env.0": 3}``) instead of the recorded ones; comparison stops."""
        self.replay.substitute(setpoints)


class EpisodeReplay:
    """An iterator of the :class:`Step` of one episode of one worker.

    Args:
        record: The phase as recorded.
        world: The worker's live environments (started here for the episode).
        worker: The worker.
        episode: The episode; the world must have replayed the episodes before it.
        compare: Compare each step with the record.
        until: Stop after this step (1-based); None: at the end of the record.
    """

    def __init__(
        self,
        record: PhaseRecord,
        world: LiveWorld,
        worker: int,
        episode: int,
        *,
        compare: bool = True,
        until: int | None = None,
    ) -> None:
        self.record = record
        self.world = world
        self.worker = worker
        self.episode = episode
        self.compare = compare
        self.uids = [spec.uid for spec in record.environments]
        self.rows = [record.world_states.get((uid, worker, episode), []) for uid in self.uids]
        self.length = len(self.rows[0]) if self.rows else 0
        self.until = self.length if until is None else min(until, self.length)
        self.substituted: dict[str, Any] | None = None
        self.divergence: Divergence | None = None
        self.started_at = time.time()
        self.baseline = world.start()
        self.kept: list[dict[str, m.WorldStateRow]] = []
        """The replayed rows of each step, by environment uid."""
        self.taken: list[Stepped] = []
        """What each step gave, as :func:`~palaestra.core.turns.run_episode` sees it."""
        self.over = False
        self.owns_world = False
        """Whether :meth:`close` shuts the live environments down (the replay :func:`palaestra.
        replay.open` returns owns them)."""

    def __enter__(self) -> EpisodeReplay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Shut the live environments down if this replay owns them."""
        if self.owns_world:
            self.owns_world = False
            self.world.shutdown()

    def __iter__(self) -> Iterator[Step]:
        return self

    def substitute(self, setpoints: Mapping[str, Any]) -> None:
        """Use ``setpoints`` (by full actuator uid) for every step from the next one on."""
        self.substituted = dict(setpoints)

    def send(self, setpoints: Mapping[str, Any]) -> Step:
        """:meth:`substitute` ``setpoints``, then take the next step."""
        self.substitute(setpoints)
        return next(self)

    def __next__(self) -> Step:
        k = len(self.taken)
        if self.over or (self.substituted is None and k >= self.until):
            raise StopIteration
        recorded: list[Row | None] = [rows[k] if k < len(rows) else None for rows in self.rows]
        if self.substituted is None:
            setpoints, stop = self._recorded_setpoints(k, recorded)
        else:
            setpoints, stop = dict(self.substituted), set()
        by_env: dict[str, dict[str, Any]] = {uid: {} for uid in self.uids}
        for key, value in setpoints.items():
            by_env.setdefault(key.partition(".")[0], {})[key] = value
        stepped = self.world.step(by_env, stop)
        self._keep(stepped)
        live = {uid: row for uid, (_, row) in stepped.items()}
        self.kept.append(live)
        divergence = self._compare(k + 1, recorded, live)
        if self.substituted is not None and any(row.done for row in live.values()):
            self.over = True
        return Step(
            phase=self.record.index,
            worker=self.worker,
            episode=self.episode,
            step=k + 1,
            recorded=dict(zip(self.uids, recorded, strict=True)),
            live=live,
            setpoints=setpoints,
            environments=self.world.environments,
            divergence=divergence,
            diverged_by_user=self.substituted is not None,
            replay=self,
            records=self.record.records_of_step(self.worker, self.episode, k + 1),
        )

    def _recorded_setpoints(
        self, k: int, recorded: list[Row | None]
    ) -> tuple[dict[str, Any], set[str]]:
        """The set points recorded for step ``k`` (0-based) and the environments an agent
        stopped after it (in the run, its objective ended the episode: they were told)."""
        setpoints: dict[str, Any] = {}
        for row in recorded:
            setpoints.update(row["setpoints"] if row is not None else {})
        last = k == self.length - 1
        stop = {
            uid
            for uid, row in zip(self.uids, recorded, strict=True)
            if last and row is not None and row["done"]
        }
        return setpoints, stop

    def _keep(self, stepped: dict[str, tuple[m.EnvState, m.WorldStateRow]]) -> None:
        values: list[tuple[str, Any]] = []
        rewards: list[m.InfoDesc] = []
        for uid in self.uids:
            state, row = stepped[uid]
            values.extend(row.sensors.items())
            rewards.extend(state.rewards)
        states = [stepped[uid][0] for uid in self.uids]
        self.taken.append(
            Stepped(
                values,
                rewards,
                [s.done for s in states],
                [s.terminated for s in states],
                [s.truncated for s in states],
            )
        )

    def _compare(
        self, step: int, recorded: list[Row | None], live: dict[str, m.WorldStateRow]
    ) -> Divergence | None:
        if not self.compare or self.substituted is not None:
            return None
        for uid, row in zip(self.uids, recorded, strict=True):
            if row is None:
                continue
            found = first_difference(row, live[uid])
            if found is not None:
                if found[0] == "done":
                    found = ("done", uid, found[2], found[3])
                divergence = Divergence(
                    self.record.index, self.worker, self.episode, step, uid, *found
                )
                self.divergence = self.divergence or divergence
                return divergence
        return None

    def run(self) -> Divergence | None:
        """Replay the rest of the episode; the first divergence, or None."""
        for _ in self:
            pass
        return self.divergence


class WorkerReplay:
    """The episodes of one worker, replayed in order on one live world (an environment's
    state, its random generator included, carries over from one episode to the next)."""

    def __init__(self, record: PhaseRecord, worker: int) -> None:
        if not 0 <= worker < record.workers:
            raise UnknownPartError(
                f"run '{record.run}' phase {record.index} has no worker {worker}; its workers: "
                f"0 to {record.workers - 1}"
            )
        self.record = record
        self.worker = worker
        self.episodes = record.recorded_episodes(worker)
        self.world = LiveWorld(record.environments, record.seeds, worker, record.check_values)
        self.next_episode = 0

    def episode(
        self, episode: int, *, compare: bool = True, until: int | None = None
    ) -> EpisodeReplay:
        """The replay of ``episode``, after replaying (unchecked) the episodes before it.

        Raises:
            UnknownPartError: No such episode in the record.
            RecordingGapError: Recording was paused at or before ``episode``.
        """
        self.record.check_no_gap(self.worker, episode)
        if episode not in self.episodes:
            shown = ", ".join(str(e) for e in self.episodes) or "none"
            raise UnknownPartError(
                f"run '{self.record.run}' phase {self.record.index} worker {self.worker} has "
                f"no recorded episode {episode}; its episodes: {shown}"
            )
        while self.next_episode < episode:
            EpisodeReplay(
                self.record, self.world, self.worker, self.next_episode, compare=False
            ).run()
            self.next_episode += 1
        self.next_episode = episode + 1
        return EpisodeReplay(
            self.record, self.world, self.worker, episode, compare=compare, until=until
        )

    def close(self) -> None:
        """Shut the live environments down."""
        self.world.shutdown()
