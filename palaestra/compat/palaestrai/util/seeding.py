"""``palaestrai.util.seeding``: palaestrAI's (and old gym's) seed helpers.

The same inputs give the same seeds and the same ``RandomState`` streams as palaestrAI's.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np

__all__ = ["create_seed", "hash_seed", "int_to_seed", "np_random"]


def np_random(seed: int | None = None) -> tuple[np.random.RandomState, int]:
    """A ``RandomState`` seeded from the hash of ``seed`` (random if None), and the seed."""
    if seed is not None and (not isinstance(seed, int) or seed < 0):
        raise RuntimeError(f"Seed must be a non-negative integer or omitted, not {seed}")
    seed = create_seed(seed)
    rng = np.random.RandomState()
    rng.seed(_words(hash_seed(seed)))
    return rng, seed


def hash_seed(seed: int | None = None, max_bytes: int = 8) -> int:
    """The first ``max_bytes`` of the SHA-512 of ``str(seed)``, as a little-endian integer."""
    if seed is None:
        seed = create_seed(max_bytes=max_bytes)
    digest = hashlib.sha512(str(seed).encode("utf8")).digest()
    return int.from_bytes(digest[:max_bytes], "little")


def create_seed(a: int | str | None = None, max_bytes: int = 8) -> int:
    """A seed of at most ``max_bytes``: from the OS if ``a`` is None, else derived from ``a``
    (an int modulo 2**(8*max_bytes); a string of digits the same; other strings hashed)."""
    if a is None:
        return int.from_bytes(os.urandom(max_bytes), "little")
    if isinstance(a, str):
        try:
            return int_to_seed(int(a), max_bytes)
        except ValueError:
            raw = a.encode("utf8")
            return int.from_bytes((raw + hashlib.sha512(raw).digest())[:max_bytes], "little")
    if isinstance(a, int):
        return int_to_seed(a, max_bytes)
    raise RuntimeError(f"Invalid type for seed: {type(a)} ({a})")


def int_to_seed(a: int, max_bytes: int) -> int:
    """``a`` modulo 2**(8*max_bytes)."""
    return int(a) % (1 << (8 * max_bytes))


def _words(number: int) -> list[int]:
    """``number`` as 32-bit words, least significant first (``[0]`` for 0)."""
    if number < 0:
        raise TypeError(f"Seed must be non-negative, not {number}")
    words = []
    while True:
        number, word = divmod(number, 2**32)
        words.append(word)
        if number == 0:
            return words
