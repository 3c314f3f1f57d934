"""``palaestrai.agent.actuator_information``: palaestra's ActuatorInformation."""

from palaestra.core.information import ActuatorInformation

__all__ = ["ActuatorInformation"]
