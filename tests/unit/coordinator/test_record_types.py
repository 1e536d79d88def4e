"""The generated coordinator record types (sparklog.coordinator.record_types) match the
declarations, and the generator refuses two different declarations of one name."""

from __future__ import annotations

import pytest

from sparklog.coordinator import gen_record_types, record_types, txn_records
from sparklog.protocol.schema import field, message


def test_generated_module_is_current() -> None:
    assert gen_record_types.TARGET.read_text() == gen_record_types.render(), (
        "sparklog/coordinator/record_types.py is stale: "
        "run python -m sparklog.coordinator.gen_record_types"
    )
    assert gen_record_types.main(["--check"]) == 0


def test_every_record_is_typed_with_its_declared_fields() -> None:
    for spec in gen_record_types.record_specs():
        typed = getattr(record_types, spec.name)
        assert not typed.__total__
        assert set(typed.__annotations__) == {f.name for f in spec.fields}
    assert "transaction_partitions" in record_types.TransactionLogValue.__annotations__
    assert txn_records.TRANSACTION_LOG_VALUE.name == "TransactionLogValue"


def test_two_declarations_of_one_name_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    clash = message("TransactionLogKey", "0", "none", field("other", "string"))
    monkeypatch.setattr(txn_records, "CLASH", clash, raising=False)
    with pytest.raises(ValueError, match="TransactionLogKey"):
        gen_record_types.record_specs()
