"""Generate TypedDicts of the coordinators' records from their declarations.

Run ``python -m sparklog.coordinator.gen_record_types`` after editing a record declaration of
the group, share-group, transaction or share-state coordinators (:data:`RECORD_MODULES`): it
rewrites :mod:`sparklog.coordinator.record_types` (the rendering is
:func:`sparklog.protocol.gen_types.render_types`; ``tests/unit/coordinator/test_record_types.py``
fails when the file is stale).

The records are built (what a coordinator writes; encode gives a missing key its default) and
decoded (replay: every key present), so their TypedDicts are ``total=False``, as the metadata
records' (:mod:`sparklog.metadata.gen_record_types`). A declaration shared by two modules (the
consumer-group keys the share-group records reuse) is rendered once; two different
declarations with one name are an error.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from sparklog.protocol.gen_types import render_types, write_or_check
from sparklog.protocol.schema import MessageSpec

TARGET = Path(__file__).with_name("record_types.py")
RECORD_MODULES = (
    "sparklog.coordinator.records",
    "sparklog.coordinator.consumer_records",
    "sparklog.coordinator.share_records",
    "sparklog.coordinator.txn_records",
    "sparklog.share.state_store",
)


def record_specs() -> list[MessageSpec]:
    """Every record declaration of :data:`RECORD_MODULES`, in declaration order, once each."""
    specs: dict[str, MessageSpec] = {}
    for name in RECORD_MODULES:
        for value in vars(importlib.import_module(name)).values():
            if not isinstance(value, MessageSpec):
                continue
            known = specs.setdefault(value.name, value)
            if known != value:
                raise ValueError(f"two different declarations named {value.name}")
    return list(specs.values())


def render() -> str:
    return render_types(
        record_specs(),
        docstring=(
            "TypedDicts of the coordinators' records (GENERATED: do not edit).\n\n"
            "Written by ``python -m sparklog.coordinator.gen_record_types`` from the record\n"
            "declarations of the group, share-group, transaction and share-state coordinators;\n"
            "every record is ``total=False`` (see :mod:`sparklog.coordinator.gen_record_types`)."
        ),
        decoded=lambda spec: False,
    )


def main(argv: list[str] | None = None) -> int:
    return write_or_check(TARGET, render(), "python -m sparklog.coordinator.gen_record_types", argv)


if __name__ == "__main__":
    sys.exit(main())
