"""``palaestrai.agent.util``: helpers for Brains and Muscles."""

from palaestra.compat.palaestrai.agent.util import information_utils as information_utils
from palaestra.compat.palaestrai.agent.util import space_value_utils as space_value_utils
