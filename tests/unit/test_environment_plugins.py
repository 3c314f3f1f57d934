"""An environment item's ``reward:`` and ``state_transformer:`` in the environment process:
the Reward is the environment's ``self.reward``; the transformer rewrites each step's state
(seeing the agents' uids) before it is checked, observed and recorded, and is named when it
fails or breaks its contract."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from palaestra.compat import finder
from palaestra.core.description.specs import ClassSpec, EnvironmentSpec
from palaestra.core.plugin import PluginContractError, PluginError
from palaestra.environment.world import World

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"


@pytest.fixture
def plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The palaestrAI-style test plug-ins, importable with palaestrAI's names mapped."""
    meta_path = list(sys.meta_path)
    monkeypatch.syspath_prepend(str(PLUGINS))
    finder.install()
    yield
    sys.meta_path[:] = meta_path
    for name in [n for n in sys.modules if n.split(".")[0] in ("palaestrai", "builtin_plugins")]:
        del sys.modules[name]
    importlib.invalidate_caches()


def _process(
    transformer: str | None = None, reward: str | None = "builtin_plugins:LevelReward"
) -> World:
    spec = EnvironmentSpec(
        name="builtin_plugins:LevelEnvironment",
        uid="lev",
        params={"max_iter": 3},
        reward=ClassSpec(name=reward, params={"scale": 2}) if reward else None,
        state_transformer=ClassSpec(name=transformer, params={"factor": 3})
        if transformer
        else None,
    )
    process = World(
        "Environment-lev-0",
        environment=spec,
        environment_id=0,
        worker=0,
        seed=1,
    )
    process.start_world(reset=False)
    return process


@pytest.mark.usefixtures("plugins")
def test_the_reward_is_the_environments_and_the_transformer_rewrites_each_step() -> None:
    process = _process("builtin_plugins:ScaleSensors")
    assert type(process.env.reward).__name__ == "LevelReward"
    first = process.update({"push": 2.0})
    assert first.values == [6.0]  # level 2, times 3
    assert [(r.uid, r.value) for r in first.rewards] == [("level_reward", 4.0)]
    second = process.update({"push": 1.0})
    assert second.values == [9.0] and second.rewards[0].value == 6.0


@pytest.mark.usefixtures("plugins")
def test_without_the_keys_the_environment_has_no_reward_and_steps_as_it_is() -> None:
    process = _process(reward=None)
    assert process.env.reward is None
    assert process.update({"push": 2.0}).values == [2.0]


@pytest.mark.usefixtures("plugins")
def test_the_transformer_sees_the_agents_uids() -> None:
    from builtin_plugins import SeenUids  # type: ignore[import-not-found]

    SeenUids.seen.clear()
    process = _process("builtin_plugins:SeenUids")
    assert process.update({"push": 1.0}).values == [1.0]
    assert SeenUids.seen == [["lev.level"]]


@pytest.mark.usefixtures("plugins")
def test_a_transformer_that_breaks_its_contract_is_named() -> None:
    process = _process("builtin_plugins:ReturnsATuple")
    with pytest.raises(PluginContractError) as caught:
        process.update({"push": 1.0})
    assert str(caught.value) == (
        "builtin_plugins:ReturnsATuple.__call__ returned tuple, expected an EnvironmentState "
        "(see docs/plugin-api.md)"
    )


@pytest.mark.usefixtures("plugins")
def test_a_transformer_that_fails_is_named() -> None:
    process = _process("builtin_plugins:Fails")
    with pytest.raises(PluginError) as caught:
        process.update({"push": 1.0})
    assert caught.value.plugin == "builtin_plugins:Fails.__call__"
    assert str(caught.value.__cause__) == "the transformer failed"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"max_iter": 0}, "params.max_iter: expected an integer >= 1, got 0"),
        ({"max_iter": 2.5}, "params.max_iter: expected an integer >= 1, got 2.5"),
        ({"max_iter": True}, "params.max_iter: expected an integer >= 1, got True"),
        ({"max_iter": "3"}, "params.max_iter: expected an integer >= 1, got '3'"),
        ({"step_delay": -1}, "params.step_delay: expected seconds >= 0, got -1"),
        ({"step_delay": "soon"}, "params.step_delay: expected a number of seconds, got 'soon'"),
    ],
)
def test_the_dummy_environments_params_are_checked(params: dict[str, Any], message: str) -> None:
    """``max_iter: 0`` failed the run at its first step (ZeroDivisionError in the plug-in); a
    run file with it is refused now, naming the key."""
    from palaestra.core.errors import InvalidInputError
    from palaestra.environment import DummyEnvironment

    with pytest.raises(InvalidInputError, match=re.escape(message)):
        DummyEnvironment(uid="world", **params)
    assert DummyEnvironment(uid="world", max_iter=3, step_delay=0).max_iter == 3
