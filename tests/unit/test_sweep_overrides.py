"""Tests of sweep overrides, :mod:`palaestra.experiment.overrides`: the ``--set`` and
``--seeds`` grammar, the grid, derived uids, and overrides applied to a run file's text."""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from palaestra.core.description.name_rules import name_problem
from palaestra.core.errors import EXIT_INVALID_INPUT, RunFileError
from palaestra.experiment import probe
from palaestra.experiment.api import prepare_runs
from palaestra.experiment.overrides import (
    Override,
    OverrideError,
    apply_overrides,
    derived_uid,
    derived_uids,
    expand_grid,
    in_original,
    parse_seeds,
    parse_set,
)
from palaestra.experiment.runfile import load_run_text
from palaestra.experiment.runtime_config import RuntimeConfig

DUMMY = (Path(__file__).parents[2] / "experiments" / "dummy_run.yml").read_text()
MAX_ITER = "schedule.0.phase_0.environments.0.environment.params.max_iter"


# --- --set ----------------------------------------------------------------------------------


def test_set_values_are_yaml_scalars_split_at_commas() -> None:
    override = parse_set("a.b.0.lr=0.1,1e-3,7,true,null,adam")
    assert override.path == "a.b.0.lr"
    assert override.values == (0.1, 0.001, 7, True, None, "adam")
    assert [type(v) for v in override.values[:3]] == [float, float, int]


def test_commas_inside_brackets_and_quotes_do_not_split() -> None:
    override = parse_set("p=[1, 2],{a: 1, b: 2},'x,y'")
    assert override.values == ([1, 2], {"a": 1, "b": 2}, "x,y")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("no-equals-sign", "expected 'dotted.path=value"),
        ("=1", "expected 'dotted.path=value"),
        ("a..b=1", "has an empty key"),
        ("a=1,,2", "an empty value"),
        ("a=", "an empty value"),
        ("a=[1,", "is not a YAML value"),
    ],
)
def test_malformed_sets_are_invalid_input(text: str, problem: str) -> None:
    with pytest.raises(OverrideError) as caught:
        parse_set(text)
    assert problem in str(caught.value)
    assert f"--set '{text}'" in str(caught.value)
    assert caught.value.exit_code == EXIT_INVALID_INPUT


# --- --seeds --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seeds"),
    [("1..5", (1, 2, 3, 4, 5)), ("1,2,7", (1, 2, 7)), ("0..2, 10", (0, 1, 2, 10)), ("3", (3,))],
)
def test_seeds_are_ranges_and_lists(text: str, seeds: tuple[int, ...]) -> None:
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("5..1", "the range '5..1' is empty"),
        ("1..x", "expected seeds like '1..5'"),
        ("-1", "expected seeds like '1..5'"),
        ("1,2,1", "a seed is named twice"),
        ("0..99999999", "the range '0..99999999' names 100000000 seeds; at most 10000"),
        ("\u00b2", "expected seeds like '1..5'"),  # '²': isdigit, and int() failed (traceback)
        ("", "expected seeds like '1..5'"),
    ],
)
def test_bad_seeds_are_invalid_input(text: str, problem: str) -> None:
    with pytest.raises(OverrideError, match="--seeds"):
        parse_seeds(text)
    with pytest.raises(OverrideError) as caught:
        parse_seeds(text)
    assert problem in str(caught.value)


def test_an_empty_seeds_option_is_refused_before_any_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--seeds "$SEEDS"`` with the variable empty ran the file's own seed and exited 0."""
    from palaestra.cli.common import State
    from palaestra.cli.sweeps import start_sweep

    def no_run(*args: object) -> None:
        raise AssertionError("a run was prepared")

    monkeypatch.setattr("palaestra.experiment.api.prepare_runs", no_run)
    with pytest.raises(OverrideError, match="--seeds '': expected seeds like"):
        start_sweep(State(None, 0), ["run.yml"], seeds="", sets=(), parallel=None)


# --- the grid and derived uids ---------------------------------------------------------------


def test_the_grid_multiplies_seeds_and_each_set_seeds_outermost() -> None:
    grid = expand_grid((1, 2), [Override("x.lr", (0.1, 0.01)), Override("y.n", (3, 4, 5))])
    assert len(grid) == 2 * 2 * 3
    assert grid[0] == {"seed": 1, "x.lr": 0.1, "y.n": 3}
    assert grid[1] == {"seed": 1, "x.lr": 0.1, "y.n": 4}
    assert grid[-1] == {"seed": 2, "x.lr": 0.01, "y.n": 5}
    assert len({tuple(point.items()) for point in grid}) == len(grid)


def test_no_overrides_is_one_run_as_written() -> None:
    assert expand_grid() == [{}]
    assert derived_uids("run", [{}]) == ["run"]


def test_a_path_set_twice_is_refused() -> None:
    with pytest.raises(OverrideError, match="'seed' is set twice"):
        expand_grid((1, 2), [Override("seed", (3,))])


def test_a_value_given_twice_is_refused() -> None:
    """Two runs of one grid point would get one uid."""
    with pytest.raises(OverrideError, match=r"'x.lr': a value is given twice \(0.1, 0.1\)"):
        expand_grid((), [Override("x.lr", (0.1, 0.1))])


def test_derived_uids_name_the_last_key_and_value() -> None:
    grid = expand_grid((1,), [Override("a.0.brain.params.lr", (0.1, 0.01))])
    assert derived_uids("run", grid) == ["run-seed1-lr0.1", "run-seed1-lr0.01"]


def test_uids_that_would_not_be_plain_or_unique_are_hashed() -> None:
    spaced = derived_uids("run", [{"a.name": "with space"}, {"a.name": "other"}])
    assert all(uid.startswith("run-") and len(uid) == len("run-") + 10 for uid in spaced)
    assert len(set(spaced)) == 2
    # "1" (a string) and 1 (a number) read the same: readable uids would collide
    clashing = derived_uids("run", [{"a.n": "1"}, {"a.n": 1}])
    assert clashing[0] != clashing[1] and "n1" not in clashing[0]
    assert derived_uid("run", {"a.name": "with space"}) == spaced[0]  # stable


@pytest.mark.parametrize("uid", ["u" * 128, "ü" * 64, "x" * 117 + "ü" * 5])
def test_hashed_uids_of_a_long_uid_stay_names_and_apart(uid: str) -> None:
    """A run file's uid of up to 128 bytes (the name rule) made ``<uid>-<hash>`` longer: the
    derived run file failed its check (exit 2, "it is 139 bytes long" at the file's uid)."""
    grid = [{"seed": 1}, {"seed": 2}]
    uids = derived_uids(uid, grid)
    assert all(name_problem(name) is None for name in uids), uids
    assert len(set(uids)) == 2 and all(name.startswith(uid[:32]) for name in uids)
    assert derived_uids(uid + "2", grid)[0] != uids[0]  # the same start: another uid


def test_a_run_file_with_a_long_uid_can_be_swept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(probe, "_probe", lambda *args: None)  # (ids left to the run)
    uid = "u" * 120
    (tmp_path / "run.yml").write_text(DUMMY.replace("uid: dummy-run\n", f"uid: {uid}\n"))
    runs = prepare_runs(tmp_path / "run.yml", [{"seed": 1}, {"seed": 2}], RuntimeConfig())
    assert [spec.seed for spec, _ in runs] == [1, 2]
    assert len({spec.uid for spec, _ in runs}) == 2
    assert all(spec.uid.startswith(uid[:100]) for spec, _ in runs)


def test_a_yaml_date_names_its_run_as_written() -> None:
    """``--set start=2020-01-01`` is a date (YAML's): it raised TypeError (JSON) in the uid."""
    grid = expand_grid((), [parse_set("env.params.start=2020-01-01,2020-06-01 12:00:00")])
    uids = derived_uids("run", grid)
    assert uids[0] != uids[1] and all(uid.startswith("run-") for uid in uids)
    assert derived_uids("run", grid[:1]) == ["run-start2020-01-01"]


def test_dates_inside_lists_and_mappings_name_their_runs() -> None:
    """``--set x=[2020-01-01]`` (a date inside a collection) raised TypeError (JSON)."""
    grid = expand_grid((), [parse_set("p.x=[2020-01-01],{a: 2020-06-01}")])
    uids = derived_uids("run", grid)
    assert len(set(uids)) == 2 and all(uid.startswith("run-") for uid in uids)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("{2020-01-01: 1}", "got the date 2020-01-01"),
        ("!!set {a, b}", "type 'set' is not supported"),
        ("!!binary aGVsbG8=", "type 'bytes' is not supported"),
        ("&a [*a]", "a YAML alias refers to itself"),
        ("[{[1]: 2}]", "got a list or mapping"),
    ],
)
def test_values_a_run_file_cannot_hold_are_invalid_input(value: str, problem: str) -> None:
    """Each of these ended the sweep with a bare TypeError or ValueError traceback (exit 1)."""
    with pytest.raises(OverrideError) as caught:
        parse_set(f"p.x={value}")
    assert problem in str(caught.value)
    assert caught.value.exit_code == EXIT_INVALID_INPUT


# --- applied to a run file -------------------------------------------------------------------


def test_overrides_set_deep_values_and_the_derived_uid() -> None:
    overrides = {"seed": 7, MAX_ITER: 3, "schedule.1.phase_1.phase_config.episodes": 2}
    text = apply_overrides(DUMMY, overrides, uid="dummy-run-x", source="dummy_run.yml")
    run = load_run_text(text, check_classes=False)
    assert (run.uid, run.experiment_uid, run.seed) == ("dummy-run-x", "dummy-experiments", 7)
    assert run.phases[0].environments[0].params["max_iter"] == 3
    assert run.phases[1].config.episodes == 2
    assert "# environments, agents and simulation are inherited from phase_0" in text


def test_the_experiment_uid_defaults_to_the_original_run() -> None:
    without = DUMMY.replace("experiment_uid: dummy-experiments\n", "")
    text = apply_overrides(without, {"seed": 1}, uid="dummy-run-seed1", source="f.yml")
    run = load_run_text(text, check_classes=False)
    assert (run.uid, run.experiment_uid) == ("dummy-run-seed1", "dummy-run")


def test_the_last_key_may_be_new_and_a_set_uid_is_kept() -> None:
    path = "schedule.0.phase_0.agents.0.brain.params.lr"
    text = apply_overrides(DUMMY, {path: 0.5, "uid": "mine"}, uid="ignored", source="f.yml")
    document = YAML(typ="safe").load(text)
    assert document["uid"] == "mine"
    assert document["schedule"][0]["phase_0"]["agents"][0]["brain"]["params"] == {"lr": 0.5}


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        (
            "schedule.0.phase_0.environment.0.params.max_iter",
            "has no key 'environment' at schedule.0.phase_0 (its keys: environments, agents, "
            "simulation, phase_config)",
        ),
        (
            "schedule.2.phase_2.x",
            "has a list of 2 items at schedule; expected an index from 0 to 1, got '2'",
        ),
        ("schedule.first.x", "expected an index from 0 to 1, got 'first'"),
        ("seed.x", "has the value 42 at seed, not a mapping or list, so 'x' cannot be looked up"),
    ],
)
def test_a_bad_path_names_itself_and_where_it_stopped(path: str, problem: str) -> None:
    with pytest.raises(OverrideError) as caught:
        apply_overrides(DUMMY, {path: 1}, uid="u", source="dummy_run.yml")
    message = str(caught.value)
    assert message.startswith(f"--set '{path}': dummy_run.yml ")
    assert problem in message
    assert caught.value.exit_code == EXIT_INVALID_INPUT


def test_an_invalid_override_is_shown_at_the_files_line_naming_the_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--set ...episodes=0`` was reported at line 37 of the derived document, laid out anew
    (the file's line 34 holds ``episodes: 1``), with no word of the override it came from."""
    monkeypatch.setattr(probe, "_probe", lambda *args: None)  # (ids left to the run)
    text = DUMMY.replace("experiment_uid: dummy-experiments\n", "")
    (tmp_path / "run.yml").write_text(text)
    path = "schedule.0.phase_0.phase_config.episodes"
    with pytest.raises(RunFileError) as caught:
        prepare_runs(tmp_path / "run.yml", [{path: 0}], RuntimeConfig())
    error = caught.value
    assert error.line == text.splitlines().index("        episodes: 1") + 1
    assert error.key == "schedule[0].phase_0.phase_config.episodes"
    assert error.hint is not None and f"This run sets {path}=0 (--set, --seeds)" in error.hint


def test_an_error_at_a_key_an_override_adds_is_shown_at_the_nearest_key_above() -> None:
    point = {"schedule.1.phase_1.phase_config.bogus": 1, "seed": 3}
    derived = apply_overrides(DUMMY, point, uid="u", source="run.yml")
    with pytest.raises(RunFileError) as caught:
        load_run_text(derived, path="run.yml", check_classes=False)
    error = in_original(caught.value, DUMMY, point)
    lines = DUMMY.splitlines()
    assert error.line == len(lines) - lines[::-1].index("      phase_config:")  # phase_1's
    assert error.hint is not None
    assert error.hint.startswith("This run sets schedule.1.phase_1.phase_config.bogus=1, seed=3")
    assert "The keys allowed here are" in error.hint  # (the error's own hint follows)


# --- --keep-going in a sweep -----------------------------------------------------------------


def _sweep_with(
    monkeypatch: pytest.MonkeyPatch, keep_going: bool, run_files: list[str]
) -> tuple[int, list[str]]:
    """Sweep ``run_files`` where ``bad.yml`` is invalid and every run finishes (no process)."""
    from palaestra.cli import sweeps
    from palaestra.cli.common import State
    from palaestra.experiment.executor import RunOutcome

    def prepare(path: str, grid: object, config: object) -> list[tuple[object, dict]]:
        if path == "bad.yml":
            raise RunFileError("expected an integer >= 0, got -1.", path=path, key="seed")
        return [(path, {"seed": 1})]

    executed: list[str] = []

    def here(
        state: object, specs: list[str], parallel: int, ended: dict[int, RunOutcome]
    ) -> list[RunOutcome]:
        executed.extend(specs)
        return [RunOutcome(run_uid=spec, instance_uid="i", exit_code=0) for spec in specs]

    monkeypatch.setattr("palaestra.experiment.api.prepare_runs", prepare)
    monkeypatch.setattr("palaestra.experiment.capacity.ensure", lambda specs: None)
    monkeypatch.setattr("palaestra.experiment.executor.writable_data_path", lambda path: None)
    monkeypatch.setattr(sweeps, "_here", here)
    code = sweeps.start_sweep(
        State(None, 0), run_files, seeds="1", sets=(), parallel=None, keep_going=keep_going
    )
    return code, executed


def test_keep_going_in_a_sweep_leaves_an_invalid_run_file_out(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--keep-going --seeds 1 good.yml bad.yml`` stopped at bad.yml (exit 2, nothing ran):
    the sweep did not get the option."""
    code, executed = _sweep_with(monkeypatch, True, ["good.yml", "bad.yml"])
    assert (code, executed) == (EXIT_INVALID_INPUT, ["good.yml"])
    out, err = capsys.readouterr()
    assert "1 of 2 run files swept." in out
    assert "bad.yml: bad.yml: seed: expected an integer >= 0, got -1." in err


def test_without_keep_going_an_invalid_run_file_stops_the_sweep(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(RunFileError):
        _sweep_with(monkeypatch, False, ["good.yml", "bad.yml"])
    assert _sweep_with(monkeypatch, True, ["bad.yml"]) == (EXIT_INVALID_INPUT, [])


def test_runs_of_a_sweep_that_would_share_a_uid_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--set uid=x --seeds 1,2`` ran two runs named x: the store kept one run record (the
    second's seed and overrides) and the run's view showed the second instance only."""
    monkeypatch.setattr(probe, "_probe", lambda *args: None)  # (ids left to the run)
    (tmp_path / "run.yml").write_text(DUMMY)
    grid = expand_grid((1, 2), [parse_set("uid=x")])
    with pytest.raises(OverrideError) as caught:
        prepare_runs(tmp_path / "run.yml", grid, RuntimeConfig())
    assert "two runs of the sweep would have the uid 'x' (overrides seed=1, uid=x and " in str(
        caught.value
    )
    assert caught.value.exit_code == EXIT_INVALID_INPUT
    grid = expand_grid((1,), [parse_set("uid=x,y")])
    uids = [spec.uid for spec, _ in prepare_runs(tmp_path / "run.yml", grid, RuntimeConfig())]
    assert uids == ["x", "y"]


def test_the_sweep_table_shows_dates_inside_lists_and_mappings_as_written() -> None:
    """``--set x=[2020-01-01]`` showed as ``x=[datetime.date(2020, 1, 1)]`` in the table."""
    from palaestra.cli.sweeps import _table
    from palaestra.experiment.executor import RunOutcome

    points = [parse_set("p.x=[2020-01-01, a],{d: 2020-06-01, n: [1, 'b']}").values]
    table = _table(
        [{"p.x": value} for value in points[0]],
        [RunOutcome(run_uid=f"r{i}", instance_uid="i", exit_code=0) for i in range(2)],
    )
    assert "x=[2020-01-01, 'a']" in table
    assert "x={'d': 2020-06-01, 'n': [1, 'b']}" in table


SHARED = """\
uid: shared
base: &base {name: m:B, params: {lr: 1, net: {width: 8}}}
agents:
  - name: a
    brain: *base
  - name: b
    brain: *base
  - name: c
    brain:
      <<: *base
      extra: 1
"""


@pytest.mark.parametrize(
    ("path", "changed"),
    [
        ("agents.0.brain.params.lr", "a"),  # through an alias
        ("agents.1.brain.params.net.width", "b"),  # deeper, through an alias
        ("agents.2.brain.params.lr", "c"),  # through a merge
        ("base.params.lr", "base"),  # at the anchor: the places that refer to it keep theirs
    ],
)
def test_a_path_through_a_shared_node_sets_that_place_only(path: str, changed: str) -> None:
    text = apply_overrides(SHARED, {path: 5}, uid=None, source="shared.yml")
    document = YAML(typ="safe").load(text)
    places = {"base": document["base"]}
    places.update({agent["name"]: agent["brain"] for agent in document["agents"]})
    leaf = path.split(".")[-1]
    for name, brain in places.items():
        found = brain["params"]["net"]["width"] if leaf == "width" else brain["params"]["lr"]
        assert found == (5 if name == changed else (8 if leaf == "width" else 1)), name
    assert places["c"]["extra"] == 1 and places["c"]["name"] == "m:B"
