"""Differential runs: one run file played two ways that must give the same rows, at random.

    python benchmarks/differential.py engine [--seed 1] [--count 40] [--postgres URL]
    python benchmarks/differential.py resume [--seed 1] [--count 20]
    python benchmarks/differential.py check [--seed 1] [--count 300]

``engine``: a random phase (1 or 2 CartPoles, palaestra's or gymnasium's, of random lengths;
1 or 2 agents with deterministic linear policies; Vanilla, TakingTurns or a custom turn policy;
``update_lag`` none, 0, 1 or async; ``evaluate_every``; ``record: {every: N}``; an agent's
objective rule; 2, 3 or 5 games a worker; 1 or 2 workers) is played as N games by W workers,
as N x W workers of one game, and with the controller driving the rounds instead of the
environment (and on PostgreSQL with ``--postgres``, an SQLAlchemy URL of a database the tool
may empty). Every pair must store the same ``world_states``, ``muscle_actions`` and
``episodes`` lane by lane, and each run must keep its invariants: an episode's reward is the
sum of its actions' rewards, its world steps are consecutive, no row before an episode's last
is done, and some environment is done at its end.

``resume``: ``tests/system/resume_run.yml`` (three phases here) cut one to three times at a
random moment (SIGINT to the group, SIGTERM, or kill -9 of the executor, then 32 s for it to
go stale), resumed until it ends; the run's view must equal the uninterrupted run's.

``check``: one of the example run files (``experiments/``) with one or two values set to
something else at random (None, numbers, NaN, texts, lists, mappings, class names), a key
deleted, renamed or a value wrapped: ``palaestra check`` must exit 0 or 2 (naming the file),
never with a traceback, and a file it passes must run (exit 0; 1 with a reason is a run that
failed, also a finding where the check should have refused the file).

Each case prints a JSON line; a case whose line has non-empty ``problems`` found a bug.
Runs with the tests' plug-ins (``tests/plugins``); takes minutes. On 2026-12-01: 113 engine
cases (73 on PostgreSQL too) and 25 resume cases agreed; 300 check cases found one bug (see
docs/development.md).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = ROOT / "tests" / "plugins"

AGENT = """\
        - name: {name}
          brain: {{name: palaestra.agent.dummy_brain:DummyBrain, params: {{}}}}
          muscle: {{name: games:LinearMuscle, params: {{weights: {weights}}}}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [{env}.{sensor}]
          actuators: [{env}.{actuator}]
"""
CARTPOLE = """\
        - environment:
            name: palaestra.environment.cartpole:CartPole
            uid: {uid}
            params: {{max_steps: {steps}}}
"""
GYM = """\
        - environment:
            name: palaestra.environment.gymnasium:GymnasiumEnvironment
            uid: {uid}
            params: {{env_id: CartPole-v1, env_kwargs: {{max_episode_steps: {steps}}}}}
"""
CONDITION = """\
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {}
"""
OBJECTIVE_RULE = """\
          - name: palaestra.experiment:AgentObjectiveTerminationCondition
            params: {{a0: {{brain_avg{n}: {x}}}}}
"""
RUN = """\
uid: fz
experiment_uid: fz
seed: {seed}
version: "0.1"
schedule:
  - phase_0:
      environments:
{environments}      agents:
{agents}      simulation:
        name: {simulation}
        params: {{driver: {driver}}}
        conditions:
{conditions}      phase_config: {{mode: train, worker: {workers}, episodes: {episodes}, \
envs_per_worker: {games}{extra}}}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""


def palaestra(
    directory: Path, *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PLUGINS), str(ROOT)]))
    env.pop("PALAESTRA_STORE_URI", None)
    return subprocess.run(
        [sys.executable, "-m", "palaestra", *args],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# --- engine ------------------------------------------------------------------------------------


def phase(rng: random.Random) -> dict[str, Any]:
    """A random phase (see the module's docstring)."""
    envs = [(uid, rng.randint(3, 25)) for uid in ["pole", "pole2"][: rng.choice([1, 1, 2])]]
    agents = [("a0", envs[0][0])] + ([("a1", envs[-1][0])] if rng.random() < 2 / 3 else [])
    simulations = ["palaestra.simulation:Vanilla"]
    if len(agents) == 2:
        simulations += ["palaestra.simulation:TakingTurns", "games:BothEveryThird"]
    return {
        "seed": rng.randint(0, 1000),
        "envs": envs,
        "agents": agents,
        "weights": [[rng.choice([-1.0, 0.0, 0.5, 1.0]) for _ in range(4)] for _ in agents],
        "simulation": rng.choice(simulations),
        "lag": rng.choice([None, 0, 1, "async"]),
        "evaluate_every": rng.choice([None, None, 1, 2]),
        "record": rng.choice([None, None, 2, 3]),
        "episodes": rng.randint(1, 3),
        "games": rng.choice([2, 3, 5]),
        "gym": rng.random() < 0.5,
        "objective_rule": rng.choice([None, None, (2, 0.5), (4, 0.9)]),
        "workers": rng.choice([1, 1, 2]),
    }


def run_text(c: dict[str, Any], workers: int, games: int, driver: str) -> str:
    sensor, actuator = ("obs", "action") if c["gym"] else ("state", "push")
    template = GYM if c["gym"] else CARTPOLE
    extra = f", update_lag: {c['lag']}" if c["lag"] is not None else ""
    if c["evaluate_every"]:
        extra += f", evaluate_every: {c['evaluate_every']}"
    if c["record"]:
        extra += f", record: {{every: {c['record']}}}"
    rule = c["objective_rule"]
    return RUN.format(
        seed=c["seed"],
        environments="".join(template.format(uid=u, steps=s) for u, s in c["envs"]),
        agents="".join(
            AGENT.format(name=n, env=e, weights=w, sensor=sensor, actuator=actuator)
            for (n, e), w in zip(c["agents"], c["weights"], strict=True)
        ),
        simulation=c["simulation"],
        driver=driver,
        conditions=CONDITION + (OBJECTIVE_RULE.format(n=rule[0], x=rule[1]) if rule else ""),
        workers=workers,
        episodes=c["episodes"],
        games=games,
        extra=extra,
    )


WORLD = (
    "select e.uid, w.worker, w.episode, w.step, w.sensors, w.setpoints, w.rewards, w.done,"
    " w.terminated, w.truncated from world_states w"
    " join environments e on e.id = w.environment_id order by w.id"
)
ACTIONS = (
    "select a.name, m.worker, m.episode, m.step, m.sensor_readings, m.actuator_setpoints,"
    " m.rewards, m.reward, m.objective, m.done, m.terminated, m.truncated from muscle_actions m"
    " join agents a on a.id = m.agent_id order by m.id"
)
EPISODES = "select worker, episode, steps, rewards from episodes order by worker, episode"


def _plain(value: Any) -> Any:
    """A value as both stores give it: JSON text read, booleans as 0 and 1."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return int(value) if isinstance(value, bool) else value


def stored(directory: Path, postgres: str | None, recorded_all: bool) -> dict[str, Any]:
    """The run's rows by lane (environment or agent, worker), its episodes, its status."""
    if postgres:
        import psycopg

        connection: Any = psycopg.connect(postgres.replace("+psycopg", ""), autocommit=True)
    else:
        connection = sqlite3.connect(directory / "palaestra.db")
    with connection:
        read = {
            name: [tuple(_plain(v) for v in row) for row in connection.execute(sql).fetchall()]
            for name, sql in (("world", WORLD), ("actions", ACTIONS), ("episodes", EPISODES))
        }
        status = connection.execute("select status from experiment_run_instances").fetchall()
    lanes: dict[str, dict[Any, list[Any]]] = {
        "world": defaultdict(list),
        "actions": defaultdict(list),
    }
    for table in lanes:
        for row in read[table]:
            lanes[table][row[:2]].append(row[2:])
    return {
        "world": dict(lanes["world"]),
        "actions": dict(lanes["actions"]),
        "episodes": read["episodes"],
        "status": [s for (s,) in status],
        "invariants": invariants(read, recorded_all),
    }


def invariants(read: dict[str, list[Any]], recorded_all: bool) -> list[str]:
    out = []
    sums: dict[tuple[Any, ...], float] = defaultdict(float)
    for agent, worker, episode, *_, reward, _objective, _done, _t, _u in read["actions"]:
        if reward is not None:
            sums[(worker, episode, agent)] += reward
    for worker, episode, _, rewards in read["episodes"]:
        for agent, value in (rewards or {}).items():
            summed = sums.get((worker, episode, agent), 0.0)
            if recorded_all and abs(summed - value) > 1e-9:
                out.append(f"episode {worker}/{episode} {agent}: {value}, its actions' {summed}")
    per: dict[tuple[Any, ...], list[tuple[int, bool]]] = defaultdict(list)
    for env, worker, episode, step, *_, done, _t, _u in read["world"]:
        per[(env, worker, episode)].append((step, bool(done)))
    for (env, worker, episode), found in per.items():
        steps = [step for step, _ in found]
        if recorded_all and steps != list(range(steps[0], steps[0] + len(steps))):
            out.append(f"world {env}/{worker}/{episode}: steps {steps[:10]}")
        if any(done for _, done in found[:-1]):
            out.append(f"world {env}/{worker}/{episode}: a done row before its last")
    return out[:5]


def play(directory: Path, text: str, postgres: str | None = None) -> dict[str, Any]:
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    (directory / "run.yml").write_text(text)
    args = ["experiment-start", "-q", "run.yml"]
    if postgres:
        import psycopg

        with psycopg.connect(postgres.replace("+psycopg", ""), autocommit=True) as emptied:
            emptied.execute("drop schema public cascade")
            emptied.execute("create schema public")
        (directory / "runtime.yml").write_text(f"store_uri: {postgres}\n")
        args = ["-c", "runtime.yml", *args]
    done = palaestra(directory, *args)
    if done.returncode != 0:
        return {"failed": done.returncode, "stderr": done.stderr[-1500:]}
    return stored(directory, postgres, recorded_all="record:" not in text)


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    if "failed" in a or "failed" in b:
        said = a.get("stderr") or b.get("stderr")
        return [f"exit {a.get('failed', 0)} / {b.get('failed', 0)}: {said}"]
    out = []
    for name in ("world", "actions", "episodes", "status"):
        if a[name] != b[name]:
            out.append(f"{name} differ")
    return out


def engine(seed: int, count: int, postgres: str | None, root: Path) -> None:
    for k in range(count):
        c = phase(random.Random(seed * 1000 + k))
        workers, games = (1 if c["evaluate_every"] else c["workers"]), c["games"]
        base = play(root / "a", run_text(c, workers, games, "auto"))
        pairs = {"controller": play(root / "c", run_text(c, workers, games, "controller"))}
        if not c["evaluate_every"]:  # (evaluation rollouts need one worker)
            pairs["workers"] = play(root / "w", run_text(c, workers * games, 1, "auto"))
        if postgres:
            pairs["postgres"] = play(root / "p", run_text(c, workers, games, "auto"), postgres)
        problems = {name: differences(base, other) for name, other in pairs.items()}
        problems = {name: found for name, found in problems.items() if found}
        if base.get("invariants"):
            problems["invariants"] = base["invariants"]
        print(json.dumps({"case": k, "phase": c, "problems": problems}, default=str), flush=True)


# --- resume ------------------------------------------------------------------------------------


def resume_file() -> str:
    text = (ROOT / "tests" / "system" / "resume_run.yml").read_text()
    second = "  - learn2:\n      phase_config:\n        mode: train\n        episodes: 150\n"
    return text.replace("  - check:\n", second + "  - check:\n").replace(
        "episodes: 400", "episodes: 150"
    )


def view(directory: Path) -> tuple[list[Any], ...]:
    sys.path.insert(0, str(ROOT))
    from palaestra.store import rows

    uri = f"sqlite:///{directory}/palaestra.db"
    return (
        list(rows.world_states("resume-run", store_uri=uri)),
        list(rows.muscle_actions("resume-run", store_uri=uri)),
        list(rows.episode_rewards("resume-run", store_uri=uri)),
    )


def _recorded(directory: Path) -> bool:
    """Whether the store in ``directory`` records an instance of the run."""
    try:
        with sqlite3.connect(f"file:{directory / 'palaestra.db'}?mode=ro", uri=True) as store:
            return bool(
                store.execute("select count(*) from experiment_run_instances").fetchone()[0]
            )
    except sqlite3.Error:
        return False


def cut(directory: Path, args: list[str], how: str, after: float) -> int | None:
    """Start ``palaestra args``; after ``after`` s, interrupt it ``how``; its exit code (None:
    it ended by itself first)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PLUGINS), str(ROOT)]))
    env.pop("PALAESTRA_STORE_URI", None)
    started = subprocess.Popen(
        [sys.executable, "-m", "palaestra", *args],
        cwd=directory,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        started.wait(timeout=after)
        return None
    except subprocess.TimeoutExpired:
        pass
    if how == "int":
        os.killpg(started.pid, signal.SIGINT)  # (Ctrl-C: the whole group)
    else:
        os.kill(started.pid, signal.SIGTERM if how == "term" else signal.SIGKILL)
    try:
        return started.wait(timeout=40)
    finally:
        with contextlib.suppress(ProcessLookupError):  # (a group left behind: ended)
            os.killpg(started.pid, signal.SIGKILL)


def resume(seed: int, count: int, root: Path) -> None:
    reference = root / "reference"
    reference.mkdir(parents=True)
    (reference / "run.yml").write_text(resume_file())
    assert palaestra(reference, "experiment-start", "-q", "run.yml").returncode == 0
    expected = view(reference)
    for k in range(count):
        rng = random.Random(seed * 1000 + k)
        directory = root / f"case{k}"
        directory.mkdir()
        (directory / "run.yml").write_text(resume_file())
        args, cuts, ended = ["experiment-start", "-q", "run.yml"], [], False
        for _ in range(rng.randint(1, 3)):
            how, after = rng.choice(["int", "term", "kill"]), rng.uniform(0.3, 4.0)
            code = cut(directory, args, how, after)
            cuts.append((how, round(after, 2), code))
            if _recorded(directory):  # (else cut before its start was recorded: start again)
                args = ["experiment-resume", "resume-run"]
            if code is None:
                ended = True
                break
            if how == "kill":
                time.sleep(32)  # (its instance goes stale after 30 s without a heartbeat)
        problems = []
        if not ended:
            last = palaestra(directory, *args)
            if last.returncode != 0:
                problems.append(f"the last resume: exit {last.returncode}: {last.stderr[-800:]}")
        for name, got, want in zip(
            ("world", "actions", "rewards"), view(directory), expected, strict=True
        ):
            if got != want:
                problems.append(f"{name}: {len(got)} rows against {len(want)}")
        print(json.dumps({"case": k, "cuts": cuts, "problems": problems}), flush=True)


# --- check -------------------------------------------------------------------------------------

EXAMPLES = ("dummy_run.yml", "taking_turns_run.yml", "multiworker_run.yml")
VALUES: tuple[Any, ...] = (
    *(None, 0, -1, 1, 2, 10**30, 1.5, float("nan"), float("inf"), -0.0, True, False),
    *("", "x", "é∂", "0", "1e3", " 2", "palaestra.agent:DummyBrain", "nosuch:Thing"),
    *([], {}, [1, 2], {"a": 1}),
)


def _paths(node: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [at]
    items = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else ()
    )
    for key, value in items:
        found += _paths(value, (*at, key))
    return found


def mutated(document: Any, rng: random.Random) -> Any:
    """``document`` with one or two random changes (see the module's docstring)."""
    import copy

    document = copy.deepcopy(document)
    for _ in range(rng.choice([1, 1, 1, 2])):
        at = rng.choice(_paths(document)[1:])
        parent = document
        for key in at[:-1]:
            parent = parent[key]
        key, how = at[-1], rng.choice(["set", "set", "set", "delete", "rename", "wrap"])
        with contextlib.suppress(KeyError, IndexError, TypeError):
            if how == "set":
                parent[key] = rng.choice(VALUES)
            elif how == "delete":
                del parent[key]
            elif how == "rename" and isinstance(parent, dict):
                parent[f"{key}{rng.choice(['_', 's', 'X'])}"] = parent.pop(key)
            elif how == "wrap":
                parent[key] = [parent[key]] if rng.random() < 0.5 else {"x": parent[key]}
    return document


def check(seed: int, count: int, root: Path) -> None:
    import yaml

    for k in range(count):
        rng = random.Random(seed * 100000 + k)
        source = rng.choice(EXAMPLES)
        document = yaml.safe_load((ROOT / "experiments" / source).read_text())
        for item in document["schedule"]:  # (one episode a phase: short runs)
            for body in item.values():
                if (
                    isinstance(body.get("phase_config"), dict)
                    and "episodes" in body["phase_config"]
                ):
                    body["phase_config"]["episodes"] = 1
        directory = root / f"case{k}"
        directory.mkdir()
        text = yaml.safe_dump(mutated(document, rng), allow_unicode=True, sort_keys=False)
        (directory / "run.yml").write_text(text)
        checked = palaestra(directory, "check", "run.yml", timeout=120)
        said = checked.stdout + checked.stderr
        problems = []
        if checked.returncode not in (0, 2) or "Traceback" in said:
            problems.append(f"check: exit {checked.returncode}: {said[-800:]}")
        elif checked.returncode == 2 and "run.yml" not in said:
            problems.append(f"check: the error names no file: {said[-400:]}")
        elif checked.returncode == 0:
            ran = palaestra(directory, "experiment-start", "-q", "run.yml", timeout=120)
            if ran.returncode != 0:
                problems.append(f"checked, then exit {ran.returncode}: {ran.stderr[-800:]}")
        print(json.dumps({"case": k, "source": source, "problems": problems}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["engine", "resume", "check"])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--postgres", help="an SQLAlchemy URL of a database to empty and use")
    parser.add_argument("--keep", action="store_true", help="keep the runs' directories")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix=f"differential-{args.what}-"))
    try:
        if args.what == "engine":
            engine(args.seed, args.count, args.postgres, root)
        elif args.what == "resume":
            resume(args.seed, args.count, root)
        else:
            check(args.seed, args.count, root)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
