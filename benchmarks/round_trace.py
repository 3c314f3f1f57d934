"""Where a round's time goes in a run: each process's work between its messages, and the
hand-overs between the processes.

    python benchmarks/round_trace.py [--games 1 64] [--steps 40000] [--repeat 3]

The run of ``vector_envs.py`` (CartPole, one worker of ``--games`` games, one agent: the
linear policy, DummyBrain, the store on), with every message of the per-step links noted by the
process that sends or receives it (``benchmarks/round_trace_hook/sitecustomize.py``: the time,
the thread's CPU time, the peer, the size). A round at ``update_lag`` 0 goes environment ->
Muscle -> Brain -> Muscle -> environment; from the notes of the rounds in the middle of the run
(the first and last fifth left out), each part's median, mean and 90th percentile in
microseconds:

* the environment's work: from the Muscle's answer to the next round's observations (it steps
  the games and makes their observations; its rows are made after the send, while it waits);
* each hand-over: from a process's send to its peer's receipt (the peer asleep on another CPU
  is woken through the hypervisor; a peer that spins, or one that is busy, takes it later);
* the Muscle's work before it asks its Brain (it completes each game's transition), the
  Brain's (its memory, ``thinking``, its answer), the Muscle's after the answer (it acts;
  its rows are made after the send);
* the round, from one observation sent to the next.

Each part's CPU time is the time the process's step thread ran in it: a part whose wall time
is above its CPU time waited for a CPU. Noting costs a system call a message (six a round),
so the traced runs are slower than untraced ones, by about that. Medians over ``--repeat``
runs of each figure. Prints a table and writes JSON to benchmarks/results/round_trace.json.
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH.parent)]

from vector_envs import palaestra_rate  # noqa: E402

HOOK = BENCH / "round_trace_hook"
CARTPOLE = "palaestra.environment.cartpole:CartPole"
PARTS = (
    "environment",
    "environment -> Muscle",
    "Muscle before its Brain",
    "Muscle -> Brain",
    "Brain",
    "Brain -> Muscle",
    "Muscle after its Brain",
    "Muscle -> environment",
    "round",
)
WORK = {"environment", "Muscle before its Brain", "Brain", "Muscle after its Brain"}


@dataclass(frozen=True)
class Note:
    at: float  # seconds (the system's monotonic clock, as every process reads it)
    kind: str  # S: sent, R: received
    peer: str
    cpu: float  # the thread's CPU seconds


def notes_of(folder: Path) -> dict[str, list[Note]]:
    """Each traced process's notes, by its role (``Environment``, ``Muscle``, ``Brain``)."""
    found: dict[str, list[Note]] = {}
    for path in folder.iterdir():
        lines = path.read_text().splitlines()
        title = lines[0].removeprefix("# ")
        role = title.removeprefix("palaestra[").split("-")[0]
        notes = []
        for line in lines[1:]:
            at, kind, peer, _, cpu = line.split()
            notes.append(Note(float(at), kind, peer, float(cpu)))
        found[role] = notes
    missing = {"Environment", "Muscle", "Brain"} - set(found)
    if missing:
        raise SystemExit(f"no notes of {', '.join(sorted(missing))} in {folder}")
    return found


def _after(notes: list[Note], times: list[float], at: float) -> Note | None:
    k = bisect.bisect_left(times, at)
    return notes[k] if k < len(notes) else None


def _before(notes: list[Note], times: list[float], at: float) -> Note | None:
    k = bisect.bisect_right(times, at) - 1
    return notes[k] if k >= 0 else None


def parts_of(found: dict[str, list[Note]]) -> dict[str, list[tuple[float, float]]]:
    """Each part's (wall, CPU) seconds, a round each, of the rounds in the middle of the run."""
    env, muscle, brain = found["Environment"], found["Muscle"], found["Brain"]
    sent = [n for n in env if n.kind == "S"]
    got = [n for n in env if n.kind == "R"]
    asked = [n for n in brain if n.kind == "R"]
    answered = [n for n in brain if n.kind == "S"]
    times = {id(x): [n.at for n in x] for x in (sent, got, asked, answered)}
    rounds: list[dict[str, Note]] = []
    current: dict[str, Note] = {}
    for note in muscle:  # a round: from the environment, to the Brain, from it, to the env.
        from_env = note.peer.startswith("Environment")
        if note.kind == "R" and from_env:
            current = {"seen": note}
            rounds.append(current)
        elif note.kind == "S" and not from_env:
            current["asked"] = note
        elif note.kind == "R" and not from_env:
            current["told"] = note
        elif note.kind == "S" and from_env:
            current["answered"] = note
    whole = [r for r in rounds if len(r) == 4]
    middle = whole[len(whole) // 5 : len(whole) - len(whole) // 5]
    parts: dict[str, list[tuple[float, float]]] = {part: [] for part in PARTS}
    for r in middle:
        observed = _before(sent, times[id(sent)], r["seen"].at)
        stepped = _before(got, times[id(got)], observed.at) if observed else None
        question = _after(asked, times[id(asked)], r["asked"].at)
        reply = _after(answered, times[id(answered)], question.at) if question else None
        taken = _after(got, times[id(got)], r["answered"].at)
        following = _after(sent, times[id(sent)], taken.at) if taken else None
        if not (observed and stepped and question and reply and taken and following):
            continue
        seen, ask, told, answer = r["seen"], r["asked"], r["told"], r["answered"]
        for part, start, end in (
            ("environment", stepped, observed),
            ("environment -> Muscle", observed, seen),
            ("Muscle before its Brain", seen, ask),
            ("Muscle -> Brain", ask, question),
            ("Brain", question, reply),
            ("Brain -> Muscle", reply, told),
            ("Muscle after its Brain", told, answer),
            ("Muscle -> environment", answer, taken),
            ("round", observed, following),
        ):
            cpu = end.cpu - start.cpu if part in WORK else 0.0
            parts[part].append((end.at - start.at, cpu))
    return parts


def traced_run(games: int, steps: int) -> dict[str, object]:
    """One traced run: its steady steps/s and each part's median and mean (µs)."""
    with tempfile.TemporaryDirectory(prefix="palaestra-trace-") as folder:
        before = {k: os.environ.get(k) for k in ("PYTHONPATH", "PALAESTRA_ROUND_TRACE")}
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [str(HOOK), *filter(None, [before["PYTHONPATH"]])]
        )
        os.environ["PALAESTRA_ROUND_TRACE"] = folder
        try:
            run = palaestra_rate(games, steps, 0, CARTPOLE)
        finally:
            for key, value in before.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        parts = parts_of(notes_of(Path(folder)))
    figures: dict[str, object] = {"steady": run["steady"], "rounds": len(parts["round"])}
    for part, values in parts.items():
        walls = [1e6 * wall for wall, _ in values]
        cpus = [1e6 * cpu for _, cpu in values]
        figures[part] = {
            "median": statistics.median(walls),
            "mean": statistics.fmean(walls),
            "p90": statistics.quantiles(walls, n=10)[-1],
            "cpu_median": statistics.median(cpus),
            "cpu_mean": statistics.fmean(cpus),
        }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--steps", type=int, default=40000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    results = []
    for games in args.games:
        runs = [traced_run(games, args.steps) for _ in range(args.repeat)]
        summary: dict[str, object] = {
            "games": games,
            "steady": statistics.median(float(r["steady"]) for r in runs),  # type: ignore[arg-type]
        }
        for part in PARTS:
            summary[part] = {
                key: statistics.median(r[part][key] for r in runs)  # type: ignore[index]
                for key in ("median", "mean", "p90", "cpu_median", "cpu_mean")
            }
        results.append(summary)
        print(f"\nN = {games}: {summary['steady']:,.0f} steps/s steady (traced), µs a round")
        print(f"  {'part':26} {'median':>8} {'mean':>8} {'p90':>8} {'CPU med':>8} {'CPU mean':>9}")
        for part in PARTS:
            f = summary[part]
            cpu = (
                f"{f['cpu_median']:8.1f} {f['cpu_mean']:9.1f}"  # type: ignore[index]
                if part in WORK
                else f"{'':8} {'':9}"
            )
            walls = f"{f['median']:8.1f} {f['mean']:8.1f} {f['p90']:8.1f}"  # type: ignore[index]
            print(f"  {part:26} {walls} {cpu}")
        hand = sum(summary[p]["mean"] for p in PARTS if "->" in p)  # type: ignore[index]
        work = sum(summary[p]["mean"] for p in WORK)  # type: ignore[index]
        round_mean = summary["round"]["mean"]  # type: ignore[index]
        print(
            f"  hand-overs {hand:.0f} µs of a {round_mean:.0f} µs round on average "
            f"({hand / round_mean:.0%}), the processes' work {work:.0f} ({work / round_mean:.0%})"
        )
    out = BENCH / "results" / "round_trace.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"steps": args.steps, "results": results}, indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
