"""A blocking admin client of a Kafka cluster (the CLI's tools and the web console use it).

Contract:
- :class:`AdminClient` connects to the first answering address of the bootstrap list. A listener
  that does not serve Metadata is a controller listener: it is refused with a message naming the
  right flag. Requests go to the bootstrap broker, a partition's leader, or a group's
  coordinator (FindCoordinator), each connection opened once and reused; TLS and SASL come from
  Kafka's client settings (:func:`command_security`).
- Every failure a user can fix is an :class:`AdminError` whose message says what is wrong and
  what to do; the CLI prints it (``sparklog.cli.admin_client.CliError`` is the same class).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from sparklog.client.connection import KafkaConnection
from sparklog.client.pool import ConnectionPool
from sparklog.config_keys import ConfigError
from sparklog.protocol.errors import error_name
from sparklog.protocol.message_types import MetadataResponse, MetadataResponseTopicsPartitions
from sparklog.security.client_security import ClientSecurity, client_security_from_properties

TopicPartition = tuple[str, int]

# ListOffsets special timestamps (Kafka's OffsetSpec): latest, earliest, max-timestamp,
# earliest-local (KIP-405), latest-tiered (KIP-1005).
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5

_METADATA_KEY = 3


class AdminError(Exception):
    """A user-facing failure; the message says what is wrong and what to do."""


def command_security(
    props: Mapping[str, str], path: str = "--command-config"
) -> ClientSecurity | None:
    """TLS/SASL from Kafka client settings (security.protocol, sasl.*, ssl.*)."""
    try:
        return client_security_from_properties(props)
    except (ValueError, ConfigError) as exc:
        raise AdminError(f"{path}: {exc}") from None


def kafka_error(code: int, message: str | None = None) -> str:
    name = error_name(code)
    return f"{name}: {message}" if message else name


class AdminClient:
    """Blocking admin requests against a cluster, reached through ``bootstrap``."""

    def __init__(self, bootstrap: str, command_config: Mapping[str, str] | None = None) -> None:
        settings = dict(command_config or {})
        try:
            timeout_s = int(settings.get("request.timeout.ms", "30000")) / 1000.0
        except ValueError:
            raise AdminError("request.timeout.ms must be a number of milliseconds") from None
        self.bootstrap = bootstrap
        self._pool = ConnectionPool(
            settings.get("client.id", "sparklog-cli"), timeout_s, command_security(settings)
        )
        self._timeout_s = timeout_s
        self.conn = self._first_reachable(bootstrap)

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._pool.close()

    def _first_reachable(self, bootstrap: str) -> KafkaConnection:
        addresses = [a.strip() for a in bootstrap.split(",") if a.strip()]
        if not addresses or any(":" not in a for a in addresses):
            raise AdminError(
                f"--bootstrap-server expects HOST:PORT[,HOST:PORT...], got {bootstrap!r}"
            )
        try:
            address, conn = self._pool.first(addresses)
        except ConnectionError as exc:
            raise AdminError(
                f"{exc}; is a broker listening there? Check --bootstrap-server."
            ) from None
        if _METADATA_KEY not in conn.versions:
            raise AdminError(
                f"{address} is a controller listener, not a broker's: it does not answer "
                "Metadata. Point --bootstrap-server at a broker's client listener (see "
                "listeners / advertised.listeners in its server.properties); controllers "
                "are reached with `sparklog metadata-quorum --bootstrap-controller`."
            )
        return conn

    def request(self, api_name: str, body: Mapping[str, Any], version: int | None = None) -> Any:
        return self.conn.request(api_name, body, version)

    def broker(self, node_id: int) -> KafkaConnection:
        """A connection to broker ``node_id`` (its address from Metadata)."""
        for broker in self.metadata([])["brokers"]:
            if broker["node_id"] == node_id:
                return self._pool.get(f"{broker['host']}:{broker['port']}")
        raise AdminError(f"broker {node_id} is not in the cluster's metadata")

    def metadata(self, topics: Iterable[str] | None) -> Any:
        return self.request(
            "Metadata",
            {
                "topics": None if topics is None else [{"name": t} for t in topics],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )

    def topic_partitions(
        self, topics: Iterable[str] | None
    ) -> dict[str, list[MetadataResponseTopicsPartitions]]:
        """Existing topics -> their partitions (Metadata's entries, sorted by index)."""
        out: dict[str, list[MetadataResponseTopicsPartitions]] = {}
        for topic in cast("MetadataResponse", self.metadata(topics))["topics"]:
            name = topic["name"]  # null only for a topic asked for by id, which we never do
            if topic["error_code"] == 0 and name is not None:
                out[name] = sorted(topic["partitions"], key=lambda p: p["partition_index"])
        return out

    def coordinator(self, key: str, key_type: int = 0) -> KafkaConnection:
        """The coordinator of a group (``key_type`` 0) or transactional id (1)."""
        response = self.request(
            "FindCoordinator", {"key": key, "key_type": key_type, "coordinator_keys": [key]}
        )
        entry = response["coordinators"][0] if response.get("coordinators") else response
        if entry["error_code"] != 0:
            kind = "group" if key_type == 0 else "transactional id"
            error = kafka_error(entry["error_code"])
            raise AdminError(f"no coordinator for {kind} {key!r}: {error}")
        return self._pool.get(f"{entry['host']}:{entry['port']}")

    def list_offsets(
        self,
        partitions: Iterable[TopicPartition],
        timestamp: int | Mapping[TopicPartition, int],
        isolation_level: int = 0,
    ) -> dict[TopicPartition, tuple[int, int]]:
        """(offset, error code) per partition for a ListOffsets spec, asked of each leader."""
        wanted = list(partitions)
        leaders: dict[int, list[TopicPartition]] = {}
        result: dict[TopicPartition, tuple[int, int]] = {}
        layout = self.topic_partitions(sorted({t for t, _ in wanted}))
        for tp in wanted:
            entry = next((p for p in layout.get(tp[0], []) if p["partition_index"] == tp[1]), None)
            if entry is None:
                result[tp] = (-1, 3)  # UNKNOWN_TOPIC_OR_PARTITION
            elif entry["leader_id"] < 0:
                result[tp] = (-1, 5)  # LEADER_NOT_AVAILABLE
            else:
                leaders.setdefault(entry["leader_id"], []).append(tp)
        for leader, tps in leaders.items():
            by_topic: dict[str, list[int]] = {}
            for topic, index in tps:
                by_topic.setdefault(topic, []).append(index)
            response = self.broker(leader).request(
                "ListOffsets",
                {
                    "replica_id": -1,
                    "isolation_level": isolation_level,
                    "topics": [
                        {
                            "name": topic,
                            "partitions": [
                                {
                                    "partition_index": i,
                                    "current_leader_epoch": -1,
                                    "timestamp": timestamp
                                    if isinstance(timestamp, int)
                                    else timestamp[(topic, i)],
                                }
                                for i in indexes
                            ],
                        }
                        for topic, indexes in by_topic.items()
                    ],
                    "timeout_ms": int(self._timeout_s * 1000),
                },
            )
            for topic in response["topics"]:
                for p in topic["partitions"]:
                    result[(topic["name"], p["partition_index"])] = (p["offset"], p["error_code"])
        return result
