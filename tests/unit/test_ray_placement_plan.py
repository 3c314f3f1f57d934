"""The Ray placement's plan and checks (palaestra/experiment/ray_placement.py) and the run
file's placement keys (palaestra/experiment/runfile_placement.py), without a cluster."""

from __future__ import annotations

import pytest

from palaestra.core.errors import InvalidInputError, RunFileError
from palaestra.experiment.ray_placement import Node, Slot, check_fits, plan, run_network
from palaestra.experiment.runfile import load_run_text
from tests.conftest import EXPERIMENTS

DUMMY = (EXPERIMENTS / "dummy_run.yml").read_text()
BRAIN_LINE = "          brain: {name: palaestra.agent.dummy_brain:DummyBrain, params: {}}\n"


def _run(text: str = DUMMY):  # type: ignore[no-untyped-def]
    return load_run_text(text, check_classes=False)


def _with(placement: str = "", resources: str = "") -> str:
    text = DUMMY
    if placement:
        text = text.replace("run_config:\n", f"run_config:\n  placement: {placement}\n")
    if resources:
        text = text.replace(BRAIN_LINE, f"{BRAIN_LINE}          resources: {resources}\n", 1)
    return text


NODES = [Node("a" * 32, "10.0.0.1", 1, 0), Node("b" * 32, "10.0.0.1", 2, 0)]


def test_the_plan_has_one_slot_per_process_name_over_the_phases() -> None:
    slots = plan(_run(), "postgresql+psycopg://x/y")
    assert [s.name for s in slots] == [
        "StoreWriter",
        "SimulationController-0",
        "Environment-myenv-0",
        "Brain-defender",
        "Muscle-defender-0",
        "Brain-attacker",
        "Muscle-attacker-0",
    ]
    assert {s.cpus for s in slots} == {0.5} and not any(s.gpus for s in slots)
    assert "StoreWriter" not in [s.name for s in plan(_run(), "none")]


def test_run_config_placement_and_agent_resources_reach_the_plan() -> None:
    run = _run(_with("{strategy: spread, num_cpus: 0.25}", "{brain: {num_gpus: 1, num_cpus: 2}}"))
    assert run.placement.strategy == "SPREAD"
    slots = {s.name: s for s in plan(run, "none")}
    assert slots["Brain-defender"] == Slot("Brain-defender", "Brain", 2.0, 1.0)
    assert slots["Muscle-defender-0"].cpus == 0.25
    assert slots["Brain-attacker"].bundle() == {"CPU": 0.25}


@pytest.mark.parametrize(
    ("placement", "resources", "expected"),
    [
        ("{strategy: WIDE}", "", "expected one of PACK, SPREAD"),
        ("{num_cpu: 1}", "", "Did you mean 'num_cpus'"),
        ("{num_cpus: 0}", "", "expected a number > 0"),
        ("", "{brian: {num_gpus: 1}}", "Did you mean 'brain'"),
        ("", "{brain: {num_gpus: 1.5}}", "a whole number of GPUs"),
        ("", "{muscle: {num_gpus: -1}}", "expected a number >= 0"),
    ],
)
def test_bad_placement_keys_are_refused_naming_the_key(
    placement: str, resources: str, expected: str
) -> None:
    with pytest.raises(RunFileError) as caught:
        _run(_with(placement, resources))
    assert caught.value.exit_code == 2
    assert expected in caught.value.format_message()


def test_a_gpu_the_cluster_lacks_is_refused_saying_what_is_missing() -> None:
    slots = plan(_run(_with(resources="{brain: {num_gpus: 1}}")), "none")
    with pytest.raises(InvalidInputError) as caught:
        check_fits(slots, "PACK", NODES)
    message = str(caught.value)
    assert caught.value.exit_code == 2
    assert "1 GPUs asked (Brain-defender (1)), the cluster has 0: 1 missing" in message
    assert "10.0.0.1 (node aaaaaaaa): 1 CPU, 0 GPU" in message


def test_more_cpus_than_the_cluster_has_are_refused() -> None:
    slots = plan(_run(_with("{num_cpus: 1}")), "none")
    with pytest.raises(InvalidInputError, match="6 CPUs asked, the cluster has 3: 3 missing"):
        check_fits(slots, "PACK", NODES)
    with pytest.raises(InvalidInputError, match="STRICT_SPREAD needs 3 nodes"):
        check_fits(slots[:3], "STRICT_SPREAD", NODES)
    check_fits(slots[:3], "SPREAD", NODES)


def test_a_run_on_the_executors_host_has_no_network_and_one_across_hosts_has_fresh_keys() -> None:
    assert run_network(["10.0.0.1", "10.0.0.1"], "10.0.0.1") is None
    first = run_network(["10.0.0.2", "10.0.0.1"], "10.0.0.1")
    second = run_network(["10.0.0.2"], "10.0.0.1")
    assert first is not None and second is not None
    assert (first.host, first.address) == ("10.0.0.1", "10.0.0.1")
    assert first.keys != second.keys  # made for each run
