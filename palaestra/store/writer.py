"""The StoreWriter component: the one process that writes a run's records into the store.

Producers (muscles, environments, brains) PUSH record messages to the writer's PULL socket,
fire-and-forget; the writer buffers rows per table and inserts them in batches, one transaction
per batch, so a crash leaves whole batches only. The executor asks for metadata writes (runs,
phases) and for flushes over the control socket; every such write is committed before its
reply is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import time
from collections.abc import Awaitable, Iterable, Iterator
from typing import Any

import zmq
import zmq.asyncio
from msgspec.structs import asdict

from palaestra.core.description.limits import HEARTBEAT
from palaestra.core.description.name_rules import dump_key
from palaestra.core.errors import StoreError
from palaestra.core.liveness import holding
from palaestra.core.supervision.affinity import to_background
from palaestra.core.supervision.esm import Component, ComponentRuntime, on
from palaestra.core.supervision.hotloop import GC_THRESHOLDS
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import COLUMNS, QUEUE_MESSAGES
from palaestra.store.continued import claim
from palaestra.store.direct import mark_run_end
from palaestra.store.driver import RUN_STATUSES, Store, json_value, utcnow
from palaestra.store.recording_rows import mark_gap

_yield = os.sched_yield

LOG = logging.getLogger(__name__)

RECEIVE_HWM = QUEUE_MESSAGES
"""Messages queued at the writer per producer before it blocks (backpressure; nothing is
dropped): with the producers' batches of at most ``BATCH_BYTES``, the queue is bounded in bytes
too."""
BATCH_BYTES = 8 << 20
"""Encoded bytes of rows buffered (all tables together) before they are inserted."""
IDLE_FLUSH_MS = 200
"""Buffered rows are committed when the socket has been idle this long."""
BUSY_FLUSH_SECONDS = 1.0
"""Buffered rows are committed at the latest this long after the last commit, also while the
socket never idles (a busy phase): an executor killed mid-phase leaves its ``episodes`` rows of
up to about a second before in the store (see :mod:`palaestra.store.completed`)."""
END_QUIET_MS = 50
"""A failed or interrupted run's end is recorded once the record socket has been quiet this
long (its producers have ended by then: their last rows are in flight at most); a finished
run's producers have closed (``StoreFlush``) before."""
END_DRAIN_SECONDS = 2.0
"""... and at the latest this long after it began waiting (a producer still sending)."""
YIELD_ROWS = 50
"""Rows of a SQLite table the writer inserts, while the run's processes step, before it yields
its CPU (``os.sched_yield``) to a process that waits for one: an insert of a 2,000-row batch
takes about 5 ms of CPU, and a worker's process that a step wakes on that CPU would wait for
it (the scheduler lets a task that runs keep its CPU for a slice, about 3 ms, before a woken
one of the same priority takes it). With 64 CartPole games a worker on 2 CPUs
(``benchmarks/vector_envs.py``'s run) a run played 1.17 and 1.15 times as many steps a second
(8 and 10 alternating pairs), for 5 % less CPU; 25 rows gave 1.07, 200 rows 1.02. A flush
someone waits for (a phase's end, the writer's own end) does not yield: the rows' CPU time is
all that remains of it. PostgreSQL's inserts are the server's work (one ``COPY`` a batch): not
split."""
DRAIN_LIMIT = 500
"""Messages taken from the socket before yielding to the event loop."""
RUN_START_ATTEMPTS = 3
"""Tries of a run start whose experiment or run another writer created at the same time."""

IMMEDIATE = frozenset(("code_reloads", "evaluations"))
"""Tables whose rows are rare and inserted as they come, not buffered."""


def prepare(store_uri: str) -> None:
    """Import what the writer of ``store_uri`` needs besides this module: its database driver
    (a writer forked before its run starts, see :mod:`palaestra.core.supervision.prestart`).
    Opens nothing."""
    if store_uri.startswith("postgres"):
        import psycopg  # noqa: F401


class StoreWriter(Component):
    """Writes the records of a run into the store at ``store_uri``.

    Args:
        name: The process name.
        store_uri: URL of the store (``sqlite:///<file>``, ``postgresql+psycopg://...``); an
            empty store gets the schema, an older one is refused (see
            :meth:`palaestra.store.driver.Store.ensure_current`).
        batch_rows: Rows buffered per table before they are inserted.
        batch_bytes: Bytes of rows (as they arrived) buffered before they are inserted.
        priority: ``background``: the process takes a CPU that no other process wants
            (:func:`~palaestra.core.supervision.affinity.to_background`, the runtime config's
            ``writer_priority``); ``normal``: as it was started.
    """

    def __init__(
        self,
        name: str,
        store_uri: str,
        batch_rows: int = 2000,
        batch_bytes: int = BATCH_BYTES,
        priority: str = "normal",
    ) -> None:
        super().__init__(name)
        self.store_uri = store_uri
        self.priority = priority
        self._stepping = True  # (False while a request waits for the rows: no yields)
        self.batch_rows = batch_rows
        self.batch_bytes = batch_bytes
        self.buffered_bytes = 0
        self.store: Store | None = None
        self.buffers: dict[str, list[Any]] = {  # each row the values of its COLUMNS
            table: [] for table in COLUMNS if table not in IMMEDIATE
        }
        self.closed_producers: set[str] = set()
        self._waiters: list[asyncio.Future[None]] = []
        self._socket: zmq.asyncio.Socket | None = None
        self._reader: asyncio.Task[Any] | None = None
        self._next_flush = 0.0  # monotonic time of the next commit while busy
        self.running_instances: set[int] = set()
        self._next_beat = 0.0

    # --- life cycle ----------------------------------------------------------------------

    def open(self) -> None:
        """Open the store, creating its schema if it is empty (idempotent).

        Raises:
            StoreError: The store cannot be opened or created, or its schema is not this
                palaestra's (older: it must be migrated first; newer).
        """
        if self.store is None:
            store = Store(self.store_uri)
            try:
                store.ensure_current()
            except BaseException:
                store.close()
                raise
            self.store = store

    async def setup(self, runtime: ComponentRuntime) -> dict[str, str]:
        """Open the store, bind the PULL socket for records and start reading it."""
        self.open()
        gc.freeze()  # as a hot loop does (see GC_THRESHOLDS): rows are many short-lived dicts
        gc.set_threshold(*GC_THRESHOLDS)
        sock, endpoint = runtime.bind(zmq.PULL, "store")
        sock.setsockopt(zmq.RCVHWM, RECEIVE_HWM)
        self._socket = sock
        self._reader = runtime.start_task(self.read(sock))
        if self.priority == "background":  # (the store is open: the run's start waited for it)
            to_background()
        return {"store": endpoint}

    async def dispatch(self, message: object, **routing: Any) -> Any:
        """Every request of the executor is a store call: the loop may not beat meanwhile."""
        with holding():
            return await super().dispatch(message, **routing)

    def on_signal(self, signum: int) -> Awaitable[Any] | None:
        """SIGTERM sent to the whole process group: keep serving, the executor still needs us
        to record how the run ended; it stops us with ``Shutdown`` (or we die with it). Before
        a run started through us (or after its end) there is nothing to record: we stop."""
        if not self.running_instances:
            return super().on_signal(signum)
        LOG.info(
            "%s: signal %d noted; waiting for the executor to stop the run", self.name, signum
        )
        return None

    async def teardown(self) -> None:
        """Stop reading, store what is already queued or buffered, release the store."""
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
            self._reader = None
        if self.store is None:
            return
        try:
            self._drain_socket()
        finally:
            try:
                self.flush()
                self._keep()
            finally:
                self.store.close()
                self.store = None

    # --- records -------------------------------------------------------------------------

    async def read(self, sock: zmq.asyncio.Socket) -> None:
        """Receive record messages forever; commit buffered rows whenever the socket idles."""
        receiver: zmq.Socket[bytes] = zmq.Socket.shadow(sock.underlying)
        try:
            while True:
                if await sock.poll(IDLE_FLUSH_MS):  # POLLIN by default
                    self._drain(receiver, limit=DRAIN_LIMIT)
                    if time.monotonic() >= self._next_flush:
                        self.flush(yielding=True)
                    await asyncio.sleep(0)  # let handlers waiting on ProducerClosed run
                else:
                    self.flush(yielding=True)
                self._heartbeat()
        except Exception as exc:  # the reader's end: a waiting StoreFlush must not hang
            self._wake_waiters(RuntimeError(f"{self.name}: the record reader failed: {exc}"))
            raise

    def _heartbeat(self) -> None:
        """Every ``HEARTBEAT`` seconds, set ``heartbeat_at`` of the instances being recorded
        (the writer dies with its executor: a killed executor's instance stops beating)."""
        now = time.monotonic()
        if not self.running_instances or now < self._next_beat:
            return
        self._next_beat = now + HEARTBEAT
        try:
            with self._transaction("recording the run's heartbeat") as store:
                ids = sorted(self.running_instances)
                store.execute(
                    "UPDATE experiment_run_instances SET heartbeat_at = ? "
                    f"WHERE id IN ({', '.join('?' * len(ids))})",
                    (store.time(utcnow()), *ids),
                )
        except StoreError as exc:  # a busy store: the next beat tries again
            LOG.warning("%s: %s", self.name, exc)

    def _drain_socket(self, quiet_ms: int = 0) -> None:
        """Take in what is still queued on the record socket (after the reader stopped), and
        with ``quiet_ms`` until it has been quiet that long: what a producer that ended sent
        last may still be on its way from the kernel through ZMQ's I/O thread."""
        if self._socket is None or self._socket.closed:
            return
        receiver: zmq.Socket[bytes] = zmq.Socket.shadow(self._socket.underlying)
        self._stepping = False  # (someone waits: a full buffer's rows go in without yields)
        try:
            self._drain(receiver, limit=None)
            deadline = time.monotonic() + END_DRAIN_SECONDS
            while quiet_ms and time.monotonic() < deadline and receiver.poll(quiet_ms):
                self._drain(receiver, limit=None)
        finally:
            self._stepping = True

    def _drain(self, receiver: zmq.Socket[bytes], limit: int | None) -> None:
        count = 0
        while limit is None or count < limit:
            try:
                data = receiver.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            self.accept(m.decode(data), len(data))
            count += 1

    def accept(self, message: m.Message, size: int = 0) -> None:
        """Handle one message from the record socket (buffer its rows, or note a producer);
        ``size`` is its encoded size, for the byte bound of the buffers.

        Raises:
            TypeError: ``message`` is not a record message (a bug of its sender).
        """
        if isinstance(message, m.Rows):
            table = message.table
            if table not in COLUMNS:
                raise TypeError(f"{self.name}: rows of table {table!r}")
            if table in IMMEDIATE:
                self._write({table: message.rows})
            else:
                self._buffer(table, message.rows, size)
        elif isinstance(message, m.RecordingGapMark):
            self.flush(self._stepping)  # the rows before the gap first
            with self._transaction("writing a recording gap") as store:
                mark_gap(store, message.phase_id, message)
        elif isinstance(message, m.BrainDump):
            self._write_brain_dump(message)
        elif isinstance(message, m.ProducerClosed):
            self._producer_closed(message.producer)
        else:
            raise TypeError(f"{self.name}: {type(message).__name__} is not a store record")

    def _buffer(self, table: str, rows: Iterable[Any], size: int) -> None:
        buffer = self.buffers[table]
        buffer.extend(rows)
        self.buffered_bytes += size
        if self.buffered_bytes >= self.batch_bytes:
            self.flush(self._stepping)
        elif len(buffer) >= self.batch_rows:
            self.buffers[table] = []
            self._write({table: buffer}, self._stepping)

    def _write_brain_dump(self, message: m.BrainDump) -> None:
        """Brain dumps are rare and can be large: they are inserted at once, not buffered. A
        periodic dump (``keep`` > 0) leaves the newest ``keep`` dumps of its agent and tag."""
        doing = f"writing a brain dump of agent {message.agent_id}"
        if message.keep:
            doing += " and pruning older ones"
        agent, tag = message.agent_id, message.tag
        with self._transaction(doing) as store:
            store.insert(
                "brain_states",
                agent_id=agent,
                tag=tag,
                path=message.path,
                dump=message.dump,
                created_at=utcnow(),
            )
            if message.keep:
                of_tag = "agent_id = ? AND tag = ?"
                store.execute(
                    f"DELETE FROM brain_states WHERE {of_tag} AND id NOT IN (SELECT id FROM "
                    f"brain_states WHERE {of_tag} ORDER BY id DESC LIMIT ?)",
                    (agent, tag, agent, tag, message.keep),
                )

    def _producer_closed(self, producer: str) -> None:
        self.closed_producers.add(producer)
        self._wake_waiters()

    def _wake_waiters(self, error: Exception | None = None) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if waiter.done():
                continue
            if error is None:
                waiter.set_result(None)
            else:
                waiter.set_exception(error)

    def flush(self, yielding: bool = False) -> None:
        """Insert every buffered row, all tables in one transaction (``yielding``: while the
        run's processes step and no one waits for it, see :data:`YIELD_ROWS`)."""
        pending = {table: rows for table, rows in self.buffers.items() if rows}
        self.buffered_bytes = 0
        self._next_flush = time.monotonic() + BUSY_FLUSH_SECONDS
        if pending:
            for table in pending:
                self.buffers[table] = []
            self._write(pending, yielding)

    def _write(self, rows_by_table: dict[str, list[Any]], yielding: bool = False) -> None:
        doing = " and ".join(f"{len(rows)} rows into {t}" for t, rows in rows_by_table.items())
        with self._transaction(f"writing {doing}") as store:
            chunk = YIELD_ROWS if yielding and store.dialect == "sqlite" else 0
            first = True
            for table, rows in rows_by_table.items():
                parts = (
                    [rows[k : k + chunk] for k in range(0, len(rows), chunk)] if chunk else [rows]
                )
                for part in parts:
                    if not first:
                        _yield()  # (a woken process of the run takes the CPU meanwhile)
                    first = False
                    store.add_rows(table, part)

    @contextlib.contextmanager
    def _transaction(self, doing: str, write: bool = True) -> Iterator[Store]:
        """The store in one transaction, committed on leaving; a failure of the store itself
        (disk full, I/O error, read-only, gone) is a :class:`StoreError` naming the store and
        what to do (:meth:`Store.failing`): the run ends with exit code 3."""
        if self.store is None:
            raise RuntimeError(f"{self.name}: the store is not open")
        # (the loop cannot beat while the store works: up to store_timeout)
        with holding(), self.store.failing(doing), self.store.transaction(write=write) as store:
            yield store

    # --- requests of the executor --------------------------------------------------------

    @on(m.StoreFlush)
    async def handle_flush(self, message: m.StoreFlush) -> m.StoreAck:
        """Wait until each named producer has closed, then commit everything buffered.

        The flush consumes the producers' close markers, so a later phase may reuse their names.
        """
        wanted = set(message.producers)
        while missing := wanted - self.closed_producers:
            LOG.debug("%s: flush waits for %s", self.name, ", ".join(sorted(missing)))
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter
        self.closed_producers -= wanted
        self.flush()  # (the phase's end waits for it)
        return m.StoreAck()

    @on(m.StoreRunStart)
    def handle_run_start(self, message: m.StoreRunStart) -> m.StoreIds:
        """Get or create the experiment and the run, and record a new running instance; one
        that resumes an instance claims it first (:func:`palaestra.store.continued.claim`: a
        :class:`NotResumableError` where another instance continues it already, the run then
        fails with exit 2 before anything ran).

        Another writer on the same store may create the same experiment or run between our
        SELECT and INSERT; the unique violation that follows rolls back and we try again,
        now finding them.
        """
        assert self.store is not None
        for _ in range(RUN_START_ATTEMPTS - 1):
            try:
                return self._record_run_start(message)
            except self.store.conflict:
                LOG.debug("%s: run %s was started concurrently; again", self.name, message.run_uid)
        return self._record_run_start(message)

    def _record_run_start(self, message: m.StoreRunStart) -> m.StoreIds:
        """One transaction of :meth:`handle_run_start`."""
        with self._transaction("recording the start of the run") as store:
            if message.resumed_from_id is not None:
                claim(store, message.resumed_from_id, message.run_uid)
            experiment_id = _experiment(store, message.experiment_uid)
            run_id = _run(store, experiment_id, message)
            now = utcnow()
            instance_id = store.insert(
                "experiment_run_instances",
                uid=message.instance_uid,
                experiment_run_id=run_id,
                status="running",
                reason="",
                started_at=now,
                heartbeat_at=now,
                palaestra_version=message.palaestra_version,
                host=message.host,
                package_versions=message.package_versions,
                code_revision=message.code_revision,
                resumed_from_id=message.resumed_from_id,
            )
            ids = {"experiment": experiment_id, "run": run_id, "instance": instance_id}
        self.running_instances.add(instance_id)
        return m.StoreIds(ids=ids)

    @on(m.StorePhaseStart)
    def handle_phase_start(self, message: m.StorePhaseStart) -> m.StoreIds:
        """Record a running phase with its environments and agents."""
        with self._transaction("recording a phase") as store:
            phase_id = store.insert(
                "experiment_run_phases",
                experiment_run_instance_id=message.instance_id,
                index=message.index,
                name=message.name,
                mode=message.mode,
                workers=message.workers,
                episodes=message.episodes,
                config=message.config,
                status="running",
                started_at=utcnow(),
            )
            ids = {"phase": phase_id}
            for env in message.environments:  # (their fields are the tables' columns)
                ids[f"environment:{env.uid}"] = store.insert(
                    "environments", experiment_run_phase_id=phase_id, **asdict(env)
                )
            for agent in message.agents:
                ids[f"agent:{agent.name}"] = store.insert(
                    "agents", experiment_run_phase_id=phase_id, **asdict(agent)
                )
        return m.StoreIds(ids=ids)

    @on(m.StorePhaseEnd)
    def handle_phase_end(self, message: m.StorePhaseEnd) -> m.StoreAck:
        """Commit the rows received so far, then mark the phase with its final status."""
        _check_status(message.status)
        self._drain_socket(quiet_ms=0 if message.status == "finished" else END_QUIET_MS)
        self.flush()
        with self._transaction("recording the end of a phase") as store:
            ended = store.execute(
                "UPDATE experiment_run_phases SET status = ?, finished_at = ? WHERE id = ?",
                (message.status, store.time(utcnow()), message.phase_id),
            )
            if not ended.rowcount:
                raise ValueError(f"{self.name}: no phase with id {message.phase_id}")
        return m.StoreAck()

    @on(m.StoreRunEnd)
    def handle_run_end(self, message: m.StoreRunEnd) -> m.StoreAck:
        """Commit the rows received so far (also those still queued on the record socket: the
        rows of a run's stopped producers precede its end), then mark the instance and its
        still running phases."""
        _check_status(message.status)
        self._drain_socket(quiet_ms=0 if message.status == "finished" else END_QUIET_MS)
        self.flush()
        self.running_instances.discard(message.instance_id)
        with self._transaction("recording the end of the run") as store:
            ended = mark_run_end(
                store, message.instance_id, message.status, message.reason, utcnow()
            )
            if not ended:  # (nothing changed: the transaction ends with the error)
                raise ValueError(f"{self.name}: no run instance with id {message.instance_id}")
        self._keep()
        return m.StoreAck()

    def _keep(self) -> None:
        """Put the rows where they can be read again if the store's file was removed or
        replaced while the run wrote it (see :meth:`Store.kept`); a replaced file fails the
        run, naming where its rows are.

        Raises:
            StoreError: The file was replaced, or the rows could not be copied.
        """
        assert self.store is not None
        shown, file = self.store.shown, self.store.file
        kept = self.store.kept()
        if kept is None:
            return
        if kept != file:
            raise StoreError(
                f"store {shown}: its file {file} was replaced by another while the run wrote "
                f"it; the run's rows, with those the store had before, are in {kept}"
            )
        LOG.warning(
            "store %s: its file %s was removed while the run wrote it; it is written again, "
            "whole, from the store writer's open copy",
            shown,
            file,
        )

    @on(m.StoreFindDump)
    def handle_find_dump(self, message: m.StoreFindDump) -> m.StoreDump:
        """The newest dump of each tag of ``agent`` in phase ``phase`` of the run's newest
        instance that has that agent in that phase, by :func:`dump_key` of the tag."""
        self.flush()
        with self._transaction("finding a brain dump", write=False) as store:
            if message.instance_id is not None:
                agent_id = _agent_of_chain(store, message)
            else:
                agent_id = store.scalar(
                    NEWEST_AGENT, (message.run_uid, message.phase, message.agent)
                )
            if agent_id is None:
                return m.StoreDump(brain_state_id=None, dumps={})
            found = store.execute(
                "SELECT id, tag, dump FROM brain_states WHERE id IN (SELECT max(id) FROM "
                "brain_states WHERE agent_id = ? GROUP BY tag)",
                (agent_id,),
            ).fetchall()
        if not found:
            return m.StoreDump(brain_state_id=None, dumps={})
        return m.StoreDump(
            brain_state_id=max(row[0] for row in found),
            dumps={dump_key(tag): bytes(dump) for _, tag, dump in found},
        )

    @on(m.StoreFindReplay)
    def handle_find_replay(self, message: m.StoreFindReplay) -> m.StoreReplay:
        """The recorded steps an agent's ``replay`` names (see :mod:`.replay_source`; it reads
        them with the store's readers, imported here for a replay only)."""
        from palaestra.store.engine import make_engine
        from palaestra.store.replay_source import find_replay

        self.flush()
        engine = make_engine(self.store_uri)
        try:
            return find_replay(engine, message)
        finally:
            engine.dispose()


# --- rows and metadata -----------------------------------------------------------------------


def _check_status(status: str) -> None:
    if status not in RUN_STATUSES:
        raise ValueError(f"status {status!r} is not one of {', '.join(RUN_STATUSES)}")


def _experiment(store: Store, uid: str) -> int:
    """The id of the experiment ``uid``, created if it is new."""
    found = store.scalar("SELECT id FROM experiments WHERE uid = ?", (uid,))
    if found is None:
        return store.insert("experiments", uid=uid, created_at=utcnow())
    return int(found)


def _run(store: Store, experiment_id: int, message: m.StoreRunStart) -> int:
    """The id of the run ``message`` starts: created if it is new, else given its document,
    overrides, seed and file (the run file edited and started again: what the run's record
    says is what its newest instance ran)."""
    found = store.execute(  # (the JSON as its text: SQLite's and psycopg's alike)
        "SELECT id, document, CAST(overrides AS TEXT), seed, file FROM experiment_runs "
        "WHERE uid = ?",
        (message.run_uid,),
    ).fetchone()
    if found is None:
        return store.insert(
            "experiment_runs",
            uid=message.run_uid,
            experiment_id=experiment_id,
            document=message.document,
            file=message.file,
            seed=message.seed,
            created_at=utcnow(),
            overrides=message.overrides,
        )
    run_id, document, overrides, seed, file = found
    new = (message.document, message.overrides, message.seed, message.file)
    if (document, None if overrides is None else json_value(overrides), seed, file) != new:
        columns = ("document", "overrides", "seed", "file")
        store.execute(  # (only then: an UPDATE locks the run's row on PostgreSQL)
            "UPDATE experiment_runs SET document = ?, overrides = ?, seed = ?, file = ? "
            "WHERE id = ?",
            (*store.values("experiment_runs", columns, new), run_id),
        )
    return int(run_id)


def _agent_of_chain(store: Store, message: m.StoreFindDump) -> int | None:
    """The id of the agent in the phase of the asking instance, or else of the instances it
    continues (``resumed_from_id``: a resumed instance skips the phases they finished), the
    nearest first; None if none of them has it."""
    instance: int | None = message.instance_id
    seen: set[int] = set()
    while instance is not None and instance not in seen:
        seen.add(instance)
        found = store.scalar(INSTANCE_AGENT, (instance, message.phase, message.agent))
        if found is not None:
            return int(found)
        instance = store.scalar(
            "SELECT resumed_from_id FROM experiment_run_instances WHERE id = ?", (instance,)
        )
    return None


INSTANCE_AGENT = """\
SELECT agents.id FROM agents
JOIN experiment_run_phases AS phases ON agents.experiment_run_phase_id = phases.id
WHERE phases.experiment_run_instance_id = ? AND phases."index" = ? AND agents.name = ?"""
"""The id of an agent (its name) in a phase (its index) of an instance (its id)."""
NEWEST_AGENT = """\
SELECT agents.id FROM agents
JOIN experiment_run_phases AS phases ON agents.experiment_run_phase_id = phases.id
JOIN experiment_run_instances AS instances ON phases.experiment_run_instance_id = instances.id
JOIN experiment_runs AS runs ON instances.experiment_run_id = runs.id
WHERE runs.uid = ? AND phases."index" = ? AND agents.name = ?
ORDER BY instances.id DESC LIMIT 1"""
"""The id of an agent (its name) in a phase (its index) of a run's (its uid) newest instance
that has it."""
