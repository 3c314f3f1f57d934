"""Recording an environment's rendered frames every N episodes, as ``.npz`` files.

Frames go to ``<dir>/episode-<n>.npz`` (``n`` counted from 0 within the environment process,
zero-padded to five digits), one compressed array ``frames`` of shape
``(steps + 1, height, width, 3)`` and dtype uint8 per recorded episode: the frame after the
reset, then one after each step. Read one with ``numpy.load(path)["frames"]``.

The default directory sits next to the brain dumps, under the runtime config's ``data_path``
(``PALAESTRA_DATA_PATH``, else ``./palaestra-runtime.yaml``'s, else ``./_outputs``):
``<data_path>/frames/<environment uid>/worker-<w>-seed-<seed>/``. The environment's seed is
derived from the run's seed, the phase and the worker, so a run started again with the same
seed writes the same files again.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from palaestra.core.description.config import load_runtime_config
from palaestra.core.description.name_rules import path_part
from palaestra.core.errors import InvalidInputError, PalaestraError


class FrameRecordingError(PalaestraError):
    """Frames were asked for but cannot be recorded: the environment renders no frame, or the
    folder cannot be written (exit code 1: the run failed)."""


class FrameRecorder:
    """Collects the frames of every ``every``-th episode and writes each when it ends.

    Args:
        every: Record episodes 0, N, 2N, ...
        directory: Where the files go.
        render: Returns the current frame (an RGB array).
        where: The environment, for messages.
    """

    def __init__(
        self, every: int, directory: str, render: Callable[[], Any], where: str = ""
    ) -> None:
        self.every = every
        self.directory = directory
        self.render = render
        self.where = where
        self.episode = -1
        self.frames: list[Any] = []

    def begin(self) -> None:
        """A new episode started (writes the last one's frames if they were not yet)."""
        self.end()
        self.episode += 1
        self.grab()

    def grab(self) -> None:
        """Keep the current frame, if this episode is recorded.

        Raises:
            FrameRecordingError: The environment rendered no frame (None).
        """
        if self.episode % self.every == 0:
            frame = self.render()
            if frame is None:
                raise FrameRecordingError(
                    f"{self.where}: record_frames: render() returned None in episode "
                    f"{self.episode}, expected an RGB array: the environment does not render "
                    "frames with render_mode='rgb_array'"
                )
            self.frames.append(np.asarray(frame, dtype=np.uint8))

    def end(self) -> None:
        """Write the recorded episode's frames, if any.

        Raises:
            FrameRecordingError: The folder or the file cannot be written.
        """
        if not self.frames:
            return
        path = os.path.join(self.directory, f"episode-{self.episode:05d}.npz")
        frames, self.frames = self.frames, []
        try:
            os.makedirs(self.directory, exist_ok=True)
            np.savez_compressed(path, frames=np.stack(frames))
        except OSError as exc:
            raise FrameRecordingError(
                f"{self.where}: record_frames: cannot write the frames of episode "
                f"{self.episode} to {path}: {exc.strerror or exc}"
            ) from exc


def recorder_of(
    setting: Any, where: str, default_dir: Callable[[], str], render: Callable[[], Any]
) -> FrameRecorder | None:
    """The recorder the param ``record_frames`` asks for (``{every: N, dir: PATH}``; ``dir``
    is optional), or None if it is not set.

    Raises:
        InvalidInputError: The setting is not of that form.
    """
    if setting is None or setting is False:
        return None
    if not isinstance(setting, Mapping) or set(setting) - {"every", "dir"}:
        raise InvalidInputError(
            f"{where}: record_frames: expected a mapping {{every: N, dir: PATH}} (dir "
            f"optional), got {setting!r}"
        )
    every = setting.get("every", 1)
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise InvalidInputError(
            f"{where}: record_frames.every: expected a whole number >= 1, got {every!r}"
        )
    directory = setting.get("dir")
    if directory is not None and not isinstance(directory, str):
        raise InvalidInputError(f"{where}: record_frames.dir: expected a path, got {directory!r}")
    return FrameRecorder(every, directory or default_dir(), render, where)


def default_frames_dir(uid: str, worker: int, seed: int, data_path: str = "") -> str:
    """``<data_path>/frames/<uid>/worker-<worker>-seed-<seed>``: the run's ``data_path`` as
    the executor passed it on (that of ``-c FILE`` too), else the runtime config's here."""
    data_path = data_path or load_runtime_config().data_path
    folder = path_part(uid or "environment")
    return os.path.join(data_path, "frames", folder, f"worker-{worker}-seed-{seed}")
