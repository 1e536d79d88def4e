"""``sparklog metadata-quorum``: describe, add-controller, remove-controller (as Kafka's tool).

- ``describe --status`` prints the quorum as Kafka does (LeaderId, LeaderEpoch, HighWatermark,
  MaxFollowerLag, MaxFollowerLagTimeMs, CurrentVoters with ``id@endpoints``,
  CurrentObservers); ``describe --replication`` prints one row per replica (NodeId,
  DirectoryId, LogEndOffset, Lag, LastFetchTimestamp, LastCaughtUpTimestamp, Status).
- ``add-controller --command-config controller.properties`` adds the (running, formatted with
  ``--no-initial-controllers``) controller that file describes: its ``node.id``, the directory
  id in its ``metadata.log.dir``, and its controller listener endpoints.
- ``remove-controller --controller-id N --controller-directory-id D`` removes a voter.

Requests go to ``--bootstrap-controller`` (a controller listener) or ``--bootstrap-server`` (a
broker, which forwards them); DescribeQuorum, AddRaftVoter and RemoveRaftVoter must reach the
KRaft leader, so the tool asks DescribeQuorum first and follows the leader named in the answer
(``nodes`` carries the voters' endpoints). Failures print ``Error: ...`` and exit 1.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Mapping
from typing import Any, cast

from sparklog.client.connection import KafkaConnection
from sparklog.config import ServerConfig, controller_endpoints
from sparklog.protocol.errors import ErrorCode, ProtocolError
from sparklog.protocol.kafka_uuid import uuid_from_str, uuid_to_str
from sparklog.protocol.message_types import (
    AddRaftVoterRequest,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    DescribeQuorumResponseTopicsPartitions,
    DescribeQuorumResponseTopicsPartitionsCurrentVoters,
    DescribeQuorumResponseTopicsPartitionsObservers,
    RemoveRaftVoterRequest,
)
from sparklog.storage.meta_properties import read_meta_properties

METADATA_TOPIC = "__cluster_metadata"
_ATTEMPTS = 20


class QuorumCommandError(Exception):
    pass


def _code_name(code: int) -> str:
    return ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)


def _describe_body() -> DescribeQuorumRequest:
    return {"topics": [{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]}


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host or "localhost", int(port)


class QuorumClient:
    """Talks to the KRaft leader, found through any controller (or a forwarding broker)."""

    def __init__(self, bootstrap: str, *, via_broker: bool) -> None:
        self.bootstrap = bootstrap
        self.via_broker = via_broker
        # Kafka's tools take HOST:PORT[,HOST:PORT...]: a failed address moves on to the next.
        self._seeds = [_split(a.strip()) for a in bootstrap.split(",") if a.strip()]
        if not self._seeds:
            raise QuorumCommandError(f"expected HOST:PORT[,HOST:PORT...], got {bootstrap!r}")
        self._next_seed = 0

    def _seed(self) -> tuple[str, int]:
        address = self._seeds[self._next_seed % len(self._seeds)]
        self._next_seed += 1
        return address

    def cluster_id(self) -> str:
        """DescribeCluster's cluster id (Kafka's --status prints it first); a controller
        answers it for endpoint type 2 (KIP-919), a broker for type 1."""
        last = "no answer"
        for _ in self._seeds:
            try:
                response = self._on(
                    self._seed(),
                    "DescribeCluster",
                    {
                        "include_cluster_authorized_operations": False,
                        "endpoint_type": 1 if self.via_broker else 2,
                    },
                )
            except (OSError, ConnectionError, ProtocolError) as exc:
                last = str(exc)
                continue
            if response.get("error_code"):
                code = int(response["error_code"])
                raise QuorumCommandError(response.get("error_message") or _code_name(code))
            return str(response["cluster_id"])
        raise QuorumCommandError(f"could not describe the cluster: {last}")

    def _on(self, address: tuple[str, int], api: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``api``'s answer from ``address``: the decoded dict, which callers narrow."""
        with KafkaConnection(*address, timeout_s=30.0) as conn:
            response: dict[str, Any] = conn.request(api, body)
            return response

    def describe(
        self, attempts: int = _ATTEMPTS
    ) -> tuple[DescribeQuorumResponseTopicsPartitions, dict[int, list[str]], tuple[str, int]]:
        """The leader's DescribeQuorum partition, the voters' endpoints, the leader address."""
        address = self._seed()
        last_error = "no answer"
        failures = 0
        hops = 0
        while failures < attempts:
            try:
                answer = self._on(address, "DescribeQuorum", _describe_body())
                response = cast("DescribeQuorumResponse", answer)
            except (OSError, ConnectionError) as exc:
                last_error = str(exc)
                address = self._seed()
                failures += 1
                if failures < attempts:
                    time.sleep(0.5)
                continue
            nodes = {
                int(n["node_id"]): [
                    f"{e['name']}://{e['host']}:{e['port']}" for e in n["listeners"]
                ]
                for n in response.get("nodes") or ()
            }
            if response.get("error_code"):
                raise QuorumCommandError(
                    response.get("error_message") or _code_name(response["error_code"])
                )
            partition = response["topics"][0]["partitions"][0]
            code = int(partition["error_code"])
            if code == 0:
                return partition, nodes, address
            leader_id = int(partition.get("leader_id", -1))
            last_error = partition.get("error_message") or _code_name(code)
            leader = next(
                (n for n in response.get("nodes") or () if int(n["node_id"]) == leader_id), None
            )
            if leader is not None and leader["listeners"] and not self.via_broker and hops < 3:
                # Following the leader the answer names is not a failed attempt.
                first = leader["listeners"][0]
                address = (str(first["host"]), int(first["port"]))
                hops += 1
                continue
            hops = 0
            address = self._seed()
            failures += 1
            if failures < attempts:
                time.sleep(0.5)
        raise QuorumCommandError(f"could not describe the quorum: {last_error}")

    def leader_request(self, api: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``api`` (a voter change) sent to the KRaft leader: its decoded answer."""
        last = ""
        for _ in range(_ATTEMPTS):
            _, _, address = self.describe()
            response = self._on(address, api, body)
            code = int(response.get("error_code", 0))
            if code == 0:
                return response
            last = response.get("error_message") or _code_name(code)
            if code not in (int(ErrorCode.NOT_LEADER_OR_FOLLOWER), int(ErrorCode.NOT_CONTROLLER)):
                break
            time.sleep(0.5)
        raise QuorumCommandError(f"{api} failed: {last}")


_ZERO_UUID = bytes(16)
# A voter or an observer of DescribeQuorum's answer (the same fields).
_Replica = (
    DescribeQuorumResponseTopicsPartitionsCurrentVoters
    | DescribeQuorumResponseTopicsPartitionsObservers
)


def _voter_text(replica: _Replica, nodes: dict[int, list[str]]) -> str:
    """MetadataQuorumCommand's Node.toString: ``{"id": 1, "directoryId": "..." (null for the
    zero uuid), "endpoints": [...]}`` (endpoints only when DescribeQuorum's nodes has them)."""
    directory = bytes(replica["replica_directory_id"])
    entry: dict[str, Any] = {
        "id": replica["replica_id"],
        "directoryId": None if directory == _ZERO_UUID else uuid_to_str(directory),
    }
    if nodes.get(replica["replica_id"]):
        entry["endpoints"] = nodes[replica["replica_id"]]
    return json.dumps(entry)


def _leader_end(partition: DescribeQuorumResponseTopicsPartitions) -> int:
    leader_id = int(partition["leader_id"])
    leader = next((v for v in partition["current_voters"] if v["replica_id"] == leader_id), None)
    return int(leader["log_end_offset"]) if leader else int(partition["high_watermark"])


def status_lines(
    partition: DescribeQuorumResponseTopicsPartitions, nodes: dict[int, list[str]], cluster_id: str
) -> list[str]:
    """MetadataQuorumCommand.handleDescribeStatus: the max-lag follower is the first voter
    with the smallest log end offset (the leader itself when none is behind: lag time 0)."""
    leader_id = int(partition["leader_id"])
    voters = partition["current_voters"]
    observers = partition["observers"]
    leader = next((v for v in voters if v["replica_id"] == leader_id), None)
    laggard = min(voters, key=lambda v: int(v["log_end_offset"]), default=None)
    max_lag = _leader_end(partition) - int(laggard["log_end_offset"]) if laggard else 0
    if leader is None or laggard is None or laggard is leader:
        max_lag_ms = 0
    elif int(leader["last_caught_up_timestamp"]) >= 0 <= int(laggard["last_caught_up_timestamp"]):
        max_lag_ms = int(leader["last_caught_up_timestamp"]) - int(
            laggard["last_caught_up_timestamp"]
        )
    else:
        max_lag_ms = -1
    rows = [
        ("ClusterId", cluster_id),
        ("LeaderId", str(leader_id)),
        ("LeaderEpoch", str(partition["leader_epoch"])),
        ("HighWatermark", str(partition["high_watermark"])),
        ("MaxFollowerLag", str(max_lag)),
        ("MaxFollowerLagTimeMs", str(max_lag_ms)),
        ("CurrentVoters", "[" + ", ".join(_voter_text(v, nodes) for v in voters) + "]"),
        ("CurrentObservers", "[" + ", ".join(_voter_text(o, nodes) for o in observers) + "]"),
    ]
    return [f"{name + ':':<24}{value}" for name, value in rows]


def replication_lines(partition: DescribeQuorumResponseTopicsPartitions) -> list[str]:
    """MetadataQuorumCommand.handleDescribeReplication through ToolsUtils.prettyPrintTable:
    the leader, the other voters, then the observers; every cell padded to its column's width
    and followed by a tab."""
    leader_id = int(partition["leader_id"])
    voters = partition["current_voters"]
    leader_end = _leader_end(partition)
    header = (
        "NodeId",
        "DirectoryId",
        "LogEndOffset",
        "Lag",
        "LastFetchTimestamp",
        "LastCaughtUpTimestamp",
        "Status",
    )
    rows: list[tuple[str, ...]] = [header]
    replicas = [(v, "Leader") for v in voters if v["replica_id"] == leader_id]
    replicas += [(v, "Follower") for v in voters if v["replica_id"] != leader_id]
    replicas += [(o, "Observer") for o in partition["observers"]]
    for replica, status in replicas:
        rows.append(
            (
                str(replica["replica_id"]),
                uuid_to_str(bytes(replica["replica_directory_id"])),
                str(replica["log_end_offset"]),
                str(leader_end - int(replica["log_end_offset"])),
                str(replica["last_fetch_timestamp"]),
                str(replica["last_caught_up_timestamp"]),
                status,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return [
        "".join(cell.ljust(w) + "\t" for cell, w in zip(row, widths, strict=True)) for row in rows
    ]


def _add_controller_body(config_path: str) -> AddRaftVoterRequest:
    config = ServerConfig.from_file(config_path)
    if not config.is_controller:
        raise QuorumCommandError(f"{config_path} does not describe a controller (process.roles)")
    meta = read_meta_properties(config.metadata_log_dir)
    if meta is None or not meta.directory_id:
        raise QuorumCommandError(
            f"{config.metadata_log_dir} is not formatted: run sparklog storage format "
            "--no-initial-controllers first"
        )
    names = set(config.controller_listener_names)
    listeners = controller_endpoints(config)
    if not listeners:
        raise QuorumCommandError(f"no listener of {sorted(names)} in {config_path}")
    return {
        "cluster_id": meta.cluster_id,
        "timeout_ms": 30000,
        "voter_id": config.node_id,
        "voter_directory_id": uuid_from_str(meta.directory_id),
        "listeners": [{"name": e["name"], "host": e["host"], "port": e["port"]} for e in listeners],
        "ack_when_committed": True,
    }


def run_metadata_quorum(args: argparse.Namespace) -> int:
    via_broker = args.bootstrap_server is not None
    client = QuorumClient(args.bootstrap_server or args.bootstrap_controller, via_broker=via_broker)
    try:
        if args.command == "describe":
            partition, nodes, _ = client.describe()
            if args.replication:
                lines = replication_lines(partition)
            else:
                lines = status_lines(partition, nodes, client.cluster_id())
            print("\n".join(lines))
        elif args.command == "add-controller":
            if not args.command_config:
                raise QuorumCommandError("add-controller needs --command-config")
            body = _add_controller_body(args.command_config)
            client.leader_request("AddRaftVoter", body)
            print(
                f"Added controller {body['voter_id']} with directory id "
                f"{uuid_to_str(body['voter_directory_id'])} and endpoints: "
                + ", ".join(f"{e['name']}://{e['host']}:{e['port']}" for e in body["listeners"])
            )
        else:
            remove: RemoveRaftVoterRequest = {
                "cluster_id": None,
                "voter_id": args.controller_id,
                "voter_directory_id": uuid_from_str(args.controller_directory_id),
            }
            client.leader_request("RemoveRaftVoter", remove)
            print(
                f"Removed KRaft controller {args.controller_id} with directory id "
                f"{args.controller_directory_id}"
            )
    except (QuorumCommandError, OSError, ValueError) as exc:
        print(f"Error: {exc}")
        return 1
    return 0


def add_metadata_quorum_parser(sub: Any) -> None:
    quorum = sub.add_parser("metadata-quorum", help="describe and change the KRaft quorum")
    target = quorum.add_mutually_exclusive_group(required=True)
    target.add_argument(
        "--bootstrap-server", metavar="HOST:PORT[,HOST:PORT...]", help="brokers (comma-separated)"
    )
    target.add_argument(
        "--bootstrap-controller",
        metavar="HOST:PORT[,HOST:PORT...]",
        help="controller listeners (comma-separated)",
    )
    quorum.add_argument(
        "--command-config", help="add-controller: the new controller's server.properties"
    )
    commands = quorum.add_subparsers(dest="command", required=True)
    describe = commands.add_parser("describe", help="describe the quorum")
    what = describe.add_mutually_exclusive_group(required=True)
    what.add_argument("--status", action="store_true", help="leader, epoch, voters, observers")
    what.add_argument("--replication", action="store_true", help="one row per replica")
    add = commands.add_parser("add-controller", help="add a running controller as a voter")
    add.add_argument(
        "--command-config",
        default=argparse.SUPPRESS,
        help="the new controller's server.properties (also accepted before the command)",
    )
    remove = commands.add_parser("remove-controller", help="remove a voter")
    remove.add_argument("--controller-id", type=int, required=True)
    remove.add_argument("--controller-directory-id", required=True)
    quorum.set_defaults(run=run_metadata_quorum)
