"""The executor: runs validated run files one after another in this (the CLI's) process."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from palaestra.compat import install as install_palaestrai_names
from palaestra.core.description import names
from palaestra.core.description.config import GROUPS_VAR, check_store_uri
from palaestra.core.description.specs import RunSpec
from palaestra.core.errors import EXIT_OK, EXIT_RUN_FAILED, RuntimeConfigError
from palaestra.core.procfs import set_title
from palaestra.core.supervision import interrupts, start_methods, undertaker
from palaestra.core.supervision.affinity import Affinity
from palaestra.core.supervision.launch import Placement
from palaestra.core.supervision.processes import preload
from palaestra.core.supervision.runtime import Runtime
from palaestra.core.wire.channel import spinning
from palaestra.core.wire.messages import EpisodeEnded
from palaestra.core.wire.netlink import Host, Network
from palaestra.core.wire.transport import make_run_dir, remove_run_dir
from palaestra.experiment.experiment_run import ExperimentRun, ResumeAt
from palaestra.experiment.recording import exported, recording_flag
from palaestra.experiment.runtime_config import RuntimeConfig

LOG = logging.getLogger(__name__)

PRELOAD = (
    "palaestra.agent.conductor",
    "palaestra.agent.brain_process",
    "palaestra.agent.muscle_process",
    "palaestra.environment.conductor",
    "palaestra.environment.environment_process",
    "palaestra.simulation",
)


@dataclass(frozen=True)
class RunOutcome:
    run_uid: str
    instance_uid: str
    exit_code: int
    message: str = ""
    recorded: bool = True
    """Whether the store has the instance (a run refused before it was recorded has not)."""


def execute(
    run: RunSpec,
    config: RuntimeConfig,
    *,
    on_episode: Callable[[EpisodeEnded], None] | None = None,
    on_phase: Callable[[int], None] | None = None,
    resume: ResumeAt | None = None,
    placement: Placement | None = None,
    host: Host | None = None,
) -> RunOutcome:
    """Run ``run`` to its end; never raises for a failed run, returns its outcome.

    Args:
        run: The checked run file.
        config: The runtime configuration (store, data path, time limits, log level).
        on_episode: Called in this process, from its event loop, with an
            :class:`~palaestra.core.wire.messages.EpisodeEnded` each time a worker's episode ends
            (every phase, worker and episode once, in the order they end). Keep it quick: the
            run's control messages wait while it runs. An exception it raises is logged, never
            fatal to the run.
        on_phase: Called likewise with a phase's index as the phase begins (it is recorded,
            its processes start); a run refused before (its store unusable, say) calls it
            never.
        resume: Where the new instance continues an interrupted one (``experiment-resume``);
            None: from the start.
        placement: Where the run's processes run, process by process (see
            :mod:`palaestra.core.supervision.launch`); None: all are the executor's children on
            this host, or with ``backend: ray`` each a Ray actor's (see
            :mod:`palaestra.experiment.ray_placement`).
        host: This process's host (its name, and the address it binds TCP on) in a run whose
            ``placement`` puts processes on other hosts: the run's links then cross hosts by
            CURVE tcp with keys made for this run (see :mod:`palaestra.core.wire.netlink`); None:
            every link is a local one.

    Raises:
        PalaestraError: With ``backend: ray``, before any process of the run starts: the
            cluster cannot be reached or cannot hold the run (see :func:`~palaestra.
            experiment.ray_placement.ray_placement`).
    """
    interrupts.raise_if_received()  # one that came and was dropped: nothing is prepared
    set_title(names.EXECUTOR)
    install_palaestrai_names()  # before the plug-ins' imports here and in every forked child
    preload(PRELOAD)  # imported once here; every child is forked from this process
    # (before a fork server or a Ray actor takes the variables)
    with spinning(config.spin_us), exported(GROUPS_VAR, config.round_groups):
        return _placed(run, config, Watch(on_episode, on_phase), resume, placement, host)


class Watch(NamedTuple):
    """What the caller watches a run with (see :func:`execute`)."""

    on_episode: Callable[[EpisodeEnded], None] | None
    on_phase: Callable[[int], None] | None


def _placed(
    run: RunSpec,
    config: RuntimeConfig,
    watch: Watch,
    resume: ResumeAt | None,
    placement: Placement | None,
    host: Host | None,
) -> RunOutcome:
    """:func:`execute` once the run's processes spin as configured: where they run."""
    check_store_uri(config.store_uri)  # (one given to the Python API too)
    if config.backend != "ray":  # (on Ray: the Brains' nodes')
        writable_data_path(config.data_path)
    method = start_method(run, config.start_method)
    try:
        network = None if host is None else Network.for_run(host)
        if placement is None and config.backend == "ray":
            from palaestra.experiment.ray_placement import ray_placement

            with ray_placement(run, config) as on_ray:  # exit 2 or 3 before anything starts
                network = network or on_ray.network  # links across the nodes' hosts, if any
                return asyncio.run(_execute(run, config, watch, resume, method, on_ray, network))
        return asyncio.run(_execute(run, config, watch, resume, method, placement, network))
    finally:
        if method == start_methods.FORKSERVER:
            start_methods.stop_fork_server()  # the next run's starts with its environment


def _where_it_began(config: RuntimeConfig) -> str:
    """The run's ``data_path``, absolute where the run is local: its dumps go where it began,
    also if its working directory is removed while it runs (a temporary folder cleaned up; the
    store's file is kept at its path, see :meth:`palaestra.store.driver.Store.kept`). On Ray
    a relative one is each Brain's node's."""
    return config.data_path if config.backend == "ray" else os.path.abspath(config.data_path)


def writable_data_path(data_path: str) -> None:
    """Make ``data_path`` if it is not there, and make sure this process may write in it:
    every Brain writes its dumps below it, the first at its first episode's end (which may be
    hours into a run).

    Raises:
        RuntimeConfigError: It cannot be made, or written in.
    """
    try:
        os.makedirs(data_path, exist_ok=True)
        why = "" if os.access(data_path, os.W_OK | os.X_OK) else "no permission to write in it"
    except OSError as exc:
        why = f"it cannot be made ({exc.strerror or exc})"
    if why:
        raise RuntimeConfigError(
            f"data_path {data_path!r} ({os.path.abspath(data_path)}), where the Brains write "
            f"their dumps: {why}. Set data_path in the runtime config (or "
            f"PALAESTRA_DATA_PATH) to a directory you may write in."
        )


def start_method(run: RunSpec, configured: str) -> str:
    """How the run's processes start (see :mod:`palaestra.core.supervision.start_methods`).

    For ``auto`` the run's plug-in modules are imported first (forked children share them; a
    run file's check has usually imported them already): one that initialised CUDA at import
    makes it forkserver. A fork server is prepared with palaestra's modules only.
    """
    if configured == start_methods.AUTO:
        preload(plugin_modules(run))
    method = start_methods.resolve(configured)
    start_methods.use(method, preload=("palaestra.core.supervision.runtime", *PRELOAD))
    return method


def plugin_modules(run: RunSpec) -> list[str]:
    """The modules of every plug-in class the run names, each once, in order."""
    classes = [c.name for c in run.conditions]
    for phase in run.phases:
        classes.append(phase.simulation.name)
        classes.extend(c.name for c in phase.simulation.conditions)
        classes.extend(e.name for e in phase.environments)
        for agent in phase.agents:
            classes.extend(c.name for c in (agent.brain, agent.muscle, agent.objective))
    return list(dict.fromkeys(name.partition(":")[0] for name in classes))


async def _execute(
    run: RunSpec,
    config: RuntimeConfig,
    watch: Watch,
    resume: ResumeAt | None = None,
    method: str = start_methods.FORK,
    placement: Placement | None = None,
    network: Network | None = None,
) -> RunOutcome:
    run_dir = make_run_dir()
    undertaker.leave(run_dir)  # (removed below; by the undertaker if this is killed)
    level = logging.getLevelName(config.log_level.upper())
    component = ExperimentRun(
        names.EXPERIMENT_RUN,
        run=run,
        store_uri=config.store_uri,
        data_path=_where_it_began(config),
        answer_timeout=config.answer_timeout,
        start_timeout=config.start_timeout,
        stop_timeout=config.stop_timeout,
        store_timeout=config.store_timeout,
        # (a Ray actor's threads are Ray's too: the writer keeps its priority there)
        writer_priority="normal" if config.backend == "ray" else config.writer_priority,
        on_episode=watch.on_episode,
        on_phase=watch.on_phase,
        resume=resume,
    )
    runtime = Runtime(
        component,
        run_dir=run_dir,
        log_level=level if isinstance(level, int) else logging.WARNING,
        start_method=method,
        placement=placement,
        network=network,
        affinity=Affinity.of_this_process() if config.cpu_affinity == "worker" else None,
    )
    loop = asyncio.get_running_loop()
    ctrl_c = 0

    def interrupted(signum: int) -> None:
        nonlocal ctrl_c
        ctrl_c += 1
        if ctrl_c > 1:
            print("Interrupted again: stopping at once.", file=sys.stderr)
            runtime.supervisor.kill_all_now()
        component.on_signal(signum)

    previous = {signum: signal.getsignal(signum) for signum in interrupts.SIGNALS}
    for signum in interrupts.handled():  # (the runtime takes SIGTERM)
        if signum != signal.SIGTERM:  # Ctrl-C; SIGHUP: the terminal closed
            interrupts.add_handler(loop, signum, interrupted)
    try:
        interrupts.raise_if_received()  # one that came before and was dropped: no run starts
        with recording_flag(run.uid):  # experiment-record pause|resume (before the forks)
            code = await runtime.run()
    finally:
        try:
            remove_run_dir(run_dir)
        finally:  # one that comes from now on: the command's own handlers
            interrupts.restore(loop, previous)
    if component.signal is not None:  # (before its start was asked: nothing is recorded)
        return RunOutcome(
            run.uid,
            component.instance_uid,
            128 + component.signal,
            component.stop_reason,
            component.start_asked,
        )
    if code != EXIT_OK:
        error = component.error
        message = error.describe() if error else "the run failed"
        exit_code = error.run_exit_code if error else EXIT_RUN_FAILED  # the error's own
        recorded = component.start_asked  # (a resume that lost its claim, say: not)
        return RunOutcome(run.uid, component.instance_uid, exit_code, message, recorded)
    return RunOutcome(run.uid, component.instance_uid, EXIT_OK)
