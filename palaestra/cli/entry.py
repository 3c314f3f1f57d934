"""The command's entry point, light on purpose: Ctrl-C or SIGTERM at any moment of its start
(while Python imports the command line, the plug-in names, the undertaker) ends it with
"Interrupted." (exit 130) or "Terminated." (exit 143), never a traceback from inside an import.
"""

from __future__ import annotations

import signal
import sys

from palaestra.core.errors import EXIT_SIGINT, EXIT_SIGTERM


class Terminated(BaseException):
    """SIGTERM outside a run (a run handles its own): unwinds like Ctrl-C (through click,
    which lets it pass), then exits 143."""


def terminated(signum: int, frame: object) -> None:
    raise Terminated


def main() -> None:
    signal.signal(signal.SIGTERM, terminated)  # checking run files cleans up, then exits 143
    try:
        from palaestra.cli.main import main as command

        command()
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted.\n")
        raise SystemExit(EXIT_SIGINT) from None
    except Terminated:
        sys.stderr.write("Terminated.\n")
        raise SystemExit(EXIT_SIGTERM) from None
