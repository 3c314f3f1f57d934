"""``palaestrai.util.dynaloader``: building an object from a ``module:Class`` name."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["load_with_params", "locate"]


def locate(path: str) -> Any:
    """The object named by the dotted ``path`` (``package.module.Name``), or None."""
    parts = path.split(".")
    for end in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:end]))
        except ModuleNotFoundError:
            continue
        try:
            for part in parts[end:]:
                found = getattr(found, part)
        except AttributeError:
            return None
        return found
    return None


def load_with_params(module_path: str, params: dict[str, Any]) -> Any:
    """An instance of the class named by ``"package.module:Class"``, built with ``params``."""
    module_name, _, class_name = module_path.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, class_name)(**params)
