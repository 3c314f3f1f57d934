"""Learning an environment's sensor and actuator ids while checking a run file.

Each environment of a run file is started once in the checking process, so that an agent that
names a sensor or actuator the environment does not have is refused before any process starts.
An environment that is expensive to start can opt out with the class attribute
``check_ids_by_starting = False``; its ids are then checked when the run starts. A probe that
fails is not an error here: the run itself will report it, naming the process.
"""

from __future__ import annotations

import json
import logging

from palaestra.core.loading import load_class
from palaestra.core.specs import EnvironmentSpec
from palaestra.environment.environment_process import construct

LOG = logging.getLogger(__name__)


class EnvironmentIds:
    """The full sensor and actuator ids (``uid.id``) of environments, probed once each."""

    def __init__(self) -> None:
        self._known: dict[str, dict[str, set[str]] | None] = {}

    def of(self, spec: EnvironmentSpec) -> dict[str, set[str]] | None:
        """``{"sensors": {...}, "actuators": {...}}``, or None if they cannot be known now."""
        key = json.dumps([spec.name, spec.uid, spec.params], sort_keys=True, default=repr)
        if key not in self._known:
            self._known[key] = _probe(spec)
        return self._known[key]


def _probe(spec: EnvironmentSpec) -> dict[str, set[str]] | None:
    try:
        if not getattr(load_class(spec.name), "check_ids_by_starting", True):
            return None
        env = construct(spec, seed=0)
        try:
            sensors, actuators = tuple(env.start_environment())[:2]
        finally:
            env.shutdown()
        prefix = f"{spec.uid}."
        return {
            "sensors": {prefix + str(s.uid) for s in sensors},
            "actuators": {prefix + str(a.uid) for a in actuators},
        }
    except Exception as exc:  # the user's environment: the run will report it properly
        LOG.debug("could not probe environment %s: %r", spec.uid, exc)
        return None
