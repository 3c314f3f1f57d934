"""``palaestrai.util``: the seeding and dynamic loading helpers plug-ins use."""

from palaestra.compat.palaestrai.util import dynaloader as dynaloader
from palaestra.compat.palaestrai.util import seeding as seeding
