"""The recorded steps an agent's ``replay`` names, read from the store for the executor.

The store writer answers a :class:`~palaestra.core.wire.messages.StoreFindReplay` with
:func:`find_replay`: the agent's ``muscle_actions`` in that phase of that run instance, one
:class:`~palaestra.core.wire.messages.RecordedSteps` per worker, and the sensor and actuator uids
the recorded agent had, so that the executor can check them against the agent that learns.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from palaestra.core.wire import messages as m
from palaestra.store import rows


def find_replay(engine: Engine, request: m.StoreFindReplay) -> m.StoreReplay:
    """The recorded steps ``request`` names, or a :class:`StoreReplay` whose ``problem`` says
    which of run, instance, phase and agent the store does not have."""
    run, phase, agent = request.run_uid, request.phase, request.agent
    instance = request.instance
    if instance is not None and request.continued:
        instance = rows.Continued(instance)
    try:
        agents = rows.agents(run, phase=phase, store_uri=engine, instance=instance)
    except rows.UnknownRunError as exc:
        return m.StoreReplay(problem=str(exc))
    found = [a for a in agents if a["agent"] == agent]
    if not found:
        return m.StoreReplay(
            problem=_missing_agent(engine, request, sorted(a["agent"] for a in agents))
        )
    config: dict[str, Any] = found[0]["config"] or {}
    steps = rows.muscle_actions(
        run,
        phase=phase,
        agent=agent,
        episode=0 if request.first_episode else None,
        store_uri=engine,
        instance=instance,
    )
    if not steps:
        return m.StoreReplay(
            problem=f"agent '{agent}' in phase {phase} of run '{run}' recorded no steps"
        )
    return m.StoreReplay(
        sensors=list(config.get("sensors", [])),
        actuators=list(config.get("actuators", [])),
        steps=_by_worker(steps),
    )


def _by_worker(steps: rows.Rows) -> list[m.RecordedSteps]:
    """The ``muscle_actions`` rows found as each worker's recorded steps, by worker."""
    by_worker: dict[int, list[m.MuscleActionRow]] = {}
    for row in steps:
        by_worker.setdefault(int(row["worker"]), []).append(
            m.MuscleActionRow(
                int(row["episode"]),
                int(row["step"]),
                row["sensor_readings"] or {},
                row["actuator_setpoints"] or {},
                row["rewards"] or {},
                row["objective"],
                bool(row["done"]),
            )
        )
    return [
        m.RecordedSteps(source="", worker=worker, rows=found_rows)
        for worker, found_rows in sorted(by_worker.items())
    ]


def _missing_agent(engine: Engine, request: m.StoreFindReplay, agents: list[str]) -> str:
    """Why the agent was not found: the run has no such phase, or no such agent in it."""
    run, phase = request.run_uid, request.phase
    if agents:
        return (
            f"run '{run}' has no agent '{request.agent}' in phase {phase}; "
            f"its agents there: {', '.join(agents)}"
        )
    phases = rows.phases(run, store_uri=engine, instance=request.instance)
    known = ", ".join(f"{p['phase']} ({p['name']})" for p in phases) or "none"
    return f"run '{run}' has no phase {phase}; its phases: {known}"
