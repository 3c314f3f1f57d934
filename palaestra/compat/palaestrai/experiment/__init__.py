"""``palaestrai.experiment``: palaestra's run-level termination conditions; its modules are
attributes of it once it is imported."""

from palaestra.compat.palaestrai.experiment import (
    agent_evaluation_objective_termination_condition,
    environment_termination_condition,
    max_episodes_termination_condition,
    termination_condition,
    vanilla_rungovernor_termination_condition,
)
from palaestra.core.termination import TerminationCondition
from palaestra.experiment import *  # noqa: F403 - palaestra's built-ins, under palaestrAI's names
from palaestra.experiment import __all__ as _builtins

__all__ = [*_builtins, "TerminationCondition"]
_MODULES = (
    agent_evaluation_objective_termination_condition,
    environment_termination_condition,
    max_episodes_termination_condition,
    termination_condition,
    vanilla_rungovernor_termination_condition,
)
