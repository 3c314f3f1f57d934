"""A small simulated world for palaestra's external-environment protocol: a heated room.

Run it as a client (it imports nothing of palaestra, only pyzmq and its sibling
``palaestra_client``)::

    python heater_world.py --connect tcp://127.0.0.1:5555   # palaestra has bind: ...
    python heater_world.py --bind tcp://127.0.0.1:5555      # palaestra has connect: ...

The room's temperature follows the weather outside and a heater the agent sets (``power``,
0 to 1). Sensors: ``temperature`` and ``outside`` (Box, degrees Celsius) and ``time`` (the
step, Discrete); reward ``comfort``: minus the distance to the target temperature, minus
a little for the energy used. An episode ends when the room leaves 0..40 degrees
(terminated) or after ``steps`` steps (truncated). The world is deterministic given its
seed: its random numbers come from xorshift32, which the Node.js port in palaestra's
``clients/node`` computes bit for bit the same (only +, -, *, / and comparisons on doubles).
``config`` (palaestra's ``world:`` param): ``steps`` (20), ``target`` (21.0).
"""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from palaestra_client import Server, main_arguments  # noqa: E402

MASK = 0xFFFFFFFF


class XorShift32:
    """Marsaglia's xorshift32: uniform numbers in [0, 1), the same in every language."""

    def __init__(self, seed: int) -> None:
        self.state = (int(seed) & MASK) or 0x9E3779B9

    def next(self) -> float:
        x = self.state
        x ^= (x << 13) & MASK
        x ^= x >> 17
        x ^= (x << 5) & MASK
        self.state = x
        return x / 4294967296.0


class HeaterWorld:
    """The heated room; see the module's docstring."""

    name = "heater"

    def __init__(self, seed: int, config: dict[str, Any] | None = None) -> None:
        config = config or {}
        self.steps = int(config.get("steps", 20))
        self.target = float(config.get("target", 21.0))
        if self.steps < 1:
            raise ValueError(f"config.steps must be at least 1, got {self.steps}")
        self.rng = XorShift32(seed)
        self.temperature = 0.0
        self.outside = 0.0
        self.time = 0
        self.over = True  # no episode yet, or it ended: reset first

    def describe(self) -> dict[str, Any]:
        degrees = box(-50.0, 100.0, [1])
        return {
            "name": self.name,
            "sensors": [
                {"uid": "temperature", "space": degrees},
                {"uid": "outside", "space": degrees},
                {"uid": "time", "space": {"type": "Discrete", "n": self.steps + 1, "start": 0}},
            ],
            "actuators": [{"uid": "power", "space": box(0.0, 1.0, [1]), "value": [0.0]}],
            "rewards": [{"uid": "comfort", "space": box("-inf", "inf", [])}],
        }

    def sensors(self) -> dict[str, Any]:
        return {"temperature": [self.temperature], "outside": [self.outside], "time": self.time}

    def reset(self) -> dict[str, Any]:
        self.temperature = 15.0 + 10.0 * self.rng.next()
        self.outside = 0.0 + 10.0 * self.rng.next()
        self.time = 0
        self.over = False
        return self.sensors()

    def step(self, setpoints: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], bool, bool]:
        if self.over:
            raise ValueError("the episode is over (or never began): reset first")
        power = power_of(setpoints.get("power", [0.0]))
        self.outside = self.outside + (self.rng.next() - 0.5)
        self.temperature = self.temperature + 0.1 * (self.outside - self.temperature) + 2.0 * power
        self.time += 1
        comfort = -abs(self.temperature - self.target) - 0.1 * power
        terminated = self.temperature < 0.0 or self.temperature > 40.0
        truncated = self.time >= self.steps and not terminated
        self.over = terminated or truncated
        return self.sensors(), {"comfort": comfort}, terminated, truncated


def box(low: float | str, high: float | str, shape: list[int]) -> dict[str, Any]:
    """palaestra's JSON form of a float64 Box (``"inf"``: a non-finite bound)."""
    return {"type": "Box", "low": low, "high": high, "shape": shape, "dtype": "float64"}


def power_of(value: Any) -> float:
    """The heater's set point: ``[p]`` or ``p``, clipped into 0..1."""
    if isinstance(value, list):
        if len(value) != 1:
            raise ValueError(f"power: expected one value, got {value!r}")
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"power: expected a number, got {value!r}")
    return min(1.0, max(0.0, float(value)))


def make_world(hello: dict[str, Any]) -> HeaterWorld:
    """A world for palaestra's ``hello``: its seed and ``config``."""
    return HeaterWorld(int(hello.get("seed") or 0), hello.get("config") or {})


def main(argv: list[str] | None = None) -> None:
    args = main_arguments(__doc__.splitlines()[0] if __doc__ else "", argv)
    server = Server(make_world, exit_on_close=args.exit_on_close)
    if args.connect:
        server.connect(args.connect)
    else:
        server.bind(args.bind)
    server.serve()


if __name__ == "__main__":
    main()
