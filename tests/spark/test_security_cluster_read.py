"""Tiering and a Spark read on the SASL_SSL 3 controllers + 3 brokers cluster (issue 17).

One secured cluster (tests.integration.security_support: every listener SASL_SSL, brokers on
SCRAM-SHA-512 among themselves), tiering to a ``file://`` store, and one SparkSession for the
module. The topic has replication factor 3, 1 MiB segments and ``local.retention.bytes=1``:
20,000 records (acks=all over SASL_SSL) tier at least two segments, which leave the disks of
all three replicas; then one aborted and one committed transaction land in the hot tail (their
markers travel over the secured inter-broker listener).

The RLMM of this service keeps its state in the store (a manifest per partition), not in a
``__remote_log_metadata`` topic, so it has no internal Kafka clients to secure (the nodes get
Kafka's ``rlmm.config.remote.log.metadata.common.client.*`` keys anyway, which load and are
unused); the replica fetchers (followers learning the local log start of a tiered leader) are
the only inter-broker clients tiering involves, and a follower rebuilt from the store shows
they work.

Checked: every replica's closed segments tiered and deleted; a follower whose partition
directory was wiped rebuilds from the store and rejoins the ISR; a SASL_SSL consumer from
offset 0 reads tiered + hot records in order, none lost; Spark with ``kafka.security.protocol``,
``kafka.sasl.*`` and ``kafka.ssl.truststore.*`` reads exactly the produced records (cold from
the store + hot over TLS-with-login gRPC, and brokers only over Kafka Fetch), read_committed
drops the aborted transaction, and a wrong password fails the query quickly with Kafka's
message (no hang, no password in it).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from sparklog.connector.options import parse_options
from sparklog.connector.planning import ColdPiece, HotPiece, plan
from tests.integration.cluster_harness import ClusterNode, cli, wait_until
from tests.integration.security_support import (
    ADMIN_PASSWORD,
    SCRAM,
    SecureCluster,
    running_secure_cluster,
)
from tests.integration.tiering_support import (
    BULK_PRODUCER,
    Rec,
    StoreView,
    check_records,
    consume_with,
    file_store,
    make_records,
    now_ms,
    produce_with,
    topic_configs,
)
from tests.spark.support import (
    SPARK_MARKS,
    batch_reader,
    optional_bytes,
    spark_rows,
    spark_session,
)

pytestmark = [*SPARK_MARKS, pytest.mark.integration, pytest.mark.timeout(600)]

TOPIC = "secured-tiered"
RECORDS = 20_000  # ~3 MB: two 1 MiB segments tiered at least
TXN_RECORDS = 100
WAIT_S = 90.0
RLMM_CLIENT = "rlmm.config.remote.log.metadata.common.client"
SETTINGS: dict[str, object] = {
    "remote.log.storage.system.enable": "true",
    "remote.log.manager.task.interval.ms": 300,
    "log.retention.check.interval.ms": 300,
    "broker.session.timeout.ms": 3000,
    "broker.heartbeat.interval.ms": 500,
    "replica.fetch.backoff.ms": 200,
    "replica.fetch.wait.max.ms": 200,
    # What a Kafka file sets for the TopicBasedRLMM's clients: accepted and unused here (the RLMM
    # has none); the password in them must not reach a log either.
    "remote.log.metadata.manager.listener.name": "BROKER",
    f"{RLMM_CLIENT}.security.protocol": "SASL_SSL",
    f"{RLMM_CLIENT}.sasl.mechanism": "SCRAM-SHA-512",
    f"{RLMM_CLIENT}.sasl.jaas.config": (
        f'{SCRAM} required username="admin" password="{ADMIN_PASSWORD}";'
    ),
}


@dataclass
class Env:
    cluster: SecureCluster
    store: StoreView
    spark: Any
    plain: list[Rec]  # offsets 0 .. RECORDS-1
    aborted: list[bytes]  # values at RECORDS .. RECORDS+99, then the abort marker
    committed: list[bytes]  # values at RECORDS+101 .. RECORDS+200, then the commit marker

    @property
    def committed_base(self) -> int:
        return RECORDS + TXN_RECORDS + 1


def partition_dir(node: ClusterNode) -> Path:
    return node.workdir / "data" / f"{TOPIC}-0"


def local_bases(node: ClusterNode) -> list[int]:
    return sorted(int(p.stem) for p in partition_dir(node).glob("*.log"))


def tiered_everywhere(cluster: SecureCluster, store: StoreView) -> bool:
    """Two segments tiered at least, and on every replica only the active segment is left,
    right after the last tiered one."""
    finished = store.finished(TOPIC)
    if len(finished) < 2:
        return False
    active = finished[-1]["end_offset"] + 1
    return all(local_bases(broker) == [active] for broker in cluster.brokers)


def tiering_state(cluster: SecureCluster, store: StoreView) -> str:
    finished = store.finished(TOPIC)
    local = {b.node_id: local_bases(b) for b in cluster.brokers}
    return f"tiered ends {[s['end_offset'] for s in finished]}; local bases {local}"


def isr(admin: Any) -> set[int]:
    partition = admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions.get(0)
    return set() if partition is None else set(partition.isrs)


def produce_transactions(cluster: SecureCluster) -> tuple[list[bytes], list[bytes]]:
    producer = confluent_kafka.Producer(
        {**cluster.client(), "transactional.id": "secured-tiered-txn", "linger.ms": 20}
    )
    producer.init_transactions(30)
    batches: list[list[bytes]] = []
    for kind in ("aborted", "committed"):
        values = [f"{kind}-{i}".encode() for i in range(TXN_RECORDS)]
        producer.begin_transaction()
        for value in values:
            producer.produce(TOPIC, value=value, partition=0)
        assert producer.flush(30) == 0  # before an abort, which purges what is queued
        if kind == "aborted":
            producer.abort_transaction(30)
        else:
            producer.commit_transaction(30)
        batches.append(values)
    return batches[0], batches[1]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    root = tmp_path_factory.mktemp("secure-tiered")
    store = file_store(f"file://{root / 'store'}")
    overrides = {**SETTINGS, "sparklog.remote.storage.url": store.url}
    with running_secure_cluster(root / "cluster", overrides, ("Wr0ng-Pass",)) as cluster:
        admin = AdminClient(cluster.client())
        configs = topic_configs(**{"min.insync.replicas": "2"})
        admin.create_topics([NewTopic(TOPIC, 1, 3, config=configs)])[TOPIC].result(60)
        wait_until("three replicas in the ISR", lambda: len(isr(admin)) == 3, WAIT_S)
        plain = make_records(RECORDS, now_ms() - 3_600_000, seed=17)
        producer = confluent_kafka.Producer(
            {**cluster.client(), **BULK_PRODUCER, "acks": "all", "enable.idempotence": True}
        )
        produce_with(producer, TOPIC, plain)
        aborted, committed = produce_transactions(cluster)
        # Tiering at rest before any read: a segment tiered between a Spark plan and its
        # read would be a race of its own, not what these tests are about.
        wait_until(
            "every replica's closed segments tiered and deleted locally",
            lambda: tiered_everywhere(cluster, store),
            WAIT_S,
            interval_s=0.3,
        )
        with spark_session("sparklog-secure-cluster") as spark:
            yield Env(cluster, store, spark, plain, aborted, committed)


def test_tiering_over_sasl_ssl_every_replica_and_a_rebuilt_follower(env: Env) -> None:
    cluster, store = env.cluster, env.store
    assert tiered_everywhere(cluster, store), tiering_state(cluster, store)
    admin = AdminClient(cluster.client())
    assert isr(admin) == {b.node_id for b in cluster.brokers}
    leader = admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions[0].leader
    assert {s["broker_id"] for s in store.finished(TOPIC)} == {leader}
    tiered_end = store.finished(TOPIC)[-1]["end_offset"]
    assert tiered_end < RECORDS  # the transactions stay hot

    # The operator's view of the copy lag, asked of the leader over SASL_SSL.
    command_config = cluster.root / "client.properties"
    command_config.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        f'sasl.jaas.config={SCRAM} required username="admin" password="{ADMIN_PASSWORD}";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={cluster.tls.ca_pem}\n"
    )
    described = cli(
        *("tiering", "describe", "--store", store.url, "--topic", TOPIC),
        *(
            "--bootstrap-server",
            cluster.brokers[0].address,
            "--command-config",
            str(command_config),
        ),
    )
    assert f"HighestTieredOffset: {tiered_end}" in described, described
    assert f"HighWatermark: {env.committed_base + TXN_RECORDS + 1}" in described, described

    # A follower whose partition directory is gone rebuilds from the store (the leader's
    # local log start over the SASL_SSL inter-broker listener), not by copying the log.
    follower = next(b for b in cluster.brokers if b.node_id != leader)
    follower.kill()
    shutil.rmtree(partition_dir(follower))
    follower.launch()
    cluster.node_ready(follower)
    wait_until(
        "the rebuilt follower back in the ISR",
        lambda: isr(admin) == {b.node_id for b in cluster.brokers},
        WAIT_S,
        interval_s=0.3,
        tolerate=(Exception,),
    )
    assert "from remote segment" in follower.log_path.read_text(errors="replace")
    assert local_bases(follower)[0] > 0, "the follower copied the whole log from the leader"

    # A SASL_SSL consumer from offset 0 (read_committed, librdkafka's default): the tiered and
    # local records in order, then the committed transaction; nothing else.
    consumer = confluent_kafka.Consumer(
        {
            **cluster.client(),
            "group.id": "secured-check",
            "enable.auto.commit": False,
            "auto.offset.reset": "error",
            "fetch.max.bytes": 8_388_608,
        }
    )
    got = consume_with(consumer, TOPIC, 0, RECORDS + TXN_RECORDS, deadline_s=WAIT_S)
    check_records("SASL_SSL consumer from 0", got[:RECORDS], env.plain)
    tail = [(offset, rec.value) for offset, rec in got[RECORDS:]]
    assert tail == list(enumerate(env.committed, start=env.committed_base))


def options(env: Env, password: str = ADMIN_PASSWORD, **extra: str) -> dict[str, str]:
    return {
        "kafka.bootstrap.servers": env.cluster.bootstrap_servers,
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": f'{SCRAM} required username="admin" password="{password}";',
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": str(env.cluster.tls.ca_pem),
        "subscribe": TOPIC,
        "sparklog.store.url": env.store.url,
        "includeHeaders": "true",
        **extra,
    }


def uncommitted(env: Env) -> list[tuple[int, bytes | None]]:
    plain = [(offset, rec.value) for offset, rec in enumerate(env.plain)]
    aborted = list(enumerate(env.aborted, start=RECORDS))
    committed = list(enumerate(env.committed, start=env.committed_base))
    return [*plain, *aborted, *committed]


@pytest.mark.parametrize(("read_from", "protocol"), [("both", "grpc"), ("brokers", "kafka")])
def test_spark_reads_tiered_and_hot_records(env: Env, read_from: str, protocol: str) -> None:
    """``both``/``grpc``: the tiered range from the store, the rest from the leader's read
    service (gRPC over TLS with a SCRAM login); ``brokers``/``kafka``: all of it with Kafka
    Fetch over SASL_SSL (the tiered range served by the leader from the store)."""
    read = options(env, **{"sparklog.read.from": read_from, "sparklog.hot.protocol": protocol})
    pieces = plan(parse_options(read))
    assert any(isinstance(p, ColdPiece) for p in pieces) == (read_from == "both"), pieces
    assert isinstance(pieces[-1], HotPiece), pieces
    df = batch_reader(env.spark, read).load()
    rows = spark_rows(df)
    check_records(f"spark {read_from}/{protocol}", rows[:RECORDS], env.plain)
    assert [(offset, rec.value) for offset, rec in rows] == uncommitted(env)


def test_spark_read_committed_skips_the_aborted_transaction(env: Env) -> None:
    df = batch_reader(env.spark, options(env, **{"kafka.isolation.level": "read_committed"}))
    rows = [
        (r["offset"], optional_bytes(r["value"])) for r in df.load().orderBy("offset").collect()
    ]
    want = [row for row in uncommitted(env) if not RECORDS <= row[0] < env.committed_base]
    assert rows == want


def test_spark_wrong_password_fails_quickly(env: Env) -> None:
    started = time.monotonic()
    with pytest.raises(Exception) as info:
        batch_reader(env.spark, options(env, password="Wr0ng-Pass")).load().count()
    elapsed = time.monotonic() - started
    text = str(info.value)
    assert "SASL authentication failed" in text or "invalid credentials" in text, text[-2000:]
    assert "Wr0ng-Pass" not in text and ADMIN_PASSWORD not in text
    assert elapsed < 30.0, f"the refused login took {elapsed:.1f}s to fail the query"
