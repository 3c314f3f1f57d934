"""A stand-in for torch in the start-method tests, put first on ``sys.path`` by the test.

Only :mod:`torch.cuda`'s bookkeeping of CUDA's state is modelled, as torch does it: see
:mod:`torch.cuda` here.
"""

from torch import cuda

__version__ = "0.0+fake"
__all__ = ["cuda"]
