"""Whether this broker serves the KIP-932 share-group APIs now, and the answer when it does not.

Kafka's ``isShareGroupProtocolEnabled``: share groups are on when the cluster has finalized
``share.version`` at 1 or more (a feature the controller finalizes: bootstrapped by
``storage format --feature share.version=1`` or a release version that carries it, changed
with UpdateFeatures), or when the internal broker config ``group.share.enable`` is set (Kafka
4.1's way of turning them on without the feature). Since KIP-1237 share groups no longer
depend on ``group.coordinator.rebalance.protocols``.

Contract: the share-group APIs (76-79, 83-87, 90-92) are advertised by ApiVersions only while
:func:`share_groups_enabled` holds, and a request for one while it does not is answered as
Kafka's ``getErrorResponse(UNSUPPORTED_VERSION)`` would be (:func:`share_disabled_response`):
every group, topic or partition it names carries the error, and nothing is served. The
check reads the metadata image each time, so a feature change takes effect without a restart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, cast

from sparklog.config import ServerConfig
from sparklog.coordinator.consumer_apis import dead_group_entry
from sparklog.metadata.image import SHARE_VERSION_FEATURE, MetadataImage
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.headers import Request
from sparklog.protocol.message_types import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    ReadShareGroupStateRequest,
    ReadShareGroupStateResponse,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupDescribeResponseGroups,
)

# KIP-932 share-group APIs: ShareGroupHeartbeat .. ShareAcknowledge, the share-group state
# RPCs between brokers, and the share-group offset admin APIs.
SHARE_GROUP_API_KEYS: Final = frozenset({76, 77, 78, 79, 83, 84, 85, 86, 87, 90, 91, 92})
# share.version levels this broker implements (ApiVersions' supported features).
SUPPORTED_SHARE_VERSIONS: Final = (0, 1)
_MESSAGE: Final = "The version of API is not supported."


def share_groups_enabled(config: ServerConfig, image: MetadataImage) -> bool:
    """Kafka's ``isShareGroupProtocolEnabled`` (see the module docstring)."""
    if image.features.levels.get(SHARE_VERSION_FEATURE, 0) >= 1:
        return True
    return bool(config.get("group.share.enable"))


def share_disabled_response(request: Request) -> Mapping[str, object]:
    """The UNSUPPORTED_VERSION answer to a share-group request (key in SHARE_GROUP_API_KEYS);
    ``request.body`` is that key's request TypedDict (narrowed per branch)."""
    key, body = request.api.key, request.body
    code = int(ErrorCode.UNSUPPORTED_VERSION)
    if key == 77:
        groups: list[ShareGroupDescribeResponseGroups] = []
        for group_id in cast("ShareGroupDescribeRequest", body).get("group_ids") or ():
            entry = dead_group_entry(group_id)
            entry["error_code"] = code
            entry["error_message"] = _MESSAGE
            groups.append({**entry, "members": []})
        described: ShareGroupDescribeResponse = {"throttle_time_ms": 0, "groups": groups}
        return described
    if key == 90:
        offsets = cast("DescribeShareGroupOffsetsRequest", body)
        described_offsets: DescribeShareGroupOffsetsResponse = {
            "throttle_time_ms": 0,
            "groups": [
                {
                    "group_id": g["group_id"],
                    "topics": [],
                    "error_code": code,
                    "error_message": _MESSAGE,
                }
                for g in offsets.get("groups") or ()
            ],
        }
        return described_offsets
    if 83 <= key <= 87:
        # The five share-group state RPCs: the same topics/partitions and results shapes.
        state = cast("ReadShareGroupStateRequest", body)
        states: ReadShareGroupStateResponse = {
            "results": [
                {
                    "topic_id": t["topic_id"],
                    "partitions": [
                        {"partition": p["partition"], "error_code": code, "error_message": _MESSAGE}
                        for p in t.get("partitions") or ()
                    ],
                }
                for t in state.get("topics") or ()
            ]
        }
        return states
    out: dict[str, object] = {"throttle_time_ms": 0, "error_code": code, "error_message": _MESSAGE}
    if key in (78, 79, 91, 92):
        out["responses"] = []
    return out
