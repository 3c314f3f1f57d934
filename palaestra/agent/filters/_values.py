"""Flat vectors from and to information objects, and a running mean and variance: what
palaestra's built-in filters share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from palaestra.core.information import Information
from palaestra.core.spaces import Box


def flat_values(infos: Sequence[Information]) -> np.ndarray:
    """The values of ``infos``, each flattened (None as zeros), in one vector."""
    if not infos:
        return np.zeros(0)
    parts = []
    for info in infos:
        shape = getattr(info.space, "shape", ())
        value = info.value
        if value is None:
            parts.append(np.zeros(int(np.prod(shape))))
        else:
            parts.append(np.asarray(value).reshape(-1) if shape else np.array([value]))
    return np.concatenate(parts)


def fit_to_space(value: Any, space: Any) -> Any:
    """``value`` clipped into a Box and given its shape and dtype; else as it is."""
    if isinstance(space, Box):
        return np.clip(value, space.low, space.high).reshape(space.shape).astype(space.dtype)
    return value


def set_flat_values(values: Any, infos: Sequence[Information]) -> None:
    """Cut the vector ``values`` into the shapes of the objects' spaces and set each,
    clipped into its space."""
    start = 0
    vector = np.asarray(values)
    for info in infos:
        shape = getattr(info.space, "shape", ())
        size = int(np.prod(shape))
        info.value = fit_to_space(np.reshape(vector[start : start + size], shape), info.space)
        start += size


class RunningMeanStd:
    """Mean and variance of a stream of batches (Chan et al.'s parallel update)."""

    def __init__(self, clip: float, norm_epsilon: float, count: float = 1e-4) -> None:
        self.mean: Any = np.zeros(())
        self.var: Any = np.ones(())
        self.count = count
        self.clip = clip
        self.norm_epsilon = norm_epsilon

    def update(self, batch: np.ndarray) -> None:
        n = batch.shape[0]
        batch_mean, batch_var = np.mean(batch, axis=0), np.var(batch, axis=0)
        total = self.count + n
        delta = batch_mean - self.mean
        self.mean = self.mean + delta * n / total
        squares = self.var * self.count + batch_var * n + delta**2 * self.count * n / total
        self.var = squares / total
        self.count = total

    def normalize(self, value: Any) -> Any:
        scaled = (value - self.mean) / np.sqrt(self.var + self.norm_epsilon)
        return np.clip(scaled, -self.clip, self.clip)
