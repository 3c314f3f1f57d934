"""What going across hosts costs: steps/s per worker with workers on simulated hosts.

    sudo python benchmarks/netns_hosts.py [--hosts K] [--steps N] [--repeat R] [--delays 0,0.5]

K network namespaces (``tests/netns.py``: veth pairs on a bridge, each with an address of its
own) stand for K hosts; ``tc netem`` delays what leaves either end of each host's veth by the
given milliseconds (so a message between a host and the executor's host is that late, a round
trip twice that). First the round trips of one per-step link (a step's message sizes) on its
Unix socket, through gateway and relay across namespaces, and of a plain pyzmq DEALER/ROUTER
pair with CURVE across them (the floor). Then worker ``w`` (its environment and its Muscle)
runs on host ``w % K``, the
Brain, the simulation controllers and the store writer (SQLite) on the executor's host: each
step's Muscle -> Brain round trip crosses hosts (CURVE tcp through a relay and a gateway:
``palaestra.core.wire.netlink``), the environment <-> Muscle one stays on a Unix link. The local
figure is the same run with every process on one host and local links only.

Steady state as in ``benchmarks/run.py``: the environments' steps between their first and last
step (``TimedEnvironment``), per worker and summed, median of ``--repeat`` runs, for
``update_lag`` 0 and 1; every run's store is checked for its rows. Needs root (``ip netns``).
Prints a table and writes ``benchmarks/results/netns_hosts.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(BENCH), str(ROOT)]

import msgspec  # noqa: E402
import run as suite  # noqa: E402  (benchmarks/run.py)
import zmq  # noqa: E402

from palaestra.core.wire.channel import Listener  # noqa: E402
from palaestra.core.wire.netlink import Host, Links, Network  # noqa: E402
from palaestra.core.wire.transport import announce  # noqa: E402
from tests.netns import Hosts, netem_missing, why_not  # noqa: E402

CHILD = """\
import sys
from palaestra.core.description.config import RuntimeConfig
from palaestra.core.supervision.launch import SubprocessLauncher
from palaestra.core.wire.netlink import Host
from palaestra.experiment.executor import execute
from palaestra.experiment.runfile import load_run_file

run_file, store, home, *hosts = sys.argv[1:]
launchers = [
    SubprocessLauncher(prefix=["ip", "netns", "exec", ns], host=ns, address=address)
    for ns, address in (h.split("@") for h in hosts)
]


class ByWorker:
    # worker w's environment and Muscle on host w % K; everything else here
    def launch(self, spec):
        if spec.role not in ("Muscle", "Environment") or not launchers:
            return None
        return launchers[spec.args.worker % len(launchers)].launch(spec)


outcome = execute(
    load_run_file(run_file),
    RuntimeConfig(store_uri=f"sqlite:///{store}"),
    placement=ByWorker() if hosts else None,
    host=Host(name="home", address=home) if hosts else None,
)
print(outcome.exit_code, outcome.message)
sys.exit(outcome.exit_code)
"""


ECHO = """\
import os, sys, msgspec, zmq
from palaestra.core.wire.netlink import Links, Network

network = msgspec.json.decode(sys.stdin.buffer.readline(), type=Network)
endpoint, count, reply = sys.argv[1], int(sys.argv[2]), b"r" * int(sys.argv[3])
stop_r, _ = os.pipe()
links = Links(network, zmq.Context())
link = links.channel(endpoint, "echo", stop_r, lambda: None, "bench")
for _ in range(count):
    link.recv()
    link.send(reply)
link.close()
links.close()
"""


def link_rate(hosts: Hosts, across: bool) -> float:
    """Round trips/s of a per-step link (AgentStep / AgentActions sizes) from a listener on
    the executor's host to a peer in the first namespace: through gateway and relay (CURVE
    tcp) when ``across``, else on the Unix link (the namespaces share the file system)."""
    request, reply = suite.message_sizes()
    home = Network.for_run(Host(name="home", address=hosts.home))
    peer = hosts.hosts[0]
    there = home.on(Host(name=peer.ns if across else "home", address=peer.address))
    stop_r, stop_w = os.pipe()
    links = Links(home, zmq.Context())
    with tempfile.TemporaryDirectory(prefix="palaestra-links-") as tmp:
        listener = Listener(f"ipc://{tmp}/link")
        endpoint = announce(listener.endpoint, "home", links.listen(listener))
        count = suite.FLOOR_WARMUP + suite.FLOOR_TRIPS
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        echo = subprocess.Popen(
            [*peer.prefix(), sys.executable, "-c", ECHO, endpoint, str(count), str(reply)],
            stdin=subprocess.PIPE,
            env=env,
        )
        assert echo.stdin is not None
        echo.stdin.write(msgspec.json.encode(there) + b"\n")
        echo.stdin.close()

        def never() -> None:
            raise RuntimeError("never stopped")

        try:
            link = listener.accept(stop_r, never)
            assert link is not None
            rate = suite.trips_per_second(link.send, link.recv, b"q" * request)
            link.close()
        finally:
            echo.wait(30)
            listener.close()
            links.close()
            os.close(stop_r)
            os.close(stop_w)
    return rate


ZMQ_ECHO = """\
import sys, zmq
ctx = zmq.Context()
sock = ctx.socket(zmq.DEALER)
sock.curve_serverkey = sys.argv[2].encode()
sock.curve_publickey, sock.curve_secretkey = zmq.curve_keypair()
sock.connect(sys.argv[1])
sock.send(b"hello")
for _ in range(int(sys.argv[3])):
    sock.send(sock.recv())
sock.close()
ctx.term()
"""


def zmq_rate(hosts: Hosts) -> float:
    """The floor across hosts: round trips/s of a plain pyzmq ROUTER on the executor's host
    and a DEALER in the first namespace, CURVE tcp, the same message sizes."""
    request, _ = suite.message_sizes()
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    public, secret = zmq.curve_keypair()
    router.curve_server = True
    router.curve_secretkey = secret
    router.bind(f"tcp://{hosts.home}:*")
    endpoint = router.getsockopt_string(zmq.LAST_ENDPOINT)
    count = suite.FLOOR_WARMUP + suite.FLOOR_TRIPS
    echo = subprocess.Popen(
        [*hosts.hosts[0].prefix(), sys.executable, "-c", ZMQ_ECHO, endpoint, public.decode()]
        + [str(count)]
    )
    try:
        peer, _ = router.recv_multipart()
        rate = suite.trips_per_second(
            lambda data: router.send_multipart([peer, data]),
            router.recv_multipart,
            b"q" * request,
        )
    finally:
        echo.wait(30)
        router.close(linger=0)
        ctx.term()
    return rate


def one_run(spec: suite.RunSpec, hosts: Hosts | None) -> dict[str, Any]:
    """One timed run; ``hosts`` None: every process on this host, local links."""
    with tempfile.TemporaryDirectory(prefix="palaestra-netns-") as name:
        tmp = Path(name)
        os.chmod(tmp, 0o755)
        run_file = tmp / "run.yml"
        run_file.write_text(suite.run_file_text(spec, tmp / "timing"))
        (tmp / "child.py").write_text(CHILD)
        args = [sys.executable, str(tmp / "child.py"), str(run_file), str(tmp / "store.db")]
        if hosts is None:
            args.append("local")
        else:
            args += [hosts.home, *(f"{h.ns}@{h.address}" for h in hosts.hosts)]
        env = suite.child_env()
        env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(ROOT)])
        began = time.time()
        proc = subprocess.run(args, cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise suite.RunFailed(f"exit {proc.returncode}: {proc.stderr[-2000:]}{proc.stdout}")
        suite.check_store(tmp / "store.db", spec)
        timings = suite.read_timings(tmp, spec)
        per_worker = [(t["steps"] - 1) / (t["last"] - t["first"]) for t in timings]
        return {
            "wall": time.time() - began,
            "total": suite.steady_rate(timings),
            "per_worker": statistics.median(per_worker),
        }


def measure(
    spec: suite.RunSpec, hosts: Hosts | None, repeat: int
) -> tuple[float, float, list[float]]:
    runs = [one_run(spec, hosts) for _ in range(repeat)]
    per_worker = [r["per_worker"] for r in runs]
    return statistics.median(per_worker), statistics.median(r["total"] for r in runs), per_worker


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=2, help="simulated hosts (K)")
    parser.add_argument("--workers", type=int, help="workers (default: K)")
    parser.add_argument("--steps", type=int, default=3000, help="steps per worker")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--delays", default="0,0.5", help="netem delays in ms, comma-separated")
    args = parser.parse_args()
    if (reason := why_not()) is not None:
        sys.exit(f"cannot make network namespaces here: {reason}")
    workers = args.workers or args.hosts
    delays = [float(d) for d in args.delays.split(",")]
    if any(delays) and (missing := netem_missing()) is not None:
        print(f"no added delays on this kernel: {missing}; measuring 0 ms only", flush=True)
        delays = [0.0]
    rows: list[dict[str, Any]] = []
    trips: dict[str, float] = {}
    with Hosts(1) as hosts:
        for where, across in (("unix link", False), ("gateway and relay", True)):
            trips[where] = statistics.median(link_rate(hosts, across) for _ in range(args.repeat))
            print(f"link round trips, {where}: {trips[where]:,.0f}/s", flush=True)
    for lag in (0, 1):
        spec = suite.RunSpec(args.steps, workers=workers, lag=lag)
        local, local_total, local_runs = measure(spec, None, args.repeat)
        rows.append(
            {
                "lag": lag,
                "where": "one host",
                "delay_ms": None,
                "per_worker": local,
                "total": local_total,
                "runs": local_runs,
                "ratio": 1.0,
            }
        )
        for delay in delays:
            with Hosts(args.hosts, delay_ms=delay) as hosts:
                per_worker, total, runs = measure(spec, hosts, args.repeat)
            rows.append(
                {
                    "lag": lag,
                    "where": f"{args.hosts} hosts",
                    "delay_ms": delay,
                    "per_worker": per_worker,
                    "total": total,
                    "runs": runs,
                    "ratio": per_worker / local,
                }
            )
            print(f"lag {lag} delay {delay} ms: {per_worker:,.0f} steps/s per worker", flush=True)
    print(
        f"\n{workers} workers, {args.steps} steps each, median of {args.repeat}; "
        f"{os.cpu_count()} cores, Python {platform.python_version()}"
    )
    head = ("update_lag", "where", "delay", "per worker", "all", "ratio")
    print("{:>10} {:>10} {:>8} {:>12} {:>10} {:>6}".format(*head))
    for row in rows:
        delay = "-" if row["delay_ms"] is None else f"{row['delay_ms']:g} ms"
        print(
            f"{row['lag']:>10} {row['where']:>10} {delay:>8} {row['per_worker']:>12,.0f} "
            f"{row['total']:>10,.0f} {row['ratio']:>6.2f}"
        )
    out = BENCH / "results"
    out.mkdir(exist_ok=True)
    result = {
        "hosts": args.hosts,
        "workers": workers,
        "steps": args.steps,
        "repeat": args.repeat,
        "cores": os.cpu_count(),
        "rows": rows,
    }
    (out / "netns_hosts.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
