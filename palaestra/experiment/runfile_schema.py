"""The located value tree of a run file and the typed accessors that validate its parts.

:func:`locate` turns ruamel's round-trip data into :class:`Node` objects: plain Python values
that remember their key path (``schedule[0].phase_0.agents``) and the line they were written
on. The ``as_*`` accessors check one node each and raise a :class:`RunFileError` that points at
that node. The file path is not known here; :mod:`palaestra.experiment.runfile` adds it.
"""

from __future__ import annotations

import contextlib
import datetime
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from ruamel.yaml.comments import TaggedScalar
from ruamel.yaml.scalarbool import ScalarBoolean

from palaestra.core.description.name_rules import NAME_RULE, name_problem
from palaestra.core.errors import RunFileError, did_you_mean

ALIAS_VALUES_MAX = 100_000
"""How many values YAML aliases may add to a run file when they are expanded: far more than
shared agent or environment configurations need, far less than a "billion laughs" makes."""
_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1
_TOKEN = re.compile(r"[^\s,\[\]{}#]+")
_OTHER_SCALARS = (str, bytes, datetime.date)
_STR_TAG = "tag:yaml.org,2002:str"


@dataclass(frozen=True, slots=True)
class Node:
    """One value of the run file and where it was written.

    Attributes:
        value: ``dict`` of scalar keys to nodes, ``list`` of nodes, or a plain scalar (None,
            bool, int, float, str, bytes, date).
        key: The key path, like ``schedule[0].phase_0.agents[1]``; ``""`` for the document.
        line: 1-based line of the key or list item holding the value, if known.
        text: For numbers, the text as written in the file (``3.10``); else None.
    """

    value: Any
    key: str
    line: int | None
    text: str | None = None

    def fail(self, message: str, hint: str | None = None) -> NoReturn:
        """Raise a :class:`RunFileError` about this node."""
        raise RunFileError(message, line=self.line, key=self.key or None, hint=hint)


def locate(data: Any, text: str) -> Node:
    """Return the :class:`Node` tree of a document loaded with ``YAML(typ="rt")``.

    Args:
        data: The loaded document.
        text: The YAML text it was loaded from (to recover how numbers were written).

    Raises:
        RunFileError: A value that palaestra cannot use (a YAML tag, a set, a complex key, an
            integer outside the 64-bit range), or aliases that expand to more than
            :data:`ALIAS_VALUES_MAX` values.
    """
    lc = getattr(data, "lc", None)
    line = lc.line + 1 if lc is not None and lc.line is not None else 1
    return _Locator(text).node(data, "", line, None)


class _Locator:
    """Builds a Node tree from ruamel data, guarding against recursive aliases and against
    aliases that expand to too many values.

    ruamel loads an alias as a second reference to the same list or mapping, so the data
    stays as small as the text; the tree of nodes holds a copy per reference. Every node
    built below a list or mapping met before counts against :data:`ALIAS_VALUES_MAX`.
    """

    def __init__(self, text: str) -> None:
        self._lines = text.splitlines()
        self._active: set[int] = set()
        self._seen: set[int] = set()
        self._repeating = 0  # > 0 while building a copy of a list or mapping met before
        self._copied = 0
        self._alias: tuple[str, int | None] = ("", None)  # where the copy being built began
        # The line of the innermost key: ruamel places an alias in a list at its anchor.
        self._key_line: int | None = None

    def node(self, data: Any, key: str, line: int | None, pos: Any) -> Node:
        """Return the node of ``data``; ``pos`` is the (line, column) of its value."""
        if self._repeating:
            self._count_copy()
        if not isinstance(data, dict | list):
            return self._scalar(data, key, line, pos)
        if id(data) in self._active:
            raise RunFileError("a YAML alias refers to itself.", line=line, key=key or None)
        repeated = id(data) in self._seen
        if repeated and not self._repeating:
            self._alias = (key, self._key_line)
        self._seen.add(id(data))
        self._active.add(id(data))
        self._repeating += repeated
        try:
            value = (
                self._mapping(data, key, line)
                if isinstance(data, dict)
                else self._list(data, key, line)
            )
        finally:
            self._active.discard(id(data))
            self._repeating -= repeated
        return Node(value, key, line)

    def _count_copy(self) -> None:
        """Count one node copied by an alias; fail past :data:`ALIAS_VALUES_MAX`."""
        self._copied += 1
        if self._copied > ALIAS_VALUES_MAX:
            key, line = self._alias
            raise RunFileError(
                f"YAML aliases expand to more than {ALIAS_VALUES_MAX:,} values "
                "(counted up to the alias here).",
                line=line,
                key=key or None,
                hint="Nested aliases multiply (a 'billion laughs' document); "
                "write the shared values out, or share fewer and smaller ones.",
            )

    def _mapping(self, data: dict[Any, Any], key: str, line: int | None) -> dict[Any, Node]:
        """Return the child nodes of a mapping, each at the line of its key."""
        out: dict[Any, Node] = {}
        outer = self._key_line
        for raw_key, raw_value in data.items():
            key_line, value_pos = _key_position(data, raw_key)
            child_line = key_line + 1 if key_line is not None else line
            plain = _plain_key(raw_key, key, child_line)
            child_key = f"{key}.{plain}" if key else str(plain)
            self._key_line = child_line
            out[plain] = self.node(raw_value, child_key, child_line, value_pos)
        self._key_line = outer
        return out

    def _list(self, data: list[Any], key: str, line: int | None) -> list[Node]:
        """Return the item nodes of a list, each at its own line."""
        out = []
        for index, item in enumerate(data):
            pos = _item_position(data, index)
            out.append(self.node(item, f"{key}[{index}]", pos[0] + 1 if pos else line, pos))
        return out

    def _scalar(self, value: Any, key: str, line: int | None, pos: Any) -> Node:
        """Return the node of a scalar, turned into a plain Python value."""
        value = _untagged(value)
        if value is None or isinstance(value, bool):
            return Node(value, key, line)
        if isinstance(value, ScalarBoolean):
            return Node(bool(value), key, line)
        if isinstance(value, int):
            if not _INT_MIN <= value <= _INT_MAX:
                raise RunFileError(
                    "this integer does not fit into 64 bits.", line=line, key=key or None
                )
            return Node(int(value), key, line, self._number_text(int(value), pos))
        if isinstance(value, float):
            return Node(float(value), key, line, self._number_text(float(value), pos))
        if isinstance(value, _OTHER_SCALARS):
            return Node(str(value) if isinstance(value, str) else value, key, line)
        raise RunFileError(
            f"a YAML value of type '{type(value).__name__}' is not supported here.",
            line=line,
            key=key or None,
            hint="Remove the YAML tag or write a plain scalar, list or mapping.",
        )

    def _number_text(self, value: float, pos: Any) -> str | None:
        """Return the number as written in the file, if it can be found there."""
        if not pos or pos[0] >= len(self._lines):
            return None
        match = _TOKEN.match(self._lines[pos[0]], pos[1])
        if match is None:
            return None
        token = match.group(0)
        try:
            parsed = float(token.replace("_", ""))
        except ValueError:
            return None
        return token if parsed == value else None


def _key_position(data: dict[Any, Any], key: Any) -> tuple[int | None, Any]:
    """Return the 0-based line of ``key`` and the (line, column) of its value.

    Keys that come from a YAML merge (``<<: *base``) are looked up where they were written.
    """
    maps: list[Any] = [data]  # ruamel's CommentedMap: line info in .lc
    while maps:
        current = maps.pop(0)
        with contextlib.suppress(AttributeError, KeyError, TypeError, IndexError):
            return current.lc.key(key)[0], current.lc.value(key)
        for merged in getattr(current, "merge", None) or ():
            maps.append(merged[1] if isinstance(merged, tuple) else merged)
    return None, None


def _item_position(data: list[Any], index: int) -> Any:
    """Return the 0-based (line, column) of a list item, or None."""
    located: Any = data  # ruamel's CommentedSeq: line info in .lc
    try:
        return located.lc.item(index)
    except (AttributeError, KeyError, TypeError, IndexError):
        return None


def _untagged(value: Any) -> Any:
    """``value``, a scalar tagged ``!!str`` (YAML's core tag: ``!!str 2024-05-01``) as its
    text; ruamel's round-trip loader keeps that tag, and no other core one."""
    if isinstance(value, TaggedScalar) and str(value.tag.value) == _STR_TAG:
        return str(value.value)
    return value


def _plain_key(key: Any, parent: str, line: int | None) -> Any:
    """Return a mapping key as a plain scalar; lists and mappings as keys are refused."""
    key = _untagged(key)
    if isinstance(key, ScalarBoolean):
        return bool(key)
    if key is None or isinstance(key, bool | int | float):
        return key
    if isinstance(key, str):
        return str(key)
    if isinstance(key, datetime.date):
        raise RunFileError(
            f"a mapping key must be a string, a number, true, false or null, got the date {key}.",
            line=line,
            key=parent or None,
            hint="Put the key in quotes.",
        )
    raise RunFileError(
        "a mapping key must be a plain scalar, not a list or mapping.",
        line=line,
        key=parent or None,
    )


def describe(value: Any) -> str:
    """Return how a YAML value is shown in messages: ``0``, ``'abc'``, ``null``, ``a list``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return repr(value if len(value) <= 40 else value[:37] + "...") if value else "''"
    if isinstance(value, list):
        return "a list" if value else "an empty list"
    if isinstance(value, dict):
        return "a mapping" if value else "an empty mapping"
    return f"a value of type {type(value).__name__}"


def is_empty(node: Node | None) -> bool:
    """Return whether a node is absent, null, or an empty list or mapping."""
    return node is None or node.value is None or node.value in ([], {})


def optional(fields: dict[str, Node], key: str) -> Node | None:
    """Return the node at ``key``, or None if the key is absent or null."""
    node = fields.get(key)
    return None if node is None or node.value is None else node


def as_mapping(
    node: Node,
    *,
    allowed: Collection[str],
    required: Collection[str] = (),
    unsupported: Collection[str] | Mapping[str, str] = (),
) -> dict[str, Node]:
    """Check that ``node`` is a mapping with known keys and return its children.

    Args:
        node: The node to check.
        allowed: The keys palaestra reads at this level.
        required: The keys that must be present.
        unsupported: palaestrAI keys palaestra does not implement yet: accepted when null or
            empty (and left out of the result), an error otherwise; a mapping gives for each
            key the reason the error adds.
    """
    if not isinstance(node.value, dict):
        node.fail(f"expected a mapping, got {describe(node.value)}.")
    fields: dict[str, Node] = {}
    for key, child in node.value.items():
        if key in unsupported:
            if not is_empty(child):
                why = unsupported.get(key) if isinstance(unsupported, Mapping) else None
                child.fail(
                    f"'{key}' is not supported by palaestra yet{f': {why}' if why else ''}."
                )
        elif key in allowed:
            fields[key] = child
        else:
            _unknown_key(key, child, allowed)
    missing = [key for key in required if key not in fields]
    if missing:
        names = ", ".join(f"'{key}'" for key in missing)
        meanings = " ".join(REQUIRED_MEANS[key] for key in missing if key in REQUIRED_MEANS)
        node.fail(f"missing required key{'s' * (len(missing) > 1)} {names}.", meanings or None)
    return fields


REQUIRED_MEANS = {
    "seed": "seed: the run's random seed, an integer (every process's seed derives from it).",
    "version": (
        'version: the palaestrAI version the file is written for, e.g. "3.5" (palaestrAI '
        "requires it; palaestra reads the 3.x format whatever it says)."
    ),
    "conditions": (
        "conditions: the termination conditions, a list (conditions: [] ends an episode when "
        "an environment says done, and the phase after its episodes)."
    ),
}
"""What a required key means, for the error that finds it missing (keys of evident meaning
have none)."""


def _unknown_key(key: Any, child: Node, allowed: Collection[str]) -> NoReturn:
    """Fail for a key that is not allowed, suggesting the closest allowed one."""
    hint = did_you_mean(str(key), allowed) if isinstance(key, str) else None
    known = ", ".join(allowed)
    child.fail(f"unknown key {key!r}.", hint or f"The keys allowed here are: {known}.")


def as_list(node: Node, *, non_empty: bool = False) -> list[Node]:
    """Check that ``node`` is a list (a non-empty one if asked) and return its items."""
    if not isinstance(node.value, list):
        node.fail(f"expected a list, got {describe(node.value)}.")
    if non_empty and not node.value:
        node.fail("expected a non-empty list, got an empty list.")
    return node.value


def as_str(node: Node) -> str:
    """Check that ``node`` is a non-empty string and return it."""
    if not isinstance(node.value, str) or not node.value:
        hint = "Put the value in quotes." if isinstance(node.value, int | float) else None
        node.fail(f"expected a non-empty string, got {describe(node.value)}.", hint)
    return node.value


def as_name(node: Node, value: str | None = None) -> str:
    """Check that ``node`` (or ``value``, a name derived from it) follows the name rule of
    :mod:`palaestra.core.description.name_rules` and return the name."""
    name = as_str(node) if value is None else value
    problem = name_problem(name)
    if problem is not None:
        node.fail(
            f"{describe(name)} cannot be used as a name: {problem}.",
            f"Names become parts of file names, process titles and socket identities, so "
            f"{NAME_RULE}.",
        )
    return name


def as_int(
    node: Node, *, minimum: int | None = None, maximum: int | None = None, why: str = ""
) -> int:
    """Check that ``node`` is an integer (not a boolean) from ``minimum`` to ``maximum`` and
    return it; ``why`` explains the maximum in the message."""
    value = node.value
    if isinstance(value, int) and not isinstance(value, bool):
        if maximum is not None and value > maximum:
            node.fail(f"expected an integer <= {maximum}{why}, got {value}.")
        if minimum is None or value >= minimum:
            return value
    expected = "an integer" if minimum is None else f"an integer >= {minimum}"
    node.fail(f"expected {expected}, got {describe(value)}.")


def as_bool(node: Node) -> bool:
    """Check that ``node`` is a boolean and return it."""
    if not isinstance(node.value, bool):
        node.fail(f"expected true or false, got {describe(node.value)}.")
    return node.value


def as_params(node: Node | None) -> dict[str, Any]:
    """Return the keyword arguments in a ``params`` mapping; absent or null means none."""
    if node is None or node.value is None:
        return {}
    if not isinstance(node.value, dict):
        node.fail(f"expected a mapping of parameters, got {describe(node.value)}.")
    for key, child in node.value.items():
        if not isinstance(key, str):
            child.fail(f"a parameter name must be a string, got {describe(key)}.")
    params: dict[str, Any] = to_plain(node)
    return params


def to_plain(node: Node) -> Any:
    """Return the plain Python value of a node (dicts, lists and scalars)."""
    if isinstance(node.value, dict):
        return {key: to_plain(child) for key, child in node.value.items()}
    if isinstance(node.value, list):
        return [to_plain(child) for child in node.value]
    return node.value


def as_class_name(node: Node) -> str:
    """Check that ``node`` is a ``package.module:ClassName`` string and return it."""
    name = as_str(node)
    module, colon, cls = name.partition(":")
    parts = module.split(".")
    if colon and cls.isidentifier() and all(part.isidentifier() for part in parts):
        return name
    hint = None
    if not colon and "." in name:
        head, _, tail = name.rpartition(".")
        hint = f"Separate the module and the class with ':', as in '{head}:{tail}'."
    node.fail(f"'{name}' is not a class name of the form 'package.module:ClassName'.", hint)
