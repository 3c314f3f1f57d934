"""palaestrAI compatibility: palaestrAI's import paths, mapped onto palaestra's classes.

:func:`install` (called by the command line and the executor before any plug-in is imported)
makes ``import palaestrai.agent`` give :mod:`palaestra.compat.palaestrai.agent`, whose names
are palaestra's own classes where the meaning is equal, and thin adapters where palaestrAI's
differ. The core never imports this package.
"""

from palaestra.compat.finder import install, installed, uninstall

__all__ = ["install", "installed", "uninstall"]
