"""``palaestrai.types``: palaestra's spaces, with palaestrAI's Mode and SimTime."""

from palaestra.compat.palaestrai.types.mode import Mode
from palaestra.compat.palaestrai.types.simtime import SimTime
from palaestra.core.spaces import Box, Discrete, MultiBinary, MultiDiscrete, Space, Tuple

__all__ = ["Box", "Discrete", "Mode", "MultiBinary", "MultiDiscrete", "SimTime", "Space", "Tuple"]
