"""DescribeUserScramCredentials (key 50, KIP-554): which SCRAM mechanisms and iteration counts
each user has (never salts or keys).

Declared from Apache Kafka's DescribeUserScramCredentialsRequest/Response definitions.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "DescribeUserScramCredentialsRequest",
    "0",
    "0+",
    array("users", field("name", "string"), nullable="0+", default=None),
)

RESPONSE = message(
    "DescribeUserScramCredentialsResponse",
    "0",
    "0+",
    field("throttle_time_ms", "int32"),
    field("error_code", "int16"),
    field("error_message", "string", nullable="0+", default=None),
    array(
        "results",
        field("user", "string"),
        field("error_code", "int16"),
        field("error_message", "string", nullable="0+", default=None),
        array("credential_infos", field("mechanism", "int8"), field("iterations", "int32")),
    ),
)

DESCRIBE_USER_SCRAM_CREDENTIALS = api(
    50,
    "DescribeUserScramCredentials",
    "0",
    REQUEST,
    RESPONSE,
    listeners=frozenset({"broker", "controller"}),
)
