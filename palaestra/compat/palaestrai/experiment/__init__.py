"""``palaestrai.experiment``: palaestra's run-level termination conditions."""

from palaestra.core.termination import TerminationCondition
from palaestra.experiment import *  # noqa: F403 - palaestra's built-ins, under palaestrAI's names
from palaestra.experiment import __all__ as _builtins

__all__ = [*_builtins, "TerminationCondition"]
