"""Spaces under palaestrAI's module path (``palaestra.types.Discrete`` and friends)."""

from palaestra.core.spaces import Box, Discrete, MultiBinary, MultiDiscrete, Space, Tuple

__all__ = ["Box", "Discrete", "MultiBinary", "MultiDiscrete", "Space", "Tuple"]
