"""Hot reload's parts without processes: which files are watched, when a change counts,
loading a module afresh, and what a failed reload does (see tests/system/test_hot_reload.py
for runs)."""

from __future__ import annotations

import dataclasses
import importlib
import json
import logging
import os
import pickle
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import msgspec
import numpy as np
import pytest
import zmq

from palaestra.agent.brain_process import BrainProcess
from palaestra.agent.dummy_muscle import DummyMuscle
from palaestra.agent.hot_reload import HotReload, Outcome, retire, user_traceback
from palaestra.agent.muscle_process import MuscleProcess
from palaestra.agent.plugin_rows import PluginRows
from palaestra.core.code_watch import SourceWatch, WatchedFile, class_in, load_fresh, source_of
from palaestra.core.description.specs import (
    AgentSpec,
    ClassSpec,
    EnvironmentSpec,
    PhaseConfig,
    PhaseSpec,
    RunSpec,
    SimulationSpec,
    with_hot_reload,
)
from palaestra.core.plugin import PluginError, call
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import COLUMNS
from palaestra.environment.world import World
from palaestra.testing import FakeLink, brain_process, muscle_step

SOURCE = """\
VALUE = {value}


class Plugin:
    def __init__(self):
        self.value = VALUE
"""


DATACLASS = """\
from __future__ import annotations

import dataclasses
import typing


@dataclasses.dataclass
class Settings:
    rate: float = 0.1
    registry: typing.ClassVar[dict] = {}
"""


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """A plug-in module of its own name in ``tmp_path``, imported; gone from sys.modules
    afterwards."""
    name = f"reload_unit_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(SOURCE.format(value=1))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module(name)
    sys.modules.pop(name, None)


def edit(path: Path, text: str, later: int) -> None:
    path.write_text(text)
    stat = path.stat()
    os.utime(path, (stat.st_atime, stat.st_mtime + later))


def test_only_the_users_own_modules_are_watched(module: ModuleType) -> None:
    watched = source_of(module.Plugin)
    assert watched == WatchedFile(module.__name__, module.__file__)
    assert source_of(DummyMuscle) is None  # palaestra's
    assert source_of(json.JSONDecoder) is None  # the standard library
    assert source_of(np.random.Generator) is None  # an installed package (compiled)
    assert source_of(pytest.MonkeyPatch) is None  # an installed package (site-packages)
    assert source_of(int) is None  # no file


def test_a_change_counts_once_the_file_has_settled(module: ModuleType) -> None:
    path = Path(module.__file__ or "")
    clock = Clock()
    watch = SourceWatch([WatchedFile(module.__name__, str(path))], interval=0.25, clock=clock)
    assert watch.next_check == 0.25
    assert watch.changed() == [] and watch.next_check == 0.25  # the clock did not move
    edit(path, SOURCE.format(value=2), later=1)
    assert watch.changed() == []  # seen once: it may still be being written
    edit(path, SOURCE.format(value=22), later=2)
    assert watch.changed() == []  # it was: seen once again
    clock.now = 1.0
    (found,) = watch.changed()
    assert found.module == module.__name__ and watch.next_check == 1.25
    assert watch.changed() == []  # reported once
    os.unlink(path)
    assert watch.changed() == [] and watch.changed() == []  # gone (being replaced): wait


def test_a_module_is_loaded_afresh_without_touching_the_running_one(module: ModuleType) -> None:
    path = Path(module.__file__ or "")
    watched = WatchedFile(module.__name__, str(path))
    path.write_text(SOURCE.format(value=2))  # same size, maybe the same second: no .pyc used
    fresh = load_fresh(watched)
    assert fresh is not module and sys.modules[module.__name__] is module
    assert class_in(fresh, "Plugin")().value == 2 and module.Plugin().value == 1
    with pytest.raises(LookupError, match="no longer defines the class 'Gone'"):
        class_in(fresh, "Gone")
    path.write_text(DATACLASS)  # made while its module is the one in sys.modules
    fresh = load_fresh(watched)
    assert [f.name for f in dataclasses.fields(fresh.Settings)] == ["rate"]
    assert sys.modules[module.__name__] is module
    path.write_text("VALUE = = 3\n")
    with pytest.raises(SyntaxError):
        load_fresh(watched)
    path.write_text("raise RuntimeError('in the body')\n")
    with pytest.raises(RuntimeError, match="in the body"):
        load_fresh(watched)
    assert sys.modules[module.__name__] is module


def test_a_failed_reload_keeps_the_old_code_logs_once_and_waits_for_the_next_change(
    module: ModuleType, caplog: pytest.LogCaptureFixture
) -> None:
    path = Path(module.__file__ or "")
    built: list[object] = []

    def rebuild(classes: dict[str, type]) -> None:
        built.append(call(classes["muscle"]))

    clock = Clock()
    plugins = {"muscle": f"{module.__name__}:Plugin"}
    reload = HotReload("Muscle-a-0", "a", plugins, clock=clock)
    reload.rebuild = rebuild
    assert reload and "muscle" in reload.describe()
    assert reload.check() == []  # due at once (it starts due), nothing changed
    started = sys.modules[module.__name__]  # loaded afresh at the start (see below)

    def look() -> list[tuple[bool, str | None]]:
        clock.now += 1
        outcomes[:] = reload.check()
        return [(o.ok, o.error) for o in outcomes]

    outcomes: list[Outcome] = []

    edit(path, SOURCE.format(value="= 2"), later=1)
    assert look() == []  # settling
    with caplog.at_level(logging.ERROR, logger="palaestra.agent.hot_reload"):
        ((ok, error),) = look()
        assert look() == [] and look() == []  # not tried again: the file did not change
    assert not ok and error is not None and "SyntaxError" in error and "VALUE = = 2" in error
    assert "code_watch.py" not in error and "hot_reload.py" not in error  # the user's part
    assert len(caplog.records) == 1 and "the old code keeps running" in caplog.text
    assert sys.modules[module.__name__] is started and built == []

    edit(path, SOURCE.format(value=3).replace("self.value = VALUE", "1 / 0"), later=2)
    look()
    ((ok, error),) = look()
    assert not ok and error is not None
    assert error.startswith(f"{module.__name__}:Plugin.__init__ raised:\nTraceback")
    assert error.endswith("ZeroDivisionError: division by zero") and "1 / 0" in error

    edit(path, SOURCE.format(value=4), later=3)
    look()
    assert look() == [(True, None)]
    assert [p.value for p in built] == [4]  # type: ignore[attr-defined]
    assert sys.modules[module.__name__].VALUE == 4  # the new module is the one imported now
    (row,) = reload.rows(outcomes, worker=1, episode=2, step=3)
    assert (row.source, row.worker, row.episode, row.step) == ("muscle:a", 1, 2, 3)
    assert (row.module, row.path, row.ok, row.error) == (module.__name__, str(path), True, None)


def test_nothing_to_watch_for_palaestras_own_plugins() -> None:
    reload = HotReload("Muscle-a-0", "a", {"muscle": "palaestra.agent:DummyMuscle"})
    assert not reload and reload.check() == []


def test_a_process_starts_with_the_code_on_disk(
    module: ModuleType, caplog: pytest.LogCaptureFixture
) -> None:
    """Forked from an executor that imported an older version (an earlier phase reloaded a
    newer one), a process loads the file again before it builds its plug-ins; a file that
    fails to load then leaves the inherited version, reported at the first check."""
    path = Path(module.__file__ or "")
    plugins = {"muscle": f"{module.__name__}:Plugin"}
    path.write_text(SOURCE.format(value=2))
    reload = HotReload("Muscle-a-0", "a", plugins)
    assert sys.modules[module.__name__] is not module
    assert sys.modules[module.__name__].Plugin().value == 2
    assert reload.check() == [] and reload.check() == []

    started = sys.modules[module.__name__]
    path.write_text("VALUE = = 3\n")
    with caplog.at_level(logging.ERROR, logger="palaestra.agent.hot_reload"):
        reload = HotReload("Muscle-a-0", "a", plugins)
    assert sys.modules[module.__name__] is started  # the version it had
    assert len(caplog.records) == 1 and "fails to load" in caplog.text
    assert reload.watch.next_check == 0.0  # the first step reports it
    (outcome,) = reload.check()
    assert (outcome.kind, outcome.ok) == ("muscle", False)
    assert "SyntaxError" in (outcome.error or "")
    assert reload.check() == []


def test_user_traceback_names_the_plugin_method_and_leaves_out_palaestra() -> None:
    class Broken:
        def setup(self) -> None:
            raise ValueError("bad parameter")

    with pytest.raises(PluginError) as caught:
        call(Broken().setup)
    text = user_traceback(caught.value)
    assert text.splitlines()[0].endswith("Broken.setup raised:")
    assert "core/plugin.py" not in text and text.endswith("ValueError: bad parameter")


MUSCLE = """\
from palaestra.agent import Muscle

VERSION = {version}
TORN = []


class EditedMuscle(Muscle):
    def __init__(self):
        self.calls = []
        self.model = None

    def setup(self):
        self.calls.append("setup")

    def prepare_model(self):
        self.model = self.load("model").read()
        self.calls.append("prepare_model")

    def update(self, update):
        self.calls.append(("update", update))

    def propose_actions(self, sensors, actuators_available):
        for actuator in actuators_available:
            actuator(VERSION)
        return actuators_available, None

    def teardown(self):
        TORN.append(VERSION)
"""


def test_a_reloaded_muscle_gets_the_context_the_model_and_the_newest_update(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test phase's Muscle process with a filter, stepped in this process: the new Muscle
    has the old one's context (its rng goes on), loads the dump again, gets the Brain's
    newest update again before the step's own, and the filter works on it; the old one is
    torn down. The step that reloads runs the new code."""
    name = f"reload_muscle_{uuid.uuid4().hex[:8]}"
    path = tmp_path / f"{name}.py"
    path.write_text(MUSCLE.format(version=1))
    monkeypatch.syspath_prepend(str(tmp_path))
    env = World(
        "Environment-env-0",
        environment=EnvironmentSpec(name="palaestra.environment:DummyEnvironment", uid="env"),
        environment_id=1,
        worker=0,
        seed=7,
    )
    baseline = env.start_world(reset=False)
    uids = ["env.0", "env.1"]
    agent = AgentSpec(
        name="one",
        brain=ClassSpec(name="palaestra.agent:DummyBrain"),
        muscle=ClassSpec(name=f"{name}:EditedMuscle"),
        objective=ClassSpec(name="palaestra.agent:DummyObjective"),
        sensors=tuple(uids),
        actuators=tuple(uids),
        filters=(ClassSpec(name="palaestra.agent:AbsoluteDeviationFilter"),),
    )
    by_uid = {d.uid: d for d in [*baseline.sensors, *baseline.actuators]}
    try:
        process = MuscleProcess(
            "Muscle-one-0",
            agent=agent,
            agent_id=1,
            worker=0,
            mode="test",
            seed=3,
            brain_endpoint="",
            store_endpoint=None,
            sensors=[by_uid[uid] for uid in uids],
            actuators=[by_uid[uid] for uid in uids],
            dumps={"model": b"weights"},
        )
        old = process.muscle
        process.filters.set_up(muscle=old)  # as the process's setup() does
        call(old.setup)
        call(old.prepare_model)
        clock = Clock()
        plugins = {"muscle": agent.muscle.name, "objective": agent.objective.name}
        reload = HotReload(process.name, "one", plugins, clock=clock)
        process.use_reload(reload)
        answers = iter(range(100, 200))
        brain = FakeLink("Brain-one", lambda _: m.BrainUpdate(update=pickle.dumps(next(answers))))
        process.wire(brain, {"env": FakeLink("Environment-env-0")})
        process.begin_episode(
            m.AgentEpisode(
                episode=0, sensors=baseline.sensors[:2], actuators=baseline.actuators[:2]
            )
        )
        reward = [m.InfoDesc("Dummy Reward", None, 1)]

        def step(number: int) -> dict[str, object]:
            clock.now = float(number)
            rewards = reward if number else None
            message = m.AgentStep(step=number, values=[0, 0], rewards=rewards, done=False)
            return muscle_step(process, message).setpoints

        assert step(0) == {"env.0": 1, "env.1": 1}
        draw = old.rng.bit_generator.state
        path.write_text(MUSCLE.format(version=2))
        assert step(1) == {"env.0": 1, "env.1": 1}  # the change is settling
        assert step(2) == {"env.0": 2, "env.1": 2}  # reloaded before this step
        new = process.muscle
        assert new is not old and type(new).__module__ == name
        assert new.calls == ["setup", "prepare_model", ("update", 101), ("update", 102)]
        assert new.model == b"weights" and new.mode == "test"
        assert new.context is old.context and new.rng.bit_generator.state == draw
        assert process.filters.filters[0].muscle is new
        assert sys.modules[name].TORN == [] and old_module_torn(old) == [1]
    finally:
        sys.modules.pop(name, None)


def old_module_torn(muscle: object) -> list[int]:
    """The ``TORN`` list of the module the (old) Muscle's class was made in."""
    return type(muscle).teardown.__globals__["TORN"]  # type: ignore[attr-defined,no-any-return]


def test_what_a_replaced_instance_adds_in_its_teardown_is_stored() -> None:
    """A Muscle (or Brain) replaced by a hot reload is torn down while its process runs on:
    the statistics its ``teardown()`` added stayed on the old instance, dropped without a
    word. They go to the process's rows, at step -1 as those of a Brain's ``store()``."""

    class Tearing(DummyMuscle):
        def teardown(self) -> None:
            self.add_statistics("last_q", 1.5)

    out = PluginRows("Muscle-one-0", "muscle", "one", 1, 1)
    retire("Muscle-one-0", Tearing(), out)

    (row,) = [msgspec.msgpack.decode(raw, type=m.StatisticsRow) for raw in out.statistics.rows]
    assert (row.worker, row.episode, row.step, row.values) == (-1, -1, -1, {"last_q": 1.5})


def test_reload_flag_turns_hot_reload_on_for_every_agent_of_every_phase() -> None:
    agent = AgentSpec(
        name="a",
        brain=ClassSpec(name="palaestra.agent:DummyBrain"),
        muscle=ClassSpec(name="palaestra.agent:DummyMuscle"),
        objective=ClassSpec(name="palaestra.agent:DummyObjective"),
        sensors=(),
        actuators=(),
    )
    phases = tuple(
        PhaseSpec(
            index=index,
            name=f"phase_{index}",
            environments=(),
            agents=(agent, msgspec.structs.replace(agent, name="b")),
            simulation=SimulationSpec(name="palaestra.simulation:Vanilla"),
            config=PhaseConfig(),
        )
        for index in range(2)
    )
    run = RunSpec(uid="r", experiment_uid="e", seed=1, version="1", phases=phases)
    assert not any(a.hot_reload for p in run.phases for a in p.agents)
    reloading = with_hot_reload(run)
    assert [a.hot_reload for p in reloading.phases for a in p.agents] == [True] * 4
    assert [a.name for p in reloading.phases for a in p.agents] == ["a", "b"] * 2


REEXPORTED = """\
from palaestra.agent import Brain, Muscle


class Policy:
    pass


class ReexportedBrain(Brain):
    def thinking(self, muscle_id, data_from_muscle):
        return Policy()


class ReexportedMuscle(Muscle):
    def propose_actions(self, sensors, actuators_available):
        return actuators_available, Policy()
"""


def test_plugins_a_package_re_exports_are_built_from_their_module_loaded_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run file names ``pkg:ReexportedBrain``, which ``pkg/__init__.py`` imports from
    ``pkg.impl`` (the run imported it, as the executor does): with hot reload each process
    loads ``pkg.impl`` afresh and builds its plug-ins from that module, so what they make
    pickles. (Built from the package's attribute, the run's older class, a Brain's update was
    'not the same object as pkg.impl.Policy': a run that works without ``--reload`` failed
    at its first step with it.)"""
    name = f"reexport_{uuid.uuid4().hex[:8]}"
    package = tmp_path / name
    package.mkdir()
    (package / "impl.py").write_text(REEXPORTED)
    (package / "__init__.py").write_text("from .impl import ReexportedBrain, ReexportedMuscle\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module(name)
    agent = AgentSpec(
        name="one",
        brain=ClassSpec(name=f"{name}:ReexportedBrain"),
        muscle=ClassSpec(name=f"{name}:ReexportedMuscle"),
        objective=ClassSpec(name="palaestra.agent:DummyObjective"),
        sensors=(),
        actuators=(),
        hot_reload=True,
    )
    try:  # (each process loads the module afresh: check each before the next)
        brain = brain_process(agent, [], [])
        assert type(brain.brain) is sys.modules[f"{name}.impl"].ReexportedBrain
        pickle.dumps(call(brain.brain.thinking, "one-0", None))
        muscle = MuscleProcess(
            "Muscle-one-0",
            agent=agent,
            agent_id=1,
            worker=0,
            mode="train",
            seed=3,
            brain_endpoint="",
            store_endpoint=None,
            sensors=[],
            actuators=[],
        )
        assert type(muscle.muscle) is sys.modules[f"{name}.impl"].ReexportedMuscle
        pickle.dumps(call(muscle.muscle.propose_actions, [], [])[1])
    finally:
        for module in [name, f"{name}.impl"]:
            sys.modules.pop(module, None)


BRAIN = """\
from palaestra.agent import DummyBrain

VERSION = {version}


class VersionBrain(DummyBrain):
    def thinking(self, muscle_id, data_from_muscle):
        return VERSION
"""


@pytest.fixture
def store_pair() -> Iterator[tuple[zmq.Socket[bytes], zmq.Socket[bytes]]]:
    """A PUSH socket as a process's to the store writer, and the PULL socket it feeds."""
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    pull.bind("inproc://code-reloads")
    push = ctx.socket(zmq.PUSH)
    push.connect("inproc://code-reloads")
    yield push, pull
    ctx.destroy(linger=0)


def code_reload_rows(pull: zmq.Socket[bytes]) -> list[dict[str, object]]:
    """The ``code_reloads`` rows pushed, by column."""
    found = []
    while pull.poll(1000 if not found else 0):
        message = m.decode(pull.recv())
        if isinstance(message, m.Rows) and message.table == "code_reloads":
            found += [dict(zip(COLUMNS["code_reloads"], row, strict=True)) for row in message.rows]
    return found


def test_a_brain_reloaded_at_an_evaluation_records_where_its_rollouts_ended(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    store_pair: tuple[zmq.Socket[bytes], zmq.Socket[bytes]],
) -> None:
    """The first message after a change settled is an evaluation's (the Brain hears nothing
    of its rollouts): the reload's row was at worker, episode and step -1. It names where
    the evaluation's rollouts ended (their first game's last step), as a reload at an
    experience names the experience's."""
    name = f"reload_brain_{uuid.uuid4().hex[:8]}"
    path = tmp_path / f"{name}.py"
    path.write_text(BRAIN.format(version=1))
    monkeypatch.syspath_prepend(str(tmp_path))
    _, pull = store_pair
    try:
        process, clock = reloading_brain(f"{name}:VersionBrain", store_pair[0])
        link = FakeLink("Muscle-one-0", decode=m.decode)
        memory = process.brain.memory

        def receive(message: m.Msg) -> object:
            clock.now += 1
            link.put(message)
            process._reloading_think(link, memory)
            return link.sent[-1]

        experience = m.Experience(worker=0, transition=None, data=None, done=False, step=3)
        answer = receive(m.Experiences(worker=0, items=[experience]))
        assert isinstance(answer, m.BrainUpdate) and pickle.loads(answer.update or b"") == 1
        path.write_text(BRAIN.format(version=2))
        receive(m.Experiences(worker=0, items=[experience]))  # the change is settling
        evaluate = m.AgentEvaluate(evaluation=0, worker=0, episode=1, step=4)
        assert isinstance(receive(evaluate), m.AgentEvaluated)
        (row,) = code_reload_rows(pull)
        assert (row["source"], row["ok"]) == ("brain:one", True)
        assert (row["worker"], row["episode"], row["step"]) == (0, 1, 4)
    finally:
        sys.modules.pop(name, None)


def reloading_brain(brain: str, push: zmq.Socket[bytes]) -> tuple[BrainProcess, Clock]:
    """A Brain process of agent ``one`` with its class ``brain`` hot reloaded (on a clock
    of the test's), sending its rows to ``push``."""
    agent = AgentSpec(
        name="one",
        brain=ClassSpec(name=brain),
        muscle=ClassSpec(name="palaestra.agent:DummyMuscle"),
        objective=ClassSpec(name="palaestra.agent:DummyObjective"),
        sensors=(),
        actuators=(),
        hot_reload=True,
    )
    process = brain_process(agent, [], [])
    clock = Clock()
    process.use_reload(HotReload(process.name, "one", {"brain": brain}, clock=clock))
    process.out.connect(push, process.brain)
    return process, clock


BATCHING_BRAIN = (
    BRAIN
    + """

class BatchingBrain(VersionBrain):
    def thinking_batch(self, experiences):
        return [VERSION for _ in experiences]
"""
)


def test_a_brain_reloaded_before_a_batch_records_its_first_experience(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    store_pair: tuple[zmq.Socket[bytes], zmq.Socket[bytes]],
) -> None:
    """A Brain with ``thinking_batch`` thinks about the pending rounds of several Muscles
    (workers) in one call: a reload before such a batch was recorded at worker, episode and
    step -1. Its row names the batch's first experience, as before a single round."""
    name = f"reload_batch_{uuid.uuid4().hex[:8]}"
    path = tmp_path / f"{name}.py"
    path.write_text(BATCHING_BRAIN.format(version=1))
    monkeypatch.syspath_prepend(str(tmp_path))
    _, pull = store_pair
    try:
        process, clock = reloading_brain(f"{name}:BatchingBrain", store_pair[0])
        process.batched = process._batched()
        links = [FakeLink(f"Muscle-one-{w}", decode=m.decode) for w in range(2)]

        def batch(step: int) -> list[object]:
            clock.now += 1
            for worker, link in enumerate(links):
                item = m.Experience(
                    worker=worker, transition=None, data=None, done=False, episode=2, step=step
                )
                link.put(m.Experiences(worker=worker, items=[item]))
            assert process._reloading_think_batch(list(links), process.brain.memory) == []
            return [pickle.loads(link.sent[-1].update) for link in links]

        assert batch(5) == [1, 1]
        path.write_text(BATCHING_BRAIN.format(version=2))
        assert batch(6) == [1, 1]  # the change is settling
        assert batch(7) == [2, 2]
        (row,) = code_reload_rows(pull)
        assert (row["source"], row["ok"]) == ("brain:one", True)
        assert (row["worker"], row["episode"], row["step"]) == (0, 2, 7)
    finally:
        sys.modules.pop(name, None)


def test_each_watched_module_is_reloaded_on_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A Muscle and an Objective in two modules: the first still broken after an edit (a
    syntax error), an edit to the second failed too, with the first's error, and the second's
    new code never ran. Each module is loaded and its plug-ins rebuilt on its own: the second
    reloads, the first's failure stays its own (reported once), and the first reloads once it
    is fixed."""
    names = {kind: f"reload_{kind}_{uuid.uuid4().hex[:8]}" for kind in ("muscle", "objective")}
    paths = {kind: tmp_path / f"{name}.py" for kind, name in names.items()}
    for path in paths.values():
        path.write_text(SOURCE.format(value=1))
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in names.values():
        importlib.import_module(name)
    built: list[tuple[str, int]] = []

    def rebuild(classes: dict[str, type]) -> None:
        built.extend((kind, call(cls).value) for kind, cls in sorted(classes.items()))

    clock = Clock()
    plugins = {kind: f"{name}:Plugin" for kind, name in names.items()}
    reload = HotReload("Muscle-a-0", "a", plugins, clock=clock)
    reload.rebuild = rebuild
    assert reload.check() == []

    def look() -> list[tuple[str, bool, str]]:
        clock.now += 1
        return [
            (o.kind, o.ok, (o.error or "").splitlines()[-1] if o.error else "")
            for o in reload.check()
        ]

    try:
        with caplog.at_level(logging.ERROR, logger="palaestra.agent.hot_reload"):
            edit(paths["muscle"], SOURCE.format(value="= 2"), later=1)
            assert look() == []  # settling
            assert look() == [("muscle", False, "SyntaxError: invalid syntax")]
            edit(paths["objective"], SOURCE.format(value=3), later=2)
            assert look() == []
            assert look() == [("objective", True, "")]
            assert look() == []
        assert built == [("objective", 3)]
        assert sys.modules[names["objective"]].VALUE == 3
        assert len(caplog.records) == 1 and paths["muscle"].name in caplog.text

        edit(paths["muscle"], SOURCE.format(value=4), later=3)
        assert look() == []
        assert look() == [("muscle", True, "")]
        assert built == [("objective", 3), ("muscle", 4)]
    finally:
        for name in names.values():
            sys.modules.pop(name, None)
