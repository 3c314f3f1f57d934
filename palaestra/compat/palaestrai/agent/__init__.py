"""``palaestrai.agent``: palaestra's Brain, Muscle, Objective, Memory and information classes.

Every public name of :mod:`palaestra.agent` is here under palaestrAI's module path, plus
palaestrAI's ``LOG`` and ``bootstrap_mask``. As in palaestrAI, the package's modules
(``palaestrai.agent.brain``, ...) are attributes of it once it is imported.
"""

import logging

from palaestra.agent import *  # noqa: F403 - palaestra's classes, under palaestrAI's names
from palaestra.agent import __all__ as _palaestra_names
from palaestra.compat.palaestrai.agent import (
    actuator_information,
    brain,
    brain_dumper,
    dummy_brain,
    dummy_muscle,
    dummy_objective,
    evaluation_result,
    memory,
    muscle,
    objective,
    reward_information,
    sensor_information,
    util,
)
from palaestra.compat.palaestrai.agent.bootstrap_mask import bootstrap_mask

LOG = logging.getLogger("palaestrai.agent")
"""The logger palaestrAI's plug-ins log to (``from palaestrai.agent import LOG``)."""

__all__ = [*_palaestra_names, "LOG", "bootstrap_mask"]
_MODULES = (
    actuator_information,
    brain,
    brain_dumper,
    dummy_brain,
    dummy_muscle,
    dummy_objective,
    evaluation_result,
    memory,
    muscle,
    objective,
    reward_information,
    sensor_information,
    util,
)
