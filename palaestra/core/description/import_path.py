"""Where plug-in modules are found: beside the run files and in the working directory.

``palaestra experiment-start experiments/run.yml`` (and ``palaestra.run("experiments/run.yml")``
in a script or a notebook) imports ``my_agents:QBrain`` from
``experiments/my_agents.py`` or ``./my_agents.py`` without ``PYTHONPATH=.``: the directories
of the run files given and the working directory go on ``sys.path``, in that order, before any
run file is read: right after the standard library's directories, so before the installed
packages (``./my_agents.py`` wins over an installed ``my_agents``), never before the standard
library: a ``secrets.py`` or a ``statistics.py`` beside a run file would otherwise hide the
module palaestra, numpy or multiprocessing import later, and the run would die in their
imports. Every process of a run is forked from this one and inherits them (an interpreter a
plug-in starts itself does not: it needs ``PYTHONPATH``).
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Iterable


def add_plugin_dirs(run_files: Iterable[str]) -> list[str]:
    """Put the directories of ``run_files`` and the working directory on the import path,
    right after the standard library's (once each); returns them in that order."""
    wanted = [os.path.dirname(os.path.abspath(path)) for path in run_files]
    wanted.append(os.getcwd())
    dirs = list(dict.fromkeys(wanted))
    at = after_stdlib()
    sys.path[at:at] = [d for d in dirs if d not in sys.path]
    return dirs


def after_stdlib() -> int:
    """The index of ``sys.path`` just past its last directory of the standard library (its
    directory, its zip, ``lib-dynload``); 0 where there is none."""
    stdlib = os.path.realpath(sysconfig.get_path("stdlib"))
    zipped = os.path.join(
        sys.base_prefix, "lib", f"python{sys.version_info[0]}{sys.version_info[1]}.zip"
    )
    last = -1
    for index, entry in enumerate(sys.path):
        real = os.path.realpath(entry) if entry else ""
        inside = real == stdlib or os.path.dirname(real) == stdlib
        if (inside and "-packages" not in real) or entry == zipped:
            last = index
    return last + 1
