"""A run's processes on a Ray cluster (runtime config ``backend: ray``): the placement.

Every process of the run (store writer, simulation controllers, environments, Brains, Muscles)
gets a bundle of one placement group (strategy and CPUs from ``run_config.placement``, an
agent's Brain and Muscles from its ``resources``: see :mod:`.runfile_placement`), one bundle
per process name, reserved for the whole run. In each bundle a :class:`ChildHost` actor runs
the process as a subprocess on its node, the command a launched child runs (``python -m
palaestra.core.supervision.remote_child``, see :mod:`palaestra.core.supervision.launch`): the
executor's :class:`RayChild` passes the pickled spec through Ray's control plane, the actor
writes it to the child's stdin and holds that pipe for as long as the actor lives, forwards
signals and reports the child's end. A process of phase 1 reuses the actor of its namesake of
phase 0.

Before any process starts, the cluster's nodes are compared with what the run asks (exit 2,
saying what is missing), the group is reserved and its actors started. A node is a host by
its address: processes on the executor's host talk over Unix links as in a local run; when the
group put processes on other hosts, the run gets a :class:`~palaestra.core.wire.netlink.Network`
(CURVE keys made for the run) and each process binds TCP on its node's address, so Ray only
places and supervises processes while palaestra's own links carry the data
(:mod:`palaestra.core.wire.netlink`). At the run's end, whatever the end, the actors are killed and
the group released.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from palaestra.core.description import names
from palaestra.core.description.specs import RunSpec
from palaestra.core.errors import EXIT_STORE_UNUSABLE, InvalidInputError, PalaestraError
from palaestra.core.supervision.launch import (
    ENTRY,
    Launched,
    child_environment,
    encode_spec,
    on_host,
)
from palaestra.core.wire.netlink import Host, Network
from palaestra.experiment.ray_cluster import session
from palaestra.experiment.runtime_config import RuntimeConfig
from palaestra.experiment.store_client import store_enabled

if TYPE_CHECKING:
    from palaestra.core.supervision.processes import ChildSpec

LOG = logging.getLogger(__name__)

__all__ = [
    "ChildHost",
    "Node",
    "PlacementUnavailableError",
    "RayChild",
    "RayPlacement",
    "Slot",
    "check_fits",
    "plan",
    "ray_placement",
    "run_network",
]

_HOST_CONCURRENCY = 8
"""Threads of a :class:`ChildHost`: a child's ``wait`` blocks one while signals come in."""
_START_WAIT = 120.0
"""Seconds a :class:`ChildHost` waits for a child's start before it answers a call about it."""
_NODE_DEATH_WAIT = 3.0
"""Seconds to let the cluster mark a node dead after one of its actors died."""
UNNICED = {"RAY_worker_niceness": "0"}
"""The environment of a Ray actor that runs a run's processes (:class:`ChildHost`, a sweep's
run host): Ray's workers lower their own priority by 15 niceness steps, which the actor's
children would inherit (a few per cent of a CPU each on a busy node); the run's processes are
not background work, so the actor keeps its node's Ray niceness, as Ray's job supervisor does."""


def _host_options() -> dict[str, Any]:
    """What every :class:`ChildHost` actor is started with."""
    return {
        "max_concurrency": _HOST_CONCURRENCY,
        "max_restarts": 0,
        "runtime_env": {"env_vars": dict(UNNICED)},
    }


@dataclass(frozen=True)
class Slot:
    """One process of the run, as the placement group reserves for it."""

    name: str
    role: str
    cpus: float
    gpus: float = 0.0

    def bundle(self) -> dict[str, float]:
        return {"CPU": self.cpus, **({"GPU": self.gpus} if self.gpus else {})}


@dataclass(frozen=True)
class Node:
    """A live node of the cluster and its total resources."""

    node_id: str
    ip: str
    cpus: float
    gpus: float

    def __str__(self) -> str:
        return f"{self.ip} (node {self.node_id[:8]})"


class PlacementUnavailableError(PalaestraError):
    """The cluster did not grant the run's placement group in time (its resources are taken
    by other work): exit 3, as for a service that cannot be used."""

    exit_code = EXIT_STORE_UNUSABLE


def plan(run: RunSpec, store_uri: str) -> list[Slot]:
    """The run's processes, one slot per name over all phases (a name's largest ask)."""
    default = run.placement.num_cpus
    slots: dict[str, Slot] = {}

    def add(name: str, role: str, cpus: float | None = None, gpus: float = 0.0) -> None:
        slot = Slot(name, role, default if cpus is None else cpus, gpus)
        old = slots.get(name)
        if old is not None:
            slot = Slot(name, role, max(old.cpus, slot.cpus), max(old.gpus, slot.gpus))
        slots[name] = slot

    if store_enabled(store_uri):
        add(names.WRITER, "StoreWriter")
    for phase in run.phases:
        workers = range(phase.config.worker)
        for worker in workers:
            add(names.controller(worker), "SimulationController")
            for env in phase.environments:
                add(names.environment(env.uid, worker), "Environment")
        for agent in phase.agents:
            brain, muscle = agent.brain_resources, agent.muscle_resources
            add(names.brain(agent.name), "Brain", *_amounts(brain))
            for worker in workers:
                add(names.muscle(agent.name, worker), "Muscle", *_amounts(muscle))
    return list(slots.values())


def _amounts(resources: Any) -> tuple[float | None, float]:
    return (None, 0.0) if resources is None else (resources.num_cpus, resources.num_gpus)


def check_fits(slots: Sequence[Slot], strategy: str, nodes: Sequence[Node]) -> None:
    """Refuse (exit 2) a placement the cluster's nodes cannot hold, saying what is missing.

    Raises:
        InvalidInputError: More CPUs or GPUs than the cluster has, a process larger than every
            node, or a STRICT_ strategy the nodes cannot follow.
    """
    problems = [*_totals_missing(slots, nodes), *_too_large(slots, strategy, nodes)]
    if problems:
        listing = ", ".join(f"{n}: {n.cpus:g} CPU, {n.gpus:g} GPU" for n in nodes) or "no nodes"
        raise InvalidInputError(
            "the Ray cluster cannot hold this run's processes: "
            + "; ".join(problems)
            + f". The cluster: {listing}. Lower run_config.placement.num_cpus (each "
            "process's default) or an agent's resources, change run_config.placement.strategy, "
            "or add nodes."
        )


def _totals_missing(slots: Sequence[Slot], nodes: Sequence[Node]) -> list[str]:
    cpus, gpus = sum(s.cpus for s in slots), sum(s.gpus for s in slots)
    have_cpus, have_gpus = sum(n.cpus for n in nodes), sum(n.gpus for n in nodes)
    problems: list[str] = []
    if cpus > have_cpus:
        problems.append(
            f"{cpus:g} CPUs asked, the cluster has {have_cpus:g}: {cpus - have_cpus:g} missing"
        )
    if gpus > have_gpus:
        askers = ", ".join(f"{s.name} ({s.gpus:g})" for s in slots if s.gpus)
        problems.append(
            f"{gpus:g} GPUs asked ({askers}), the cluster has {have_gpus:g}: "
            f"{gpus - have_gpus:g} missing"
        )
    return problems


def _too_large(slots: Sequence[Slot], strategy: str, nodes: Sequence[Node]) -> list[str]:
    """Processes no node can hold, and a STRICT_ strategy the nodes cannot follow."""

    def fits(cpus: float, gpus: float) -> bool:
        return any(cpus <= n.cpus and gpus <= n.gpus for n in nodes)

    problems = [
        f"{s.name} asks {s.cpus:g} CPU and {s.gpus:g} GPU on one node; no node has that much"
        for s in slots
        if not fits(s.cpus, s.gpus)
    ]
    cpus, gpus = sum(s.cpus for s in slots), sum(s.gpus for s in slots)
    if strategy == "STRICT_PACK" and not fits(cpus, gpus):
        problems.append(f"STRICT_PACK needs {cpus:g} CPU and {gpus:g} GPU on one node")
    if strategy == "STRICT_SPREAD" and len(slots) > len(nodes):
        problems.append(f"STRICT_SPREAD needs {len(slots)} nodes, one per process")
    return problems


def run_network(addresses: Sequence[str], executor: str) -> Network | None:
    """The network of a run whose processes are on the nodes of ``addresses``, the executor on
    ``executor``'s: None when every process shares the executor's host (every link a Unix
    one), else one with fresh CURVE keys, seen from the executor's host."""
    if all(address == executor for address in addresses):
        return None
    return Network.for_run(Host(name=executor, address=executor))


class ChildHost:
    """The Ray actor that runs a run's processes on its node, one after another (created
    through ``ray.remote`` at run time; its methods run on the node)."""

    def __init__(self) -> None:
        ray: Any = importlib.import_module("ray")  # on a node of the cluster: installed
        self.node_id: str = ray.get_runtime_context().get_node_id()
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self._changed = threading.Condition()

    def where(self) -> str:
        """The node this actor runs on (its id); returns once the actor has started."""
        return self.node_id

    def start(self, token: int, spec: bytes, env: dict[str, str], cwd: str) -> int:
        """Start a child with ``spec`` on its stdin, kept open; returns its pid."""
        environment = dict(os.environ)
        paths = [env.pop("PYTHONPATH", ""), environment.get("PYTHONPATH", "")]
        environment.update(env)
        environment["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        popen = subprocess.Popen(
            [sys.executable, *ENTRY],
            stdin=subprocess.PIPE,
            env=environment,
            cwd=cwd if os.path.isdir(cwd) else None,
        )
        assert popen.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # it ended at once; its exit code tells
            popen.stdin.write(spec)
            popen.stdin.flush()  # and kept open: its end is this actor's death
        with self._changed:
            self._children[token] = popen
            self._changed.notify_all()
        return popen.pid

    def _child(self, token: int) -> subprocess.Popen[bytes] | None:
        with self._changed:
            self._changed.wait_for(lambda: token in self._children, _START_WAIT)
            return self._children.get(token)

    def wait(self, token: int) -> int:
        """The child's exit code, once it ended (negative: the signal that killed it)."""
        popen = self._child(token)
        return -signal.SIGKILL if popen is None else popen.wait()

    def signal(self, token: int, signum: int) -> None:
        popen = self._child(token)
        if popen is not None and popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                popen.send_signal(signum)

    def close(self, token: int) -> None:
        """Forget an ended child, closing its stdin."""
        with self._changed:
            popen = self._children.pop(token, None)
        if popen is not None and popen.stdin is not None:
            with contextlib.suppress(OSError):
                popen.stdin.close()


class RayChild:
    """A :class:`~palaestra.core.supervision.launch.Launched` child run by a :class:`ChildHost`
    actor.

    Its sentinel is a pipe that a watcher thread closes once the actor reports the child's
    end, or once the actor died with its node (exit code -SIGKILL; ``host`` then says the node
    was lost and which of the run's processes ran there).
    """

    def __init__(self, placement: RayPlacement, spec: ChildSpec, actor: Any, node: Node) -> None:
        self.name = spec.name
        self.host = str(node)
        self.node = node
        self._placement = placement
        self._spec = spec
        self._actor = actor
        self._token = placement.next_token()
        self._code: int | None = None
        self._read, self._write = os.pipe()
        self._watcher: threading.Thread | None = None

    @property
    def pid(self) -> int | None:
        return None  # a process of its node, not of this host's executor

    @property
    def exitcode(self) -> int | None:
        return self._code

    @property
    def sentinel(self) -> int:
        return self._read

    def start(self) -> None:
        placement = self._placement
        started = self._actor.start.remote(
            self._token, encode_spec(self._spec), placement.environment, os.getcwd()
        )
        ended = self._actor.wait.remote(self._token)
        self._watcher = threading.Thread(
            target=self._watch, args=(started, ended), name=f"ray-{self.name}", daemon=True
        )
        placement.track(self, running=True)
        self._watcher.start()

    def _watch(self, started: Any, ended: Any) -> None:
        ray = self._placement.ray
        try:
            ray.get(started)
            code = ray.get(ended)
        except Exception as exc:  # noqa: BLE001 - the actor or its node died: the child too
            self.host = self._placement.describe_loss(self, exc)
            code = -signal.SIGKILL
        self._code = code
        self._placement.track(self, running=False)
        os.close(self._write)

    def signal(self, signum: int) -> None:
        if self._code is None:
            self._actor.signal.remote(self._token, signum)

    def join(self, timeout: float) -> None:
        if self._watcher is not None:
            self._watcher.join(timeout)

    held: tuple[int, ...] = ()  # (its liveness is the actor's)

    def close_sentinel(self) -> None:
        if self._read >= 0:
            os.close(self._read)
            self._read = -1
            self._actor.close.remote(self._token)


class RayPlacement:
    """The :class:`~palaestra.core.supervision.launch.Placement` of a run on a connected Ray
    cluster.

    :meth:`reserve` before the run, :meth:`release` after it (see :func:`ray_placement`).
    """

    def __init__(self, ray: Any, run: RunSpec, config: RuntimeConfig) -> None:
        self.ray = ray
        self.run = run
        self.config = config
        self.slots = plan(run, config.store_uri)
        self.environment = _forwarded_environment()
        self.running: set[RayChild] = set()
        self._group: Any = None
        self._actors: dict[str, Any] = {}
        self.nodes: dict[str, Node] = {}
        """Where each slot's actor runs, by process name."""
        self._extra: list[Any] = []
        self.network: Network | None = None
        """The run's links across hosts, once reserved (None: every process on this host)."""
        self._lock = threading.Lock()
        self._tokens = 0

    def track(self, child: RayChild, *, running: bool) -> None:
        """Note a child as running, or no longer (called from watcher threads too)."""
        with self._lock:
            if running:
                self.running.add(child)
            else:
                self.running.discard(child)

    def next_token(self) -> int:
        with self._lock:
            self._tokens += 1
            return self._tokens

    def cluster_nodes(self) -> list[Node]:
        return [
            Node(
                node_id=n["NodeID"],
                ip=n["NodeManagerAddress"],
                cpus=float(n["Resources"].get("CPU", 0)),
                gpus=float(n["Resources"].get("GPU", 0)),
            )
            for n in self.ray.nodes()
            if n.get("Alive")
        ]

    def reserve(self, timeout: float) -> None:
        """Check the cluster can hold the run, reserve its group and start its actors (each
        slot's, on its node) within ``timeout`` s; set up the run's network if they span hosts."""
        ray = self.ray
        from ray.util import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        nodes = {n.node_id: n for n in self.cluster_nodes()}
        strategy = self.run.placement.strategy
        check_fits(self.slots, strategy, list(nodes.values()))
        self._group = placement_group(
            [s.bundle() for s in self.slots], strategy=strategy, name=f"palaestra-{self.run.uid}"
        )
        try:
            ray.get(self._group.ready(), timeout=timeout)
        except ray.exceptions.GetTimeoutError:
            raise PlacementUnavailableError(
                f"the Ray cluster did not grant the run's placement group "
                f"({len(self.slots)} processes, strategy {strategy}) within {timeout:g} s "
                "(start_timeout): its resources are taken by other work. Available now: "
                f"{ray.available_resources()}."
            ) from None
        host = ray.remote(ChildHost)
        for index, slot in enumerate(self.slots):
            self._actors[slot.name] = host.options(
                num_cpus=slot.cpus,
                num_gpus=slot.gpus,
                **_host_options(),
                scheduling_strategy=PlacementGroupSchedulingStrategy(
                    self._group, placement_group_bundle_index=index
                ),
            ).remote()
        where = ray.get([a.where.remote() for a in self._actors.values()], timeout=timeout)
        for name, node_id in zip(self._actors, where, strict=True):
            self.nodes[name] = nodes.get(node_id) or Node(node_id, "?", 0, 0)
            LOG.info("placed %s on %s", name, self.nodes[name])
        executor = nodes.get(ray.get_runtime_context().get_node_id())
        LOG.info("placed the executor (Ray's driver) on %s", executor)
        home = executor.ip if executor else str(ray.util.get_node_ip_address())
        self.network = run_network([n.ip for n in self.nodes.values()], home)
        if self.network is not None:
            hosts = sorted({n.ip for n in self.nodes.values()} - {home})
            LOG.info(
                "the run crosses hosts (%s besides %s): its links between them are CURVE tcp",
                ", ".join(hosts),
                home,
            )

    def launch(self, spec: ChildSpec) -> Launched | None:
        actor = self._actors.get(spec.name)
        node = self.nodes.get(spec.name)
        if actor is None or node is None:  # a process the plan did not foresee: no bundle
            actor, node = self._spare(spec.name)
        spec = on_host(spec, node.ip, node.ip)  # across hosts: it binds TCP on its node's
        return RayChild(self, spec, actor, node)

    def _spare(self, name: str) -> tuple[Any, Node]:
        """An actor in the group that reserves nothing, for a process without a slot."""
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        actor = (
            self.ray.remote(ChildHost)
            .options(
                num_cpus=0,
                **_host_options(),
                scheduling_strategy=PlacementGroupSchedulingStrategy(self._group),
            )
            .remote()
        )
        self._extra.append(actor)
        node_id = self.ray.get(actor.where.remote(), timeout=self.config.start_timeout)
        node = {n.node_id: n for n in self.cluster_nodes()}.get(node_id, Node(node_id, "?", 0, 0))
        self.nodes[name] = node
        return actor, node

    def describe_loss(self, child: RayChild, exc: BaseException) -> str:
        """``child``'s host, after its actor died: whether its node was lost, and which of the
        run's processes were there."""
        node = child.node
        gone = _wait_until(lambda: node.node_id not in {n.node_id for n in self.cluster_nodes()})
        with self._lock:
            others = list(self.running)
        there = ", ".join(sorted({c.name for c in [child, *others] if c.node == node}))
        where = f"{node.ip} (node {node.node_id[:8]}"
        if gone:
            return f"{where}, lost with the run's processes on it: {there})"
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"{where}, whose Ray actor died: {first}; the run's processes there: {there})"

    def release(self) -> None:
        """Kill the actors (their children see stdin's end) and remove the group."""
        for actor in [*self._actors.values(), *self._extra]:
            with contextlib.suppress(Exception):
                self.ray.kill(actor, no_restart=True)
        self._actors.clear()
        self._extra.clear()
        if self._group is not None:
            from ray.util import remove_placement_group

            with contextlib.suppress(Exception):
                remove_placement_group(self._group)
            self._group = None


def _wait_until(condition: Callable[[], bool], timeout: float = _NODE_DEATH_WAIT) -> bool:
    for _ in range(round(timeout / 0.2)):
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def _forwarded_environment() -> dict[str, str]:
    """What a child on a node takes from the executor's environment: ``PALAESTRA_*``,
    ``PYTHONWARNINGS`` and the import path (the executor's ``PYTHONPATH`` and the run files'
    directories), ahead of its node's own."""
    env = child_environment()
    kept = {k: v for k, v in env.items() if k.startswith("PALAESTRA_") or k == "PYTHONWARNINGS"}
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    entries = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    for entry in sys.path:
        real = os.path.realpath(entry) if entry else ""
        if real and os.path.isdir(real) and not any(real.startswith(p) for p in prefixes):
            entries.append(real)
    kept["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(entries))
    return kept


@contextlib.contextmanager
def ray_placement(run: RunSpec, config: RuntimeConfig) -> Iterator[RayPlacement]:
    """With ``backend: ray``: the run's placement on the cluster of ``config.ray_address``
    (a local instance if it is empty, with this machine's CPUs or as many as the run's
    processes reserve), reserved before the block and released after it.

    Raises:
        InvalidInputError: SQLite store, no ``palaestra[ray]``, or a placement the cluster
            cannot hold (exit 2), before any process of the run starts.
        ClusterUnreachableError: ``ray_address`` cannot be reached (exit 3).
        PlacementUnavailableError: The cluster did not grant the placement in time (exit 3).
    """
    cpus = None  # a cluster's own; a local instance's: this machine's, or what the run asks
    if not config.ray_address.strip():
        asked = math.ceil(sum(s.cpus for s in plan(run, config.store_uri)))
        cpus = max(os.cpu_count() or 1, asked)
    with session(config, num_cpus=cpus) as ray:  # (the backend checked first)
        placement = RayPlacement(ray, run, config)
        try:
            placement.reserve(config.start_timeout)
            yield placement
        finally:
            placement.release()
