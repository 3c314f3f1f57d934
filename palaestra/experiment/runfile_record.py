"""How much a phase records and how often a Brain dumps: the run file's ``record`` and ``dump``.

``phase_config: {record: all}`` (the default) stores a row per step in ``world_states`` and
``muscle_actions``; ``{record: {every: N}}`` the rows of every N-th step of each episode (its
steps 0, N, 2N, ...) and of its last step; ``{record: episodes}`` none of them, only the
``episodes`` rows (and the statistics). An agent's ``dump: {every: N, keep: K}`` makes its Brain
dump itself after every N-th episode and at the phase's end, the store keeping the newest K
periodic dumps besides the final one.
"""

from __future__ import annotations

from palaestra.core.description.specs import DumpPolicy
from palaestra.experiment.runfile_schema import Node, as_int, as_mapping, describe

RECORD_ALL = 1
RECORD_EPISODES = 0
_RECORD_HINT = "Write 'all', 'episodes' or a mapping {every: N} with an integer N >= 1."
_DUMP_KEYS = ("every", "keep")


def record_every(node: Node) -> int:
    """Return what ``record`` asks for as :attr:`~palaestra.core.description.specs.PhaseConfig.
    record_every`: 1 (``all``), N (``{every: N}``) or 0 (``episodes``)."""
    value = node.value
    if value == "all":
        return RECORD_ALL
    if value == "episodes":
        return RECORD_EPISODES
    if isinstance(value, dict):
        fields = as_mapping(node, allowed=("every",), required=("every",))
        return as_int(fields["every"], minimum=1)
    node.fail(f"expected 'all', 'episodes' or {{every: N}}, got {describe(value)}.", _RECORD_HINT)


def dump_policy(node: Node | None) -> DumpPolicy | None:
    """Return an agent's ``dump: {every: N, keep: K}`` (None where it has none)."""
    if node is None:
        return None
    fields = as_mapping(node, allowed=_DUMP_KEYS, required=_DUMP_KEYS)
    return DumpPolicy(
        every=as_int(fields["every"], minimum=1), keep=as_int(fields["keep"], minimum=1)
    )
