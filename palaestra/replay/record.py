"""Reading what a replay needs from the store: one phase of a run instance, grouped by step.

A :class:`PhaseRecord` holds the environments of the phase as they were built (class, params,
one seed per worker; the run file's ``reward`` and ``state_transformer`` of each), the turn
policy of its simulation controller, its agents with the sensors they read, and its recorded
rows: ``world_states`` by environment, worker and episode, ``muscle_actions`` by agent, worker
and episode. All reads go through :mod:`palaestra.store.rows`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from palaestra.core.description.loading import load_class
from palaestra.core.description.specs import EnvironmentSpec, PhaseSpec
from palaestra.core.errors import InvalidInputError, RunFileError, did_you_mean
from palaestra.core.turns import AllAct, TurnPolicy
from palaestra.experiment.runfile import load_run_text
from palaestra.store import rows
from palaestra.store.rows import Row, StoreURI


class UnknownPartError(InvalidInputError, LookupError):
    """The phase, episode or worker asked for is not in the record."""


class RecordingGapError(InvalidInputError):
    """The episode asked for lies at or after a gap in the record (recording was paused)."""


class IncompleteRecordError(InvalidInputError):
    """The phase did not record every step (``record: {every: N}`` or ``record: episodes``)."""


@dataclass(frozen=True)
class RecordedAgent:
    """An agent of the phase: its name (also its process name in the replay) and the full
    uids of the sensors it read, in the order of its recorded rows."""

    name: str
    sensors: list[str]

    @property
    def process(self) -> str:
        return self.name


@dataclass
class PhaseRecord:
    """One phase of one run instance, as recorded."""

    run: str
    instance: str
    index: int
    name: str
    workers: int
    episodes: int
    check_values: bool
    environments: list[EnvironmentSpec]
    seeds: dict[str, list[int]]
    """One seed per worker, by environment uid."""
    policy: type[TurnPolicy]
    agents: list[RecordedAgent]
    phase_row: Row
    environment_rows: list[Row]
    agent_rows: list[Row]
    world_states: dict[tuple[str, int, int], list[Row]] = field(default_factory=dict)
    """Rows by (environment uid, worker, episode), in step order."""
    muscle_actions: dict[tuple[str, int, int], list[Row]] = field(default_factory=dict)
    """Rows by (agent name, worker, episode), in step order."""
    gaps: list[Row] = field(default_factory=list)
    """Where recording was paused (``recording_gaps`` rows of the phase)."""
    plugin_records: dict[tuple[int, int, int], list[Row]] = field(default_factory=dict)
    """What plug-ins recorded (``context.record``) by (worker, episode, step)."""

    def records_of_step(self, worker: int, episode: int, step: int) -> list[Row]:
        """The plug-in records that belong to the world's step ``step`` (1-based): the
        environments' of that step, the Muscles' and Brains' of the step they acted in
        (``step - 1``: theirs count from 0)."""
        world = self.plugin_records.get((worker, episode, step), [])
        acted = self.plugin_records.get((worker, episode, step - 1), [])
        return [r for r in world if str(r["source"]).startswith("env:")] + [
            r for r in acted if not str(r["source"]).startswith("env:")
        ]

    def check_no_gap(self, worker: int, episode: int) -> None:
        """Refuse to replay ``episode`` of ``worker`` if recording paused at or before it.

        Raises:
            RecordingGapError: Naming the gap.
        """
        for gap in self.gaps:
            if gap["worker"] == worker and gap["from_episode"] <= episode:
                end = (
                    f"episode {gap['to_episode']} step {gap['to_step']}"
                    if gap["to_episode"] is not None
                    else "the end of the phase"
                )
                raise RecordingGapError(
                    f"run '{self.run}' phase {self.index} worker {worker}: recording was paused "
                    f"from episode {gap['from_episode']} step {gap['from_step']} to {end}; "
                    f"episode {episode} cannot be replayed across that gap (the episodes "
                    f"before {gap['from_episode']} can)"
                )

    def recorded_episodes(self, worker: int) -> list[int]:
        """The episodes of ``worker`` that have world states, in order."""
        return sorted({e for (_, w, e) in self.world_states if w == worker})

    def steps(self, worker: int, episode: int) -> int:
        """How many steps the episode has in the record (0 if none)."""
        first = self.environments[0].uid
        return len(self.world_states.get((first, worker, episode), []))


def instance_uid(run: str, instance: str | None, store_uri: StoreURI | None) -> str:
    """The uid of the run's instance ``instance`` (checked), or of its newest one."""
    found = rows.runs(run=run, store_uri=store_uri)
    if not found:
        rows.phases(run, store_uri=store_uri)  # raises the store's "no run" error
    uids = [row["instance_uid"] for row in found]
    if instance is None:
        return str(uids[-1])
    if instance not in uids:
        raise rows.UnknownRunError(
            f"run '{run}' has no instance '{instance}'; its instances: {', '.join(uids)}"
        )
    return instance


def phase_indices(
    run: str, instance: str, phase: int | str | None, store_uri: StoreURI | None
) -> list[int]:
    """The indices of the phases to replay: ``phase`` (index or name, checked) or all."""
    found = rows.phases(run, store_uri=store_uri, instance=instance)
    if phase is None:
        return [int(row["phase"]) for row in found]
    for row in found:
        if phase in (row["phase"], row["name"]) or str(phase) == str(row["phase"]):
            return [int(row["phase"])]
    known = [f"{row['phase']} ({row['name']})" for row in found]
    hint = did_you_mean(str(phase), [str(row["name"]) for row in found])
    raise UnknownPartError(
        f"run '{run}' instance '{instance}' has no phase '{phase}'; its phases: "
        + (", ".join(known) or "none")
        + (f". {hint}" if hint else "")
    )


def load_phase(
    run: str, instance: str, index: int, store_uri: StoreURI | None = None
) -> PhaseRecord:
    """Everything recorded of phase ``index`` of the run's instance ``instance``."""
    phase_row = next(
        row
        for row in rows.phases(run, store_uri=store_uri, instance=instance)
        if row["phase"] == index
    )
    every = int((phase_row["config"] or {}).get("record_every", 1))
    if every != 1:
        kept = "only its episodes" if every == 0 else f"one step in {every}"
        raise IncompleteRecordError(
            f"run '{run}' instance '{instance}' phase {index} ({phase_row['name']}) recorded "
            f"{kept} (phase_config record): the record has holes and cannot be replayed"
        )
    env_rows = rows.environments(run, phase=index, store_uri=store_uri, instance=instance)
    agent_rows = rows.agents(run, phase=index, store_uri=store_uri, instance=instance)
    spec = _phase_spec(run, index, store_uri)
    specs = [_environment_spec(row, spec) for row in env_rows]
    world: dict[tuple[str, int, int], list[Row]] = defaultdict(list)
    for row in rows.world_states(run, phase=index, store_uri=store_uri, instance=instance):
        world[(row["environment"], row["worker"], row["episode"])].append(row)
    actions: dict[tuple[str, int, int], list[Row]] = defaultdict(list)
    for row in rows.muscle_actions(run, phase=index, store_uri=store_uri, instance=instance):
        actions[(row["agent"], row["worker"], row["episode"])].append(row)
    gaps, records = _recording(run, instance, index, store_uri)
    return PhaseRecord(
        run=run,
        instance=instance,
        index=index,
        name=str(phase_row["name"]),
        workers=int(phase_row["workers"]),
        episodes=int(phase_row["episodes"]),
        check_values=bool(spec.simulation.params.get("check_values", True)) if spec else True,
        environments=specs,
        seeds={str(row["environment"]): [int(s) for s in row["seeds"]] for row in env_rows},
        policy=_policy(spec),
        agents=[_agent(row, actions) for row in agent_rows],
        phase_row=phase_row,
        environment_rows=list(env_rows),
        agent_rows=list(agent_rows),
        world_states=dict(world),
        muscle_actions=dict(actions),
        gaps=gaps,
        plugin_records=records,
    )


def _recording(
    run: str, instance: str, index: int, store_uri: StoreURI | None
) -> tuple[list[Row], dict[tuple[int, int, int], list[Row]]]:
    """The phase's recording gaps, and its plug-in records by (worker, episode, step)."""
    gaps = [
        row
        for row in rows.recording_gaps(run, store_uri=store_uri, instance=instance)
        if row["phase"] == index
    ]
    records: dict[tuple[int, int, int], list[Row]] = defaultdict(list)
    for row in rows.plugin_records(run, phase=index, store_uri=store_uri, instance=instance):
        records[(row["worker"], row["episode"], row["step"])].append(row)
    return gaps, dict(records)


def _phase_spec(run: str, index: int, store_uri: StoreURI | None) -> PhaseSpec | None:
    """The phase as the stored run file says (None if the document is not a valid run file
    any more, e.g. an old record: the environments' table is then all there is)."""
    document = rows.run_record(run, store_uri=store_uri)["document"]
    try:
        spec = load_run_text(document, path=f"run '{run}'", check_classes=False)
    except RunFileError:
        return None
    return spec.phases[index] if index < len(spec.phases) else None


def _environment_spec(row: Row, phase: PhaseSpec | None) -> EnvironmentSpec:
    """The environment as recorded (class and params from the store), with the reward and
    state transformer the run file gave it."""
    uid = str(row["environment"])
    written = {e.uid: e for e in phase.environments} if phase is not None else {}
    base = written.get(uid)
    return EnvironmentSpec(
        name=str(row["name"]),
        uid=uid,
        params=dict(row["params"]),
        reward=base.reward if base is not None else None,
        state_transformer=base.state_transformer if base is not None else None,
    )


def _policy(phase: PhaseSpec | None) -> type[TurnPolicy]:
    """The turn policy of the phase's simulation controller (Vanilla's if unknown)."""
    if phase is None:
        return AllAct
    policy: Any = getattr(load_class(phase.simulation.name), "policy", None)
    return policy if isinstance(policy, type) and issubclass(policy, TurnPolicy) else AllAct


def _agent(row: Row, actions: dict[tuple[str, int, int], list[Row]]) -> RecordedAgent:
    """The agent of an ``agents`` row with the sensors its run file gave it (else those of
    its recorded rows)."""
    name = str(row["agent"])
    sensors = (row["config"] or {}).get("sensors")
    if isinstance(sensors, list):
        return RecordedAgent(name, [str(uid) for uid in sensors])
    for (agent, _, _), found in actions.items():
        if agent == name and found:
            return RecordedAgent(name, list(found[0]["sensor_readings"]))
    return RecordedAgent(name, [])
