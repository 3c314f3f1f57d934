"""``palaestrai.simulation``: palaestra's simulation controllers and their condition; its
modules are attributes of it once it is imported."""

from palaestra.compat.palaestrai.simulation import simulation_controller as simulation_controller
from palaestra.compat.palaestrai.simulation import (
    taking_turns_simulation_controller as taking_turns_simulation_controller,
)
from palaestra.compat.palaestrai.simulation import vanilla_sim_controller as vanilla_sim_controller
from palaestra.compat.palaestrai.simulation import (
    vanilla_simcontroller_termination_condition as vanilla_simcontroller_termination_condition,
)
from palaestra.simulation import *  # noqa: F403 - palaestra's built-ins, under palaestrAI's names
from palaestra.simulation import __all__ as __all__
