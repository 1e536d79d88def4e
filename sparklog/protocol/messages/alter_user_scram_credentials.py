"""AlterUserScramCredentials (key 51, KIP-554): delete or upsert users' SCRAM credentials; the
client sends the salted password, never the password.

Declared from Apache Kafka's AlterUserScramCredentialsRequest/Response definitions.
"""

from sparklog.protocol.schema import api, array, field, message

REQUEST = message(
    "AlterUserScramCredentialsRequest",
    "0",
    "0+",
    array("deletions", field("name", "string"), field("mechanism", "int8")),
    array(
        "upsertions",
        field("name", "string"),
        field("mechanism", "int8"),
        field("iterations", "int32"),
        field("salt", "bytes"),
        field("salted_password", "bytes"),
    ),
)

RESPONSE = message(
    "AlterUserScramCredentialsResponse",
    "0",
    "0+",
    field("throttle_time_ms", "int32"),
    array(
        "results",
        field("user", "string"),
        field("error_code", "int16"),
        field("error_message", "string", nullable="0+", default=None),
    ),
)

ALTER_USER_SCRAM_CREDENTIALS = api(
    51,
    "AlterUserScramCredentials",
    "0",
    REQUEST,
    RESPONSE,
    listeners=frozenset({"broker", "controller"}),
)
