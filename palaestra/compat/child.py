"""Installs the compatibility finder in a child started by ``spawn`` or ``forkserver``.

A forked child inherits the parent's :data:`sys.meta_path`, so the finder with it; a child
started by ``spawn`` (or the ``forkserver`` process that forks the children of that method) is
a fresh interpreter that does not. :func:`palaestra.compat.install` therefore adds the
warning option :data:`CHILD_OPTION` to :data:`sys.warnoptions`,
which :mod:`multiprocessing` passes to every interpreter it starts (as ``-W``); that
interpreter imports this module at startup to find the warning category, and importing it
installs the finder. The option changes no warning: nothing ever emits
:class:`CompatInstalled`.

The child must be able to import palaestra from its startup ``sys.path`` (the installed
package, or ``PYTHONPATH``); otherwise Python prints ``Invalid -W option ignored`` and the
child runs without the finder.
"""

from __future__ import annotations

from palaestra.compat.finder import CHILD_OPTION, install, installed

__all__ = ["CHILD_OPTION", "CompatInstalled"]


class CompatInstalled(Warning):
    """The category named by :data:`CHILD_OPTION`; never emitted."""


if not installed():
    install()
