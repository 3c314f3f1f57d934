"""The learner process: runs one Brain, answering its Muscles over their links.

For each :class:`~palaestra.core.wire.messages.Experience` it appends the transition to the Brain's
memory, calls ``thinking``, stores a dump when an episode ended, records the Brain's
statistics, and answers with the update (or, as palaestrAI's learner, with the newest update
to a Muscle that has not had it). Dumps go to a file under the run's dump directory and to the
store writer once the round that made them is answered; statistics to the store writer, in
batches.
"""

from __future__ import annotations

import logging
import pickle
import reprlib
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import zmq

from palaestra.agent.brain import Brain
from palaestra.agent.context import BrainContext, BrainDumps
from palaestra.agent.dump_keeper import DumpKeeper
from palaestra.agent.evaluation_result import EvaluationResult, evaluated
from palaestra.agent.filter import FilterChain
from palaestra.agent.hot_reload import (
    HotReload,
    Outcome,
    plugin_class,
    rebuilt_brain,
    retire,
    watching,
)
from palaestra.agent.memory import Memory
from palaestra.agent.phase_stop import PhaseStop
from palaestra.agent.plugin_rows import PluginRows
from palaestra.agent.pretrain import pretrain
from palaestra.agent.statistics import ATTRIBUTE, end_statistics, holder
from palaestra.agent.transition_rows import TransitionRows
from palaestra.core.description import names
from palaestra.core.information import ActuatorInformation, SensorInformation
from palaestra.core.plugin import FAILURES, PluginContractError, call, error_of
from palaestra.core.supervision.esm import Component, ComponentRuntime
from palaestra.core.supervision.hotloop import HotLoop, Stopped, run_hot
from palaestra.core.wire import messages as m
from palaestra.core.wire.channel import Channel, Listener, PeerGone, send_then
from palaestra.core.wire.codec import SpaceCache
from palaestra.core.wire.records import connect_store
from palaestra.core.wire.transport import announce, endpoint_for

LOG = logging.getLogger(__name__)


class BrainProcess(Component):
    """One agent's Brain."""

    def __init__(self, name: str, *, setup: m.AgentSetup, store_endpoint: str | None) -> None:
        super().__init__(name)
        self.request = setup
        self.store_endpoint = store_endpoint
        spaces = SpaceCache()
        actuators = spaces.build(ActuatorInformation, setup.actuators)
        sensors = spaces.build(SensorInformation, setup.sensors)
        self.rows = TransitionRows(spaces, sensors, actuators)  # its memory's, built when read
        self.dumps = DumpKeeper(setup)
        # its statistics and records: the store's once running
        self.out = PluginRows(name, "brain", setup.agent.name, setup.agent_id, setup.phase_id)
        self.batched = False  # thinking_batch for several experiences at once (see _batched)
        self.game_ids: dict[int, str] = {}  # the muscle id of each game (its lane) seen
        self.round_ids: dict[int, str] = {}  # the id a worker's rounds are answered under
        self.newest = Newest()
        reload = None  # made before the build (see HotReload)
        if setup.agent.hot_reload:
            reload = HotReload(name, setup.agent.name, {"brain": setup.agent.brain.name})
        brain_class = plugin_class(reload, "brain", setup.agent.brain.name)
        self.brain: Brain = call(brain_class, **setup.agent.brain.params)
        self.brain.attach(
            BrainContext(
                name=setup.agent.name,
                run_uid=setup.run_uid,
                phase_index=setup.phase_index,
                phase_name=setup.phase_name,
                mode=setup.mode,
                seed=setup.brain_seed,
                sensors=sensors,
                actuators=actuators,
                dumps=BrainDumps(
                    loaded=setup.dumps,
                    write=self.dumps.write,
                    source=setup.dump_source,
                    owner=name,
                ),
                recorder=self.out.recorder,
            )
        )
        self.brain.memory.set_limits(setup.agent.brain_memory.rows, setup.agent.brain_memory.bytes)
        self.filters = FilterChain(setup.agent.filters)
        phase_rules = setup.agent.phase_stop
        self.phase_stop = PhaseStop(name, phase_rules) if phase_rules else None
        self.reload: HotReload | None = None
        if reload is not None:
            self.use_reload(reload)

    async def setup(self, runtime: ComponentRuntime) -> dict[str, str]:
        endpoint = endpoint_for(runtime.run_dir, names.endpoint(self.name, "brain"))
        # palaestrAI's order: the dump is loaded first (only when there is one), then the
        # filters and the Brain are set up. A Brain overriding palaestrAI's entry to loading
        # (try_load_brain_dump) is always called there and decides itself.
        if type(self.brain).try_load_brain_dump is not Brain.try_load_brain_dump:
            call(self.brain.try_load_brain_dump)
        elif self.request.dumps:  # as palaestrAI: only with something to load
            call(self.brain.load)
        if self.request.dumps:
            LOG.info(
                "%s started from a brain dump of %s: %s",
                self.name,
                self.request.dump_source,
                ", ".join(
                    f"{t or 'untagged'} ({len(d)} bytes)" for t, d in self.request.dumps.items()
                ),
            )
        if self.filters:  # its memory gets the sensors the filters make, as the Brain sees
            self.filters.set_up(brain=self.brain)
            self.rows.use_sensors(list(self.brain.sensors))
        call(self.brain.setup)
        if self.request.replay:  # palaestrAI's order: pre-trained after its setup
            self._pretrain()
        listener = Listener(endpoint)  # bound before the Muscles are told to link
        link = runtime.links.listen(listener)  # its gateway, in a run across hosts
        self.hot = run_hot(runtime, self.name, lambda hot: self._serve(hot, listener))
        network = runtime.links.network
        return {"brain": announce(endpoint, network.host, link) if network else endpoint}

    def _pretrain(self) -> None:
        """Feed the recorded steps of the agent's ``replay`` to the Brain's ``pretrain``."""
        setup = self.request
        sensors = self.rows.spaces.build(SensorInformation, setup.sensors)  # before any filter
        rows = pretrain(self.brain, setup.replay, sensors, self.rows.actuator_spaces)
        LOG.info(
            "%s pre-trained on %d recorded steps of %s",
            self.name,
            rows,
            "; ".join(dict.fromkeys(s.source for s in setup.replay)),
        )

    def _serve(self, hot: HotLoop, listener: Listener) -> None:
        """The hot loop: answer the Muscles; on stop, dump once if needed and close."""
        hot.own(listener)
        store = connect_store(hot, self.store_endpoint)
        out = self.out
        out.connect(store, self.brain)
        try:
            self._answer(hot, listener)
        except Stopped:
            try:
                if self.dumps.last_due():  # the final dump
                    self.dumps.store(self.brain)
                out.add(self.brain, -1, -1, -1)  # what store (or load) added
            except BaseException:
                self._send_kept(store)
                raise
            self.dumps.send(store)
            out.records.flush()
            out.statistics.close(self.name)
            raise
        except BaseException:
            self._send_kept(store)
            raise

    def _send_kept(self, store: zmq.Socket[bytes] | None) -> None:
        """What a failing Brain process still sends, without waiting: its dumps (and their
        files), records and statistics."""
        self.dumps.send(store, block=False)
        self.out.records.flush(block=False)
        self.out.statistics.flush(block=False)

    def _answer(self, hot: HotLoop, listener: Listener) -> None:
        memory = self.brain.memory
        selector = hot.selector()
        selector.add(listener)
        batched = self.batched = self._batched()
        think = self._think
        think_batch: Callable[[list[Channel], Memory], list[Channel]] = self._think_batch
        if self.reload is not None:  # a changed plug-in file is looked for first
            think, think_batch = self._reloading_think, self._reloading_think_batch
        while True:
            ready = selector.wait()
            if listener in ready:
                ready.remove(listener)
                muscle = hot.accept(listener, wait=False)
                if muscle is not None:
                    selector.add(muscle)
            if batched and len(ready) > 1:
                for link in think_batch(ready, memory):
                    selector.discard(link)
                continue
            for link in ready:
                try:
                    think(link, memory)
                except PeerGone:  # a Muscle stopped (or its parent reports why)
                    selector.discard(link)

    def _batched(self) -> bool:
        """Whether pending messages of several Muscles go to ``thinking_batch`` together: the
        Brain overrides it, and no filters sit between it and them (a hot reload looks at its
        files before the batch)."""
        own = type(self.brain).thinking_batch is not Brain.thinking_batch
        return own and not self.filters

    def _think(self, link: Channel, memory: Memory) -> m.KeptMessage:
        """Take one Muscle's experience, think, answer; the message it answered."""
        return self._handle(link, m.decode_kept(link.recv(ready=True)), memory)

    def _reloading_think(self, link: Channel, memory: Memory) -> m.KeptMessage:
        """:meth:`_think`, a changed plug-in file looked for first (the new Brain thinks
        about the experience); the reload's rows name it."""
        reloaded = self._reload_due()
        message: m.KeptMessage | None = None
        try:
            message = self._think(link, memory)
            return message
        finally:
            self._send_reloads(reloaded, message)

    def _reloading_think_batch(self, ready: list[Channel], memory: Memory) -> list[Channel]:
        """:meth:`_think_batch`, a changed plug-in file looked for first; the reload's rows
        name the batch's first message."""
        reloaded = self._reload_due()
        first: list[m.KeptMessage] | None = [] if reloaded else None
        try:
            return self._think_batch(ready, memory, first)
        finally:
            self._send_reloads(reloaded, first[0] if first else None)

    # --- hot reload ----------------------------------------------------------------------

    def use_reload(self, reload: HotReload) -> None:
        """Look for a changed plug-in file with ``reload`` before each ``thinking`` (or
        batch), if it has a file to watch."""
        if watching(self.name, reload, self.request.agent, brain=True):
            reload.rebuild = self._rebuild
            self.reload = reload

    def _reload_due(self) -> list[Outcome]:
        """The outcomes of a hot reload's look at the files, if one is due (else none)."""
        if self.reload is None or not self.reload.due():
            return []
        return self.reload.check()

    def _send_reloads(self, outcomes: list[Outcome], message: m.KeptMessage | None) -> None:
        """A reload's rows, at the experience thought about first after it, or where the
        rollouts of the evaluation judged first after it ended (-1: unknown)."""
        if not outcomes or self.reload is None:
            return
        where = (-1, -1, -1)
        if isinstance(message, m.KeptExperiences) and message.items:  # (its first game's)
            message = message.items[0]
        if isinstance(message, m.KeptExperience | m.AgentEvaluate):
            where = (message.worker, message.episode, message.step)
        self.out.code_reloads(self.reload.rows(outcomes, *where))

    def _rebuild(self, classes: dict[str, type]) -> None:
        """A new Brain from its reloaded class, swapped in (a failure keeps the old one)."""
        old = self.brain
        self.brain = brain = rebuilt_brain(
            classes["brain"], old, self.name, self.request.agent.brain.params
        )
        for agent_filter in self.filters.filters:
            agent_filter.brain = brain
        self.out.swap(brain)
        retire(self.name, old, self.out)

    def handle(self, link: Channel, message: m.KeptMessage) -> None:
        """Think about ``message`` of the Muscle at the other end of ``link`` and answer it
        there, as the process's hot loop does (a Brain process driven in another one's:
        :func:`palaestra.testing.brain_link_of`)."""
        self._handle(link, message, self.brain.memory)

    def _handle(self, link: Channel, message: m.KeptMessage, memory: Memory) -> m.KeptMessage:
        """Think about one Muscle's ``message`` and answer it."""
        if isinstance(message, m.AgentEvaluate):
            link.send(m.encode(self._evaluate(message)))
            self.dumps.send(self.out.store, last=False)  # (its rollouts' Brain may dump)
            return message
        if not isinstance(message, m.KeptExperiences):
            raise TypeError(f"{self.name} cannot handle {type(message).__name__}")
        self._think_games(link, memory, message)  # a round of the Muscle's games
        self.dumps.send(self.out.store, last=False)  # (answered: the Muscle goes on)
        return message

    def _think_batch(
        self, ready: list[Channel], memory: Memory, first: list[m.KeptMessage] | None = None
    ) -> list[Channel]:
        """Take the pending message of every ready Muscle, remember their transitions, call
        ``thinking_batch`` once for their experiences, answer each; the links gone. The first
        message taken is appended to ``first`` if given (a hot reload's rows name it)."""
        gone: list[Channel] = []
        # each Muscle's link, the id its answer is kept under, its experiences by muscle id
        batch: list[tuple[Channel, str, list[tuple[str, m.KeptExperience]]]] = []
        for link in ready:
            try:
                message = m.decode_kept(link.recv(ready=True))
                if first is not None and not first:
                    first.append(message)
                if isinstance(message, m.KeptExperiences):  # a round of the Muscle's games
                    batch.append((link, *self._games(message)))
                else:  # an evaluation: as alone
                    self._handle(link, message, memory)
            except PeerGone:
                gone.append(link)
        if not batch:
            return gone
        updates = iter(self._batch_of(memory, [item for _, _, items in batch for item in items]))
        for link, muscle_id, items in batch:
            answer = self._round_answer(muscle_id, [next(updates) for _ in items])
            try:
                link.send(answer)
            except PeerGone:
                gone.append(link)
        self.dumps.send(self.out.store, last=False)
        return gone

    def _round_answer(self, muscle_id: str, made: Sequence[Any]) -> bytes:
        """The answer to a round of a Muscle's games whose thinking ``made`` these updates:
        the newest (see :meth:`Newest.deliver`), and whether the Brain's phase rule holds."""
        update = None
        for made_update in reversed(made):
            if made_update is not None:
                update = made_update
                break
        end_phase = self.phase_stop is not None and self.phase_stop.reached
        return m.encode(
            m.BrainUpdate(
                update=self.newest.deliver(self.brain, muscle_id, update), end_phase=end_phase
            )
        )

    def _games(self, message: m.KeptExperiences) -> tuple[str, list[tuple[str, m.KeptExperience]]]:
        """The id the answer to a round of a Muscle's games is kept under, and each game's
        experience by its muscle id (its lane is the id's worker)."""
        ids = self.game_ids
        items = []
        for item in message.items:
            game_id = ids.get(item.worker)
            if game_id is None:  # (made once per game)
                game_id = ids[item.worker] = f"{self.request.agent.name}-{item.worker}"
            items.append((game_id, item))
        round_id = self.round_ids.get(message.worker)
        if round_id is None:  # (made once per worker)
            round_id = self.round_ids[message.worker] = (
                f"{self.request.agent.name}-worker-{message.worker}"
            )
        return round_id, items

    def _batch_of(
        self, memory: Memory, batch: list[tuple[str, m.KeptExperience]]
    ) -> Sequence[Any]:
        """Remember each experience's transition, call ``thinking_batch`` once for them all,
        then what follows thinking (dumps, stop rules, the statistics at the last message's
        step); an update (or None) per experience.

        Raises:
            PluginContractError: ``thinking_batch`` did not return one update per experience.
        """
        filtered = bool(self.filters)
        items = [
            (muscle_id, self._remember(memory, muscle_id, msg, filtered))
            for muscle_id, msg in batch
        ]
        updates = call(self.brain.thinking_batch, items)
        if not isinstance(updates, Sequence) or len(updates) != len(items):
            raise PluginContractError(
                self.brain,
                "thinking_batch",
                f"returned {type(updates).__name__}"
                + (f" of {len(updates)}" if isinstance(updates, Sequence) else "")
                + f": expected a list of {len(items)} updates (or None), one per experience",
            )
        self.dumps.stored = False
        for _, message in batch:
            self._after_thinking(memory, message)
        last = batch[-1][1]
        self.out.add(self.brain, last.worker, last.episode, last.step)
        if any(message.done for _, message in batch):
            self.out.statistics.flush()
        return updates

    def _think_games(self, link: Channel, memory: Memory, message: m.KeptExperiences) -> None:
        """Think about each game's experience (its lane is its Muscle id's worker), all at once
        with ``thinking_batch`` where the Brain has its own (see :meth:`_batched`); answer once:
        the Muscle that plays them all gets the newest update."""
        muscle_id, batch = self._games(message)
        if self.batched and len(batch) > 1:
            link.send(self._round_answer(muscle_id, self._batch_of(memory, batch)))
            return
        # the statistics of the round's last thinking are stored after answering, unless its
        # episode ended (they leave with the end, as the Muscle's rows do)
        made = self._think_each(memory, batch)
        answer = partial(link.send, self._round_answer(muscle_id, made))
        last = batch[-1][1] if batch else None
        if last is None or last.done:
            answer()
        else:
            send_then(
                answer, partial(self.out.add, self.brain, last.worker, last.episode, last.step)
            )

    def _think_each(self, memory: Memory, batch: list[tuple[str, m.KeptExperience]]) -> list[Any]:
        """Remember each experience's transition and think about it, one after the other (a
        Brain reads its memory as it stands at the experience): the updates. The statistics of
        each thinking are stored at its experience's step, those of the last one only if its
        episode ended (else the caller stores them after answering)."""
        brain, out, dumps, thinking = self.brain, self.out, self.dumps, self.brain.thinking
        filters = self.filters if self.filters else None  # (asked once: fixed for a round)
        last = len(batch) - 1
        # what the Brain adds, looked at without a call a game (None: out.add tells)
        namespace, recorder = holder(brain), out.recorder
        made = []
        for k, (muscle_id, message) in enumerate(batch):
            data = self._remember(memory, muscle_id, message, filters is not None)
            if filters is not None:
                made.append(filters.think(thinking, muscle_id, data))
            else:
                try:  # (as call reports a failure, without a call a game)
                    made.append(thinking(muscle_id, data))
                except FAILURES as exc:
                    raise error_of(thinking) from exc
            dumps.stored = False
            if message.done:
                self._after_thinking(memory, message)
                out.add(brain, message.worker, message.episode, message.step)
                out.statistics.flush()
            elif k < last and (namespace is None or namespace.get(ATTRIBUTE) or recorder.records):
                out.add(brain, message.worker, message.episode, message.step)
        return made

    def _remember(
        self, memory: Memory, muscle_id: str, message: m.KeptExperience, filtered: bool
    ) -> Any:
        """Append the experience's transition (if any) to ``memory`` (``filtered``: the Brain
        has filters, asked once a round); what the Muscle sent."""
        if message.completed:
            if filtered:
                self._check_filtered(m.transition_of(message.transition).sensors)
            self.rows.add(memory, muscle_id, message)
        data = message.data
        return None if data is None else pickle.loads(data)  # (None: what most Muscles send)

    def _after_thinking(self, memory: Memory, message: m.KeptExperience) -> None:
        """At the end of a Muscle's episode: a dump if one is due (kept: written and sent once
        the round is answered); the phase's stop rules (after every episode, whichever the
        dumps follow)."""
        if not message.done:
            return
        if self.dumps.due():
            self.dumps.store(self.brain, periodic=True)
        if self.phase_stop is not None:
            self.phase_stop.episode_ended(message.worker, memory)

    def _evaluate(self, message: m.AgentEvaluate) -> m.AgentEvaluated:
        """Call ``evaluate_rollouts`` after the rollouts of the evaluation ``message`` names;
        what it added is stored where they ended (the message's worker, episode and step)."""
        setup, evaluation = self.request, message.evaluation
        result = call(
            self.brain.evaluate_rollouts,
            experiment_run_uid=setup.run_uid,
            experiment_run_instance_uid=setup.instance_uid,
            experiment_run_phase=setup.phase_index,
            agent_name=setup.agent.name,
            episode=evaluation,
        )
        if result is not None and not isinstance(result, EvaluationResult):
            raise PluginContractError(
                self.brain,
                "evaluate_rollouts",
                f"returned {type(result).__name__}: expected an EvaluationResult "
                "(palaestrai.agent.EvaluationResult) or None",
            )
        if result is not None and not isinstance(result.metrics, Mapping):
            raise PluginContractError(
                self.brain,
                "evaluate_rollouts",
                f"returned an EvaluationResult whose metrics are {type(result.metrics).__name__} "
                f"{reprlib.repr(result.metrics)}: expected a mapping of names to numbers "
                "(EvaluationResult(metrics={'reward': 0.5}))",
            )
        self.out.add(self.brain, message.worker, message.episode, message.step)
        return evaluated(setup.agent.name, evaluation, result)

    def _check_filtered(self, values: list[Any]) -> None:
        """The filters gave the Muscle as many sensors as the Brain was told of."""
        sensors = self.rows.sensors
        if len(values) != len(sensors):
            raise PluginContractError(
                self.filters.filters[-1],
                "setup_brain",
                f"left the Brain {len(sensors)} sensors, but the agent's filters give its "
                f"Muscle {len(values)}: a filter that changes the sensors sets "
                "self.brain.sensors to match in setup_brain()",
            )

    async def close(self) -> None:
        await self.hot.stop()  # the loop dumps once if it must, and closes the producer

    async def teardown(self) -> None:
        advice = "at a step, or in store(), which the end of the phase calls before teardown()"
        self.out.recorder.end(f"record it {advice}")
        end_statistics(self.brain, f"add it {advice}")
        call(self.brain.teardown)
        self.dumps.write_files()  # (one it made there: its producer is closed)


_PLAIN_UPDATES = (int, str, bytes)
"""Updates whose pickle equal ones share (``0.0 == -0.0`` and ``1 == True``: not these)."""


class Newest:
    """The newest update of a Brain, pickled once, and the Muscles that have it."""

    __slots__ = ("latest", "updated", "plain")

    def __init__(self) -> None:
        self.latest: bytes | None = None  # the newest update, pickled
        self.updated: set[str] = set()  # the Muscles that have it
        self.plain: Any = None  # the newest update, if an int, a str or bytes (pickled alike)

    def deliver(self, brain: Brain, muscle_id: str, update: Any) -> bytes | None:
        """The answer to ``muscle_id``, as palaestrAI's learner gives it: its own update if
        ``thinking`` made one (it becomes the newest), else the newest update if this Muscle
        has not had it yet, else None. So with several workers every Muscle acts with the
        newest policy from its next step on, and each update is pickled once."""
        if update is not None:
            plain, latest = self.plain, self.latest
            if latest is None or type(update) is not type(plain) or update != plain:
                try:  # (an equal int, str or bytes as the last update: pickled already)
                    latest = self.latest = pickle.dumps(update, pickle.HIGHEST_PROTOCOL)
                except (pickle.PicklingError, TypeError, AttributeError) as exc:
                    raise PluginContractError(
                        brain,
                        "thinking",
                        f"returned {type(update).__name__} {reprlib.repr(update)}, which cannot "
                        f"be pickled ({exc}): it goes to the Muscle's update; return plain data, "
                        "arrays or tensors (or None for no update)",
                    ) from None
                self.plain = update if type(update) in _PLAIN_UPDATES else None
            if len(self.updated) != 1 or muscle_id not in self.updated:
                self.updated = {muscle_id}
            return latest
        if self.latest is None or muscle_id in self.updated:
            return None
        self.updated.add(muscle_id)
        return self.latest
