"""Realistic Kafka messages for the declaration tests, filled the way clients and brokers do.

Each case is ``(api key, "request" | "response", version, message dict)``. Builders take the
version and set only the fields that version has (a field set outside its versions makes
``test_declarations`` fail), so they double as a record of which field arrived when.
"""

from __future__ import annotations

import uuid
from typing import Any

Message = dict[str, Any]
Case = tuple[int, str, int, Message]


def _record_batch(count: int) -> bytes:
    """A real v2 record batch (what a producer puts in ``records``)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    for i in range(count):
        builder.append(
            i, timestamp=1_700_000_000_000 + i, key=b"k%d" % i, value=b"v" * i, headers=[]
        )
    return bytes(builder.build())


BATCH = _record_batch(3)
TOPIC_ID = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8").bytes
DIR_ID = uuid.UUID("12345678-1234-5678-1234-567812345678").bytes


def _consumer_fetch(version: int) -> Message:
    topic: Message = {"topic_id": TOPIC_ID} if version >= 13 else {"topic": "events"}
    topic["partitions"] = [
        {
            "partition": p,
            "fetch_offset": 1000 + p,
            "partition_max_bytes": 1048576,
            **({"log_start_offset": -1} if version >= 5 else {}),
            **({"current_leader_epoch": 7} if version >= 9 else {}),
            **({"last_fetched_epoch": 6} if version >= 12 else {}),
        }
        for p in range(3)
    ]
    msg: Message = {
        "max_wait_ms": 500,
        "min_bytes": 1,
        "max_bytes": 52428800,
        "isolation_level": 1,
        "topics": [topic],
    }
    if version >= 7:
        msg.update(session_id=0, session_epoch=-1, forgotten_topics_data=[])
    if version >= 11:
        msg["rack_id"] = "rack-a"
    if version <= 14:
        msg["replica_id"] = -1
    return msg


def _follower_fetch(version: int) -> Message:
    msg = _consumer_fetch(version)
    msg["replica_state"] = {"replica_id": 2, "replica_epoch": 17}
    msg["cluster_id"] = "q1Sh-9_ISia_zwGINzRvyQ"
    for partition in msg["topics"][0]["partitions"]:
        if version >= 17:
            partition["replica_directory_id"] = DIR_ID
        if version >= 18:
            partition["high_watermark"] = 990
    return msg


def fetch_response(version: int) -> Message:
    partitions: list[Message] = [
        {
            "partition_index": 0,
            "error_code": 0,
            "high_watermark": 1003,
            "last_stable_offset": 1003,
            "aborted_transactions": [{"producer_id": 4000, "first_offset": 990}],
            "records": BATCH,
        },
        {
            "partition_index": 1,
            "error_code": 74,  # FENCED_LEADER_EPOCH
            "high_watermark": -1,
            "last_stable_offset": -1,
            "aborted_transactions": None,
            "records": None,
        },
    ]
    for partition in partitions:
        if version >= 5:
            partition["log_start_offset"] = 0
        if version >= 11:
            partition["preferred_read_replica"] = -1
    if version >= 12:
        partitions[0]["diverging_epoch"] = {"epoch": 5, "end_offset": 950}
        partitions[1]["current_leader"] = {"leader_id": 3, "leader_epoch": 8}
        partitions[1]["snapshot_id"] = {"end_offset": 400, "epoch": 2}
    topic: Message = {"topic_id": TOPIC_ID} if version >= 13 else {"topic": "events"}
    topic["partitions"] = partitions
    msg: Message = {"throttle_time_ms": 0, "responses": [topic]}
    if version >= 7:
        msg.update(error_code=0, session_id=1234)
    if version >= 16:
        msg["node_endpoints"] = [{"node_id": 3, "host": "broker-3", "port": 9092, "rack": None}]
    return msg


def _produce(version: int) -> Message:
    topic: Message = {"topic_id": TOPIC_ID} if version >= 13 else {"name": "events"}
    topic["partition_data"] = [{"index": 0, "records": BATCH}, {"index": 1, "records": BATCH}]
    return {"transactional_id": None, "acks": -1, "timeout_ms": 30000, "topic_data": [topic]}


def _produce_response(version: int) -> Message:
    partition: Message = {
        "index": 0,
        "error_code": 0,
        "base_offset": 42,
        "log_append_time_ms": -1,
    }
    if version >= 5:
        partition["log_start_offset"] = 0
    if version >= 8:
        partition["record_errors"] = [{"batch_index": 1, "batch_index_error_message": None}]
        partition["error_message"] = None
    if version >= 10:
        partition["current_leader"] = {"leader_id": 1, "leader_epoch": 4}
    topic: Message = {"topic_id": TOPIC_ID} if version >= 13 else {"name": "events"}
    topic["partition_responses"] = [partition]
    msg: Message = {"responses": [topic], "throttle_time_ms": 0}
    if version >= 10:
        msg["node_endpoints"] = [{"node_id": 1, "host": "localhost", "port": 9092, "rack": "r1"}]
    return msg


def _metadata_response(version: int) -> Message:
    partition: Message = {
        "error_code": 0,
        "partition_index": 0,
        "leader_id": 1,
        "replica_nodes": [1, 2, 3],
        "isr_nodes": [1, 2],
    }
    topic: Message = {"error_code": 0, "name": "events", "partitions": [partition]}
    msg: Message = {
        "brokers": [{"node_id": 1, "host": "localhost", "port": 9092}],
        "topics": [topic],
    }
    if version >= 1:
        msg["brokers"][0]["rack"] = None
        msg["controller_id"] = 1
        topic["is_internal"] = False
    if version >= 2:
        msg["cluster_id"] = "q1Sh-9_ISia_zwGINzRvyQ"
    if version >= 3:
        msg["throttle_time_ms"] = 0
    if version >= 5:
        partition["offline_replicas"] = [3]
    if version >= 7:
        partition["leader_epoch"] = 3
    if version >= 8:
        topic["topic_authorized_operations"] = 0x5F8
    if 8 <= version <= 10:
        msg["cluster_authorized_operations"] = -(2**31)
    if version >= 10:
        topic["topic_id"] = TOPIC_ID
    if version >= 13:
        msg["error_code"] = 0
    return msg


def _describe_configs_response(config: Message) -> Message:
    """A DescribeConfigs response: topic ``t`` with the one ``config`` (its version's fields)."""
    return {
        "throttle_time_ms": 0,
        "results": [
            {
                "error_code": 0,
                "error_message": None,
                "resource_type": 2,
                "resource_name": "t",
                "configs": [config],
            }
        ],
    }


def _named(key: int, side: str, version: int, msg: Message) -> Case:
    return key, side, version, msg


CASES: list[Case] = [
    # Produce: the oldest served version, the first flexible one and topic ids.
    _named(0, "request", 3, _produce(3)),
    _named(0, "request", 9, _produce(9)),
    _named(0, "request", 13, _produce(13)),
    _named(0, "request", 11, {**_produce(11), "transactional_id": "tx-1"}),
    _named(0, "response", 3, _produce_response(3)),
    _named(0, "response", 8, _produce_response(8)),
    _named(0, "response", 10, _produce_response(10)),
    _named(0, "response", 13, _produce_response(13)),
    # Fetch: consumers (librdkafka sends v11/v12 names, Java v17 ids) and followers.
    _named(1, "request", 4, _consumer_fetch(4)),
    _named(1, "request", 11, _consumer_fetch(11)),
    _named(1, "request", 12, _consumer_fetch(12)),
    _named(1, "request", 17, _consumer_fetch(17)),
    _named(1, "request", 15, _follower_fetch(15)),
    _named(1, "request", 18, _follower_fetch(18)),
    _named(
        1,
        "request",
        13,
        {
            **_consumer_fetch(13),
            "session_id": 99,
            "session_epoch": 3,
            "forgotten_topics_data": [{"topic_id": TOPIC_ID, "partitions": [1, 2]}],
        },
    ),
    _named(1, "response", 4, fetch_response(4)),
    _named(1, "response", 12, fetch_response(12)),
    _named(1, "response", 16, fetch_response(16)),
    _named(1, "response", 18, fetch_response(18)),
    # ListOffsets
    _named(
        2,
        "request",
        1,
        {
            "replica_id": -1,
            "topics": [{"name": "t", "partitions": [{"partition_index": 0, "timestamp": -2}]}],
        },
    ),
    _named(
        2,
        "request",
        10,
        {
            "replica_id": -1,
            "isolation_level": 1,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {"partition_index": 0, "current_leader_epoch": 4, "timestamp": -3}
                    ],
                }
            ],
            "timeout_ms": 30000,
        },
    ),
    _named(
        2,
        "response",
        7,
        {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "error_code": 0,
                            "timestamp": 1_700_000_000_000,
                            "offset": 55,
                            "leader_epoch": 4,
                        }
                    ],
                }
            ],
        },
    ),
    # Metadata: v0 (empty list = all topics), v1 (null = all), v12 (by id), v4 auto-create.
    _named(3, "request", 0, {"topics": []}),
    _named(3, "request", 1, {"topics": None}),
    _named(
        3,
        "request",
        4,
        {"topics": [{"name": "events"}], "allow_auto_topic_creation": False},
    ),
    _named(
        3,
        "request",
        12,
        {
            "topics": [{"topic_id": TOPIC_ID, "name": None}],
            "allow_auto_topic_creation": True,
            "include_topic_authorized_operations": True,
        },
    ),
    _named(3, "request", 13, {"topics": [{"topic_id": TOPIC_ID, "name": "events"}]}),
    _named(3, "response", 0, _metadata_response(0)),
    _named(3, "response", 1, _metadata_response(1)),
    _named(3, "response", 9, _metadata_response(9)),
    _named(3, "response", 12, _metadata_response(12)),
    _named(3, "response", 13, _metadata_response(13)),
    # FindCoordinator: single key (v3) and batched keys (v4+).
    _named(10, "request", 3, {"key": "group-1", "key_type": 0}),
    _named(10, "request", 6, {"key_type": 1, "coordinator_keys": ["tx-1", "tx-2"]}),
    _named(
        10,
        "response",
        2,
        {"error_code": 0, "error_message": None, "node_id": 1, "host": "h", "port": 9092},
    ),
    _named(
        10,
        "response",
        6,
        {
            "coordinators": [
                {"key": "tx-1", "node_id": 1, "host": "h", "port": 9092, "error_code": 0},
                {"key": "tx-2", "node_id": -1, "host": "", "port": -1, "error_code": 15},
            ]
        },
    ),
    # CreateTopics
    _named(
        19,
        "request",
        7,
        {
            "topics": [
                {
                    "name": "events",
                    "num_partitions": 3,
                    "replication_factor": 3,
                    "configs": [{"name": "cleanup.policy", "value": "compact"}],
                },
                {
                    "name": "placed",
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "assignments": [{"partition_index": 0, "broker_ids": [1, 2]}],
                },
            ],
            "timeout_ms": 30000,
            "validate_only": False,
        },
    ),
    _named(
        19,
        "request",
        2,
        {
            "topics": [{"name": "e", "num_partitions": 1, "replication_factor": 1}],
            "timeout_ms": 5000,
        },
    ),
    _named(
        19,
        "response",
        7,
        {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "name": "events",
                    "topic_id": TOPIC_ID,
                    "error_code": 0,
                    "error_message": None,
                    "topic_config_error_code": 29,
                    "num_partitions": 3,
                    "replication_factor": 3,
                    "configs": [
                        {
                            "name": "retention.ms",
                            "value": "604800000",
                            "read_only": False,
                            "config_source": 5,
                            "is_sensitive": False,
                        }
                    ],
                },
                {"name": "bad", "error_code": 36, "error_message": "exists", "configs": None},
            ],
        },
    ),
    # DeleteTopics: names (v1-5) and ids (v6).
    _named(20, "request", 1, {"topic_names": ["a", "b"], "timeout_ms": 30000}),
    _named(
        20,
        "request",
        6,
        {"topics": [{"name": None, "topic_id": TOPIC_ID}, {"name": "b"}], "timeout_ms": 30000},
    ),
    _named(
        20,
        "response",
        6,
        {
            "throttle_time_ms": 0,
            "responses": [
                {"name": None, "topic_id": TOPIC_ID, "error_code": 100, "error_message": None}
            ],
        },
    ),
    # DeleteRecords
    _named(
        21,
        "request",
        2,
        {
            "topics": [{"name": "t", "partitions": [{"partition_index": 0, "offset": -1}]}],
            "timeout_ms": 30000,
        },
    ),
    _named(
        21,
        "response",
        0,
        {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "name": "t",
                    "partitions": [{"partition_index": 0, "low_watermark": 10, "error_code": 0}],
                }
            ],
        },
    ),
    # InitProducerId
    _named(22, "request", 0, {"transactional_id": None, "transaction_timeout_ms": 60000}),
    _named(
        22,
        "request",
        5,
        {
            "transactional_id": "tx-1",
            "transaction_timeout_ms": 60000,
            "producer_id": 4000,
            "producer_epoch": 2,
        },
    ),
    _named(
        22,
        "response",
        5,
        {"throttle_time_ms": 0, "error_code": 0, "producer_id": 4000, "producer_epoch": 3},
    ),
    # OffsetForLeaderEpoch: consumer (v2) and follower (v4).
    _named(
        23,
        "request",
        2,
        {
            "topics": [
                {
                    "topic": "t",
                    "partitions": [{"partition": 0, "current_leader_epoch": 5, "leader_epoch": 4}],
                }
            ]
        },
    ),
    _named(
        23,
        "request",
        4,
        {
            "replica_id": 2,
            "topics": [
                {
                    "topic": "t",
                    "partitions": [{"partition": 0, "current_leader_epoch": 5, "leader_epoch": 4}],
                }
            ],
        },
    ),
    _named(
        23,
        "response",
        4,
        {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "topic": "t",
                    "partitions": [
                        {"error_code": 0, "partition": 0, "leader_epoch": 4, "end_offset": 777}
                    ],
                }
            ],
        },
    ),
    # DescribeConfigs
    _named(
        32,
        "request",
        4,
        {
            "resources": [
                {"resource_type": 2, "resource_name": "t", "configuration_keys": None},
                {"resource_type": 4, "resource_name": "1", "configuration_keys": ["log.dirs"]},
            ],
            "include_synonyms": True,
            "include_documentation": True,
        },
    ),
    _named(
        32,
        "response",
        1,
        _describe_configs_response(
            {
                "name": "retention.ms",
                "value": "1000",
                "read_only": False,
                "config_source": 1,
                "is_sensitive": False,
                "synonyms": [{"name": "log.retention.ms", "value": None, "source": 5}],
            }
        ),
    ),
    _named(
        32,
        "response",
        4,
        _describe_configs_response(
            {
                "name": "cleanup.policy",
                "value": "delete",
                "read_only": False,
                "config_source": 5,
                "is_sensitive": False,
                "synonyms": [],
                "config_type": 7,
                "documentation": None,
            }
        ),
    ),
    # AlterConfigs and IncrementalAlterConfigs
    _named(
        33,
        "request",
        2,
        {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": "t",
                    "configs": [{"name": "retention.ms", "value": "1000"}],
                }
            ],
            "validate_only": True,
        },
    ),
    _named(
        33,
        "response",
        0,
        {
            "throttle_time_ms": 0,
            "responses": [
                {"error_code": 0, "error_message": None, "resource_type": 2, "resource_name": "t"}
            ],
        },
    ),
    _named(
        44,
        "request",
        1,
        {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": "t",
                    "configs": [
                        {"name": "retention.ms", "config_operation": 0, "value": "1000"},
                        {"name": "segment.ms", "config_operation": 1, "value": None},
                    ],
                }
            ],
            "validate_only": False,
        },
    ),
    _named(
        44,
        "response",
        0,
        {
            "throttle_time_ms": 0,
            "responses": [
                {"error_code": 40, "error_message": "bad", "resource_type": 2, "resource_name": "t"}
            ],
        },
    ),
    # DescribeLogDirs: every partition (null topics) and the v4 capacity fields.
    _named(35, "request", 1, {"topics": None}),
    _named(35, "request", 4, {"topics": [{"topic": "t", "partitions": [0, 1]}]}),
    _named(
        35,
        "response",
        4,
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "results": [
                {
                    "error_code": 0,
                    "log_dir": "/var/lib/sparklog",
                    "topics": [
                        {
                            "name": "t",
                            "partitions": [
                                {
                                    "partition_index": 0,
                                    "partition_size": 4096,
                                    "offset_lag": 0,
                                    "is_future_key": False,
                                }
                            ],
                        }
                    ],
                    "total_bytes": 10_000_000,
                    "usable_bytes": 5_000_000,
                }
            ],
        },
    ),
    # CreatePartitions
    _named(
        37,
        "request",
        3,
        {
            "topics": [
                {"name": "t", "count": 6, "assignments": None},
                {"name": "u", "count": 2, "assignments": [{"broker_ids": [1, 2]}]},
            ],
            "timeout_ms": 30000,
            "validate_only": False,
        },
    ),
    _named(
        37,
        "response",
        0,
        {
            "throttle_time_ms": 0,
            "results": [{"name": "t", "error_code": 37, "error_message": "too few"}],
        },
    ),
    # ElectLeaders
    _named(
        43,
        "request",
        2,
        {
            "election_type": 0,
            "topic_partitions": [{"topic": "t", "partitions": [0, 1]}],
            "timeout_ms": 60000,
        },
    ),
    _named(43, "request", 0, {"topic_partitions": None, "timeout_ms": 60000}),
    _named(
        43,
        "response",
        2,
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "replica_election_results": [
                {
                    "topic": "t",
                    "partition_result": [
                        {"partition_id": 0, "error_code": 84, "error_message": "none needed"}
                    ],
                }
            ],
        },
    ),
    # DescribeCluster
    _named(
        60,
        "request",
        2,
        {
            "include_cluster_authorized_operations": False,
            "endpoint_type": 1,
            "include_fenced_brokers": True,
        },
    ),
    _named(60, "request", 0, {"include_cluster_authorized_operations": True}),
    _named(
        60,
        "response",
        2,
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "error_message": None,
            "endpoint_type": 1,
            "cluster_id": "q1Sh-9_ISia_zwGINzRvyQ",
            "controller_id": 1,
            "brokers": [
                {"broker_id": 1, "host": "h1", "port": 9092, "rack": None, "is_fenced": False},
                {"broker_id": 2, "host": "h2", "port": 9092, "rack": "r2", "is_fenced": True},
            ],
            "cluster_authorized_operations": -(2**31),
        },
    ),
    # AlterConfigs (legacy whole-resource replace), as kafka-python and aiokafka send it.
    _named(
        33,
        "request",
        0,
        {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": "events",
                    "configs": [
                        {"name": "retention.ms", "value": "5000"},
                        {"name": "cleanup.policy", "value": None},
                    ],
                }
            ],
            "validate_only": False,
        },
    ),
    _named(
        33,
        "response",
        2,
        {
            "throttle_time_ms": 0,
            "responses": [
                {
                    "error_code": 40,
                    "error_message": "Invalid value abc for retention.ms",
                    "resource_type": 2,
                    "resource_name": "events",
                }
            ],
        },
    ),
    # DescribeProducers
    _named(61, "request", 0, {"topics": [{"name": "events", "partition_indexes": [0, 1]}]}),
    _named(
        61,
        "response",
        0,
        {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "name": "events",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "error_code": 0,
                            "error_message": None,
                            "active_producers": [
                                {
                                    "producer_id": 4000,
                                    "producer_epoch": 2,
                                    "last_sequence": 41,
                                    "last_timestamp": 1_700_000_000_000,
                                    "coordinator_epoch": 3,
                                    "current_txn_start_offset": 17,
                                }
                            ],
                        },
                        {
                            "partition_index": 1,
                            "error_code": 6,
                            "error_message": None,
                            "active_producers": [],
                        },
                    ],
                }
            ],
        },
    ),
    # ListGroups v5: the KIP-848 type filter and a consumer group in the answer.
    _named(16, "request", 5, {"states_filter": ["Stable"], "types_filter": ["consumer"]}),
    _named(
        16,
        "response",
        5,
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "groups": [
                {
                    "group_id": "g1",
                    "protocol_type": "consumer",
                    "group_state": "Stable",
                    "group_type": "consumer",
                }
            ],
        },
    ),
    # ListConfigResources: v0 (ListClientMetricsResources) and v1 (KIP-1142).
    _named(74, "request", 0, {}),
    _named(74, "request", 1, {"resource_types": [2, 4]}),
    _named(
        74,
        "response",
        0,
        {"throttle_time_ms": 0, "error_code": 0, "config_resources": [{"resource_name": "m"}]},
    ),
    _named(
        74,
        "response",
        1,
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "config_resources": [
                {"resource_name": "1", "resource_type": 4},
                {"resource_name": "events", "resource_type": 2},
            ],
        },
    ),
    # DescribeTopicPartitions (KIP-966): a resumed page, ELR fields, the next cursor.
    _named(
        75,
        "request",
        0,
        {
            "topics": [{"name": "a"}, {"name": "b"}],
            "response_partition_limit": 2,
            "cursor": {"topic_name": "a", "partition_index": 1},
        },
    ),
    _named(75, "request", 0, {"topics": [], "response_partition_limit": 2000, "cursor": None}),
    _named(
        75,
        "response",
        0,
        {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "error_code": 0,
                    "name": "a",
                    "topic_id": TOPIC_ID,
                    "is_internal": False,
                    "partitions": [
                        {
                            "error_code": 0,
                            "partition_index": 1,
                            "leader_id": 2,
                            "leader_epoch": 5,
                            "replica_nodes": [1, 2, 3],
                            "isr_nodes": [2],
                            "eligible_leader_replicas": [3],
                            "last_known_elr": [1],
                            "offline_replicas": [],
                        }
                    ],
                    "topic_authorized_operations": -(2**31),
                }
            ],
            "next_cursor": {"topic_name": "b", "partition_index": 0},
        },
    ),
]
