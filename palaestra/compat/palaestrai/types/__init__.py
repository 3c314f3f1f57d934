"""``palaestrai.types``: palaestra's spaces, with palaestrAI's Mode and SimTime.

As in palaestrAI, the package's modules (``palaestrai.types.box``, ...) are attributes of it
once it is imported.
"""

from palaestra.compat.palaestrai.types import (
    box,
    discrete,
    mode,
    multi_binary,
    multi_discrete,
    simtime,
    space,
    tuple,
)
from palaestra.compat.palaestrai.types.mode import Mode
from palaestra.compat.palaestrai.types.simtime import SimTime
from palaestra.core.spaces import Box, Discrete, MultiBinary, MultiDiscrete, Space, Tuple

__all__ = ["Box", "Discrete", "Mode", "MultiBinary", "MultiDiscrete", "SimTime", "Space", "Tuple"]
_MODULES = (box, discrete, mode, multi_binary, multi_discrete, simtime, space, tuple)
