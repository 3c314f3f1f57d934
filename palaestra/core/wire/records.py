"""Batching result rows on their way to the store writer (PUSH, one way, never awaited).

Producers push from their hot loop on a synchronous socket. Each row is encoded when it is
added: a value that has no encoded form fails the step that made it (naming the plug-in, the
step and the uid), and the encoded size bounds a batch in bytes as well as in rows. A push
blocks only when the writer's queue is full: bounded memory (at most :data:`QUEUE_MESSAGES`
batches of at most :data:`BATCH_BYTES` each, on either side of the socket), nothing dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, NoReturn

import msgspec
import zmq

from palaestra.core.description.name_rules import store_text, stored_reason
from palaestra.core.liveness import waited, waiting
from palaestra.core.nonfinite import json_text
from palaestra.core.plugin import PluginError
from palaestra.core.texts import escaped, surviving
from palaestra.core.wire import messages as m

LOG = logging.getLogger(__name__)

BATCH_ROWS = 1000
"""Rows a producer buffers before it pushes them."""
BATCH_BYTES = 1 << 20
"""Encoded bytes a producer buffers before it pushes them (a larger row goes alone)."""
QUEUE_MESSAGES = 16
"""Batches queued per producer on each side of the store socket before the producer blocks:
with :data:`BATCH_BYTES`, about 32 MiB per producer at most (more only for single rows larger
than that)."""
FAILED_FLUSH_SECONDS = 2.0
"""How long a failing producer waits for the writer to take its last rows."""
STOP_LINGER_MS = 30_000
"""How long a producer that stopped in order waits, when it closes its store socket, for the
writer to take what is still queued (the writer is alive until the end of the run is
recorded)."""

# A text that UTF-8 cannot encode (a lone surrogate) is written as its escape (core.texts):
_encode = surviving(msgspec.msgpack.Encoder().encode)
_json = surviving(msgspec.json.encode)
_plain_json = msgspec.json.encode  # (value by value: a call less; object_text escapes itself)
_UNENCODABLE = (TypeError, ValueError, OverflowError)
Row = m.WorldStateRow | m.MuscleActionRow | m.StatisticsRow | m.PluginRecordRow | m.EpisodeEnded


WORLD_STATE_COLUMNS = (
    "environment_id",
    "worker",
    "episode",
    "step",
    "sensors",
    "setpoints",
    "rewards",
    "done",
    "terminated",
    "truncated",
    "simtime",
    "late_by",
)
"""The values of a ``world_states`` row in :class:`~palaestra.core.wire.messages.Rows`."""
MUSCLE_ACTION_COLUMNS = (
    "agent_id",
    "worker",
    "episode",
    "step",
    "sensor_readings",
    "actuator_setpoints",
    "rewards",
    "reward",
    "objective",
    "done",
    "terminated",
    "truncated",
    "stale_policy",
)
"""The values of a ``muscle_actions`` row in :class:`~palaestra.core.wire.messages.Rows`."""
COLUMNS = {
    "world_states": WORLD_STATE_COLUMNS,
    "muscle_actions": MUSCLE_ACTION_COLUMNS,
    "statistics": ("agent_id", "source", "worker", "episode", "step", "statistics"),
    "plugin_records": (
        "experiment_run_phase_id",
        *("source", "worker", "episode", "step", "key", "value"),
    ),
    "code_reloads": (
        "experiment_run_phase_id",
        *("source", "worker", "episode", "step", "module", "path", "ok", "error", "at"),
    ),
    "evaluations": (
        "agent_id",
        *("evaluation", "training_episodes", "worker", "episode", "metrics"),
        *("checkpoint_id", "checkpoint_hash", "at"),
    ),
    "episodes": (
        "experiment_run_phase_id",
        *("worker", "episode", "started_at", "ended_at", "steps", "terminated", "truncated"),
        "rewards",
    ),
}
"""Every table producers send rows of (:class:`~palaestra.core.wire.messages.Rows`), and the order
of a row's values: one shape per table, made here, inserted by the writer as it comes."""
FLAG: dict[Any, int | None] = {False: 0, True: 1, None: None}
"""A flag's value in a row (``FLAG[done]``): 0 or 1, as SQLite stores a bool, and as SQLite
binds it without the adapter lookup it makes for a bool (a PostgreSQL boolean takes 0 and 1
alike); None stays NULL."""


def flag(value: Any) -> int | None:
    """:data:`FLAG` of any value that is true or false (numpy's too), None kept."""
    return None if value is None else (1 if value else 0)


BULK = frozenset(("world_states", "muscle_actions"))
"""The per-step tables: their JSON values arrive as JSON text and go to the driver as they are
(:meth:`palaestra.store.driver.Store.add_rows`). In the other tables' rows JSON values are plain
values and times POSIX seconds, which the writer turns into the columns' types."""


def statistics_values(agent_id: int, row: m.StatisticsRow) -> tuple[Any, ...]:
    """``row`` as the values of ``statistics``' :data:`COLUMNS`."""
    return (agent_id, row.source, row.worker, row.episode, row.step, row.values)


def plugin_record_values(phase_id: int, row: m.PluginRecordRow) -> tuple[Any, ...]:
    """``row`` as the values of ``plugin_records``' :data:`COLUMNS`."""
    return (phase_id, row.source, row.worker, row.episode, row.step, row.key, row.value)


def code_reload_values(phase_id: int, row: m.CodeReloadRow) -> tuple[Any, ...]:
    """``row`` as the values of ``code_reloads``' :data:`COLUMNS` (the error's traceback as a
    run's reason is kept: a long one as its head and tail, a NUL character as ``\\x00``; see
    :func:`~palaestra.core.description.name_rules.stored_reason`)."""
    error = None if row.error is None else stored_reason(row.error)
    return (
        phase_id,
        *(row.source, row.worker, row.episode, row.step, row.module, row.path, row.ok),
        *(error, row.at),
    )


def evaluation_values(
    agent_id: int, result: m.AgentEvaluated, rollout: tuple[int, int, int], at: float
) -> tuple[Any, ...]:
    """An agent's ``result`` of an evaluation as the values of ``evaluations``' :data:`COLUMNS`:
    ``rollout`` is the training episodes before it, the worker and the episode of the rollout
    it judged; ``at`` POSIX seconds. The metrics are None where the Brain returned no
    result; a NUL character in the checkpoint's id or hash is kept as ``\\x00`` (see
    :func:`~palaestra.core.description.name_rules.store_text`)."""
    metrics = result.metrics if result.result else None
    names = (result.checkpoint_id, result.checkpoint_hash)
    checkpoint = [None if text is None else store_text(text) for text in names]
    return (agent_id, result.evaluation, *rollout, metrics, *checkpoint, at)


def episode_values(phase_id: int, row: m.EpisodeEnded) -> tuple[Any, ...]:
    """``row`` as the values of ``episodes``' :data:`COLUMNS`."""
    return (
        phase_id,
        *(row.worker, row.episode, row.started_at, row.ended_at, row.steps, row.terminated),
        *(row.truncated, row.rewards),
    )


def world_state_values(environment_id: int, worker: int, row: m.WorldStateRow) -> tuple[Any, ...]:
    """``row`` as the values of :data:`WORLD_STATE_COLUMNS` (JSON as text).

    Raises:
        TypeError: A value has no JSON form.
    """
    simtime = row.simtime
    return (
        environment_id,
        worker,
        row.episode,
        row.step,
        json_text(row.sensors),
        json_text(row.setpoints),
        json_text(row.rewards),
        flag(row.done),
        flag(row.terminated),
        flag(row.truncated),
        None if simtime is None else json_text(simtime),
        row.late_by,
    )


def muscle_action_values(agent_id: int, worker: int, row: m.MuscleActionRow) -> tuple[Any, ...]:
    """``row`` as the values of :data:`MUSCLE_ACTION_COLUMNS` (JSON as text).

    Raises:
        TypeError: A value has no JSON form.
    """
    return (
        agent_id,
        worker,
        row.episode,
        row.step,
        json_text(row.sensors),
        json_text(row.setpoints),
        json_text(row.rewards),
        reward_total(reward_values(row.rewards)),
        row.objective,
        flag(row.done),
        flag(row.terminated),
        flag(row.truncated),
        flag(row.stale_policy),
    )


def object_text(keys: list[str], uids: list[str], values: list[Any]) -> str:
    """``json_text(dict(zip(uids, values)))``, from the text of each value; ``keys`` are the
    uids' JSON text with a colon (made once for many rows).

    Raises:
        TypeError: A value has no JSON form.
        UnicodeEncodeError: A value holds a lone surrogate that :func:`escaped` cannot write
            as its escape (in an object it does not copy, a dataclass).
    """
    try:
        parts = [
            key + _plain_json(value).decode() for key, value in zip(keys, values, strict=True)
        ]
    except UnicodeEncodeError:  # (a lone surrogate: as its escape, see core.texts)
        # once: a value escaped() does not rewrite (a dataclass) fails as json_text's does
        values = escaped(values)
        parts = [key + _json(value).decode() for key, value in zip(keys, values, strict=True)]
    text = "{" + ",".join(parts) + "}"
    if "null" in text:  # a None or a non-finite float: as json_text writes it
        return json_text(dict(zip(uids, values, strict=True)))
    return text


def column_texts(
    keys: list[str], uids: list[str], columns: list[list[Any]], count: int
) -> list[str]:
    """:func:`object_text` of each of ``count`` rows whose values are ``columns`` (one list per
    uid, a value per row): a column of numbers, or of flat lists of numbers, is encoded in one
    call and cut into its rows; any other column value by value.

    Raises:
        TypeError: A value has no JSON form.
    """
    if count == 1:  # (one row: as it is)
        return [object_text(keys, uids, [column[0] for column in columns])]
    if not columns:
        return ["{}"] * count
    if len(columns) == 1:  # (its parts made whole at once)
        cut = [_row_texts("{" + keys[0], columns[0], count, "}")]
        texts = cut[0][0]
    else:
        cut = [_row_texts(key, column, count) for key, column in zip(keys, columns, strict=True)]
        rows = zip(*[parts for parts, _ in cut], strict=True)
        texts = ["{" + ",".join(row) + "}" for row in rows]
    if any(null for _, null in cut):  # a None or a non-finite float: as json_text writes it
        for k, text in enumerate(texts):
            if "null" in text:
                texts[k] = json_text({uid: c[k] for uid, c in zip(uids, columns, strict=True)})
    return texts


def dict_texts(dicts: Sequence[Mapping[str, Any]], prefix: str = "") -> list[str] | None:
    """:func:`json_text` of each of ``dicts`` (a row's set points, say) with ``prefix`` before
    each key, encoded a column at a time (see :func:`column_texts`) where there are several
    and each has the same keys in the same order; else None, as where a value has no JSON
    form (each is then made alone, which names it)."""
    if len(dicts) < 2:
        return None
    order = tuple(dicts[0])
    if not order or any([tuple(d) != order for d in dicts]):
        return None
    uids = [prefix + key for key in order]
    columns = [[d[key] for d in dicts] for key in order]
    try:
        return column_texts(object_keys(uids), uids, columns, len(dicts))
    except (TypeError, ValueError, OverflowError):
        return None


def uniform(column: list[Any]) -> bool:
    """Whether each value of ``column`` has the first one's JSON text (so a round's rows can
    share it): a number, a bool or a str, equal to it and of its type, and not a float zero
    (``0.0`` and ``-0.0`` are equal; their texts are not). Lists are not (``[1, 1.0] ==
    [1.0, 1]``)."""
    first = column[0]
    kind = type(first)
    if kind not in _SCALARS or (kind is float and first == 0.0):
        return False
    return column.count(first) == len(column) and len(set(map(type, column))) == 1


_SCALARS = (int, float, bool, str)


def _row_texts(key: str, column: list[Any], count: int, end: str = "") -> tuple[list[str], bool]:
    """``key``, the JSON text of each value of ``column`` and ``end``, and whether one may
    hold ``null``: cut from the column's text where the only brackets in it are the column's
    and its rows' (no string, no object), else value by value."""
    text = _json(column).decode()
    if '"' not in text and "{" not in text:
        parts: list[str] = []
        if text.startswith("[["):  # lists: flat ones if no other bracket is left
            inner = text[2:-2]
            flat = inner.replace("],[", "")
            if "[" not in flat and "]" not in flat:
                opened, closed = key + "[", "]" + end
                parts = [opened + part + closed for part in inner.split("],[")]
        elif text.count("[") == 1:  # numbers (true, false, null)
            parts = [key + part + end for part in text[1:-1].split(",")]
        if len(parts) == count:
            return parts, "null" in text
    return [key + _json(value).decode() + end for value in column], True


def object_keys(uids: list[str]) -> list[str]:
    """The keys :func:`object_text` takes for ``uids``."""
    return [_json(uid).decode() + ":" for uid in uids]


def recorded(step: int, done: bool, every: int) -> bool:
    """Whether the row of step ``step`` (0-based in its episode) is stored when a phase records
    every ``every``-th step (1: all, 0: none; see ``PhaseConfig.record_every``): steps 0,
    ``every``, 2 ``every``, ... and the episode's last (``done``)."""
    return every == 1 or (every > 1 and (done or step % every == 0))


class UnencodableValue(ValueError):
    """A value in a row has no form the store can hold (a plug-in's value, never ours)."""


def unencodable_key(values: dict[str, Any]) -> str | None:
    """The first key of ``values`` whose value has no encoded form (msgpack), or None."""
    for key, value in values.items():
        try:
            _encode(value)
        except _UNENCODABLE:
            return key
    return None


@dataclass(eq=False)
class RowSink:
    """Collects rows and pushes them in batches to the store writer.

    Args:
        socket: The PUSH socket to the writer (see :func:`connect_store`); None discards rows
            (the run has no store), but they are still checked.
        table: The table of the rows (a key of :data:`COLUMNS`): a batch goes as one
            :class:`~palaestra.core.wire.messages.Rows` of it.
        batch: Rows per batch at most.
        batch_bytes: Encoded bytes per batch at most (a row larger than that goes alone).
        plugin: The plug-in and its method that made the rows' values: an unencodable value
            fails as a :class:`~palaestra.core.supervision.runtime.PluginError` of that method.
        shape: Turns a row into what is encoded in its place (the ready-to-insert values of
            the table, :func:`world_state_values` and the like): the writer then does no work
            per row but the insert. Without a ``socket`` the row is only checked, as it is.
    """

    socket: zmq.Socket[bytes] | None
    table: str
    batch: int = BATCH_ROWS
    _: KW_ONLY
    batch_bytes: int = BATCH_BYTES
    plugin: tuple[object, str] | None = None
    shape: Callable[[Any], tuple[Any, ...]] | None = None
    rows: list[Any] = field(default_factory=list, init=False)  # encoded (msgspec.Raw), or shaped
    size: int = field(default=0, init=False)

    def add(self, row: Row) -> None:
        """Encode ``row`` and buffer it; push the batch when it is full (rows or bytes).

        Raises:
            UnencodableValue: A value of ``row`` cannot be encoded (wrapped in a PluginError
                naming ``plugin`` if given); the rows added before it stay buffered.
        """
        try:
            if self.shape is None or self.socket is None:  # (no store: only checked)
                data = _encode(row)
            else:
                data = _encode(self.shape(row))
        except _UNENCODABLE as exc:
            self.unencodable(row, exc)
        self.rows.append(msgspec.Raw(data))
        self.size += len(data)
        if len(self.rows) >= self.batch or self.size >= self.batch_bytes:
            self.flush()

    def add_shaped(self, rows: list[tuple[Any, ...]], size: int) -> None:
        """Buffer rows shaped already (the values of :data:`COLUMNS`, made by palaestra
        from checked values, so encodable: they are encoded with their batch); ``size``
        estimates their encoded bytes. Push the batch when it is full."""
        if not rows:
            return
        if self.socket is not None:
            self.rows.extend(rows)
            self.size += size
        if len(self.rows) >= self.batch or self.size >= self.batch_bytes:
            self.flush()

    def unencodable(self, row: Row, exc: Exception) -> NoReturn:
        """Raise the error that names the value of ``row`` that cannot be encoded."""
        where = "a value"
        for attr, kind in (
            ("sensors", "sensor"),
            ("setpoints", "set point"),
            ("rewards", "reward"),
            ("values", "statistic"),
        ):
            values = getattr(row, attr, {})
            uid = unencodable_key(values)
            if uid is not None:
                where = f"the value of {kind} '{uid}' ({type(values[uid]).__name__})"
                break
        step = getattr(row, "step", getattr(row, "steps", 0))  # an episode's: its last
        error = UnencodableValue(
            f"{where} at step {step} of episode {row.episode} cannot be stored: {exc}. "
            "Values must be numbers, strings, booleans, None, or lists and dicts of them "
            "(numpy arrays and scalars are converted by their space)"
        )
        if self.plugin is None:
            raise error
        raise PluginError(*self.plugin) from error

    def flush(self, block: bool = True, timeout: float | None = None) -> bool:
        """Push what is buffered. Without ``block``, give up at once (False, and say so) if the
        writer's queue is full; with a ``timeout`` (seconds), give up after that long."""
        if not self.rows:
            return True
        rows, self.rows, self.size = self.rows, [], 0
        if self.socket is None:
            return True
        if _push(self.socket, m.Rows(table=self.table, rows=rows), block, timeout):
            return True
        LOG.warning("the store writer is not taking rows: %d rows not stored", len(rows))
        return False

    def close(self, producer: str, failed: bool = False) -> None:
        """Push what is buffered, then tell the writer that ``producer`` is done.

        After an orderly stop this waits for the writer, also when the socket closes (for
        :data:`STOP_LINGER_MS`: the writer is alive until the end of the run is recorded, and
        stores these rows first). A ``failed`` producer waits :data:`FAILED_FLUSH_SECONDS` at
        most, and its socket lingers as the hot loop set it.
        """
        timeout = FAILED_FLUSH_SECONDS if failed else None
        self.flush(timeout=timeout)
        send(self.socket, m.ProducerClosed(producer=producer), timeout=timeout)
        if self.socket is not None and not failed:
            self.socket.setsockopt(zmq.LINGER, STOP_LINGER_MS)


def _push(socket: zmq.Socket[bytes], message: m.Msg, block: bool, timeout: float | None) -> bool:
    """Send ``message``; False if the writer's queue stayed full (see :meth:`RowSink.flush`)."""
    flags = 0 if block else zmq.NOBLOCK
    wait_ms = -1 if timeout is None or not block else max(0, int(timeout * 1000))
    socket.setsockopt(zmq.SNDTIMEO, wait_ms)
    data = m.encode(message)
    working = waiting() if block else 0.0  # a full queue waits for the writer: not stuck
    try:
        socket.send(data, flags)
    except zmq.Again:
        return False
    finally:
        if working:
            waited(working)
    return True


def send(
    socket: zmq.Socket[bytes] | None,
    message: m.Msg,
    block: bool = True,
    timeout: float | None = None,
) -> None:
    """Send one record message (a brain dump, a producer's end) to the writer."""
    if socket is None:
        return
    if not _push(socket, message, block, timeout):
        LOG.warning(
            "the store writer is not taking messages: %s not stored", type(message).__name__
        )


def connect_store(hot: Any, endpoint: str | None) -> zmq.Socket[bytes] | None:
    """A PUSH socket to the store writer, made in the hot thread (None without a store)."""
    if not endpoint:
        return None
    sock: zmq.Socket[bytes] = hot.socket(zmq.PUSH)
    sock.setsockopt(zmq.SNDHWM, QUEUE_MESSAGES)
    hot.dial(sock, endpoint)
    return sock


def stored_rewards(rewards: Sequence[m.InfoDesc]) -> m.StoredRewards:
    """A step's rewards as its row keeps them (``rewards`` of ``world_states`` and
    ``muscle_actions``): their values by uid where each uid comes once, as a step's rewards
    almost always do; else each reward, in the order they came, as ``{"uid": ..., "value":
    ...}`` (as palaestrAI keeps them, a list: two environments of a phase that name a reward
    alike, ``reward``, give a step two rewards of that uid, and a dict would keep one)."""
    values = {r.uid: r.value for r in rewards}
    if len(values) == len(rewards):
        return values
    return [{"uid": r.uid, "value": r.value} for r in rewards]


def reward_items(stored: m.StoredRewards | None) -> list[tuple[str, Any]]:
    """The (uid, value) of each reward a row's ``rewards`` holds, in either of
    :func:`stored_rewards`' forms (None: none)."""
    if not stored:
        return []
    if isinstance(stored, dict):
        return list(stored.items())
    return [(item["uid"], item["value"]) for item in stored]


def reward_values(stored: m.StoredRewards) -> Iterable[Any]:
    """The values of the rewards a row's ``rewards`` holds (either form), in their order."""
    if isinstance(stored, dict):
        return stored.values()
    return [item["value"] for item in stored]


def reward_total(rewards: Iterable[Any]) -> float | None:
    """The sum of a step's numeric reward values (nested lists summed too), None if none:
    ``muscle_actions.reward`` of a step, and what an episode's reward adds up."""
    stack: list[Any] = list(rewards)
    if len(stack) == 1 and type(stack[0]) is float:  # (one float: the sum below, at once)
        return stack[0] + 0.0
    total = 0.0
    found = False
    while stack:
        value = stack.pop()
        if isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            total += value
            found = True
    return total if found else None
