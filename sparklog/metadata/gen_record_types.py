"""Generate TypedDicts of the metadata and KRaft control records from their declarations.

Run ``python -m sparklog.metadata.gen_record_types`` after editing a record declaration in
:mod:`sparklog.metadata.records` or :mod:`sparklog.raft.control_records`: it rewrites
:mod:`sparklog.metadata.record_types` (the rendering is
:func:`sparklog.protocol.gen_types.render_types`; ``tests/unit/test_message_types.py`` fails
when the file is stale).

Records are both built (the controller's ``make_record``, the raft layer's control records;
encode gives a missing key its default) and decoded (every key present), so their TypedDicts are
``total=False``: mypy checks the field names either way.
"""

from __future__ import annotations

import sys
from pathlib import Path

from sparklog.metadata.records import DATA_RECORDS
from sparklog.protocol.gen_types import render_types, write_or_check
from sparklog.protocol.schema import MessageSpec
from sparklog.raft import control_records

TARGET = Path(__file__).with_name("record_types.py")


def record_specs() -> list[MessageSpec]:
    """The data records by api key, then the control records."""
    specs = [spec for _, (spec, _version) in sorted(DATA_RECORDS.items())]
    specs.extend(
        value for value in vars(control_records).values() if isinstance(value, MessageSpec)
    )
    return specs


def render() -> str:
    return render_types(
        record_specs(),
        docstring=(
            "TypedDicts of the metadata and KRaft control records (GENERATED: do not edit).\n\n"
            "Written by ``python -m sparklog.metadata.gen_record_types`` from\n"
            ":mod:`sparklog.metadata.records` and :mod:`sparklog.raft.control_records`; every\n"
            "record is ``total=False`` (see :mod:`sparklog.metadata.gen_record_types`)."
        ),
        decoded=lambda spec: False,
    )


def main(argv: list[str] | None = None) -> int:
    return write_or_check(TARGET, render(), "python -m sparklog.metadata.gen_record_types", argv)


if __name__ == "__main__":
    sys.exit(main())
