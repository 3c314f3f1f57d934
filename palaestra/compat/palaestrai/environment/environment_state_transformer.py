"""``palaestrai.environment.environment_state_transformer``: palaestra's
EnvironmentStateTransformer."""

from palaestra.environment.environment_state_transformer import EnvironmentStateTransformer

__all__ = ["EnvironmentStateTransformer"]
