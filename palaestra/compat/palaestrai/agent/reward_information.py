"""``palaestrai.agent.reward_information``: palaestra's RewardInformation."""

from palaestra.core.information import RewardInformation

__all__ = ["RewardInformation"]
