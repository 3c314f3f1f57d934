"""Optional dependencies: import one, or fail with the ``pip install`` line that brings it.

palaestra's core install stays light; gymnasium, PettingZoo, torch, matplotlib, TensorBoard,
MLflow and the PostgreSQL driver come with extras (``pip install 'palaestra[gym]'``). Code that
needs one calls :func:`require` at the point of use, never at module import, so a missing extra
is an error only for the feature that needs it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from palaestra.core.errors import InvalidInputError

EXTRAS: dict[str, str] = {
    "gymnasium": "gym",
    "pettingzoo": "gym",
    "pygame": "gym",
    "matplotlib": "plot",
    "tensorboard": "tensorboard",
    "mlflow": "mlflow",
    "torch": "torch",
    "psycopg": "postgres",
    "pandas": "pandas",
    "pyarrow": "parquet",
    "ray": "ray",
}
"""The extra that brings each optional top-level module."""


class MissingExtraError(InvalidInputError):
    """A feature needs a module of an extra that is not installed (exit code 2)."""

    def __init__(self, module: str, extra: str, purpose: str) -> None:
        self.module = module
        self.extra = extra
        super().__init__(
            f"{purpose} needs {module}, which is not installed: "
            f"run `pip install 'palaestra[{extra}]'`"
        )


def require(module: str, purpose: str) -> ModuleType:
    """Import ``module`` (e.g. ``"gymnasium"`` or ``"torch.nn"``), or explain how to install it.

    Args:
        module: The dotted module name.
        purpose: What needs it, for the message (e.g. ``"the environment GymnasiumEnvironment"``).

    Raises:
        MissingExtraError: The module's top-level package is not installed; the message names the
            extra to install.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        top = module.partition(".")[0]
        if error.name is None or error.name.partition(".")[0] != top:
            raise  # the module is there but one of its own imports is not: a real bug
        raise MissingExtraError(top, EXTRAS.get(top, top), purpose) from None
