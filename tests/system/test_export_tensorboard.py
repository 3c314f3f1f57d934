"""``palaestra export tensorboard`` on a real run, read back with TensorBoard's own event
reader: every episode reward and statistic mean equals the store's."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
import pytest

from tests.conftest import Workspace, wait_until_gone
from tests.system.curve_runs import (
    AGENTS,
    invoke,
    shared_curves,
    store_end_times,
    store_episodes,
    store_statistic,
)

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def curves(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    workspace = shared_curves(tmp_path_factory)
    yield workspace
    assert not wait_until_gone(workspace.sessions)


def scalars(directory: str) -> dict[str, list[tuple[int, float]]]:
    """Every scalar tag in ``directory`` with its (step, value) pairs, by TensorBoard's reader."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    reader = EventAccumulator(directory, size_guidance={"scalars": 0})
    reader.Reload()
    return {
        tag: [(event.step, event.value) for event in reader.Scalars(tag)]
        for tag in reader.Tags()["scalars"]
    }


def as_float32(values: list[float]) -> list[float]:
    """TensorBoard keeps scalars as 32-bit floats."""
    return [float(np.float32(v)) for v in values]


def test_rewards_and_statistics_read_back_equal(curves: Workspace) -> None:
    out = curves.path / "tb"

    result = invoke(curves, "export", "tensorboard", "curve-a", "-o", str(out))

    assert result.exit_code == 0, result.stderr
    assert f"tensorboard --logdir {out}" in result.stdout
    found = scalars(str(out / "curve-a"))
    assert set(found) == {
        *(f"{kind}/{agent}" for kind in ("reward", "reward_by_steps") for agent in AGENTS),
        "statistic/explore/learner",
        "statistic_by_steps/explore/learner",
    }
    for agent in AGENTS:
        episodes = store_episodes(curves.store, "curve-a", agent)
        rewards = as_float32([row[5] for row in episodes])
        steps = list(itertools.accumulate(row[4] for row in episodes))
        assert found[f"reward/{agent}"] == list(zip(range(len(episodes)), rewards, strict=True))
        assert found[f"reward_by_steps/{agent}"] == list(zip(steps, rewards, strict=True))
    episodes = store_episodes(curves.store, "curve-a", "learner")
    explore = store_statistic(curves.store, "curve-a", "learner", "explore")
    means = [sum(v) / len(v) for v in (explore[(p, w, e)] for p, _, w, e, _, _ in episodes)]
    assert found["statistic/explore/learner"] == list(
        zip(range(len(episodes)), as_float32(means), strict=True)
    )


def test_each_value_is_stamped_with_the_time_its_episode_ended(curves: Workspace) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = curves.path / "times"
    assert invoke(curves, "export", "tensorboard", "curve-a", "-o", str(out)).exit_code == 0

    reader = EventAccumulator(str(out / "curve-a"), size_guidance={"scalars": 0})
    reader.Reload()

    ended = store_end_times(curves.store, "curve-a")
    assert [event.wall_time for event in reader.Scalars("reward/learner")] == ended


def test_a_second_export_to_the_same_directory_is_refused(curves: Workspace) -> None:
    out = curves.path / "twice"
    assert invoke(curves, "export", "tensorboard", "curve-a", "-o", str(out)).exit_code == 0

    again = invoke(curves, "export", "tensorboard", "curve-a", "-o", str(out))

    assert again.exit_code == 2
    assert f"{out / 'curve-a'} already holds TensorBoard event files" in again.stderr


def test_an_unknown_run_exits_2_naming_it(curves: Workspace) -> None:
    result = invoke(curves, "export", "tensorboard", "curve-z", "-o", str(curves.path / "z"))

    assert result.exit_code == 2
    assert "no run 'curve-z'" in result.stderr
    assert not (curves.path / "z").exists()
