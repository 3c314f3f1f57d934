"""The meta-path finder that maps ``palaestrai`` and ``palaestrai.*`` onto palaestra.compat.

Inside palaestra's processes, ``import palaestrai.agent`` gives the module
``palaestra.compat.palaestrai.agent`` itself (one module object under both names), so
``palaestrai.agent.Brain is palaestra.agent.Brain``. :func:`install` puts the finder first on
:data:`sys.meta_path`, ahead of a real palaestrAI distribution installed in the same
environment; the command line and the executor call it before they import any plug-in; forked
children inherit it, and children started by ``spawn`` or ``forkserver`` install it themselves
(:mod:`palaestra.compat.child`). Nothing is installed by importing palaestra: outside palaestra's
processes ``import palaestrai`` finds the real package, or nothing.

A module palaestra deliberately does not offer (palaestrAI's database session helpers, its
command line, its runtime) fails to import with a :class:`ModuleNotFoundError` that names the
module and says what to use instead; so does any other ``palaestrai`` module the
compatibility layer lacks (except that a module of palaestra's built-in packages, agent,
environment, simulation and experiment, is found under palaestrAI's path of the same name).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import logging
import os
import sys
from collections.abc import Sequence
from types import ModuleType

LOG = logging.getLogger(__name__)

ALIAS = "palaestrai"
"""The top-level name that is mapped."""

TARGET = "palaestra.compat.palaestrai"
"""The package the mapped modules live in."""

_STORE = (
    "palaestra has its own store schema: read results with palaestra.store.query "
    "(pandas DataFrames), `palaestra results RUN -o file.csv`, or SQL on the runtime "
    "config's store_uri"
)
_RUNTIME = (
    "palaestra runs experiments with its own runtime: start them with "
    "`palaestra experiment-start run.yml`"
)

REFUSED: dict[str, str] = {
    "palaestrai.store.query": _STORE,
    "palaestrai.store.database_model": _STORE,
    "palaestrai.store.database_util": _STORE,
    "palaestrai.store.database_base": _STORE,
    "palaestrai.store.receiver": _STORE,
    "palaestrai.store.migrations": _STORE,
    "palaestrai.cli": "use the `palaestra` command (`palaestra --help`)",
    "palaestrai.entrypoints": "use the `palaestra` command (`palaestra --help`)",
    "palaestrai.api": "palaestra has no web API; use its command line and palaestra.store.query",
    "palaestrai.tui": "palaestra has no text UI; use `palaestra experiment-list` and "
    "`palaestra experiment-show RUN`",
    "palaestrai.core": _RUNTIME,
    "palaestrai.experiment.executor": _RUNTIME,
    "palaestrai.experiment.run_governor": _RUNTIME,
    "palaestrai.experiment.experiment_run": "palaestra reads run files itself: "
    "`palaestra experiment-check-syntax run.yml` checks one",
    "palaestrai.agent.agent_conductor": _RUNTIME,
    "palaestrai.agent.learner": _RUNTIME,
    "palaestrai.agent.rollout_worker": _RUNTIME,
    "palaestrai.environment.environment_conductor": _RUNTIME,
}
"""palaestrAI modules (and their submodules) that palaestra deliberately does not offer,
with what to use instead."""


BUILTIN_PACKAGES = frozenset({"agent", "environment", "simulation", "experiment"})
"""palaestra's packages whose built-ins keep palaestrAI's module paths: a ``palaestrai``
module of one of them that palaestra.compat lacks maps to palaestra's own of the same path
(``palaestrai.agent.dummy_brain`` would be ``palaestra.agent.dummy_brain``), so a built-in
palaestra adds is found under its palaestrAI name without a module here."""


OFFERED_INSIDE_REFUSED = frozenset(
    {
        "palaestrai.core",
        "palaestrai.core.protocol",
        "palaestrai.core.protocol.environment_reset_req",
        "palaestrai.core.protocol.environment_reset_rsp",
    }
)
"""Modules under a refused one that are offered: the reset request and response that an
environment's ``reset(request)`` takes and returns (their packages refuse every other name)."""


def refusal(fullname: str) -> str | None:
    """What to use instead of ``fullname``, if palaestra deliberately does not offer it."""
    if fullname in OFFERED_INSIDE_REFUSED:
        return None
    parts = fullname.split(".")
    for end in range(len(parts), 1, -1):
        advice = REFUSED.get(".".join(parts[:end]))
        if advice is not None:
            return advice
    return None


def _is_alias(fullname: str) -> bool:
    return fullname == ALIAS or fullname.startswith(ALIAS + ".")


def _is_ours(module: object) -> bool:
    """Whether a module under a ``palaestrai`` name is one of palaestra's (mapped by us)."""
    name = getattr(module, "__name__", None)
    return isinstance(name, str) and name.startswith("palaestra.")


class PalaestraiFinder(importlib.abc.MetaPathFinder):
    """Finds ``palaestrai.*`` as the modules of the same path under :data:`TARGET`."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if not _is_alias(fullname):
            return None
        advice = refusal(fullname)
        if advice is not None:
            raise ModuleNotFoundError(
                f"palaestra does not offer palaestrAI's module '{fullname}': {advice}",
                name=fullname,
            )
        found = _mapped(fullname)
        if found is None:
            raise ModuleNotFoundError(
                f"No module named '{fullname}': palaestra maps palaestrAI's public plug-in API "
                "(see docs/coming-from-palaestrai.md), and this module is not part of it",
                name=fullname,
            )
        mapped, spec = found
        return importlib.util.spec_from_loader(
            fullname,
            _AliasLoader(mapped),
            is_package=spec.submodule_search_locations is not None,
        )


def _mapped(fullname: str) -> tuple[str, importlib.machinery.ModuleSpec] | None:
    """The module ``fullname`` maps to, and its spec: the one of the same path under
    :data:`TARGET`, else (in the built-ins' packages) palaestra's own of the same path."""
    rest = fullname[len(ALIAS) :]
    candidates = [TARGET + rest]
    if rest.count(".") >= 2 and rest.split(".")[1] in BUILTIN_PACKAGES:
        candidates.append("palaestra" + rest)
    for name in candidates:
        try:
            spec = importlib.util.find_spec(name)
        except ModuleNotFoundError:  # a parent package of it does not exist
            continue
        if spec is not None:
            return name, spec
    return None


class _AliasLoader(importlib.abc.Loader):
    """Loads a ``palaestrai`` name as the already importable module it maps to."""

    def __init__(self, mapped: str) -> None:
        self.mapped = mapped
        self.own_spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.mapped)
        self.own_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system gave the module the alias spec; it keeps its own (and its name).
        if self.own_spec is not None:
            module.__spec__ = self.own_spec


FINDER = PalaestraiFinder()

CHILD_OPTION = "default::palaestra_compat_boot.CompatInstalled"
"""The warning option by which an interpreter that :mod:`multiprocessing` starts (``spawn``,
``forkserver``) installs the finder at startup: see :mod:`palaestra.compat.child`."""


def install() -> list[str]:
    """Put the finder first on :data:`sys.meta_path` (once); return the names evicted.

    ``palaestrai`` modules imported before (the real distribution's) are removed from
    :data:`sys.modules`, so that the next import maps them; a module that took names from
    them before keeps what it took, so the finder must be installed before any plug-in module
    is imported. A warning names the modules evicted.
    """
    evicted = [
        name
        for name, module in list(sys.modules.items())
        if _is_alias(name) and not _is_ours(module)
    ]
    for name in evicted:
        del sys.modules[name]
    if evicted:
        LOG.warning(
            "palaestrAI's own modules were imported before palaestra's compatibility finder; "
            "evicted so that palaestrai.* maps to palaestra: %s",
            ", ".join(sorted(evicted)),
        )
    if FINDER in sys.meta_path:
        sys.meta_path.remove(FINDER)
    sys.meta_path.insert(0, FINDER)
    if CHILD_OPTION not in sys.warnoptions:  # children started by spawn/forkserver install it
        sys.warnoptions.append(CHILD_OPTION)
    _boot_path(add=True)
    return evicted


BOOT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "boot")
"""The directory of :mod:`palaestra_compat_boot`, the module :data:`CHILD_OPTION` names: on
``PYTHONPATH`` while the finder is installed, so a fresh interpreter finds it before
:mod:`site` has put the installed packages on its path."""


def _boot_path(add: bool) -> None:
    """Add :data:`BOOT_DIR` to (or remove it from) ``PYTHONPATH`` for the interpreters that
    this process starts."""
    _keep_title_memory()
    entries = [e for e in os.environ.get("PYTHONPATH", "").split(os.pathsep) if e]
    entries = [e for e in entries if e != BOOT_DIR]
    if add:
        entries.append(BOOT_DIR)  # last: it holds one module of its own name, shadows nothing
    if entries:
        os.environ["PYTHONPATH"] = os.pathsep.join(entries)
    else:
        os.environ.pop("PYTHONPATH", None)


def _keep_title_memory() -> None:
    """Let setproctitle claim the memory of ``argv`` and the environment for process titles
    now: at its first use it takes them only as far as their strings lie one after another,
    and an inherited variable changed here (``PYTHONPATH`` set by the user) moves elsewhere;
    every process of the run would then keep its command line as its title."""
    import setproctitle

    # (a command line with bytes that are no UTF-8, a file's name, say: its memory is taken
    # all the same, and only the title read back cannot be decoded)
    with contextlib.suppress(UnicodeDecodeError):
        setproctitle.getproctitle()


def uninstall() -> None:
    """Remove the finder and forget the ``palaestrai`` names it mapped (for tests)."""
    while FINDER in sys.meta_path:
        sys.meta_path.remove(FINDER)
    while CHILD_OPTION in sys.warnoptions:
        sys.warnoptions.remove(CHILD_OPTION)
    _boot_path(add=False)
    for name, module in list(sys.modules.items()):
        if _is_alias(name) and _is_ours(module):
            del sys.modules[name]


def installed() -> bool:
    """Whether the finder is on :data:`sys.meta_path`."""
    return FINDER in sys.meta_path
