"""Hypothesis strategies built from message declarations (shared by the codec tests).

``message_strategy(spec, version)`` draws a dict holding every declared key, exactly as
``codec.decode`` would return it: fields absent in ``version`` hold their default, tagged
fields are either their default or a random value, nullable ones are sometimes ``None``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from sparklog.protocol.schema import Field, MessageSpec

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}


def primitive_strategy(type_: str) -> st.SearchStrategy[Any]:
    if type_ in _INT_RANGES:
        low, high = _INT_RANGES[type_]
        return st.integers(low, high)
    if type_ == "bool":
        return st.booleans()
    if type_ == "float64":
        return st.floats(allow_nan=False)
    if type_ == "string":
        return st.text(max_size=12)
    if type_ == "bytes":
        return st.binary(max_size=24)
    if type_ == "uuid":
        return st.binary(min_size=16, max_size=16)
    if type_ == "records":
        return st.none() | st.binary(max_size=48)
    raise AssertionError(f"unknown type {type_}")


def field_strategy(f: Field, version: int, flexible: bool) -> st.SearchStrategy[Any]:
    tagged = flexible and f.tagged_in(version)
    if not tagged and not f.present_in(version):
        return st.builds(f.default_value)
    base: st.SearchStrategy[Any]
    if f.is_struct_array:
        base = st.lists(struct_strategy(f.fields, version, flexible), max_size=3)
    elif f.is_array:
        base = st.lists(primitive_strategy(f.element_type), max_size=4)
    elif f.is_struct:
        base = struct_strategy(f.fields, version, flexible)
    else:
        base = primitive_strategy(f.type)
    if f.nullable_in(version):
        base = st.none() | base
    if tagged:
        base = st.builds(f.default_value) | base
    return base


def struct_strategy(
    fields: tuple[Field, ...], version: int, flexible: bool
) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({f.name: field_strategy(f, version, flexible) for f in fields})


def message_strategy(spec: MessageSpec, version: int) -> st.SearchStrategy[dict[str, Any]]:
    return struct_strategy(spec.fields, version, spec.is_flexible(version))
