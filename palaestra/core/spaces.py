"""Action and observation spaces: Discrete, Box, MultiDiscrete, MultiBinary and Tuple.

Spaces follow gymnasium's interface (``sample``, ``contains``, ``seed``) without depending on it.
Every space also describes itself three ways: ``to_dict()`` (plain msgpack/JSON data, which
messages carry), ``to_string()`` (palaestrAI's ``"Box(low=..., ...)"`` form) and, when gymnasium
is installed, ``to_gymnasium()``; each has a ``Space.from_*`` counterpart that reads it back.
Values of a space convert to plain JSON-able Python with ``to_json_value`` (what the store
writes) and back with ``from_json_value``. palaestrAI's ``len(space)``, ``to_vector`` and
``reshape_to_space`` are there too.
"""

from __future__ import annotations

import ast
import json
import math
import operator
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]

_CALL = re.compile(r"^\s*([A-Za-z_]\w*)\s*\((.*)\)\s*$", re.DOTALL)
_KEYWORD = re.compile(r"^\s*([A-Za-z_]\w*)\s*=(?!=)\s*(.*?)\s*$", re.DOTALL)
_DTYPE = re.compile(r"^\s*(?:<class\s+')?(?:np\.|numpy\.)?([A-Za-z_]\w*)(?:'>)?\s*$")
_INF = re.compile(r"\binf\b")


class Space(ABC):
    """Base of all spaces: a set of values, with seeded sampling and conversions.

    Spaces compare equal when they describe the same set of values; the random generator is
    not part of a space's identity.

    Attributes:
        shape: The shape of a value (``()`` for Discrete), or None for Tuple.
        dtype: The numpy dtype of a value, or None for Tuple.
    """

    shape: tuple[int, ...] | None = None
    dtype: np.dtype[Any] | None = None

    def __init__(self) -> None:
        self._np_random: np.random.Generator | None = None
        self._description: dict[str, Any] | None = None
        self._text: str | None = None

    _seed: int | None = None  # (the seed of the generator :attr:`np_random` makes next)

    @property
    def np_random(self) -> np.random.Generator:
        """The space's own generator, made on first use: seeded with the last ``seed``, else
        unseeded."""
        if self._np_random is None:
            self._np_random = np.random.default_rng(self._seed)
        return self._np_random

    def seed(self, seed: int | None = None) -> None:
        """Reset the generator: the same seed gives the same sequence of samples. It is made
        when first drawn from (a Muscle's spaces are seeded at each episode's start, and
        most Muscles never sample them: a generator takes 8 µs to make)."""
        self._seed = seed
        self._np_random = None

    @abstractmethod
    def sample(self) -> Any:
        """Return a random value of this space, drawn from ``np_random``."""

    @abstractmethod
    def contains(self, x: Any) -> bool:
        """Return whether ``x`` (Python or numpy value) is a value of this space."""

    def __contains__(self, x: Any) -> bool:
        return self.contains(x)

    def __len__(self) -> int:
        """palaestrAI's length of a space: the length of :meth:`to_vector`'s vectors (Discrete:
        ``n``, MultiDiscrete: ``sum(nvec)``, Box and MultiBinary: the number of elements),
        and a Tuple's number of spaces."""
        raise NotImplementedError(f"{type(self).__name__} has no length")

    def __bool__(self) -> bool:
        return True  # a space is a thing, whatever its length: ``if space:`` means "if given"

    def to_vector(self, data: Any, **kwargs: Any) -> Array:
        """palaestrAI's flat vector of a value (Discrete and MultiDiscrete one-hot, others
        flattened); :meth:`reshape_to_space` reads it back. See each space."""
        raise NotImplementedError(f"{type(self).__name__} has no to_vector")

    def reshape_to_space(self, value: Any, **kwargs: Any) -> Array:
        """palaestrAI's value of this space from a flat vector (the inverse of
        :meth:`to_vector`). See each space."""
        raise NotImplementedError(f"{type(self).__name__} has no reshape_to_space")

    @property
    @abstractmethod
    def flat_dim(self) -> int:
        """The length of ``flatten(x)``."""

    @abstractmethod
    def flatten(self, x: Any) -> npt.NDArray[np.float64]:
        """Return ``x`` as a 1-D float64 array of length ``flat_dim``."""

    @abstractmethod
    def to_json_value(self, x: Any) -> Any:
        """Return ``x`` as plain Python (int, float, bool, nested lists); never numpy types."""

    @abstractmethod
    def from_json_value(self, v: Any) -> Any:
        """Return the native value (int, numpy array or tuple) for ``to_json_value``'s output."""

    @abstractmethod
    def to_string(self) -> str:
        """Return the palaestrAI form, e.g. ``"Discrete(5)"``; ``from_string`` reads it."""

    @abstractmethod
    def to_gymnasium(self) -> Any:
        """Return the equal gymnasium space.

        Raises:
            ImportError: gymnasium is not installed.
        """

    @abstractmethod
    def _params(self) -> dict[str, Any]:
        """The constructor arguments as plain data, for ``to_dict``."""

    @abstractmethod
    def _key(self) -> tuple[Any, ...]:
        """What identifies the space, for ``__eq__`` and ``__hash__``."""

    def to_dict(self) -> dict[str, Any]:
        """Return a plain msgpack/JSON-able description with a ``"type"`` key.

        Non-finite Box bounds are written as the strings ``"inf"`` and ``"-inf"`` so that the
        description survives strict JSON. A space does not change once built, so this is
        computed once (it travels with every reward of every step); do not mutate it.
        """
        if self._description is None:
            self._description = {"type": type(self).__name__, **self._params()}
        return self._description

    def to_text(self) -> str:
        """Return :meth:`to_dict` as compact JSON text, made once: what messages carry (a
        reward's space travels with each of its values, and a short string decodes in about a
        third of the time of its dict, and compares faster). :meth:`from_text` reads it."""
        if self._text is None:
            self._text = json.dumps(self.to_dict(), separators=(",", ":"))
        return self._text

    @classmethod
    def from_text(cls, text: str) -> Space:
        """Return the space that :meth:`to_text` described.

        Raises:
            ValueError: The text is not JSON, or not a description of a space.
        """
        try:
            description = json.loads(text)
        except (TypeError, ValueError) as e:
            raise ValueError(f"invalid space description {text!r}: {e}") from e
        return cls.from_dict(description)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Space:
        """Return the space that ``to_dict`` described.

        Raises:
            ValueError: The type is unknown or the description is invalid.
        """
        space_cls = _space_class(d.get("type") if isinstance(d, dict) else None, d)
        try:
            return space_cls._from_params({k: v for k, v in d.items() if k != "type"})
        except (TypeError, KeyError) as e:
            raise ValueError(f"invalid {space_cls.__name__} description {d!r}: {e}") from e

    @classmethod
    def _from_params(cls, params: dict[str, Any]) -> Space:
        return cls(**params)

    @classmethod
    def from_string(cls, s: str) -> Space:
        """Parse what ``to_string`` writes, without evaluating code.

        Arguments are Python literals (``inf`` allowed), space descriptions inside ``Tuple``,
        or a dtype name like ``np.float32``.

        Raises:
            ValueError: ``s`` is not a space description.
        """
        match = _CALL.match(s)
        if match is None:
            raise ValueError(f"not a space description: {s!r}")
        space_cls = _space_class(match[1], s)
        read = Space.from_string if space_cls is Tuple else _literal_or_name
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for part in _split_args(match[2]):
            keyword = _KEYWORD.match(part)
            if keyword:
                kwargs[keyword[1]] = read(keyword[2])
            elif kwargs:
                raise ValueError(f"positional argument after keyword argument in {s!r}")
            else:
                args.append(read(part))
        try:
            return space_cls(*args, **kwargs)
        except TypeError as e:
            raise ValueError(f"wrong arguments for {space_cls.__name__} in {s!r}: {e}") from e

    @classmethod
    def from_gymnasium(cls, space: Any) -> Space:
        """Return the palaestra space equal to a gymnasium space.

        Raises:
            ImportError: gymnasium is not installed.
            ValueError: The gymnasium space has no palaestra counterpart.
        """
        gs = _gymnasium_spaces()
        if isinstance(space, gs.Discrete):
            return Discrete(int(space.n), start=int(space.start))
        if isinstance(space, gs.Box):
            return Box(space.low, space.high, shape=space.shape, dtype=space.dtype)
        if isinstance(space, gs.MultiDiscrete):
            if np.any(np.asarray(getattr(space, "start", 0)) != 0):
                raise ValueError(
                    f"MultiDiscrete with a start other than 0 is not supported: {space}"
                )
            return MultiDiscrete(space.nvec)
        if isinstance(space, gs.MultiBinary):
            return MultiBinary(tuple(space.shape))
        if isinstance(space, gs.Tuple):
            return Tuple([cls.from_gymnasium(s) for s in space.spaces])
        raise ValueError(f"cannot convert gymnasium space {space!r}; supported: {_TYPE_NAMES}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Space):
            return NotImplemented
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    def __repr__(self) -> str:
        return self.to_string()


class _ShapedSpace(Space):
    """A space whose values have a fixed shape and dtype."""

    shape: tuple[int, ...]
    dtype: np.dtype[Any]

    @property
    def flat_dim(self) -> int:
        return math.prod(self.shape)

    def flatten(self, x: Any) -> npt.NDArray[np.float64]:
        flat = np.asarray(x, dtype=np.float64).reshape(-1)
        if flat.size != self.flat_dim:
            raise ValueError(f"{self} cannot flatten a value with {flat.size} elements")
        return flat

    def to_json_value(self, x: Any) -> Any:
        """Return ``x`` converted to the space's dtype, as a (nested) list or a scalar (None,
        a value not set, stays None: never NaN)."""
        if x is None:
            return None
        return np.asarray(x, dtype=self.dtype).tolist()

    def from_json_value(self, v: Any) -> Any:
        if v is None:
            return None
        return np.asarray(v, dtype=self.dtype).reshape(self.shape)

    def __len__(self) -> int:
        return self.flat_dim

    def to_vector(self, data: Any, **kwargs: Any) -> Array:
        """``data`` flattened (as it is: any shape is flattened)."""
        return np.asarray(data).reshape(-1)

    def _array(self, x: Any, kinds: str) -> Array | None:
        """``x`` as an array of this shape with a dtype kind in ``kinds``, else None."""
        try:
            a = np.asarray(x)
        except (ValueError, TypeError):
            return None
        return a if a.shape == self.shape and a.dtype.kind in kinds else None


class Discrete(_ShapedSpace):
    """The integers ``start, start + 1, ..., start + n - 1``; values are plain ``int``.

    ``flatten`` gives the value itself as a length-1 array (not a one-hot vector). Integer
    values of any kind are contained (Python, numpy scalars, 0-d arrays), bools are not.

    Raises:
        ValueError: ``n`` is not a positive integer or ``start`` is not an integer.
    """

    def __init__(self, n: int, start: int = 0) -> None:
        super().__init__()
        self.n = _as_int(n, "Discrete n")
        self.start = _as_int(start, "Discrete start")
        if self.n <= 0:
            raise ValueError(f"Discrete n must be positive, got {self.n}")
        self.shape = ()
        self.dtype = np.dtype(np.int64)

    def sample(self) -> int:
        return self.start + int(self.np_random.integers(self.n))

    def contains(self, x: Any) -> bool:
        if isinstance(x, bool | np.bool_):
            return False
        a = x if isinstance(x, int) else self._array(x, "iu")
        return a is not None and self.start <= int(a) < self.start + self.n

    def __len__(self) -> int:
        return self.n

    def to_vector(self, data: Any, **kwargs: Any) -> Array:
        """The one-hot vector of length ``n`` of the value ``data`` (a scalar or one
        element)."""
        a = np.asarray(data)
        if a.size != 1:
            raise ValueError(f"{self}.to_vector needs one value, got shape {a.shape}")
        vector = np.zeros(self.n)
        vector[int(a.reshape(-1)[0]) - self.start] = 1
        return vector

    def reshape_to_space(self, value: Any, **kwargs: Any) -> Array:
        """A scalar stays as it is (a 0-d array); ``n`` values (a one-hot vector, or scores)
        give the value of the largest (as an 0-d array)."""
        if np.ndim(value) == 0:
            return np.array(value)
        scores = np.fromiter(value, kwargs.get("dtype", float))
        if scores.size != self.n:
            raise ValueError(f"{self}.reshape_to_space needs {self.n} values, got {scores.size}")
        return np.array(int(scores.argmax()) + self.start)

    def to_json_value(self, x: Any) -> int | None:
        # what the array conversion gives for any integer kind, without it; None: not set
        return None if x is None else int(x)

    def from_json_value(self, v: Any) -> int | None:
        return None if v is None else int(v)

    def to_string(self) -> str:
        start = f", start={self.start}" if self.start else ""
        return f"Discrete({self.n}{start})"

    def to_gymnasium(self) -> Any:
        return _gymnasium_spaces().Discrete(self.n, start=self.start)

    def _params(self) -> dict[str, Any]:
        return {"n": self.n, "start": self.start}

    def _key(self) -> tuple[Any, ...]:
        return (self.n, self.start)


def _unbounded_to_range(a: Array, name: str, dtype: np.dtype[Any]) -> Array:
    """Integer bounds given as floats with infinities: each infinity the integer dtype's end
    (gymnasium's Box does the same); exact integers, as objects (no float rounding)."""
    info = np.iinfo(dtype)
    if dtype.kind == "u" and np.isneginf(a).any():
        raise ValueError(f"Box {name} must not be -inf for dtype {dtype}")
    a = np.where(np.isneginf(a), float(info.min), a)
    a = np.where(np.isposinf(a), float(info.max), a)
    # np.clip of a 0-d array gives a scalar: asarray keeps it an array
    return np.asarray(np.clip(a.astype(object), info.min, info.max), dtype=object)


class Box(_ShapedSpace):
    """Arrays of ``shape`` and ``dtype`` with ``low <= x <= high`` element-wise.

    ``low`` and ``high`` are scalars or arrays broadcast to ``shape``; without a shape, it is
    their broadcast shape, or ``(1,)`` if both are scalars. ``shape=()`` makes a scalar box
    whose values are 0-d arrays. Float boxes may have infinite bounds; unbounded directions are
    sampled from exponential or normal distributions, like gymnasium does. Float boxes contain
    integer and float values; integer boxes contain integer values only.

    Raises:
        ValueError: A bound is NaN, does not fit ``shape`` or the dtype, or ``low > high``.
    """

    def __init__(
        self,
        low: Any,
        high: Any,
        shape: int | tuple[int, ...] | list[int] | None = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        super().__init__()
        dt = _parse_dtype(dtype)
        if dt.kind not in "iuf":
            raise ValueError(f"Box dtype must be an integer or float type, got {dt}")
        self.dtype = np.dtype(dt.name)  # native byte order
        low_a, high_a = _numeric(low, "Box low", dt), _numeric(high, "Box high", dt)
        if shape is not None:
            self.shape = _as_shape(shape, "Box shape")
        elif low_a.ndim == 0 and high_a.ndim == 0:
            self.shape = (1,)
        else:
            try:
                self.shape = np.broadcast_shapes(low_a.shape, high_a.shape)
            except ValueError as e:
                raise ValueError(f"Box low {low_a.shape} and high {high_a.shape} differ") from e
        self.low = self._bound(low_a, "low")
        self.high = self._bound(high_a, "high")
        wrong = np.argwhere(self.low > self.high)
        if wrong.size:
            at = tuple(int(i) for i in wrong[0])
            raise ValueError(
                f"Box low must not exceed high, but at index {at} low={self.low[at]} > "
                f"high={self.high[at]}"
            )

    def _bound(self, a: Array, name: str) -> Array:
        if a.size == 0 and math.prod(self.shape) == 0:
            a = a.reshape(self.shape)  # ``[]`` is how tolist() writes any empty shape
        try:
            a = np.broadcast_to(a, self.shape)
        except ValueError as e:
            raise ValueError(
                f"Box {name} of shape {a.shape} does not fit shape {self.shape}"
            ) from e
        if a.dtype.kind == "f" and np.isnan(a).any():
            raise ValueError(f"Box {name} must not be NaN")
        if self.dtype.kind in "iu":
            out = self._integer_bound(a, name)
        else:
            with np.errstate(over="ignore"):
                out = a.astype(self.dtype) + self.dtype.type(0)  # also turns -0.0 into 0.0
            if (np.isfinite(a) & ~np.isfinite(out)).any():
                raise ValueError(f"Box {name} is out of the range of {self.dtype}")
        out = np.array(out, dtype=self.dtype, order="C")  # stays 0-d for shape ()
        out.flags.writeable = False
        return out

    def _integer_bound(self, a: Array, name: str) -> Array:
        """A bound of an integer box in its dtype (an infinity: the dtype's end)."""
        info = np.iinfo(self.dtype)
        if a.dtype.kind == "f" and np.isinf(a).any():  # unbounded: the dtype's range
            a = _unbounded_to_range(a, name, self.dtype)
        if a.dtype.kind == "f" and not (np.isfinite(a).all() and (a == np.round(a)).all()):
            raise ValueError(f"Box {name} must be finite integers for dtype {self.dtype}")
        if (a < info.min).any() or (a > info.max).any():
            raise ValueError(f"Box {name} is out of the range of {self.dtype}")
        with np.errstate(invalid="ignore"):
            out = a.astype(self.dtype)
        if (out != a).any():  # a float bound that rounds to just past the range
            raise ValueError(f"Box {name} is out of the range of {self.dtype}")
        return out

    def sample(self) -> Array:
        rng = self.np_random
        if self.dtype.kind in "iu":
            drawn = rng.integers(self.low, self.high, endpoint=True, dtype=self.dtype)
            return np.asarray(drawn, dtype=self.dtype).reshape(self.shape)
        low, high = self.low.astype(np.float64), self.high.astype(np.float64)
        low_ok, high_ok = np.isfinite(low), np.isfinite(high)
        low0, high0 = np.where(low_ok, low, 0.0), np.where(high_ok, high, 0.0)
        u = rng.random(self.shape)
        e = rng.exponential(size=self.shape)
        n = rng.standard_normal(self.shape)
        both = low0 * (1.0 - u) + high0 * u  # cannot overflow, unlike low + (high - low) * u
        drawn = np.select([low_ok & high_ok, low_ok, high_ok], [both, low0 + e, high0 - e], n)
        with np.errstate(over="ignore"):
            cast = drawn.astype(self.dtype)
        return np.asarray(np.clip(cast, self.low, self.high), dtype=self.dtype)

    def contains(self, x: Any) -> bool:
        a = self._array(x, "iu" if self.dtype.kind in "iu" else "iuf")
        return a is not None and bool((a >= self.low).all() and (a <= self.high).all())

    def reshape_to_space(self, value: Any, **kwargs: Any) -> Array:
        """``value`` in the box's shape and dtype.

        Raises:
            ValueError: ``value`` has another number of elements than the box.
        """
        a = np.asarray(value)
        if a.size != self.flat_dim:
            raise ValueError(f"{self}.reshape_to_space needs {self.flat_dim} values, got {a.size}")
        return a.reshape(self.shape).astype(self.dtype)

    def to_string(self) -> str:
        low, high = repr(self.low.tolist()), repr(self.high.tolist())
        return f"Box(low={low}, high={high}, shape={self.shape}, dtype=np.{self.dtype.name})"

    def to_gymnasium(self) -> Any:
        gym_box = _gymnasium_spaces().Box
        return gym_box(low=self.low, high=self.high, shape=self.shape, dtype=self.dtype)

    def _params(self) -> dict[str, Any]:
        return {
            "low": _encode_bound(self.low),
            "high": _encode_bound(self.high),
            "shape": list(self.shape),
            "dtype": self.dtype.name,
        }

    @classmethod
    def _from_params(cls, params: dict[str, Any]) -> Space:
        low, high = _decode_bound(params["low"]), _decode_bound(params["high"])
        return cls(low, high, shape=params["shape"], dtype=params["dtype"])

    def _key(self) -> tuple[Any, ...]:
        return (self.shape, self.dtype.name, self.low.tobytes(), self.high.tobytes())


class MultiDiscrete(_ShapedSpace):
    """Integer arrays of ``nvec``'s shape with ``0 <= x[i] < nvec[i]``; dtype int64.

    Raises:
        ValueError: ``nvec`` is empty or has an entry that is not a positive integer.
    """

    def __init__(self, nvec: Any) -> None:
        super().__init__()
        a = np.asarray(nvec)
        if a.size == 0 or a.dtype.kind not in "iu" or (a <= 0).any():
            raise ValueError(f"MultiDiscrete nvec must be positive integers, got {nvec!r}")
        self.nvec = a.astype(np.int64)
        self.nvec.flags.writeable = False
        self.shape = self.nvec.shape
        self.dtype = np.dtype(np.int64)

    def sample(self) -> Array:
        return np.asarray(self.np_random.integers(0, self.nvec), dtype=np.int64).reshape(
            self.shape
        )

    def contains(self, x: Any) -> bool:
        a = self._array(x, "iu")
        return a is not None and bool((a >= 0).all() and (a < self.nvec).all())

    def __len__(self) -> int:
        return int(self.nvec.sum())

    def to_vector(self, data: Any, **kwargs: Any) -> Array:
        """One one-hot vector per entry, concatenated (length ``sum(nvec)``); with
        ``as_argmax=True`` one one-hot vector over all combinations (length
        ``prod(nvec)``). ``value`` (default 1) is what the hot entries hold."""
        hot = kwargs.get("value", 1)
        entries = [int(v) for v in np.asarray(data).reshape(-1)]
        nvec = [int(n) for n in self.nvec.reshape(-1)]
        if kwargs.get("as_argmax", False):
            vector = np.zeros(math.prod(nvec), dtype=np.asarray(hot).dtype)
            vector[np.ravel_multi_index(entries, nvec)] = hot
            return vector
        parts = []
        for v, n in zip(entries, nvec, strict=True):
            part = np.zeros(n, dtype=np.asarray(hot).dtype)
            part[v] = hot
            parts.append(part)
        return np.concatenate(parts)

    def reshape_to_space(self, value: Any, **kwargs: Any) -> Array:
        """The inverse of :meth:`to_vector`: ``sum(nvec)`` values give the largest of each
        entry's part, ``prod(nvec)`` values (or ``as_argmax=True``) the combination of the
        largest.

        Raises:
            ValueError: The length fits neither form, or both and ``as_argmax`` is not given.
        """
        a = np.asarray(value, dtype=float).reshape(-1)
        nvec = [int(n) for n in self.nvec.reshape(-1)]
        as_argmax = kwargs.get("as_argmax")
        total, combinations = sum(nvec), math.prod(nvec)
        if as_argmax is None:
            if total == combinations and a.size == total:
                raise ValueError(
                    f"{self}.reshape_to_space cannot tell the form of {a.size} values: "
                    "give as_argmax=True or False"
                )
            as_argmax = a.size == combinations
        if a.size != (combinations if as_argmax else total):
            raise ValueError(
                f"{self}.reshape_to_space needs {combinations if as_argmax else total} values "
                f"(as_argmax={as_argmax}), got {a.size}"
            )
        if as_argmax:
            entries = np.unravel_index(int(a.argmax()), nvec)
            return np.array([int(e) for e in entries], dtype=np.int64).reshape(self.shape)
        bounds = np.cumsum([0, *nvec])
        return np.array(
            [int(a[lo:hi].argmax()) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)],
            dtype=np.int64,
        ).reshape(self.shape)

    def to_string(self) -> str:
        return f"MultiDiscrete({self.nvec.tolist()})"

    def to_gymnasium(self) -> Any:
        return _gymnasium_spaces().MultiDiscrete(self.nvec)

    def _params(self) -> dict[str, Any]:
        return {"nvec": self.nvec.tolist()}

    def _key(self) -> tuple[Any, ...]:
        return (self.shape, self.nvec.tobytes())


class MultiBinary(_ShapedSpace):
    """Arrays of 0s and 1s of shape ``(n,)``, or ``n`` if it is a shape; dtype int8.

    ``n`` is kept as an int for one-dimensional spaces, so ``MultiBinary((4,)).n == 4``.

    Raises:
        ValueError: ``n`` (or an entry of it) is not a positive integer.
    """

    def __init__(self, n: int | tuple[int, ...] | list[int]) -> None:
        super().__init__()
        self.shape = _as_shape(n, "MultiBinary n")
        if not self.shape or min(self.shape) <= 0:
            raise ValueError(f"MultiBinary n must be positive, got {n!r}")
        self.n: int | tuple[int, ...] = self.shape[0] if len(self.shape) == 1 else self.shape
        self.dtype = np.dtype(np.int8)

    def sample(self) -> Array:
        return self.np_random.integers(0, 2, size=self.shape, dtype=np.int8)

    def contains(self, x: Any) -> bool:
        a = self._array(x, "biu")
        return a is not None and bool(((a == 0) | (a == 1)).all())

    def reshape_to_space(self, value: Any, **kwargs: Any) -> Array:
        """``value``'s entries as integers (``dtype``, default int) in the space's shape."""
        a = np.fromiter(np.asarray(value).reshape(-1), kwargs.get("dtype", int))
        if a.size != self.flat_dim:
            raise ValueError(f"{self}.reshape_to_space needs {self.flat_dim} values, got {a.size}")
        return a.reshape(self.shape)

    def to_string(self) -> str:
        return f"MultiBinary({self.n})"

    def to_gymnasium(self) -> Any:
        return _gymnasium_spaces().MultiBinary(self.n)

    def _params(self) -> dict[str, Any]:
        return {"n": self.n if isinstance(self.n, int) else list(self.n)}

    def _key(self) -> tuple[Any, ...]:
        return self.shape


class Tuple(Space):
    """A fixed sequence of spaces; values are tuples with one value of each.

    ``Tuple(a, b)`` and ``Tuple([a, b])`` are the same. ``seed(s)`` seeds each child with its
    own seed derived from ``s`` (via ``numpy.random.SeedSequence.spawn``). ``flatten`` is the
    concatenation of the children's.

    Raises:
        ValueError: An element is not a Space.
    """

    def __init__(self, *spaces: Any) -> None:
        super().__init__()
        if len(spaces) == 1 and isinstance(spaces[0], list | tuple):
            spaces = tuple(spaces[0])
        for s in spaces:
            if not isinstance(s, Space):
                raise ValueError(f"Tuple elements must be spaces, got {s!r}")
        self.spaces: tuple[Space, ...] = spaces

    def seed(self, seed: int | None = None) -> None:
        super().seed(seed)
        if seed is None:
            for space in self.spaces:
                space.seed(None)
            return
        children = np.random.SeedSequence(seed).spawn(len(self.spaces))
        for space, child in zip(self.spaces, children, strict=True):
            space.seed(int(child.generate_state(1, np.uint64)[0]))

    def sample(self) -> tuple[Any, ...]:
        return tuple(s.sample() for s in self.spaces)

    def contains(self, x: Any) -> bool:
        return (
            isinstance(x, tuple | list)
            and len(x) == len(self.spaces)
            and all(s.contains(v) for s, v in zip(self.spaces, x, strict=True))
        )

    @property
    def flat_dim(self) -> int:
        return sum(s.flat_dim for s in self.spaces)

    def flatten(self, x: Any) -> npt.NDArray[np.float64]:
        parts = [s.flatten(v) for s, v in zip(self.spaces, self._values(x), strict=True)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float64)

    def to_json_value(self, x: Any) -> list[Any] | None:
        if x is None:
            return None
        return [s.to_json_value(v) for s, v in zip(self.spaces, self._values(x), strict=True)]

    def from_json_value(self, v: Any) -> tuple[Any, ...] | None:
        if v is None:
            return None
        return tuple(
            s.from_json_value(e) for s, e in zip(self.spaces, self._values(v), strict=True)
        )

    def _values(self, x: Any) -> list[Any]:
        values = list(x)
        if len(values) != len(self.spaces):
            raise ValueError(f"{self} needs {len(self.spaces)} values, got {len(values)}")
        return values

    def to_string(self) -> str:
        return f"Tuple({', '.join(s.to_string() for s in self.spaces)})"

    def to_gymnasium(self) -> Any:
        return _gymnasium_spaces().Tuple([s.to_gymnasium() for s in self.spaces])

    def _params(self) -> dict[str, Any]:
        return {"spaces": [s.to_dict() for s in self.spaces]}

    @classmethod
    def _from_params(cls, params: dict[str, Any]) -> Space:
        return cls([Space.from_dict(d) for d in params["spaces"]])

    def _key(self) -> tuple[Any, ...]:
        return self.spaces

    def __len__(self) -> int:
        return len(self.spaces)

    def to_vector(self, data: Any, **kwargs: Any) -> Array:
        """The children's vectors of ``data``'s values, concatenated."""
        parts = [
            s.to_vector(v, **kwargs) for s, v in zip(self.spaces, self._values(data), strict=True)
        ]
        return np.concatenate(parts) if parts else np.zeros(0)

    def reshape_to_space(self, value: Any, **kwargs: Any) -> Array:
        """One value per child from its part of ``value`` (a sequence with one entry per
        child), as an object array."""
        values = [
            s.reshape_to_space(v, **kwargs)
            for s, v in zip(self.spaces, self._values(value), strict=True)
        ]
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out

    def __getitem__(self, index: int) -> Space:
        return self.spaces[index]

    def __iter__(self) -> Iterator[Space]:
        return iter(self.spaces)


_TYPES: dict[str, type[Space]] = {
    c.__name__: c for c in (Discrete, Box, MultiDiscrete, MultiBinary, Tuple)
}
_TYPE_NAMES = ", ".join(_TYPES)


def _space_class(name: Any, source: Any) -> type[Space]:
    if not isinstance(name, str) or name not in _TYPES:
        raise ValueError(f"unknown space type {name!r} in {source!r}; known: {_TYPE_NAMES}")
    return _TYPES[name]


def _gymnasium_spaces() -> Any:
    try:
        import gymnasium
    except ImportError as e:
        raise ImportError(
            "converting spaces to or from gymnasium needs gymnasium: pip install gymnasium"
        ) from e
    return gymnasium.spaces


def _as_int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{what} must be an integer, got {value!r}")
    try:
        return operator.index(value)
    except TypeError as e:
        raise ValueError(f"{what} must be an integer, got {value!r}") from e


def _as_shape(value: Any, what: str) -> tuple[int, ...]:
    if isinstance(value, np.ndarray):
        value = value.tolist()
    dims = (value,) if not isinstance(value, list | tuple) else value
    shape = tuple(_as_int(d, what) for d in dims)
    if any(d < 0 for d in shape):
        raise ValueError(f"{what} must not be negative, got {value!r}")
    return shape


def _numeric(value: Any, what: str, dtype: np.dtype[Any]) -> Array:
    """``value`` as a numeric array; exact (object) for big ints bound for an integer dtype."""
    try:
        a = np.asarray(value)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{what} must be numeric, got {value!r}") from e
    if a.dtype.kind in "fO" and a.size and not isinstance(value, np.ndarray | float):
        exact = np.asarray(value, dtype=object)
        if all(isinstance(v, int | np.integer) for v in exact.flat):
            try:
                a = exact if dtype.kind in "iu" else exact.astype(np.float64)
            except OverflowError as e:
                raise ValueError(f"{what} is out of the range of {dtype}") from e
    if a.dtype.kind not in "biuf" and not (a.dtype.kind == "O" and dtype.kind in "iu"):
        raise ValueError(f"{what} must be numeric, got {value!r}")
    return a


def _encode_bound(a: Array) -> Any:
    """A Box bound as plain data: a scalar if uniform, with infinities as strings."""
    value = a.flat[0].item() if a.size and (a == a.flat[0]).all() else a.tolist()

    def encode(v: Any) -> Any:
        if isinstance(v, list):
            return [encode(e) for e in v]
        return str(v) if isinstance(v, float) and math.isinf(v) else v

    return encode(value)


def _decode_bound(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode_bound(v) for v in value]
    return float(value) if isinstance(value, str) else value


def _split_args(text: str) -> list[str]:
    """Split ``text`` at the commas outside brackets."""
    parts: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
        if depth < 0:
            raise ValueError(f"unbalanced brackets in {text!r}")
    if depth:
        raise ValueError(f"unbalanced brackets in {text!r}")
    last = text[start:].strip()
    if last or not parts:
        parts.append(last)
    if parts == [""]:
        return []
    if "" in parts:
        raise ValueError(f"empty argument in {text!r}")
    return parts


def _literal_or_name(text: str) -> Any:
    """A Python literal (``inf`` is infinity), else a name like ``np.float32`` as a string."""
    try:
        return ast.literal_eval(_INF.sub("1e999", text))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text.strip()


def _parse_dtype(dtype: Any) -> np.dtype[Any]:
    """A dtype from a dtype-like, or a name like ``"np.float32"`` or ``"float32"``."""
    match = _DTYPE.match(dtype) if isinstance(dtype, str) else None
    try:
        return np.dtype(match[1] if match else dtype)
    except TypeError as e:
        raise ValueError(f"unknown dtype {dtype!r}") from e
