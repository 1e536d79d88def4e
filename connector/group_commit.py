"""Committing a stream's progress to a Kafka consumer group (``sparklog.commitOffsetsToGroup``).

Spark's Kafka source keeps its offsets only in the query checkpoint, so lag tools
(``kafka-consumer-groups``, confluent-kafka's ``list_consumer_group_offsets``, Burrow...) see
nothing. With the option set, the stream reader's ``commit(end)`` (called by Spark once a
micro-batch's end is durably recorded, at the start of the next trigger) calls
:func:`commit_group_offsets`: FindCoordinator for the group, then one OffsetCommit of the end
offsets, as a standalone (simple) consumer does (generation -1, no member id): the group must
have no active members, as for any commit from outside a group.

Contract: offsets are ``{(topic, partition): next offset to read}``; a failure (coordinator
unavailable, a partition error) raises :class:`GroupCommitError` naming the group and the
error codes. The checkpoint stays the source of truth: a restarted query resumes from it, not
from the group.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from sparklog.client.connection import KafkaConnection
from sparklog.connector.security import SecurityParams, client_security
from sparklog.protocol.messages import API_BY_NAME

__all__ = ["GroupCommitError", "commit_group_offsets"]

_GROUP_KEY: Final = 0
_COMMIT_METADATA: Final = "sparklog structured streaming"
#: v10 names topics by id; the highest version naming them by name.
_MAX_BY_NAME: Final = 9


class GroupCommitError(RuntimeError):
    """The group's coordinator refused or could not take the commit."""


def _coordinator(conn: KafkaConnection, group_id: str) -> tuple[str, int]:
    version = conn.version_for(API_BY_NAME["FindCoordinator"])
    body: dict[str, Any] = {"key": group_id, "key_type": _GROUP_KEY, "coordinator_keys": [group_id]}
    answer = conn.request("FindCoordinator", body, version=version)
    found = answer["coordinators"][0] if version >= 4 else answer
    if found["error_code"] != 0:
        raise GroupCommitError(
            f"no coordinator for group {group_id!r}: error code {found['error_code']}"
        )
    return str(found["host"]), int(found["port"])


def commit_group_offsets(
    bootstrap_servers: str,
    group_id: str,
    offsets: Mapping[tuple[str, int], int],
    security: SecurityParams = (),
) -> None:
    """Commit ``offsets`` for ``group_id`` through the group's coordinator."""
    if not offsets:
        return
    bootstrap = bootstrap_servers.split(",")[0].strip()
    client = "sparklog-connector"
    secured = client_security(security)
    with KafkaConnection.connect(bootstrap, client_id=client, security=secured) as conn:
        host, port = _coordinator(conn, group_id)
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        topics.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "committed_offset": offset,
                "committed_leader_epoch": -1,
                "committed_metadata": _COMMIT_METADATA,
            }
        )
    body = {
        "group_id": group_id,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [{"name": t, "partitions": parts} for t, parts in topics.items()],
    }
    with KafkaConnection(host, port, client_id=client, security=secured) as coordinator:
        api = API_BY_NAME["OffsetCommit"]
        version = min(coordinator.version_for(api), _MAX_BY_NAME)
        answer = coordinator.request("OffsetCommit", body, version=version)
    errors = [
        f"{t['name']}-{p['partition_index']}: {p['error_code']}"
        for t in answer["topics"]
        for p in t["partitions"]
        if p["error_code"] != 0
    ]
    if errors:
        raise GroupCommitError(
            f"committing offsets for group {group_id!r} failed (error codes {', '.join(errors)})"
        )
