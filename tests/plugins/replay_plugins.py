"""Environments for the replay tests: one that says it cannot be replayed bit for bit."""

from __future__ import annotations

from palaestra.environment.dummy_environment import DummyEnvironment


class UnreplayableEnvironment(DummyEnvironment):
    """DummyEnvironment declaring that its replay need not reproduce its record."""

    replay_deterministic = False
