"""What producers send the store writer: rows (one message type, see
:mod:`palaestra.core.wire.records`), recording gaps, brain dumps, a producer's end; and the ended
episodes the executor counts."""

from __future__ import annotations

from typing import Any

import msgspec

from palaestra.core.wire.messages.base import Msg

StoredRewards = dict[str, Any] | list[dict[str, Any]]
"""A step's rewards as its row keeps them: their values by reward uid where each uid comes
once (the common case), else each reward in order as ``{"uid": ..., "value": ...}`` (two
environments of a phase that name a reward alike: by uid, one would be lost). See
:func:`palaestra.core.wire.records.stored_rewards`."""

# --- store records -------------------------------------------------------------------------


class EpisodeEnded(Msg, frozen=True, kw_only=True):
    """One worker's episode ended: when it started and ended (Unix seconds), its steps, how it
    ended, and each agent's episode reward (the sum of its reward totals, by agent name).

    Sent by whoever ran the episode loop to the store writer (the ``episodes`` table) and to the
    ExperimentRun controller (progress). ``terminated``/``truncated`` are None where the
    environment did not say which.
    """

    phase: int
    worker: int
    episode: int
    started_at: float
    ended_at: float
    steps: int
    terminated: bool | None = None
    truncated: bool | None = None
    rewards: dict[str, float] = {}


class WorldStateRow(msgspec.Struct, frozen=True, array_like=True):
    """One row of ``world_states``: an environment's step (an array on the wire, like a
    tuple)."""

    episode: int
    step: int
    sensors: dict[str, Any]
    """Sensor values by full uid (``<env uid>.<sensor id>``)."""
    setpoints: dict[str, Any]
    """The set points applied in this step, by full actuator uid."""
    rewards: StoredRewards
    """Reward values by reward uid (a list where a uid repeats, see :data:`StoredRewards`)."""
    done: bool
    simtime: Any = None
    """The environment's simulation time at this step (palaestrAI's ``SimTime`` as a plain
    dict), or None if it reports none."""
    terminated: bool | None = None
    """The environment reached a terminal state (None: it does not say)."""
    truncated: bool | None = None
    """The environment was cut short (None: it does not say)."""
    late_by: float | None = None
    """Seconds the step began after its due time (0.0: on time); None in a lockstep phase."""


class StatisticsRow(msgspec.Struct, frozen=True, array_like=True):
    """One row of ``statistics``: what a Brain (after ``thinking``) or a Muscle (after its
    step) added with ``add_statistics``, at a step of a worker's episode."""

    source: str
    """``brain`` or ``muscle``."""
    worker: int
    """The Muscle's worker (for a Brain: of the Muscle whose experience it thought about)."""
    episode: int
    step: int
    values: dict[str, Any]
    """The statistics by key, plain JSON-able values."""


class MuscleActionRow(msgspec.Struct, frozen=True, array_like=True):
    """One row of ``muscle_actions``: what an agent saw, did and got for it in one step."""

    episode: int
    step: int
    sensors: dict[str, Any]
    """The sensor values the Muscle acted on, by uid."""
    setpoints: dict[str, Any]
    """Its set points, by actuator uid."""
    rewards: StoredRewards
    """The rewards that followed, by reward uid (a list where a uid repeats, see
    :data:`StoredRewards`)."""
    objective: float | None
    done: bool
    terminated: bool | None = None
    truncated: bool | None = None
    stale_policy: bool | None = None
    """With ``update_lag: async``: the Muscle acted before the Brain's answer to an earlier
    step had arrived; None otherwise."""


class Rows(Msg, frozen=True, kw_only=True):
    """A batch of rows of one table, ready to insert: each a tuple of the table's values in the
    order of :data:`palaestra.core.wire.records.COLUMNS` (the producer shapes them, with the ids of
    its agent, environment or phase: see :mod:`palaestra.core.wire.records`); the writer only
    inserts them. The one message that carries rows to the store writer."""

    table: str
    rows: list[tuple[Any, ...]]


class PluginRecordRow(msgspec.Struct, frozen=True, array_like=True):
    """One row of ``plugin_records``: a value a plug-in recorded with ``context.record``."""

    source: str
    """The plug-in: ``brain:<agent>``, ``muscle:<agent>`` or ``env:<uid>``."""
    worker: int
    episode: int
    step: int
    key: str
    value: Any
    """Plain JSON."""


class CodeReloadRow(msgspec.Struct, frozen=True, array_like=True):
    """One row of ``code_reloads``: a plug-in's module changed (hot reload), and whether the
    new code took."""

    source: str
    """The plug-in: ``muscle:<agent>``, ``objective:<agent>`` or ``brain:<agent>``."""
    worker: int
    episode: int
    step: int
    """The first step the new code ran (a failed reload: the step at which it was tried)."""
    module: str
    path: str
    ok: bool
    error: str | None
    """The traceback that kept the old code running; None when it took."""
    at: float
    """When it was tried, seconds since the epoch."""


class RecordingGapMark(Msg, frozen=True, kw_only=True):
    """An environment worker's recording paused (``paused``) or resumed at a step: the first
    step not recorded, or the first recorded again (``recording_gaps``)."""

    phase_id: int
    worker: int
    episode: int
    step: int
    paused: bool


class EpisodeRows(Msg, frozen=True, kw_only=True):
    """The episodes that ended, of one simulation controller (phase ``phase_id`` in the
    store), for the ExperimentRun controller's progress (the store gets them as
    :class:`Rows`)."""

    phase_id: int
    rows: list[EpisodeEnded]


class BrainDump(Msg, frozen=True, kw_only=True):
    """A brain dump to store; ``keep`` > 0: a periodic one, after which the store keeps only
    the newest ``keep`` dumps of the agent with this tag (0: keep every one)."""

    agent_id: int
    tag: str
    path: str
    dump: bytes
    keep: int = 0


class ProducerClosed(Msg, frozen=True, kw_only=True):
    """The last message of a producer: everything it wrote precedes this."""

    producer: str
