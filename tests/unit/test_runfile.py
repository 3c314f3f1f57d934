"""Tests of the run-file loader, :mod:`palaestra.experiment.runfile`."""

from __future__ import annotations

import copy
import importlib
import importlib.machinery
import importlib.util
import io
import sys
import textwrap
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from palaestra.core.description.specs import (
    ClassSpec,
    DumpPolicy,
    EnvironmentSpec,
    LoadSpec,
    PhaseConfig,
    RunSpec,
)
from palaestra.core.errors import RunFileError
from palaestra.experiment.runfile import load_run_file, load_run_text

FIXTURES = Path(__file__).parent / "fixtures" / "runfiles"
EXAMPLES = Path(__file__).parents[2] / "experiments"
MINIMAL = FIXTURES / "minimal.yml"

PLUGINS = """
import importlib


def _base(module, name):
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return object


class Brain(_base("palaestra.agent.brain", "Brain")):
    def __init__(self, lr=0.001, layers=(32,)):
        self.lr, self.layers = lr, layers

    def thinking(self, muscle_id, data_from_muscle):
        return None


class Muscle(_base("palaestra.agent.muscle", "Muscle")):
    def propose_actions(self, sensors, actuators_available):
        return actuators_available, None


class Picky(Muscle):
    def __init__(self, model_path, eps=0.1, **more):
        self.model_path, self.eps = model_path, eps


class Objective(_base("palaestra.agent.objective", "Objective")):
    def internal_reward(self, memory, **kwargs):
        return None


class Env(_base("palaestra.environment.environment", "Environment")):
    def start_environment(self):
        from palaestra.core.information import ActuatorInformation, SensorInformation
        from palaestra.core.spaces import Discrete

        sensors = [SensorInformation(0, Discrete(2), uid) for uid in ("0", "1")]
        return sensors, [ActuatorInformation(0, Discrete(2), "0")]

    def update(self, actuators):
        return [], [], False


class SizedEnv(Env):
    def __init__(self, uid, broker_uri, seed, size):
        super().__init__(uid, broker_uri, seed)
        self.size = size


class HalfBrain(_base("palaestra.agent.brain", "Brain")):  # without thinking
    pass


class Sim:
    pass


class Condition:
    pass
"""


@pytest.fixture(scope="session")
def plugin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("plugins")
    (directory / "rf_plugins.py").write_text(PLUGINS)
    return directory


@pytest.fixture
def plugins(plugin_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Put the ``rf_plugins`` module named by the fixtures on ``sys.path``."""
    monkeypatch.syspath_prepend(str(plugin_dir))


@pytest.fixture
def write_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable]:
    """Return a function that writes an importable module; it is forgotten afterwards."""
    names: list[str] = []
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(relative: str, source: str) -> None:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(textwrap.dedent(source))
        importlib.invalidate_caches()
        names.append(relative.split("/")[0].removesuffix(".py"))

    yield write
    for name in [name for name in sys.modules if name.split(".")[0] in names]:
        del sys.modules[name]


def variant(old: str, new: str, source: Path = MINIMAL) -> tuple[str, int]:
    """Return a fixture's text with ``old`` (which occurs once) replaced, and its line."""
    text = source.read_text()
    assert text.count(old) == 1, old
    return text.replace(old, new), text[: text.index(old)].count("\n") + 1


def error_of(text: str, *, check_classes: bool = False) -> RunFileError:
    with pytest.raises(RunFileError) as caught:
        load_run_text(text, path="run.yml", check_classes=check_classes)
    error = caught.value
    assert error.path == "run.yml"
    return error


# --- valid run files ---------------------------------------------------------------------


def test_minimal_run_file_gets_the_defaults(plugins: None) -> None:
    run = load_run_file(MINIMAL)
    assert (run.uid, run.experiment_uid, run.seed) == ("minimal run", "minimal run", 7)
    assert run.version == "3.10"
    assert run.path == str(MINIMAL)
    assert run.document == MINIMAL.read_text()
    assert run.conditions == (
        ClassSpec(name="palaestra.experiment:VanillaRunGovernorTerminationCondition"),
    )
    (phase,) = run.phases
    assert (phase.index, phase.name) == (0, "only_phase")
    assert phase.environments == (EnvironmentSpec(name="rf_plugins:Env", uid="Env"),)
    (agent,) = phase.agents
    assert agent.brain == ClassSpec(
        name="rf_plugins:Brain", params={"lr": 0.5, "layers": [64, 64]}
    )
    assert agent.muscle.params == {} and agent.objective.params == {}
    assert (agent.sensors, agent.actuators, agent.load) == (("Env.0", "Env.1"), ("Env.0",), None)
    assert phase.simulation.conditions == (
        ClassSpec(name="rf_plugins:Condition", params={"limit": 3}),
    )
    assert phase.config == PhaseConfig(mode="train", worker=2, episodes=1)


def test_phases_inherit_what_they_do_not_set() -> None:
    run = load_run_file(FIXTURES / "inheritance.yml", check_classes=False)
    warmup, train, evaluate = run.phases
    assert run.experiment_uid == "inheritance experiment"
    assert run.conditions == (ClassSpec(name="rf_plugins:Condition", params={"max_phases": 3}),)
    assert [phase.index for phase in run.phases] == [0, 1, 2]
    # lists are inherited whole, or replaced whole
    assert train.environments == warmup.environments
    assert train.agents == warmup.agents
    assert [env.uid for env in evaluate.environments] == ["grid", "maze"]
    assert evaluate.environments[0].params == {"size": 8}
    assert evaluate.agents[0].sensors == ("grid.pos", "maze.7")
    assert evaluate.agents[0].load == LoadSpec(agent="walker", phase=1, strict=True)
    assert warmup.agents[0].load is None
    # mappings are merged key by key, recursively
    assert warmup.simulation.params == {"steps": 10, "nested": {"a": 1, "b": 2}}
    assert train.simulation.params == {"steps": 10, "nested": {"a": 1, "b": 20}}
    assert evaluate.simulation == train.simulation
    assert warmup.config == PhaseConfig(mode="train", worker=1, episodes=3, evaluate_every=2)
    assert train.config == PhaseConfig(mode="train", worker=4, episodes=3, evaluate_every=2)
    # (but a test phase plays only the evaluations it sets itself)
    assert evaluate.config == PhaseConfig(mode="test", worker=4, episodes=1, evaluate_every=0)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yml")), ids=lambda p: p.name)
def test_example_run_files_load_with_their_classes(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))  # the examples' plug-in modules live there
    run = load_run_file(path, check_classes=True)
    assert run.experiment_uid
    assert all(phase.agents and phase.environments for phase in run.phases)
    assert run.conditions[0].name == "palaestra.experiment:VanillaRunGovernorTerminationCondition"


def test_a_phase_that_sets_only_its_config_inherits_the_rest() -> None:
    run = load_run_file(EXAMPLES / "multiworker_run.yml", check_classes=False)
    first, second = run.phases
    assert second.agents == first.agents and second.simulation == first.simulation
    assert second.environments == first.environments
    assert second.config == PhaseConfig(mode="test", worker=1, episodes=1)


def test_run_spec_travels_as_msgpack() -> None:
    run = load_run_file(FIXTURES / "inheritance.yml", check_classes=False)
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(run), type=RunSpec) == run


# --- invalid run files -------------------------------------------------------------------


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(RunFileError, match="cannot read the run file") as caught:
        load_run_file(tmp_path / "nope.yml")
    assert caught.value.path == str(tmp_path / "nope.yml")


def test_yaml_syntax_error() -> None:
    with pytest.raises(RunFileError, match="invalid YAML") as caught:
        load_run_file(FIXTURES / "invalid_yaml.yml")
    assert caught.value.line == 7
    assert caught.value.path == str(FIXTURES / "invalid_yaml.yml")


def test_unknown_key_suggests_the_known_one() -> None:
    text, line = variant("          muscle:\n", "          muscel:\n")
    error = error_of(text)
    assert (error.line, error.key) == (line, "schedule[0].only_phase.agents[0].muscel")
    assert error.hint == "Did you mean 'muscle'?"


def test_wrong_type() -> None:
    text, line = variant("sensors: [Env.0, Env.1]", "sensors: Env.0")
    error = error_of(text)
    assert (error.line, error.key) == (line, "schedule[0].only_phase.agents[0].sensors")
    assert error.message == "expected a list, got 'Env.0'."


def test_missing_key() -> None:
    block = "          objective:\n            name: rf_plugins:Objective\n            params:\n"
    text, _ = variant(block, "")
    error = error_of(text)
    assert (error.line, error.key) == (11, "schedule[0].only_phase.agents[0]")
    assert error.message == "missing required key 'objective'."


def test_bad_class_name_form() -> None:
    text, line = variant("name: rf_plugins:Brain", "name: rf_plugins.Brain")
    error = error_of(text)
    assert (error.line, error.key) == (line, "schedule[0].only_phase.agents[0].brain.name")
    assert "is not a class name of the form" in error.message
    assert "'rf_plugins:Brain'" in (error.hint or "")


def test_unknown_module(plugins: None) -> None:
    text, line = variant("name: rf_plugins:Muscle", "name: rf_no_such_module:Muscle")
    error = error_of(text, check_classes=True)
    assert (error.line, error.key) == (line, "schedule[0].only_phase.agents[0].muscle.name")
    assert "no module 'rf_no_such_module'" in error.message


def test_unknown_class_suggests_the_known_one(plugins: None) -> None:
    text, line = variant("name: rf_plugins:Brain", "name: rf_plugins:Brian")
    error = error_of(text, check_classes=True)
    assert (error.line, error.key) == (line, "schedule[0].only_phase.agents[0].brain.name")
    assert error.message == "no class 'rf_plugins:Brian'."
    assert error.hint == "Did you mean 'Brain'?"


def test_module_that_fails_to_import_shows_the_users_error(plugins: None, write_module) -> None:
    write_module("rf_broken.py", "raise ImportError('needs the frobnicator package')\n")
    text, line = variant("name: rf_plugins:Env", "name: rf_broken:Env")
    error = error_of(text, check_classes=True)
    assert (error.line, error.key) == (
        line,
        "schedule[0].only_phase.environments[0].environment.name",
    )
    assert "needs the frobnicator package" in error.message


def test_package_that_fails_to_import_shows_the_users_error(plugins: None, write_module) -> None:
    write_module("rf_badpkg/__init__.py", "raise RuntimeError('no licence server')\n")
    write_module("rf_badpkg/envs.py", "class Env:\n    pass\n")
    text, line = variant("name: rf_plugins:Env", "name: rf_badpkg.envs:Env")
    error = error_of(text, check_classes=True)
    assert (error.line, error.key) == (
        line,
        "schedule[0].only_phase.environments[0].environment.name",
    )
    assert "RuntimeError: no licence server" in error.message


def test_class_of_the_wrong_base(plugins: None, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("palaestra.agent.brain")
    fake.__spec__ = importlib.machinery.ModuleSpec("palaestra.agent.brain", None)
    fake.Brain = type("Brain", (), {})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "palaestra.agent.brain", fake)
    text, line = variant("name: rf_plugins:Brain", "name: rf_plugins:Muscle")
    error = error_of(text, check_classes=True)
    assert (error.line, error.key) == (line, "schedule[0].only_phase.agents[0].brain.name")
    assert "is not a subclass of 'palaestra.agent.brain:Brain'" in error.message


def test_palaestrai_class_name_suggests_the_palaestra_one(plugins: None) -> None:
    if importlib.util.find_spec("palaestrai") is not None:
        pytest.skip("palaestrai is installed here")
    old = "name: rf_plugins:Condition\n            params: {limit: 3}"
    text, line = variant(old, "name: palaestrai.core.errors:RunFileError")
    error = error_of(text, check_classes=True)
    assert (error.line, error.key) == (
        line,
        "schedule[0].only_phase.simulation.conditions[0].name",
    )
    assert error.hint == "Did you mean 'palaestra.core.errors:RunFileError'?"


def test_sensor_not_of_a_phase_environment() -> None:
    text, line = variant("sensors: [Env.0, Env.1]", "sensors: [Env.0, Evn.1]")
    error = error_of(text)
    assert (error.line, error.key) == (line, "schedule[0].only_phase.agents[0].sensors[1]")
    assert "'Evn.1'" in error.message
    assert "Did you mean 'Env.1'?" in (error.hint or "") and "'Env'" in (error.hint or "")


def test_inherited_sensor_error_points_where_it_was_written() -> None:
    with pytest.raises(RunFileError) as caught:
        load_run_file(FIXTURES / "invalid_inherited_sensor.yml", check_classes=False)
    error = caught.value
    assert (error.line, error.key) == (18, "schedule[0].phase_0.agents[0].sensors[0]")
    assert "phase 'phase_1'" in error.message and "'new_env'" in (error.hint or "")


def test_duplicate_agent_names() -> None:
    source = EXAMPLES / "dummy_run.yml"
    text = source.read_text().replace("name: attacker", "name: defender", 1)
    line = source.read_text().split("name: attacker")[0].count("\n") + 1
    error = error_of(text)
    assert (error.line, error.key) == (line, "schedule[0].phase_0.agents[1].name")
    assert "used twice" in error.message


def test_duplicate_environment_uids() -> None:
    text, line = variant(
        "            name: rf_plugins:Env\n",
        "            name: rf_plugins:Env\n        - environment: {name: other:Env, uid: Env}\n",
    )
    error = error_of(text)
    assert (error.line, error.key) == (
        line + 1,
        "schedule[0].only_phase.environments[1].environment.uid",
    )


def test_empty_schedule() -> None:
    text = MINIMAL.read_text()
    error = error_of(text[: text.index("schedule:")] + "schedule: []\n")
    assert (error.line, error.key) == (5, "schedule")
    assert error.message == "expected a non-empty list, got an empty list."


def test_worker_zero() -> None:
    text, line = variant("worker: 2", "worker: 0")
    error = error_of(text)
    assert (error.line, error.key) == (line, "schedule[0].only_phase.phase_config.worker")
    assert error.message == "expected an integer >= 1, got 0."


def test_negative_episodes() -> None:
    text, line = variant("episodes: null", "episodes: -3")
    error = error_of(text)
    assert (error.line, error.key) == (line, "schedule[0].only_phase.phase_config.episodes")
    assert error.message == "expected an integer >= 1, got -3."


def test_bad_mode() -> None:
    text, line = variant("mode: Train", "mode: trian")
    error = error_of(text)
    assert (error.line, error.key) == (line, "schedule[0].only_phase.phase_config.mode")
    assert error.hint == "Did you mean 'train'?"


def test_boolean_is_not_an_integer() -> None:
    text, line = variant("seed: 7", "seed: true")
    error = error_of(text)
    assert (error.line, error.key, error.message) == (
        line,
        "seed",
        "expected an integer >= 0, got true.",
    )


def test_phase_keys_not_indented_under_the_phase_name() -> None:
    text = 'uid: u\nseed: 1\nversion: "3.5"\nschedule:\n  - phase_0:\n    environments: []\n'
    error = error_of(text)
    assert (error.line, error.key) == (5, "schedule[0]")
    assert error.hint == "Indent the phase's keys under the phase name."


def test_first_phase_cannot_inherit() -> None:
    text = MINIMAL.read_text()
    error = error_of(text[: text.index("      simulation:")])
    assert (error.line, error.key) == (6, "schedule[0].only_phase")
    assert "missing required key 'simulation'" in error.message


# --- names, seeds and YAML aliases ---------------------------------------------------------

AGENT = "schedule[0].only_phase.agents[0]"
ALIAS_VALUES_MAX = 100_000  # palaestra.experiment.runfile_schema.ALIAS_VALUES_MAX


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ('"../../../../tmp/evil"', "it contains '/'"),
        ('"a\\\\b"', "it contains '\\\\'"),
        ("'.hidden'", "it starts with '.'"),
        ('"a\\0b"', "it contains the control character '\\x00'"),
        ('"tab\\there"', "it contains the control character '\\t'"),
        ('"' + "x" * 129 + '"', "it is 129 bytes long"),
        ('"' + "\u00e9" * 65 + '"', "it is 130 bytes long"),
    ],
)
def test_an_agent_name_that_is_no_safe_name_is_refused(name: str, problem: str) -> None:
    text, line = variant("        - name: solo\n", f"        - name: {name}\n")
    error = error_of(text)
    assert (error.line, error.key) == (line, f"{AGENT}.name")
    assert error.message.endswith(f"cannot be used as a name: {problem}.")
    assert error.hint is not None and "1 to 128 bytes of UTF-8" in error.hint


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ("uid: minimal run\n", "uid: minimal/run\n", "uid"),
        ("uid: minimal run\n", "uid: run\nexperiment_uid: ../x\n", "experiment_uid"),
        ("  - only_phase:\n", "  - ../only_phase:\n", "schedule[0].../only_phase"),
        (
            "            name: rf_plugins:Env\n",
            "            name: rf_plugins:Env\n            uid: 'a/b'\n",
            "schedule[0].only_phase.environments[0].environment.uid",
        ),
        ("          load: null\n", "          load: {agent: ../x}\n", f"{AGENT}.load.agent"),
        (
            "          load: null\n",
            "          load: {experiment_run: /etc}\n",
            f"{AGENT}.load.experiment_run",
        ),
    ],
)
def test_every_name_that_becomes_part_of_a_path_is_checked(old: str, new: str, key: str) -> None:
    text, _ = variant(old, new)
    error = error_of(text)
    assert error.key == key
    assert "cannot be used as a name: it " in error.message


def test_names_with_spaces_punctuation_and_letters_of_any_script_are_accepted() -> None:
    longest = "\u00e4" * 64  # 128 bytes of UTF-8
    text, _ = variant("        - name: solo\n", f"        - name: '{longest}'\n")
    text = text.replace("uid: minimal run", 'uid: "Yo-ho, a dummy experiment run for me!"')
    text = text.replace("  - only_phase:", '  - "Training without Filters":')
    run = load_run_text(text, check_classes=False)
    assert run.uid == run.experiment_uid == "Yo-ho, a dummy experiment run for me!"
    assert run.phases[0].name == "Training without Filters"
    assert run.phases[0].agents[0].name == longest


def test_a_date_as_a_phase_name_is_refused_as_a_date() -> None:
    """A phase named 2024-05-01 (a YAML date key) was blamed as 'not a list or mapping'."""
    text, line = variant("  - only_phase:\n", "  - 2024-05-01:\n")
    error = error_of(text)
    assert (error.line, error.key) == (line, "schedule[0]")
    assert error.message.endswith("got the date 2024-05-01.")
    assert error.hint == "Put the key in quotes."
    quoted, _ = variant("  - only_phase:\n", "  - '2024-05-01':\n")
    assert load_run_text(quoted, check_classes=False).phases[0].name == "2024-05-01"


def test_values_and_keys_tagged_str_are_strings() -> None:
    """``uid: !!str 2024`` (YAML's core tag) was refused: "a YAML value of type
    'TaggedScalar' is not supported here"; as a phase name, "not a list or mapping"."""
    text, _ = variant("  - only_phase:\n", "  - !!str 2024-05-01:\n")
    text = text.replace("uid: minimal run", "uid: !!str 2024")
    text = text.replace("        - name: solo\n", "        - name: !!str 007\n")
    run = load_run_text(text, check_classes=False)
    assert (run.uid, run.phases[0].name, run.phases[0].agents[0].name) == (
        "2024",
        "2024-05-01",
        "007",
    )


@pytest.mark.parametrize("seed", [0, 2**31, 2**63 - 1])
def test_every_seed_the_store_can_keep_is_accepted(seed: int) -> None:
    text, _ = variant("seed: 7\n", f"seed: {seed}\n")
    assert load_run_text(text, check_classes=False).seed == seed


@pytest.mark.parametrize("seed", [2**63, 2**64 - 1])
def test_a_seed_beyond_the_store_is_refused_with_the_range(seed: int) -> None:
    text, line = variant("seed: 7\n", f"seed: {seed}\n")
    error = error_of(text)
    assert (error.line, error.key) == (line, "seed")
    assert error.message == (
        "expected an integer <= 9223372036854775807 (2^63 - 1, the largest integer the store "
        f"keeps), got {seed}."
    )


def test_episodes_beyond_the_store_are_refused() -> None:
    text, line = variant("        episodes: null\n", f"        episodes: {2**31}\n")
    error = error_of(text)
    assert (error.line, error.key) == (line, "schedule[0].only_phase.phase_config.episodes")
    assert error.message.startswith("expected an integer <= 2147483647")


def test_shared_configurations_through_anchors_and_merge_keys_still_work() -> None:
    text = (EXAMPLES / "dummy_run.yml").read_text()
    text = text.replace(
        "          brain: {name: palaestra.agent.dummy_brain:DummyBrain, params: {}}\n",
        "          brain: &brain {name: palaestra.agent.dummy_brain:DummyBrain, params: {}}\n",
        1,
    ).replace(
        "          brain: {name: palaestra.agent.dummy_brain:DummyBrain, params: {}}\n",
        "          brain: *brain\n",
    )
    text = text.replace(
        "            params: {discrete: true, max_iter: 10}\n",
        "            params:\n              <<: &base {discrete: true, max_iter: 10}\n"
        "              copy: *base\n",
    )
    run = load_run_text(text, check_classes=False)
    defender, attacker = run.phases[0].agents
    assert defender.brain == attacker.brain
    assert run.phases[0].environments[0].params == {
        "discrete": True,
        "max_iter": 10,
        "copy": {"discrete": True, "max_iter": 10},
    }


def _aliases(references: int, size: int = 1000) -> str:
    """The minimal run file with a list of ``size`` items, referenced ``references`` times."""
    items = ", ".join("0" for _ in range(size))
    shared = (
        f"            params: {{shared: &shared [{items}], refs: [{'*shared, ' * references}]}}"
    )
    text, _ = variant(
        "            params: {lr: 0.5, layers: [64, 64]}\n", shared.replace(", ]", "]") + "\n"
    )
    return text


def test_aliases_may_copy_up_to_the_limit() -> None:
    run = load_run_text(_aliases(ALIAS_VALUES_MAX // 1000), check_classes=False)
    assert len(run.phases[0].agents[0].brain.params["refs"]) == ALIAS_VALUES_MAX // 1000


def test_aliases_copying_beyond_the_limit_are_refused_at_the_alias() -> None:
    text = _aliases(ALIAS_VALUES_MAX // 1000 + 1)
    error = error_of(text)
    line = text[: text.index("&shared")].count("\n") + 1
    assert error.line == line
    assert error.key == f"{AGENT}.brain.params.refs[{ALIAS_VALUES_MAX // 1000}]"
    assert (
        error.message
        == "YAML aliases expand to more than 100,000 values (counted up to the alias here)."
    )


# --- mutation test -----------------------------------------------------------------------

_BASE = YAML(typ="safe", pure=True).load(MINIMAL.read_text())
_KNOWN_KEYS = sorted(
    {"uid", "seed", "version", "schedule", "run_config", "condition", "environments", "agents"}
    | {"simulation", "phase_config", "environment", "reward", "name", "uid", "params", "brain"}
    | {"muscle", "objective", "sensors", "actuators", "load", "filters", "mode", "episodes"}
)
_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
_JUNK = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
_KEYS = st.sampled_from(_KNOWN_KEYS) | st.text(max_size=8)


def _slots(data: Any) -> list[tuple[Any, Any]]:
    """Return every (container, key or index) in ``data``."""
    children = data.items() if isinstance(data, dict) else enumerate(data)
    slots = []
    for key, value in children:
        slots.append((data, key))
        if isinstance(value, dict | list) and value:
            slots.extend(_slots(value))
    return slots


@st.composite
def mutated_run_files(draw: st.DrawFn) -> str:
    data = copy.deepcopy(_BASE)
    for _ in range(draw(st.integers(1, 4))):
        slots = _slots(data)
        if not slots:
            break
        container, key = draw(st.sampled_from(slots))
        action = draw(st.sampled_from(["delete", "replace", "rename", "insert"]))
        if action == "delete":
            del container[key]
        elif action == "replace":
            container[key] = draw(_JUNK)
        elif isinstance(container, list):
            container.insert(key, draw(_JUNK))
        elif action == "rename":
            container[draw(_KEYS)] = container.pop(key)
        else:
            container[draw(_KEYS)] = draw(_JUNK)
    stream = io.StringIO()
    YAML(typ="safe", pure=True).dump(data, stream)
    return stream.getvalue()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_run_files())
def test_mutated_run_files_give_a_run_or_a_run_file_error(text: str) -> None:
    try:
        run = load_run_text(text, check_classes=False)
    except RunFileError as error:
        assert error.path == "<string>" and error.message
        assert error.line is None or 1 <= error.line <= text.count("\n") + 1
    else:
        assert isinstance(run, RunSpec)
        msgspec.msgpack.decode(msgspec.msgpack.encode(run), type=RunSpec)


# --- record and dump -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "every"), [("all", 1), ("episodes", 0), ("{every: 3}", 3), ("{every: 1}", 1)]
)
def test_record_gives_the_steps_recorded(plugins: None, record: str, every: int) -> None:
    text, _ = variant("mode: Train", f"mode: Train\n        record: {record}")
    assert load_run_text(text, path="run.yml").phases[0].config.record_every == every


def test_record_and_dump_default_to_everything() -> None:
    run = load_run_text(MINIMAL.read_text(), path="run.yml")
    assert run.phases[0].config.record_every == 1
    assert run.phases[0].agents[0].dump is None


def test_dump_is_read() -> None:
    text, _ = variant("load: null", "load: null\n          dump: {every: 5, keep: 2}")
    (agent,) = load_run_text(text, path="run.yml").phases[0].agents
    assert agent.dump == DumpPolicy(every=5, keep=2)


@pytest.mark.parametrize(
    ("value", "key", "message"),
    [
        ("sometimes", "record", "expected 'all', 'episodes' or {every: N}, got 'sometimes'."),
        ("{every: 0}", "record.every", "expected an integer >= 1, got 0."),
        ("{every: true}", "record.every", "expected an integer >= 1, got true."),
        ("{each: 2}", "record.each", "unknown key 'each'."),
        ("{}", "record", "missing required key 'every'."),
    ],
)
def test_bad_record_names_the_key(value: str, key: str, message: str) -> None:
    text, _ = variant("mode: Train", f"mode: Train\n        record: {value}")
    error = error_of(text)
    assert error.key == f"schedule[0].only_phase.phase_config.{key}"
    assert error.message == message


@pytest.mark.parametrize(
    ("value", "key", "message"),
    [
        ("{every: 2}", "dump", "missing required key 'keep'."),
        ("{every: 2, keep: 0}", "dump.keep", "expected an integer >= 1, got 0."),
        ("{every: -1, keep: 1}", "dump.every", "expected an integer >= 1, got -1."),
        ("3", "dump", "expected a mapping, got 3."),
    ],
)
def test_bad_dump_names_the_key(value: str, key: str, message: str) -> None:
    text, _ = variant("load: null", f"load: null\n          dump: {value}")
    error = error_of(text)
    assert error.key == f"schedule[0].only_phase.agents[0].{key}"
    assert error.message == message


def test_a_plugin_missing_an_abstract_method_fails_the_check(plugins: None) -> None:
    text, line = variant("name: rf_plugins:Brain", "name: rf_plugins:HalfBrain")
    error = error_of(text, check_classes=True)
    assert (error.line, error.key) == (line, "schedule[0].only_phase.agents[0].brain.name")
    assert (
        "'rf_plugins:HalfBrain' cannot be made: HalfBrain does not define thinking, which every "
        "brain must (abstract in its base class)."
    ) in error.message
    assert error.hint == "define thinking in HalfBrain"


@pytest.mark.parametrize(
    ("old", "new", "key", "message", "hint"),
    [
        (
            "params: {lr: 0.5, layers: [64, 64]}",
            "params: {lr: 0.5, layer: [64, 64]}",
            "brain.params",
            "'rf_plugins:Brain' cannot be made with these params: got an unexpected keyword "
            "argument 'layer' (the parameters of Brain: lr, layers).",
            "Did you mean 'layers'?",
        ),
        (
            "name: rf_plugins:Muscle",
            "name: rf_plugins:Muscle\n            params: {epsilon: 0.1}",
            "muscle.params",
            "'rf_plugins:Muscle' cannot be made with these params: got an unexpected keyword "
            "argument 'epsilon' (the parameters of Muscle: none).",
            None,
        ),
        (
            "name: rf_plugins:Muscle",
            "name: rf_plugins:Picky",
            "muscle.name",
            "'rf_plugins:Picky' cannot be made with these params: missing a required argument: "
            "'model_path' (the parameters of Picky: model_path, eps).",
            None,
        ),
    ],
    ids=["misspelt", "none-taken", "required-missing"],
)
def test_params_a_plugin_cannot_take_fail_the_check(
    plugins: None, old: str, new: str, key: str, message: str, hint: str | None
) -> None:
    """palaestra builds a Brain, Muscle, Objective or filter as ``Class(**params)``; params
    that its constructor does not take passed the check (exit 0) and failed the run with a
    TypeError traceback (exit 1)."""
    text, _ = variant(old, new)
    error = error_of(text, check_classes=True)
    assert error.key == f"schedule[0].only_phase.agents[0].{key}"
    assert (error.message, error.hint) == (message, hint)


@pytest.mark.parametrize(
    ("params", "message", "hint"),
    [
        (
            "{sise: 4}",
            "'rf_plugins:SizedEnv' cannot be made with these params: got an unexpected keyword "
            "argument 'sise' (the parameters of SizedEnv: uid, broker_uri, seed, size).",
            "Did you mean 'size'?",
        ),
        (
            "{}",
            "'rf_plugins:SizedEnv' cannot be made with these params: missing a required "
            "argument: 'size' (the parameters of SizedEnv: uid, broker_uri, seed, size).",
            None,
        ),
    ],
    ids=["misspelt", "required-missing"],
)
def test_params_an_environment_cannot_take_fail_the_check(
    plugins: None, params: str, message: str, hint: str | None
) -> None:
    """An environment is built as ``Class(**params)`` with its ``uid``, ``seed`` and
    ``broker_uri`` where it takes them: params its constructor does not take passed the check
    (exit 0) and failed the run with a TypeError traceback (exit 1)."""
    text, _ = variant(
        "name: rf_plugins:Env", f"name: rf_plugins:SizedEnv\n            params: {params}"
    )
    error = error_of(text, check_classes=True)
    assert error.key == "schedule[0].only_phase.environments[0].environment.params"
    assert (error.message, error.hint) == (message, hint)


def test_an_environment_taking_its_params_and_what_palaestra_gives_passes_the_check(
    plugins: None,
) -> None:
    text, _ = variant(
        "name: rf_plugins:Env",
        "name: rf_plugins:SizedEnv\n            uid: Env\n            params: {size: 4}",
    )
    run = load_run_text(text, path="run.yml", check_classes=True)
    assert run.phases[0].environments[0].params == {"size": 4}


def test_params_a_plugin_takes_as_keywords_pass_the_check(plugins: None) -> None:
    text, _ = variant(
        "name: rf_plugins:Muscle",
        "name: rf_plugins:Picky\n            params: {model_path: m.pt, extra: 1}",
    )
    (agent,) = load_run_text(text, path="run.yml", check_classes=True).phases[0].agents
    assert agent.muscle.params == {"model_path": "m.pt", "extra": 1}


@pytest.mark.parametrize(
    ("text", "line", "hint"),
    [
        (
            "uid: x\nschedule:\n  - p:\n      environments: []\n     agents: []\n",
            5,
            "line 5 is indented differently from the line above it (line 4: 'environments: []')",
        ),
        ("uid: x\nschedule:\n\t- p: 1\n", 3, "line 3 is indented with a tab"),
        ("uid: a: b\n", 1, "line 1 has a second ': ' (quote a value that holds one"),
        ("uid: [a, b\nseed: 1\n", 2, "is not closed before this"),
    ],
)
def test_a_yaml_error_says_what_it_most_likely_means(text: str, line: int, hint: str) -> None:
    error = error_of(text)
    assert error.message.startswith("invalid YAML: ")
    assert error.line == line
    assert error.hint is not None and hint in error.hint


def test_every_missing_required_key_is_reported_at_once_with_what_it_means() -> None:
    error = error_of("uid: x\nschedule: []\n")
    assert error.message == "missing required keys 'seed', 'version'."
    assert error.hint is not None
    assert "seed: the run's random seed, an integer" in error.hint
    assert 'version: the palaestrAI version the file is written for, e.g. "3.5"' in error.hint
