"""The offline checker: a chaos history in, anomaly counts (and examples) out.

Contract: :func:`check` reads nothing but the ops (so a saved ``history.jsonl`` replays to the
same verdict) and counts, each of which must be 0 for the run to be valid:

- ``lost``: an acknowledged send, or a value of a committed transaction, that the final
  read_uncommitted read of the whole log does not contain.
- ``duplicated``: extra copies of a value in the final log (every value is written once).
- ``offset_mismatch``: an acknowledged send whose acknowledged (partition, offset) holds
  something else in the final log (an ack without an offset, librdkafka's implicit ack of a
  request whose successor was acknowledged, claims only its partition).
- ``reordered``: for one idempotent producer process and one partition, acknowledged sends
  whose final offsets are not in the order the producer sent them (adjacent inversions).
- ``aborted_read``: a read_committed reader (process ``rc-*``, or the final read_committed
  read) returned a value of an aborted transaction.
- ``committed_invisible``: a committed transaction's value that the final read_committed read
  does not return.
- ``txn_partial``: a committed or unknown-outcome transaction of which the final
  read_committed read returns some values but not all.
- ``vanished_reads``: a record some reader was given (any isolation, any mode) that is not at
  the same offset in the final log: the HW/LSO it was read under made it visible before it was
  durable (Kafka's promise, as a user sees it).
- ``offset_resets``: an assign-mode reader's position became invalid (records it had been
  given vanished from under it).
- ``hw_regression``: the high watermark or last stable offset one leader epoch answered went
  backwards (a new leader's watermark may start lower than its predecessor's; that is legal,
  so only answers of the same epoch are compared).
- ``replica_divergence``, ``stuck_txns``, ``isr_not_restored``, ``nodes_down``,
  ``final_read_incomplete``: from the drain's ``final`` ops.
- ``node_crashes``: a node that exited when no fault asked it to (a full disk is a reason).

Informational (not anomalies): ``acked``, ``sends``, ``txns_committed``, ``txns_aborted``,
``txns_unknown``, ``indeterminate_sends``, ``client_restarts`` (a client that crashed and was
replaced), ``workers_stuck`` (a client that did not stop in time), ``polls``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tests.chaos.history import Op

ANOMALIES = (
    "lost",
    "duplicated",
    "offset_mismatch",
    "reordered",
    "aborted_read",
    "committed_invisible",
    "txn_partial",
    "vanished_reads",
    "offset_resets",
    "hw_regression",
    "replica_divergence",
    "stuck_txns",
    "isr_not_restored",
    "nodes_down",
    "node_crashes",
    "final_read_incomplete",
)
INFO = (
    "acked",
    "sends",
    "indeterminate_sends",
    "txns_committed",
    "txns_aborted",
    "txns_unknown",
    "polls",
    "client_restarts",
    "workers_stuck",
)
EXAMPLES_PER_ANOMALY = 5

Position = tuple[str, int, int]  # topic, partition, offset


@dataclass
class Result:
    counts: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[Any]] = field(default_factory=lambda: defaultdict(list))

    def flag(self, anomaly: str, example: Any, amount: int = 1) -> None:
        self.counts[anomaly] += amount
        if len(self.examples[anomaly]) < EXAMPLES_PER_ANOMALY:
            self.examples[anomaly].append(example)

    @property
    def valid(self) -> bool:
        return all(self.counts[a] == 0 for a in ANOMALIES)

    def summary_fields(self) -> str:
        names = (*INFO, *ANOMALIES)
        return " ".join(f"{n}={self.counts[n]}" for n in names)


@dataclass
class _Final:
    log: dict[Position, str | None] = field(default_factory=dict)
    committed_values: set[str] = field(default_factory=set)
    seen_final: set[str] = field(default_factory=set)


def is_read_committed(process: str) -> bool:
    return process.startswith("rc-") or process == "final-read_committed"


def _final_reads(ops: list[Op], result: Result) -> _Final:
    final = _Final()
    for op in ops:
        if op.process != "final" or op.f != "final_read":
            continue
        if not op.value.get("complete", False):
            result.flag("final_read_incomplete", op.value.get("isolation"))
        records = op.value["records"]
        if op.value["isolation"] == "read_uncommitted":
            final.seen_final.add("read_uncommitted")
            for topic, partition, offset, value in records:
                final.log[(topic, partition, offset)] = value
        else:
            final.seen_final.add("read_committed")
            final.committed_values.update(r[3] for r in records if r[3] is not None)
    for isolation in ("read_uncommitted", "read_committed"):
        if isolation not in final.seen_final:
            result.flag("final_read_incomplete", f"no final {isolation} read")
    return final


def _check_sends(ops: list[Op], final: _Final, result: Result) -> None:
    where: dict[str, list[Position]] = defaultdict(list)
    for position, value in final.log.items():
        if value is not None:
            where[value].append(position)
    for value, positions in where.items():
        if len(positions) > 1:
            result.flag("duplicated", [value, sorted(positions)], len(positions) - 1)

    invoked: dict[str, int] = {}
    acked_by_stream: dict[tuple[str, str, int], list[tuple[int, str]]] = defaultdict(list)
    for index, op in enumerate(ops):
        if op.f != "send":
            continue
        if op.type == "invoke":
            invoked[op.value[1]] = index
            result.counts["sends"] += 1
        elif op.type == "info":
            result.counts["indeterminate_sends"] += 1
        elif op.type == "ok":
            key, value, partition, offset = op.value
            result.counts["acked"] += 1
            if value not in where:
                result.flag("lost", [op.process, key, value, partition, offset])
                continue
            topic = where[value][0][0]
            if offset is None:
                # librdkafka's implicit ack: a request of unknown outcome whose successor was
                # acknowledged is reported delivered without an offset; only its partition is
                # claimed.
                if all(p != partition for _, p, _ in where[value]):
                    result.flag("offset_mismatch", [value, partition, offset, where[value]])
            elif final.log.get((topic, partition, offset)) != value:
                result.flag("offset_mismatch", [value, partition, offset, where[value]])
            order = invoked.get(value, index)
            acked_by_stream[(op.process, topic, partition)].append((order, value))
    for (process, topic, partition), sends in acked_by_stream.items():
        sends.sort()
        offsets = [min(where[v])[2] for _, v in sends]
        for i in range(1, len(offsets)):
            if offsets[i] < offsets[i - 1]:
                result.flag(
                    "reordered",
                    [
                        process,
                        topic,
                        partition,
                        sends[i - 1][1],
                        offsets[i - 1],
                        sends[i][1],
                        offsets[i],
                    ],
                )


def _check_txns(ops: list[Op], final: _Final, result: Result) -> set[str]:
    """Counts transaction anomalies; returns the aborted values."""
    aborted: set[str] = set()
    present = {v for v in final.log.values() if v is not None}
    for op in ops:
        if op.f != "txn" or op.type == "invoke":
            continue
        values = [v for _, v in op.value["values"]]
        visible = [v for v in values if v in final.committed_values]
        if op.type == "fail":
            result.counts["txns_aborted"] += 1
            aborted.update(values)
            continue
        if op.type == "ok":
            result.counts["txns_committed"] += 1
            result.counts["acked"] += len(values)
            for value in values:
                if value not in present:
                    result.flag("lost", [op.process, "txn", value])
                if value not in final.committed_values:
                    result.flag("committed_invisible", [op.process, value])
        else:
            result.counts["txns_unknown"] += 1
        if visible and len(visible) < len(values):
            result.flag("txn_partial", [op.process, op.type, values, visible])
    for value in sorted(aborted & final.committed_values):
        result.flag("aborted_read", ["final-read_committed", value])
    return aborted


def _check_reads(ops: list[Op], final: _Final, aborted: set[str], result: Result) -> None:
    for op in ops:
        if op.f == "poll" and op.type == "ok":
            result.counts["polls"] += 1
            read_committed = is_read_committed(op.process)
            for topic, partition, offset, value in op.value:
                if read_committed and value in aborted:
                    result.flag("aborted_read", [op.process, topic, partition, offset, value])
                if final.log and final.log.get((topic, partition, offset)) != value:
                    result.flag(
                        "vanished_reads",
                        [
                            op.process,
                            topic,
                            partition,
                            offset,
                            value,
                            final.log.get((topic, partition, offset)),
                        ],
                    )
        elif op.f == "offset_reset":
            result.flag("offset_resets", [op.process, op.value])
        elif op.f == "crash":
            result.counts["client_restarts"] += 1
        elif op.f == "worker_stuck":
            result.counts["workers_stuck"] += 1


def _check_watermarks(ops: Iterable[Op], result: Result) -> None:
    last: dict[tuple[str, int, int], tuple[int, int]] = {}
    for op in ops:
        if op.f != "watermarks":
            continue
        for topic, partition, leader, epoch, high_watermark, stable in op.value:
            key = (topic, partition, epoch)
            before = last.get(key)
            if before is not None and (high_watermark < before[0] or stable < before[1]):
                result.flag(
                    "hw_regression",
                    [topic, partition, leader, epoch, list(before), [high_watermark, stable]],
                )
            last[key] = (
                max(high_watermark, before[0]) if before else high_watermark,
                max(stable, before[1]) if before else stable,
            )


def _check_final_state(ops: Iterable[Op], result: Result) -> None:
    for op in ops:
        if op.process == "nemesis" and op.f == "node_exited" and "while" not in op.value:
            result.flag("node_crashes", {k: v for k, v in op.value.items() if k != "log"})
        if op.process != "final":
            continue
        if op.f == "isr":
            for entry in op.value["not_restored"]:
                result.flag("isr_not_restored", entry)
        elif op.f == "open_txns":
            for entry in op.value["open"]:
                result.flag("stuck_txns", entry)
        elif op.f == "replicas":
            for entry in op.value["divergent"]:
                result.flag("replica_divergence", entry)
        elif op.f == "nodes_down":
            for entry in op.value:
                result.flag("nodes_down", entry)


def check(ops: list[Op]) -> Result:
    result = Result()
    final = _final_reads(ops, result)
    _check_sends(ops, final, result)
    aborted = _check_txns(ops, final, result)
    _check_reads(ops, final, aborted, result)
    _check_watermarks(ops, result)
    _check_final_state(ops, result)
    return result
