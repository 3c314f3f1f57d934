"""What every command module of the command line shares: the state its commands get.

:mod:`palaestra.cli.main` builds the command group and registers the commands of
:mod:`palaestra.cli.database` and :mod:`palaestra.cli.results`; they import what they share
from here, never from ``main``, so the command line's modules import each other one way only.
"""

from __future__ import annotations

import dataclasses

from palaestra.experiment.runtime_config import RuntimeConfig, load_runtime_config


class State:
    """The options of the ``palaestra`` group, given to every command (``click.pass_obj``).

    Args:
        config_path: The runtime config file given with ``-c``, or None.
        verbosity: How often ``-v`` was given.
    """

    def __init__(self, config_path: str | None, verbosity: int) -> None:
        self.config_path = config_path
        self.verbosity = verbosity
        self._config: RuntimeConfig | None = None

    @property
    def config(self) -> RuntimeConfig:
        """The runtime configuration in effect, read once; ``-v`` raises its log level."""
        if self._config is None:
            config = load_runtime_config(self.config_path)
            if self.verbosity:
                level = "INFO" if self.verbosity == 1 else "DEBUG"
                config = dataclasses.replace(config, log_level=level)
            self._config = config
        return self._config
