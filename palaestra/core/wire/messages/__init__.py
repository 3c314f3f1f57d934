"""Every message palaestra processes exchange: typed, frozen msgspec Structs in one union,
defined per protocol (:mod:`.base`, :mod:`.control`, :mod:`.step`, :mod:`.rows`, :mod:`.store`)
and imported from here (``from palaestra.core import messages as m``).

Framework messages are msgpack with a schema (`decode` rejects anything else), so nothing is
ever unpickled from a socket. Opaque user payloads (``data_for_brain``, brain updates) travel as
``bytes`` fields holding a pickle, only on the run's private ipc sockets (see
:mod:`palaestra.core.wire.transport`).

Values of sensors, actuators and rewards are plain JSON-able Python (numbers and nested lists),
the same form the store writes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Union, get_args

import msgspec

from palaestra.core.texts import surviving
from palaestra.core.wire.messages.base import (
    AgentEvaluated,
    ErrorInfo,
    InfoDesc,
    Msg,
)
from palaestra.core.wire.messages.control import (
    AgentEndpoint,
    AgentSetup,
    AgentsReady,
    Busy,
    EnvironmentEndpoint,
    EnvironmentSetup,
    EnvironmentsReady,
    EpisodeAgent,
    Failed,
    Ready,
    Shutdown,
    SimulationBaseline,
    SimulationDone,
    SimulationRun,
    SimulationSetup,
)
from palaestra.core.wire.messages.rows import (
    BrainDump,
    CodeReloadRow,
    EpisodeEnded,
    EpisodeRows,
    MuscleActionRow,
    PluginRecordRow,
    ProducerClosed,
    RecordingGapMark,
    Rows,
    StatisticsRow,
    StoredRewards,
    WorldStateRow,
)
from palaestra.core.wire.messages.step import (
    AgentActions,
    AgentEpisode,
    AgentEvaluate,
    AgentStep,
    AgentSteps,
    BrainUpdate,
    EnvBaseline,
    EnvLanes,
    EnvLanesDone,
    EnvRestart,
    EnvRound,
    EnvRoundDone,
    EnvStart,
    EnvState,
    Experience,
    Experiences,
    KeptExperience,
    KeptExperiences,
    LaneActions,
    LaneEpisodeDone,
    Transition,
)
from palaestra.core.wire.messages.store import (
    PhaseAgent,
    PhaseEnvironment,
    RecordedSteps,
    StoreAck,
    StoreDump,
    StoreFindDump,
    StoreFindReplay,
    StoreFlush,
    StoreIds,
    StorePhaseEnd,
    StorePhaseStart,
    StoreReplay,
    StoreRunEnd,
    StoreRunStart,
)

__all__ = [
    "AgentActions",
    "AgentEndpoint",
    "AgentEpisode",
    "AgentEvaluate",
    "AgentEvaluated",
    "AgentSetup",
    "AgentStep",
    "AgentSteps",
    "AgentsReady",
    "BrainDump",
    "BrainUpdate",
    "Busy",
    "CodeReloadRow",
    "EnvBaseline",
    "EnvLanes",
    "EnvLanesDone",
    "EnvRestart",
    "EnvRound",
    "EnvRoundDone",
    "EnvStart",
    "EnvState",
    "EnvironmentEndpoint",
    "EnvironmentSetup",
    "EnvironmentsReady",
    "EpisodeAgent",
    "EpisodeEnded",
    "EpisodeRows",
    "ErrorInfo",
    "Experience",
    "Experiences",
    "KeptExperience",
    "KeptExperiences",
    "Failed",
    "InfoDesc",
    "LaneActions",
    "LaneEpisodeDone",
    "Message",
    "Msg",
    "MuscleActionRow",
    "PhaseAgent",
    "PhaseEnvironment",
    "PluginRecordRow",
    "ProducerClosed",
    "Ready",
    "RecordedSteps",
    "RecordingGapMark",
    "Rows",
    "Shutdown",
    "SimulationBaseline",
    "SimulationDone",
    "SimulationRun",
    "SimulationSetup",
    "StatisticsRow",
    "StoredRewards",
    "StoreAck",
    "StoreDump",
    "StoreFindDump",
    "StoreFindReplay",
    "StoreFlush",
    "StoreIds",
    "StorePhaseEnd",
    "StorePhaseStart",
    "StoreReplay",
    "StoreRunEnd",
    "StoreRunStart",
    "Transition",
    "WorldStateRow",
    "decode",
    "decode_kept",
    "transition_of",
    "encode",
]

Message = (
    Ready
    | Failed
    | Shutdown
    | Busy
    | EnvironmentSetup
    | EnvironmentsReady
    | AgentSetup
    | AgentsReady
    | SimulationSetup
    | SimulationRun
    | SimulationBaseline
    | SimulationDone
    | EnvStart
    | EnvBaseline
    | EnvState
    | AgentEpisode
    | AgentStep
    | AgentActions
    | AgentSteps
    | LaneActions
    | EnvLanes
    | LaneEpisodeDone
    | EnvLanesDone
    | EnvRound
    | EnvRoundDone
    | EnvRestart
    | Experience
    | Experiences
    | AgentEvaluate
    | AgentEvaluated
    | BrainUpdate
    | Rows
    | RecordingGapMark
    | EpisodeEnded
    | EpisodeRows
    | BrainDump
    | ProducerClosed
    | StoreRunStart
    | StorePhaseStart
    | StoreIds
    | StoreFlush
    | StorePhaseEnd
    | StoreRunEnd
    | StoreAck
    | StoreFindDump
    | StoreDump
    | StoreFindReplay
    | StoreReplay
)

_encoder = msgspec.msgpack.Encoder()
_decoder: msgspec.msgpack.Decoder[Message] = msgspec.msgpack.Decoder(Message)


encode: Callable[[Msg], bytes] = surviving(_encoder.encode)
"""``message`` as msgpack; a text in it that UTF-8 cannot encode (a lone surrogate: a plug-in's
exception may say one) is sent with the surrogate as its escape, ``\\udcff``
(:mod:`palaestra.core.texts`), so the process that sends it lives on."""


def decode(data: bytes) -> Message:
    """Decode one message; raises ``msgspec.ValidationError``/``DecodeError`` on bad input."""
    try:
        return _decoder.decode(data)
    except UnicodeDecodeError as exc:
        raise msgspec.DecodeError(f"invalid UTF-8 in a message: {exc}") from exc


KeptMessage = Message | KeptExperience | KeptExperiences
"""What a Brain decodes from its Muscles' links (:func:`decode_kept`)."""

_kept_decoder: msgspec.msgpack.Decoder[KeptMessage] = msgspec.msgpack.Decoder(
    Union[  # noqa: UP007 (a union made of a tuple)
        tuple(t for t in get_args(Message) if t not in (Experience, Experiences))
        + (KeptExperience, KeptExperiences)
    ]
)


def decode_kept(data: bytes) -> KeptMessage:
    """:func:`decode` as a Brain decodes its Muscles' messages: experiences as
    :class:`KeptExperience` s (their transitions left encoded, views of ``data``), every other
    message as :func:`decode` does."""
    try:
        return _kept_decoder.decode(data)
    except UnicodeDecodeError as exc:
        raise msgspec.DecodeError(f"invalid UTF-8 in a message: {exc}") from exc


_transition_decoder = msgspec.msgpack.Decoder(Transition)


def transition_of(encoded: msgspec.Raw) -> Transition:
    """A :class:`KeptExperience`'s transition, decoded (it must carry one:
    :attr:`KeptExperience.completed`)."""
    return _transition_decoder.decode(encoded)
