"""SaslHandshake (key 17): the client names its SASL mechanism (Kafka's v0-1; v1 is KIP-152).

Declared from Apache Kafka's SaslHandshakeRequest/Response definitions. Served on SASL
listeners only; after a v1 handshake the SASL tokens travel in SaslAuthenticate requests.
"""

from sparklog.protocol.schema import api, field, message

REQUEST = message("SaslHandshakeRequest", "0-1", "none", field("mechanism", "string"))

RESPONSE = message(
    "SaslHandshakeResponse",
    "0-1",
    "none",
    field("error_code", "int16"),
    field("mechanisms", "[]string"),
)

SASL_HANDSHAKE = api(
    17, "SaslHandshake", "0-1", REQUEST, RESPONSE, listeners=frozenset({"broker", "controller"})
)
