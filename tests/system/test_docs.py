"""The documentation's examples run: every Python block of the README and the docs site is
executed (a block whose fence title starts with "fragment" is only compiled), the plug-ins
they define pass palaestra's plug-in checks, the first agent's tutorial runs and learns as it
says, the commands that look at results run, every whole run file and runtime config in a YAML
block loads, and the site builds strictly (``mkdocs build --strict``)."""

from __future__ import annotations

import importlib
import json
import os
import re
import shlex
import sqlite3
import subprocess
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from palaestra.core.information import ActuatorInformation, SensorInformation
from palaestra.core.spaces import Discrete
from palaestra.testing import check_brain, check_environment, check_muscle
from tests.conftest import EXPERIMENTS, ROOT, Workspace, wait_until_gone

pytestmark = pytest.mark.timeout(180)

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```", re.S | re.M)
QUERIES = ("getting-started.md", "analysing-results.md", "analysis-walkthrough.md")
"""Pages whose blocks read the store of the example run (``experiments/dummy_run.yml``)."""


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    fragment: bool
    text: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(lang: str, page: Path | None = None) -> list[Block]:
    found = []
    for path in [page] if page else PAGES:
        text = path.read_text()
        for match in FENCE.finditer(text):
            if match.group(1) != lang:
                continue
            title = re.search(r'title="([^"]*)"', match.group(2))
            fragment = bool(title and title.group(1).startswith("fragment"))
            line = text[: match.start()].count("\n") + 1
            found.append(Block(path, line, lang, fragment, match.group(3)))
    return found


def block(page: str, defining: str) -> Block:
    (found,) = [b for b in blocks("python", ROOT / page) if defining in b.text]
    return found


@pytest.mark.parametrize("one", blocks("python"), ids=lambda b: b.where)
def test_every_python_block_compiles(one: Block) -> None:
    compile(one.text, one.where, "exec")


@pytest.fixture
def as_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """Write a block as an importable module ``name`` (forgotten afterwards)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    names: list[str] = []

    def write(name: str, one: Block) -> types.ModuleType:
        (tmp_path / f"{name}.py").write_text(one.text)
        importlib.invalidate_caches()
        names.append(name)
        return importlib.import_module(name)

    yield write
    for name in names:
        sys.modules.pop(name, None)


def test_the_readmes_agent_passes_the_plugin_checks(as_module) -> None:  # type: ignore[no-untyped-def]
    module = as_module("readme_agents", block("README.md", "class CountingBrain("))
    sensors = [SensorInformation(1, Discrete(5), "env.cell")]
    actuators = [ActuatorInformation(0, Discrete(2), "env.move")]
    check_muscle(module.RandomMuscle, sensors=sensors, actuators=actuators)
    check_brain(module.CountingBrain, sensors=sensors, actuators=actuators)


def test_the_corridor_of_writing_plugins_runs(as_module) -> None:  # type: ignore[no-untyped-def]
    module = as_module("docs_corridor", block("docs/writing-plugins.md", "class Corridor("))
    sensors, actuators = check_environment(module.Corridor, steps=30)
    assert [str(s.uid) for s in sensors] == ["obs"]
    assert [str(a.uid) for a in actuators] == ["action"]


@pytest.fixture(scope="module")
def example_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    """A directory with the store of the example run, as the pages that query it assume; no
    process of the commands run in it survives."""
    workspace = Workspace(tmp_path_factory.mktemp("example"))
    result = workspace.run("experiment-start", "-q", str(EXPERIMENTS / "dummy_run.yml"))
    assert result.returncode == 0, result.stderr
    yield workspace
    assert not wait_until_gone(workspace.sessions)


@pytest.mark.parametrize("page", QUERIES)
def test_the_blocks_that_query_the_example_run_run(
    example_store: Workspace, page: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In order, in one namespace per page, in the directory of the example run's store."""
    monkeypatch.chdir(example_store.path)
    monkeypatch.delenv("PALAESTRA_STORE_URI", raising=False)
    namespace: dict[str, object] = {}
    runnable = [b for b in blocks("python", ROOT / "docs" / page) if not b.fragment]
    assert runnable
    for one in runnable:
        exec(compile(one.text, one.where, "exec"), namespace)  # noqa: S102 - the docs' own code


def commands(block: Block) -> list[list[str]]:
    """The ``palaestra`` command lines of a shell block (comments dropped)."""
    lines = [line.partition("#")[0].strip() for line in block.text.splitlines()]
    found = [shlex.split(line)[1:] for line in lines if line.startswith("palaestra ")]
    assert found, f"{block.where}: no palaestra command"
    return found


def shell_block(page: str, holding: str) -> Block:
    (found,) = [b for b in blocks("sh", ROOT / "docs" / page) if holding in b.text]
    return found


def test_the_commands_that_look_at_the_example_run_run(example_store: Workspace) -> None:
    for args in commands(shell_block("getting-started.md", "palaestra experiment-show")):
        result = example_store.run(*args)
        assert result.returncode == 0, (args, result.stderr[-2000:])


def test_the_first_agent_runs_and_learns_as_its_tutorial_says(workspace: Workspace) -> None:
    result = workspace.run(
        "experiment-start", str(ROOT / "docs" / "first_agent" / "corridor.yml"), timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for args in commands(shell_block("first-agent.md", "palaestra experiment-show")):
        shown = workspace.run(*args)
        assert shown.returncode == 0, (args, shown.stderr[-2000:])
    with sqlite3.connect(workspace.store) as conn:
        test = conn.execute(
            "select e.steps, e.rewards from episodes e join experiment_run_phases p "
            "on p.id = e.experiment_run_phase_id where p.name = 'test'"
        ).fetchall()
    assert len(test) == 10
    assert all(steps == 4 and json.loads(rewards) == {"walker": 1.0} for steps, rewards in test)


def _runnable_yaml() -> list[Block]:
    return [b for b in blocks("yaml") if not b.fragment and "--8<--" not in b.text]


@pytest.mark.parametrize("one", _runnable_yaml(), ids=lambda b: b.where)
def test_every_whole_yaml_block_loads(one: Block, tmp_path: Path) -> None:
    """A run file (it has a schedule) loads, plug-ins found; anything else is a runtime
    config."""
    from palaestra.core.description.config import load_runtime_config
    from palaestra.experiment.runfile import load_run_text

    if "schedule:" in one.text:
        load_run_text(one.text, path=one.where, check_classes=True)
    else:
        path = tmp_path / "runtime.yaml"
        path.write_text(one.text)
        load_runtime_config(str(path))


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """``mkdocs build --strict``: no broken link, no missing page, the reference generated."""
    pytest.importorskip("mkdocs", reason="the docs extra: pip install -e '.[docs]'")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    cli = (tmp_path / "site" / "cli" / "index.html").read_text()
    assert "palaestra experiment-start" in cli and "--reload" in cli
