"""Generate TypedDicts from the message declarations, so mypy checks field names.

Run ``python -m sparklog.protocol.gen_types`` after editing a declaration under
``sparklog.protocol.messages``: it rewrites :mod:`sparklog.protocol.message_types`.
``tests/unit/test_message_types.py`` regenerates the module in memory and fails when the file
on disk differs, so declarations and types cannot drift apart.

What the types promise follows what the codec does (``codec.py``'s contract), nothing more:

- A request is what the server decodes. :func:`~sparklog.protocol.codec.decode` fills every
  declared key (a field absent in the version gets its default), so every key of a request
  TypedDict is required.
- A response is what the server builds. :func:`~sparklog.protocol.codec.encode` gives a missing
  key its default, so response TypedDicts are ``total=False``; mypy still rejects an unknown
  key, and a read of a decoded response (every key present) needs no ``.get``.
- A value may be ``None`` where the field is nullable in some version, or where its default is
  ``None`` and some version does not carry it (or carries it as a tagged field).
- ``uuid`` and ``bytes`` are ``bytes``; a request's ``records`` is the zero-copy
  ``memoryview | None`` the codec returns; a response's ``records`` is anything the encoder
  writes (:data:`~sparklog.protocol.types.RecordsValue`).
- Nested structs and arrays of structs get a TypedDict named after the message and the field
  path: ``ProduceRequest.topic_data[].partition_data[]`` is
  ``ProduceRequestTopicDataPartitionData``.

No runtime code changes: TypedDicts are plain dicts, the codec still builds them.
"""

from __future__ import annotations

import argparse
import keyword
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from sparklog.protocol.messages import API_BY_KEY
from sparklog.protocol.schema import Field, MessageSpec

TARGET = Path(__file__).with_name("message_types.py")
_LINE_LENGTH = 100  # ruff's, so the generated file needs no formatting

_PRIMITIVES = {
    "bool": "bool",
    "int8": "int",
    "int16": "int",
    "int32": "int",
    "int64": "int",
    "uint16": "int",
    "uint32": "int",
    "float64": "float",
    "string": "str",
    "bytes": "bytes",
    "uuid": "bytes",
}


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


class _Renderer:
    """Renders the TypedDicts of a set of messages, nested structs before their users."""

    def __init__(self) -> None:
        self.blocks: list[str] = []

    def message(self, spec: MessageSpec, *, decoded: bool, doc: str) -> None:
        self._struct(spec.name, spec.fields, spec, decoded=decoded, doc=doc)

    def _struct(
        self,
        class_name: str,
        fields: tuple[Field, ...],
        spec: MessageSpec,
        *,
        decoded: bool,
        doc: str,
    ) -> None:
        lines: list[str] = []
        for f in fields:
            annotation = self._annotation(class_name, f, spec, decoded)
            line = f"    {f.name}: {annotation}"
            if len(line) > _LINE_LENGTH and annotation.startswith("list["):
                line = f"    {f.name}: list[\n        {annotation[5:-1]}\n    ]"
            lines.append(line)
        total = "" if decoded else ", total=False"
        opening = f"class {class_name}(TypedDict{total}):"
        if len(opening) > _LINE_LENGTH:
            opening = f"class {class_name}(\n    TypedDict{total}\n):"
        if any(keyword.iskeyword(f.name) for f in fields):  # pragma: no cover - none today
            raise ValueError(f"{class_name}: a field named after a Python keyword")
        body = "\n\n" + "\n".join(lines) if lines else ""
        self.blocks.append(f"{opening}\n    {doc}{body}\n")

    def _annotation(self, owner: str, f: Field, spec: MessageSpec, decoded: bool) -> str:
        if f.fields:
            nested = owner + _camel(f.name)
            self._struct(
                nested, f.fields, spec, decoded=decoded, doc=f'"""``{owner}.{f.name}``."""'
            )
            base = f"list[{nested}]" if f.is_struct_array else nested
        elif f.is_array:
            base = f"list[{_PRIMITIVES[f.element_type]}]"
        elif f.type == "records":
            return "memoryview | None" if decoded else "RecordsValue"
        else:
            base = _PRIMITIVES[f.type]
        always_there = f.tag is None and spec.valid_versions.is_subset_of(f.versions)
        if not f.nullable_versions.empty or (f.default is None and not always_there):
            return f"{base} | None"
        return base


def _doc(spec: MessageSpec, decoded: bool) -> str:
    kind = "decoded: every key present" if decoded else "built: missing keys take defaults"
    return f'"""``{spec.name}`` v{spec.valid_versions} ({kind})."""'


def render_types(
    specs: Iterable[MessageSpec],
    *,
    docstring: str,
    decoded: Callable[[MessageSpec], bool],
    prelude: str = "",
    extra_exports: tuple[str, ...] = (),
) -> str:
    """A module of TypedDicts for ``specs``: ``decoded(spec)`` picks total (every key, as
    decode fills them) or ``total=False`` (built, encode fills defaults)."""
    renderer = _Renderer()
    names = list(extra_exports)
    for spec in specs:
        is_decoded = decoded(spec)
        renderer.message(spec, decoded=is_decoded, doc=_doc(spec, is_decoded))
        names.append(spec.name)
    body = "\n\n".join(renderer.blocks)
    imports = "from enum import IntEnum\n" if "IntEnum" in prelude else ""
    imports += "from typing import TypedDict\n\n"
    if "RecordsValue" in body:
        imports += "from sparklog.protocol.types import RecordsValue\n\n"
    header = f'"""{docstring}\n"""\n\nfrom __future__ import annotations\n\n{imports}\n'
    exports = "__all__ = [\n" + "".join(f'    "{n}",\n' for n in sorted(names)) + "]\n"
    return header + prelude + body + "\n\n" + exports


def render(specs: Iterable[MessageSpec], *, with_api_keys: bool = True) -> str:
    """The source of :mod:`sparklog.protocol.message_types` for ``specs``."""
    return render_types(
        specs,
        docstring=(
            "TypedDicts of every API request and response (GENERATED: do not edit).\n\n"
            "Written by ``python -m sparklog.protocol.gen_types`` from the declarations in\n"
            ":mod:`sparklog.protocol.messages`; see :mod:`sparklog.protocol.gen_types` for what "
            "the\ntypes promise (requests: every key present; responses: ``total=False``)."
        ),
        decoded=lambda spec: spec.name.endswith("Request"),
        prelude=_api_key_enum() + "\n\n" if with_api_keys else "",
        extra_exports=("ApiKey",) if with_api_keys else (),
    )


def api_constant(api_name: str) -> str:
    """``DescribeUserScramCredentials`` -> ``DESCRIBE_USER_SCRAM_CREDENTIALS`` (Kafka's ApiKeys)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", api_name).upper()


def _api_key_enum() -> str:
    members = "".join(f"    {api_constant(api.name)} = {key}\n" for key, api in API_BY_KEY.items())
    return (
        "class ApiKey(IntEnum):\n"
        '    """Every API key this node declares, named as Kafka\'s ``ApiKeys``."""\n\n' + members
    )


def api_specs() -> list[MessageSpec]:
    """Every API's request and response declaration, by ascending API key."""
    specs: list[MessageSpec] = []
    for api in API_BY_KEY.values():
        specs.extend((api.request, api.response))
    return specs


def write_or_check(target: Path, source: str, command: str, argv: list[str] | None) -> int:
    """A generator's command line: write ``source`` to ``target``, or with ``--check`` exit 1
    when ``target`` differs from it."""
    parser = argparse.ArgumentParser(prog=command, description=f"write {target.name}")
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    args = parser.parse_args(argv)
    if args.check:
        stale = not target.exists() or target.read_text() != source
        if stale:
            print(f"{target} is stale: run {command}")
        return 1 if stale else 0
    target.write_text(source)
    print(f"wrote {target}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return write_or_check(
        TARGET, render(api_specs()), "python -m sparklog.protocol.gen_types", argv
    )


if __name__ == "__main__":
    sys.exit(main())
