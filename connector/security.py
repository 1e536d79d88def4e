"""The connector's side of a secured cluster: Spark's ``kafka.security.protocol``,
``kafka.sasl.*`` and ``kafka.ssl.*`` options for brokers and the hot read service.

Contract: :func:`security_params` keeps the security settings of a source's ``kafka.*``
options (prefix removed) as a sorted tuple, which travels inside the input partitions to the
executors (like Spark's own Kafka options); :func:`client_security` turns it into the
:class:`~sparklog.security.client_security.ClientSecurity` every Kafka connection and gRPC call
uses, built once per process and settings. Invalid settings raise ``ValueError`` naming the
key, never a value; the pieces' ``repr`` never shows them.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from sparklog.security.client_security import ClientSecurity, client_security_from_properties

SecurityParams = tuple[tuple[str, str], ...]

_PREFIXES = ("security.protocol", "sasl.", "ssl.")


def security_params(kafka_params: Mapping[str, str]) -> SecurityParams:
    """The security settings among ``kafka_params`` (keys without ``kafka.``), validated."""
    params = tuple(sorted((k, v) for k, v in kafka_params.items() if k.startswith(_PREFIXES)))
    client_security(params)  # a bad setting fails at planning, on the driver
    return params


@lru_cache(maxsize=32)
def client_security(params: SecurityParams) -> ClientSecurity | None:
    return client_security_from_properties(dict(params))
