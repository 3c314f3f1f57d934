"""``palaestrai.environment``: palaestra's Environment, with palaestrAI's baseline, state and
Reward classes; its modules are attributes of it once it is imported."""

from palaestra.compat.palaestrai.environment import dummy_environment as dummy_environment
from palaestra.compat.palaestrai.environment import environment as environment
from palaestra.compat.palaestrai.environment import environment_baseline as environment_baseline
from palaestra.compat.palaestrai.environment import environment_state as environment_state
from palaestra.compat.palaestrai.environment import (
    environment_state_transformer as environment_state_transformer,
)
from palaestra.compat.palaestrai.environment import reward as reward
from palaestra.compat.palaestrai.environment.environment_baseline import EnvironmentBaseline
from palaestra.compat.palaestrai.environment.environment_state import EnvironmentState
from palaestra.environment import (
    DummyEnvironment,
    Environment,
    EnvironmentStateTransformer,
    Reward,
)

__all__ = [
    "DummyEnvironment",
    "Environment",
    "EnvironmentBaseline",
    "EnvironmentState",
    "EnvironmentStateTransformer",
    "Reward",
]
