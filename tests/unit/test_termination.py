"""The built-in termination conditions, under the names run files use."""

from __future__ import annotations

import pytest

from palaestra.core.description.loading import load_class
from palaestra.core.termination import TerminationCondition


def make(name: str, **params: object) -> TerminationCondition:
    condition = load_class(name)(**params)
    assert isinstance(condition, TerminationCondition)
    return condition


@pytest.mark.parametrize(
    "name",
    [
        "palaestra.simulation:VanillaSimControllerTerminationCondition",
        "palaestra.experiment:EnvironmentTerminationCondition",
    ],
)
def test_an_episode_ends_when_an_environment_is_done(name: str) -> None:
    condition = make(name)
    assert condition.episode_done([False, True])
    assert not condition.episode_done([False, False])
    assert not condition.phase_done(10**6, 1)  # episodes are not its business


def test_the_run_governor_condition_ends_a_phase_after_its_episodes() -> None:
    condition = make("palaestra.experiment:VanillaRunGovernorTerminationCondition")
    assert [condition.phase_done(done, 3) for done in range(5)] == [False] * 3 + [True] * 2
    assert not condition.episode_done([True])


@pytest.mark.parametrize(
    ("params", "ends_after"),
    [({}, 4), ({"max_episodes": 2}, 2), ({"max_episodes": 9}, 4)],
)
def test_max_episodes_ends_a_phase_at_the_smaller_limit(params: dict, ends_after: int) -> None:
    condition = make("palaestra.experiment:MaxEpisodesTerminationCondition", **params)
    assert [condition.phase_done(done, 4) for done in range(6)] == [
        done >= ends_after for done in range(6)
    ]


def test_unknown_params_are_kept_not_rejected() -> None:
    # palaestrAI run files pass params these classes do not use; they must not break a run
    condition = make("palaestra.simulation:VanillaSimControllerTerminationCondition", foo=1)
    assert condition.params == {"foo": 1}
