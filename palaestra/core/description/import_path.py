"""Where plug-in modules are found: beside the run files and in the working directory.

``palaestra experiment-start experiments/run.yml`` (and ``palaestra.run("experiments/run.yml")``
in a script or a notebook) imports ``my_agents:QBrain`` from
``experiments/my_agents.py`` or ``./my_agents.py`` without ``PYTHONPATH=.``: the directories
of the run files given and the working directory go to the front of ``sys.path`` (as
``python script.py`` and ``python -m`` put theirs), in that order, before any run file is read.
Every process of a run is forked from this one and inherits them (an interpreter a plug-in
starts itself does not: it needs ``PYTHONPATH``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable


def add_plugin_dirs(run_files: Iterable[str]) -> list[str]:
    """Put the directories of ``run_files`` and the working directory first on the import
    path (once each); returns them in that order."""
    wanted = [os.path.dirname(os.path.abspath(path)) for path in run_files]
    wanted.append(os.getcwd())
    dirs = list(dict.fromkeys(wanted))
    sys.path[:0] = [d for d in dirs if d not in sys.path]
    return dirs
