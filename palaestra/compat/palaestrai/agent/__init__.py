"""``palaestrai.agent``: palaestra's Brain, Muscle, Objective, Memory and information classes.

Every public name of :mod:`palaestra.agent` is here under palaestrAI's module path, plus
palaestrAI's ``LOG`` and ``bootstrap_mask``. As in palaestrAI, the package's modules
(``palaestrai.agent.brain``, ...) are attributes of it once it is imported.
"""

import logging

from palaestra.agent import *  # noqa: F403 - palaestra's classes, under palaestrAI's names
from palaestra.agent import __all__ as _palaestra_names
from palaestra.compat.palaestrai.agent import actuator_information as actuator_information
from palaestra.compat.palaestrai.agent import brain as brain
from palaestra.compat.palaestrai.agent import brain_dumper as brain_dumper
from palaestra.compat.palaestrai.agent import dummy_brain as dummy_brain
from palaestra.compat.palaestrai.agent import dummy_muscle as dummy_muscle
from palaestra.compat.palaestrai.agent import dummy_objective as dummy_objective
from palaestra.compat.palaestrai.agent import evaluation_result as evaluation_result
from palaestra.compat.palaestrai.agent import memory as memory
from palaestra.compat.palaestrai.agent import muscle as muscle
from palaestra.compat.palaestrai.agent import objective as objective
from palaestra.compat.palaestrai.agent import reward_information as reward_information
from palaestra.compat.palaestrai.agent import sensor_information as sensor_information
from palaestra.compat.palaestrai.agent import util as util
from palaestra.compat.palaestrai.agent.bootstrap_mask import bootstrap_mask

LOG = logging.getLogger("palaestrai.agent")
"""The logger palaestrAI's plug-ins log to (``from palaestrai.agent import LOG``)."""

__all__ = [*_palaestra_names, "LOG", "bootstrap_mask"]
