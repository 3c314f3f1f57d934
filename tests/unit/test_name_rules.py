"""Tests of the name rule and of the paths built from names
(:mod:`palaestra.core.description.name_rules`), and that derived seeds fit wherever a run seed
fits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from palaestra.core.description.name_rules import (
    NAME_MAX_BYTES,
    UnsafePathError,
    check_inside,
    dump_file_name,
    name_problem,
    path_part,
)
from palaestra.core.description.seeds import derive_seed
from palaestra.core.description.specs import SEED_MAX
from palaestra.experiment.store_client import dump_dir

PALAESTRAI_NAMES = [  # from palaestrAI's example and test run files
    "Yo-ho, a dummy experiment run for me! Now with multiple worker and modes!",
    "Sauron SAC (autocurriculum-training)",
    "Training without Filters",
    "Top Performer",
    "Dummy Runs",
    "mighty_defender",
    "phaseIV_test_att_def",
]


@pytest.mark.parametrize("name", PALAESTRAI_NAMES)
def test_palaestrai_names_follow_the_rule(name: str) -> None:
    assert name_problem(name) is None


@pytest.mark.parametrize(
    "name", ["", ".", "..", "../x", "a/b", "a\\b", ".x", "a\x00b", "a\nb", "x" * 129]
)
def test_names_that_could_leave_a_directory_or_break_a_process_are_refused(name: str) -> None:
    assert name_problem(name) is not None


def test_the_longest_name_is_counted_in_bytes() -> None:
    assert name_problem("x" * NAME_MAX_BYTES) is None
    assert name_problem("\u00e4" * (NAME_MAX_BYTES // 2)) is None
    assert name_problem("\u00e4" * (NAME_MAX_BYTES // 2 + 1)) == "it is 130 bytes long"


def test_plain_names_are_kept_as_path_parts() -> None:
    assert path_part("phase_0") == "phase_0"
    assert path_part("dummy-run.v2") == "dummy-run.v2"
    assert dump_file_name("defender") == "defender.bin"
    assert dump_file_name("defender", "final") == "defender-final.bin"


@given(st.text(min_size=1, max_size=200))
def test_every_path_part_is_one_safe_component(name: str) -> None:
    part = path_part(name)
    assert part and "/" not in part and "\\" not in part and "\x00" not in part
    assert not part.startswith(".")
    assert len(part.encode()) <= 64
    assert part.isascii()


@given(st.text(min_size=1, max_size=80), st.text(min_size=1, max_size=80))
def test_distinct_names_give_distinct_path_parts(a: str, b: str) -> None:
    if a != b:
        assert path_part(a) != path_part(b)


def test_names_that_differ_only_in_unsafe_characters_stay_apart() -> None:
    parts = {path_part(name) for name in ["a b", "a_b", "a/b", "a\\b", "a  b", "a__b"]}
    assert len(parts) == 6


def test_a_dump_directory_stays_under_data_path_whatever_the_names(tmp_path: Path) -> None:
    data = tmp_path / "data"
    path = dump_dir(str(data), "../../../run", "../instance", 3, "../../../../phase")
    assert Path(path).is_relative_to(data / "brain_dumps")
    assert len(Path(path).relative_to(data).parts) == 4
    assert os.path.realpath(path) == path


def test_a_symbolic_link_below_data_path_cannot_lead_a_dump_elsewhere(tmp_path: Path) -> None:
    data = tmp_path / "data"
    elsewhere = tmp_path / "elsewhere"
    (data / "brain_dumps").mkdir(parents=True)
    elsewhere.mkdir()
    (data / "brain_dumps" / "run").symlink_to(elsewhere)
    with pytest.raises(UnsafePathError, match="outside") as caught:
        dump_dir(str(data), "run", "instance", 0, "phase")
    assert str(elsewhere) in str(caught.value)
    assert caught.value.exit_code == 1


def test_check_inside_resolves_both_paths(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert check_inside(str(tmp_path / "link" / "x.bin"), str(tmp_path / "real")) == str(
        tmp_path / "link" / "x.bin"
    )
    with pytest.raises(UnsafePathError):
        check_inside(str(tmp_path / "real" / ".." / "x.bin"), str(tmp_path / "real"))


@pytest.mark.parametrize("run_seed", [0, 2**31, SEED_MAX])
def test_derived_seeds_fit_wherever_the_run_seed_fits(run_seed: int) -> None:
    seeds = [derive_seed(run_seed, "muscle", "\u00e4" * 64, phase, 7) for phase in range(50)]
    assert all(0 <= seed <= min(SEED_MAX, 2**32 - 1) for seed in seeds)
    assert len(set(seeds)) == len(seeds)
