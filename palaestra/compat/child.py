"""Installs the compatibility finder in a child started by ``spawn`` or ``forkserver``.

A forked child inherits the parent's :data:`sys.meta_path`, so the finder with it; a child
started by ``spawn`` (or the ``forkserver`` process that forks the children of that method) is
a fresh interpreter that does not. :func:`palaestra.compat.install` therefore adds the
warning option :data:`CHILD_OPTION` to :data:`sys.warnoptions`, which :mod:`multiprocessing`
passes to every interpreter it starts (as ``-W``), and puts the directory of the module that
option names (``palaestra/compat/boot/palaestra_compat_boot.py``) on ``PYTHONPATH``: that
interpreter imports it at startup to find the warning category, before :mod:`site` has put the
installed packages on its path, and it imports this module from palaestra's own location, which
installs the finder. The option changes no warning: nothing ever emits
:class:`CompatInstalled`.
"""

from __future__ import annotations

from palaestra.compat.finder import CHILD_OPTION, install, installed

__all__ = ["CHILD_OPTION", "CompatInstalled"]


class CompatInstalled(Warning):
    """The category named by :data:`CHILD_OPTION`; never emitted."""


if not installed():
    install()
