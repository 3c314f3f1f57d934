"""palaestra.compat: the finder that maps ``palaestrai.*`` onto palaestra, and its modules.

Every test restores ``sys.meta_path`` and forgets every ``palaestrai`` module it imported, so
the finder never leaks into other tests. The "real" palaestrAI is a tiny stand-in package
built in a temporary directory.
"""

from __future__ import annotations

import importlib
import logging
import os
import pkgutil
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

import palaestra.agent
import palaestra.compat.palaestrai
from palaestra.compat import finder
from palaestra.core.description.loading import load_class
from palaestra.core.errors import PluginLoadError

ROOT = Path(__file__).resolve().parents[2]


def _forget_palaestrai() -> None:
    for name in [n for n in sys.modules if n == "palaestrai" or n.startswith("palaestrai.")]:
        del sys.modules[name]


@pytest.fixture
def clean() -> Iterator[None]:
    meta_path, path, warnoptions = list(sys.meta_path), list(sys.path), list(sys.warnoptions)
    pythonpath = os.environ.get("PYTHONPATH")
    _forget_palaestrai()
    yield
    sys.meta_path[:] = meta_path
    sys.path[:] = path
    sys.warnoptions[:] = warnoptions
    if pythonpath is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = pythonpath
    _forget_palaestrai()
    importlib.invalidate_caches()


@pytest.fixture
def mapped(clean: None) -> None:
    finder.install()


def stand_in(tmp_path: Path) -> Path:
    """A package ``palaestrai`` as if palaestrAI were installed; returns its sys.path entry."""
    package = tmp_path / "site" / "palaestrai"
    (package / "agent").mkdir(parents=True)
    (package / "__init__.py").write_text("STAND_IN = True\n")
    (package / "agent" / "__init__.py").write_text("class Brain:\n    pass\n")
    return package.parent


def compat_module_names() -> list[str]:
    root = palaestra.compat.palaestrai
    found = ["palaestrai"]
    # walked under its own name: under "palaestrai." it would import (and walk) a real
    # palaestrAI installed beside palaestra
    prefix = root.__name__ + "."
    for info in pkgutil.walk_packages(root.__path__, prefix):
        found.append("palaestrai." + info.name[len(prefix) :])
    return found


# --- the finder -------------------------------------------------------------------------------


def test_names_map_onto_palaestra_classes_and_modules(mapped: None) -> None:
    import palaestrai.agent
    from palaestrai.agent import Brain, Muscle, Objective, SensorInformation
    from palaestrai.agent.brain import Brain as BrainFromModule
    from palaestrai.types import Box

    assert Brain is palaestra.agent.Brain is BrainFromModule
    assert Muscle is palaestra.agent.Muscle and Objective is palaestra.agent.Objective
    assert SensorInformation is palaestra.agent.SensorInformation
    assert Box is importlib.import_module("palaestra.types").Box
    assert palaestrai.agent is importlib.import_module("palaestra.compat.palaestrai.agent")
    assert palaestrai.agent.__spec__.name == "palaestra.compat.palaestrai.agent"  # its own
    assert palaestrai.agent.brain.Brain is Brain  # submodules are attributes, as in palaestrAI

    class MyBrain(Brain):
        def thinking(self, muscle_id: str, data_from_muscle: object) -> None:
            return None

    assert issubclass(MyBrain, palaestra.agent.Brain)


def test_run_file_names_load(mapped: None) -> None:
    for name in (
        "palaestrai.agent.dummy_brain:DummyBrain",
        "palaestrai.agent:DummyMuscle",
        "palaestrai.simulation:Vanilla",
        "palaestrai.simulation:VanillaSimControllerTerminationCondition",
        "palaestrai.experiment:VanillaRunGovernorTerminationCondition",
        "palaestrai.environment.dummy_environment:DummyEnvironment",
    ):
        palaestra_name = name.replace("palaestrai.", "palaestra.", 1)  # the same module paths
        assert load_class(name) is load_class(palaestra_name), name


def test_without_the_finder_palaestrai_is_not_there(clean: None) -> None:
    if importlib.util.find_spec("palaestrai") is not None:
        pytest.skip("a real palaestrai is installed in this environment")
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("palaestrai.agent")


def test_the_finder_takes_precedence_over_an_installed_palaestrai(
    clean: None, tmp_path: Path
) -> None:
    sys.path.insert(0, str(stand_in(tmp_path)))
    importlib.invalidate_caches()
    real = importlib.import_module("palaestrai.agent")
    assert getattr(importlib.import_module("palaestrai"), "STAND_IN", False)
    assert real.Brain is not palaestra.agent.Brain

    evicted = finder.install()  # the stand-in was imported first: it is evicted

    assert sorted(evicted) == ["palaestrai", "palaestrai.agent"]
    assert importlib.import_module("palaestrai.agent").Brain is palaestra.agent.Brain
    assert not hasattr(importlib.import_module("palaestrai"), "STAND_IN")

    finder.uninstall()  # and the real one is back
    assert importlib.import_module("palaestrai.agent").__file__ == real.__file__


def test_a_builtin_module_of_palaestra_maps_by_its_path(mapped: None) -> None:
    """palaestra's built-ins keep palaestrAI's module paths: a module palaestra.compat lacks
    in those packages is palaestra's own of the same path."""
    module = importlib.import_module("palaestrai.agent.context")
    assert module is importlib.import_module("palaestra.agent.context")
    assert finder.install() == []  # installed again (the executor does): nothing is evicted
    assert sys.modules["palaestrai.agent.context"] is module
    with pytest.raises(ModuleNotFoundError, match="not part of it"):
        importlib.import_module("palaestrai.agent.no_such_package.module")
    with pytest.raises(ModuleNotFoundError, match="not part of it"):
        importlib.import_module("palaestrai.util.spawn")  # not a built-ins' package


def test_install_is_idempotent_and_first(mapped: None) -> None:
    sys.meta_path.insert(0, sys.meta_path.pop())  # another finder moved to the front
    finder.install()
    assert sys.meta_path[0] is finder.FINDER
    assert sum(f is finder.FINDER for f in sys.meta_path) == 1
    assert finder.installed()
    assert finder.FINDER.find_spec("palaestrai_environments") is None  # not ours to map


@pytest.mark.parametrize("name", compat_module_names())
def test_every_compat_module_imports_under_its_palaestrai_name(mapped: None, name: str) -> None:
    module = importlib.import_module(name)
    assert module is importlib.import_module(name.replace("palaestrai", finder.TARGET, 1))


@pytest.mark.parametrize(
    ("name", "advice"),
    [
        ("palaestrai.store.query", "palaestra.store.query"),
        ("palaestrai.store.database_model", "palaestra.store.query"),
        ("palaestrai.cli", "palaestra"),
        ("palaestrai.cli.client", "palaestra"),
        ("palaestrai.core.runtime_config", "palaestra experiment-start"),
        ("palaestrai.experiment.executor", "palaestra experiment-start"),
    ],
)
def test_modules_palaestra_does_not_offer_say_what_to_use(
    mapped: None, name: str, advice: str
) -> None:
    with pytest.raises(ModuleNotFoundError) as caught:
        importlib.import_module(name)
    message = str(caught.value)
    refused = caught.value.name  # the module itself, or the refused package it is in
    assert refused is not None and name.startswith(refused)
    assert finder.refusal(refused) is not None
    assert f"palaestrAI's module '{refused}'" in message and advice in message


def test_an_unknown_palaestrai_module_is_named(mapped: None) -> None:
    with pytest.raises(ModuleNotFoundError, match=r"'palaestrai\.agent\.nope'.*not part of it"):
        importlib.import_module("palaestrai.agent.nope")


def test_load_class_shows_why_a_palaestrai_module_is_refused(mapped: None) -> None:
    with pytest.raises(
        PluginLoadError, match=r"palaestrai\.store\.query.*palaestra\.store\.query"
    ):
        load_class("palaestrai.store.query:ExperimentRunQuery")


def test_the_store_session_is_importable_but_refuses_use(mapped: None) -> None:
    from palaestrai.store import Session  # harl imports it at module level

    with pytest.raises(RuntimeError, match="palaestra.store.query"):
        Session()


@pytest.mark.parametrize("real", [False, True])
def test_plain_python_outside_palaestra_is_unaffected(tmp_path: Path, real: bool) -> None:
    """Importing palaestra (CLI and executor included) installs nothing: ``palaestrai`` is
    the real package, or missing."""
    path = [str(ROOT)] + ([str(stand_in(tmp_path))] if real else [])
    code = (
        "import sys, palaestra, palaestra.agent, palaestra.cli.main, "
        "palaestra.experiment.executor, palaestra.compat\n"
        "assert not palaestra.compat.installed()\n"
        "try:\n    import palaestrai\nexcept ModuleNotFoundError:\n    print('missing')\n"
        "else:\n    print('stand-in' if getattr(palaestrai, 'STAND_IN', 0) else 'real')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": ":".join(path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    if real:
        assert result.stdout.strip() == "stand-in"
    elif importlib.util.find_spec("palaestrai") is None:
        assert result.stdout.strip() == "missing"


SPAWNING = """
import multiprocessing as mp
import sys


def child(queue):
    import palaestra.agent
    from palaestra.compat import installed

    try:
        import palaestrai.agent
    except ModuleNotFoundError:
        queue.put((installed(), "missing"))
    else:
        queue.put((installed(), palaestrai.agent.Brain is palaestra.agent.Brain))


if __name__ == "__main__":
    import palaestra.compat

    if sys.argv[1] == "installed":
        palaestra.compat.install()
    for method in ("spawn", "forkserver", "fork"):
        context = mp.get_context(method)
        queue = context.Queue()
        process = context.Process(target=child, args=(queue,))
        process.start()
        print(method, *queue.get(timeout=60))
        process.join(timeout=60)
"""


@pytest.mark.timeout(120)
@pytest.mark.parametrize("found", ["on-PYTHONPATH", "as-installed"])
@pytest.mark.parametrize("parent", ["installed", "not-installed"])
def test_children_started_by_spawn_or_forkserver_install_the_finder_as_the_parent_did(
    tmp_path: Path, parent: str, found: str
) -> None:
    """A child that multiprocessing starts as a fresh interpreter (spawn, forkserver) installs
    the finder itself when the parent had it installed, and not otherwise: with palaestra on
    ``PYTHONPATH`` and with palaestra only installed (the child reads its ``-W`` options before
    :mod:`site` puts the installed packages on its path), from a directory without it."""
    script = tmp_path / "spawning.py"
    script.write_text(SPAWNING)
    env = {"PATH": "/usr/bin:/bin"}
    if found == "on-PYTHONPATH":
        env["PYTHONPATH"] = str(ROOT)
    elif importlib.util.find_spec("palaestra").origin != str(ROOT / "palaestra" / "__init__.py"):
        pytest.skip(
            "palaestra is imported from PYTHONPATH here, not from this interpreter's install"
        )
    result = subprocess.run(
        [sys.executable, str(script), parent],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert result.returncode == 0, result.stderr
    assert "Invalid -W option" not in result.stderr
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    if parent == "installed":
        expected = "True True"
    else:  # palaestrAI itself may be installed beside palaestra: then it is the real one
        expected = "False missing" if importlib.util.find_spec("palaestrai") is None else None
    for method in ("spawn", "forkserver", "fork"):
        if expected is not None:
            assert lines[method] == expected, (method, result.stdout)
        else:
            assert lines[method].startswith("False"), (method, result.stdout)


def _installed_palaestra(cwd: Path) -> Path:
    """The palaestra this interpreter imports without PYTHONPATH, from ``cwd``."""
    out = subprocess.run(
        [sys.executable, "-c", "import palaestra; print(palaestra.__file__)"],
        env={"PATH": "/usr/bin:/bin"},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=30,
    )
    return Path(out.stdout.strip()).resolve()


def test_install_adds_the_child_option_once_and_uninstall_removes_it(clean: None) -> None:
    finder.install()
    finder.install()
    assert sys.warnoptions.count(finder.CHILD_OPTION) == 1
    assert os.environ["PYTHONPATH"].split(os.pathsep).count(finder.BOOT_DIR) == 1
    finder.uninstall()
    assert finder.CHILD_OPTION not in sys.warnoptions
    assert finder.BOOT_DIR not in os.environ.get("PYTHONPATH", "").split(os.pathsep)


# --- the adapters -----------------------------------------------------------------------------


def test_mode_compares_with_palaestra_strings(mapped: None) -> None:
    from palaestrai.types import Mode
    from palaestrai.types.mode import Mode as ModeFromModule

    assert Mode is ModeFromModule
    assert Mode.TRAIN == "train" and Mode.TEST == "test" and Mode.EVALUATE.value == "evaluate"
    assert Mode("test") is Mode.TEST and "train" != Mode.TEST


def test_simtime(mapped: None) -> None:
    import pickle

    from palaestrai.types import SimTime

    t = SimTime(simtime_ticks=3, simtime_timestamp="2024-01-02T03:04:05")
    assert t.simtime_timestamp == datetime(2024, 1, 2, 3, 4, 5)
    assert pickle.loads(pickle.dumps(t)) == t
    with pytest.raises(TypeError, match="simtime_ticks"):
        SimTime(simtime_ticks=1.5)  # type: ignore[arg-type]


def test_environment_state_and_baseline_read_as_palaestra_tuples(mapped: None) -> None:
    from palaestrai.environment import EnvironmentBaseline, EnvironmentState

    state = EnvironmentState([], [], True, terminated=True)
    assert tuple(state) == ([], [], True) and state.truncated is None
    baseline = EnvironmentBaseline([], [])
    assert tuple(baseline) == ([], []) and baseline.simtime.simtime_ticks == 0
    with pytest.raises(ValueError, match="both"):
        EnvironmentState([], [], True, terminated=True, truncated=True)
    with pytest.raises(ValueError, match="done"):
        EnvironmentState([], [], False, truncated=True)


@pytest.mark.parametrize(
    ("done", "terminated", "truncated", "mask"),
    [
        (False, True, None, 1.0),
        (True, True, False, 0.0),
        (True, False, True, 1.0),
        (True, False, False, 0.0),
        (True, None, None, 0.0),
    ],
)
def test_bootstrap_mask(
    mapped: None, done: bool, terminated: bool | None, truncated: bool | None, mask: float
) -> None:
    from palaestrai.agent.bootstrap_mask import bootstrap_mask

    assert bootstrap_mask(done, terminated, truncated) == mask


def test_seeding_gives_palaestrais_numbers(mapped: None) -> None:
    """Values computed with palaestrAI 3.5.18's own ``palaestrai.util.seeding``."""
    from palaestrai.util import seeding

    rng, seed = seeding.np_random(3)
    assert seed == 3 and rng.rand() == 0.7281230527466072
    assert seeding.create_seed("abc") == 10637842824275649121
    assert seeding.create_seed("77") == 77
    assert seeding.hash_seed(12345) == 9300992238904420150


def test_information_utils(mapped: None) -> None:
    from palaestrai.agent import ActuatorInformation, SensorInformation
    from palaestrai.agent.util.information_utils import (
        coerce_and_set_values_to_info_objects,
        concat_flattened_act_scale_bias,
        concat_flattened_values,
        sort_info_objects_to_order,
    )
    from palaestrai.types import Box

    sensors = [
        SensorInformation(np.array([[1.0, 2.0]]), Box(0, 5, shape=(1, 2)), "a"),
        SensorInformation(3.0, Box(0, 5, shape=()), "b"),
    ]
    assert concat_flattened_values(sensors).tolist() == [1.0, 2.0, 3.0]
    assert sort_info_objects_to_order(sensors, ["b", "a"]) == sensors[::-1]
    actuators = [
        ActuatorInformation(None, Box(-1, 3, shape=(2, 1)), "x"),
        ActuatorInformation(None, Box(0, 1, shape=()), "y"),
    ]
    coerce_and_set_values_to_info_objects([5.0, -2.0, 0.5, 9.0], actuators)
    assert actuators[0].value.tolist() == [[3.0], [-1.0]] and actuators[1].value == 0.5
    assert concat_flattened_act_scale_bias(actuators, np.subtract).tolist() == [2.0, 2.0, 0.5]


def test_dynaloader(mapped: None) -> None:
    from palaestrai.util.dynaloader import load_with_params, locate

    condition = load_with_params("palaestrai.experiment:MaxEpisodesTerminationCondition", {})
    assert type(condition).__name__ == "MaxEpisodesTerminationCondition"
    assert locate("palaestrai.agent.Brain") is palaestra.agent.Brain
    assert locate("palaestrai.agent.NoSuchThing") is None


def test_space_value_utils(mapped: None) -> None:
    """Results as palaestrAI 3.5.18's own functions give them on the same inputs."""
    from palaestrai.agent.util.space_value_utils import (
        assert_value_in_space,
        coerce_value_to_space,
        coerce_values_to_space_shapes,
        get_plain_list_of,
    )
    from palaestrai.types import Box, Discrete

    plain = get_plain_list_of(
        [1, 0.5, np.array(0.6, dtype=np.float32), np.array([0.7], dtype=np.float32), [1.3, 1.5]]
    )
    assert plain == [1.0, 0.5, 0.6000000238418579, 0.699999988079071, 1.3, 1.5]
    shaped = coerce_values_to_space_shapes(
        [1.2, np.array(0.8), -0.2, -2, 1, -5.2, -5],
        [Box(-1, 1, shape=(2, 2)), Box(-2, 1, shape=(2,))],
    )
    assert [s.tolist() for s in shaped] == [[[1.2, 0.8], [-0.2, -2.0]], [1.0, -5.2]]
    assert coerce_values_to_space_shapes(2.0, [Box(0, 1, shape=(2,)), Discrete(3)]) == [2.0, 2.0]
    assert coerce_value_to_space(1.2, Box(low=[-1], high=[1])).tolist() == [1.0]
    assert coerce_value_to_space(3, Discrete(5)) == 3
    with pytest.raises(TypeError, match=r'Value "7" not contained in space .*, for uid: d'):
        assert_value_in_space(Discrete(5), 7, uid="d")
    with pytest.raises(NotImplementedError):
        coerce_value_to_space([1], importlib.import_module("palaestrai.types").MultiBinary(1))


def test_the_reset_messages_are_offered_inside_the_refused_core(mapped: None) -> None:
    from palaestrai.core.protocol import EnvironmentResetRequest, EnvironmentResetResponse
    from palaestrai.core.protocol.environment_reset_req import EnvironmentResetRequest as Req

    from palaestra.environment.reset import EnvironmentResetRequest as Ours

    assert Req is EnvironmentResetRequest is Ours
    assert EnvironmentResetResponse.__module__ == "palaestra.environment.reset"
    with pytest.raises(ImportError, match=r"palaestrai\.core\.RuntimeConfig.*experiment-start"):
        from palaestrai.core import RuntimeConfig  # noqa: F401


# --- plug-ins that build plug-ins (harl's PipelineBrain and PipelineMuscle) --------------------


def test_a_muscles_mode_is_assignable_as_palaestrai_allows() -> None:
    from palaestra.agent import DummyMuscle
    from palaestra.agent.context import MuscleContext
    from palaestra.types import Mode

    muscle = DummyMuscle()
    muscle.attach(MuscleContext("a", "a", 0, "train", 1, [], []))
    assert muscle.mode == Mode.TRAIN and muscle._mode == Mode.TRAIN
    muscle._mode = Mode.TEST  # palaestrAI's rollout worker and PipelineMuscle do this
    assert muscle.mode == Mode.TEST and muscle._mode == "test"
    assert muscle.context.mode == Mode.TRAIN  # the phase's mode is unchanged


def test_a_muscle_built_by_another_plug_in_has_what_it_was_given(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from palaestra.agent import DummyMuscle
    from palaestra.agent.context import BrainDumps
    from palaestra.types import Mode

    inner = DummyMuscle()  # no context: PipelineMuscle builds it in its setup
    assert inner.uid == "DummyMuscle" and inner.mode == Mode.TRAIN  # palaestrAI's defaults
    inner._uid = "agent"  # what PipelineMuscle assigns
    inner._mode = "test"
    assert inner.uid == "agent" and inner.mode == Mode.TEST
    with caplog.at_level(logging.WARNING):
        assert inner.load("actor") is None
    assert "a Muscle built by another plug-in has the agent's dumps only if" in caplog.text
    inner._model_loaders = BrainDumps(loaded={"actor": b"weights"}, source="phase 0")
    loaded = inner.load("actor")
    assert loaded is not None and loaded.read() == b"weights"
    with pytest.raises(RuntimeError, match="no context"):
        _ = inner.name  # what palaestra itself gives is still only given through a context


def test_a_brain_built_by_another_plug_in_sees_the_attributes_it_was_given() -> None:
    from palaestra.agent import DummyBrain, Memory
    from palaestra.agent.brain_dumper import BrainDumper
    from palaestra.agent.context import BrainDumps
    from palaestra.types import Mode

    stored: list[tuple[bytes, str]] = []
    dumpers = BrainDumps(
        loaded={"t": b"old"}, write=lambda data, tag: stored.append((data, tag)), source="p0"
    )
    inner = DummyBrain()  # no context: PipelineBrain builds it in its constructor
    with pytest.raises(RuntimeError, match="no context"):
        _ = inner.seed
    memory = Memory()
    # what PipelineBrain.set_for and .thinking assign
    inner._seed, inner._sensors, inner._actuators = 5, ["s"], ["a"]  # type: ignore[attr-defined]
    inner._dumpers = dumpers
    inner._memory = memory
    inner.mode = Mode.TEST
    assert (inner.seed, list(inner.sensors), list(inner.actuators)) == (5, ["s"], ["a"])
    assert inner.memory is memory and inner.mode == Mode.TEST
    inner.store_brain_dump(b"new", "t")
    BrainDumper.store_brain_dump(b"newer", inner._dumpers, "t")
    assert stored == [(b"new", "t"), (b"newer", "t")]
    loaded = BrainDumper.load_brain_dump(inner._dumpers, "t")
    assert loaded is not None and loaded.read() == b"old"
    # palaestrAI's plug-ins iterate over the dumpers and ask where they load from
    assert [d._brain_source for d in inner._dumpers] == ["p0"]
    assert [d._brain_source for d in BrainDumps()] == [None]


def test_try_load_brain_dump_loads_only_with_dumps() -> None:
    from palaestra.agent import Brain
    from palaestra.agent.context import BrainDumps

    class Counting(Brain):
        loads = 0

        def thinking(self, muscle_id: str, data_from_muscle: object) -> None:
            return None

        def load(self) -> None:
            self.loads += 1

    brain = Counting()
    brain._dumpers = BrainDumps()
    brain.try_load_brain_dump()
    assert brain.loads == 0
    brain._dumpers = BrainDumps(loaded={"": b"x"}, source="p0")
    brain.try_load_brain_dump()
    assert brain.loads == 1


def test_a_muscle_that_assigns_memory_itself_keeps_what_it_assigned() -> None:
    """A Muscle written for palaestra that keeps its own buffer as ``self.memory`` failed in
    its constructor once Muscles got palaestrAI's ``memory`` (a property without a setter:
    ``AttributeError: property 'memory' ... has no setter``)."""
    from collections import deque

    from palaestra.agent import Muscle

    class Buffering(Muscle):
        def __init__(self) -> None:
            super().__init__()
            self.memory = deque(maxlen=3)

        def propose_actions(self, sensors, actuators_available):  # type: ignore[no-untyped-def]
            self.memory.append(len(sensors))
            return actuators_available, None

    muscle = Buffering()
    assert isinstance(muscle.memory, deque) and muscle._memory is muscle.memory
    muscle.propose_actions([1, 2], [])
    assert list(muscle.memory) == [2]


def test_a_muscle_has_a_memory_of_its_own_as_palaestrai_gives_it(mapped: None) -> None:
    """palaestrAI's Muscle has ``memory`` (behind ``_memory``), a Memory its framework leaves
    empty: a Muscle may keep its own rows there (it failed with AttributeError)."""
    from palaestrai.agent import (
        ActuatorInformation,
        Memory,
        Muscle,
        RewardInformation,
        SensorInformation,
    )
    from palaestrai.types import Box

    class Remembering(Muscle):
        def propose_actions(self, sensors, actuators_available):  # type: ignore[no-untyped-def]
            seen = len(self.memory)
            self.memory.append(self.uid, sensor_readings=sensors, rewards=[])
            return actuators_available, seen

    muscle = Remembering()
    assert isinstance(muscle.memory, Memory) and len(muscle.memory) == 0
    assert muscle.memory is muscle.memory is muscle._memory
    sensor = SensorInformation(1.0, Box(0, 2, ()), "env.s")
    actuator = ActuatorInformation(0.5, Box(0, 1, ()), "env.a")
    assert [muscle.propose_actions([sensor], [actuator])[1] for _ in range(3)] == [0, 1, 2]
    assert muscle.memory.tail(1).sensor_readings["env.s"].tolist() == [1.0]
    given = Memory()  # what a plug-in building a Muscle may hand it
    given.append("x", rewards=[RewardInformation(1.0, Box(0, 2, ()), "r")])
    muscle._memory = given
    assert muscle.memory is given and len(muscle.memory) == 1
    assert len(Remembering().memory) == 0  # each Muscle its own


def test_a_reloaded_muscle_keeps_the_memory_of_its_own() -> None:
    from palaestra.agent import DummyMuscle, Memory
    from palaestra.agent.context import MuscleContext
    from palaestra.agent.hot_reload import rebuilt_muscle
    from palaestra.core.description.specs import AgentSpec, ClassSpec

    agent = AgentSpec(
        name="a",
        brain=ClassSpec(name="palaestra.agent:DummyBrain"),
        muscle=ClassSpec(name="palaestra.agent:DummyMuscle"),
        objective=ClassSpec(name="palaestra.agent:DummyObjective"),
        sensors=(),
        actuators=(),
    )
    old = DummyMuscle()
    old.attach(MuscleContext("a", "a", 0, "train", 1, [], []))
    kept = old.memory
    assert isinstance(kept, Memory)
    new, _ = rebuilt_muscle(agent, {"muscle": DummyMuscle}, old, None, "train", None)
    assert new is not old and new.memory is kept
