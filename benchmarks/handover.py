"""What handing a message to another process costs: on another CPU, and on the same CPU.

    python benchmarks/handover.py [--messages 20000] [--repeat 5] [--size 200] [--spin-us 200]

Two processes pass a message of ``--size`` bytes back and forth over a Unix SOCK_SEQPACKET
socket pair (the transport of palaestra's per-step links, :mod:`palaestra.core.wire.channel`),
each waiting for the other's as a link does (its ``Poller``): pinned to two different CPUs or
both to the same CPU, sleeping in ``poll`` at once or after spinning ``--spin-us`` (the
runtime config's ``spin_us``). Each figure is the median of ``--repeat`` rounds (the
placements interleaved): wall microseconds per message and CPU microseconds per message (both
processes' user and system time over the messages both sent). This is the cost
``cpu_affinity: worker`` and ``spin_us`` avoid (see :mod:`palaestra.core.supervision.affinity`).
Prints a table and writes JSON to benchmarks/results/handover.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import select
import socket
import statistics
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from palaestra.core.description.limits import SPIN_US  # noqa: E402
from palaestra.core.wire.channel import Poller  # noqa: E402


def rally(messages: int, size: int, cpus: tuple[int, int], spin: float) -> tuple[float, float]:
    """``messages`` messages passed between two processes on ``cpus``, each waiting as a link
    waits (``spin``: seconds it polls before it sleeps, 0: it sleeps at once); wall and CPU
    microseconds per message."""
    mask = os.sched_getaffinity(0)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    payload = b"x" * size
    half = messages // 2
    child = os.fork()
    if child == 0:  # the other side: answer each message
        ours.close()
        os.sched_setaffinity(0, {cpus[1]})
        waiting = Poller([(theirs.fileno(), select.POLLIN)], spin)
        for _ in range(half):
            waiting.wait()
            theirs.recv(65536)
            theirs.send(payload)
        os._exit(0)
    theirs.close()
    os.sched_setaffinity(0, {cpus[0]})
    waiting = Poller([(ours.fileno(), select.POLLIN)], spin)
    before = os.times()
    began = time.perf_counter()
    for _ in range(half):
        ours.send(payload)
        waiting.wait()
        ours.recv(65536)
    wall = time.perf_counter() - began
    os.waitpid(child, 0)
    after = os.times()
    ours.close()
    os.sched_setaffinity(0, mask)
    spent = sum(after[:4]) - sum(before[:4])  # ours and the waited-for child's
    return 1e6 * wall / (2 * half), 1e6 * spent / (2 * half)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--spin-us", type=float, default=SPIN_US, help="the links' spin")
    args = parser.parse_args()
    available = sorted(os.sched_getaffinity(0))
    if len(available) < 2:
        sys.exit("needs two CPUs")
    spin = args.spin_us * 1e-6
    placements = {
        "other CPU": ((available[0], available[1]), 0.0),
        "same CPU": ((available[0],) * 2, 0.0),
        "other CPU, spin": ((available[0], available[1]), spin),
        "same CPU, spin": ((available[0],) * 2, spin),
    }
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in placements}
    for _ in range(args.repeat):
        for name, (cpus, waits) in placements.items():
            figures[name].append(rally(args.messages, args.size, (cpus[0], cpus[1]), waits))
    results = {
        name: {
            "wall_us": statistics.median(w for w, _ in runs),
            "cpu_us": statistics.median(c for _, c in runs),
            "all": runs,
        }
        for name, runs in figures.items()
    }
    print(f"{'placement':<16} {'wall µs/message':>16} {'CPU µs/message':>15}")
    for name, r in results.items():
        print(f"{name:<16} {r['wall_us']:>16.1f} {r['cpu_us']:>15.1f}")
    other, same = results["other CPU"], results["same CPU"]
    print(
        f"another CPU costs {other['cpu_us'] / same['cpu_us']:.1f} x the CPU and "
        f"{other['wall_us'] / same['wall_us']:.1f} x the time of the same CPU; with the links' "
        f"spin ({args.spin_us:g} µs) "
        f"{results['other CPU, spin']['cpu_us'] / same['cpu_us']:.1f} x and "
        f"{results['other CPU, spin']['wall_us'] / same['wall_us']:.1f} x"
    )
    out = BENCH / "results" / "handover.json"
    out.parent.mkdir(exist_ok=True)
    meta = {
        "python": platform.python_version(),
        "cpus": available,
        "load": os.getloadavg(),
        "messages": args.messages,
        "size": args.size,
        "repeat": args.repeat,
        "spin_us": args.spin_us,
    }
    out.write_text(json.dumps({"meta": meta, "results": results}, indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
