"""Reading a coordinator's internal partition back when it becomes its leader.

Both the group coordinator (``__consumer_offsets``) and the transaction coordinator
(``__transaction_state``) rebuild their state by replaying their partition from the log start
offset to its log end offset when they become its leader (as Kafka's coordinator loader does): a
new leader's HW may still lag its LEO until the followers fetch again, but everything in a
leader's log is committed eventually (a leader never truncates its own log), and records the
previous leader acknowledged sit between the two. Contract of :func:`replay_batches`:

- Batches come in log order, each once, with only its records at or above the offset the read
  that returned them started at (a read may begin inside a batch).
- A batch that fails to decode is logged and skipped, never raised: one bad batch must not keep
  a coordinator from loading the rest.
- It stops at the log end offset as it was when the replay began, or early when a read makes
  no progress, so it always ends.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from sparklog.coordinator.runtime import CoordinatorRuntime, PartitionView
from sparklog.protocol.record_codec import Record, decode_batch
from sparklog.protocol.records import BatchHeader, CorruptRecordError, iter_batches

log = logging.getLogger(__name__)

_REPLAY_READ_BYTES = 1 << 20


def replay_batches(
    runtime: CoordinatorRuntime,
    topic: str,
    partition: PartitionView,
    *,
    control: bool = True,
) -> Iterator[tuple[BatchHeader, list[Record]]]:
    """The batches of ``partition`` of ``topic`` with their records; control batches only
    when ``control`` (otherwise they are passed over undecoded). The reads go past the HW
    (:meth:`CoordinatorRuntime.read`)."""
    name = f"{topic}-{partition.index}"
    offset = partition.log_start_offset
    end = partition.log_end_offset
    while offset < end:
        data = runtime.read(topic, partition.index, offset, _REPLAY_READ_BYTES, end)
        advanced = offset
        for pos, header in iter_batches(data):
            if header.last_offset < offset:
                continue
            advanced = header.last_offset + 1
            if header.is_control and not control:
                continue
            try:
                _, records = decode_batch(data, pos)
            except CorruptRecordError as exc:
                log.error("Skipping corrupt batch of %s: %s", name, exc)
                continue
            yield header, [record for record in records if record.offset >= offset]
        if advanced == offset:
            break
        offset = advanced
