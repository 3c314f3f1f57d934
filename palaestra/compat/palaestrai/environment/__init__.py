"""``palaestrai.environment``: palaestra's Environment, with palaestrAI's baseline, state and
Reward classes; its modules are attributes of it once it is imported."""

from palaestra.compat.palaestrai.environment import (
    dummy_environment,
    environment,
    environment_baseline,
    environment_state,
    reward,
)
from palaestra.compat.palaestrai.environment.environment_baseline import EnvironmentBaseline
from palaestra.compat.palaestrai.environment.environment_state import EnvironmentState
from palaestra.compat.palaestrai.environment.reward import Reward
from palaestra.environment import DummyEnvironment, Environment

__all__ = ["DummyEnvironment", "Environment", "EnvironmentBaseline", "EnvironmentState", "Reward"]
_MODULES = (dummy_environment, environment, environment_baseline, environment_state, reward)
