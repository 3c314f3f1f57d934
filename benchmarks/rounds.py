"""The per-round path in one process: CPU per step of the engine's own work, without processes.

    python benchmarks/rounds.py [--games 1 64] [--steps 20000] [--repeat 3] [--profile]
                                [--instructions]

A worker's N CartPole games (``palaestra.environment.cartpole:CartPole``, stepped in one
``update_batch`` when N > 1) played in rounds by :class:`palaestra.testing.LocalRounds`: the
environment's rounds (:mod:`palaestra.environment.lanes`), the Muscle's
(:class:`~palaestra.agent.muscle_lanes.MuscleLanes`, the linear policy of
``benchmarks/vector_plugins.py`` in one call per round on the round's columns,
``propose_actions_columns``, DummyObjective) and the
Brain process's own path (:class:`~palaestra.agent.brain_process.BrainProcess`: its memory
rows, DummyBrain's ``thinking`` per experience, its statistics and dumps, its answer), with
the messages encoded and decoded between them as on the wire; the ``world_states`` and
``muscle_actions`` rows are shaped, encoded and batched by the processes' own sinks, each
batch dropped where a run sends it to the writer. No process, socket or store. What it
measures is the floor under ``vector_envs.py``'s figures: the Python work per step that no
transport change removes. Each round of the benchmark plays the games, then gymnasium's
SyncVectorEnv of N ``CartPole-v1`` with the same policy for as many steps right after it
(interleaved: a busy machine slows both alike); medians of ``--repeat`` rounds, and their
ratio. ``--profile`` prints where the
engine's time goes (cProfile, by own time) for the last N.

``--instructions`` counts instead of timing: the machine instructions the engine executes per step,
under valgrind's callgrind (which must be installed). Each N is played twice in a process of its
own, for ``E`` and ``2E`` episodes of each game (``E`` = 4 // N, at least 1), with
``PYTHONHASHSEED=0``; the figure is the difference of the two counts over the difference of their
steps, so start-up and imports cancel out. Each play ends with ``os._exit``, as a run's forked
processes end: the interpreter's teardown, which frees every row the memories keep and collects
once more, grows with the steps, and no process of a run pays it (counted until 2026-12-01, it
added 15,862 instructions a step at N = 64, 8 %, and about 2 % at N = 1). SyncVectorEnv's
instructions per step with the same policy are counted the same way, for as many steps. Two counts
of one tree came 0.1 % apart at N = 64 and 0.5 % at N = 1, where CPU time on a shared virtual
machine varies by half between runs: it tells whether a change to the engine's code made a step
cheaper, which a timing on such a machine tells only after many alternating runs. It is not a time:
a cache miss and a numpy call of one instruction count alike, and SyncVectorEnv's code does more
instructions per microsecond than the engine's (at N = 1 about 8,500 against 5,600), so the ratio
of the counts is not the ratio of the times. The plays of each N run two at a time (about 4 minutes
at N = 1 and 8 at N = 64 on the 2-core machine)."""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH.parent)]

from vector_envs import EPISODE_GUESS, gymnasium_rate  # noqa: E402

from palaestra.agent.muscle_process import MuscleProcess  # noqa: E402
from palaestra.core.description.specs import AgentSpec, ClassSpec, EnvironmentSpec  # noqa: E402
from palaestra.core.supervision.hotloop import GC_THRESHOLDS  # noqa: E402
from palaestra.core.wire.channel import Channel  # noqa: E402
from palaestra.environment.environment_process import EnvironmentProcess  # noqa: E402
from palaestra.testing import FakeLink, LocalRounds, brain_link_of, brain_process  # noqa: E402

CARTPOLE = "palaestra.environment.cartpole:CartPole"


class Dropped:
    """The PUSH socket of a row sink to a writer that takes everything at once: the sinks
    shape, encode and batch their rows as in a run, and each batch is dropped."""

    def setsockopt(self, option: int, value: int) -> None:
        pass

    def send(self, data: bytes, flags: int = 0) -> None:
        pass


def unkept(link: Channel) -> Channel:
    """``link`` (a :class:`FakeLink`) without its log of every message: a run's keeps none."""
    assert isinstance(link, FakeLink)
    link.sent = deque(maxlen=1)  # type: ignore[assignment]
    return link


def rounds_of(games: int) -> LocalRounds:
    """A worker of ``games`` CartPoles and one agent, wired in this process."""
    env = EnvironmentProcess(
        "Environment-pole-0",
        environment=EnvironmentSpec(name=CARTPOLE, uid="pole"),
        environment_id=1,
        worker=0,
        seed=1,
        store_endpoint=None,
        lane_seeds=tuple(range(1, games + 1)) if games > 1 else (),
    )
    for world in env.games:
        world.out.rows.socket = Dropped()  # type: ignore[assignment]
    rounds = LocalRounds(env)
    baseline = rounds.start()
    by_uid = {d.uid: d for d in [*baseline.sensors, *baseline.actuators]}
    agent = AgentSpec(
        name="player",
        brain=ClassSpec(name="palaestra.agent.dummy_brain:DummyBrain"),
        muscle=ClassSpec(name="vector_plugins:LinearPolicy"),
        objective=ClassSpec(name="palaestra.agent:DummyObjective"),
        sensors=("pole.state",),
        actuators=("pole.push",),
    )
    muscle = MuscleProcess(
        "Muscle-player-0",
        agent=agent,
        agent_id=1,
        worker=0,
        mode="train",
        seed=3,
        brain_endpoint="",
        store_endpoint=None,
        sensors=[by_uid["pole.state"]],
        actuators=[by_uid["pole.push"]],
    )
    muscle.out.rows.socket = Dropped()  # type: ignore[assignment]
    brain = brain_process(agent, baseline.sensors, baseline.actuators, seed=2)
    rounds.wire(muscle, unkept(brain_link_of(brain)))
    for link in env.links.values():
        unkept(link)
    return rounds


def collector_as_in_a_run() -> None:
    """The garbage collector as each process's hot loop sets it (see
    ``supervision.hotloop.GC_THRESHOLDS``): what is alive now frozen, the run's thresholds."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def engine_cpu(
    games: int, steps: int, profile: cProfile.Profile | None = None
) -> tuple[int, float]:
    """Steps played and CPU microseconds per step of about ``steps`` steps at ``games``."""
    rounds = rounds_of(games)
    episodes = max(1, round(steps / (EPISODE_GUESS * games)))
    collector_as_in_a_run()
    began = time.process_time()
    if profile is not None:
        profile.enable()
    done = rounds.play(episodes)
    if profile is not None:
        profile.disable()
    return done.steps, 1e6 * (time.process_time() - began) / done.steps


def played(kind: str, games: int, amount: int) -> None:
    """Play and print the steps (a process that ``--instructions`` counts): ``engine``,
    ``amount`` episodes of each of ``games`` games; ``sync``, gymnasium's SyncVectorEnv of
    ``games`` CartPoles with the same policy for at least ``amount`` steps."""
    if kind == "sync":
        gc.collect()  # (the collector's counts from here: as the engine's play starts)
        gymnasium_rate(games, amount, vectorized=False)
        print("steps", games * -(-amount // games), flush=True)  # (whole rounds of N)
        return
    rounds = rounds_of(games)
    collector_as_in_a_run()
    print("steps", rounds.play(amount).steps, flush=True)


def counted(kind: str, games: int, amount: int) -> subprocess.Popen[str]:
    """A process of :func:`played` under callgrind."""
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={os.devnull}"]
    command += [sys.executable, __file__, "--play", kind, str(games), str(amount)]
    env = dict(os.environ, PYTHONHASHSEED="0")
    return subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def count_of(process: subprocess.Popen[str]) -> tuple[int, int]:
    """The steps played and the instructions executed by a process of :func:`counted`."""
    out, err = process.communicate(timeout=1800)
    steps = re.search(r"^steps (\d+)$", out, re.M)
    executed = re.search(r"Collected : (\d+)", err)
    if process.returncode != 0 or steps is None or executed is None:
        raise SystemExit(f"the counted play failed ({process.returncode}):\n{err[-3000:]}")
    return int(steps.group(1)), int(executed.group(1))


def per_step(kind: str, games: int, short: int, long: int) -> tuple[int, float]:
    """Steps of the longer of two plays (of ``short`` and ``long``: see :func:`played`), run
    side by side, and the instructions per step between them."""
    plays = counted(kind, games, short), counted(kind, games, long)
    try:
        (steps_short, short_count), (steps_long, long_count) = (count_of(p) for p in plays)
    finally:
        for play in plays:  # (the other of a play that failed is not left running)
            if play.poll() is None:
                play.kill()
                play.wait()
    return steps_long, (long_count - short_count) / (steps_long - steps_short)


def instructions(games: int) -> tuple[int, float, float]:
    """Steps of the engine's longer play, and the instructions per step of the engine and of
    SyncVectorEnv at ``games`` games (see the module's description)."""
    episodes = max(1, 4 // games)
    steps, engine = per_step("engine", games, episodes, 2 * episodes)
    half = steps // 2
    return steps, engine, per_step("sync", games, half, steps)[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--play", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.play:
        played(args.play[0], int(args.play[1]), int(args.play[2]))
        os._exit(0)  # (no teardown: see the module's description)
    if args.instructions:
        if shutil.which("valgrind") is None:
            raise SystemExit("--instructions needs valgrind (Debian: apt-get install valgrind)")
        print(
            f"{'N':>4} {'steps':>7} {'engine instr/step':>18} {'SyncVectorEnv':>14} {'ratio':>6}"
        )
        for games in args.games:
            steps, ours, theirs = instructions(games)
            print(f"{games:>4} {steps:>7} {ours:>18,.0f} {theirs:>14,.0f} {ours / theirs:>6.1f}")
        return
    columns = ("N", 4), ("steps", 7), ("engine µs/step", 15), ("SyncVectorEnv µs/step", 22)
    print(" ".join(f"{name:>{width}}" for name, width in columns), f"{'ratio':>6}")
    for games in args.games:
        engine, sync = [], []
        for _ in range(args.repeat):
            steps, cpu = engine_cpu(games, args.steps)
            engine.append(cpu)
            sync.append(gymnasium_rate(games, steps, vectorized=False)[1])
        ours, theirs = statistics.median(engine), statistics.median(sync)
        print(f"{games:>4} {steps:>7} {ours:>15.1f} {theirs:>22.1f} {ours / theirs:>6.1f}")
    if args.profile:
        profile = cProfile.Profile()
        engine_cpu(args.games[-1], args.steps, profile)
        pstats.Stats(profile).sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    main()
