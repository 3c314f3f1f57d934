"""palaestrAI's agent filters in palaestra: on the same inputs, the values palaestrAI 3.5.18's
own filters give (recorded from them), and the chain that applies an agent's filters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import palaestra.agent as ag
from palaestra.agent import Brain, DeltaStepFilter, Filter, NoneBrain
from palaestra.agent.context import BrainContext
from palaestra.agent.filter import FilterChain
from palaestra.core.description.specs import ClassSpec
from palaestra.core.information import ActuatorInformation as A
from palaestra.core.information import SensorInformation as S
from palaestra.core.mode import Mode
from palaestra.core.spaces import Box, Discrete

# printed by this file's scenario run with palaestrAI 3.5.18's classes
PALAESTRAI = (Path(__file__).parent / "fixtures" / "palaestrai_filters.txt").read_text()


def sensors(t: int) -> list[S]:
    return [
        S(np.array(3.0 + t), Box(0, 10, ()), "e.s1"),
        S(np.array([0.5, -1.0 * t]), Box(-5, 5, (2,), dtype=np.float64), "e.s2"),
    ]


def acts() -> list[A]:
    return [A(None, Box(-1, 1, ()), "e.a1"), A(None, Box(0, 10, (2,)), "e.a2")]


def acts0() -> list[A]:
    return [
        A(np.array(0.0), Box(-1, 1, ()), "e.a1"),
        A(np.array([0.0, 0.0]), Box(0, 10, (2,)), "e.a2"),
    ]


def show(xs: list[Any]) -> list[Any]:
    return [(str(x.uid), np.round(np.asarray(x.value, dtype=float), 4).tolist()) for x in xs]


class _Muscle:
    mode = Mode.TRAIN
    uid = "m"


def scenario() -> list[str]:
    out = []
    for cls in ["AbsoluteDeviationFilter", "QuadraticPenaltyFilter"]:
        f: Any = getattr(ag, cls)()
        out.append(
            f"{cls} {[show(f.muscle_pre_process(sensors(t), acts())[0]) for t in range(2)]}"
        )
    f = ag.MergeStepsFilter(3)
    for t in range(4):
        out.append(f"merge {t} {show(f.muscle_pre_process(sensors(t), acts())[0])}")
    f = ag.DeltaObsFilter(replace=False)
    for t in range(3):
        out.append(f"deltaobs {t} {show(f.muscle_pre_process(sensors(t), acts())[0])}")
    f = ag.DeltaObsFilter(delta_sensor_uids=["e.s2"])
    for t in range(2):
        out.append(f"deltaobs2 {t} {show(f.muscle_pre_process(sensors(t), acts())[0])}")
    f = ag.DeltaActionFilter()
    for t in range(4):
        _, a = f.muscle_pre_process(sensors(t), acts())
        a[0].value, a[1].value = np.array(0.6), np.array([4.0, 1.0])
        out.append(f"deltaact {t} {show(f.muscle_post_process(a, 'd')[0])}")
    f = ag.ActionTimeShiftFilter(2)
    for t in range(3):
        s, a = f.muscle_pre_process(sensors(t), acts0())
        out.append(f"ats {t} {show(s)}")
        a[0].value, a[1].value = np.array(0.1 * (t + 1)), np.array([1.0 * t, 2.0])
        f.muscle_post_process(a, None)
    f = ag.NormFilter(batch_size=2)
    f.muscle = _Muscle()
    f.setup()
    for t in range(5):
        out.append(f"norm {t} {show(f.muscle_pre_process(sensors(t), acts())[0])}")
    return out


def test_filters_give_palaestrais_values() -> None:
    assert scenario() == PALAESTRAI.splitlines()


def test_delta_step_filter_gives_palaestrais_values() -> None:
    f = DeltaStepFilter()
    given = [
        A(np.array([2.0, 4.0]), Box(0, 5, (2,), dtype=np.float64), "e.a"),
        A(1, Discrete(3), "e.d"),
    ]
    _, shown = f.muscle_pre_process([], given)
    assert isinstance(shown[0].space, Box)
    assert shown[0].space.low.tolist() == [-1, -1] and shown[0].space.high.tolist() == [1, 1]
    assert shown[0].value.tolist() == [0.0, 0.0] and shown[1] is given[1]
    shown[0].value = np.array([0.5, -0.25])
    out, data = f.muscle_post_process(shown, "x")
    assert out[0].value.tolist() == [3.0, 3.0] and out[1].value == 1 and data == "x"


def test_delta_step_filter_steps_from_its_last_set_point_when_given_no_value() -> None:
    f = DeltaStepFilter()
    for push, expected in ((0.5, 0.0), (0.5, 0.0)):  # from 0, a relative step stays at 0
        _, shown = f.muscle_pre_process([], [A(None, Box(0, 5, ()), "e.a")])
        shown[0].value = np.array(push)
        (out,), _ = f.muscle_post_process(shown, None)
        assert float(out.value) == expected


class _Recording(Filter):
    def __init__(self, tag: str, log: list[str]) -> None:
        super().__init__()
        self.tag, self.log = tag, log

    def setup_brain(self) -> None:
        self.log.append(f"setup_brain {self.tag}")

    def brain_pre_process(self, muscle_id: str, data_from_muscle: Any) -> tuple[str, Any]:
        return muscle_id, data_from_muscle + [f"pre {self.tag}"]

    def brain_post_process(self, potential_update: Any) -> Any:
        return potential_update + [f"post {self.tag}"]


def test_the_chain_runs_filters_in_order_and_back_in_reverse() -> None:
    chain = FilterChain([])
    log: list[str] = []
    chain.filters = [_Recording("a", log), _Recording("b", log)]
    brain = NoneBrain()
    chain.set_up(brain=brain)
    assert log == ["setup_brain a", "setup_brain b"]
    update = chain.think(lambda muscle_id, data: data + ["thinking"], "m-0", [])
    assert update == ["pre a", "pre b", "thinking", "post b", "post a"]


def test_filters_that_add_sensors_tell_the_brain() -> None:
    brain: Brain = NoneBrain()
    brain.attach(
        BrainContext(
            name="b",
            run_uid="r",
            phase_index=0,
            phase_name="p",
            mode="train",
            seed=1,
            sensors=sensors(0),
            actuators=acts(),
        )
    )
    chain = FilterChain(
        [
            ClassSpec(name="palaestra.agent:MergeStepsFilter", params={"steps": 2}),
            ClassSpec(name="palaestra.agent:DeltaObsFilter", params={"replace": True}),
        ]
    )
    chain.set_up(brain=brain)
    assert [str(s.uid) for s in brain.sensors] == [
        "DELTA-e.s1",
        "DELTA-LAST-1-e.s1",
        "DELTA-e.s2",
        "DELTA-LAST-1-e.s2",
    ]


def test_a_filter_that_fails_is_named() -> None:
    from palaestra.core.plugin import PluginError

    class Broken(Filter):
        def muscle_pre_process(self, sensors: Any, actuators_available: Any) -> Any:
            raise RuntimeError("nope")

    chain = FilterChain([])
    chain.filters = [Broken()]
    with pytest.raises(PluginError, match="Broken.muscle_pre_process"):
        chain.act(lambda s, a: (a, None), sensors(0), acts())


def test_norm_filter_normalises_the_brains_objectives_as_palaestrai() -> None:
    from palaestra.agent import Memory
    from palaestra.core.information import RewardInformation as R

    class _Brain:
        def __init__(self) -> None:
            self.memory = Memory()
            self.name = "b"

    brain = _Brain()
    f = ag.NormFilter(batch_size=3, norm_objective_after=4)
    f.brain = brain  # type: ignore[assignment]
    f.setup()
    seen = []
    for t in range(9):
        if t:
            brain.memory.append(
                "m-0",
                [S(1.0, Box(0, 10, ()), "s")],
                [A(1.0, Box(0, 10, ()), "a")],
                [R(1.0, Box(0, 10, ()), "r")],
                False,
                objective=np.array([float(t * t)]),
            )
        f.brain_pre_process("m-0", {"t": t} if t != 5 else None)  # None is not counted
        if t:
            seen.append(round(float(brain.memory.muscle_memory("m-0").objective[-1]), 4))
    # palaestrAI 3.5.18's NormFilter on the same memory
    assert seen == [1.0, 4.0, 9.0, 16.0, 1.6188, 1.706, 2.7705, 3.9987]


class _Misshapen(Filter):
    """Returns the wrong thing from ``hook``: the sensors alone, or None."""

    def __init__(self, hook: str) -> None:
        super().__init__()
        self.hook = hook

    def muscle_pre_process(self, sensors: Any, actuators_available: Any) -> Any:
        if self.hook == "muscle_pre_process":
            return sensors
        return sensors, actuators_available

    def muscle_post_process(self, setpoints: Any, data_for_brain: Any) -> Any:
        return None if self.hook == "muscle_post_process" else (setpoints, data_for_brain)

    def brain_pre_process(self, muscle_id: str, data_from_muscle: Any) -> Any:
        if self.hook == "brain_pre_process":
            return data_from_muscle
        return muscle_id, data_from_muscle


@pytest.mark.parametrize(
    ("hook", "said"),
    [
        ("muscle_pre_process", "returned list [SensorInforma..."),
        ("muscle_post_process", "returned NoneType None: expected a pair (setpoints, "),
        ("brain_pre_process", "returned list ['data']: expected a pair (muscle_id, "),
    ],
)
def test_a_filter_hook_that_returns_no_pair_is_named(hook: str, said: str) -> None:
    """A filter hook that returned the sensors alone, or None, failed the run with palaestra's
    own ``ValueError: not enough values to unpack`` (or ``TypeError: cannot unpack``) and a
    traceback into palaestra/agent/filter.py, naming neither the filter nor its hook."""
    from palaestra.core.plugin import PluginContractError

    chain = FilterChain([])
    chain.filters = [_Misshapen(hook)]
    with pytest.raises(PluginContractError) as caught:
        chain.act(lambda s, a: (a, None), sensors(0), acts())
        chain.think(lambda muscle_id, data: None, "m-0", ["data"])
    text = str(caught.value)
    assert text.startswith(f"tests.unit.test_filters:_Misshapen.{hook} returned ")
    assert said in text
    assert "expected a pair (" in text


class _NoSuperInit(Filter):
    """Forgets ``super().__init__()``, as a Brain's or Muscle's constructor may."""

    def __init__(self, steps: int = 1) -> None:
        self.steps = steps


def test_a_filter_that_does_not_call_super_init_works() -> None:
    """It failed the run with ``AttributeError: '_NoSuperInit' object has no attribute
    'muscle'`` from palaestra's ``Filter.setup``, blaming a ``setup`` it never wrote; a Brain
    or Muscle without ``super().__init__()`` works."""
    for side in ("brain", "muscle"):
        chain = FilterChain([])
        chain.filters = [_NoSuperInit()]
        chain.set_up(**{side: NoneBrain()})
        assert getattr(chain.filters[0], side) is not None
    assert chain.act(lambda s, a: (a, None), sensors(0), acts())[2] is None


class _Renames(Filter):
    """Shows the Muscle sensor ``e.s1`` as ``seen.s1`` and does not tell the Brain."""

    def muscle_pre_process(self, sensors: Any, actuators_available: Any) -> Any:
        sensors[0] = S(sensors[0].value, sensors[0].space, "seen.s1")
        return sensors, actuators_available


class _RenamesAndTells(_Renames):
    def setup_brain(self) -> None:
        assert self.brain is not None
        self.brain.sensors = [S(None, self.brain.sensors[0].space, "seen.s1")]


class _Pushes(Filter):
    """Sets sensor ``e.s1`` (in [0, 10]) to ``value`` from its third step on."""

    def __init__(self, value: Any = 99.0) -> None:
        super().__init__()
        self.value, self.steps = value, 0

    def muscle_pre_process(self, sensors: Any, actuators_available: Any) -> Any:
        self.steps += 1
        if self.steps >= 3:
            sensors[0].value = np.array(self.value)
        return sensors, actuators_available


def test_a_filter_that_renames_a_sensor_without_telling_the_brain_is_named() -> None:
    """Only the count of sensors was checked: the Brain's memory took the values of a sensor a
    filter renamed under the name it was told, without a word."""
    from palaestra.core.plugin import PluginContractError

    chain = FilterChain([])
    chain.filters = [Filter(), _Renames()]
    with pytest.raises(PluginContractError) as caught:
        chain.act(lambda s, a: (a, None), sensors(0), acts())
    text = str(caught.value)
    assert text.startswith(
        "tests.unit.test_filters:_Renames.muscle_pre_process returned the sensors "
        "'seen.s1', 'e.s2' for 'e.s1', 'e.s2'"
    ), text
    assert "setup_brain" in text
    told = FilterChain([])
    told.filters = [_RenamesAndTells()]
    seen, _, _ = told.act(lambda s, a: (a, None), sensors(0), acts())
    assert [str(s.uid) for s in seen] == ["seen.s1", "e.s2"]


@pytest.mark.parametrize("value", [99.0, "high"])
def test_a_filter_that_pushes_a_sensor_value_out_of_its_space_is_named(value: Any) -> None:
    """The value went on to the Muscle and the Brain's memory, and the Brain that tripped
    over it was blamed."""
    from palaestra.core.plugin import PluginContractError

    chain = FilterChain([])
    chain.filters = [_Pushes(value), Filter()]
    for t in range(2):
        chain.act(lambda s, a: (a, None), sensors(t), acts())
    with pytest.raises(PluginContractError) as caught:
        chain.act(lambda s, a: (a, None), sensors(2), acts())
    text = str(caught.value)
    assert text.startswith(
        "tests.unit.test_filters:_Pushes.muscle_pre_process returned sensor 'e.s1' = "
    ), text
    assert "which is not in its space Box(" in text


def test_the_built_in_filters_pass_the_chains_checks() -> None:
    """Every built-in filter, chained, returns sensors in their spaces and tells the Brain of
    those it makes, step after step."""
    chain = FilterChain([])
    chain.filters = [
        ag.MergeStepsFilter(2),
        ag.DeltaObsFilter(),
        ag.ActionTimeShiftFilter(1),
        ag.NormFilter(batch_size=2),
        ag.AbsoluteDeviationFilter(),
        ag.QuadraticPenaltyFilter(),
        ag.DeltaStepFilter(),
        ag.DeltaActionFilter(),
    ]
    chain.set_up(muscle=_Muscle())  # type: ignore[arg-type]

    def propose(seen: list[S], available: list[A]) -> tuple[list[A], None]:
        for actuator in available:
            actuator.value = actuator.space.sample()
        return available, None

    for t in range(6):
        seen, setpoints, _ = chain.act(propose, sensors(t), acts0())
        assert all(s.space.contains(s.value) for s in seen)
        assert all(a.space.contains(a.value) for a in setpoints)
