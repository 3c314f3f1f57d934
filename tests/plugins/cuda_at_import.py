"""A plug-in module that touches "CUDA" when it is imported (the fake torch of
``tests/plugins/fake_torch``), as ``torch.zeros(1, device="cuda")`` at module level would.

:class:`CudaBrain` uses CUDA again in ``setup()``: in a process forked from one that had
initialised CUDA that raises, as on a real GPU; started by forkserver or spawn it works.
"""

from __future__ import annotations

import torch
from start_record import RecordingBrain, RecordingMuscle, record_start

torch.cuda.init()


class CudaBrain(RecordingBrain):
    """A Brain "on the GPU": CUDA is used in its setup."""

    def setup(self) -> None:
        torch.cuda.init()
        super().setup()


class CpuMuscle(RecordingMuscle):
    """A Muscle on the CPU (its module touched CUDA at import all the same)."""


__all__ = ["CpuMuscle", "CudaBrain", "record_start"]
