"""A Muscle process's links to its peers: its Brain, its worker's environments and, where the
simulation controller plays the worker's games, the controller (and where its store is).

The Muscle links to its Brain and to its worker's environments when its first episode begins
(all of them are up by then); the controller links to the Muscle (it listens for it, as an
environment listens for its Muscles). A test wires in-memory links instead
(:class:`palaestra.testing.FakeLink`).
"""

from __future__ import annotations

from palaestra.core.description import names
from palaestra.core.supervision.hotloop import HotLoop
from palaestra.core.wire.channel import Channel, Listener
from palaestra.core.wire.transport import link_for


class MuscleLinks:
    """The peers of one Muscle process.

    Args:
        brain: The Brain's endpoint.
        environments: The endpoints of the worker's environments, by uid.
        store: The store writer's endpoint (None: no store).
    """

    __slots__ = (
        "brain",
        "environment_endpoints",
        "store",
        "environments",
        "listener",
        "controller",
    )

    def __init__(self, brain: str, environments: dict[str, str], store: str | None) -> None:
        self.brain = brain
        self.store = store
        self.environment_endpoints = environments
        self.environments: dict[str, Channel] = {}  # the links made to them, by uid
        self.listener: Listener | None = None  # for the controller's link (bound at setup)
        self.controller: Channel | None = None  # the controller's link, when it plays

    def connect(self, hot: HotLoop, agent: str, worker: int) -> tuple[Channel, dict[str, Channel]]:
        """Links to agent ``agent``'s Brain and to the environments of ``worker``."""
        brain = hot.connect(self.brain, names.brain(agent))
        environments = {
            uid: hot.connect(link_for(endpoint), names.environment(uid, worker))
            for uid, endpoint in self.environment_endpoints.items()
        }
        return brain, environments

    def of_controller(self, hot: HotLoop) -> Channel:
        """The link of the simulation controller that plays the worker's games (waited for
        the first time)."""
        if self.controller is None:
            assert self.listener is not None, "the Muscle listens once it is set up"
            self.controller = hot.accept(self.listener)
            assert self.controller is not None
        return self.controller
