"""``palaestrai.agent.sensor_information``: palaestra's SensorInformation."""

from palaestra.core.information import SensorInformation

__all__ = ["SensorInformation"]
