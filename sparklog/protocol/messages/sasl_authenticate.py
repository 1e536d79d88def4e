"""SaslAuthenticate (key 36): one SASL token each way (KIP-152); v1+ carries KIP-368's
session lifetime.

Declared from Apache Kafka's SaslAuthenticateRequest/Response definitions.
"""

from sparklog.protocol.schema import api, field, message

REQUEST = message("SaslAuthenticateRequest", "0-2", "2+", field("auth_bytes", "bytes"))

RESPONSE = message(
    "SaslAuthenticateResponse",
    "0-2",
    "2+",
    field("error_code", "int16"),
    field("error_message", "string", nullable="0+", default=None),
    field("auth_bytes", "bytes"),
    field("session_lifetime_ms", "int64", "1+", default=0, ignorable=True),
)

SASL_AUTHENTICATE = api(
    36, "SaslAuthenticate", "0-2", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"})
)
