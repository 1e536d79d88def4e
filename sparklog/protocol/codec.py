"""The one codec: reads and writes every message from its declaration in ``schema.py``.

Contract (the semantics of Kafka's generated message classes):
- A field absent in a version is not on the wire; :func:`decode` fills it with its default, so
  a decoded message always holds every declared key. On encode its value is ignored.
- Flexible versions use compact strings, bytes and arrays (unsigned varint ``length + 1``, 0 for
  null) and end EVERY struct, top level and nested, with a tagged-field section. Unknown tags are
  skipped on decode; a tagged field equal to its default is not written (older librdkafka
  rejects some explicit defaults) and tags are written in ascending order.
- A tagged-field section claiming over ``MAX_TAGGED_FIELDS`` fields, or an array over
  ``MAX_ARRAY_ELEMENTS`` elements, is refused before anything is allocated (``types.py``).
- Nullable values encode ``None`` as length -1 (compact: 0); nullable structs carry an int8
  presence marker (-1 null, 1 present). ``records`` fields are always nullable bytes and decode
  to a zero-copy ``memoryview`` of the input; on encode they may be ``None``, a bytes-like or a
  list/tuple of bytes-likes written back to back. ``uuid`` is 16 raw ``bytes``.
- A key missing from a dict being encoded takes the field default (a missing non-nullable
  struct is written with all its defaults).
- Errors: bytes that do not parse (truncated, bad lengths, invalid UTF-8, a null where the
  version does not allow one, trailing bytes after a message) raise :class:`ProtocolError`.
  A message we cannot encode (``None`` for a non-nullable field, a value out of range, a version
  the declaration lacks) is our bug and raises :class:`EncodeError` (a ``ValueError``).

Each (declaration, version) is compiled once into a plan: Python functions generated for each
struct, in which runs of fixed-width fields are read with one precompiled ``struct.Struct`` and
no version is checked per field at run time.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sparklog.protocol.errors import ProtocolError
from sparklog.protocol.schema import Field, MessageSpec
from sparklog.protocol.types import BytesLike, Chunk, FileRegion, Reader, Writer, nbytes

Decoder = Callable[[Reader], Any]
Encoder = Callable[[Writer, Any], None]
Chunks = list[Chunk]


class EncodeError(ValueError):
    """A message could not be encoded: a bug in the code that built it."""


@dataclass(frozen=True, slots=True)
class Plan:
    """A compiled (declaration, version): the top-level struct's decoder and encoder."""

    spec: MessageSpec
    version: int
    decode: Callable[[Reader], dict[str, Any]]
    encode: Callable[[Writer, Mapping[str, Any]], None]


_PLANS: dict[tuple[int, int], Plan] = {}


def plan_for(spec: MessageSpec, version: int) -> Plan:
    """The compiled plan for ``spec`` at ``version``, built on first use."""
    key = (id(spec), version)
    plan = _PLANS.get(key)
    if plan is None or plan.spec is not spec:
        if version not in spec.valid_versions:
            raise EncodeError(f"{spec.name} has no version {version} ({spec.valid_versions})")
        flexible = spec.is_flexible(version)
        decode, encode = _compile_struct(spec.name, spec.fields, version, flexible)
        plan = Plan(spec, version, decode, encode)
        _PLANS[key] = plan
    return plan


def decode(spec: MessageSpec, version: int, buf: BytesLike) -> dict[str, Any]:
    """Decode a whole message; trailing bytes are a :class:`ProtocolError`."""
    reader = Reader(buf)
    message = plan_for(spec, version).decode(reader)
    if reader.pos != reader.end:
        raise ProtocolError(f"{spec.name} v{version}: {reader.end - reader.pos} trailing bytes")
    return message


def decode_from(spec: MessageSpec, version: int, reader: Reader) -> dict[str, Any]:
    """Decode one message at the reader's position, leaving the reader after it."""
    return plan_for(spec, version).decode(reader)


def encode_into(
    spec: MessageSpec, version: int, message: Mapping[str, Any], writer: Writer
) -> None:
    plan_for(spec, version).encode(writer, message)


def encode(spec: MessageSpec, version: int, message: Mapping[str, Any]) -> Chunks:
    """Encode ``message``; large ``records`` values are chunks of their own (not copied)."""
    writer = Writer()
    plan_for(spec, version).encode(writer, message)
    return writer.chunks()


def encode_bytes(spec: MessageSpec, version: int, message: Mapping[str, Any]) -> bytes:
    writer = Writer()
    plan_for(spec, version).encode(writer, message)
    return writer.getvalue()


# -- primitive codecs ----------------------------------------------------------------------

# struct formats of fixed-width types; runs of these are read (and written) in one call.
_DECODE_FORMATS = {
    "int8": "b",
    "int16": "h",
    "int32": "i",
    "int64": "q",
    "uint16": "H",
    "uint32": "I",
    "float64": "d",
    "uuid": "16s",
}
# uuid is not packed in runs: "16s" would silently pad or truncate a wrong-sized value.
_ENCODE_FORMATS = {k: v for k, v in _DECODE_FORMATS.items() if k != "uuid"}

_FIXED_CODECS: dict[str, tuple[Decoder, Encoder]] = {
    "int8": (Reader.int8, Writer.int8),
    "int16": (Reader.int16, Writer.int16),
    "int32": (Reader.int32, Writer.int32),
    "int64": (Reader.int64, Writer.int64),
    "uint16": (Reader.uint16, Writer.uint16),
    "uint32": (Reader.uint32, Writer.uint32),
    "float64": (Reader.float64, Writer.float64),
    "uuid": (Reader.uuid, Writer.uuid),
    "bool": (Reader.boolean, Writer.boolean),
}

# (type, flexible, nullable) -> codec for variable-length primitives.
_VARIABLE_CODECS: dict[tuple[str, bool, bool], tuple[Decoder, Encoder]] = {
    ("string", False, False): (Reader.string, Writer.string),
    ("string", False, True): (Reader.nullable_string, Writer.nullable_string),
    ("string", True, False): (Reader.compact_string, Writer.compact_string),
    ("string", True, True): (Reader.compact_nullable_string, Writer.compact_nullable_string),
    ("bytes", False, False): (Reader.byte_string, Writer.byte_string),
    ("bytes", False, True): (Reader.nullable_byte_string, Writer.nullable_byte_string),
    ("bytes", True, False): (Reader.compact_byte_string, Writer.compact_byte_string),
    ("bytes", True, True): (
        Reader.compact_nullable_byte_string,
        Writer.compact_nullable_byte_string,
    ),
}


def _records_codec(flexible: bool) -> tuple[Decoder, Encoder]:
    def decode_records(reader: Reader) -> memoryview | None:
        return reader.records(flexible)

    def encode_records(writer: Writer, value: Any) -> None:
        if value is None:
            if flexible:
                writer.uvarint(0)
            else:
                writer.int32(-1)
            return
        parts: Sequence[BytesLike | FileRegion] = (
            value if isinstance(value, list | tuple) else (value,)
        )
        total = sum(nbytes(part) for part in parts)
        if flexible:
            writer.uvarint(total + 1)
        else:
            writer.int32(total)
        for part in parts:
            writer.raw(part)

    return decode_records, encode_records


def _primitive_codec(type_: str, flexible: bool, nullable: bool) -> tuple[Decoder, Encoder]:
    if type_ == "records":
        return _records_codec(flexible)
    fixed = _FIXED_CODECS.get(type_)
    if fixed is not None:
        return fixed
    return _VARIABLE_CODECS[(type_, flexible, nullable)]


# -- composite codecs ----------------------------------------------------------------------


def _array_codec(
    element_decode: Decoder, element_encode: Encoder, flexible: bool, nullable: bool
) -> tuple[Decoder, Encoder]:
    if flexible:

        def decode_array(reader: Reader) -> list[Any] | None:
            count = reader.compact_array_length(nullable)
            if count is None:
                return None
            return [element_decode(reader) for _ in range(count)]

        def encode_array(writer: Writer, value: Any) -> None:
            if value is None:
                if not nullable:
                    raise EncodeError("None for a non-nullable array")
                writer.uvarint(0)
                return
            writer.uvarint(len(value) + 1)
            for element in value:
                element_encode(writer, element)

    else:

        def decode_array(reader: Reader) -> list[Any] | None:
            count = reader.array_length(nullable)
            if count is None:
                return None
            return [element_decode(reader) for _ in range(count)]

        def encode_array(writer: Writer, value: Any) -> None:
            if value is None:
                if not nullable:
                    raise EncodeError("None for a non-nullable array")
                writer.int32(-1)
                return
            writer.int32(len(value))
            for element in value:
                element_encode(writer, element)

    return decode_array, encode_array


def _nullable_struct_codec(
    struct_decode: Decoder, struct_encode: Encoder
) -> tuple[Decoder, Encoder]:
    def decode_nullable(reader: Reader) -> Any:
        # Kafka's generated readers treat any negative marker as null.
        if reader.int8() < 0:
            return None
        return struct_decode(reader)

    def encode_nullable(writer: Writer, value: Any) -> None:
        if value is None:
            writer.buf.append(0xFF)
        else:
            writer.buf.append(1)
            struct_encode(writer, value)

    return decode_nullable, encode_nullable


def _value_codec(path: str, f: Field, version: int, flexible: bool) -> tuple[Decoder, Encoder]:
    nullable = f.nullable_in(version)
    if f.is_struct_array:
        element = _compile_struct(f"{path}.{f.name}", f.fields, version, flexible)
        return _array_codec(*element, flexible, nullable)
    if f.is_array:
        element = _primitive_codec(f.element_type, flexible, False)
        return _array_codec(*element, flexible, nullable)
    if f.is_struct:
        codec = _compile_struct(f"{path}.{f.name}", f.fields, version, flexible)
        return _nullable_struct_codec(*codec) if nullable else codec
    return _primitive_codec(f.type, flexible, nullable)


def _missing_value(f: Field, version: int) -> Callable[[], Any]:
    """What to encode when a present field's key is missing from the dict."""
    if f.is_struct and f.default is None and not f.nullable_in(version):
        return dict  # a struct with every field at its default
    return f.default_value if callable(f.default) else lambda: f.default


# -- tagged fields -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Tagged:
    tag: int
    name: str
    decode: Decoder
    encode: Encoder
    default: Any


def _read_tags(reader: Reader, message: dict[str, Any], tagged: Mapping[int, _Tagged]) -> None:
    for _ in range(reader.tagged_field_count()):
        tag = reader.uvarint()
        size = reader.uvarint()
        entry = tagged.get(tag)
        if entry is None:
            reader.skip(size)
            continue
        end = reader.pos + size
        if end > reader.end:
            raise ProtocolError(f"tagged field {entry.name}: size {size} exceeds the message")
        sub = Reader(reader.buf, reader.pos, end)
        message[entry.name] = entry.decode(sub)
        if sub.pos != end:
            raise ProtocolError(f"tagged field {entry.name}: {end - sub.pos} bytes left over")
        reader.pos = end


_MISSING = object()


def _write_tags(writer: Writer, message: Mapping[str, Any], tagged: Sequence[_Tagged]) -> None:
    encoded: list[tuple[int, bytes]] = []
    for entry in tagged:
        value = message.get(entry.name, _MISSING)
        if value is _MISSING or value == entry.default:
            continue
        sub = Writer()
        try:
            entry.encode(sub, value)
        except EncodeError:
            raise
        except (ValueError, TypeError, AttributeError, OverflowError, struct.error) as exc:
            raise EncodeError(f"tagged field {entry.name}: {exc}") from exc
        encoded.append((entry.tag, sub.getvalue()))
    writer.uvarint(len(encoded))
    for tag, data in encoded:
        writer.uvarint(tag)
        writer.uvarint(len(data))
        writer.raw(data)


# -- struct compilation --------------------------------------------------------------------


def _compile_struct(
    path: str, fields: tuple[Field, ...], version: int, flexible: bool
) -> tuple[Callable[[Reader], dict[str, Any]], Callable[[Writer, Mapping[str, Any]], None]]:
    """Generate the decoder and encoder of one struct at one version.

    Generated code keeps the hot path free of per-field dispatch: consecutive fixed-width
    fields become one ``unpack_from``/``pack`` call, every other field one call of its codec.
    """
    namespace: dict[str, Any] = {
        "ProtocolError": ProtocolError,
        "EncodeError": EncodeError,
        "_read_tags": _read_tags,
        "_write_tags": _write_tags,
        "_struct_error": struct.error,
    }
    regular: list[Field] = []
    defaults: list[Field] = []
    tagged: list[_Tagged] = []
    for f in fields:
        if flexible and f.tagged_in(version):
            assert f.tag is not None
            decode_value, encode_value = _value_codec(path, f, version, flexible)
            tagged.append(_Tagged(f.tag, f.name, decode_value, encode_value, f.default_value()))
            defaults.append(f)
        elif f.present_in(version):
            regular.append(f)
        else:
            defaults.append(f)

    # Each nested codec is compiled once and shared by the decoder and the encoder.
    codecs = {
        f.name: _value_codec(path, f, version, flexible)
        for f in regular
        if f.type not in _ENCODE_FORMATS
    }
    dec_lines = ["def decode_struct(r):", "    _adv = r._advance", "    _buf = r.buf"]
    enc_lines = ["def encode_struct(w, m):", "    _n = ''", "    try:", "        _get = m.get"]
    values: list[str] = []  # (key, expression) pairs for the decoded dict literal

    def add_run(group: list[Field], index: int) -> None:
        fmt = ">" + "".join(_DECODE_FORMATS[g.type] for g in group)
        packer = struct.Struct(fmt)
        namespace[f"_S{index}"] = packer
        dec_lines.append(f"    _t{index} = _S{index}.unpack_from(_buf, _adv({packer.size}))")
        for position, g in enumerate(group):
            values.append(f"{g.name!r}: _t{index}[{position}]")

    def add_encode_run(group: list[Field], index: int) -> None:
        packer = struct.Struct(">" + "".join(_ENCODE_FORMATS[g.type] for g in group))
        namespace[f"_P{index}"] = packer
        args = ", ".join(f"_get({g.name!r}, _C{index}_{i})" for i, g in enumerate(group))
        for i, g in enumerate(group):
            namespace[f"_C{index}_{i}"] = g.default_value()
        names = "/".join(g.name for g in group)
        enc_lines.append(f"        _n = {names!r}")
        enc_lines.append(f"        w.buf += _P{index}.pack({args})")

    # Decode side.
    run: list[Field] = []
    for index, f in enumerate(regular):
        if f.type in _DECODE_FORMATS:
            run.append(f)
            continue
        if run:
            add_run(run, index)
            run = []
        namespace[f"_D{index}"] = codecs[f.name][0]
        dec_lines.append(f"    _v{index} = _D{index}(r)")
        values.append(f"{f.name!r}: _v{index}")
    if run:
        add_run(run, len(regular))
    for index, f in enumerate(defaults):
        if callable(f.default):
            namespace[f"_F{index}"] = f.default
            values.append(f"{f.name!r}: _F{index}()")
        else:
            namespace[f"_K{index}"] = f.default
            values.append(f"{f.name!r}: _K{index}")
    dec_lines.append("    m = {" + ", ".join(values) + "}")
    if flexible:
        namespace["_TAGS_BY_ID"] = {t.tag: t for t in tagged}
        dec_lines.append("    _read_tags(r, m, _TAGS_BY_ID)")
    dec_lines.append("    return m")

    # Encode side.
    run = []
    for index, f in enumerate(regular):
        if f.type in _ENCODE_FORMATS:
            run.append(f)
            continue
        if run:
            add_encode_run(run, index)
            run = []
        namespace[f"_E{index}"] = codecs[f.name][1]
        namespace[f"_M{index}"] = _missing_value(f, version)
        enc_lines.append(f"        _n = {f.name!r}")
        enc_lines.append(f"        _x = _get({f.name!r}, _MISSING)")
        enc_lines.append(f"        _E{index}(w, _M{index}() if _x is _MISSING else _x)")
    if run:
        add_encode_run(run, len(regular))
    namespace["_MISSING"] = _MISSING
    if flexible:
        if tagged:
            namespace["_TAGS"] = tuple(sorted(tagged, key=lambda t: t.tag))
            enc_lines.append("        _n = '<tagged fields>'")
            enc_lines.append("        _write_tags(w, m, _TAGS)")
        else:
            enc_lines.append("        w.buf.append(0)")
    enc_lines.append("    except EncodeError:")
    enc_lines.append("        raise")
    enc_lines.append(
        "    except (ValueError, TypeError, AttributeError, OverflowError, _struct_error) as e:"
    )
    enc_lines.append(f"        raise EncodeError(f'{path}.{{_n}}: {{e}}') from e")

    source = "\n".join(dec_lines) + "\n\n" + "\n".join(enc_lines) + "\n"
    exec(compile(source, f"<codec {path} v{version}>", "exec"), namespace)
    return namespace["decode_struct"], namespace["encode_struct"]
