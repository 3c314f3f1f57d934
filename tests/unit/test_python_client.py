"""The Python reference client of the external-environment protocol
(``palaestra/clients/python/palaestra_client.py``): its answers to one command, in one process."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "palaestra" / "clients" / "python"))
from heater_world import HeaterWorld  # noqa: E402
from palaestra_client import Server, to_strict  # noqa: E402


class NumpyWorld(HeaterWorld):
    """A simulator's world: its readings and rewards are numpy's numbers (``float32``)."""

    reward: Any = None

    def step(self, setpoints: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], bool, bool]:
        sensors, rewards, terminated, truncated = super().step(setpoints)
        sensors["temperature"] = np.asarray(sensors["temperature"], dtype=np.float32)
        reward = np.float32(rewards["comfort"]) if self.reward is None else self.reward
        return sensors, {"comfort": reward}, np.bool_(terminated), truncated


class Sent:
    """Takes what the server sends (in place of its socket)."""

    def __init__(self) -> None:
        self.frames: list[list[bytes]] = []

    def send_multipart(self, frames: list[bytes]) -> None:
        self.frames.append(frames)

    def close(self, linger: int = 0) -> None:
        pass


@pytest.fixture
def server() -> Iterator[Server]:
    made = Server(lambda hello: NumpyWorld(int(hello["seed"])))
    made.socket.close(linger=0)
    made.socket = Sent()  # type: ignore[assignment]
    yield made
    made.context.term()


def ask(server: Server, **command: Any) -> dict[str, Any]:
    server.handle_frames([b"peer", json.dumps(command).encode()])
    sent = server.socket.frames.pop()  # type: ignore[attr-defined]
    assert sent[0] == b"peer"
    answer: dict[str, Any] = json.loads(sent[1])
    return answer


def test_numpys_numbers_are_written_as_plain_ones() -> None:
    assert to_strict({"a": np.float32(1.5), "b": np.array([1, np.nan]), "c": np.bool_(True)}) == {
        "a": 1.5,
        "b": [1.0, "nan"],
        "c": True,
    }


def test_a_world_of_numpys_numbers_is_answered_and_one_json_cannot_hold_is_an_error(
    server: Server,
) -> None:
    """The client ended with a traceback on a world's ``float32`` (``Object of type float32 is
    not JSON serializable``): palaestra said only that it hung up."""
    assert ask(server, id=1, command="hello", version=1, session="s", seed=3)["status"] == "ok"
    ask(server, id=2, command="reset")
    answer = ask(server, id=3, command="step", setpoints={"power": [1.0]})
    assert answer["status"] == "ok", answer
    assert isinstance(answer["sensors"]["temperature"][0], float)
    assert isinstance(answer["rewards"]["comfort"], float)
    world = server.sessions["s"].world
    world.reward = object()  # type: ignore[attr-defined]
    answer = ask(server, id=4, command="step", setpoints={"power": [1.0]})
    assert answer["id"] == 4 and answer["status"] == "error"
    assert answer["error"].startswith("the world's answer cannot be written as json: Object of")
