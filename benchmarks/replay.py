"""How long replaying a 10,000-step episode takes next to recording it.

    python benchmarks/replay.py [--steps 10000] [--repeat 3]

A run of one DummyEnvironment (continuous sensors, ``max_iter`` = ``--steps``), one
DummyBrain/DummyMuscle agent, Vanilla, one worker, one episode, recorded into a fresh SQLite
store by ``palaestra experiment-start``; then replayed. Each is repeated ``--repeat`` times
(a fresh store per recording; each replay replays the first recording) and the medians are
compared:

* record: the episode's time as the store has it (``episodes.ended_at - started_at``: the
  steps of Muscle, Brain and environment processes), and the whole command's wall time;
* replay: :func:`palaestra.replay.replay_run` in this process (reading the record from the
  store, rebuilding the environment, stepping it with the recorded set points and comparing
  every step), and ``palaestra experiment-replay`` as a command (its wall time).

Prints a table and writes JSON to benchmarks/results/replay.json. The replay must be
identical to the record, or the benchmark fails.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from palaestra.replay import replay_run  # noqa: E402

RUN = """\
uid: replay-bench
experiment_uid: replay-bench
seed: 3
version: "0.1"
schedule:
  - phase_0:
      environments:
        - environment:
            name: palaestra.environment.dummy_environment:DummyEnvironment
            uid: env
            params: {{discrete: false, max_iter: {steps}}}
      agents:
        - name: agent
          brain: {{name: palaestra.agent.dummy_brain:DummyBrain, params: {{}}}}
          muscle: {{name: palaestra.agent.dummy_muscle:DummyMuscle, params: {{}}}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [env.0, env.1, env.2, env.3, env.4]
          actuators: [env.0, env.1, env.2, env.3, env.4]
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
      phase_config: {{mode: train, worker: 1, episodes: 1}}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""


def palaestra(directory: Path, *args: str) -> float:
    """Run a palaestra command in ``directory`` (its own store); its wall time in seconds."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), PALAESTRA_STORE_URI=store_uri(directory))
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "palaestra", *args], cwd=directory, env=env, check=True)
    return time.perf_counter() - started


def store_uri(directory: Path) -> str:
    return f"sqlite:///{directory / 'palaestra.db'}"


def episode_seconds(directory: Path) -> float:
    """The recorded episode's duration, from the store's ``episodes`` table."""
    with sqlite3.connect(directory / "palaestra.db") as db:
        started, ended = db.execute("SELECT started_at, ended_at FROM episodes").fetchone()
    from datetime import datetime

    return (datetime.fromisoformat(ended) - datetime.fromisoformat(started)).total_seconds()


def record(directory: Path, steps: int) -> dict[str, float]:
    directory.mkdir()
    (directory / "run.yml").write_text(RUN.format(steps=steps))
    command = palaestra(directory, "experiment-start", "run.yml")
    return {"episode_s": episode_seconds(directory), "command_s": command}


def replay(directory: Path, steps: int) -> dict[str, float]:
    started = time.perf_counter()
    outcome = replay_run("replay-bench", store_uri=store_uri(directory))
    in_process = time.perf_counter() - started
    if outcome.divergence is not None or outcome.steps != steps:
        raise SystemExit(f"the replay is not the record: {outcome}")
    command = palaestra(directory, "experiment-replay", "replay-bench")
    return {"in_process_s": in_process, "command_s": command}


def median(found: list[dict[str, float]], key: str) -> float:
    return statistics.median(row[key] for row in found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        recorded = [record(base / f"record-{i}", args.steps) for i in range(args.repeat)]
        replayed = [replay(base / "record-0", args.steps) for _ in range(args.repeat)]
    result: dict[str, Any] = {
        "steps": args.steps,
        "repeat": args.repeat,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "record_episode_s": median(recorded, "episode_s"),
        "record_command_s": median(recorded, "command_s"),
        "replay_in_process_s": median(replayed, "in_process_s"),
        "replay_command_s": median(replayed, "command_s"),
        "runs": {"record": recorded, "replay": replayed},
    }
    result["ratio_replay_to_record_episode"] = (
        result["replay_in_process_s"] / result["record_episode_s"]
    )
    result["ratio_replay_to_record_command"] = (
        result["replay_command_s"] / result["record_command_s"]
    )
    print(f"{args.steps}-step episode, median of {args.repeat}:")
    record_s, record_cmd = result["record_episode_s"], result["record_command_s"]
    replay_s, replay_cmd = result["replay_in_process_s"], result["replay_command_s"]
    print(f"  record  episode    {record_s:8.3f} s   command {record_cmd:8.3f} s")
    print(f"  replay  in process {replay_s:8.3f} s   command {replay_cmd:8.3f} s")
    print(
        f"  replay/record: {result['ratio_replay_to_record_episode']:.2f} (replay in process / "
        f"recorded episode), {result['ratio_replay_to_record_command']:.2f} (commands)"
    )
    out = ROOT / "benchmarks" / "results" / "replay.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
