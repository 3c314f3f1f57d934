"""``palaestrai.simulation``: palaestra's simulation controllers and their condition."""

from palaestra.simulation import *  # noqa: F403 - palaestra's built-ins, under palaestrAI's names
from palaestra.simulation import __all__ as __all__
