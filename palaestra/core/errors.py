"""The error types palaestra raises, each knowing its exit code and how to print itself."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

EXIT_OK = 0
EXIT_RUN_FAILED = 1
EXIT_INVALID_INPUT = 2
EXIT_STORE_UNUSABLE = 3
EXIT_SIGHUP = 129
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


class PalaestraError(Exception):
    """Base of every error palaestra reports to a user.

    ``exit_code`` is the process exit code the CLI uses when this error ends a command.
    """

    exit_code: int = EXIT_RUN_FAILED

    def format_message(self) -> str:
        return str(self)


class InvalidInputError(PalaestraError):
    """Input given by the user (a run file, a runtime config, an argument) is not valid."""

    exit_code = EXIT_INVALID_INPUT


class RunFileError(InvalidInputError):
    """A run file is invalid.

    Args:
        message: What is wrong, in one sentence.
        path: The run file.
        line: 1-based line number, if known.
        key: The key path inside the run file, like ``schedule[0].phase_0.agents[1].brain.name``.
        hint: An optional second sentence: what to do about it.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        key: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.path = path
        self.line = line
        self.key = key
        self.hint = hint
        super().__init__(self.format_message())

    def format_message(self) -> str:
        where = self.path or "<run file>"
        if self.line is not None:
            where = f"{where}:{self.line}"
        text = f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"
        if self.hint:
            text = f"{text}\n       {self.hint}"
        return text


class RuntimeConfigError(InvalidInputError):
    """The runtime configuration (file or environment) is invalid."""


class PluginLoadError(InvalidInputError):
    """A ``module:Class`` name does not resolve to a class."""


class NotResumableError(InvalidInputError):
    """``experiment-resume``: the instance asked for is unknown, finished, still running, or
    continued by another instance already."""


class StoreError(PalaestraError):
    """The store cannot be used (unreachable, wrong schema, not writable)."""

    exit_code = EXIT_STORE_UNUSABLE


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """Return ``"Did you mean 'x'?"`` for the closest candidate, or None."""
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f"Did you mean '{close[0]}'?" if close else None
