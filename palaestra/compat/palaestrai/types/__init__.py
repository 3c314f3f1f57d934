"""``palaestrai.types``: palaestra's spaces, with palaestrAI's Mode and SimTime.

As in palaestrAI, the package's modules (``palaestrai.types.box``, ...) are attributes of it
once it is imported.
"""

from palaestra.compat.palaestrai.types import box as box
from palaestra.compat.palaestrai.types import discrete as discrete
from palaestra.compat.palaestrai.types import mode as mode
from palaestra.compat.palaestrai.types import multi_binary as multi_binary
from palaestra.compat.palaestrai.types import multi_discrete as multi_discrete
from palaestra.compat.palaestrai.types import simtime as simtime
from palaestra.compat.palaestrai.types import space as space
from palaestra.compat.palaestrai.types import tuple as tuple
from palaestra.compat.palaestrai.types.mode import Mode
from palaestra.compat.palaestrai.types.simtime import SimTime
from palaestra.core.spaces import Box, Discrete, MultiBinary, MultiDiscrete, Space, Tuple

__all__ = ["Box", "Discrete", "Mode", "MultiBinary", "MultiDiscrete", "SimTime", "Space", "Tuple"]
