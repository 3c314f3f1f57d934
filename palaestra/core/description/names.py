"""The names of a run's processes: the one place that formats them.

A process's name is its ZMQ identity, its title (``palaestra[<name>]``), the producer name of
the rows it sends the store, and the stem of its ipc endpoints; the supervisor, the store's
flush and the peers that wait on it must all agree, so every one of them asks here.
"""

from __future__ import annotations

EXECUTOR = "Executor"
"""The executor's name; while it runs an instance its title is followed by the instance's uid
(``palaestra[Executor] <uid>``: ``experiment-list`` and ``experiment-resume`` tell a stopped
executor from one that is gone by it)."""
EXPERIMENT_RUN = "ExperimentRun"
WRITER = "StoreWriter"


def brain(agent: str) -> str:
    """The Brain of ``agent``."""
    return f"Brain-{agent}"


def muscle(agent: str, worker: int) -> str:
    """The Muscle of ``agent`` in rollout worker ``worker``."""
    return f"Muscle-{agent}-{worker}"


def environment(uid: str, worker: int) -> str:
    """The process of environment ``uid`` in rollout worker ``worker``."""
    return f"Environment-{uid}-{worker}"


def controller(worker: int) -> str:
    """The simulation controller of rollout worker ``worker``."""
    return f"SimulationController-{worker}"


def agent_conductor(agent: str) -> str:
    return f"AgentConductor-{agent}"


def environment_conductor(uid: str) -> str:
    return f"EnvironmentConductor-{uid}"


def endpoint(process: str, role: str) -> str:
    """The stem of the ipc endpoint ``process`` binds for ``role`` (``brain``, ``env``...)."""
    return f"{process}-{role}"
