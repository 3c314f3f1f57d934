"""Many cores: how W rollout workers scale against one, with the store on.

    python benchmarks/many_cores.py [--workers 1,2,4,8,16] [--repeat 3]
        [--store sqlite|postgres|both] [--agents 1,4] [--episode-steps N] [--only a|b]

For each W (default: 1, 2, 4, ... up to ``os.cpu_count()``), each a median of ``--repeat`` runs
of ``python -m palaestra experiment-start`` (interleaved over the configurations, so noise on a
shared machine spreads evenly), DummyBrain / DummyMuscle agents on ``TimedEnvironment``
(``benchmarks/plugins.py``: a DummyEnvironment that notes the time of its first and last step):

(a) **1 ms environment step**: 1 agent, every step busy-waits 1 ms (DummyEnvironment's
    ``step_delay`` spins on ``time.perf_counter``). A busy-wait, not a sleep: it models a
    CPU-bound simulator, which takes a core for the millisecond, so W workers can only reach W x
    one worker when the framework's own processes leave the cores to the environments; a sleep
    would free the core and hide exactly that contention. Reports environment steps/s (all
    workers, first step to last) and the ratio W workers / 1 worker (target on 16 cores: >= 14).
(b) **aggregate agent actions/s**: DummyEnvironment without delay, ``--agents`` agents (each
    acts every step: Vanilla), so actions/s = steps/s x agents (target on 16 cores at 16 workers:
    >= 100,000). ``--games 1,8`` plays each worker's steps in 1 and in 8 games
    (``envs_per_worker``); steps/s counts the steps of every game.

Each run's store is checked: one ``world_states`` row per environment step and one
``muscle_actions`` row per agent step, else the configuration is reported FAILED and the script
exits 1. The store is SQLite (a file in the run's temp dir) and/or PostgreSQL (``--postgres``,
a fresh database per run, dropped after). ``--episode-steps`` cuts each worker's steps into
episodes of that many steps (default: one episode), so the per-episode paths (simulation
controller, executor, store writer) are part of what is timed.

Each run's processes are sampled (``/proc``, every 0.1 s): the CPU seconds of each role
(executor, StoreWriter, Environment, Muscle, Brain, SimulationController) and of its busiest
process, so a process that holds one core for the whole run (a bottleneck) shows. ``--profile
DIR`` runs the largest configuration of each kind once more, untimed, with py-spy recording
every process of the run (``py-spy record --nonblocking``, raw stacks in DIR, one file per
process) and prints the functions each role spends most time in.

Prints the machine's core count and a table; writes JSON to benchmarks/results/many_cores.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from run import (  # noqa: E402
    RunFailed,
    machine,
    process_role,
    run_command,
    session_members,
    steady_rate,
)

PROFILE_RATE = 50  # py-spy samples per second and process, --profile

POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


@dataclass(frozen=True)
class Spec:
    """One configuration: W workers, K agents, a per-step delay, a store."""

    workers: int
    agents: int
    steps: int  # environment steps per worker (all its episodes)
    episode_steps: int
    delay: float
    store: str  # "sqlite" | "postgres"
    games: int = 1  # phase_config.envs_per_worker: games each worker plays in rounds

    @property
    def episodes(self) -> int:
        return max(1, self.steps // self.episode_steps)

    @property
    def world_rows(self) -> int:
        return self.episodes * self.episode_steps * self.workers * self.games

    @property
    def label(self) -> str:
        return f"{what_of(self)}, {self.workers:2d} w, {self.store}"


def what_of(spec: Spec) -> str:
    what = "1 ms step, 1 agent" if spec.delay else f"no delay, {spec.agents} agent(s)"
    return what if spec.games == 1 else f"{what}, {spec.games} games"


def run_file_text(spec: Spec, timing: Path) -> str:
    """A one-phase run file: ``spec.agents`` dummy agents on one TimedEnvironment per worker."""
    agents = []
    for i in range(spec.agents):
        block = range(5 * (i % 2), 5 * (i % 2) + 5)  # as dummy_run.yml: two blocks of five
        ids = ", ".join(f"myenv.{j}" for j in block)
        agents.append(
            f"        - name: agent{i}\n"
            "          brain: {name: palaestra.agent.dummy_brain:DummyBrain, params: {}}\n"
            "          muscle: {name: palaestra.agent.dummy_muscle:DummyMuscle, params: {}}\n"
            "          objective: {name: palaestra.agent.dummy_objective:DummyObjective,"
            " params: {params: 1}}\n"
            f"          sensors: [{ids}]\n"
            f"          actuators: [{ids}]\n"
        )
    params = (
        f"{{discrete: true, max_iter: {spec.episode_steps}, step_delay: {spec.delay}, "
        f"timing_file: '{timing}', mark_every: {max(1, spec.steps // 100)}}}"
    )
    return (
        "uid: many-cores\n"
        "experiment_uid: many-cores\n"
        "seed: 42\n"
        'version: "0.1"\n'
        "schedule:\n"
        "  - phase_0:\n"
        "      environments:\n"
        "        - environment:\n"
        "            name: plugins:TimedEnvironment\n"
        "            uid: myenv\n"
        f"            params: {params}\n"
        "      agents:\n" + "".join(agents) + "      simulation:\n"
        "        name: palaestra.simulation:Vanilla\n"
        "        conditions:\n"
        "          - name: palaestra.simulation:VanillaSimControllerTerminationCondition\n"
        "            params: {}\n"
        "      phase_config:\n"
        "        mode: train\n"
        f"        worker: {spec.workers}\n"
        f"        envs_per_worker: {spec.games}\n"
        f"        episodes: {spec.episodes}\n"
        "run_config:\n"
        "  condition:\n"
        "    name: palaestra.experiment:VanillaRunGovernorTerminationCondition\n"
        "    params: {}\n"
    )


# --- stores --------------------------------------------------------------------------------


@contextlib.contextmanager
def store_uri(spec: Spec, tmp: Path, postgres: str) -> Iterator[str]:
    """The run's store: a SQLite file in ``tmp``, or a fresh PostgreSQL database (dropped)."""
    if spec.store == "sqlite":
        yield f"sqlite:///{tmp / 'palaestra.db'}"
        return
    import psycopg
    from sqlalchemy.engine import make_url

    url = make_url(postgres)
    name = f"palaestra_many_cores_{os.getpid()}_{time.monotonic_ns()}"
    admin = url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield url.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def count_rows(uri: str) -> tuple[int, int]:
    """Rows of ``world_states`` and ``muscle_actions`` in the store at ``uri``."""
    if uri.startswith("sqlite:///"):
        with contextlib.closing(sqlite3.connect(uri.removeprefix("sqlite:///"))) as conn:
            world = conn.execute("select count(*) from world_states").fetchone()[0]
            actions = conn.execute("select count(*) from muscle_actions").fetchone()[0]
        return int(world), int(actions)
    import psycopg
    from sqlalchemy.engine import make_url

    plain = make_url(uri).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain) as conn:
        world = conn.execute("select count(*) from world_states").fetchone()
        actions = conn.execute("select count(*) from muscle_actions").fetchone()
    return int(world[0]) if world else 0, int(actions[0]) if actions else 0


def check_store(uri: str, spec: Spec) -> None:
    world, actions = count_rows(uri)
    if world != spec.world_rows or actions != spec.world_rows * spec.agents:
        raise RunFailed(
            f"store check: {world} world_states rows for {spec.world_rows} steps, "
            f"{actions} muscle_actions rows for {spec.world_rows * spec.agents} agent steps"
        )


# --- one run -------------------------------------------------------------------------------


@dataclass
class Timed:
    """One run: environment steps/s (first step to last, all workers), the command's wall
    time, and per role the CPU seconds of all its processes and of its busiest one."""

    rate: float
    wall: float
    cpu: dict[str, tuple[float, float]]
    together: float | None = None  # steps/s while every worker was stepping (see overlap_rate)


def timed_run(spec: Spec, postgres: str, notes: list[str], profile: Path | None = None) -> Timed:
    """One run of ``spec``; with ``profile``, py-spy records each of its processes there."""
    with tempfile.TemporaryDirectory(prefix="palaestra-many-") as name:
        tmp = Path(name)
        run_file = tmp / "run.yml"
        run_file.write_text(run_file_text(spec, tmp / "timing"))
        with store_uri(spec, tmp, postgres) as uri:
            runtime = tmp / "runtime.yaml"
            runtime.write_text(f"store_uri: {uri}\ndata_path: {tmp / '_outputs'}\n")
            args = [sys.executable, "-m", "palaestra", "-c", str(runtime)]
            timeout = 120 + spec.world_rows * max(0.01, 4 * spec.delay)
            spy = Profiler(profile) if profile is not None else None
            cmd = run_command(
                [*args, "experiment-start", str(run_file)],
                tmp,
                timeout,
                notes,
                every=0.1,
                on_start=spy.start if spy is not None else None,
            )
            if spy is not None:
                spy.stop()
            if cmd.code != 0:
                raise RunFailed(f"exit {cmd.code}: {cmd.stderr.strip()[-2000:]}")
            check_store(uri, spec)
        timings = [json.loads(p.read_text()) for p in sorted(tmp.glob("timing.*.json"))]
        steps = sum(t["steps"] for t in timings)
        if steps != spec.world_rows:
            raise RunFailed(f"the environments stepped {steps} times, expected {spec.world_rows}")
        return Timed(
            steady_rate(timings), cmd.ended - cmd.began, cmd.cpu_by_role, overlap_rate(timings)
        )


def overlap_rate(timings: list[dict[str, Any]]) -> float | None:
    """Steps/s of all workers together over the window in which every one of them was
    stepping (the last worker's first step to the first worker's last), each worker's steps
    at the window's ends interpolated between its marks; None without such a window.

    The span rate (:func:`steady_rate`) also counts the workers' staggered starts and ends,
    a cost of start-up that grows with the number of workers; this is the rate the machine
    sustains once they all run."""
    begin = max(t["first"] for t in timings)
    end = min(t["last"] for t in timings)
    if end <= begin:
        return None
    steps = sum(_steps_at(t["marks"], end) - _steps_at(t["marks"], begin) for t in timings)
    return steps / (end - begin)


def _steps_at(marks: list[list[float]], when: float) -> float:
    """A worker's step count at time ``when``, linear between its ``(step, time)`` marks."""
    for (s0, t0), (s1, t1) in zip(marks, marks[1:], strict=False):
        if t0 <= when <= t1:
            return s0 + (s1 - s0) * ((when - t0) / (t1 - t0) if t1 > t0 else 1.0)
    return float(marks[-1][0] if when >= marks[-1][1] else marks[0][0])


class Profiler(threading.Thread):
    """Starts ``py-spy record`` on every process of a session as it appears (it records until
    the process exits), raw stacks to ``folder/<role>-<pid>.txt``."""

    def __init__(self, folder: Path) -> None:
        super().__init__(daemon=True)
        self.folder = folder
        self.sid = 0
        self.spies: dict[int, subprocess.Popen[bytes]] = {}
        self.done = threading.Event()

    def start(self, sid: int) -> None:  # type: ignore[override]
        self.sid = sid
        self.folder.mkdir(parents=True, exist_ok=True)
        super().start()

    def run(self) -> None:
        others: set[int] = set()
        while not self.done.wait(0.05):
            for pid in session_members(self.sid, others):
                if pid in self.spies:
                    continue
                role = process_role(pid)
                if role == "executor" and pid != self.sid:
                    continue  # a child not titled yet: take it once it is
                out = self.folder / f"{role}-{pid}.txt"
                self.spies[pid] = subprocess.Popen(
                    [
                        "py-spy",
                        "record",
                        "--nonblocking",
                        "--format",
                        "raw",
                        "--rate",
                        str(PROFILE_RATE),
                        "--pid",
                        str(pid),
                        "--output",
                        str(out),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )

    def stop(self) -> None:
        self.done.set()
        self.join()
        for spy in self.spies.values():
            try:
                spy.wait(timeout=30)
            except subprocess.TimeoutExpired:
                spy.kill()


def profile_summary(folder: Path, top: int = 12) -> list[str]:
    """Per role, the functions most often on top of the stack (self time), as shares of that
    role's samples, from py-spy's raw stacks (``frame;frame;... count`` lines)."""
    by_role: dict[str, dict[str, int]] = {}
    for path in sorted(folder.glob("*.txt")):
        role = path.name.split("-")[0]
        counts = by_role.setdefault(role, {})
        for line in path.read_text(errors="replace").splitlines():
            stack, _, count = line.rpartition(" ")
            if not stack or not count.isdigit():
                continue
            leaf = stack.rsplit(";", 1)[-1]
            counts[leaf] = counts.get(leaf, 0) + int(count)
    out = []
    for role, counts in sorted(by_role.items()):
        total = sum(counts.values()) or 1
        out.append(f"{role}: {total} samples")
        for leaf, count in sorted(counts.items(), key=lambda kv: -kv[1])[:top]:
            out.append(f"  {100 * count / total:5.1f}%  {leaf}")
    return out


def measure(
    specs: list[Spec], repeat: int, postgres: str
) -> tuple[dict[Spec, list[Timed]], dict[Spec, str], list[str]]:
    """``repeat`` rounds over ``specs``, interleaved; runs, failures and notes."""
    rates: dict[Spec, list[Timed]] = {spec: [] for spec in specs}
    failures: dict[Spec, str] = {}
    notes: list[str] = []
    for round_ in range(repeat):
        for spec in specs:
            if spec in failures:
                continue
            print(f"round {round_ + 1}/{repeat}: {spec.label} ...", file=sys.stderr, flush=True)
            try:
                rates[spec].append(timed_run(spec, postgres, notes))
            except RunFailed as exc:
                failures[spec] = str(exc)
                print(f"  FAILED: {exc}", file=sys.stderr, flush=True)
            else:
                done = rates[spec][-1]
                print(
                    f"  {done.rate:,.0f} steps/s ({done.rate * spec.agents:,.0f} actions/s), "
                    f"all stepping {done.together or 0:,.0f} steps/s, wall {done.wall:.1f} s",
                    file=sys.stderr,
                    flush=True,
                )
    return rates, failures, notes


# --- report --------------------------------------------------------------------------------


@dataclass
class Line:
    what: str
    workers: int
    store: str
    steps_per_s: float | None
    actions_per_s: float | None
    ratio: float | None  # against 1 worker, same kind and store
    runs: list[float]
    cpu: dict[str, tuple[float, float]]  # role: (CPU s of all, of the busiest), median run
    wall: float | None  # the median run's command wall time
    together: float | None  # median steps/s while every worker was stepping
    together_ratio: float | None  # against 1 worker's


def lines(specs: list[Spec], rates: dict[Spec, list[Timed]]) -> list[Line]:
    out = []
    for spec in specs:
        runs = sorted(rates[spec], key=lambda t: t.rate)
        value = statistics.median(t.rate for t in runs) if runs else None
        middle = runs[len(runs) // 2] if runs else None
        one = next((s for s in specs if s.workers == 1 and _same_kind(s, spec) and rates[s]), None)
        ratio = None
        if value is not None and one is not None:
            ratio = value / statistics.median(t.rate for t in rates[one])
        what = what_of(spec)
        actions = value * spec.agents if value is not None else None
        together = _median([t.together for t in runs])
        base = _median([t.together for t in rates[one]]) if one is not None else None
        out.append(
            Line(
                what,
                spec.workers,
                spec.store,
                value,
                actions,
                ratio,
                [t.rate for t in rates[spec]],
                middle.cpu if middle else {},
                middle.wall if middle else None,
                together,
                together / base if together is not None and base else None,
            )
        )
    return out


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def _same_kind(a: Spec, b: Spec) -> bool:
    return (a.agents, a.delay, a.store, a.steps, a.episode_steps, a.games) == (
        b.agents,
        b.delay,
        b.store,
        b.steps,
        b.episode_steps,
        b.games,
    )


def _num(value: float | None, digits: int = 0) -> str:
    return "FAILED" if value is None else f"{value:,.{digits}f}"


def print_table(found: list[Line], repeat: int, seconds: float) -> None:
    print(f"palaestra many cores (median of {repeat}) on {machine()}; cores: {os.cpu_count()}")
    print("span: first step of any worker to last of any; all stepping: while every worker was")
    print(
        f"{'what':36} {'W':>3} {'store':8} {'steps/s':>10} {'actions/s':>10} {'x 1 worker':>10}"
        f" {'all stepping':>13} {'x 1 worker':>10}"
    )
    for line in found:
        ratio = "" if line.ratio is None else f"{line.ratio:10.2f}"
        together = "" if line.together_ratio is None else f"{line.together_ratio:10.2f}"
        print(
            f"{line.what:36} {line.workers:3d} {line.store:8} {_num(line.steps_per_s):>10} "
            f"{_num(line.actions_per_s):>10} {ratio:>10} {_num(line.together):>13} "
            f"{together:>10}"
        )
    print("CPU by role, median run (all its processes / its busiest one, as cores over the wall):")
    for line in found:
        if not line.cpu or not line.wall:
            continue
        shares = ", ".join(
            f"{role} {total / line.wall:.2f}/{busiest / line.wall:.2f}"
            for role, (total, busiest) in sorted(line.cpu.items(), key=lambda kv: -kv[1][0])
        )
        print(f"  {line.what}, {line.workers} w, {line.store}: {shares}")
    print(f"took {seconds:.0f} s")


def profile(specs: list[Spec], folder: Path, postgres: str, notes: list[str]) -> None:
    """The largest W of each kind and store once more, every process under py-spy."""
    largest = max(spec.workers for spec in specs)
    for spec in specs:
        if spec.workers != largest:
            continue
        kind = "delay" if spec.delay else f"agents{spec.agents}x{spec.games}"
        where = folder / f"{kind}-{spec.store}"
        try:
            timed = timed_run(spec, postgres, notes, profile=where)
        except RunFailed as exc:
            print(f"profile {spec.label}: FAILED {exc}")
            continue
        print(
            f"\nprofile of {spec.label} (py-spy at {PROFILE_RATE} Hz on every process: "
            f"{timed.rate:,.0f} steps/s under it); the functions on top of the stack:"
        )
        print("\n".join(profile_summary(where)))


def default_workers() -> list[int]:
    cores = os.cpu_count() or 1
    workers = [w for w in (1, 2, 4, 8, 16) if w <= cores]
    return workers if cores in workers or cores > 16 else [*workers, cores]


def parse_list(text: str) -> list[int]:
    values = sorted({int(v) for v in text.split(",") if v.strip()})
    if not values or values[0] < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected positive integers, e.g. 1,2,4")
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=parse_list, help="e.g. 1,2,4,8,16 (default: to cores)")
    parser.add_argument("--agents", type=parse_list, default=[1, 4], help="for (b); default 1,4")
    parser.add_argument(
        "--games", type=parse_list, default=[1], help="for (b): envs_per_worker; default 1"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    parser.add_argument("--delay-steps", type=int, default=2_000, help="(a) steps per worker")
    parser.add_argument("--steps", type=int, default=10_000, help="(b) steps per worker")
    parser.add_argument("--episode-steps", type=int, help="steps per episode (default: all)")
    parser.add_argument("--store", choices=("sqlite", "postgres", "both"), default="sqlite")
    parser.add_argument("--postgres", default=POSTGRES, help="server for --store postgres")
    parser.add_argument("--only", choices=("a", "b"), help="only (a) 1 ms step or (b) actions/s")
    parser.add_argument(
        "--profile", type=Path, help="py-spy every process of the largest runs, stacks here"
    )
    args = parser.parse_args()
    workers = args.workers or default_workers()
    stores = ["sqlite", "postgres"] if args.store == "both" else [args.store]
    specs = []
    for store in stores:
        for w in workers:
            if args.only != "b":
                length = args.episode_steps or args.delay_steps
                specs.append(Spec(w, 1, args.delay_steps, length, 0.001, store))
            if args.only != "a":
                for agents in args.agents:
                    for games in args.games:
                        length = args.episode_steps or args.steps
                        specs.append(Spec(w, agents, args.steps, length, 0.0, store, games))
    began = time.monotonic()
    rates, failures, notes = measure(specs, args.repeat, args.postgres)
    seconds = time.monotonic() - began
    found = lines(specs, rates)
    print_table(found, args.repeat, seconds)
    if args.profile is not None:
        profile(specs, args.profile, args.postgres, notes)
    for note in notes:
        print(f"note: {note}")
    for spec, reason in failures.items():
        print(f"FAILED {spec.label}: {reason}", file=sys.stderr)
    out = BENCH / "results"
    out.mkdir(exist_ok=True)
    result: dict[str, Any] = {
        "machine": machine(),
        "cores": os.cpu_count(),
        "repeat": args.repeat,
        "seconds": seconds,
        "specs": [asdict(s) for s in specs],
        "lines": [asdict(line) for line in found],
        "failures": {s.label: reason for s, reason in failures.items()},
        "notes": notes,
    }
    (out / "many_cores.json").write_text(json.dumps(result, indent=2))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
