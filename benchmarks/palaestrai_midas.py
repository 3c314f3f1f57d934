"""MIDAS co-simulations (palaestrai-mosaik) on palaestrAI 3.5.18 and on palaestra, and what
palaestra adds to the co-simulation's own time per step.

    python benchmarks/palaestrai_midas.py --palaestrai /work/venvs/pai/bin/palaestrai
        [--repeat 3] [--only four_bus|arl]
    python benchmarks/palaestrai_midas.py --overhead [--repeat 3]

Needs palaestra with palaestrai-mosaik, midas-palaestrai and MIDAS's store and powergrid
modules here (docs/midas.md), and palaestrAI 3.5.18 with the same
packages in a virtualenv of its own (its ``palaestrai`` command, ``--palaestrai``).

The run files (``tests/published/midas/``): ``four_bus`` (MIDAS's four-bus grid, DummyBrain /
DummyMuscle, 1 worker, 5 episodes of 10 steps) and ``arl`` (MIDAS's medium-voltage grid, harl's
SAC attacker against a SAC defender, train 3 episodes then test 2). Each round runs every file
on palaestra, then on palaestrAI (interleaved), each in a fresh directory with a fresh SQLite
store (palaestrAI: ``database-create`` first, untimed). Per file and system: wall time (the
command, start to exit) and steps/s over it; the row counts must agree (``world_states``,
``muscle_actions``), else the script exits 1. On palaestra the run's processes are sampled
(``/proc``): CPU seconds per step by role; the Environment's process is where mosaik runs.

The co-simulation alone: the four-bus world is also driven without any framework, in this
process (``MosaikEnvironment`` constructed with the run file's params, ``start_environment``,
10 ``update`` calls with DummyMuscle-like random set points, per episode, on one event loop),
timing its ``update`` calls, against palaestra's episodes (the ``episodes`` table: each episode
from its first step to its end, which also holds the episode's end: the agents' last answers
and the Brain's dump, so this over-states the cost of a step).

``--overhead``: what palaestra adds to the co-simulation's own time per step, measured inside
the run: the four-bus file on palaestra with ``midas_timing.py``'s environment, which notes when
each ``update`` began and ended; palaestra's share is the time from one update's end to the
next one's start within an episode, against the update's own time (target: at most 10%).

Writes JSON to benchmarks/results/palaestrai_midas.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
MIDAS = ROOT / "tests" / "published" / "midas"
sys.path.insert(0, str(BENCH))

from run import RunFailed, run_command  # noqa: E402

FILES = {
    "four_bus": ("four_bus_run.yml", "four_bus.yml", {"WORKERS": "1", "EPISODES": "5"}),
    "arl": ("arl_run.yml", "midasmv_constant.yml", {}),
}


def prepare(folder: Path, name: str) -> Path:
    run_name, scenario, edits = FILES[name]
    text = (MIDAS / run_name).read_text()
    for old, new in edits.items():
        text = text.replace(old, new)
    (folder / "run.yml").write_text(text)
    shutil.copy(MIDAS / scenario, folder / scenario)
    return folder / "run.yml"


def counts(db: Path) -> tuple[int, int]:
    with sqlite3.connect(db) as conn:
        worlds = conn.execute("select count(*) from world_states").fetchone()[0]
        actions = conn.execute("select count(*) from muscle_actions").fetchone()[0]
    return int(worlds), int(actions)


def on_palaestra(name: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="midas-palaestra-") as tmp:
        folder = Path(tmp)
        run_file = prepare(folder, name)
        cmd = run_command(
            [sys.executable, "-m", "palaestra", "experiment-start", "-q", str(run_file)],
            folder,
            1800,
            [],
            every=0.1,
        )
        if cmd.code != 0:
            raise RunFailed(f"palaestra {name}: exit {cmd.code}: {cmd.stderr[-3000:]}")
        worlds, actions = counts(folder / "palaestra.db")
        with sqlite3.connect(folder / "palaestra.db") as conn:
            rows = conn.execute("select started_at, ended_at, steps from episodes").fetchall()
        episodes = sum(
            (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
            for start, end, _ in rows
        )
    cpu = {role: total / worlds for role, (total, _) in cmd.cpu_by_role.items()}
    wall = cmd.ended - cmd.began
    return {"wall": wall, "worlds": worlds, "actions": actions, "episodes_s": episodes, "cpu": cpu}


def overhead_run() -> dict[str, float]:
    """The four-bus file on palaestra with its environment timing its ``update`` calls
    (``midas_timing.py``): the mean time of an update (the co-simulation's step), and the mean
    time from one update's end to the next one's start within an episode (palaestra's)."""
    with tempfile.TemporaryDirectory(prefix="midas-overhead-") as tmp:
        folder = Path(tmp)
        run_file = prepare(folder, "four_bus")
        timing = folder / "timing"
        text = run_file.read_text().replace(
            "name: palaestrai_mosaik:MosaikEnvironment",
            "name: midas_timing:TimedMosaikEnvironment",
        )
        run_file.write_text(
            text.replace(
                "            params:\n",
                f"            params:\n              timing_file: {timing}\n",
                1,
            )
        )
        cmd = run_command(
            [sys.executable, "-m", "palaestra", "experiment-start", "-q", str(run_file)],
            folder,
            1800,
            [],
        )
        if cmd.code != 0:
            raise RunFailed(f"palaestra four_bus (timed): exit {cmd.code}: {cmd.stderr[-3000:]}")
        updates: list[float] = []
        gaps: list[float] = []
        for path in folder.glob("timing.*.json"):
            for episode in json.loads(path.read_text()):
                updates.extend(end - began for began, end in episode)
                gaps.extend(b - a for (_, a), (b, _) in zip(episode, episode[1:], strict=False))
    if not updates or not gaps:
        raise RunFailed("the timed environment noted no steps")
    return {"update": statistics.fmean(updates), "between": statistics.fmean(gaps)}


def on_palaestrai(palaestrai: str, name: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="midas-palaestrai-") as tmp:
        folder = Path(tmp)
        prepare(folder, name)
        (folder / "runtime.yaml").write_text(
            f"store_uri: sqlite:///{tmp}/palaestrai.db\ndata_path: {tmp}/_outputs\n"
        )
        run = [palaestrai, "-c", "runtime.yaml"]
        subprocess.run([*run, "database-create"], cwd=tmp, capture_output=True, timeout=300)
        began = time.perf_counter()
        done = subprocess.run(
            [*run, "experiment-start", "run.yml"], cwd=tmp, capture_output=True, timeout=1800
        )
        wall = time.perf_counter() - began
        if done.returncode != 0:
            output = (done.stderr or done.stdout).decode(errors="replace")
            raise RunFailed(f"palaestrAI {name}: exit {done.returncode}: {output[-3000:]}")
        worlds, actions = counts(folder / "palaestrai.db")
    return {"wall": wall, "worlds": worlds, "actions": actions}


def bare_four_bus(episodes: int = 5, steps: int = 10) -> float:
    """Seconds the ``update`` calls of ``episodes`` episodes of the four-bus world took,
    driven alone on one event loop in this process (each episode's start not counted: the
    episodes table times a palaestra episode from its first step)."""
    from palaestra import compat

    compat.install()
    from palaestrai_mosaik import MosaikEnvironment  # type: ignore[import-not-found]

    from palaestra.core.description.loading import load_class
    from palaestra.experiment.runfile import load_run_file

    with tempfile.TemporaryDirectory(prefix="midas-bare-") as tmp:
        spec = load_run_file(prepare(Path(tmp), "four_bus"), check_classes=False)
        item = spec.phases[0].environments[0]
        params = dict(item.params)
        assert item.reward is not None
        reward = load_class(item.reward.name)(**item.reward.params)
        params["params"] = dict(params["params"], config=str(Path(tmp) / "four_bus.yml"))

        async def play() -> float:
            env = MosaikEnvironment(uid="midas", broker_uri="", seed=0, **params)
            env.reward = reward
            spent = 0.0
            for episode in range(episodes):
                if episode:
                    await env.shutdown()
                baseline = await env.start_environment()
                actuators = list(baseline.actuators_available)
                for _ in range(steps):
                    for actuator in actuators:
                        actuator.value = actuator.space.sample()
                    began = time.perf_counter()
                    await env.update(actuators)
                    spent += time.perf_counter() - began
            await env.shutdown()
            return spent

        return asyncio.run(play())


def report_overhead(repeat: int) -> None:
    runs = [overhead_run() for _ in range(repeat)]
    update = statistics.median(r["update"] for r in runs)
    between = statistics.median(r["between"] for r in runs)
    print(
        f"four_bus on palaestra (median of {repeat}): the co-simulation's update "
        f"{1e3 * update:.2f} ms a step, palaestra between two updates {1e3 * between:.2f} ms: "
        f"palaestra adds {100 * between / update:.1f}% to the co-simulation's time per step"
    )
    for r in runs:
        print(f"  update {1e3 * r['update']:.2f} ms, between {1e3 * r['between']:.2f} ms")
    out = BENCH / "results"
    out.mkdir(exist_ok=True)
    (out / "palaestrai_midas_overhead.json").write_text(json.dumps(runs, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--palaestrai", default="/work/venvs/pai/bin/palaestrai")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=sorted(FILES))
    parser.add_argument(
        "--overhead",
        action="store_true",
        help="only what palaestra adds per step to the four-bus co-simulation (no palaestrAI)",
    )
    args = parser.parse_args()
    if args.overhead:
        report_overhead(args.repeat)
        return
    names = [args.only] if args.only else list(FILES)
    found: dict[str, dict[str, list[Any]]] = {
        n: {"palaestra": [], "palaestrai": []} for n in names
    }
    bare: list[float] = []
    for round_ in range(args.repeat):
        for name in names:
            print(f"round {round_ + 1}: {name} ...", file=sys.stderr, flush=True)
            found[name]["palaestra"].append(on_palaestra(name))
            found[name]["palaestrai"].append(on_palaestrai(args.palaestrai, name))
        if "four_bus" in names:
            bare.append(bare_four_bus())
    failed = False
    print(
        f"{'file':9} {'palaestra s':>11} {'palaestrAI s':>12} {'ratio':>6} {'steps':>6} "
        f"{'palaestra steps/s':>17} {'palaestrAI steps/s':>18}"
    )
    for name in names:
        ours, theirs = found[name]["palaestra"], found[name]["palaestrai"]
        if {(r["worlds"], r["actions"]) for r in ours + theirs} != {
            (ours[0]["worlds"], ours[0]["actions"])
        }:
            seen = [(r["worlds"], r["actions"]) for r in ours + theirs]
            print(f"FAILED {name}: row counts (world_states, muscle_actions) differ: {seen}")
            failed = True
        a = statistics.median(r["wall"] for r in ours)
        b = statistics.median(r["wall"] for r in theirs)
        steps = ours[0]["worlds"]
        print(
            f"{name:9} {a:11.1f} {b:12.1f} {b / a:6.2f} {steps:6d} {steps / a:17.2f} "
            f"{steps / b:18.2f}"
        )
    for name in names:
        ours = found[name]["palaestra"]
        roles = sorted({role for r in ours for role in r["cpu"]})
        shares = ", ".join(
            f"{role} {1e3 * statistics.median(r['cpu'].get(role, 0.0) for r in ours):.1f}"
            for role in roles
        )
        print(f"palaestra CPU ms per step, {name} (whole run, start-up included): {shares}")
    result: dict[str, Any] = {"found": found, "bare_four_bus": bare}
    if bare and "four_bus" in names:
        ours = statistics.median(r["episodes_s"] for r in found["four_bus"]["palaestra"])
        alone = statistics.median(bare)
        result["overhead"] = ours / alone - 1
        print(
            f"four_bus: palaestra's episodes {ours:.2f} s, the co-simulation alone {alone:.2f} s"
            f" (median of {len(bare)}): palaestra adds {100 * (ours / alone - 1):.1f}%"
        )
    out = BENCH / "results"
    out.mkdir(exist_ok=True)
    (out / "palaestrai_midas.json").write_text(json.dumps(result, indent=2, default=str))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
