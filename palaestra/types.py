"""Spaces, the mode and sim time under palaestrAI's module path (``palaestra.types.Discrete``,
``palaestra.types.Mode``, ``palaestra.types.SimTime`` and friends)."""

from palaestra.core.mode import Mode
from palaestra.core.simtime import SimTime
from palaestra.core.spaces import Box, Discrete, MultiBinary, MultiDiscrete, Space, Tuple

__all__ = ["Box", "Discrete", "Mode", "MultiBinary", "MultiDiscrete", "SimTime", "Space", "Tuple"]
