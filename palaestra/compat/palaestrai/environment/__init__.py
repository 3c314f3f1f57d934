"""``palaestrai.environment``: palaestra's Environment, with palaestrAI's baseline, state and
Reward classes; its modules are attributes of it once it is imported."""

from palaestra.compat.palaestrai.environment import (
    dummy_environment,
    environment,
    environment_baseline,
    environment_state,
    environment_state_transformer,
    reward,
)
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
_MODULES = (
    dummy_environment,
    environment,
    environment_baseline,
    environment_state,
    environment_state_transformer,
    reward,
)
