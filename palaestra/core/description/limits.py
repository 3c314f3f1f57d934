"""The time limits of a run, in one place (seconds).

The two a user may need to change are runtime-config settings (``answer_timeout``,
``start_timeout``; :mod:`palaestra.experiment.runtime_config`); these are their defaults. The
others bound how long an orderly or a failed stop may take, and are fixed.
"""

from __future__ import annotations

ANSWER_TIMEOUT = 300.0
"""Default of ``answer_timeout``: how long a plug-in may take to answer one step."""

START_TIMEOUT = 60.0
"""Default of ``start_timeout``: how long a phase's processes (and the store writer) may take
to start, constructing their plug-ins (loading a model, say)."""

PROBE_TIMEOUT = 30.0
"""Default of ``probe_timeout``: how long an environment may take to be constructed, started
and shut down while a run file is checked."""

STOP_TIMEOUT = 10.0
"""Default of ``stop_timeout``: a phase's processes stop (Brains dump), and the writer stores
what they produced; also how long a failed process may take to hand over its last rows."""

END_TIMEOUT = 3.0
"""An interrupted run: its processes stop within seconds (Brains may be dumping)."""

FAILED_END_TIMEOUT = 1.5
"""A failed run: what has not stopped by then is broken, and is killed."""

CHILDREN_STOP_TIMEOUT = 3.0
"""A process ending: its children stop on request (1/3 of it when the process failed)..."""

KILL_GRACE = 3.0
"""... and then get this long between SIGTERM and SIGKILL (1 s after a failure)."""

ACK_TIMEOUT = 2.0
"""A failing child waits this long for its parent to acknowledge its error report."""

STORE_END_TIMEOUT = 5.0
"""The writer records the end of a run (failed or interrupted) within this, else the run's
end is written straight into the store, bounded by the same time."""

STORE_TIMEOUT = 60.0
"""Default of ``store_timeout``: how long the store writer may take to answer the run's
requests (record a phase, store what a phase produced, find a brain dump)."""

RECORD_END_TIMEOUT = 60.0
"""Writing the end of a run straight into the store (the writer gone or stuck) is retried
for this long: a lock held by another connection may pass."""

RETRY_PAUSE = 0.5
"""Between two tries of such a write."""

HEARTBEAT = 2.0
"""The store writer sets ``heartbeat_at`` of the instance it records this often."""

STALE_AFTER = 15 * HEARTBEAT
"""An instance left ``running`` whose heartbeat is older than this is ``stale``: its executor
is gone (killed, or its machine went down); ``experiment-resume`` may continue it."""

SPIN_US = 200.0
"""Default of ``spin_us``: microseconds a wait on a per-step link polls before it sleeps (see
:mod:`palaestra.core.wire.channel`)."""
SPIN_MAX_US = 10_000.0
"""The longest ``spin_us`` (10 ms: a longer spin would keep a CPU busy for nothing)."""
