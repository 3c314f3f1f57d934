"""``palaestrai.environment``: palaestra's Environment, with palaestrAI's baseline, state and
Reward classes."""

from palaestra.compat.palaestrai.environment.environment_baseline import EnvironmentBaseline
from palaestra.compat.palaestrai.environment.environment_state import EnvironmentState
from palaestra.compat.palaestrai.environment.reward import Reward
from palaestra.environment import DummyEnvironment, Environment

__all__ = ["DummyEnvironment", "Environment", "EnvironmentBaseline", "EnvironmentState", "Reward"]
