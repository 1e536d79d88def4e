"""A compacted topic refuses client records without a key (Kafka's LogValidator.validateKey):
the whole batch fails with INVALID_RECORD and per-record errors (KIP-467)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from sparklog.protocol import compression as codecs
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.record_codec import build_batch
from sparklog.protocol.records import RecordValidationError
from sparklog.storage.config import LogConfig
from sparklog.storage.log import Log

OpenLog = Callable[..., Log]
TS = 1_000_000


def _records(keys: list[bytes | None]) -> bytes:
    return build_batch([(k, b"v", (), TS) for k in keys], compression=codecs.GZIP)


@pytest.mark.parametrize("cleanup_policy", [("compact",), ("compact", "delete")])
def test_keyless_records_fail_the_batch_with_their_indexes(
    open_log: OpenLog, cleanup_policy: tuple[str, ...]
) -> None:
    log = open_log(LogConfig(cleanup_policy=cleanup_policy))
    with pytest.raises(RecordValidationError) as exc:
        log.append_as_leader(_records([b"a", None, b"c", None]), 0, TS, from_client=True)
    assert exc.value.code == ErrorCode.INVALID_RECORD
    assert [index for index, _ in exc.value.record_errors] == [1, 3]
    assert "Compacted topic cannot accept message without key" in exc.value.record_errors[0][1]
    assert "2 record errors" in str(exc.value.message)
    assert log.log_end_offset == 0


def test_keyed_records_and_other_policies_are_appended(open_log: OpenLog) -> None:
    compacted = open_log(LogConfig(cleanup_policy=("compact",)), name="c-0")
    assert (
        compacted.append_as_leader(_records([b"a", b"b"]), 0, TS, from_client=True).records_count
        == 2
    )
    deleting = open_log(LogConfig(cleanup_policy=("delete",)), name="d-0")
    assert deleting.append_as_leader(_records([None]), 0, TS, from_client=True).records_count == 1
    # Replicas and the coordinator's own appends are not client records.
    assert compacted.append_as_leader(_records([None]), 0, TS).records_count == 1
