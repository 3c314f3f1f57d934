"""The command's entry point, light on purpose: Ctrl-C or SIGTERM at any moment of its start
(while Python imports the command line, the plug-in names, the undertaker) ends it with
"Interrupted." (exit 130) or "Terminated." (exit 143), never a traceback from inside an import.
Its end is quick too: see :func:`leave`.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from typing import NoReturn

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
        leave(EXIT_SIGINT)
    except Terminated:
        sys.stderr.write("Terminated.\n")
        leave(EXIT_SIGTERM)
    except SystemExit as done:
        leave(done.code)
    leave(0)


def leave(code: object) -> NoReturn:
    """Exit with ``code`` as ``sys.exit`` would, without tearing the interpreter down.

    What Python does at exit is done: non-daemon threads are waited for (where there are
    any, Python's own exit is taken), the ``atexit`` handlers run (logging's, multiprocessing's,
    the finalizers of temporary files) and the standard streams are flushed. What is skipped
    is the teardown of every module and object of a process that imported the runtime and a
    run's plug-ins: 0.1 to 0.25 s of CPU at the end of every command on the 2-core machines.
    """
    if code is None or isinstance(code, int):
        status = code or 0
    else:  # sys.exit("message"): printed, exit 1
        sys.stderr.write(f"{code}\n")
        status = 1
    main = threading.main_thread()
    if any(t is not main and t.is_alive() and not t.daemon for t in threading.enumerate()):
        raise SystemExit(status)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed, or a broken pipe: nothing more to say
            pass
    os._exit(status)
