"""The command's entry point, light on purpose: Ctrl-C or SIGTERM at any moment of its start
(while Python imports the command line, the plug-in names, the undertaker) ends it with
"Interrupted." (exit 130), "Terminated." (exit 143) or "Hung up." (SIGHUP: exit 129), never a
traceback from inside an import;
one that Python dropped on the way (see :mod:`palaestra.core.supervision.interrupts`) ends it
so as well. Its end is quick too: see :func:`leave`.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from collections.abc import MutableMapping
from typing import NoReturn

from palaestra.core.supervision import interrupts

BLAS_WAIT = ("OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT")
"""The variables that set how long OpenBLAS's threads wait for work, spinning, before they sleep
(``2**n`` cycles; OpenBLAS reads the first one set)."""


def main() -> None:
    interrupts.install()  # checking run files cleans up, then exits 130 or 143
    quiet_blas(os.environ)
    sys.unraisablehook = _unraisable
    try:
        from palaestra.cli.main import main as command

        command()
    except KeyboardInterrupt:
        leave(_said(signal.SIGINT))
    except interrupts.Terminated:  # (SIGTERM, or SIGHUP)
        leave(_said(interrupts.received() or signal.SIGTERM))
    except SystemExit as done:
        leave(done.code)
    except BaseException as exc:  # (a signal came: the command ends as it says)
        signum = interrupts.received()
        if signum is None:
            raise
        if not _from_signal(exc):  # an error of its own, after the signal: shown
            import traceback

            traceback.print_exception(exc)
        leave(_said(signum))
    leave(0)


def quiet_blas(environ: MutableMapping[str, str]) -> None:
    """Let OpenBLAS's threads sleep at once where they wait for work, unless the user set how
    long (before numpy is imported: OpenBLAS reads it as it loads).

    numpy's wheels bring OpenBLAS, which starts a thread per CPU as numpy is imported; each
    spins for about 2**28 cycles before it sleeps, and again after each call it shares out.
    That is 0.06 s of CPU at each import of numpy on a 2-core machine (the command's, and each
    process a ``spawn`` or ``forkserver`` start method starts) and 1.2 s on 17 threads (numpy
    issue 29193), taken from the run's processes as they start. With the shortest wait
    (2**4 cycles) the threads sleep at once and a call that shares work out wakes them; their
    number is unchanged. Spawned processes inherit the setting."""
    if not any(name in environ for name in BLAS_WAIT):
        environ[BLAS_WAIT[0]] = "4"


def _said(signum: int) -> int:
    """Say the signal's line (how the command was ended); its exit code."""
    sys.stderr.write(interrupts.LINES[signum] + "\n")
    return interrupts.EXIT_CODES[signum]


def _unless_signalled(status: int) -> int:
    """``status``, unless it is 0 and a signal came whose exception was dropped (or came
    while the command exits): then the signal's code, its line said."""
    signum = interrupts.received()
    return status if status != 0 or signum is None else _said(signum)


def _from_signal(exc: BaseException) -> bool:
    """Whether ``exc`` is a signal's exception or was raised from one (Python wraps the one
    raised in a ``__set_name__`` in a ``RuntimeError``)."""
    seen: BaseException | None = exc
    for _ in range(16):
        if seen is None:
            return False
        if isinstance(seen, (KeyboardInterrupt, interrupts.Terminated)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _unraisable(hook: sys.UnraisableHookArgs) -> None:
    """A signal's exception raised where Python cannot raise it (a ``__del__``) is recorded
    already: nothing to print. Anything else is printed as Python does."""
    recorded = interrupts.received() is not None
    if not (recorded and hook.exc_value is not None and _from_signal(hook.exc_value)):
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
    imported = _import_threads()
    if any(
        t is not main and t.is_alive() and not t.daemon and t not in imported
        for t in threading.enumerate()
    ):
        raise SystemExit(_unless_signalled(status))
    for thread, module in imported.items():
        if thread.is_alive():  # (the run's processes import the module for themselves)
            sys.stderr.write(
                f"Warning: thread {thread.name!r}, which importing plug-in module '{module}' "
                "started here, still runs; palaestra ends without waiting for it.\n"
            )
    atexit._run_exitfuncs()  # (a signal here cuts its handler short, and is recorded)
    interrupts.install(interrupts.recording)  # nothing is left to unwind
    status = _unless_signalled(status)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed, or a broken pipe: nothing more to say
            pass
    os._exit(_unless_cut_short(status))


def _import_threads() -> dict[threading.Thread, str]:
    """The threads importing plug-in modules started in this command (to check its run
    files), by :data:`palaestra.core.description.loading.IMPORT_THREADS`: not waited for at
    its end, where one that never ends hung the command after its work was done."""
    loading = sys.modules.get("palaestra.core.description.loading")
    threads: dict[threading.Thread, str] = getattr(loading, "IMPORT_THREADS", {})
    return threads


def _unless_cut_short(status: int) -> int:
    """``status``, unless it is 0 and the command's output was cut short by a full file
    (``palaestra results run > rows.csv`` on a full disk): then 1, said."""
    from palaestra.core.supervision.console import output_lost

    lost = output_lost()
    if status != 0 or lost is None:
        return status
    try:
        os.write(2, f"Error: {lost}: the output is incomplete\n".encode())
    except OSError:
        pass
    return 1
