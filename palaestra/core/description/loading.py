"""Resolving ``module:Class`` names from run files to classes."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sysconfig
import threading
import traceback

from palaestra.core.errors import PluginLoadError, did_you_mean

IMPORT_THREADS: dict[threading.Thread, str] = {}
"""The threads, no daemons, that importing a plug-in module started, and the module: the
command that imported it to check a run file does not wait for them at its end (see
:func:`palaestra.cli.entry.leave`); the run's processes import the module for themselves."""


def load_class(name: str) -> type:
    """Import and return the class named by ``"package.module:Class"``.

    Raises:
        PluginLoadError: with a message that says what is wrong: no colon, a module that does
            not exist, a module that fails to import (the user's error shown), or a missing class
            (with a "did you mean").
    """
    parts = name.split(":") if isinstance(name, str) else []
    if len(parts) != 2 or not all(parts):
        raise PluginLoadError(
            f"'{name}' is not a class name of the form 'package.module:ClassName'"
        )
    module_name, class_name = parts
    spec = _find_spec(module_name)
    if spec is None:
        raise PluginLoadError(f"no module '{module_name}' (in '{name}')")
    before = set(threading.enumerate())
    try:
        module = importlib.import_module(module_name)
    except _IMPORT_FAILURES as exc:  # the user's module failed: show their error, not ours
        raise PluginLoadError(
            f"module '{module_name}' failed to import: {import_failure(exc)}"
        ) from exc
    finally:
        for thread in threading.enumerate():
            if thread not in before and not thread.daemon:
                IMPORT_THREADS[thread] = module_name
    cls = getattr(module, class_name, None)
    if not isinstance(cls, type):
        candidates = [n for n, v in vars(module).items() if isinstance(v, type)]
        hint = did_you_mean(class_name, candidates)
        message = f"no class '{name}'"
        raise PluginLoadError(f"{message}. {hint}" if hint else message)
    return cls


def _find_spec(module_name: str) -> importlib.machinery.ModuleSpec | None:
    """The module's spec, or None if there is no such module; importing its parent packages
    fails with their error shown."""
    try:
        return importlib.util.find_spec(module_name)  # imports the parent packages
    except ModuleNotFoundError as exc:
        if exc.name is not None and not module_name.startswith(exc.name):
            # a parent package exists but needs something that is missing
            raise PluginLoadError(
                f"cannot import module '{module_name}': {import_failure(exc)}"
            ) from exc
        if not _plain_not_found(exc):  # an import hook said why
            raise PluginLoadError(f"cannot import module '{module_name}': {exc}") from exc
        return None
    except _IMPORT_FAILURES as exc:  # a parent package failed: show the user's error
        raise PluginLoadError(
            f"cannot import module '{module_name}': {import_failure(exc)}"
        ) from exc


def _python_own(path: str) -> bool:
    """Whether ``path`` is one of Python's own modules (argparse, say), not a plug-in's."""
    paths = sysconfig.get_paths()
    return path.startswith(paths["stdlib"]) and not path.startswith(
        (paths["purelib"], paths["platlib"])
    )


_IMPORT_FAILURES = (Exception, SystemExit)
"""What a plug-in module's import may raise that is its failure: also ``SystemExit``, from a
``sys.exit()`` or an ``argparse`` parser run at import, which otherwise ended palaestra at
once, with exit 0 and nothing run (or with argparse's usage as if palaestra's own)."""


def import_failure(exc: BaseException) -> str:
    """What a module's import raised, as an error message shows it: the exception's last line
    and, where it was raised (or an import of it failed) in a file rather than in Python's
    import machinery, that file, line and code (of a syntax error: the line it is in)."""
    last = traceback.format_exception_only(type(exc), exc)[-1].strip()
    if isinstance(exc, SyntaxError) and exc.filename:  # (where the code is wrong)
        code = f": {exc.text.strip()}" if exc.text and exc.text.strip() else ""
        return f"{last} ({_shown(exc.filename)}, line {exc.lineno}{code})"
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not frame.filename.startswith("<") and frame.filename != __file__
    ]
    if isinstance(exc, SystemExit):  # (an argparse parser's exit: the line that ran it)
        frames = [f for f in frames if not _python_own(f.filename)] or frames
    if not frames:
        return last
    frame = frames[-1]
    code = f": {frame.line}" if frame.line else ""
    return f"{last} ({_shown(frame.filename)}, line {frame.lineno}{code})"


def _shown(path: str) -> str:
    """``path`` relative to the working directory where it is below it."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # (another drive)
        return path
    return path if relative.startswith("..") else relative


def _plain_not_found(exc: ModuleNotFoundError) -> bool:
    """Whether Python's import system itself found no such module (no module of that name, or
    a "parent" that is a module, not a package), rather than an import hook saying why."""
    text = str(exc)
    return text == f"No module named {exc.name!r}" or "__path__ attribute not found" in text
