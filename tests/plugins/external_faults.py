"""Misbehaving clients of the external-environment protocol, for the tests: the reference
heated room (``palaestra/clients/python``), with one fault at a chosen step.

    python external_faults.py MODE AT (--connect ADDRESS | --bind ADDRESS) [--exit-on-close]

MODE: ``crash`` (the process exits with code 3 on the AT-th step command), ``garbage``
(answers it with bytes that are no protocol), ``error`` (answers it with an error),
``reconnect`` (drops its connection before answering it, keeping its worlds: palaestra
greets it again and sends the step again), ``drop-after`` (answers it, then drops its
connection: palaestra greets it again before the next command), ``restart`` (drops its
connection and its worlds before answering it, as a restarted client would), ``version``
(speaks protocol version 2), ``silent`` (never answers hello), ``hang`` (never answers the
AT-th step).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "palaestra" / "clients" / "python"))

from heater_world import make_world  # noqa: E402
from palaestra_client import Server, decode, main_arguments  # noqa: E402


class FaultyServer(Server):
    def __init__(self, mode: str, at: int, **kwargs: Any) -> None:
        super().__init__(make_world, **kwargs)
        self.mode = mode
        self.at = at
        self.steps_seen = 0

    def handle_frames(self, frames: list[bytes]) -> bool:
        _, command = decode(frames[-1])
        name = command.get("command")
        if name == "hello" and self.mode == "silent":
            return True
        if name == "step":
            self.steps_seen += 1
            if self.steps_seen == self.at:
                if self.mode == "crash":
                    os._exit(3)
                if self.mode == "hang":  # libzmq still answers the heartbeats
                    time.sleep(3600)
                if self.mode == "garbage":
                    self.socket.send_multipart([frames[0], b"\xff\xfe this is not the protocol"])
                    return True
                if self.mode == "drop-after":  # answer, then drop the connection
                    super().handle_frames(frames)
                    self.reopen()
                    return True
                if self.mode in ("reconnect", "restart"):
                    if self.mode == "restart":
                        self.sessions.clear()
                        self.peers.clear()
                    self.reopen()
                    return True
        return super().handle_frames(frames)

    def answer(self, peer: bytes, command: dict[str, Any], encoding: str) -> dict[str, Any]:
        answer = super().answer(peer, command, encoding)
        if self.mode == "version" and command.get("command") == "hello":
            answer["version"] = 2
        if (
            self.mode == "error"
            and command.get("command") == "step"
            and self.steps_seen == self.at
        ):
            return {"id": command["id"], "status": "error", "error": "the heater caught fire"}
        return answer


def main() -> None:
    mode, at = sys.argv[1], int(sys.argv[2])
    args = main_arguments("a misbehaving heated room", sys.argv[3:])
    server = FaultyServer(mode, at, exit_on_close=args.exit_on_close)
    if args.connect:
        server.connect(args.connect)
    else:
        server.bind(args.bind)
    server.serve()


if __name__ == "__main__":
    main()
