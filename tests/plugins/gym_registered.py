"""Registers a gymnasium id at import, as a package of custom environments does; a run file
names it ``tests.plugins.gym_registered:PalaestraSplit-v0`` (gymnasium's ``module:id``)."""

from __future__ import annotations

import gymnasium as gym

if "PalaestraSplit-v0" not in gym.registry:
    gym.register(id="PalaestraSplit-v0", entry_point="tests.plugins.gym_plugins:SplitSpaces")
