"""Children started elsewhere than by a fork of their parent: in another network namespace,
on another host, by a cluster manager.

A run's :class:`Placement` decides, child by child, where it runs: ``None`` from
:meth:`Placement.launch` starts the child as usual; a :class:`Launched` is a child started some
other way, which the :class:`~palaestra.core.supervision.processes.Supervisor` watches and stops
like any other (its end is the fd ``sentinel``, its stop a signal it forwards).

Every launched child runs ``python -m palaestra.core.supervision.remote_child``: the parent
writes the child's :class:`~palaestra.core.supervision.processes.ChildSpec` (pickled: the pipe is
a local one, never a socket) to its stdin and keeps that pipe open for as long as it lives; the
child takes the pipe's end for its parent's death. :class:`SubprocessLauncher` is that, with an
optional command prefix (``ip netns exec NS``, say); a cluster backend runs the same command on
its node.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pickle
import struct
import subprocess
import sys
from collections.abc import Sequence
from typing import Protocol

from palaestra.core.supervision.processes import ChildSpec, Launched

ENTRY = ("-m", "palaestra.core.supervision.remote_child")
"""The interpreter arguments that run a launched child."""
HEADER = struct.Struct("!Q")
"""The length of the pickled spec, ahead of it on the child's stdin."""


class Placement(Protocol):
    """Where a run's children run."""

    def launch(self, spec: ChildSpec) -> Launched | None:
        """A child for ``spec``, not yet started; None: start it the usual way."""


def encode_spec(spec: ChildSpec) -> bytes:
    """The bytes a launched child reads from its stdin."""
    payload = pickle.dumps(spec)
    return HEADER.pack(len(payload)) + payload


def interpreter_command() -> list[str]:
    """This interpreter with its flags running :mod:`palaestra.core.supervision.remote_child` (its
    ``-W`` options travel in :func:`child_environment`)."""
    flags: list[str] = subprocess._args_from_interpreter_flags()  # type: ignore[attr-defined]
    kept = [flag for flag in flags if not flag.startswith("-W")]
    return [sys.executable, *kept, *ENTRY]


def child_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a launched child: this process's, ``extra``, and this interpreter's
    warning options in ``PYTHONWARNINGS`` (the palaestrAI name finder rides on one: see
    :mod:`palaestra.compat.child`). As ``-W`` options on the command line, an option whose
    category is imported at start-up keeps :mod:`setproctitle` from retitling the child."""
    env = {**os.environ, **(extra or {})}
    options = [env["PYTHONWARNINGS"]] if env.get("PYTHONWARNINGS") else []
    options += [option for option in sys.warnoptions if option not in options]
    if options:
        env["PYTHONWARNINGS"] = ",".join(options)
    return env


def on_host(spec: ChildSpec, name: str, address: str) -> ChildSpec:
    """``spec`` for a child on host ``name`` that binds TCP on ``address``: in a run across
    hosts its network is seen from there (see :mod:`palaestra.core.wire.netlink`); else
    unchanged."""
    if spec.network is None:
        return spec
    from palaestra.core.wire.netlink import Host

    here = Host(name=name, address=address)
    return dataclasses.replace(spec, network=spec.network.on(here))


class SubprocessLauncher:
    """A :class:`Placement` that starts chosen children as subprocesses of this process,
    behind a command ``prefix`` (e.g. ``["ip", "netns", "exec", "ns1"]``).

    Args:
        prefix: The command in front of the interpreter.
        host: What ``Launched.host`` says.
        roles: The roles to launch so (``None``: every child).
        env: Extra environment variables for the children.
        address: In a run across hosts (see :mod:`palaestra.core.wire.netlink`): the address the
            children bind TCP on, reachable from the run's other hosts; they are then on the
            host named ``host`` (or ``address``, if ``host`` is empty), and reach processes of
            other hosts by CURVE tcp. None: they are on their parent's host.
    """

    def __init__(
        self,
        prefix: Sequence[str] = (),
        host: str = "",
        roles: Sequence[str] | None = None,
        env: dict[str, str] | None = None,
        address: str | None = None,
    ) -> None:
        self.prefix = list(prefix)
        self.host = host
        self.roles = None if roles is None else frozenset(roles)
        self.env = dict(env or {})
        self.address = address

    def launch(self, spec: ChildSpec) -> Launched | None:
        if self.roles is not None and spec.role not in self.roles:
            return None
        if self.address is not None:
            spec = on_host(spec, self.host or self.address, self.address)
        command = [*self.prefix, *interpreter_command()]
        return SubprocessChild(spec, command, self.host, child_environment(self.env))


class Placements:
    """A :class:`Placement` made of several: a child goes to the first that launches it (and
    is started the usual way if none does); e.g. one :class:`SubprocessLauncher` per host."""

    def __init__(self, *placements: Placement) -> None:
        self.placements = placements

    def launch(self, spec: ChildSpec) -> Launched | None:
        for placement in self.placements:
            launched = placement.launch(spec)
            if launched is not None:
                return launched
        return None


class SubprocessChild:
    """A :class:`Launched` child that is a subprocess of this process."""

    def __init__(
        self,
        spec: ChildSpec,
        command: Sequence[str],
        host: str = "",
        env: dict[str, str] | None = None,
    ) -> None:
        self.name = spec.name
        self.host = host
        self._spec = spec
        self._command = list(command)
        self._env = env
        self._popen: subprocess.Popen[bytes] | None = None
        self._pidfd: int | None = None

    @property
    def pid(self) -> int | None:
        return None if self._popen is None else self._popen.pid

    @property
    def exitcode(self) -> int | None:
        return None if self._popen is None else self._popen.poll()

    @property
    def held(self) -> tuple[int, ...]:
        stdin = None if self._popen is None else self._popen.stdin
        return () if stdin is None or stdin.closed else (stdin.fileno(),)

    def start(self) -> None:
        popen = subprocess.Popen(self._command, stdin=subprocess.PIPE, env=self._env)
        self._popen = popen
        self._pidfd = os.pidfd_open(popen.pid)
        assert popen.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # it ended at once; its exit code tells
            popen.stdin.write(encode_spec(self._spec))
            popen.stdin.flush()  # and kept open: its end is this process's death

    @property
    def sentinel(self) -> int:
        assert self._pidfd is not None, "not started"
        return self._pidfd

    def signal(self, signum: int) -> None:
        if self._popen is not None and self._popen.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._popen.send_signal(signum)

    def join(self, timeout: float) -> None:
        if self._popen is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._popen.wait(timeout)

    def close_sentinel(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        if self._popen is not None and self._popen.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                self._popen.stdin.close()


__all__ = [
    "ENTRY",
    "Launched",
    "Placement",
    "Placements",
    "child_environment",
    "SubprocessChild",
    "SubprocessLauncher",
    "encode_spec",
    "interpreter_command",
    "on_host",
]
