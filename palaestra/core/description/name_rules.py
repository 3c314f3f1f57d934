"""The rule for the names a run file gives, and the file-system paths built from them.

Agent names, environment uids, phase names and the run's and experiment's uids become parts of
process titles, ZMQ identities (at most 255 bytes), socket and file names, and store columns
(255 characters). :func:`name_problem` checks the rule that keeps all of those working; the
run-file loader applies it to every name. Names may still hold spaces, commas or parentheses,
so no name goes into a path as it is: :func:`path_part` makes one safe path component, and
:func:`check_inside` refuses a path that resolves outside its directory.
"""

from __future__ import annotations

import hashlib
import os
import re

from palaestra.core.errors import PalaestraError

NAME_MAX_BYTES = 128
"""The longest name, in bytes of UTF-8: ``Environment-<uid>-<worker>`` must stay a ZMQ
identity (255 bytes) with room for the worker's number."""
TEXT_MAX = 255
"""The longest text a store's name column holds (``VARCHAR(255)``: PostgreSQL refuses a longer
one, SQLite keeps it), and so the longest key a plug-in records under and tag a dump has."""
NUL_SHOWN = "\\x00"
"""What a NUL character of a text the store keeps (a run's reason, a failed reload's traceback)
becomes: PostgreSQL's text columns refuse the character, SQLite keeps it; every store keeps the
four characters ``\\x00`` instead (:func:`store_text`), as ``repr`` shows it."""
REASON_MAX = 16_000
"""The most characters of a run's reason (or a failed reload's traceback) the store keeps whole
(:func:`stored_reason`): a plug-in's exception text may be of any size."""
NAME_RULE = (
    f"a name is 1 to {NAME_MAX_BYTES} bytes of UTF-8 ({NAME_MAX_BYTES} ASCII characters) of "
    "printable characters (no control character such as a NUL, tab or line break), "
    "without '/' or '\\', and does not start with '.'"
)
"""The rule of :func:`name_problem`, as stated in error messages."""

_PLAIN = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_MARK = "~"  # in every altered path part and in no plain one: the two kinds never collide


class UnsafePathError(PalaestraError):
    """A path built from a run's names resolves outside the directory it must stay in."""


def name_problem(name: str) -> str | None:
    """Return what breaks the name rule (:data:`NAME_RULE`) in ``name``, or None if nothing.

    >>> name_problem("mighty_defender") is None
    True
    >>> name_problem("../x")
    "it contains '/'"
    """
    if not name:
        return "it is empty"
    for char in name:
        if not char.isprintable():
            return f"it contains the control character {ascii(char)}"
        if char in "/\\":
            return f"it contains {char!r}"
    if name.startswith("."):
        return "it starts with '.'"
    size = len(name.encode("utf-8"))
    if size > NAME_MAX_BYTES:
        return f"it is {size} bytes long"
    return None


def column_problem(text: str) -> str | None:
    """What keeps a store's name column (:data:`TEXT_MAX`) from holding ``text`` on every
    store, said after "the tag ...", say; None if nothing."""
    if len(text) > TEXT_MAX:
        return f"is at most {TEXT_MAX} characters (the store's column), not {len(text):,}"
    if "\x00" in text:
        return "has no NUL character (the store's column refuses it on PostgreSQL)"
    return None


def store_text(text: str) -> str:
    """``text`` as every store keeps it: each NUL character (which PostgreSQL's text columns
    refuse) written as :data:`NUL_SHOWN`.

    >>> store_text("bad value a\\x00b")
    'bad value a\\\\x00b'
    """
    return text.replace("\x00", NUL_SHOWN) if "\x00" in text else text


def stored_reason(text: str) -> str:
    """A run's reason (or a failed reload's traceback) as every store keeps it: whole up to
    :data:`REASON_MAX` characters, else its first and last ``REASON_MAX // 2`` with a line
    between that says how many were cut (an external client's exception once said 50 MB); NUL
    characters as :func:`store_text` keeps them.

    >>> stored_reason("boom")
    'boom'
    >>> stored_reason("a" * 10_000 + "b" * 10_000).count("[... 4,000 characters cut ...]")
    1
    """
    if len(text) > REASON_MAX:
        half = REASON_MAX // 2
        cut = len(text) - 2 * half
        text = f"{text[:half]}\n[... {cut:,} characters cut ...]\n{text[-half:]}"
    return store_text(text)


def path_part(name: str) -> str:
    """Return ``name`` as one safe path component, distinct for distinct names.

    A name of at most 64 letters, digits, ``_``, ``-`` and ``.`` (not first) is kept as it
    is; any other name becomes its safe characters (at most 40) and a hash of the whole name
    after a ``~``, which no kept name holds.

    >>> path_part("phase_0")
    'phase_0'
    >>> path_part("../../evil")
    '_.._evil~702cbff11ef51b99'
    """
    if _PLAIN.fullmatch(name):
        return name
    digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    readable = _UNSAFE.sub("_", name).lstrip(".")[:40]
    return f"{readable}{_MARK}{digest}"


def dump_file_name(agent: str, tag: str = "") -> str:
    """The file name of an agent's brain dump with ``tag`` (a plug-in's choice, may be empty)."""
    suffix = f"-{path_part(tag)}" if tag else ""
    return f"{path_part(agent)}{suffix}.bin"


def dump_key(tag: str | None) -> str:
    """The key of a brain dump with ``tag`` among the dumps an agent loads: the tag as a safe
    path part (what a dump file's name keeps of it, so dumps found as files and in the store
    key alike; distinct for distinct tags); None and ``""`` are the untagged dump, ``""``."""
    return path_part(tag) if tag else ""


def check_inside(path: str, root: str) -> str:
    """Return ``path``, absolute, after checking that it resolves to a place inside ``root``.

    Both are resolved (symbolic links followed), so a link planted below ``root`` cannot lead
    a write elsewhere.

    Raises:
        UnsafePathError: ``path`` resolves outside ``root``.
    """
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if os.path.commonpath([real, real_root]) != real_root:
        raise UnsafePathError(
            f"the path {path!r} resolves to {real!r}, outside {real_root!r}; palaestra writes "
            "there only (is a symbolic link below it pointing elsewhere?)"
        )
    return os.path.abspath(path)
