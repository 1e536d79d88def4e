"""``sparklog delete-records``: kafka-delete-records.sh, moving partitions' log start offsets.

    sparklog delete-records --bootstrap-server B --offset-json-file F

F is Kafka's ``{"partitions": [{"topic": "t", "partition": 0, "offset": 5}], "version": 1}``;
offset -1 means the high watermark. Each partition's DeleteRecords (21) goes to its leader.
Output is Kafka's: ``Executing records delete operation``, ``Records delete operation
completed:``, then ``partition: t-0\\tlow_watermark: 5`` or ``partition: t-0\\terror: ...``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from sparklog.cli.admin_client import (
    AdminClient,
    CliError,
    TopicPartition,
    add_connection_args,
    kafka_error,
    open_admin,
    run_tool,
)


def add_delete_records_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "delete-records",
        help="delete records below an offset (kafka-delete-records.sh)",
        description="Move partitions' log start offsets forward (DeleteRecords).",
    )
    add_connection_args(parser)
    parser.add_argument(
        "--offset-json-file",
        required=True,
        help='{"partitions":[{"topic":"t","partition":0,"offset":5}],"version":1}',
    )
    parser.set_defaults(run=run_delete_records)


def parse_offset_json(text: str, source: str) -> dict[TopicPartition, int]:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"{source} is not valid JSON: {exc}") from None
    entries = document.get("partitions") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise CliError(f'{source}: expected {{"partitions": [...], "version": 1}}')
    out: dict[TopicPartition, int] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            raise CliError(f"{source}: each partition must be a JSON object")
        topic, partition, offset = entry.get("topic"), entry.get("partition"), entry.get("offset")
        if (
            not isinstance(topic, str)
            or not isinstance(partition, int)
            or not isinstance(offset, int)
        ):
            raise CliError(f"{source}: each entry needs topic (string), partition and offset")
        if (topic, partition) in out:
            raise CliError(
                f"Offset json file contains duplicate topic partitions: {topic}-{partition}"
            )
        out[(topic, partition)] = offset
    if not out:
        raise CliError(f"{source}: the partition list is empty")
    return out


def delete_records(
    admin: AdminClient, offsets: dict[TopicPartition, int]
) -> dict[TopicPartition, tuple[int, int]]:
    """(low watermark, error code) per partition."""
    layout = admin.topic_partitions(sorted({t for t, _ in offsets}))
    by_leader: dict[int, list[TopicPartition]] = {}
    result: dict[TopicPartition, tuple[int, int]] = {}
    for tp in offsets:
        entry = next((p for p in layout.get(tp[0], []) if p["partition_index"] == tp[1]), None)
        if entry is None:
            result[tp] = (-1, 3)
        else:
            by_leader.setdefault(entry["leader_id"], []).append(tp)
    for leader, tps in by_leader.items():
        by_topic: dict[str, list[int]] = {}
        for topic, index in tps:
            by_topic.setdefault(topic, []).append(index)
        response = admin.broker(leader).request(
            "DeleteRecords",
            {
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {"partition_index": i, "offset": offsets[(topic, i)]} for i in indexes
                        ],
                    }
                    for topic, indexes in by_topic.items()
                ],
                "timeout_ms": 30000,
            },
        )
        for topic in response["topics"]:
            for p in topic["partitions"]:
                tp = (topic["name"], p["partition_index"])
                result[tp] = (p["low_watermark"], p["error_code"])
    return result


def run_delete_records(args: argparse.Namespace) -> int:
    def body() -> int:
        try:
            with open(args.offset_json_file, encoding="utf-8") as source:
                offsets = parse_offset_json(source.read(), args.offset_json_file)
        except OSError as exc:
            raise CliError(f"cannot read {args.offset_json_file}: {exc.strerror}") from None
        print("Executing records delete operation")
        with open_admin(args) as admin:
            result = delete_records(admin, offsets)
        print("Records delete operation completed:")
        failed = False
        for (topic, index), (low, code) in result.items():
            if code:
                failed = True
                print(f"partition: {topic}-{index}\terror: {kafka_error(code)}")
            else:
                print(f"partition: {topic}-{index}\tlow_watermark: {low}")
        return 1 if failed else 0

    return run_tool("Error: ", body)
