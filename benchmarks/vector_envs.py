"""Many games per worker against gymnasium's in-process vector environments, same policy.

    python benchmarks/vector_envs.py [--games 1 8 64] [--steps 60000] [--repeat 3]
                                     [--update-lag 0] [--cpu-affinity none|worker]

CartPole stepping at N games:

* palaestra: ``palaestra experiment-start`` of a one-phase run with one worker,
  ``phase_config.envs_per_worker: N``, the built-in numpy CartPole
  (``palaestra.environment.cartpole:CartPole``, gymnasium's CartPole-v1 dynamics), the fixed
  linear policy of ``benchmarks/vector_plugins.py`` as the Muscle (one call per round, on the
  round's columns: ``propose_actions_columns``),
  DummyBrain, and the store ON (SQLite, every step recorded: ``world_states`` and
  ``muscle_actions``). Each game plays enough episodes for about ``--steps`` steps in all.
  *steady*: steps / (last episode's end - first episode's start), from the ``episodes`` table
  (start-up excluded); *wall*: steps / the command's whole wall time (start-up, shutdown and
  the writer's last commit included). The store is checked: one ``world_states`` and one
  ``muscle_actions`` row per step, else the script exits 1.
* SQLite's floor: the CPU that SQLite itself takes for the run's rows, measured after each run
  in this process: its ``world_states`` and ``muscle_actions`` rows inserted again through
  palaestra's store driver (the writer's connection: WAL, ``synchronous=NORMAL``, foreign
  keys; its ``executemany``), into a copy of the run's store emptied of them, both tables in
  one transaction per 2,000 rows of each (the writer's batch). No messages and no buffers:
  the part of the StoreWriter's CPU that no change to palaestra's processes removes.
* ``--cpu-affinity worker`` runs palaestra with the runtime config's ``cpu_affinity: worker``
  (the worker's processes on one CPU).
* gymnasium SyncVectorEnv: ``gymnasium.vector.SyncVectorEnv`` of N ``CartPole-v1``
  (``gym.make``, its default wrappers), autoreset, the same policy on the batch of
  observations, the same number of steps; no store.
* gymnasium CartPoleVectorEnv: gymnasium's own numpy-vectorized CartPole (one array step for
  all N), the same way.

Each figure is the median of ``--repeat`` rounds (a palaestra run, then each gymnasium loop:
interleaved); the ratio is palaestra (steady) / SyncVectorEnv.
Prints a table and writes JSON to benchmarks/results/vector_envs.json.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(BENCH), str(ROOT)]

from vector_plugins import act  # noqa: E402

EPISODE_GUESS = 480
"""About how many steps an episode of the linear policy lasts (CartPole-v1 truncates at 500)."""

RUN = """\
uid: vector-bench
experiment_uid: vector-bench
seed: 1
version: "0.1"
schedule:
  - phase_0:
      environments:
        - environment:
            name: {environment}
            uid: pole
            params: {{}}
      agents:
        - name: player
          brain: {{name: palaestra.agent.dummy_brain:DummyBrain, params: {{}}}}
          muscle: {{name: {muscle}, params: {{}}}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [pole.state]
          actuators: [pole.push]
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
      phase_config:
        {{mode: train, worker: 1, episodes: {episodes}, envs_per_worker: {games},
         update_lag: {lag}}}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""


TICKS = os.sysconf("SC_CLK_TCK")


ROLES = ("Environment", "Muscle", "Brain", "StoreWriter", "SimulationController")


class CpuSampler(threading.Thread):
    """Samples the CPU time (user + system) of every process of a session until stopped; a
    process's last sample is what it used. A process's role is its title
    (``palaestra[Muscle-player-0]``) or, where titles are not set, the name of the Unix
    socket it bound in the run's directory (``Muscle-player-0-muscle.sock``)."""

    def __init__(self, session: int) -> None:
        super().__init__(daemon=True)
        self.session = session
        self.last: dict[int, tuple[str, float]] = {}
        self.others: set[str] = set()  # processes of other sessions (not read again)
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.05):
            self.sample()

    def sample(self) -> None:
        paths: dict[str, str] | None = None
        listing = os.listdir("/proc")
        others = self.others
        others &= set(listing)  # (a pid that ended may come again, as one of the run's)
        for entry in listing:
            if not entry.isdigit() or entry in others:
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                fields = stat.rsplit(")", 1)[1].split()
                if int(fields[3]) != self.session:
                    others.add(entry)  # (not read again while it lives: it keeps its
                    continue  # session)
                title = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")[0].decode()
            except (OSError, IndexError, ValueError):
                continue
            seconds = (int(fields[11]) + int(fields[12])) / TICKS
            pid = int(entry)
            known = self.last.get(pid)
            # (a child forked a moment ago still has its parent's title: asked again until
            # it has one of its own)
            role = known[0] if known is not None and known[0] not in UNSURE else _role(title)
            if role == "executor":
                if paths is None:
                    paths = _unix_paths()
                role = _bound_role(pid, paths)
            self.last[pid] = (role, seconds)

    def by_role(self) -> dict[str, float]:
        roles: dict[str, float] = {}
        for role, seconds in self.last.values():
            roles[role] = roles.get(role, 0.0) + seconds
        return roles


UNSURE = ("executor",)
"""The role a process has until it sets a title of its own (forked from the command)."""


def _role(title: str) -> str:
    """``Muscle`` of ``palaestra[Muscle-player-0]``; ``executor`` for the command itself."""
    if title.startswith("palaestra[") and title.endswith("]"):
        role = title[len("palaestra[") : -1].split("-")[0]
        return "executor" if role == "Executor" else role  # (the command is the executor)
    return "executor"


def _unix_paths() -> dict[str, str]:
    """The paths of the bound Unix sockets, by inode."""
    paths: dict[str, str] = {}
    try:
        lines = Path("/proc/net/unix").read_text().splitlines()[1:]
    except OSError:
        return paths
    for line in lines:
        fields = line.split()
        if len(fields) >= 8 and "palaestra-" in fields[7]:
            paths[fields[6]] = fields[7]
    return paths


def _bound_role(pid: int, paths: dict[str, str]) -> str:
    """The role named by a socket in the run's directory that process ``pid`` holds."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return "executor"
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            name = os.path.basename(paths.get(target[8:-1], ""))
            for role in ROLES:
                if name.startswith(role + "-") or name.startswith(role + "."):
                    return role
    return "executor"


def episodes_per_game(games: int, steps: int) -> int:
    return max(1, math.ceil(steps / (games * EPISODE_GUESS)))


CARTPOLE = "palaestra.environment.cartpole:CartPole"
PER_GAME = "vector_plugins:PerGameCartPole"


LINEAR = "vector_plugins:LinearPolicy"


def palaestra_rate(
    games: int,
    steps: int,
    lag: int,
    environment: str,
    affinity: str = "none",
    muscle: str = LINEAR,
    episodes: int | None = None,
) -> dict[str, Any]:
    """One run (``episodes`` of each game, else enough for about ``steps`` in all): steps,
    steady and wall steps/s, the median time between a game's episode's end and its next
    one's start; the store checked for completeness."""
    with tempfile.TemporaryDirectory(prefix="palaestra-vector-") as tmp:
        run_file = Path(tmp) / "run.yml"
        if episodes is None:
            episodes = episodes_per_game(games, steps)
        run_file.write_text(
            RUN.format(
                episodes=episodes, games=games, lag=lag, environment=environment, muscle=muscle
            )
        )
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(BENCH), str(ROOT), env.get("PYTHONPATH", "")])
        env["PALAESTRA_CPU_AFFINITY"] = affinity
        began = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "palaestra", "experiment-start", str(run_file)],
            cwd=tmp,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        sampler = CpuSampler(proc.pid)
        sampler.start()
        _, err = proc.communicate(timeout=1800)
        wall = time.perf_counter() - began
        sampler.done.set()
        sampler.join()
        if proc.returncode != 0:
            raise SystemExit(f"palaestra run failed:\n{err[-3000:]}")
        with sqlite3.connect(Path(tmp) / "palaestra.db") as conn:
            total, first, last, count = conn.execute(
                "select sum(steps), min(started_at), max(ended_at), count(*) from episodes"
            ).fetchone()
            worlds = conn.execute("select count(*) from world_states").fetchone()[0]
            actions = conn.execute("select count(*) from muscle_actions").fetchone()[0]
            times = conn.execute(
                "select worker, started_at, ended_at from episodes order by worker, episode"
            ).fetchall()
        if count != games * episodes or worlds != total or actions != total:
            print(
                f"FAILED: {games} games: {count} episodes of {games * episodes}, {worlds} "
                f"world_states and {actions} muscle_actions rows for {total} steps",
                file=sys.stderr,
            )
            raise SystemExit(1)
        floor = 1e6 * sqlite_floor(Path(tmp) / "palaestra.db") / total
    seconds = (datetime.fromisoformat(last) - datetime.fromisoformat(first)).total_seconds()
    cpu = {role: 1e6 * spent / total for role, spent in sampler.by_role().items()}
    return {
        "steps": total,
        "steady": total / seconds,
        "wall": total / wall,
        "cpu_us": cpu,
        "sqlite_floor_us": floor,
        "episode_steps": total / count,
        "between_episodes_ms": between_episodes(times),
    }


def between_episodes(times: list[tuple[int, str, str]]) -> float | None:
    """The median milliseconds from a game's episode's end to its next episode's start
    (``times``: each episode's game, start and end, a game's in order); None if no game
    played two."""
    gaps = [
        1e3 * (datetime.fromisoformat(b[1]) - datetime.fromisoformat(a[2])).total_seconds()
        for a, b in itertools.pairwise(times)
        if a[0] == b[0]
    ]
    return statistics.median(gaps) if gaps else None


STEP_TABLES = ("world_states", "muscle_actions")
WRITER_BATCH = 2000
"""Rows of a table the store writer buffers before it inserts them (``StoreWriter``'s
``batch_rows``)."""


def sqlite_floor(db: Path) -> float:
    """CPU seconds SQLite takes to insert the rows of ``db``'s per-step tables again as the
    store writer inserts them (see the module's docstring)."""
    from palaestra.core.wire.records import COLUMNS
    from palaestra.store.driver import Store

    floor = db.with_name("floor.db")
    with closing(sqlite3.connect(db)) as source, closing(sqlite3.connect(floor)) as copy:
        source.backup(copy)  # (with whatever a WAL still holds)
    rows: dict[str, list[tuple[Any, ...]]] = {}
    with sqlite3.connect(floor, isolation_level=None) as conn:
        for table in STEP_TABLES:
            names = ", ".join(COLUMNS[table])
            rows[table] = conn.execute(f"select {names} from {table} order by id").fetchall()
            conn.execute(f"delete from {table}")
        conn.execute("vacuum")
    store = Store(f"sqlite:///{floor}")
    longest = max(len(r) for r in rows.values())
    began = time.process_time()
    for start in range(0, longest, WRITER_BATCH):
        with store.transaction() as inserting:
            for table in STEP_TABLES:
                inserting.add_rows(table, rows[table][start : start + WRITER_BATCH])
    spent = time.process_time() - began
    store.close()
    return spent


def gymnasium_rate(games: int, steps: int, vectorized: bool) -> tuple[float, float]:
    """Steps/s of a gymnasium vector environment of ``games`` CartPoles, the same policy, and
    the CPU microseconds it spent per step."""
    import gymnasium as gym

    if vectorized:
        from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv

        envs: Any = CartPoleVectorEnv(num_envs=games)
    else:
        envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(games)])
    observations, _ = envs.reset(seed=1)
    done = 0
    began, cpu = time.perf_counter(), time.process_time()
    while done < steps:
        observations, _, _, _, _ = envs.step(act(observations))
        done += games
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    envs.close()
    return done / seconds, 1e6 * cpu / done


def measure(
    games: int, steps: int, repeat: int, lag: int, environment: str, affinity: str = "none"
) -> dict[str, Any]:
    """``repeat`` rounds, each a palaestra run and the two gymnasium loops right after it
    (interleaved, so a busy machine slows all three alike); medians and their ratio, and the
    ratio of each round's figures."""
    runs, sync, vector, sync_cpu = [], [], [], []
    for _ in range(repeat):
        runs.append(palaestra_rate(games, steps, lag, environment, affinity))
        rate, cpu_us = gymnasium_rate(games, runs[-1]["steps"], False)
        sync.append(rate)
        sync_cpu.append(cpu_us)
        vector.append(gymnasium_rate(games, runs[-1]["steps"], True)[0])
    steady = statistics.median(r["steady"] for r in runs)
    roles = sorted({role for r in runs for role in r["cpu_us"]})
    cpu = {role: statistics.median(r["cpu_us"].get(role, 0.0) for r in runs) for role in roles}
    return {
        "games": games,
        "steps": runs[0]["steps"],
        "palaestra_steady": steady,
        "palaestra_wall": statistics.median(r["wall"] for r in runs),
        "sync_vector_env": statistics.median(sync),
        "cartpole_vector_env": statistics.median(vector),
        "ratio_sync": steady / statistics.median(sync),
        "ratio_vectorized": steady / statistics.median(vector),
        "ratio_sync_per_round": [r["steady"] / s for r, s in zip(runs, sync, strict=True)],
        "cpu_us_per_step": cpu,
        "sqlite_floor_us_per_step": statistics.median(r["sqlite_floor_us"] for r in runs),
        "sync_cpu_us_per_step": statistics.median(sync_cpu),
        "all": {"palaestra": runs, "sync": sync, "vectorized": vector},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--steps", type=int, default=60_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--update-lag", type=int, choices=(0, 1), default=0)
    parser.add_argument("--cpu-affinity", choices=("none", "worker"), default="none")
    parser.add_argument(
        "--per-game",
        action="store_true",
        help="step each game with its own update() (a CartPole without update_batch)",
    )
    args = parser.parse_args()
    np.seterr(all="ignore")
    environment = PER_GAME if args.per_game else CARTPOLE
    results = [
        measure(n, args.steps, args.repeat, args.update_lag, environment, args.cpu_affinity)
        for n in args.games
    ]
    print(
        f"{'N':>4} {'steps':>7} {'palaestra steady':>17} {'wall':>9} "
        f"{'SyncVectorEnv':>14} {'ratio':>6} {'CartPoleVectorEnv':>18} {'ratio':>6}"
    )
    for r in results:
        print(
            f"{r['games']:>4} {r['steps']:>7} {r['palaestra_steady']:>17,.0f} "
            f"{r['palaestra_wall']:>9,.0f} {r['sync_vector_env']:>14,.0f} "
            f"{r['ratio_sync']:>6.2f} {r['cartpole_vector_env']:>18,.0f} "
            f"{r['ratio_vectorized']:>6.3f}"
        )
    print_round_ratios(results)
    print("\nCPU microseconds per step by process (whole run, start-up included):")
    for r in results:
        shares = ", ".join(f"{role} {us:.1f}" for role, us in r["cpu_us_per_step"].items())
        print(f"{r['games']:>4}: {shares}; SyncVectorEnv {r['sync_cpu_us_per_step']:.1f}")
    print("\nSQLite's floor: CPU microseconds per step of its own inserts of the run's rows:")
    for r in results:
        writer = r["cpu_us_per_step"].get("StoreWriter", 0.0)
        print(
            f"{r['games']:>4}: {r['sqlite_floor_us_per_step']:.1f} (the StoreWriter's "
            f"{writer:.1f})"
        )
    write_results(
        "vector_envs",
        results,
        update_lag=args.update_lag,
        cpu_affinity=args.cpu_affinity,
        environment=environment,
        repeat=args.repeat,
    )


def print_round_ratios(results: list[dict[str, Any]]) -> None:
    """Each N's ratio to SyncVectorEnv, round by round."""
    print("\nratio to SyncVectorEnv of each round (palaestra run, then gymnasium's):")
    for r in results:
        print(f"{r['games']:>4}: " + ", ".join(f"{x:.2f}" for x in r["ratio_sync_per_round"]))


def write_results(name: str, results: list[dict[str, Any]], **settings: Any) -> None:
    """``results`` and the machine's and the command's settings to
    ``benchmarks/results/<name>.json``."""
    out = BENCH / "results" / f"{name}.json"
    out.parent.mkdir(exist_ok=True)
    meta = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load": os.getloadavg(),
        **settings,
    }
    out.write_text(json.dumps({"meta": meta, "results": results}, indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
