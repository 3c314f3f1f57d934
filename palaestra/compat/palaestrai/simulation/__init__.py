"""``palaestrai.simulation``: palaestra's simulation controllers and their condition; its
modules are attributes of it once it is imported."""

from palaestra.compat.palaestrai.simulation import (
    simulation_controller,
    taking_turns_simulation_controller,
    vanilla_sim_controller,
    vanilla_simcontroller_termination_condition,
)
from palaestra.simulation import *  # noqa: F403 - palaestra's built-ins, under palaestrAI's names
from palaestra.simulation import __all__ as __all__

_MODULES = (
    simulation_controller,
    taking_turns_simulation_controller,
    vanilla_sim_controller,
    vanilla_simcontroller_termination_condition,
)
