"""The one guard around plug-in calls (:mod:`palaestra.core.plugin`)."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from palaestra.agent import DummyMuscle
from palaestra.core.plugin import PluginError, call, call_each


class Failing(DummyMuscle):
    def __init__(self, fail: bool = False, **params: Any) -> None:
        if fail:
            raise ValueError("cannot build")
        super().__init__(**params)

    def setup(self) -> None:
        sys.exit(0)

    def reset(self) -> None:
        raise KeyboardInterrupt

    def update(self, update: Any) -> None:
        raise RuntimeError(f"bad update {update}")

    def propose_actions(self, sensors: Any, actuators: Any) -> Any:
        raise GeneratorExit  # (a BaseException, as SystemExit is)


def test_a_call_that_succeeds_returns_its_result() -> None:
    muscle = call(Failing, count_upwards=True)
    assert isinstance(muscle, Failing) and muscle.count_upwards
    assert call(DummyMuscle.propose_actions, muscle, [], []) == ([], -1)


@pytest.mark.parametrize(
    ("method", "args", "cause"),
    [
        ("update", (1,), RuntimeError),
        ("setup", (), SystemExit),
        ("reset", (), KeyboardInterrupt),
        ("propose_actions", ([], []), GeneratorExit),
    ],
)
def test_whatever_escapes_a_method_names_the_class_and_the_method(
    method: str, args: tuple[Any, ...], cause: type[BaseException]
) -> None:
    muscle = Failing()
    with pytest.raises(PluginError) as caught:
        call(getattr(muscle, method), *args)
    assert caught.value.plugin == f"{__name__}:Failing.{method}"
    assert isinstance(caught.value.__cause__, cause)


def test_a_failing_constructor_is_named_by_its_class_not_its_metaclass() -> None:
    with pytest.raises(PluginError) as caught:
        call(Failing, fail=True)
    assert caught.value.plugin == f"{__name__}:Failing.__init__"
    assert str(caught.value.__cause__) == "cannot build"


def test_plugin_error_stays_importable_from_the_runtime() -> None:
    from palaestra.core.supervision import runtime

    assert runtime.PluginError is PluginError


def test_a_call_for_each_of_a_rounds_games_names_the_method_where_one_fails() -> None:
    """(``call_each``: an Objective's ``internal_reward`` for each game of a round.)"""
    from palaestra.agent.objective import Objective, objective_values

    class Third(Objective):
        def internal_reward(self, memory: Any, **kwargs: Any) -> Any:
            if memory == 3:
                raise ZeroDivisionError("third game")
            return memory if memory != 2 else None

    assert call_each(Failing().update, []) == []
    first, second = objective_values(Third(), [1, 2])  # type: ignore[list-item]
    assert first == 1.0 and type(first) is float and second != second  # (None: NaN)
    with pytest.raises(PluginError) as caught:
        objective_values(Third(), [1, 2, 3])  # type: ignore[list-item]
    assert caught.value.plugin.endswith(".Third.internal_reward")
    assert str(caught.value.__cause__) == "third game"
    with pytest.raises(PluginError) as caught:
        call_each(Failing().update, [7])
    assert caught.value.plugin == f"{__name__}:Failing.update"
    assert str(caught.value.__cause__) == "bad update 7"
