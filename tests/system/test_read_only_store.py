"""A store on read-only media (issue 9, defect 16): the reading commands and
``palaestra.store.query`` read it; the writing commands exit 3 naming the path.

The media is a read-only bind mount of a directory holding a real run's store (root can write
through file permissions, not through a read-only mount). Where mounting is not permitted, the
tests are skipped with the reason.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from pandas.testing import assert_frame_equal

from palaestra.store import query
from tests.conftest import EXPERIMENTS, Workspace, wait_until_gone

pytestmark = pytest.mark.timeout(120)

DUMMY_RUN = str(EXPERIMENTS / "dummy_run.yml")


def mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30)


class Media:
    """A run's store in ``source`` (writable) and the same files under ``path`` (read-only)."""

    def __init__(self, source: Path, path: Path, scratch: Path) -> None:
        self.source, self.path, self.scratch = source, path, scratch
        self.reader = Workspace(path)  # commands run in the read-only directory
        self.writer = Workspace(scratch)  # commands run elsewhere, on the read-only store

    @property
    def store(self) -> Path:
        return self.path / "palaestra.db"

    def config(self) -> str:
        """A runtime config (in a writable place) naming the read-only store."""
        path = self.scratch / "runtime.yaml"
        path.write_text(
            f"store_uri: sqlite:///{self.store}\ndata_path: {self.scratch / '_outputs'}\n"
        )
        return str(path)


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Media]:
    root = tmp_path_factory.mktemp("media")
    source, path, scratch = root / "source", root / "ro", root / "scratch"
    for directory in (source, path, scratch):
        directory.mkdir()
    made = Workspace(source)
    ran = made.run("start", DUMMY_RUN)
    assert ran.returncode == 0, ran.stderr
    assert not wait_until_gone(made.sessions)
    bound = mount("--bind", str(source), str(path))
    if bound.returncode != 0:
        pytest.skip(f"cannot make a read-only mount here: {bound.stderr.strip()}")
    try:
        read_only = mount("-o", "remount,ro,bind", str(path))
        if read_only.returncode != 0:
            pytest.skip(f"cannot make a read-only mount here: {read_only.stderr.strip()}")
        with pytest.raises(OSError, match="Read-only file system"):
            (path / "probe").write_text("")
        medium = Media(source, path, scratch)
        yield medium
        assert not wait_until_gone(medium.reader.sessions | medium.writer.sessions)
    finally:
        mount_gone = subprocess.run(["umount", str(path)], capture_output=True, timeout=30)
        assert mount_gone.returncode == 0, mount_gone.stderr


def test_experiment_list_and_show_read_a_store_on_read_only_media(media: Media) -> None:
    listed = media.reader.run("experiment-list", "--format", "json")
    shown = media.reader.run("experiment-show", "dummy-run")

    assert listed.returncode == 0, listed.stderr
    (run,) = json.loads(listed.stdout)
    assert (run["run_uid"], run["status"], run["phases"]) == ("dummy-run", "finished", 2)
    assert shown.returncode == 0, shown.stderr
    assert "instance" in shown.stdout and "finished" in shown.stdout
    assert sorted(p.name for p in media.source.iterdir()) == ["_outputs", "palaestra.db"]


def test_results_exports_from_a_store_on_read_only_media(media: Media) -> None:
    out = media.scratch / "actions.json"
    exported = media.reader.run("results", "dummy-run", "--phase", "1", "-o", str(out))

    assert exported.returncode == 0, exported.stderr
    assert len(json.loads(out.read_text())) == 20  # 2 agents x 10 steps


def test_query_reads_a_store_on_read_only_media(media: Media) -> None:
    frame = query.muscle_actions("dummy-run", store_uri=f"sqlite:///{media.store}")

    assert len(frame) == 40
    expected = query.muscle_actions(
        "dummy-run", store_uri=f"sqlite:///{media.source}/palaestra.db"
    )
    assert_frame_equal(frame, expected)


@pytest.mark.parametrize(
    "command",
    [
        ["start", DUMMY_RUN],
        ["clean", "dummy-run", "--yes"],
        ["clean", "dummy-run"],  # before asking
        ["database-migrate"],
        ["database-create"],
    ],
)
def test_writing_commands_exit_3_naming_the_path(media: Media, command: list[str]) -> None:
    result = media.writer.run("-c", media.config(), *command)

    assert result.returncode == 3, result.stdout + result.stderr
    assert str(media.path) in result.stderr and "read-only" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert len(query.runs(store_uri=f"sqlite:///{media.store}")) == 1  # nothing changed
