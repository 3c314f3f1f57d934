"""``palaestrai.agent.bootstrap_mask``: whether a Bellman backup bootstraps at a step."""

from __future__ import annotations

__all__ = ["bootstrap_mask"]


def bootstrap_mask(
    done: bool, terminated: bool | None = None, truncated: bool | None = None
) -> float:
    """1.0 where the value of the next state counts in the target, 0.0 where it does not.

    A step that does not end the episode always bootstraps. One that ends it bootstraps only
    when it was cut off from outside (``truncated`` true and ``terminated`` not); a genuine end,
    and an end with no reason given (both None, or both False), does not.
    """
    if not done or (terminated is not True and truncated is True):
        return 1.0
    return 0.0
