"""Overrides of a run file: ``--set``/``--seeds`` parsed, expanded into a grid, applied.

An override sets one value at a dotted path into the run-file document: mapping keys by name,
list items by index (``schedule.0.phase_0.agents.0.brain.params.lr``). ``seed`` is the run's
top-level seed. The last key of a path may be new (a plug-in parameter the file leaves at its
default); every key before it must exist.

A run derived from overrides gets its own uid, ``<uid>-<key><value>-...`` with the last key of
each path (``dummy-run-seed1-lr0.1``), or ``<uid>-<hash>`` (the first 10 hex digits of the
SHA-256 of the overrides as JSON) where that would not be a plain, short, unique name (the
uid cut to fit a name's 128 bytes where the whole would not, the hash then over it too). Its
``experiment_uid`` stays the original run's, so a sweep's runs form one experiment. Setting
``uid`` (or ``experiment_uid``) yourself keeps what you set.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import YAMLError

from palaestra.core.description.name_rules import NAME_MAX_BYTES
from palaestra.core.errors import InvalidInputError, RunFileError
from palaestra.experiment.runfile_schema import Node, locate

__all__ = [
    "Override",
    "OverrideError",
    "apply_overrides",
    "derived_uid",
    "expand_grid",
    "in_original",
    "parse_seeds",
    "parse_set",
]

_PLAIN_UID = re.compile(r"[A-Za-z0-9_.-]{1,100}")
_SEED_RANGE = re.compile(r"\s*(\d+)\s*\.\.\s*(\d+)\s*")
_SEEDS_MAX = 10_000
"""The most seeds one ``--seeds`` may name: a typo like ``1..100000000`` must not fork away."""


class OverrideError(InvalidInputError):
    """An override is malformed, or its path does not lead into the run file."""


@dataclass(frozen=True)
class Override:
    """One ``--set``: a dotted path and the values it takes in the grid, in order."""

    path: str
    values: tuple[Any, ...]


def parse_set(text: str) -> Override:
    """Parse ``path=v1,v2,...``; each value is a YAML scalar or flow collection.

    Commas inside brackets, braces or quotes do not split: ``a=[1,2],[3,4]`` is two lists.

    Raises:
        OverrideError: No ``=``, an empty path or value, or a value that is not YAML.
    """
    path, equals, right = text.partition("=")
    path = path.strip()
    if not equals or not path:
        raise OverrideError(f"--set '{text}': expected 'dotted.path=value[,value...]'.")
    if any(not part for part in path.split(".")):
        raise OverrideError(f"--set '{text}': the path '{path}' has an empty key.")
    pieces = _split_values(right)
    if any(not piece.strip() for piece in pieces):
        raise OverrideError(f"--set '{text}': an empty value (between commas or at an end).")
    values = tuple(_scalar(piece, text) for piece in pieces)
    for value in values:
        _check_value(value, text, set())
    return Override(path, values)


def parse_seeds(text: str) -> tuple[int, ...]:
    """Parse ``1..5`` (inclusive), ``1,2,7`` or a mix such as ``1..3,10``.

    Raises:
        OverrideError: Not integers or ranges, a range going down, a seed twice, or too many.
    """
    seeds: list[int] = []
    for part in text.split(","):
        ranged = _SEED_RANGE.fullmatch(part)
        if ranged:
            first, last = int(ranged[1]), int(ranged[2])
            if last < first:
                raise OverrideError(f"--seeds '{text}': the range '{part.strip()}' is empty.")
            if last - first >= _SEEDS_MAX:
                raise OverrideError(
                    f"--seeds '{text}': the range '{part.strip()}' names {last - first + 1} "
                    f"seeds; at most {_SEEDS_MAX} are run at once."
                )
            seeds.extend(range(first, last + 1))
        elif part.strip().isdecimal():  # (not isdigit: '²' is a digit that int() refuses)
            seeds.append(int(part))
        else:
            raise OverrideError(
                f"--seeds '{text}': expected seeds like '1..5' or '1,2,7', got '{part.strip()}'."
            )
        if len(seeds) > _SEEDS_MAX:
            raise OverrideError(f"--seeds '{text}': more than {_SEEDS_MAX} seeds.")
    if len(set(seeds)) != len(seeds):
        raise OverrideError(f"--seeds '{text}': a seed is named twice.")
    return tuple(seeds)


def expand_grid(
    seeds: Sequence[int] = (), overrides: Sequence[Override] = ()
) -> list[dict[str, Any]]:
    """Every combination of the seeds and the override values, seeds outermost.

    Returns:
        One mapping of path to value per run, in the order the runs start; ``[{}]`` if
        nothing is overridden.

    Raises:
        OverrideError: A path is set twice (or ``seed`` beside ``seeds``).
    """
    axes = [Override("seed", tuple(seeds))] if seeds else []
    axes.extend(overrides)
    paths = [axis.path for axis in axes]
    for axis in axes:
        if paths.count(axis.path) > 1:
            raise OverrideError(
                f"'{axis.path}' is set twice; give each path once, with all its values."
            )
        shown = [_canonical(value) for value in axis.values]
        if len(set(shown)) != len(shown):
            raise OverrideError(f"'{axis.path}': a value is given twice ({', '.join(shown)}).")
    grid = itertools.product(*(axis.values for axis in axes))
    return [dict(zip(paths, point, strict=True)) for point in grid]


def derived_uid(uid: str, overrides: Mapping[str, Any]) -> str:
    """The uid of the run ``uid`` with ``overrides``: readable if it can be, else hashed.

    See :func:`derived_uids` for the rule over a whole grid (readable uids must not collide).
    """
    return derived_uids(uid, [overrides])[0]


def derived_uids(uid: str, grid: Sequence[Mapping[str, Any]]) -> list[str]:
    """The uids of the runs of a grid: ``<uid>-<key><value>...`` for all of them if each is a
    plain, unique name of at most 100 characters, else ``<uid>-<hash>`` for all of them."""
    readable = [_readable(uid, point) for point in grid]
    plain = all(_PLAIN_UID.fullmatch(name) for name in readable)
    if plain and len(set(readable)) == len(readable):
        return readable
    return [_hashed(uid, point) if point else uid for point in grid]


def _hashed(uid: str, overrides: Mapping[str, Any]) -> str:
    """``<uid>-<hash>``; where that would be longer than a name may be (a run file's uid near
    :data:`NAME_MAX_BYTES`), the uid cut to fit and the hash taken over the whole uid too, so
    that runs of two uids that begin alike stay apart."""
    hashed = f"{uid}-{_digest(overrides)}"
    if len(hashed.encode()) <= NAME_MAX_BYTES:
        return hashed
    room = NAME_MAX_BYTES - len(_digest({})) - 1
    cut = uid.encode()[:room].decode(errors="ignore")  # (a character cut in two: left out)
    return f"{cut}-{_digest({'uid': uid, 'overrides': dict(overrides)})}"


def _readable(uid: str, overrides: Mapping[str, Any]) -> str:
    parts = [uid]
    for path, value in overrides.items():
        key = next((k for k in reversed(path.split(".")) if not k.isdigit()), path)
        parts.append(f"{key}{_compact(value)}")
    return "-".join(parts)


def _compact(value: Any) -> str:
    if isinstance(value, str | dt.date):  # (a YAML date: 2020-01-01 as written)
        return str(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _digest(overrides: Mapping[str, Any]) -> str:
    return hashlib.sha256(_canonical(overrides).encode()).hexdigest()[:10]


def apply_overrides(
    text: str, overrides: Mapping[str, Any], *, uid: str | None, source: str
) -> str:
    """The run-file text with ``overrides`` set, and its uid changed to ``uid``.

    The document keeps its comments and layout; ``experiment_uid`` is written out (as the
    original run's uid where the file had none) so that derived runs stay one experiment.

    Args:
        text: The run file's YAML text.
        overrides: Dotted path to value.
        uid: The derived run's uid; None keeps the file's (or an overridden) uid.
        source: The run file's name, for messages.

    Raises:
        OverrideError: A path does not lead into the document; the message names the path
            and the key where it stopped.
    """
    yaml = YAML(typ="rt")
    try:
        document = yaml.load(text)
    except YAMLError as exc:
        raise OverrideError(f"{source}: cannot apply overrides, not valid YAML: {exc}") from None
    if not isinstance(document, dict):
        raise OverrideError(f"{source}: cannot apply overrides: the run file is not a mapping.")
    original = document.get("uid")
    for path, value in overrides.items():
        _set(document, path, value, source)
    if "experiment_uid" not in overrides and "experiment_uid" not in document:
        _insert(document, "experiment_uid", original)
    if uid is not None and "uid" not in overrides:
        document["uid"] = uid
    out = io.StringIO()
    yaml.dump(document, out)
    return out.getvalue()


def in_original(error: RunFileError, text: str, overrides: Mapping[str, Any]) -> RunFileError:
    """``error`` of the run file ``text`` with ``overrides`` applied, as the user's file shows
    it: at the line of the file where its key (or the nearest key above it) is written, the
    derived document being laid out anew (its line numbers are not the file's), and naming
    the overrides, whose values are not in the file."""
    line = _line_of(text, error.key) if error.key else None
    hint = f"This run sets {shown(overrides)} (--set, --seeds) over the file."
    if error.hint:
        hint = f"{hint}\n       {error.hint}"
    return RunFileError(error.message, path=error.path, line=line, key=error.key, hint=hint)


def shown(overrides: Mapping[str, Any]) -> str:
    """``path=value, ...`` of a run's overrides ("none" where it has none)."""
    return ", ".join(f"{path}={_compact(value)}" for path, value in overrides.items()) or "none"


def _line_of(text: str, key: str) -> int | None:
    """The line of ``text`` (a valid run file) holding ``key`` or, where the file does not
    have it (a key an override adds), the nearest key above it."""
    try:
        nodes = [locate(YAML(typ="rt").load(text), text)]
    except (YAMLError, RunFileError):
        return None
    lines: dict[str, int | None] = {}
    while nodes:
        node: Node = nodes.pop()
        lines.setdefault(node.key, node.line)
        if isinstance(node.value, dict):
            nodes.extend(node.value.values())
        elif isinstance(node.value, list):
            nodes.extend(node.value)
    while key:
        if key in lines:
            return lines[key]
        key = key[: max(key.rfind("."), key.rfind("["), 0)]
    return None


def _insert(document: Any, key: str, value: Any) -> None:
    """Put ``key`` second, after ``uid``, as a run file writes it (plain dicts at the end)."""
    if isinstance(document, CommentedMap):
        document.insert(1, key, value)
    else:
        document[key] = value


def _set(document: Any, path: str, value: Any, source: str) -> None:
    """Set ``value`` at ``path``; only the last key may be new (and only in a mapping). A
    mapping or list on the way that the file shares (a YAML alias ``*a`` or merge ``<<: *a``
    of it elsewhere) is copied at this place first, so the value changes here only."""
    keys = path.split(".")
    shared = _shared(document)
    node = document
    for depth, key in enumerate(keys):
        last = depth == len(keys) - 1
        where = ".".join(keys[:depth]) or "the top level"
        if isinstance(node, list):
            index = _index(key, len(node), path, where, source)
            if last:
                node[index] = value
            else:
                node = _own(node, index, shared)
        elif isinstance(node, dict):
            if last:
                node[key] = value
            elif key in node:
                node = _own(node, key, shared)
            else:
                known = ", ".join(str(k) for k in node) or "none"
                raise OverrideError(
                    f"--set '{path}': {source} has no key '{key}' at {where} (its keys: {known})."
                )
        else:
            raise OverrideError(
                f"--set '{path}': {source} has the value {node!r} at {where}, not a mapping "
                f"or list, so '{key}' cannot be looked up in it."
            )


def _shared(document: Any) -> set[int]:
    """The ids of the mappings and lists that stand in more than one place of ``document``
    (an alias's target, a merged mapping, what they hold)."""
    seen: set[int] = set()
    shared: set[int] = set()
    nodes = [document]
    while nodes:
        node = nodes.pop()
        if not isinstance(node, dict | list):
            continue
        if id(node) in seen:
            shared.add(id(node))
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            nodes.extend(node.values())  # (a merged mapping's values among them)
        else:
            nodes.extend(node)
    return shared


def _own(parent: Any, key: Any, shared: set[int]) -> Any:
    """``parent[key]``, made this place's own (a plain copy, put in its place) where it is
    shared."""
    child = parent[key]
    if id(child) in shared:
        child = _plain(child)
        parent[key] = child
    return child


def _plain(node: Any) -> Any:
    """A deep copy of ``node`` as plain dicts and lists (its merges resolved)."""
    if isinstance(node, dict):
        return {key: _plain(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_plain(item) for item in node]
    return node


def _index(key: str, size: int, path: str, where: str, source: str) -> int:
    if not key.isdigit() or int(key) >= size:
        raise OverrideError(
            f"--set '{path}': {source} has a list of {size} items at {where}; expected an "
            f"index from 0 to {size - 1}, got '{key}'."
        )
    return int(key)


def _split_values(text: str) -> list[str]:
    """Split at commas outside brackets, braces and quotes."""
    pieces: list[str] = []
    depth, quote, start = 0, "", 0
    for at, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth == 0:
            pieces.append(text[start:at])
            start = at + 1
    pieces.append(text[start:])
    return pieces


_PLAIN_KEYS = (str, int, float, bool, type(None))
_PLAIN_VALUES = (*_PLAIN_KEYS, dt.date)


def _check_value(value: Any, text: str, within: set[int]) -> None:
    """Refuse what a run file cannot hold: a set, binary data, a mapping key that is a date
    or a collection, a list that contains itself (``&a [*a]``)."""
    if isinstance(value, _PLAIN_VALUES):
        return
    if not isinstance(value, list | dict):
        raise OverrideError(
            f"--set '{text}': a YAML value of type '{type(value).__name__}' is not supported; "
            "give a scalar, a list or a mapping."
        )
    if id(value) in within:
        raise OverrideError(f"--set '{text}': a YAML alias refers to itself.")
    within.add(id(value))
    for key, item in value.items() if isinstance(value, dict) else enumerate(value):
        if not isinstance(key, _PLAIN_KEYS):
            got = f"the date {key}" if isinstance(key, dt.date) else "a list or mapping"
            raise OverrideError(
                f"--set '{text}': a mapping key must be a string, a number, true, false or "
                f"null, got {got} (put a date in quotes)."
            )
        _check_value(item, text, within)
    within.discard(id(value))


def _scalar(piece: str, text: str) -> Any:
    try:
        return YAML(typ="safe").load(piece)
    except YAMLError as exc:
        raise OverrideError(
            f"--set '{text}': '{piece.strip()}' is not a YAML value: {exc}"
        ) from None
