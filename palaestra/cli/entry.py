"""The command's entry point, light on purpose: Ctrl-C or SIGTERM at any moment of its start
(while Python imports the command line, the plug-in names, the undertaker) ends it with
"Interrupted." (exit 130) or "Terminated." (exit 143), never a traceback from inside an import;
one that Python dropped on the way (see :mod:`palaestra.core.supervision.interrupts`) ends it
so as well. Its end is quick too: see :func:`leave`.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from typing import NoReturn

from palaestra.core.supervision import interrupts


def main() -> None:
    interrupts.install()  # checking run files cleans up, then exits 130 or 143
    sys.unraisablehook = _unraisable
    try:
        from palaestra.cli.main import main as command

        command()
    except KeyboardInterrupt:
        ended_by(signal.SIGINT)
    except interrupts.Terminated:
        ended_by(signal.SIGTERM)
    except SystemExit as done:
        leave(done.code)
    except BaseException:  # a signal's exception, wrapped by Python (say, in a RuntimeError)
        signum = interrupts.received()
        if signum is None:
            raise
        ended_by(signum)
    leave(0)


def ended_by(signum: int) -> NoReturn:
    """Say how the command was ended and exit with the signal's code."""
    sys.stderr.write(interrupts.SAID[signum] + "\n")
    leave(interrupts.EXIT_CODES[signum])


def _unless_signalled(status: int) -> int:
    """``status``, unless it is 0 and a signal came whose exception was dropped (or came
    while the command exits): then the signal's code, its line said."""
    signum = interrupts.received()
    if status != 0 or signum is None:
        return status
    sys.stderr.write(interrupts.SAID[signum] + "\n")
    return interrupts.EXIT_CODES[signum]


def _unraisable(hook: sys.UnraisableHookArgs) -> None:
    """A signal's exception raised where Python cannot raise it (a ``__del__``) is recorded
    already: nothing to print. Anything else is printed as Python does."""
    if not isinstance(hook.exc_value, (KeyboardInterrupt, interrupts.Terminated)):
        sys.__unraisablehook__(hook)


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
        raise SystemExit(_unless_signalled(status))
    atexit._run_exitfuncs()  # (a signal here cuts its handler short, and is recorded)
    status = _unless_signalled(status)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed, or a broken pipe: nothing more to say
            pass
    os._exit(status)
