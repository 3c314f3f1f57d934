"""Deterministic sub-seeds: one per Brain, Muscle and Environment, derived from the run seed."""

from __future__ import annotations

import hashlib


def derive_seed(run_seed: int, *parts: object) -> int:
    """A 32-bit seed from the run's seed and the parts naming one process.

    The same inputs give the same seed on every machine and Python version (no ``hash()``),
    and different parts give independent-looking seeds.

    >>> derive_seed(42, "muscle", "attacker", 0, 1) == derive_seed(42, "muscle", "attacker", 0, 1)
    True
    """
    text = "\x1f".join([str(run_seed), *(str(p) for p in parts)])
    digest = hashlib.blake2b(text.encode(), digest_size=4).digest()
    return int.from_bytes(digest, "little")
