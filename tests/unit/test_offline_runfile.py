"""The ``replay`` key of a run file's agents (:mod:`palaestra.experiment.runfile_replay`)."""

from __future__ import annotations

import pytest

from palaestra.core.description.specs import ReplaySpec
from palaestra.experiment.runfile import load_run_text
from tests.unit.test_runfile import MINIMAL, error_of, variant

AGENT_LINE = "          sensors: [Env.0, Env.1]\n"
SECOND_PHASE = """  - second:
      agents:
        - name: learner
          brain: {name: rf_plugins:Brain}
          muscle: {name: rf_plugins:Muscle}
          objective: {name: rf_plugins:Objective}
          sensors: [Env.0, Env.1]
          actuators: [Env.0]
          replay: REPLAY
"""


def with_replay(replay: str) -> tuple[str, int]:
    """The minimal run file with ``replay: <replay>`` on its agent, and that key's line."""
    text, line = variant(AGENT_LINE, f"{AGENT_LINE}          replay: {replay}\n")
    return text, line + 1


def two_phases(replay: str) -> str:
    """The minimal run file and a second phase whose agent has ``replay: <replay>``."""
    return MINIMAL.read_text() + SECOND_PHASE.replace("REPLAY", replay)


def test_a_source_in_another_run_with_every_key() -> None:
    text, line = with_replay(
        "[{experiment_run: old, agent: expert, phase: 2, instance: i-1, repeat: 3, strict: true}]"
    )
    (agent,) = load_run_text(text, check_classes=False).phases[0].agents
    assert agent.replay == (
        ReplaySpec(
            agent="expert",
            experiment_run="old",
            phase=2,
            instance="i-1",
            repeat=3,
            key="schedule[0].only_phase.agents[0].replay[0]",
            line=line,
        ),
    )


def test_defaults_are_this_agent_and_run_and_the_phase_before() -> None:
    run = load_run_text(two_phases("{agent: solo}"), check_classes=False)
    (agent,) = run.phases[1].agents
    assert [(r.agent, r.experiment_run, r.phase, r.repeat) for r in agent.replay] == [
        ("solo", None, 0, 1)
    ]
    assert run.phases[0].agents[0].replay == ()


def test_another_run_defaults_to_its_first_phase_in_phase_0() -> None:
    text, _ = with_replay("[{experiment_run: old}]")
    (agent,) = load_run_text(text, check_classes=False).phases[0].agents
    assert [(r.agent, r.experiment_run, r.phase) for r in agent.replay] == [(None, "old", 0)]


@pytest.mark.parametrize(
    ("replay", "message"),
    [
        ("[{agent: x}]", "a replay from this run must name an earlier phase than this one (0)"),
        ("[{phase: 0}]", "a replay from this run must name an earlier phase than this one (0)"),
        ("[{experiment_run: old, repeat: 0}]", "expected an integer >= 1, got 0."),
        ("[{experiment_run: old, sensors: [Env.0]}]", "'sensors' is not supported"),
        ("[{experiment_run: old, mode: train}]", "'mode' is not supported"),
        ("[{experiment_run: old, phse: 1}]", "unknown key 'phse'."),
        ("[old-run]", "expected a mapping"),
    ],
)
def test_bad_sources_name_the_key(replay: str, message: str) -> None:
    text, line = with_replay(replay)
    error = error_of(text)
    assert error.line == line
    assert error.key is not None
    assert error.key.startswith("schedule[0].only_phase.agents[0].replay[0]")
    assert message in error.message


def test_a_later_phase_of_this_run_is_refused() -> None:
    error = error_of(two_phases("[{phase: 1}]"))
    assert error.key == "schedule[1].second.agents[0].replay[0].phase"
    assert "earlier phase than this one (1), got 1." in error.message


def test_empty_replay_is_none() -> None:
    text, _ = with_replay("[]")
    assert load_run_text(text, check_classes=False).phases[0].agents[0].replay == ()
    text, _ = with_replay("null")
    assert load_run_text(text, check_classes=False).phases[0].agents[0].replay == ()
