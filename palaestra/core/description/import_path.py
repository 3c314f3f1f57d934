"""Where plug-in modules are found: beside the run files and in the working directory.

``palaestra experiment-start experiments/run.yml`` (and ``palaestra.run(...)``) imports
``my_agents:QBrain`` from ``experiments/my_agents.py`` or ``./my_agents.py`` without
``PYTHONPATH=.``: the run files' directories and the working directory go on ``sys.path``, in
that order, right after the standard library's directories: before the installed packages,
never before the standard library (a ``secrets.py`` beside a run file would otherwise hide the
module palaestra or numpy import). Every process of a run is forked from this one and inherits
them (an interpreter a plug-in starts itself does not: it needs ``PYTHONPATH``).
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Iterable


def add_plugin_dirs(run_files: Iterable[str]) -> list[str]:
    """Put the directories of ``run_files`` and the working directory on the import path,
    right after the standard library's (once each); returns them in that order. A run file
    that is a symbolic link brings the directory of the link and that of the file it points
    to (where its plug-ins lie beside it)."""
    wanted = [
        os.path.dirname(where(path))
        for path in run_files
        for where in (os.path.abspath, os.path.realpath)
    ]
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
