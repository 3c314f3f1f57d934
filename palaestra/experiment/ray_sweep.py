"""Running a sweep's checked runs on a Ray cluster: each run a Ray task running an executor.

Each run is a task of a Ray actor (one CPU of the cluster reserved, never restarted; at most
``parallel`` actors, each taking run after run) that runs it as a parallel sweep on this
machine does: an executor process
(:class:`~palaestra.experiment.isolated.ExecutorProcess`) with the whole run on that node,
``backend: local`` inside it, writing to the shared store. The actor's second, concurrent task
passes a signal on to that executor, so Ctrl-C stops the runs cleanly wherever they are: marked
cancelled in the store, their processes gone, the actors killed. A run that fails does not
stop the others; a node lost fails the runs it held, naming the node.

At most ``parallel`` runs execute at once; None: as many as the cluster has CPUs when the
sweep starts. The executor runs in the directory the sweep was started in (where a node has
it) with the sweep's own import path (the run files' directories, ``PYTHONPATH``) first, so the
plug-ins and relative paths of a run file resolve on every node that shares those paths.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from signal import SIGTERM
from typing import Any

from palaestra.core.description.specs import RunSpec
from palaestra.core.errors import EXIT_RUN_FAILED, InvalidInputError
from palaestra.core.supervision import interrupts
from palaestra.experiment.executor import RunOutcome
from palaestra.experiment.ray_placement import UNNICED
from palaestra.experiment.runtime_config import RuntimeConfig

__all__ = ["OnEnd", "OnStart", "run_all_on_ray"]

OnStart = Callable[[int, str], None]
"""Called as a run begins on a node, with its index and the node (id and address)."""
OnEnd = Callable[[int, RunOutcome, str], None]
"""Called as a run ends, with its index, its outcome and the node it ran on ("" if none)."""

STOP_GRACE = 60.0
"""Seconds the runs of an interrupted sweep may take to stop before their actors are killed."""
_POLL = 0.2
"""Seconds between looks at the signals while waiting on the cluster (Ray's wait takes no
file descriptor to wake it)."""


def run_all_on_ray(
    ray: Any,
    runs: Sequence[RunSpec],
    config: RuntimeConfig,
    *,
    parallel: int | None = None,
    on_start: OnStart | None = None,
    on_end: OnEnd | None = None,
) -> list[RunOutcome]:
    """Execute ``runs`` on the connected Ray cluster; return their outcomes in order.

    Args:
        ray: The ``ray`` module, connected (see :func:`palaestra.experiment.ray_cluster.
            connect`).
        runs: The checked runs.
        config: The runtime config; its runs execute with ``backend: local`` on their node.
        parallel: The most runs at once; None: the cluster's CPUs.

    Raises:
        InvalidInputError: ``parallel`` is below 1.
    """
    if parallel is not None and parallel < 1:
        raise InvalidInputError(f"parallel must be 1 or more, got {parallel}.")
    if parallel is None:
        parallel = max(1, int(ray.cluster_resources().get("CPU", 1)))
    return _RaySweep(ray, runs, config, parallel, on_start, on_end).run()


class RunHost:
    """The Ray actor that executes one run (created through ``ray.remote`` at run time)."""

    def __init__(self) -> None:
        ray: Any = importlib.import_module("ray")  # on a node of the cluster: installed
        context = ray.get_runtime_context()
        self.node = f"{context.get_node_id()[:8]}@{ray.util.get_node_ip_address()}"
        self._lock = threading.Lock()
        self._signum = 0
        self._child: Any = None

    def where(self) -> str:
        """The node this actor runs on: returns once it has started."""
        return self.node

    def execute(self, run: RunSpec, config: RuntimeConfig, cwd: str) -> tuple[RunOutcome, str]:
        """Run ``run`` in an executor process of its own; its outcome and this node."""
        from palaestra.experiment.isolated import ExecutorProcess

        if os.path.isdir(cwd):
            os.chdir(cwd)
        with self._lock:
            if self._signum:
                reason = "not started: the sweep was interrupted"
                return RunOutcome(run.uid, "", 128 + self._signum, reason), self.node
            self._child = ExecutorProcess(run, config)
        return self._child.outcome(), self.node

    def interrupt(self, signum: int) -> None:
        """Pass ``signum`` on to the executor (once: it stops cleanly; twice: at once)."""
        with self._lock:
            self._signum = signum
            if self._child is not None:
                self._child.interrupt(signum)


@dataclasses.dataclass
class _Host:
    """An actor of the sweep, and the node it runs on ("" until it has started)."""

    actor: Any
    node: str = ""


@dataclasses.dataclass
class _Executing:
    index: int
    host: _Host
    done: Any
    """The object ref of the actor's ``execute``."""


class _RaySweep:
    """The runs waiting, executing on the cluster and ended, the actors executing them (at
    most ``parallel``, each reused for run after run: a new actor is a new Ray worker, seconds
    to start), and the signals that stopped the sweep."""

    def __init__(
        self,
        ray: Any,
        runs: Sequence[RunSpec],
        config: RuntimeConfig,
        parallel: int,
        on_start: OnStart | None,
        on_end: OnEnd | None,
    ) -> None:
        self.ray = ray
        self.config = dataclasses.replace(config, backend="local")  # the whole run on a node
        self.parallel = parallel
        self.on_start = on_start
        self.on_end = on_end
        self.runs = list(runs)
        self.waiting = deque(enumerate(runs))
        self.executing: dict[Any, _Executing] = {}  # by the ref of execute
        self.hosts: list[_Host] = []
        self.idle: list[_Host] = []
        self.placing: dict[Any, _Host] = {}  # by the ref of where
        self.outcomes: list[RunOutcome | None] = [None] * len(runs)
        self.signals: list[int] = []
        self.stop_by: float | None = None
        self.host_class = ray.remote(RunHost).options(
            num_cpus=1,
            max_concurrency=2,  # execute, and interrupt beside it
            max_restarts=0,
            runtime_env={"env_vars": {"PYTHONPATH": _import_path(), **UNNICED}},
        )

    def run(self) -> list[RunOutcome]:
        previous = self._catch_signals()
        try:
            handled = 0
            while self.waiting or self.executing:
                self._start_more()
                self._collect()
                while handled < len(self.signals):
                    self._stop(self.signals[handled])
                    handled += 1
                if self.stop_by is not None and time.monotonic() > self.stop_by:
                    self._kill_the_rest()
        except BaseException:
            self._kill_the_rest()
            raise
        finally:
            for host in self.hosts:
                self.ray.kill(host.actor, no_restart=True)
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        if SIGTERM in self.signals:  # the runs have stopped: now the caller's own way
            signal.raise_signal(SIGTERM)
        return [outcome for outcome in self.outcomes if outcome is not None]

    def _catch_signals(self) -> dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}

        def caught(signum: int, frame: object) -> None:
            interrupts.note(signum)  # the command ends as the signal says, whatever the runs did
            self.signals.append(signum)

        return {signum: signal.signal(signum, caught) for signum in interrupts.handled()}

    def _start_more(self) -> None:
        cwd = os.getcwd()
        while self.waiting and len(self.executing) < self.parallel and not self.signals:
            host = self.idle.pop() if self.idle else self._new_host()
            index, spec = self.waiting.popleft()
            run = _Executing(index, host, host.actor.execute.remote(spec, self.config, cwd))
            self.executing[run.done] = run
            if host.node and self.on_start is not None:
                self.on_start(index, host.node)

    def _new_host(self) -> _Host:
        host = _Host(self.host_class.remote())
        self.hosts.append(host)
        self.placing[host.actor.where.remote()] = host
        return host

    def _collect(self) -> None:
        refs = [*self.placing, *self.executing]
        if not refs:  # a signal came before anything started: handled by the caller
            return
        ready, _ = self.ray.wait(refs, num_returns=1, timeout=_POLL)
        ready_now, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
        for ref in dict.fromkeys([*ready, *ready_now]):
            if ref in self.placing:
                self._placed(self.placing.pop(ref), ref)
            elif ref in self.executing:
                run = self.executing.pop(ref)
                self._ended(run, self._outcome_of(run))

    def _placed(self, host: _Host, ref: Any) -> None:
        try:
            host.node = self.ray.get(ref)
        except Exception:  # noqa: BLE001 - the actor died: its execute says how
            return
        for run in self.executing.values():
            if run.host is host and self.on_start is not None:
                self.on_start(run.index, host.node)

    def _outcome_of(self, run: _Executing) -> RunOutcome:
        uid = self.runs[run.index].uid
        try:
            outcome, run.host.node = self.ray.get(run.done)
        except Exception as exc:  # noqa: BLE001 - a lost node, a killed actor: the run failed
            self._drop(run.host)
            where = f" on node {run.host.node}" if run.host.node else ""
            text = " ".join(str(exc).split())[:500]
            return RunOutcome(
                uid,
                "",
                EXIT_RUN_FAILED,
                f"its Ray actor{where} died: {type(exc).__name__}: {text}",
            )
        assert isinstance(outcome, RunOutcome)
        self.idle.append(run.host)
        return outcome

    def _drop(self, host: _Host) -> None:
        self.ray.kill(host.actor, no_restart=True)
        self.hosts.remove(host)
        self.placing = {ref: other for ref, other in self.placing.items() if other is not host}

    def _ended(self, run: _Executing, outcome: RunOutcome) -> None:
        self.outcomes[run.index] = outcome
        if self.on_end is not None:
            self.on_end(run.index, outcome, run.host.node)

    def _stop(self, signum: int) -> None:
        """Pass a signal on to the executing runs (a second one stops them at once); the
        waiting ones never start."""
        if self.stop_by is None:
            self.stop_by = time.monotonic() + STOP_GRACE
        for run in self.executing.values():
            run.host.actor.interrupt.remote(signum)
        while self.waiting:
            index, spec = self.waiting.popleft()
            reason = "not started: the sweep was interrupted"
            self.outcomes[index] = outcome = RunOutcome(spec.uid, "", 128 + signum, reason)
            if self.on_end is not None:
                self.on_end(index, outcome, "")

    def _kill_the_rest(self) -> None:
        """Kill the actors still executing (their executors die with them)."""
        for ref, run in list(self.executing.items()):
            del self.executing[ref]
            self._drop(run.host)
            signum = self.signals[0] if self.signals else SIGTERM
            reason = f"killed: it did not stop within {STOP_GRACE:g} s of the interrupt"
            self._ended(run, RunOutcome(self.runs[run.index].uid, "", 128 + signum, reason))
        self.waiting.clear()


def _import_path() -> str:
    """This process's import path beyond the interpreter's own (the run files' directories,
    the working directory, ``PYTHONPATH``), for the executors on the cluster's nodes."""
    prefixes = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix})
    paths = [os.path.abspath(path or os.curdir) for path in sys.path]
    mine = [path for path in paths if os.path.isdir(path) and not path.startswith(prefixes)]
    return os.pathsep.join(dict.fromkeys(mine))
