"""The checker must be able to fail: synthetic histories with one planted anomaly each."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chaos.checker import ANOMALIES, check
from tests.chaos.history import Op, parse

Q, T = "chaos-queue", "chaos-txn"


class Script:
    def __init__(self) -> None:
        self.ops: list[Op] = []

    def op(self, process: str, type_: str, f: str, value: Any) -> None:
        self.ops.append(Op(process, type_, f, value, len(self.ops)))

    def send(self, process: str, value: str, partition: int, offset: int) -> None:
        self.op(process, "invoke", "send", ["k", value])
        self.op(process, "ok", "send", ["k", value, partition, offset])

    def txn(self, process: str, outcome: str, values: list[list[Any]]) -> None:
        self.op(process, "invoke", "txn", {"values": values})
        self.op(process, outcome, "txn", {"values": values, "error": None})

    def final(self, uncommitted: list[list[Any]], committed: list[list[Any]] | None = None) -> None:
        if committed is None:
            committed = uncommitted
        for isolation, records in (
            ("read_committed", committed),
            ("read_uncommitted", uncommitted),
        ):
            self.op(
                "final",
                "info",
                "final_read",
                {"isolation": isolation, "complete": True, "records": records},
            )
        self.op("final", "info", "isr", {"not_restored": []})
        self.op("final", "info", "open_txns", {"open": [], "unreachable": []})
        self.op("final", "info", "replicas", {"divergent": [], "compared": 2})
        self.op("final", "info", "nodes_down", [])


def anomalies(script: Script) -> dict[str, int]:
    result = check(script.ops)
    return {a: result.counts[a] for a in ANOMALIES if result.counts[a]}


def healthy() -> Script:
    s = Script()
    s.send("p1", "p1:1", 0, 0)
    s.send("p1", "p1:2", 0, 1)
    s.txn("t1", "ok", [[0, "t1:1:0"], [1, "t1:1:1"]])
    s.txn("t1", "fail", [[0, "t1:2:0"], [1, "t1:2:1"]])
    s.op("rc-reader", "ok", "poll", [[Q, 0, 0, "p1:1"], [T, 0, 0, "t1:1:0"]])
    s.op("observer", "info", "watermarks", [[Q, 0, 101, 3, 2, 2]])
    return s


LOG = [
    [Q, 0, 0, "p1:1"],
    [Q, 0, 1, "p1:2"],
    [T, 0, 0, "t1:1:0"],
    [T, 1, 0, "t1:1:1"],
    [T, 0, 2, "t1:2:0"],
    [T, 1, 2, "t1:2:1"],
]
COMMITTED = [r for r in LOG if not str(r[3]).startswith("t1:2")]


def test_a_healthy_history_is_valid() -> None:
    s = healthy()
    s.final(LOG, COMMITTED)
    assert anomalies(s) == {}
    assert check(s.ops).valid


def test_a_lost_write_is_counted() -> None:
    s = healthy()
    s.final([r for r in LOG if r[3] != "p1:2"], COMMITTED)
    assert anomalies(s) == {"lost": 1}


def test_a_duplicate_is_counted() -> None:
    s = healthy()
    s.final([*LOG, [Q, 0, 2, "p1:2"]], COMMITTED)
    assert anomalies(s) == {"duplicated": 1}


def test_an_acknowledged_offset_holding_another_value_is_counted() -> None:
    s = healthy()
    s.final([[Q, 0, 0, "p1:2"], [Q, 0, 1, "p1:1"], *LOG[2:]], COMMITTED)
    counts = anomalies(s)
    assert counts["offset_mismatch"] == 2
    assert counts["reordered"] == 1
    assert counts["vanished_reads"] == 1  # rc-reader saw p1:1 at offset 0


def test_an_ack_without_an_offset_claims_only_its_partition() -> None:
    s = healthy()
    s.op("p1", "invoke", "send", ["k", "p1:3"])
    s.op("p1", "ok", "send", ["k", "p1:3", 0, None])  # librdkafka's implicit ack
    s.final([*LOG, [Q, 0, 2, "p1:3"]], [*COMMITTED, [Q, 0, 2, "p1:3"]])
    assert anomalies(s) == {}
    s = healthy()
    s.op("p1", "invoke", "send", ["k", "p1:3"])
    s.op("p1", "ok", "send", ["k", "p1:3", 1, None])
    s.final([*LOG, [Q, 0, 2, "p1:3"]], [*COMMITTED, [Q, 0, 2, "p1:3"]])
    assert anomalies(s) == {"offset_mismatch": 1}


def test_an_aborted_read_is_counted_in_polls_and_in_the_final_read() -> None:
    s = healthy()
    s.op("rc-reader", "ok", "poll", [[T, 0, 2, "t1:2:0"]])
    s.final(LOG, [*COMMITTED, [T, 1, 2, "t1:2:1"]])
    assert anomalies(s) == {"aborted_read": 2}


def test_read_uncommitted_may_see_aborted_values() -> None:
    s = healthy()
    s.op("ru-reader", "ok", "poll", [[T, 0, 2, "t1:2:0"]])
    s.final(LOG, COMMITTED)
    assert anomalies(s) == {}


def test_a_committed_but_invisible_value_and_a_partial_transaction() -> None:
    s = healthy()
    s.final(LOG, [r for r in COMMITTED if r[3] != "t1:1:1"])
    assert anomalies(s) == {"committed_invisible": 1, "txn_partial": 1}


def test_a_watermark_regression_within_one_leader_epoch_is_counted() -> None:
    s = healthy()
    s.op("observer", "info", "watermarks", [[Q, 0, 101, 3, 1, 2]])
    s.final(LOG, COMMITTED)
    assert anomalies(s) == {"hw_regression": 1}


def test_a_new_leader_epoch_may_start_lower() -> None:
    s = healthy()
    s.op("observer", "info", "watermarks", [[Q, 0, 102, 4, 1, 1]])
    s.final(LOG, COMMITTED)
    assert anomalies(s) == {}


def test_a_read_record_that_vanished_and_an_offset_reset_are_counted() -> None:
    s = healthy()
    s.op("ru-reader", "ok", "poll", [[Q, 0, 2, "p1:3"]])
    s.op("ru-reader", "info", "offset_reset", [Q, 0, 3, "reset"])
    s.final(LOG, COMMITTED)
    assert anomalies(s) == {"vanished_reads": 1, "offset_resets": 1}


def test_final_state_anomalies_are_counted() -> None:
    s = healthy()
    s.final(LOG, COMMITTED)
    s.op("final", "info", "isr", {"not_restored": [[Q, 0, [1, 2, 3], [1, 2], 1]]})
    s.op("final", "info", "open_txns", {"open": [{"transactional_id": "x", "state": "Ongoing"}]})
    s.op("final", "info", "replicas", {"divergent": [{"partition": "chaos-queue-0"}]})
    s.op("nemesis", "info", "node_exited", {"node": "broker-101", "status": 1})
    s.op("nemesis", "info", "node_exited", {"node": "broker-102", "status": 1, "while": "disk"})
    assert anomalies(s) == {
        "isr_not_restored": 1,
        "stuck_txns": 1,
        "replica_divergence": 1,
        "node_crashes": 1,
    }


def test_a_missing_or_incomplete_final_read_makes_the_run_invalid() -> None:
    s = healthy()
    assert anomalies(s)["final_read_incomplete"] == 2
    assert not check(s.ops).valid


def test_history_lines_round_trip_and_a_torn_last_line_is_ignored() -> None:
    op = Op("p1", "ok", "send", ["k", "v", 0, 1], 5)
    assert parse([op.to_json() + "\n", '{"process": "p1", "ty']) == [op]
    with pytest.raises(ValueError):
        parse(['{"process": "p", "type": "weird", "f": "x", "value": 1, "time_ns": 1}'])
