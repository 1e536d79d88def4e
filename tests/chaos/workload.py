"""The chaos workloads: real confluent-kafka clients, each writing a history.

Contract:

- Every worker is a thread with a process name (run in a child process of its own by
  :mod:`tests.chaos.clients`, one worker per child); it records ``invoke`` before an operation and
  ``ok``/``fail``/``info`` after, never hiding an error: a client error becomes an ``info`` op
  naming it, an exception escaping a worker's loop is recorded as ``info``/``crash`` (with the
  traceback) and the worker goes on with a new client under a new process name (Jepsen's rule:
  a process that crashed never comes back).
- :class:`QueueProducer`: idempotent, ``acks=all``, keyed, unique values ``"<process>:<n>"``,
  ``rate_per_s`` records a second sent in bursts every ``TICK_S`` (batched with ``linger.ms``,
  up to 5 requests in flight per broker, as idempotence allows).
  ``send`` ops: invoke ``[key, value]``; ok ``[key, value, partition, offset]``; info
  ``[key, value, error]`` (indeterminate: the record may or may not be in the log).
- :class:`TxnProducer`: one transaction writes one value to every partition of the txn topic
  (so it spans the leaders on every broker), then commits or, at random, aborts. ``txn`` ops:
  value ``{"values": [[partition, value], ...], "error": text or null}``; ok = committed;
  fail = aborted (the abort succeeded); info = unknown outcome.
- :class:`GroupConsumer` (subscribe mode, auto-commit) and :class:`AssignReader` (assign mode,
  one isolation level) record ``poll`` ok ops ``[[topic, partition, offset, value], ...]``.
  An assign reader uses ``auto.offset.reset=error``: a reset means a position it had reached
  vanished, recorded as ``info``/``offset_reset``. It also records the cached watermarks it
  fetched with (``info``/``watermarks_cached``, for the report only).
- :class:`WatermarkObserver` records ``info``/``watermarks`` ops
  ``[[topic, partition, leader, leader_epoch, high_watermark, last_stable_offset], ...]``
  from ListOffsets fenced by the leader epoch (see :mod:`tests.chaos.probes`).
"""

from __future__ import annotations

import random
import threading
import time
import traceback
from collections.abc import Sequence
from typing import Any

import confluent_kafka
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from tests.chaos import probes
from tests.chaos.history import History, OpType

QUEUE_TOPIC = "chaos-queue"
TXN_TOPIC = "chaos-txn"
PARTITIONS = 3
KEYS = 12
TICK_S = 0.05


def _err_text(err: Any) -> str:
    if isinstance(err, KafkaError):
        return f"{err.name()}: {err.str()}"
    return str(err)


class Worker:
    """A thread that runs ``session()`` until stopped, a new process name after each crash."""

    def __init__(self, base_name: str, history: History, bootstrap: str) -> None:
        self.base_name = base_name
        self.history = history
        self.bootstrap = bootstrap
        self.generation = 0
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._main, name=base_name, daemon=True)
        self.crashes = 0

    @property
    def process(self) -> str:
        return self.base_name if self.generation == 0 else f"{self.base_name}.{self.generation}"

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stop_event.set()

    def join(self, timeout_s: float) -> bool:
        self.thread.join(timeout_s)
        return not self.thread.is_alive()

    def _main(self) -> None:
        while not self.stop_event.is_set():
            try:
                self.session()
                return
            except Exception:
                self.crashes += 1
                self.history.record(self.process, "info", "crash", traceback.format_exc()[-2000:])
                self.generation += 1
                self.stop_event.wait(1.0)

    def session(self) -> None:
        raise NotImplementedError


class QueueProducer(Worker):
    def __init__(self, name: str, history: History, bootstrap: str, rate_per_s: float) -> None:
        super().__init__(name, history, bootstrap)
        self.rate_per_s = rate_per_s
        self.fatal = threading.Event()

    def _client(self) -> Producer:
        def on_error(err: KafkaError) -> None:
            if err.fatal():
                self.history.record(self.process, "info", "fatal", _err_text(err))
                self.fatal.set()

        return Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 20,
                "max.in.flight.requests.per.connection": 5,
                "message.timeout.ms": 60_000,
                "error_cb": on_error,
                "log_level": 0,
            }
        )

    def session(self) -> None:
        self.fatal.clear()
        producer = self._client()
        process = self.process
        n = 0

        def delivered(err: Any, msg: Any) -> None:
            key, value = msg.key().decode(), msg.value().decode()
            if err is None:
                self.history.record(
                    process, "ok", "send", [key, value, msg.partition(), msg.offset()]
                )
            else:
                self.history.record(process, "info", "send", [key, value, _err_text(err)])

        started = time.monotonic()
        try:
            while not self.stop_event.is_set() and not self.fatal.is_set():
                due = int((time.monotonic() - started) * self.rate_per_s)
                for _ in range(min(due - n, int(self.rate_per_s))):  # no catch-up storm
                    n += 1
                    key, value = f"k{n % KEYS}", f"{process}:{n}"
                    self.history.record(process, "invoke", "send", [key, value])
                    while True:
                        try:
                            producer.produce(
                                QUEUE_TOPIC, key=key, value=value, on_delivery=delivered
                            )
                            break
                        except BufferError:
                            producer.poll(0.1)
                if due - n > self.rate_per_s:
                    started = time.monotonic() - n / self.rate_per_s
                producer.poll(0)
                self.stop_event.wait(TICK_S)
        finally:
            left = producer.flush(30)
            if left:
                producer.purge()
                producer.flush(5)
        if self.fatal.is_set() and not self.stop_event.is_set():
            raise RuntimeError("fatal producer error (recorded); new process")


class TxnProducer(Worker):
    def __init__(
        self, name: str, history: History, bootstrap: str, rng: random.Random, abort_rate: float
    ) -> None:
        super().__init__(name, history, bootstrap)
        self.rng = rng
        self.abort_rate = abort_rate
        self.transactional_id = f"chaos-{name}"

    def session(self) -> None:
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "transactional.id": self.transactional_id,
                "transaction.timeout.ms": 15_000,
                "message.timeout.ms": 14_000,
                "linger.ms": 5,
                # The Java client's default (librdkafka's is 10 s): with 10 s a producer can
                # wait out its message timeout on a restarted former coordinator while the new
                # one is up, and then abort a transaction the coordinator has completed (a fatal
                # INVALID_TXN_STATE, as Kafka answers it too).
                "reconnect.backoff.max.ms": 1000,
                "log_level": 0,
            }
        )
        process = self.process
        producer.init_transactions(60)
        number = 0
        while not self.stop_event.is_set():
            number += 1
            values = [[p, f"{process}:{number}:{p}"] for p in range(PARTITIONS)]
            producer.begin_transaction()
            self.history.record(process, "invoke", "txn", {"values": values})
            kind, error, unusable = self._one(producer, values)
            self.history.record(process, kind, "txn", {"values": values, "error": error})
            if unusable:
                raise RuntimeError(f"transactional producer unusable: {error}")
            self.stop_event.wait(0.1)

    def _one(self, producer: Producer, values: list[list[Any]]) -> tuple[OpType, str | None, bool]:
        """(op type, error text or None, producer unusable)."""
        abort = self.rng.random() < self.abort_rate
        try:
            for partition, value in values:
                producer.produce(TXN_TOPIC, value=value, key=value, partition=partition)
            # Without a flush an abort would only purge the local queue: the aborted values
            # must be in the log for read_committed to have something to skip.
            if producer.flush(30) != 0:
                raise KafkaException(
                    KafkaError(KafkaError._TIMED_OUT, "flush timed out", txn_requires_abort=True)
                )
            if abort:
                _abort(producer)
                return "fail", None, False
            for attempt in range(3):
                try:
                    producer.commit_transaction(30)
                    return "ok", None, False
                except KafkaException as exc:
                    err = exc.args[0]
                    if not err.retriable() or attempt == 2:
                        raise
        except KafkaException as exc:
            err = exc.args[0]
            text = _err_text(err)
            if err.txn_requires_abort():
                try:
                    _abort(producer)
                    return "fail", text, False
                except KafkaException as abort_exc:
                    return "info", f"{text}; abort: {_err_text(abort_exc.args[0])}", True
            return "info", text, True
        return "info", "unreachable", True


def _abort(producer: Producer) -> None:
    """abort_transaction, called again while it fails retriably (a timed-out abort is resumed
    by calling it again, as librdkafka documents); a fatal error is raised."""
    for attempt in range(3):
        try:
            producer.abort_transaction(30)
            return
        except KafkaException as exc:
            if not exc.args[0].retriable() or attempt == 2:
                raise


def _records(messages: Sequence[Any]) -> tuple[list[list[Any]], list[Any]]:
    records: list[list[Any]] = []
    errors: list[Any] = []
    for msg in messages:
        if msg.error() is not None:
            errors.append(msg)
            continue
        value = msg.value()
        records.append(
            [msg.topic(), msg.partition(), msg.offset(), value.decode() if value else None]
        )
    return records, errors


class GroupConsumer(Worker):
    def session(self) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": "chaos-group",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": True,
                "auto.commit.interval.ms": 1000,
                "session.timeout.ms": 10_000,
                "log_level": 0,
            }
        )
        consumer.subscribe([QUEUE_TOPIC])
        try:
            while not self.stop_event.is_set():
                records, errors = _records(consumer.consume(500, 0.5))
                if records:
                    self.history.record(self.process, "ok", "poll", records)
                for msg in errors:
                    self.history.record(
                        self.process, "info", "consumer_error", _err_text(msg.error())
                    )
        finally:
            consumer.close()


class AssignReader(Worker):
    def __init__(self, name: str, history: History, bootstrap: str, isolation: str) -> None:
        super().__init__(name, history, bootstrap)
        self.isolation = isolation
        self.positions: dict[tuple[str, int], int] = {}

    def session(self) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": f"chaos-{self.base_name}",  # never joined: assign mode
                "isolation.level": self.isolation,
                "enable.auto.commit": False,
                "auto.offset.reset": "error",
                "log_level": 0,
            }
        )
        topics = (QUEUE_TOPIC, TXN_TOPIC)
        consumer.assign(
            [
                TopicPartition(t, p, self.positions.get((t, p), confluent_kafka.OFFSET_BEGINNING))
                for t in topics
                for p in range(PARTITIONS)
            ]
        )
        last_watermarks = 0.0
        try:
            while not self.stop_event.is_set():
                records, errors = _records(consumer.consume(500, 0.5))
                if records:
                    self.history.record(self.process, "ok", "poll", records)
                    for topic, partition, offset, _ in records:
                        self.positions[(topic, partition)] = offset + 1
                for msg in errors:
                    err = msg.error()
                    if err.code() == KafkaError._AUTO_OFFSET_RESET:
                        tp = (msg.topic(), msg.partition())
                        self.history.record(
                            self.process,
                            "info",
                            "offset_reset",
                            [tp[0], tp[1], self.positions.get(tp), _err_text(err)],
                        )
                        raise RuntimeError(f"offset reset on {tp}; reassigning")
                    self.history.record(self.process, "info", "consumer_error", _err_text(err))
                if time.monotonic() - last_watermarks > 1.0:
                    last_watermarks = time.monotonic()
                    seen = []
                    for t in topics:
                        for p in range(PARTITIONS):
                            low, high = consumer.get_watermark_offsets(
                                TopicPartition(t, p), cached=True
                            )
                            seen.append([t, p, low, high])
                    self.history.record(self.process, "info", "watermarks_cached", seen)
        finally:
            consumer.close()


class WatermarkObserver(Worker):
    def __init__(self, name: str, history: History, brokers: Sequence[str]) -> None:
        super().__init__(name, history, ",".join(brokers))
        self.brokers = list(brokers)

    def session(self) -> None:
        addresses: dict[int, str] = {}
        while not self.stop_event.wait(0.5):
            states = probes.partition_states(self.brokers, [QUEUE_TOPIC, TXN_TOPIC])
            seen = []
            for (topic, partition), state in sorted(states.items()):
                if state.leader < 0:
                    continue
                if state.leader not in addresses:
                    addresses = probes.broker_addresses(self.brokers) or addresses
                address = addresses.get(state.leader)
                if address is None:
                    continue
                found = probes.watermarks(address, topic, partition, state.leader_epoch)
                if found is not None:
                    seen.append([topic, partition, state.leader, state.leader_epoch, *found])
            if seen:
                self.history.record(self.process, "info", "watermarks", seen)
