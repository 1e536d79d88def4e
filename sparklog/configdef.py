"""The one configuration framework: how a key is declared, how its raw string becomes a typed
value, and how an unknown key is answered. Every table uses it: server keys
(:mod:`sparklog.config_keys`), topic keys (:mod:`sparklog.storage.config`), tiering keys
(declared with the server keys, read by ``sparklog.tiering.config``) and the Spark source's
options (``sparklog.connector.options``).

Contract:

- A :class:`ConfigDef` names one key, its Kafka type (:data:`TYPES`: ``boolean``, ``string``,
  ``int``, ``short``, ``long``, ``double``, ``list``, ``class``, ``password``), its default, an
  optional :class:`Validator` (:class:`AtLeast`, :class:`Between`, :class:`OneOf`), its doc and,
  for a topic or group key, the server key whose value is its default (``synonym``). A default
  of ``None`` makes the key nullable: an empty value means "unset".
- :func:`parse_value` is pure. It returns ``int`` for int/short/long within the type's range,
  ``float`` for double, ``bool`` for ``true``/``false`` in any case, ``tuple[str, ...]`` for a
  list (items stripped, empty items dropped), ``str`` otherwise (stripped), or ``None`` for an
  empty nullable value; then the validator must accept the value. Otherwise it raises
  :class:`ConfigError` naming the key, the raw value (never a password's) and what was expected.
- :func:`format_value` is the inverse for DescribeConfigs and property files:
  ``format_value(parse_value(d, s))`` parses back to the same value.
- :func:`did_you_mean` is the single "unknown key" hint: the closest known key, if any is close
  (for a listener-prefixed key, the closest per-listener key under the same prefix).

Nothing here knows any key; the tables live with their domains. Nothing here does I/O.
"""

from __future__ import annotations

import difflib
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "TYPES",
    "AtLeast",
    "Between",
    "ConfigDef",
    "ConfigError",
    "OneOf",
    "Validator",
    "did_you_mean",
    "format_value",
    "parse_value",
]

_INT_BITS: Final = {"short": 15, "int": 31, "long": 63}
_DESCRIBED: Final = {
    "boolean": "true or false",
    "string": "a string",
    "short": "a 16-bit integer",
    "int": "a 32-bit integer",
    "long": "a 64-bit integer",
    "double": "a number",
    "list": "a comma-separated list",
    "class": "a class name",
    "password": "a password",
}
TYPES: Final = frozenset(_DESCRIBED)
"""Kafka's ConfigDef.Type names (DescribeConfigs reports them as ConfigType)."""


class ConfigError(ValueError):
    """A configuration that cannot be used; the message says which key and why.

    ``key``, ``value`` (the raw text, ``None`` when hidden or not one value) and ``problem``
    (the message's last part) are set for a single bad value, so a caller may reword it.
    """

    def __init__(
        self,
        message: str,
        *,
        key: str | None = None,
        value: str | None = None,
        problem: str | None = None,
    ) -> None:
        super().__init__(message)
        self.key = key
        self.value = value
        self.problem = problem


class Validator(ABC):
    """A check of a parsed value: :meth:`problem` is ``None`` or what is wrong with it."""

    @abstractmethod
    def problem(self, value: Any) -> str | None: ...

    @abstractmethod
    def describe(self) -> str:
        """What an accepted value looks like, appended to the type ("a 32-bit integer >= 1")."""


@dataclass(frozen=True, slots=True)
class AtLeast(Validator):
    """Kafka's ``Range.atLeast``."""

    low: float

    def problem(self, value: Any) -> str | None:
        return None if value >= self.low else f"Value must be at least {self.low}"

    def describe(self) -> str:
        return f">= {self.low}"


@dataclass(frozen=True, slots=True)
class Between(Validator):
    """Kafka's ``Range.between``; ``also`` lists single values allowed outside it (gzip's -1)."""

    low: float
    high: float
    also: tuple[float, ...] = ()

    def problem(self, value: Any) -> str | None:
        if self.low <= value <= self.high or value in self.also:
            return None
        return f"Value must be {self.describe()}"

    def describe(self) -> str:
        extra = "".join(f"{v} or " for v in self.also)
        return f"{extra}between {self.low} and {self.high}"


@dataclass(frozen=True, slots=True)
class OneOf(Validator):
    """Kafka's ``ValidString.in`` (a string) and ``ValidList.in`` (every item of a list);
    ``unique`` refuses a list that names an item twice."""

    choices: tuple[str, ...]
    unique: bool = False

    def problem(self, value: Any) -> str | None:
        items = value if isinstance(value, tuple) else (value,)
        if any(item not in self.choices for item in items):
            # The message quotes the value already; repeating items here could leak a password.
            return f"Value must be one of {', '.join(self.choices)}"
        if self.unique and len(set(items)) != len(items):
            return "Values must not repeat"
        return None

    def describe(self) -> str:
        return f"from {{{', '.join(self.choices)}}}"


@dataclass(frozen=True, slots=True)
class ConfigDef:
    """One key: its Kafka type, default, check, doc and (topic/group keys) server synonym."""

    name: str
    type: str
    default: Any = None
    validator: Validator | None = None
    doc: str = ""
    synonym: str | None = None

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"{self.name}: unknown config type {self.type!r}")

    @property
    def nullable(self) -> bool:
        return self.default is None

    @property
    def field_name(self) -> str:
        """The key as a Python identifier (``segment.bytes`` -> ``segment_bytes``)."""
        return self.name.replace(".", "_")

    @property
    def default_string(self) -> str | None:
        """The default as Kafka prints it, ``None`` when there is none."""
        return None if self.default is None else format_value(self.default)

    def describe_type(self) -> str:
        described = _DESCRIBED[self.type]
        if self.validator is not None:
            described += " " + self.validator.describe()
        return described

    def parse(self, raw: str) -> Any:
        return parse_value(self, raw)

    def check(self, value: Any, shown: str | None = None) -> None:
        """Raise :class:`ConfigError` if the validator refuses ``value`` (``shown`` is how the
        message quotes it: the raw text when parsing, else the value's repr)."""
        if self.validator is None or value is None:
            return
        problem = self.validator.problem(value)
        if problem is not None:
            raise self._error(repr(value) if shown is None else shown, problem)

    def _error(self, shown: str, problem: str) -> ConfigError:
        hidden = self.type == "password"
        return ConfigError(
            f"Invalid value {'[hidden]' if hidden else shown} for configuration {self.name}: "
            f"{problem}",
            key=self.name,
            value=None if hidden else shown,
            problem=problem,
        )


def _parse_int(definition: ConfigDef, text: str) -> int:
    value = int(text)
    bits = _INT_BITS[definition.type]
    if not -(2**bits) <= value < 2**bits:
        raise OverflowError
    return value


def parse_value(definition: ConfigDef, raw: str) -> Any:
    """The typed value of ``raw`` for ``definition``; :class:`ConfigError` if it does not fit."""
    text = raw.strip()
    kind = definition.type
    if definition.nullable and text == "":
        return None
    value: Any
    try:
        if kind in _INT_BITS:
            value = _parse_int(definition, text)
        elif kind == "double":
            value = float(text)
        elif kind == "boolean":
            if text.lower() not in ("true", "false"):
                raise ValueError
            value = text.lower() == "true"
        elif kind == "list":
            value = tuple(item.strip() for item in text.split(",") if item.strip())
        else:
            value = text
    except OverflowError:
        detail = f"expected {definition.describe_type()} (out of range)"
        raise definition._error(repr(raw), detail) from None
    except ValueError:
        raise definition._error(repr(raw), f"expected {definition.describe_type()}") from None
    definition.check(value, repr(raw))
    return value


def format_value(value: Any) -> str:
    """A typed value as Kafka writes it: ``true``/``false``, lists joined by commas."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(str(item) for item in value)
    return str(value)


def did_you_mean(key: str, known: Iterable[str], *, prefix: str = "") -> str:
    """`` Did you mean 'x'?`` for the known key closest to ``key``, or ``""`` if none is close.

    ``prefix`` (a listener's ``listener.name.<listener>.``) is put in front of the key named;
    ``key`` and ``known`` are compared without it, since a long shared prefix would make every
    key look close."""
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    return f" Did you mean {prefix + close[0]!r}?" if close else ""
