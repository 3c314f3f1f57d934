"""The README's hand-written plug-ins run: each Python block that defines one is executed as a
module and put through palaestra's plug-in checks (palaestra.testing)."""

from __future__ import annotations

import importlib
import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from palaestra.testing import check_environment

README = Path(__file__).parents[2] / "README.md"


def python_block(defining: str) -> str:
    """The README's Python block that contains ``defining``."""
    blocks = re.findall(r"^```python\n(.*?)^```", README.read_text(), re.S | re.M)
    (found,) = [block for block in blocks if defining in block]
    return str(found)


@pytest.fixture
def as_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    """The README's block that defines ``class Corridor(`` as the importable module
    ``readme_corridor``."""
    (tmp_path / "readme_corridor.py").write_text(python_block("class Corridor("))
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield importlib.import_module("readme_corridor")
    del sys.modules["readme_corridor"]


def test_the_corridor_environment_runs(as_module: types.ModuleType) -> None:
    sensors, actuators = check_environment(as_module.Corridor, steps=20)
    assert [str(s.uid) for s in sensors] == ["obs"]
    assert [str(a.uid) for a in actuators] == ["action"]
