"""A bounded fault-injection soak: real runs, one fault each, and what the run made of it.

    python benchmarks/chaos.py [--faults 60] [--seed 1] [--answer-timeout 3] [--keep]
    python benchmarks/chaos.py --quick --answer-timeout 2 --max-iter 400   # each once (CI: 2 min)
    python benchmarks/chaos.py --only SIGSTOP:Muscle --only SIGKILL   # a subset, KIND[:ROLE]
    python benchmarks/chaos.py --quick --driver controller   # the controller plays the rounds

Each case starts ``python -m palaestra experiment-start run.yml`` in a fresh temporary
directory (its own session; a ``palaestra-runtime.yaml`` there with ``answer_timeout``, the
default ``store_timeout`` (60 s: a frozen writer is named within ``answer_timeout`` all the
same), and a SQLite store in the directory). The run file: agents
``alpha`` and ``beta`` acting together on one DummyEnvironment ``world``, 2 workers, 3 episodes
of 1,000 steps of 1 ms (about 9 s here). Once the store holds ``muscle_actions`` rows, at a
random moment within about the first 40 % of the run, one process of the run (found by its
title, ``palaestra[<name>]``) gets the fault:

* ``SIGSTOP``, ``SIGKILL``, ``SIGSEGV``, ``SIGTERM`` to the ``StoreWriter``, a
  ``SimulationController-<w>``, an ``Environment-world-<w>``, a ``Muscle-<agent>-<w>`` or a
  ``Brain-<agent>`` (worker and agent drawn at random). Expected: exit 1 within 5 s of the
  fault (SIGSTOP: ``answer_timeout`` + 5 s), the instance ``error`` with a reason
  naming the victim, no ``Traceback`` on stderr. The StoreWriter ignores SIGTERM by design:
  that run finishes (exit 0, ``finished``, every row stored).
* ``SIGKILL:Executor``: ``kill -9`` of the command itself, then ``experiment-resume``, after
  ageing the instance's heartbeat in the store as 30 s without one would (the harness's only
  write): the resume exits 0, and the run's view (``palaestra results``) holds every step of
  every worker's episodes exactly once.
* ``SIGINT:Executor``: exit 130, ``cancelled``; the episodes done agree in the console's summary,
  ``experiment-list`` and ``experiment-show`` (both ``--format json``).
* ``pg-terminate:Store`` (only with ``PALAESTRA_TEST_POSTGRES``, an SQLAlchemy URL of a
  PostgreSQL server where a database may be created; psycopg installed): the run's store is a
  fresh database there, whose connections get ``pg_terminate_backend``: exit 3, stderr naming
  the database and the lost connection; or, where the writer found the connection cut by its
  heartbeat (between two writes: retried, as a busy store is), it reconnects and the run
  finishes: exit 0, and then every row must be in the store.
* ``concurrent-sqlite:Store``: 8 shorter runs at once on one SQLite file (``answer_timeout``
  at least 30 s there: this case is about the store, not a loaded machine's latency): each
  exits 0 and stores every row. Left out of ``--quick`` (about a minute on 2 cores).

Every case also checks that no process of its session is left 5 s after the command ended,
and the rows: no (worker, episode, step) twice for one environment or agent; for each worker,
the ``world_states`` of its environment and the ``muscle_actions`` of its Muscles (step ``s``
of a Muscle is the action that made the world's step ``s + 1``), of those that were not the
victim, may differ by the one step in flight at the end of an episode and no more, and an
episode with an ``episodes`` row has all its steps (skipped where the victim is the
StoreWriter). The rows a healthy process lacks are counted as lost. A clean run comes first
(with ``--only`` too): every row, and the duration the fault window is taken from.

Every wait is bounded: a run that has not ended ``answer_timeout`` + 30 s after its fault is
killed with its whole session and the case fails as hung. Prints a table and writes JSON to
benchmarks/results/chaos.json (``--json``); exit status 0 when every case passed, else 1.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from palaestra.core import procfs

ROOT = Path(__file__).resolve().parents[1]
RUN_UID = "chaos-run"
AGENTS = ("alpha", "beta")
ENVIRONMENT = "world"
WORKERS = 2
EPISODES = 3

CHILD_KINDS = ("SIGSTOP", "SIGKILL", "SIGSEGV", "SIGTERM")
CHILD_ROLES = ("StoreWriter", "SimulationController", "Environment", "Muscle", "Brain")
SIGNALS = {
    "SIGSTOP": signal.SIGSTOP,
    "SIGKILL": signal.SIGKILL,
    "SIGSEGV": signal.SIGSEGV,
    "SIGTERM": signal.SIGTERM,
    "SIGINT": signal.SIGINT,
}

ROWS_WITHIN = 60.0
"""Seconds a run may take to store its first ``muscle_actions`` rows."""
HUNG_AFTER = 30.0
"""A run still alive ``answer_timeout`` + this many seconds after its fault is hung."""
EXIT_WITHIN = 5.0
"""Seconds from a SIGKILL, SIGSEGV or SIGTERM to the command's exit (SIGSTOP, or SIGINT of the
command: plus ``answer_timeout``)."""
GONE_WITHIN = 5.0
"""Seconds after the command's exit by which no process of its session may be left."""
FAULT_WINDOW = 0.4
"""The fault comes within this share of a clean run's duration from the command's start ..."""
MIN_WINDOW = 0.5
"""... or within this many seconds of the first rows, where those come later."""
CONCURRENT_RUNS = 8
PG_ENV = "PALAESTRA_TEST_POSTGRES"

STARTED: set[int] = set()
"""Sessions of the commands the current case started: killed, whatever is left of them, when
the case ends (also when the harness itself fails, or on Ctrl-C)."""


# --- cases -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    kind: str
    role: str

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.role}"


CLEAN = Case("clean", "-")


def all_cases(postgres: bool, concurrent: bool = True) -> list[Case]:
    """Every kind x role once, in a fixed order."""
    cases = [Case(kind, role) for kind in CHILD_KINDS for role in CHILD_ROLES]
    cases += [Case("SIGKILL", "Executor"), Case("SIGINT", "Executor")]
    if postgres:
        cases.append(Case("pg-terminate", "Store"))
    if concurrent:
        cases.append(Case("concurrent-sqlite", "Store"))
    return cases


def select(cases: list[Case], only: list[str]) -> list[Case]:
    """The cases ``only`` names (``KIND`` or ``KIND:ROLE``, case-insensitive; ``clean`` too)."""
    wanted = []
    for spec in only:
        kind, _, role = spec.lower().partition(":")
        found = [
            case
            for case in [CLEAN, *cases]
            if case.kind.lower() == kind and (not role or case.role.lower() == role)
        ]
        if not found:
            known = ", ".join(case.label for case in cases)
            raise SystemExit(f"--only {spec}: no such case (known: clean, {known})")
        wanted += [case for case in found if case not in wanted]
    return wanted


def draw(cases: list[Case], n: int, rng: random.Random) -> list[Case]:
    """``n`` cases in random order, cycling: every case once before any repeats."""
    drawn: list[Case] = []
    while len(drawn) < n and cases:
        cycle = list(cases)
        rng.shuffle(cycle)
        drawn += cycle[: n - len(drawn)]
    return drawn


# --- outcome ---------------------------------------------------------------------------------


@dataclass
class Rows:
    verdict: str = "not checked"  # ok | skipped: why | FAIL
    problems: list[str] = field(default_factory=list)
    lost_world_states: int = 0
    lost_muscle_actions: int = 0

    def cell(self) -> str:
        if self.verdict.startswith(("skipped", "not")):
            return self.verdict.split(":")[0]
        if not self.lost_world_states + self.lost_muscle_actions:
            return self.verdict
        return f"{self.verdict}, lost {self.lost_world_states}/{self.lost_muscle_actions}"


@dataclass
class Outcome:
    case: str
    victim: str = "-"
    exit_code: str = "-"
    seconds: float | None = None  # from the fault to the command's exit
    status: str = "-"
    reason: str = ""
    leftovers: list[str] = field(default_factory=list)
    rows: Rows = field(default_factory=Rows)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    workdir: str | None = None

    @property
    def passed(self) -> bool:
        return not self.problems and self.rows.verdict != "FAIL"

    def why(self) -> str:
        reasons = list(self.problems)
        if self.rows.verdict == "FAIL":
            reasons.append("rows: " + "; ".join(self.rows.problems[:3]))
        return "; ".join(reasons)


# --- processes -------------------------------------------------------------------------------

TITLE = re.compile(r"palaestra\[([^\]]+)\]")


def session_processes(session: int) -> list[tuple[int, str]]:
    """Live processes of ``session`` with their command lines (titles are NUL-padded).

    The command starts a session of its own and no palaestra process leaves it, so the
    session finds every one of them, titled or not, also after the command died.
    """
    return procfs.in_session(session)


def title_of(cmdline: str) -> str | None:
    """``Muscle-alpha-1`` of ``palaestra[Muscle-alpha-1]``; None for an untitled process."""
    match = TITLE.match(cmdline)
    return match.group(1) if match else None


def pid_of(session: int, title: str) -> int | None:
    return next((pid for pid, cmd in session_processes(session) if title_of(cmd) == title), None)


def wait_until_gone(session: int, timeout: float) -> list[tuple[int, str]]:
    """Poll (bounded) until no process of ``session`` is left; the survivors."""
    deadline = time.monotonic() + timeout
    while True:
        left = session_processes(session)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def kill_session(session: int) -> None:
    """SIGKILL every process of ``session`` (a stopped one too)."""
    for pid, _ in session_processes(session):
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(session, signal.SIGKILL)


def child_env() -> dict[str, str]:
    """This checkout's palaestra first; the store and data path from the runtime config."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    for name in ("PALAESTRA_STORE_URI", "PALAESTRA_DATA_PATH"):
        env.pop(name, None)
    return env


@dataclass
class Command:
    """One ``python -m palaestra`` command in its own session, its output in files."""

    proc: subprocess.Popen[bytes]
    out: Path
    err: Path
    began: float

    @classmethod
    def start(cls, workdir: Path, *args: str, name: str = "run") -> Command:
        out, err = workdir / f"{name}.out", workdir / f"{name}.err"
        with out.open("wb") as stdout, err.open("wb") as stderr:
            proc = subprocess.Popen(
                [sys.executable, "-m", "palaestra", *args],
                cwd=workdir,
                env=child_env(),
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
            )
        STARTED.add(proc.pid)
        return cls(proc, out, err, time.monotonic())

    @property
    def session(self) -> int:
        return self.proc.pid

    def wait(self, timeout: float) -> int | None:
        """The exit code, or None (its session killed) if it has not ended in ``timeout``."""
        try:
            return self.proc.wait(timeout=max(0.0, timeout))
        except subprocess.TimeoutExpired:
            kill_session(self.session)
            with suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
            return None

    def stdout(self) -> str:
        return self.out.read_text(errors="replace")

    def stderr(self) -> str:
        return self.err.read_text(errors="replace")


def palaestra(workdir: Path, *args: str, timeout: float = 60.0) -> tuple[int | None, str, str]:
    """Run a short palaestra command (bounded); exit code, stdout, stderr."""
    name = f"cmd-{uuid.uuid4().hex[:8]}"
    command = Command.start(workdir, *args, name=name)
    code = command.wait(timeout)
    return code, command.stdout(), command.stderr()


# --- the run ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunShape:
    max_iter: int
    step_delay: float
    answer_timeout: float
    store_timeout: float | None
    driver: str = "auto"  # the simulation param: who plays the rounds


def run_file(uid: str, shape: RunShape) -> str:
    agents = "".join(
        f"""        - name: {agent}
          brain: {{name: palaestra.agent.dummy_brain:DummyBrain, params: {{}}}}
          muscle: {{name: palaestra.agent.dummy_muscle:DummyMuscle, params: {{}}}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [{ENVIRONMENT}.0, {ENVIRONMENT}.1, {ENVIRONMENT}.2]
          actuators: [{ENVIRONMENT}.0, {ENVIRONMENT}.1, {ENVIRONMENT}.2]
"""
        for agent in AGENTS
    )
    return f"""# benchmarks/chaos.py: two agents acting together on one world, {WORKERS} workers
uid: {uid}
experiment_uid: chaos
seed: 7
version: "0.1"
schedule:
  - train:
      environments:
        - environment:
            name: palaestra.environment.dummy_environment:DummyEnvironment
            uid: {ENVIRONMENT}
            params: {{discrete: false, max_iter: {shape.max_iter}, step_delay: {shape.step_delay}}}
      agents:
{agents}      simulation:
        name: palaestra.simulation:Vanilla
        params: {{driver: {shape.driver}}}
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
      phase_config:
        mode: train
        worker: {WORKERS}
        episodes: {EPISODES}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""


def prepare(workdir: Path, shape: RunShape, store_uri: str = "sqlite:///palaestra.db") -> None:
    (workdir / "run.yml").write_text(run_file(RUN_UID, shape))
    config = f"store_uri: {store_uri}\nanswer_timeout: {shape.answer_timeout}\n"
    if shape.store_timeout is not None:  # (none: the default, 60 s)
        config += f"store_timeout: {shape.store_timeout}\n"
    (workdir / "palaestra-runtime.yaml").write_text(config)


@contextmanager
def reading(db: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the SQLite store ``db``."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5.0)
    try:
        yield conn
    finally:
        conn.close()


def sqlite_count(db: Path, sql: str) -> int:
    """``select count(*) ...`` on the store; 0 while it or the table does not exist yet."""
    if not db.exists():
        return 0
    try:
        with reading(db) as conn:
            (n,) = conn.execute(sql).fetchone()
    except sqlite3.Error:
        return 0
    return int(n)


def wait_for(condition: Callable[[], bool], command: Command, timeout: float) -> bool:
    """Poll (bounded) until ``condition`` holds; False on timeout or the command's exit."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and command.proc.poll() is None:
        if condition():
            return True
        time.sleep(0.05)
    return False


def instances(db: Path) -> list[tuple[str, str, str]]:
    """(uid, status, reason) of every run instance in the store, oldest first."""
    if not db.exists():
        return []
    with reading(db) as conn:
        return [
            (str(uid), str(status), str(reason))
            for uid, status, reason in conn.execute(
                "select uid, status, reason from experiment_run_instances order by id"
            )
        ]


def age_heartbeat(db: Path) -> None:
    """Do what 30 s without a heartbeat would: the running instance becomes stale (resumable).
    The harness's only write into a store."""
    conn = sqlite3.connect(db, timeout=10.0)
    try:
        with conn:
            conn.execute(
                "update experiment_run_instances set heartbeat_at = "
                "datetime(heartbeat_at, '-60 seconds') where status = 'running'"
            )
    finally:
        conn.close()


def names(reason: str, title: str) -> bool:
    """Whether ``reason`` names the process ``title`` (``Muscle-alpha-1``, not ``...-10``)."""
    return re.search(rf"(?<![\w-]){re.escape(title)}(?![\w-])", reason) is not None


def tracebacks(text: str, where: str = "stderr") -> list[str]:
    """A problem naming the last lines of the first Python traceback in ``text``, if any."""
    at = text.find("Traceback (most recent call last)")
    if at < 0:
        return []
    lines = [line.strip() for line in text[at:].splitlines() if line.strip()]
    return [f"a Traceback on {where}: " + " | ".join(lines[-3:])[-400:]]


# --- the rows --------------------------------------------------------------------------------


def check_rows(
    db: Path, victims: set[str], complete: bool = False, instance: str | None = None
) -> Rows:
    """The rows of every phase in ``db`` (of ``instance`` only, if given; see the module's
    docstring).

    ``victims``: titles whose rows are not compared (their duplicates still count). With
    ``complete`` every worker's every episode must have all its steps (a run that finished).
    """
    report = Rows(verdict="ok")
    with reading(db) as conn:
        phases = conn.execute(
            "select p.id, p.workers, p.episodes from experiment_run_phases p "
            "join experiment_run_instances i on i.id = p.experiment_run_instance_id "
            "where ? is null or i.uid = ?",
            (instance, instance),
        ).fetchall()
        for phase, workers, episodes in phases:
            steps, ended = phase_rows(conn, phase, workers)
            report.problems += duplicates(steps)
            for w in range(workers):
                whole = {e: set(range(n)) for (worker, e), n in ended.items() if worker == w}
                if complete:
                    whole = {e: set(range(max_steps(conn, phase))) for e in range(episodes)}
                healthy = {
                    title: set(pairs)
                    for title, pairs in steps.items()
                    if title.endswith(f"-{w}") and title not in victims
                }
                compare(healthy, whole, {e for (worker, e) in ended if worker == w}, report)
    if report.problems:
        report.verdict = "FAIL"
    return report


def phase_rows(
    conn: sqlite3.Connection, phase: int, workers: int
) -> tuple[dict[str, list[tuple[int, int]]], dict[tuple[int, int], int]]:
    """The (episode, step) pairs stored for each environment and Muscle of ``phase`` (by the
    process's title; every one of them, also one that stored nothing), and the steps of each
    (worker, episode) with an ``episodes`` row.

    A Muscle's step ``s`` is the action that made the world's step ``s + 1``: world steps are
    taken one lower, so that the two tables' pairs are alike.
    """
    steps: dict[str, list[tuple[int, int]]] = {}
    for (uid,) in conn.execute(
        "select uid from environments where experiment_run_phase_id = ?", (phase,)
    ):
        for w in range(workers):
            steps[f"Environment-{uid}-{w}"] = []
    for (name,) in conn.execute(
        "select name from agents where experiment_run_phase_id = ?", (phase,)
    ):
        for w in range(workers):
            steps[f"Muscle-{name}-{w}"] = []
    for uid, w, episode, step in conn.execute(
        "select e.uid, s.worker, s.episode, s.step from world_states s "
        "join environments e on e.id = s.environment_id where e.experiment_run_phase_id = ?",
        (phase,),
    ):
        steps.setdefault(f"Environment-{uid}-{w}", []).append((episode, step - 1))
    for name, w, episode, step in conn.execute(
        "select a.name, s.worker, s.episode, s.step from muscle_actions s "
        "join agents a on a.id = s.agent_id where a.experiment_run_phase_id = ?",
        (phase,),
    ):
        steps.setdefault(f"Muscle-{name}-{w}", []).append((episode, step))
    ended: dict[tuple[int, int], int] = {}
    for w, episode, n in conn.execute(
        "select worker, episode, steps from episodes where experiment_run_phase_id = ?", (phase,)
    ):
        ended[(w, episode)] = max(n, ended.get((w, episode), 0))
    return steps, ended


def duplicates(steps: dict[str, list[tuple[int, int]]]) -> list[str]:
    """A problem for each source that stored a step twice."""
    problems = []
    for title, pairs in sorted(steps.items()):
        twice = [pair for pair, n in Counter(pairs).items() if n > 1]
        if twice:
            episode, step = twice[0]
            step += title.startswith("Environment-")
            problems.append(
                f"{title}: {len(twice)} steps stored twice (episode {episode}, step {step})"
            )
    return problems


def compare(
    healthy: dict[str, set[tuple[int, int]]],
    whole: dict[int, set[int]],
    ended: set[int],
    report: Rows,
) -> None:
    """Compare one worker's healthy sources: each must hold every step any other holds (but
    the last of an unfinished episode, in flight) and every step of the episodes in
    ``whole``; what one lacks is counted as lost."""
    union: dict[int, set[int]] = {}
    for pairs in healthy.values():
        for episode, step in pairs:
            union.setdefault(episode, set()).add(step)
    for title, pairs in sorted(healthy.items()):
        have: dict[int, set[int]] = {}
        for episode, step in pairs:
            have.setdefault(episode, set()).add(step)
        world = title.startswith("Environment-")
        for episode in sorted(set(union) | set(whole)):
            must = whole.get(episode)
            if must is not None:
                missing = (must | union.get(episode, set())) - have.get(episode, set())
                allowed: set[int] = set()
            else:
                missing = union[episode] - have.get(episode, set())
                allowed = {max(union[episode])}  # the step in flight at its end
            if world:
                report.lost_world_states += len(missing)
            else:
                report.lost_muscle_actions += len(missing)
            if missing - allowed:
                state = (
                    "unfinished" if must is None else "ended" if episode in ended else "planned"
                )
                report.problems.append(
                    f"{title} lacks {len(missing)} steps of {state} episode {episode} "
                    f"(first: step {min(missing) + world})"
                )


def max_steps(conn: sqlite3.Connection, phase: int) -> int:
    """The environment's ``max_iter`` in the phase (steps of every episode of the dummy)."""
    (params,) = conn.execute(
        "select params from environments where experiment_run_phase_id = ?", (phase,)
    ).fetchone()
    return int(json.loads(params)["max_iter"])


def check_view(workdir: Path, shape: RunShape) -> list[str]:
    """The run's view (``palaestra results``, its chain of instances): every step of every
    worker's episodes exactly once, for the environment and each agent."""
    problems = []
    tables = (("world_states", "environment", 1), ("muscle_actions", "agent", 0))
    for table, who, first in tables:
        out = workdir / f"view-{table}.csv"
        code, _, err = palaestra(workdir, "results", RUN_UID, "--table", table, "-o", str(out))
        if code != 0:
            problems.append(f"results --table {table} exited {code}: {err.strip()[-200:]}")
            continue
        with out.open(newline="") as f:
            seen = Counter(
                (row[who], int(row["worker"]), int(row["episode"]), int(row["step"]))
                for row in csv.DictReader(f)
            )
        twice = [key for key, n in seen.items() if n > 1]
        if twice:
            problems.append(f"the view holds {len(twice)} {table} rows twice, e.g. {twice[0]}")
        owners = {ENVIRONMENT} if who == "environment" else set(AGENTS)
        wanted = {
            (o, w, e, s)
            for o in owners
            for w in range(WORKERS)
            for e in range(EPISODES)
            for s in range(first, first + shape.max_iter)
        }
        missing = wanted - set(seen)
        if missing:
            problems.append(f"the view lacks {len(missing)} {table} rows, e.g. {min(missing)}")
    return problems


# --- a case ----------------------------------------------------------------------------------


@dataclass
class Harness:
    shape: RunShape
    rng: random.Random
    keep: bool
    postgres: str | None
    clean_seconds: float = 9.5  # a clean run's duration, from the clean case when it ran

    def victim(self, role: str) -> str:
        w = self.rng.randrange(WORKERS)
        agent = self.rng.choice(AGENTS)
        return {
            "StoreWriter": "StoreWriter",
            "SimulationController": f"SimulationController-{w}",
            "Environment": f"Environment-{ENVIRONMENT}-{w}",
            "Muscle": f"Muscle-{agent}-{w}",
            "Brain": f"Brain-{agent}",
            "Executor": "Executor",
        }[role]

    def run(self, case: Case) -> Outcome:
        outcome = Outcome(case.label)
        workdir = Path(tempfile.mkdtemp(prefix="palaestra-chaos-"))
        began = time.monotonic()
        try:
            if case == CLEAN:
                self.clean(workdir, outcome)
            elif case.kind in CHILD_KINDS and case.role in CHILD_ROLES:
                self.child(case, workdir, outcome)
            elif case == Case("SIGKILL", "Executor"):
                self.killed_executor(workdir, outcome)
            elif case == Case("SIGINT", "Executor"):
                self.interrupted(workdir, outcome)
            elif case.kind == "pg-terminate":
                self.pg_terminate(workdir, outcome)
            elif case.kind == "concurrent-sqlite":
                self.concurrent(workdir, outcome)
            else:
                raise ValueError(case)
        except Exception as exc:  # noqa: BLE001 - a harness failure fails the case, named
            outcome.problems.append(f"harness: {type(exc).__name__}: {exc}")
        finally:
            for session in STARTED:
                kill_session(session)
            STARTED.clear()
            outcome.wall_s = time.monotonic() - began
            if outcome.passed or not self.keep:
                shutil.rmtree(workdir, ignore_errors=True)
            else:
                outcome.workdir = str(workdir)
        return outcome

    # the parts of a case

    def start(self, workdir: Path, outcome: Outcome) -> Command | None:
        """Start the run; return once rows flow (None, the case failed, if they never do)."""
        prepare(workdir, self.shape)
        command = Command.start(workdir, "experiment-start", "run.yml")
        rows = "select count(*) from muscle_actions"
        if not wait_for(
            lambda: sqlite_count(workdir / "palaestra.db", rows) > 0, command, ROWS_WITHIN
        ):
            code = command.wait(0)
            outcome.exit_code = str(code)
            outcome.problems.append(
                f"no rows within {ROWS_WITHIN:.0f} s (exit {code}): "
                + command.stderr().strip()[-300:]
            )
            self.leftovers(command, outcome)
            return None
        return command

    def pause(self, command: Command) -> None:
        """Wait for a random moment within the fault window."""
        latest = command.began + FAULT_WINDOW * self.clean_seconds
        window = max(latest - time.monotonic(), MIN_WINDOW)
        time.sleep(self.rng.uniform(0.0, window))

    def fault(self, command: Command, title: str, kind: str, outcome: Outcome) -> float | None:
        """Send ``kind`` to the process titled ``title``; the moment, or None if not found."""
        outcome.victim = title
        pid = pid_of(command.session, title)
        if pid is None:
            code = command.wait(0) if command.proc.poll() is not None else None
            outcome.problems.append(
                f"no process {title} (the run {'ended' if code is not None else 'runs'})"
            )
            return None
        if title == "Executor" and pid != command.proc.pid:
            outcome.notes.append(f"the process titled Executor is {pid}, not the command")
        os.kill(pid, SIGNALS[kind])
        return time.monotonic()

    def finish(self, command: Command, since: float, outcome: Outcome) -> int | None:
        """Wait (bounded) for the command; note its exit code and seconds since ``since``."""
        code = command.wait(since + self.shape.answer_timeout + HUNG_AFTER - time.monotonic())
        outcome.seconds = time.monotonic() - since
        outcome.exit_code = str(code)
        if code is None:
            outcome.problems.append(
                f"hung: no exit {self.shape.answer_timeout + HUNG_AFTER:.0f} s after the fault"
            )
            outcome.seconds = None
        return code

    def leftovers(self, command: Command, outcome: Outcome) -> None:
        left = wait_until_gone(command.session, GONE_WITHIN)
        if left:
            outcome.leftovers += [cmd[:60] for _, cmd in left]
            outcome.problems.append(f"{len(left)} processes left {GONE_WITHIN:.0f} s after exit")
            kill_session(command.session)

    def instance(self, workdir: Path, outcome: Outcome) -> None:
        """Note the status and reason of the newest instance in the store."""
        found = instances(workdir / "palaestra.db")
        if not found:
            outcome.problems.append("no run instance in the store")
            return
        _, outcome.status, outcome.reason = found[-1]

    def expect(
        self, outcome: Outcome, code: int | None, exit_code: int, status: str, within: float
    ) -> None:
        if code is None:
            return
        if code != exit_code:
            outcome.problems.append(f"exit {code}, not {exit_code}")
        if outcome.status != status:
            outcome.problems.append(f"status {outcome.status}, not {status}")
        if outcome.seconds is not None and outcome.seconds > within:
            outcome.problems.append(
                f"exit {outcome.seconds:.1f} s after the fault (> {within:.0f})"
            )

    # the cases

    def clean(self, workdir: Path, outcome: Outcome) -> None:
        prepare(workdir, self.shape)
        command = Command.start(workdir, "experiment-start", "run.yml")
        code = command.wait(self.shape.answer_timeout + HUNG_AFTER + 4 * self.clean_seconds)
        seconds = time.monotonic() - command.began
        outcome.exit_code = str(code)
        self.leftovers(command, outcome)
        self.instance(workdir, outcome)
        self.expect(outcome, code, 0, "finished", float("inf"))
        if code is None:
            outcome.problems.append("hung")
        elif code == 0:
            self.clean_seconds = seconds
            outcome.notes.append(f"clean run {seconds:.1f} s: the fault window")
        outcome.rows = check_rows(workdir / "palaestra.db", set(), complete=True)
        outcome.problems.extend(tracebacks(command.stderr()))

    def child(self, case: Case, workdir: Path, outcome: Outcome) -> None:
        command = self.start(workdir, outcome)
        if command is None:
            return
        self.pause(command)
        title = self.victim(case.role)
        at = self.fault(command, title, case.kind, outcome)
        if at is None:
            command.wait(self.shape.answer_timeout + HUNG_AFTER)
            self.leftovers(command, outcome)
            return
        code = self.finish(command, at, outcome)
        self.leftovers(command, outcome)
        self.instance(workdir, outcome)
        db = workdir / "palaestra.db"
        if case == Case("SIGTERM", "StoreWriter"):  # ignored by design: the run goes on
            self.expect(outcome, code, 0, "finished", float("inf"))
            outcome.rows = check_rows(db, set(), complete=True)
        else:
            slow = case.kind == "SIGSTOP"
            within = EXIT_WITHIN + (self.shape.answer_timeout if slow else 0.0)
            self.expect(outcome, code, 1, "error", within)
            if code is not None and not names(outcome.reason, title):
                outcome.problems.append(f"the reason does not name {title}")
            if title == "StoreWriter":
                outcome.rows = Rows(verdict="skipped: the victim is the StoreWriter")
            else:
                outcome.rows = check_rows(db, {title})
        outcome.problems.extend(tracebacks(command.stderr()))

    def killed_executor(self, workdir: Path, outcome: Outcome) -> None:
        command = self.start(workdir, outcome)
        if command is None:
            return
        self.pause(command)
        at = self.fault(command, "Executor", "SIGKILL", outcome)
        if at is None:
            command.wait(self.shape.answer_timeout + HUNG_AFTER)
            return
        killed = command.wait(EXIT_WITHIN)
        left = wait_until_gone(command.session, GONE_WITHIN)
        outcome.seconds = time.monotonic() - at  # until none of the session is left
        if left:
            outcome.leftovers += [cmd[:60] for _, cmd in left]
            outcome.problems.append(f"{len(left)} processes left {GONE_WITHIN:.0f} s after kill")
            kill_session(command.session)
        age_heartbeat(workdir / "palaestra.db")
        self.resumed(workdir, outcome, killed)

    def resumed(self, workdir: Path, outcome: Outcome, killed: int | None) -> None:
        """``experiment-resume`` of the killed run: exit 0, finished, every step once."""
        db = workdir / "palaestra.db"
        resume = Command.start(workdir, "experiment-resume", RUN_UID, name="resume")
        code = resume.wait(self.shape.answer_timeout + HUNG_AFTER + 2 * self.clean_seconds)
        outcome.exit_code = f"{killed}/{code}"
        self.instance(workdir, outcome)
        if code is None:
            outcome.problems.append("the resume hung")
        elif code != 0:
            outcome.problems.append(f"the resume exited {code}: {resume.stderr().strip()[-200:]}")
        if outcome.status != "finished":
            outcome.problems.append(f"status {outcome.status}, not finished")
        self.leftovers(resume, outcome)
        outcome.problems.extend(tracebacks(resume.stderr(), "the resume's stderr"))
        # the killed instance's processes all died with it: only duplicates count there
        every = {f"Environment-{ENVIRONMENT}-{w}" for w in range(WORKERS)} | {
            f"Muscle-{a}-{w}" for a in AGENTS for w in range(WORKERS)
        }
        found = instances(db)
        if found:
            outcome.notes.append(f"the killed instance: {found[0][1]}, {found[0][2][:80]!r}")
        if len(found) != 2:
            outcome.problems.append(f"{len(found)} instances, not 2")
            return
        killed_rows = check_rows(db, every, instance=found[0][0])
        outcome.rows = check_rows(db, set(), instance=found[1][0])
        outcome.rows.problems[:0] = killed_rows.problems
        if code == 0:
            outcome.rows.problems += check_view(workdir, self.shape)
        if outcome.rows.problems:
            outcome.rows.verdict = "FAIL"

    def interrupted(self, workdir: Path, outcome: Outcome) -> None:
        command = self.start(workdir, outcome)
        if command is None:
            return
        self.pause(command)
        at = self.fault(command, "Executor", "SIGINT", outcome)
        if at is None:
            command.wait(self.shape.answer_timeout + HUNG_AFTER)
            return
        code = self.finish(command, at, outcome)
        self.leftovers(command, outcome)
        self.instance(workdir, outcome)
        self.expect(outcome, code, 130, "cancelled", EXIT_WITHIN + self.shape.answer_timeout)
        console = command.stdout() + command.stderr()
        outcome.problems.extend(tracebacks(console))
        counts = episode_counts(workdir, console)
        outcome.notes.append("episodes: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        if len(set(counts.values())) != 1:
            outcome.problems.append(
                "episode counts differ: " + ", ".join(f"{k} {v}" for k, v in counts.items())
            )
        outcome.rows = check_rows(workdir / "palaestra.db", set())

    def pg_terminate(self, workdir: Path, outcome: Outcome) -> None:
        import psycopg  # only here: the other cases need no PostgreSQL

        assert self.postgres is not None
        admin = self.postgres.replace("postgresql+psycopg://", "postgresql://", 1)
        database = f"palaestra_chaos_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
            conn.execute(f'create database "{database}"')
        store = self.postgres.rsplit("/", 1)[0] + f"/{database}"
        try:
            prepare(workdir, self.shape, store_uri=store)
            command = Command.start(workdir, "experiment-start", "run.yml")

            def rows_flow() -> bool:
                try:
                    with psycopg.connect(admin.rsplit("/", 1)[0] + f"/{database}") as c:
                        row = c.execute("select count(*) from muscle_actions").fetchone()
                except psycopg.Error:
                    return False
                return bool(row and row[0] > 0)

            if not wait_for(rows_flow, command, ROWS_WITHIN):
                code = command.wait(0)
                outcome.exit_code = str(code)
                outcome.problems.append(f"no rows within {ROWS_WITHIN:.0f} s (exit {code})")
                self.leftovers(command, outcome)
                return
            self.pause(command)
            outcome.victim = f"{database}'s connections"
            with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
                ended = conn.execute(
                    "select count(pg_terminate_backend(pid)) from pg_stat_activity "
                    "where datname = %s and pid <> pg_backend_pid()",
                    (database,),
                ).fetchone()
            at = time.monotonic()
            outcome.notes.append(f"{ended[0] if ended else 0} connections terminated")
            code = self.finish(command, at, outcome)
            self.leftovers(command, outcome)
            err = command.stderr()
            outcome.reason = " ".join(err.split())[:200]
            try:
                with psycopg.connect(admin.rsplit("/", 1)[0] + f"/{database}") as c:
                    row = c.execute(
                        "select status, reason from experiment_run_instances order by id desc"
                    ).fetchone()
                if row:
                    outcome.status, outcome.reason = str(row[0]), str(row[1])
            except psycopg.Error as exc:
                outcome.notes.append(f"status unreadable: {exc}")
            if code == 0:  # the connection was cut between two writes, and found so by a
                # heartbeat (retried, not fatal): the writer reconnected; then every row must
                # be there, or the run lost them quietly
                outcome.rows = self.pg_complete(admin.rsplit("/", 1)[0] + f"/{database}")
                if outcome.status != "finished":
                    outcome.problems.append(f"exit 0, status {outcome.status}")
                outcome.problems += outcome.rows.problems
                outcome.notes.append("the writer reconnected: every row is stored")
            else:
                if code is not None and code != 3:
                    outcome.problems.append(f"exit {code}, not 3")
                within = EXIT_WITHIN + self.shape.answer_timeout
                if outcome.seconds is not None and outcome.seconds > within:
                    outcome.problems.append(f"exit {outcome.seconds:.1f} s after the fault")
                if database not in err:
                    outcome.problems.append("stderr does not name the store")
                if not re.search(r"connection", err, re.IGNORECASE):
                    outcome.problems.append("stderr does not name the lost connection")
                outcome.rows = Rows(verdict="skipped: the store's connections were cut")
            outcome.problems.extend(tracebacks(err))
        finally:
            with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
                conn.execute(f'drop database if exists "{database}" with (force)')

    def pg_complete(self, conninfo: str) -> Rows:
        """Whether a PostgreSQL store holds every step of every worker's episodes, in both
        tables (a run that finished)."""
        import psycopg

        report = Rows(verdict="ok")
        whole = EPISODES * self.shape.max_iter
        with psycopg.connect(conninfo) as conn:
            world = conn.execute("select worker, count(*) from world_states group by 1").fetchall()
            acted = conn.execute(
                "select agent_id, worker, count(*) from muscle_actions group by 1, 2"
            ).fetchall()
        counts = [n for *_, n in world] + [n for *_, n in acted]
        if len(world) != WORKERS or len(acted) != WORKERS * len(AGENTS):
            report.problems.append(f"rows of {len(world)} worlds, {len(acted)} Muscles")
        report.problems += [f"{n} of {whole} steps" for n in counts if n != whole]
        report.lost_world_states = sum(whole - n for *_, n in world)
        report.lost_muscle_actions = sum(whole - n for *_, n in acted)
        if report.problems:
            report.verdict = "FAIL"
        return report

    def concurrent(self, workdir: Path, outcome: Outcome) -> None:
        shape = RunShape(
            max_iter=500,
            step_delay=0.0,
            answer_timeout=max(self.shape.answer_timeout, 30.0),
            store_timeout=None,
            driver=self.shape.driver,
        )
        prepare(workdir, shape)
        commands = []
        for i in range(CONCURRENT_RUNS):
            (workdir / f"run-{i}.yml").write_text(run_file(f"{RUN_UID}-{i}", shape))
        outcome.victim = f"{CONCURRENT_RUNS} runs, one file"
        began = time.monotonic()
        for i in range(CONCURRENT_RUNS):
            commands.append(
                Command.start(workdir, "experiment-start", "-q", f"run-{i}.yml", name=f"run-{i}")
            )
        deadline = began + shape.answer_timeout + HUNG_AFTER + CONCURRENT_RUNS * self.clean_seconds
        codes = [command.wait(deadline - time.monotonic()) for command in commands]
        outcome.seconds = time.monotonic() - began
        outcome.exit_code = ",".join(f"{n}x{code}" for code, n in Counter(codes).items())
        for command in commands:
            self.leftovers(command, outcome)
        for i, (command, code) in enumerate(zip(commands, codes, strict=True)):
            if code != 0:
                outcome.problems.append(
                    f"run {i} exited {code}: " + " ".join(command.stderr().split())[-160:]
                )
            else:
                outcome.problems.extend(tracebacks(command.stderr(), f"run {i}'s stderr"))
        found = instances(workdir / "palaestra.db")
        statuses = Counter(status for _, status, _ in found)
        outcome.status = ",".join(f"{n} {s}" for s, n in sorted(statuses.items()))
        if statuses.get("finished", 0) != CONCURRENT_RUNS:
            outcome.problems.append(f"instances: {outcome.status}")
        outcome.reason = next((reason for _, _, reason in found if reason), "")
        outcome.rows = check_rows(workdir / "palaestra.db", set(), complete=True)


def episode_counts(workdir: Path, console: str) -> dict[str, int]:
    """Episodes done of the run as the console's summary (each agent), ``experiment-list``
    and ``experiment-show`` (the phases' and each agent's rewards) tell them."""
    counts: dict[str, int] = {}
    for agent in AGENTS:
        match = re.search(rf"^\s*\d+\s+\S+\s+{agent}\s+(\d+)/\d+\s", console, re.MULTILINE)
        if match:
            counts[f"console {agent}"] = int(match.group(1))
    if not counts:
        counts["console"] = -1  # no summary: never agrees
    code, out, _ = palaestra(workdir, "experiment-list", "--format", "json")
    listed = json.loads(out) if code == 0 else []
    counts["list"] = sum(
        int(row.get("episodes_done", 0)) for row in listed if row["run_uid"] == RUN_UID
    )
    code, out, _ = palaestra(workdir, "experiment-show", RUN_UID, "--format", "json")
    shown: dict[str, Any] = json.loads(out) if code == 0 else {}
    counts["show phases"] = sum(int(p.get("episodes_done", 0)) for p in shown.get("phases", []))
    for row in shown.get("rewards", []):
        counts[f"show rewards {row['agent']}"] = int(row["episodes"])
    return counts


# --- output ----------------------------------------------------------------------------------

COLUMNS = (
    ("case", 27),
    ("victim", 22),
    ("exit", 7),
    ("secs", 6),
    ("status", 9),
    ("reason", 60),
    ("left", 4),
    ("rows", 22),
)


def table_line(outcome: Outcome) -> str:
    seconds = "-" if outcome.seconds is None else f"{outcome.seconds:.1f}"
    reason = " ".join(outcome.reason.split())[:60]
    cells = (
        outcome.case,
        outcome.victim[:22],
        outcome.exit_code,
        seconds,
        outcome.status[:9],
        reason,
        str(len(outcome.leftovers)),
        outcome.rows.cell(),
    )
    row = " ".join(f"{cell:{width}}" for cell, (_, width) in zip(cells, COLUMNS, strict=True))
    return row + " " + ("PASS" if outcome.passed else f"FAIL: {outcome.why()}")


def header() -> str:
    return " ".join(f"{name:{width}}" for name, width in COLUMNS) + " verdict"


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--faults", type=int, help="random cases (default 60; with --only: each once)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="each case once (CI)")
    parser.add_argument("--answer-timeout", type=float, default=3.0)
    parser.add_argument("--keep", action="store_true", help="keep failing cases' directories")
    parser.add_argument("--only", action="append", default=[], metavar="KIND[:ROLE]")
    parser.add_argument("--max-iter", type=int, default=1000, help="steps per episode")
    parser.add_argument("--step-delay", type=float, default=0.001, help="seconds per step")
    parser.add_argument(
        "--driver",
        choices=("auto", "controller", "environment"),
        default="auto",
        help="who plays the rounds (the simulation param; auto: the environment)",
    )
    parser.add_argument(
        "--json", type=Path, default=ROOT / "benchmarks" / "results" / "chaos.json"
    )
    return parser.parse_args()


def choose(args: argparse.Namespace, postgres: str | None, rng: random.Random) -> list[Case]:
    """The cases to run: ``--only``'s (each once, or ``--faults`` drawn from them), the quick
    list, or ``--faults`` drawn from every case; the clean run first (its duration sets the
    fault window)."""
    every = all_cases(postgres is not None)
    if args.only:
        cases = select(all_cases(True), [s for specs in args.only for s in specs.split(",")])
        if not postgres and any(case.kind == "pg-terminate" for case in cases):
            raise SystemExit(f"pg-terminate needs {PG_ENV} (a PostgreSQL URL)")
        chosen = draw(cases, args.faults, rng) if args.faults is not None else cases
        return [CLEAN, *chosen]  # (its duration is the fault window's)
    if args.quick:  # concurrent-sqlite left out: about a minute on 2 cores
        return [CLEAN, *all_cases(postgres is not None, concurrent=False)]
    return [CLEAN, *draw(every, 60 if args.faults is None else args.faults, rng)]


def main() -> None:
    args = arguments()
    postgres = os.environ.get(PG_ENV) or None
    shape = RunShape(args.max_iter, args.step_delay, args.answer_timeout, None, args.driver)
    harness = Harness(shape, random.Random(args.seed), args.keep, postgres)
    cases = choose(args, postgres, harness.rng)

    began = time.monotonic()
    print(header(), flush=True)
    outcomes: list[Outcome] = []
    try:
        for case in cases:
            outcomes.append(harness.run(case))
            print(table_line(outcomes[-1]), flush=True)
    except KeyboardInterrupt:
        for session in STARTED:
            kill_session(session)
        raise SystemExit(130) from None
    wall = time.monotonic() - began
    failed = [o for o in outcomes if not o.passed]
    print(f"\n{len(outcomes) - len(failed)} of {len(outcomes)} cases passed in {wall:.0f} s")
    for outcome in outcomes:
        for note in outcome.notes:
            print(f"  {outcome.case}: {note}")
        if outcome.workdir:
            print(f"  {outcome.case}: kept {outcome.workdir}")

    result = {
        "benchmark": "chaos: fault injection into palaestra runs",
        "seed": args.seed,
        "quick": args.quick,
        "answer_timeout": args.answer_timeout,
        "run": {
            "agents": list(AGENTS),
            "workers": WORKERS,
            "episodes": EPISODES,
            "max_iter": args.max_iter,
            "step_delay": args.step_delay,
            "clean_run_s": harness.clean_seconds,
        },
        "postgres": bool(postgres),
        "passed": len(outcomes) - len(failed),
        "failed": len(failed),
        "wall_s": wall,
        "cases": [{**asdict(o), "passed": o.passed, "why": o.why()} for o in outcomes],
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cpus, "
        f"Python {platform.python_version()}",
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
