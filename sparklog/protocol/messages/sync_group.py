"""SyncGroup (key 14): members fetch their assignment; the leader's request carries them all.

Declared from Apache Kafka's SyncGroupRequest/Response (validVersions 0-5, flexible 4+).
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "SyncGroupRequest",
    "0-5",
    "4+",
    field("group_id", "string"),
    field("generation_id", "int32"),
    field("member_id", "string"),
    field("group_instance_id", "string", "3+", nullable="3+", default=None),
    field("protocol_type", "string", "5+", nullable="5+", default=None, ignorable=True),
    field("protocol_name", "string", "5+", nullable="5+", default=None, ignorable=True),
    array(
        "assignments",
        field("member_id", "string"),
        field("assignment", "bytes"),
    ),
)

RESPONSE = message(
    "SyncGroupResponse",
    "0-5",
    "4+",
    field("throttle_time_ms", "int32", "1+", ignorable=True),
    field("error_code", "int16"),
    field("protocol_type", "string", "5+", nullable="5+", default=None, ignorable=True),
    field("protocol_name", "string", "5+", nullable="5+", default=None, ignorable=True),
    field("assignment", "bytes"),
)

SYNC_GROUP = api(14, "SyncGroup", "0-5", REQUEST, RESPONSE)
