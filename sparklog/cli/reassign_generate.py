"""``reassign-partitions --generate``: propose moving topics onto a broker list (Kafka's
ReassignPartitionsCommand.generateAssignment).

    sparklog reassign-partitions --bootstrap-server B --generate \\
        --topics-to-move-json-file F --broker-list 1,2,3

F is ``{"topics": [{"topic": "t"}], "version": 1}``. It prints ``Current partition replica
assignment`` and ``Proposed partition reassignment configuration``, each followed by
reassignment JSON (save the first to roll back, give the second to --execute). The proposal
keeps each partition's replication factor and spreads replicas with Kafka's rack-unaware
assignment (leaders round-robin over the list, followers shifted); Kafka picks the start
index and shift at random, this tool starts both at 0 so the proposal is repeatable.
Nothing is changed.
"""

from __future__ import annotations

import json

from sparklog.cli.reassign_partitions_tool import (
    ReassignError,
    TopicPartition,
    assignment_json,
    current_replicas,
)
from sparklog.client.connection import KafkaConnection


def parse_topics_to_move(text: str, source: str) -> list[str]:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReassignError(f"{source} is not valid JSON: {exc}") from None
    entries = document.get("topics") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ReassignError(f'{source}: expected {{"topics": [{{"topic": "t"}}], "version": 1}}')
    topics = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("topic"), str):
            raise ReassignError(f'{source}: each entry must be {{"topic": "name"}}')
        if entry["topic"] in topics:
            raise ReassignError(
                f"List of topics to reassign contains duplicate entries: {entry['topic']}"
            )
        topics.append(entry["topic"])
    return topics


def parse_broker_list(text: str) -> list[int]:
    try:
        brokers = [int(b) for b in text.split(",") if b.strip()]
    except ValueError:
        raise ReassignError(f"--broker-list expects broker ids like 1,2,3, got {text!r}") from None
    if len(set(brokers)) != len(brokers):
        raise ReassignError(f"Broker list contains duplicate entries: {text}")
    if not brokers:
        raise ReassignError("--broker-list is empty")
    return brokers


def propose(partitions: int, replication_factor: int, brokers: list[int]) -> list[list[int]]:
    """Kafka's rack-unaware assignReplicasToBrokers with start index and shift 0."""
    count = len(brokers)
    if replication_factor > count:
        raise ReassignError(
            f"Replication factor: {replication_factor} larger than available brokers: {count}."
        )
    shift = 0
    out = []
    for p in range(partitions):
        if p > 0 and p % count == 0:
            shift += 1
        first = p % count
        replicas = [brokers[first]]
        for j in range(replication_factor - 1):
            step = 1 + (shift + j) % (count - 1)
            replicas.append(brokers[(first + step) % count])
        out.append(replicas)
    return out


def generate(conn: KafkaConnection, topics: list[str], brokers: list[int]) -> None:
    metadata = conn.request(
        "Metadata",
        {
            "topics": [{"name": t} for t in topics],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )
    live = {b["node_id"] for b in metadata["brokers"]}
    unknown = sorted(set(brokers) - live)
    if unknown:
        raise ReassignError(f"Unknown broker id(s): {','.join(map(str, unknown))}")
    counts = {t["name"]: len(t["partitions"]) for t in metadata["topics"] if t["error_code"] == 0}
    wanted: list[TopicPartition] = []
    for topic in topics:
        if topic not in counts:
            raise ReassignError(f"Topic {topic} not found")
        wanted += [(topic, p) for p in range(counts[topic])]
    current = current_replicas(conn, wanted)
    proposed: dict[TopicPartition, list[int]] = {}
    for topic in topics:
        rf = len(current[(topic, 0)]) if counts[topic] else 0
        for p, replicas in enumerate(propose(counts[topic], rf, brokers)):
            proposed[(topic, p)] = replicas
    print("Current partition replica assignment")
    print(assignment_json({tp: current[tp] for tp in wanted}))
    print()
    print("Proposed partition reassignment configuration")
    print(assignment_json(proposed))
