"""Message schemas declared as data.

A Kafka message (an API request or response, or a metadata record) is a tree of fields. Each
field has a name, a type, the versions it exists in, the versions in which it may be null, an
optional tag (tagged fields live in the trailing tagged-field section of flexible versions) and a
default. The declarations under ``sparklog.protocol.messages`` use only the constructors in this
module; ``sparklog.protocol.codec`` reads and writes every message from these declarations alone,
so there is no per-API or per-version parsing code anywhere.

Decoded messages are plain ``dict`` trees keyed by the snake_case field names used here; arrays
are lists; ``records`` fields decode to a ``memoryview`` over the request buffer (no copy).
Their static types are generated from these declarations: :mod:`sparklog.protocol.message_types`
(``python -m sparklog.protocol.gen_types``; a unit test fails when it is stale).

Types (the ``type`` argument of :func:`field`):

- primitives: ``bool int8 int16 int32 int64 uint16 uint32 float64 string bytes uuid records``
- arrays of primitives: ``"[]int32"``, ``"[]string"``, ...
- arrays of structs: pass ``fields=(...)`` together with ``type="[]"`` (or use :func:`array`)
- a single nested struct: pass ``fields=(...)`` with ``type="struct"`` (or use :func:`struct`)

Version ranges use Kafka's notation: ``"3+"`` (3 and later), ``"0-4"`` (inclusive), ``"none"``.
Invariants checked when a declaration is built (a bad declaration fails at import, not on the
wire): tags are unique per struct and only used where the message can be flexible; nullable
versions are a subset of the field's versions; defaults agree with the type.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

PRIMITIVE_TYPES = frozenset(
    {
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint16",
        "uint32",
        "float64",
        "string",
        "bytes",
        "uuid",
        "records",
    }
)

ZERO_UUID = b"\x00" * 16
# Integer.MIN_VALUE in an ``*authorized_operations`` field: the client did not ask for them.
AUTHORIZED_OPERATIONS_OMITTED = -2147483648

# Version numbers are small; "unbounded" is represented by a large sentinel.
_MAX_VERSION = 0x7FFF


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive version range; ``Versions.none()`` is empty."""

    low: int
    high: int

    @staticmethod
    def parse(spec: str) -> Versions:
        spec = spec.strip()
        if spec == "none":
            return Versions(1, 0)
        if spec.endswith("+"):
            return Versions(int(spec[:-1]), _MAX_VERSION)
        if "-" in spec:
            low, high = spec.split("-", 1)
            return Versions(int(low), int(high))
        return Versions(int(spec), int(spec))

    @staticmethod
    def none() -> Versions:
        return Versions(1, 0)

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.low <= version <= self.high

    @property
    def empty(self) -> bool:
        return self.low > self.high

    def is_subset_of(self, other: Versions) -> bool:
        return self.empty or (other.low <= self.low and self.high <= other.high)

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.high == _MAX_VERSION:
            return f"{self.low}+"
        return f"{self.low}-{self.high}"


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a struct. Build it with :func:`field`, :func:`array` or :func:`struct`."""

    name: str
    type: str  # a primitive, "[]<primitive>", "[]" (array of struct) or "struct"
    versions: Versions
    nullable_versions: Versions
    tag: int | None
    tagged_versions: Versions
    default: Any
    fields: tuple[Field, ...] = ()
    ignorable: bool = False

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def is_struct_array(self) -> bool:
        return self.type == "[]"

    @property
    def is_struct(self) -> bool:
        return self.type == "struct"

    @property
    def element_type(self) -> str:
        """For ``[]int32`` this is ``int32``; for arrays of structs it is ``struct``."""
        return self.type[2:] or "struct"

    def present_in(self, version: int) -> bool:
        return version in self.versions

    def nullable_in(self, version: int) -> bool:
        return version in self.nullable_versions

    def tagged_in(self, version: int) -> bool:
        return self.tag is not None and version in self.tagged_versions

    def default_value(self) -> Any:
        """A fresh default (lists are never shared between messages)."""
        if callable(self.default):
            return self.default()
        return self.default


def _implicit_default(type_: str, has_fields: bool) -> Any:
    if type_.startswith("[]") or (has_fields and type_ != "struct"):
        return list
    if type_ == "struct":
        return None
    return {
        "bool": False,
        "int8": 0,
        "int16": 0,
        "int32": 0,
        "int64": 0,
        "uint16": 0,
        "uint32": 0,
        "float64": 0.0,
        "string": "",
        "bytes": b"",
        "uuid": ZERO_UUID,
        "records": None,
    }[type_]


def field(
    name: str,
    type: str,
    versions: str = "0+",
    *,
    nullable: str = "none",
    tag: int | None = None,
    tagged: str | None = None,
    default: Any = ...,
    fields: tuple[Field, ...] = (),
    ignorable: bool = False,
) -> Field:
    """Declare a field.

    ``tag``/``tagged`` make it a tagged field (``tagged`` defaults to ``versions``). ``default``
    is the value used when the field is absent in a version, omitted by the sender, or left out
    when a message is built; a tagged field equal to its default is not written.
    """
    known_array = type.startswith("[]") and type[2:] in PRIMITIVE_TYPES
    if type not in PRIMITIVE_TYPES and type not in ("struct", "[]") and not known_array:
        raise ValueError(f"field {name}: unknown type {type!r}")
    if fields and type not in ("struct", "[]"):
        raise ValueError(f"field {name}: nested fields need type 'struct' or '[]'")
    if type in ("struct", "[]") and not fields:
        raise ValueError(f"field {name}: type {type!r} needs nested fields")
    versions_range = Versions.parse(versions)
    nullable_range = Versions.parse(nullable)
    if not nullable_range.is_subset_of(versions_range):
        raise ValueError(f"field {name}: nullable versions {nullable} outside versions {versions}")
    tagged_range = Versions.parse(tagged) if tagged is not None else versions_range
    if tag is None and tagged is not None:
        raise ValueError(f"field {name}: tagged versions given without a tag")
    value = _implicit_default(type, bool(fields)) if default is ... else default
    if isinstance(value, list):
        raise ValueError(f"field {name}: use a factory (e.g. list), not a list, as default")
    names = [f.name for f in fields]
    if len(names) != len(set(names)):
        raise ValueError(f"field {name}: duplicate nested field names")
    return Field(
        name=name,
        type=type,
        versions=versions_range,
        nullable_versions=nullable_range,
        tag=tag,
        tagged_versions=tagged_range if tag is not None else Versions.none(),
        default=value,
        fields=tuple(fields),
        ignorable=ignorable,
    )


def array(name: str, *fields: Field, versions: str = "0+", **options: Any) -> Field:
    """An array of structs: ``array("topics", field("name", "string"), ...)``."""
    return field(name, "[]", versions, fields=tuple(fields), **options)


def struct(name: str, *fields: Field, versions: str = "0+", **options: Any) -> Field:
    """A single nested struct (nullable where declared)."""
    return field(name, "struct", versions, fields=tuple(fields), **options)


@dataclass(frozen=True, slots=True)
class MessageSpec:
    """A top-level message: a request, a response or a metadata record."""

    name: str
    valid_versions: Versions
    flexible_versions: Versions
    fields: tuple[Field, ...]

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible_versions


def message(name: str, valid_versions: str, flexible_versions: str, *fields: Field) -> MessageSpec:
    spec = MessageSpec(
        name=name,
        valid_versions=Versions.parse(valid_versions),
        flexible_versions=Versions.parse(flexible_versions),
        fields=tuple(fields),
    )
    _check_struct(spec.name, spec.fields, spec.flexible_versions)
    return spec


def _check_struct(where: str, fields: tuple[Field, ...], flexible: Versions) -> None:
    tags: set[int] = set()
    names: set[str] = set()
    for f in fields:
        if f.name in names:
            raise ValueError(f"{where}: duplicate field {f.name}")
        names.add(f.name)
        if f.tag is not None:
            if f.tag in tags:
                raise ValueError(f"{where}.{f.name}: duplicate tag {f.tag}")
            tags.add(f.tag)
            if not f.tagged_versions.is_subset_of(flexible):
                raise ValueError(f"{where}.{f.name}: tagged outside flexible versions")
        if f.fields:
            _check_struct(f"{where}.{f.name}", f.fields, flexible)


@dataclass(frozen=True, slots=True)
class Api:
    """One Kafka API: its key, the versions we serve, and request/response declarations.

    ``min_version``/``max_version`` are the versions this server advertises in ApiVersions (those
    of Apache Kafka 4.x); the declarations may describe older versions too.
    """

    key: int
    name: str
    min_version: int
    max_version: int
    request: MessageSpec
    response: MessageSpec
    listeners: frozenset[str] = dc_field(default=frozenset({"broker"}))

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def request_header_version(self, version: int) -> int:
        """Request header v2 for flexible versions, else v1 (v0 is ControlledShutdown v0 only)."""
        return 2 if self.request.is_flexible(version) else 1

    def response_header_version(self, version: int) -> int:
        """Response header v1 for flexible versions, except ApiVersions which always uses v0."""
        if self.key == 18:
            return 0
        return 1 if self.response.is_flexible(version) else 0


def api(
    key: int,
    name: str,
    served: str,
    request: MessageSpec,
    response: MessageSpec,
    *,
    listeners: frozenset[str] = frozenset({"broker"}),
) -> Api:
    served_range = Versions.parse(served)
    for spec in (request, response):
        if not served_range.is_subset_of(spec.valid_versions):
            raise ValueError(f"{name}: served versions {served} exceed {spec.name}'s declared ones")
    return Api(
        key=key,
        name=name,
        min_version=served_range.low,
        max_version=served_range.high,
        request=request,
        response=response,
        listeners=listeners,
    )
