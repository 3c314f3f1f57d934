"""Installs palaestra's compatibility finder in an interpreter that :mod:`multiprocessing` starts
(``spawn``, ``forkserver``); see :mod:`palaestra.compat.child`.

Such an interpreter processes its ``-W`` options before :mod:`site` runs, so before the
installed packages are on :data:`sys.path`: a warning category inside palaestra cannot be found
then. This module is the category's home instead: it lies alone in a directory that
:func:`palaestra.compat.install` puts on ``PYTHONPATH``, and it imports palaestra from where it
lies itself (the directory that holds the ``palaestra`` package, put on the path only for that
import), which installs the finder. It imports nothing but the standard library and palaestra's
dependency-free ``palaestra.compat``; if that fails, the child runs without the finder (and a
plug-in's ``palaestrai`` import then fails with its own clear error).
"""

import os
import sys


class CompatInstalled(Warning):
    """The category the ``-W`` option names; never emitted."""


def _install() -> None:
    here = os.path.dirname(os.path.abspath(__file__))  # .../palaestra/compat/boot
    root = os.path.dirname(os.path.dirname(os.path.dirname(here)))  # holds palaestra
    added = root not in sys.path
    if added:
        sys.path.append(root)
    try:
        import palaestra.compat.child  # noqa: F401 - installs the finder
    except Exception:  # noqa: BLE001 - never break the interpreter's start
        pass
    finally:
        if added:
            sys.path.remove(root)


_install()
