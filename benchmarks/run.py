"""palaestra's benchmark suite: wall time, start-up, steady-state rates, memory, scaling.

    python benchmarks/run.py [--quick | --full] [--repeat N] [--spin-us US]

Every figure is the median of several runs (quick: 3, full: 5; ``--repeat`` overrides).
``--spin-us`` sets the runtime config's ``spin_us`` of every run (else its default; the
caller's ``PALAESTRA_*`` variables never reach the runs). Each run
is ``python -m palaestra experiment-start RUN.yml`` in a fresh temp dir, started with
``start_new_session=True``; a thread samples the session's processes (``/proc/*/stat``) and
their VmRSS (``/proc/<pid>/status``) every 20 ms until the command exits; survivors are killed
and reported.

1. 2-phase dummy run: wall time of ``experiments/dummy_run.yml``, command start to exit.
2. Start-up and shutdown: ``TimedEnvironment`` (``benchmarks/plugins.py``, a DummyEnvironment
   that writes the ``time.time()`` of its first and last step once, at the last step) against
   ``time.time()`` taken around the subprocess. Phase start-up: from the executor's log line
   "phase 0 ... begins" (``-v``, millisecond resolution) to the first step.
3. Steady state: environment steps/s between the first and the last step (so start-up is
   excluded) for 1 agent x 1 worker, 2 agents x 1 worker and 1 agent x 2 workers, store on
   (SQLite) and off (``store_uri: none``), ``update_lag`` 0 and 1. Agent actions/s = steps/s x
   agents (Vanilla: every agent acts every step; the store check confirms the count).
4. The floor: blocking pyzmq DEALER/ROUTER round trips between two processes over ipc://, with
   the sizes of an encoded AgentStep and AgentActions; steady-state rates are also given as a
   fraction of it. Beside it, the same round trips over palaestra's per-step links
   (``palaestra.core.wire.channel``), which is what a step uses.
5. Memory: peak VmRSS summed over the run's processes (so pages they share are counted once
   per process) and peak process count, of the dummy run and of the 1x1 steady-state run.
6. Scaling: wall time and steps/s for 1k, 10k (and 100k, full) steps; the per-step cost of the
   last 10% of the longest episode against the first 10%; steps/s of 1, 2 and 4 workers each
   busy-waiting 1 ms per step.
7. Honesty: every run with the store on must hold one ``world_states`` row per environment
   step and one ``muscle_actions`` row per agent step, else the configuration is reported
   FAILED and the script exits 1.

Prints a table and writes JSON to benchmarks/results/run.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import platform
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

import zmq  # noqa: E402

from palaestra.core.description.config import SPIN_VAR  # noqa: E402
from palaestra.core.description.limits import SPIN_MAX_US  # noqa: E402
from palaestra.core.spaces import Discrete  # noqa: E402
from palaestra.core.wire import messages as m  # noqa: E402
from palaestra.core.wire.channel import Listener, connect  # noqa: E402

SAMPLE_EVERY = 0.02  # seconds between /proc samples
TICKS = os.sysconf("SC_CLK_TCK")
FLOOR_TRIPS = 20_000
FLOOR_WARMUP = 2_000
TOPOLOGIES = [(1, 1), (2, 1), (1, 2)]  # (agents, workers)


@dataclass(frozen=True)
class Mode:
    name: str
    repeat: int
    steady_steps: int
    scaling_steps: tuple[int, ...]
    delay_steps: int  # per worker, in the 1 ms step-delay runs


QUICK = Mode("quick", 3, 5_000, (1_000, 10_000), 1_000)
FULL = Mode("full", 5, 10_000, (1_000, 10_000, 100_000), 2_000)


@dataclass(frozen=True)
class RunSpec:
    """One benchmark run: a generated run file, or a file of ``experiments/``."""

    steps: int  # environment steps per worker, episode and phase
    agents: int = 1
    workers: int = 1
    lag: int = 0
    store: bool = True
    delay: float = 0.0
    run_file: Path | None = None
    phases: int = 1

    @property
    def world_rows(self) -> int:
        return self.steps * self.workers * self.phases


@dataclass
class RunResult:
    wall: float
    startup: float | None = None
    phase_startup: float | None = None  # the executor's "phase 0 begins" -> first step
    shutdown: float | None = None
    rate: float | None = None  # environment steps/s, all workers, first to last step
    creep: float | None = None  # per-step cost of the last 10% / the first 10%
    peak_rss: int = 0  # bytes, summed over the session's processes
    peak_procs: int = 0


@dataclass
class Row:
    what: str
    value: float | None
    unit: str
    fraction: float | None = None
    runs: list[float] = field(default_factory=list)


class RunFailed(Exception):
    pass


# --- run files -----------------------------------------------------------------------------


def swap(text: str, old: str, new: str) -> str:
    if old not in text:
        raise RuntimeError(f"run-file template changed: {old!r} not found")
    return text.replace(old, new)


def run_file_text(spec: RunSpec, timing: Path) -> str:
    """Phase 0 of experiments/dummy_run.yml with TimedEnvironment, the agents and workers."""
    text = (ROOT / "experiments" / "dummy_run.yml").read_text()
    head, tail = text.split("  - phase_1:")
    text = head + "run_config:" + tail.split("run_config:")[1]
    params = (
        f"{{discrete: true, max_iter: {spec.steps}, step_delay: {spec.delay}, "
        f"timing_file: '{timing}', mark_every: {max(1, spec.steps // 100)}}}"
    )
    text = swap(
        text,
        "palaestra.environment.dummy_environment:DummyEnvironment",
        "plugins:TimedEnvironment",
    )
    text = swap(text, "params: {discrete: true, max_iter: 10}", f"params: {params}")
    if spec.agents == 1:
        attacker = text.index("        - name: attacker")
        text = text[:attacker] + text[text.index("      simulation:") :]
    worker = f"        worker: {spec.workers}\n        update_lag: {spec.lag}\n"
    return swap(text, "        worker: 1\n", worker)


# --- one command, watched ------------------------------------------------------------------


def session_members(sid: int, others: set[int]) -> list[int]:
    """Live (not zombie) pids of session ``sid``; ``others`` caches pids outside it."""
    pids = {int(name) for name in os.listdir("/proc") if name.isdigit()}
    others &= pids
    members = []
    for pid in pids - others:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        state, _ppid, _pgrp, session = stat.rsplit(")", 1)[1].split()[:4]
        if int(session) != sid:
            others.add(pid)
        elif state != "Z":
            members.append(pid)
    return members


def vm_rss(pid: int) -> int:
    """Resident set size of ``pid`` in bytes (0 if it is gone or a zombie)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds ``pid`` has used (0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def process_role(pid: int) -> str:
    """``Muscle`` of a process titled ``palaestra[Muscle-player-0]``; ``executor`` for the
    command itself (or any process without such a title)."""
    try:
        # setproctitle pads a title it writes over a long command line with spaces
        title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode().strip()
    except OSError:
        return "executor"
    if title.startswith("palaestra[") and title.endswith("]"):
        return title[len("palaestra[") : -1].split("-")[0]
    return "executor"


class SessionSampler(threading.Thread):
    """Samples process count, summed VmRSS and each process's CPU time of one session until
    stopped (a process's last sample is what it used)."""

    def __init__(self, sid: int, every: float = SAMPLE_EVERY) -> None:
        super().__init__(daemon=True)
        self.sid = sid
        self.every = every
        self.stopped = threading.Event()
        self.peak_rss = 0
        self.peak_procs = 0
        self.cpu: dict[int, tuple[str, float]] = {}

    def run(self) -> None:
        others: set[int] = set()
        while not self.stopped.is_set():
            members = session_members(self.sid, others)
            self.peak_procs = max(self.peak_procs, len(members))
            self.peak_rss = max(self.peak_rss, sum(vm_rss(pid) for pid in members))
            for pid in members:
                known = self.cpu.get(pid)
                # a child is titled once it runs; until then it reads as the executor
                role = known[0] if known and known[0] != "executor" else process_role(pid)
                self.cpu[pid] = (role, cpu_seconds(pid))
            self.stopped.wait(self.every)

    def cpu_by_role(self) -> dict[str, tuple[float, float]]:
        """Per role: CPU seconds of all its processes, and of its busiest one."""
        roles: dict[str, tuple[float, float]] = {}
        for role, seconds in self.cpu.values():
            total, busiest = roles.get(role, (0.0, 0.0))
            roles[role] = (total + seconds, max(busiest, seconds))
        return roles

    def stop(self) -> None:
        self.stopped.set()
        self.join()


def kill_session(sid: int, grace: float) -> list[int]:
    """Wait up to ``grace`` s for the session to empty, then SIGKILL what is left."""
    deadline = time.monotonic() + grace
    while (left := session_members(sid, set())) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return left


SETTINGS: dict[str, str] = {}
"""``PALAESTRA_*`` variables the runs get (``--spin-us``); the caller's own are dropped."""


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALAESTRA_")}
    env.update(SETTINGS)
    # (this tree's palaestra, not the one installed: a worktree measures its own code)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(BENCH), str(ROOT), env.get("PYTHONPATH")])
    )
    return env


@dataclass
class Command:
    began: float
    ended: float
    code: int
    stderr: str
    peak_rss: int
    peak_procs: int
    cpu_by_role: dict[str, tuple[float, float]] = field(default_factory=dict)


def run_command(
    args: list[str],
    cwd: Path,
    timeout: float,
    notes: list[str],
    every: float = SAMPLE_EVERY,
    on_start: Callable[[int], None] | None = None,
) -> Command:
    """Run ``args`` in its own session, sampling it every ``every`` s; wall-clock times by
    ``time.time()``. ``on_start(pid)`` is called once the command has started."""
    with open(cwd / "stdout.txt", "w") as out, open(cwd / "stderr.txt", "w") as err:
        began = time.time()
        proc = subprocess.Popen(
            args, cwd=cwd, env=child_env(), stdout=out, stderr=err, start_new_session=True
        )
        sampler = SessionSampler(proc.pid, every)
        sampler.start()
        if on_start is not None:
            on_start(proc.pid)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        ended = time.time()
    sampler.stop()
    if code is None:
        kill_session(proc.pid, 0)
        proc.wait()
        raise RunFailed(f"timed out after {timeout:.0f} s: {' '.join(args)}")
    if left := kill_session(proc.pid, 2.0):
        notes.append(f"{len(left)} process(es) outlived the command and were killed: {args}")
    stderr = (cwd / "stderr.txt").read_text()
    return Command(
        began, ended, code, stderr, sampler.peak_rss, sampler.peak_procs, sampler.cpu_by_role()
    )


# --- checks and timings --------------------------------------------------------------------


def check_store(db: Path, spec: RunSpec) -> None:
    """One world_states row per environment step, one muscle_actions row per agent step."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        world = conn.execute("select count(*) from world_states").fetchone()[0]
        actions = conn.execute("select count(*) from muscle_actions").fetchone()[0]
    if world != spec.world_rows or actions != spec.world_rows * spec.agents:
        raise RunFailed(
            f"store check: {world} world_states rows for {spec.world_rows} steps, "
            f"{actions} muscle_actions rows for {spec.world_rows * spec.agents} agent steps"
        )


def read_timings(tmp: Path, spec: RunSpec) -> list[dict[str, Any]]:
    timings = [json.loads(p.read_text()) for p in sorted(tmp.glob("timing.*.json"))]
    steps = sum(t["steps"] for t in timings)
    if steps != spec.world_rows:
        raise RunFailed(f"the environments stepped {steps} times, expected {spec.world_rows}")
    return timings


def steady_rate(timings: list[dict[str, Any]]) -> float:
    """Steps after each worker's first, over the span from the first first to the last last."""
    steps = sum(t["steps"] - 1 for t in timings)
    return steps / (max(t["last"] for t in timings) - min(t["first"] for t in timings))


def creep(timing: dict[str, Any]) -> float:
    """Seconds per step over the last 10% of the episode / over the first 10%."""
    marks, n = timing["marks"], timing["steps"]
    head_end = next(mark for mark in marks if mark[0] >= 0.1 * n)
    tail_start = [mark for mark in marks if mark[0] <= 0.9 * n][-1]
    head = (head_end[1] - marks[0][1]) / (head_end[0] - marks[0][0])
    tail = (marks[-1][1] - tail_start[1]) / (marks[-1][0] - tail_start[0])
    return tail / head


# --- one timed run -------------------------------------------------------------------------


def timed_run(spec: RunSpec, notes: list[str]) -> RunResult:
    with tempfile.TemporaryDirectory(prefix="palaestra-bench-") as name:
        tmp = Path(name)
        args = [sys.executable, "-m", "palaestra", "-v"]  # -v: the executor logs phase starts
        if not spec.store:
            (tmp / "runtime.yaml").write_text("store_uri: none\n")
            args += ["-c", str(tmp / "runtime.yaml")]
        run_file = spec.run_file or tmp / "run.yml"
        if spec.run_file is None:
            run_file.write_text(run_file_text(spec, tmp / "timing"))
        timeout = 60 + spec.world_rows * max(0.01, 4 * spec.delay)
        cmd = run_command([*args, "experiment-start", str(run_file)], tmp, timeout, notes)
        if cmd.code != 0:
            raise RunFailed(f"exit {cmd.code}: {cmd.stderr.strip()[-2000:]}")
        if spec.store:
            check_store(tmp / "palaestra.db", spec)
        result = RunResult(cmd.ended - cmd.began, peak_rss=cmd.peak_rss, peak_procs=cmd.peak_procs)
        if spec.run_file is None:
            timings = read_timings(tmp, spec)
            result.startup = min(t["first"] for t in timings) - cmd.began
            result.phase_startup = min(t["first"] for t in timings) - phase_began(cmd.stderr)
            result.shutdown = cmd.ended - max(t["last"] for t in timings)
            result.rate = steady_rate(timings)
            result.creep = creep(timings[0]) if spec.workers == 1 else None
    return result


PHASE_BEGINS = re.compile(
    r"^(\S+ \S+) palaestra\[Executor\] INFO \S+: phase 0 \(.*\) begins$", re.MULTILINE
)


def phase_began(stderr: str) -> float:
    """When the executor began phase 0 (its log line; local time, millisecond resolution)."""
    found = PHASE_BEGINS.search(stderr)
    if found is None:
        raise RunFailed("the executor did not log the start of phase 0")
    return datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()


def repeat_runs(
    specs: dict[str, RunSpec], repeat: int, failures: dict[str, str], notes: list[str]
) -> dict[str, list[RunResult]]:
    """``repeat`` rounds over all specs (interleaved, so noise spreads evenly)."""
    results: dict[str, list[RunResult]] = {key: [] for key in specs}
    for _ in range(repeat):
        for key, spec in specs.items():
            if key in failures:
                continue
            try:
                results[key].append(timed_run(spec, notes))
            except RunFailed as exc:
                failures[key] = str(exc)
    return results


# --- the floor: plain pyzmq round trips ----------------------------------------------------


def message_sizes() -> tuple[int, int]:
    """Encoded sizes of one step's AgentStep (5 sensors, 1 reward) and AgentActions (5)."""
    space = Discrete(10_001).to_text()
    step = m.AgentStep(
        step=4321,
        values=[4321] * 5,
        rewards=[m.InfoDesc("Dummy Reward", space, 4321)],
        done=False,
    )
    actions = m.AgentActions(setpoints={f"myenv.{i}": 42 for i in range(5)})
    return len(m.encode(step)), len(m.encode(actions))


def echo_server(endpoint: str, reply: bytes, count: int) -> None:
    ctx = zmq.Context()
    sock = ctx.socket(zmq.ROUTER)
    sock.bind(endpoint)
    for _ in range(count):
        sender, _request = sock.recv_multipart()
        sock.send_multipart([sender, reply])
    sock.close(linger=1000)
    ctx.term()


def floor_rate(request: bytes, reply: bytes) -> float:
    """Round trips/s of a DEALER client to a ROUTER echo server in a forked process."""
    with tempfile.TemporaryDirectory(prefix="palaestra-floor-") as tmp:
        endpoint = f"ipc://{tmp}/floor"
        server = multiprocessing.get_context("fork").Process(
            target=echo_server, args=(endpoint, reply, FLOOR_WARMUP + FLOOR_TRIPS)
        )
        server.start()
        ctx = zmq.Context()
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.RCVTIMEO, 30_000)
        sock.connect(endpoint)
        try:
            rate = trips_per_second(sock.send, sock.recv, request)
        finally:
            sock.close(linger=0)
            ctx.term()
            server.join(10)
            if server.is_alive():
                server.kill()
    return rate


def trips_per_second(send: Callable[[bytes], Any], recv: Callable[[], Any], data: bytes) -> float:
    """Round trips/s of ``send(data)`` then ``recv()``, after a warm-up."""
    for _ in range(FLOOR_WARMUP):
        send(data)
        recv()
    began = time.perf_counter()
    for _ in range(FLOOR_TRIPS):
        send(data)
        recv()
    return FLOOR_TRIPS / (time.perf_counter() - began)


def link_echo(endpoint: str, reply: bytes, count: int, stop_fd: int) -> None:
    link = connect(endpoint, "echo", stop_fd, _never, "bench")
    for _ in range(count):
        link.recv()
        link.send(reply)
    link.close()


def _never() -> None:
    raise RuntimeError("the benchmark never stops a link")


def link_rate(request: bytes, reply: bytes) -> float:
    """Round trips/s over palaestra's per-step links (palaestra.core.wire.channel), same sizes."""
    stop_r, stop_w = os.pipe()
    with tempfile.TemporaryDirectory(prefix="palaestra-floor-") as tmp:
        listener = Listener(f"ipc://{tmp}/link")
        server = multiprocessing.get_context("fork").Process(
            target=link_echo,
            args=(listener.endpoint, reply, FLOOR_WARMUP + FLOOR_TRIPS, stop_r),
        )
        server.start()
        try:
            link = listener.accept(stop_r, _never)
            assert link is not None
            rate = trips_per_second(link.send, link.recv, request)
            link.close()
        finally:
            listener.close()
            server.join(10)
            if server.is_alive():
                server.kill()
            os.close(stop_r)
            os.close(stop_w)
    return rate


# --- the benchmarks ------------------------------------------------------------------------


class Suite:
    def __init__(self, mode: Mode, repeat: int) -> None:
        self.mode = mode
        self.repeat = repeat
        self.rows: list[Row] = []
        self.notes: list[str] = []
        self.failures: dict[str, str] = {}
        self.floor = 0.0
        self.sizes = (0, 0)
        self.seconds: dict[str, float] = {}

    def add(self, what: str, values: list[float], unit: str, of_floor: bool = False) -> None:
        value = statistics.median(values) if values else None
        fraction = value / self.floor if of_floor and value is not None else None
        self.rows.append(Row(what, value, unit, fraction, values))

    def timed(self, section: Callable[[], None]) -> None:
        print(f"{section.__name__} ...", file=sys.stderr, flush=True)
        began = time.monotonic()
        section()
        self.seconds[section.__name__] = time.monotonic() - began

    def runs(self, specs: dict[str, RunSpec]) -> dict[str, list[RunResult]]:
        return repeat_runs(specs, self.repeat, self.failures, self.notes)

    def zmq_floor(self) -> None:
        self.sizes = message_sizes()
        request, reply = (b"x" * size for size in self.sizes)
        rates = [floor_rate(request, reply) for _ in range(self.repeat)]
        self.floor = statistics.median(rates)
        self.add(f"floor: zmq round trips ({self.sizes[0]} B / {self.sizes[1]} B)", rates, "/s")
        links = [link_rate(request, reply) for _ in range(self.repeat)]
        self.add("palaestra's per-step links: round trips, same sizes", links, "/s", True)

    def dummy_run(self) -> None:
        spec = RunSpec(10, agents=2, phases=2, run_file=ROOT / "experiments" / "dummy_run.yml")
        repeat_runs({"dummy": spec}, 1, self.failures, self.notes)  # warm-up, not counted
        results = self.runs({"dummy": spec})["dummy"]
        self.add("2-phase dummy run: wall time", [r.wall for r in results], "s")
        self.add("2-phase dummy run: peak RSS (sum)", [r.peak_rss / 2**20 for r in results], "MiB")
        self.add("2-phase dummy run: peak processes", [r.peak_procs for r in results], "")

    def steady_state(self) -> None:
        steps = self.mode.steady_steps
        specs = {
            (agents, workers, store, lag): RunSpec(steps, agents, workers, lag, store)
            for agents, workers in TOPOLOGIES
            for store in (True, False)
            for lag in (0, 1)
        }
        results = self.runs({steady_label(*key): spec for key, spec in specs.items()})
        for agents, workers, store, lag in specs:
            label = steady_label(agents, workers, store, lag)
            rates = [r.rate for r in results[label] if r.rate is not None]
            self.add(f"steady {label}: env steps", rates, "/s", of_floor=True)
            self.add(f"steady {label}: agent actions", [r * agents for r in rates], "/s", True)
        for store in (True, False):
            one = results[steady_label(1, 1, store, 0)]
            where = f"1x1 {steps:,} steps, store {'on' if store else 'off'}"
            self.add(f"start-up ({where}): start -> 1st step", [r.startup for r in one], "s")
            self.add(
                f"phase start-up ({where}): phase begins -> 1st step",
                [r.phase_startup for r in one if r.phase_startup is not None],
                "s",
            )
            self.add(f"shutdown ({where}): last step -> exit", [r.shutdown for r in one], "s")
        one = results[steady_label(1, 1, True, 0)]
        self.add("1x1 steady run: peak RSS (sum)", [r.peak_rss / 2**20 for r in one], "MiB")
        self.add("1x1 steady run: peak processes", [r.peak_procs for r in one], "")

    def scaling(self) -> None:
        specs = {f"{n:,} steps": RunSpec(n) for n in self.mode.scaling_steps}
        results = self.runs(specs)
        for label, runs in results.items():
            self.add(f"scaling 1x1 {label}: wall time", [r.wall for r in runs], "s")
            rates = [r.rate for r in runs]
            self.add(f"scaling 1x1 {label}: env steps", rates, "/s", of_floor=True)
        longest = list(results)[-1]
        creeps = [r.creep for r in results[longest]]
        self.add(f"per-step cost, last 10% / first 10% ({longest})", creeps, "x")
        if self.rows[-1].value is not None and self.rows[-1].value > 1.25:
            self.notes.append(
                f"per-step cost creeps up over {longest}: {self.rows[-1].value:.2f}x"
            )

    def workers(self) -> None:
        steps = self.mode.delay_steps
        specs = {f"{w} worker(s)": RunSpec(steps, workers=w, delay=0.001) for w in (1, 2, 4)}
        results = self.runs(specs)
        rates = {}
        for label, runs in results.items():
            rates[label] = [r.rate for r in runs]
            self.add(f"1 ms/step, {label}: env steps (all workers)", rates[label], "/s")
        one, two = rates["1 worker(s)"], rates["2 worker(s)"]
        ratios = [b / a for a, b in zip(one, two, strict=False)]
        self.add("1 ms/step: 2 workers / 1 worker (target >= 1.6)", ratios, "x")
        if self.rows[-1].value is not None and self.rows[-1].value < 1.6:
            self.notes.append(f"2-worker speed-up {self.rows[-1].value:.2f}x is below 1.6")


def steady_label(agents: int, workers: int, store: bool, lag: int) -> str:
    return f"{agents}a x {workers}w, store {'on ' if store else 'off'}, lag {lag}"


# --- report --------------------------------------------------------------------------------


def machine() -> str:
    return f"{platform.node()}, {os.cpu_count()} cpus, Python {platform.python_version()}"


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "FAILED"
    if unit in ("/s", "MiB", ""):
        return f"{value:,.0f}"
    return f"{value:.3f}" if unit == "s" and value < 1 else f"{value:.2f}"


def print_table(suite: Suite, seconds: float) -> None:
    mode = suite.mode
    print(f"palaestra benchmarks ({mode.name}, median of {suite.repeat}) on {machine()}")
    print(f"{'what':62} {'value':>10} {'unit':5} {'of floor':>8}")
    for row in suite.rows:
        fraction = f"{row.fraction:8.3f}" if row.fraction is not None else ""
        print(f"{row.what:62} {fmt(row.value, row.unit):>10} {row.unit:5} {fraction}")
    print(f"took {seconds:.0f} s")
    for note in suite.notes:
        print(f"note: {note}")
    for label, reason in suite.failures.items():
        print(f"FAILED {label}: {reason}", file=sys.stderr)


def write_json(suite: Suite, seconds: float) -> None:
    result = {
        "mode": suite.mode.name,
        "repeat": suite.repeat,
        "machine": machine(),
        "seconds": seconds,
        "floor_message_bytes": {"request": suite.sizes[0], "reply": suite.sizes[1]},
        "section_seconds": suite.seconds,
        "rows": [asdict(row) for row in suite.rows],
        "notes": suite.notes,
        "failures": suite.failures,
    }
    out = BENCH / "results"
    out.mkdir(exist_ok=True)
    (out / "run.json").write_text(json.dumps(result, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--quick", action="store_true", help="the default")
    which.add_argument("--full", action="store_true")
    parser.add_argument("--repeat", type=int, help="runs per figure")
    parser.add_argument(
        "--spin-us", type=float, help="the runtime config's spin_us for every run (0: no spin)"
    )
    args = parser.parse_args()
    if args.spin_us is not None:
        if not 0 <= args.spin_us <= SPIN_MAX_US:
            parser.error(f"--spin-us: from 0 to {SPIN_MAX_US:,.0f}")
        SETTINGS[SPIN_VAR] = repr(args.spin_us)
    mode = FULL if args.full else QUICK
    suite = Suite(mode, args.repeat or mode.repeat)
    began = time.monotonic()
    sections = (suite.zmq_floor, suite.dummy_run, suite.steady_state, suite.scaling, suite.workers)
    for section in sections:
        suite.timed(section)
    seconds = time.monotonic() - began
    print_table(suite, seconds)
    write_json(suite, seconds)
    sys.exit(1 if suite.failures else 0)


if __name__ == "__main__":
    main()
