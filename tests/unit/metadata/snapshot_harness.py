"""An in-process KRaft metadata cluster on real disks, for snapshot tests and the benchmark.

Each :class:`MetaNode` is a :class:`~sparklog.raft.core.RaftReplica` over a storage log and a
:class:`~sparklog.raft.snapshots.FileSnapshotStore` in its own directory, with a
:class:`~sparklog.metadata.loader.MetadataLoader` (the broker side) and, on voters that ask
for it, a :class:`~sparklog.controller.quorum_controller.QuorumController`. A
:class:`MetaCluster` moves messages between the nodes synchronously and drives a shared fake
clock, so a test runs real consensus, real fsyncs and real files without sockets.
"""

from __future__ import annotations

import random
from collections import deque
from pathlib import Path
from typing import Any

from sparklog.controller.quorum_controller import QuorumController
from sparklog.controller.result import ControllerResult
from sparklog.metadata.image import Endpoint
from sparklog.metadata.loader import MetadataLoader
from sparklog.metadata.records import MetadataRecord, decode_record
from sparklog.protocol.message_types import CreateTopicsRequest
from sparklog.raft import rpc
from sparklog.raft.core import RaftConfig, RaftReplica
from sparklog.raft.log import StorageReplicatedLog
from sparklog.raft.quorum_state import QuorumStateStore
from sparklog.raft.snapshots import FileSnapshotStore
from sparklog.raft.state import Leader
from sparklog.raft.voters import VoterSet
from sparklog.storage.config import LogConfig
from sparklog.storage.log import Log
from tests.sim.cluster import directory_of, voter_node

PLAINTEXT = [Endpoint("PLAINTEXT", "localhost", 9092, 0)]
CONFIG = RaftConfig(
    election_timeout_ms=100,
    fetch_timeout_ms=400,
    election_backoff_max_ms=50,
    request_timeout_ms=400,
    fetch_max_wait_ms=50,
    append_linger_ms=1,
    cluster_id="snapshot-test",
    max_fetch_bytes=1 << 20,
)


class MetaNode:
    def __init__(
        self,
        root: Path,
        node_id: int,
        voters: VoterSet,
        clock: list[int],
        *,
        controller: bool = False,
        segment_bytes: int = 1 << 20,
        config: RaftConfig = CONFIG,
    ) -> None:
        self.node_id = node_id
        directory = root / f"node-{node_id}" / "__cluster_metadata-0"
        self.log = Log.open(
            str(directory), LogConfig(internal_segment_bytes=segment_bytes), lambda: clock[0]
        )
        self.snapshots = FileSnapshotStore(str(directory))
        self.replica: RaftReplica[MetadataRecord] = RaftReplica(
            node_id,
            directory_of(node_id),
            StorageReplicatedLog(self.log),
            QuorumStateStore(directory / "quorum-state"),
            voters,
            config,
            random.Random(node_id),
            lambda: clock[0],
            decode=decode_record,
            bootstrap_ids=tuple(sorted(voters.ids)),
            snapshots=self.snapshots,
        )
        self.controller = (
            QuorumController(self.replica, rng=random.Random(7)) if controller else None
        )
        self.loader = MetadataLoader(cluster_id="c")
        self.replica.register_listener(self.loader)

    def close(self) -> None:
        self.log.close()


class MetaCluster:
    def __init__(self, root: Path, voters: int = 1, observers: int = 0, **node: Any) -> None:
        self.root = root
        self.clock = [1_700_000_000_000]
        self.voter_set = VoterSet.of(voter_node(i) for i in range(1, voters + 1))
        self.node_options = node
        self.nodes: dict[int, MetaNode] = {}
        for i in range(1, voters + observers + 1):
            self.start(i)

    def start(self, node_id: int) -> MetaNode:
        controller = node_id in self.voter_set.ids
        node = MetaNode(
            self.root, node_id, self.voter_set, self.clock, controller=controller,
            **self.node_options,
        )  # fmt: skip
        self.nodes[node_id] = node
        return node

    def stop(self, node_id: int) -> None:
        self.nodes.pop(node_id).close()

    def step(self, ms: int = 5) -> None:
        self.clock[0] += ms
        queue: deque[tuple[int, rpc.Outbound]] = deque()
        for node in list(self.nodes.values()):
            out, _ = node.replica.poll(self.clock[0])
            queue.extend((node.node_id, m) for m in out)
        while queue:
            source, message = queue.popleft()
            target = self.nodes.get(message.destination_id)
            if target is None:
                continue
            inbound: rpc.InboundRequest | rpc.InboundResponse
            if message.is_response:
                inbound = rpc.InboundResponse(
                    message.api_key, source, message.correlation_id, message.body
                )
            else:
                inbound = rpc.InboundRequest(
                    message.api_key, source, message.correlation_id, message.body
                )
            out = target.replica.handle(self.clock[0], inbound)
            queue.extend((target.node_id, m) for m in out)

    def leader(self) -> MetaNode:
        for _ in range(2000):
            for node in self.nodes.values():
                role = node.replica.quorum.role
                if (
                    isinstance(role, Leader)
                    and node.controller is not None
                    and node.controller.is_active
                ):
                    return node
            self.step()
        raise AssertionError("no leader elected")

    def settle(self, max_steps: int = 2000) -> None:
        """Step until every node has applied everything the leader has committed."""
        leader = self.leader()
        for _ in range(max_steps):
            self.step()
            end = leader.replica.log_end_offset
            if leader.replica.high_watermark == end and all(
                n.loader.image.provenance.last_offset + 1 >= end for n in self.nodes.values()
            ):
                return
        raise AssertionError("the cluster did not settle")

    def run(self, op: ControllerResult[Any]) -> Any:
        leader = self.leader()
        assert leader.controller is not None
        leader.controller.append(op)
        self.settle()
        return op.response

    def bootstrap(self, brokers: int = 3) -> None:
        leader = self.leader()
        controller = leader.controller
        assert controller is not None
        self.run(controller.bootstrap_result())
        for broker in range(1, brokers + 1):
            self.run(
                controller.register_broker(
                    broker, bytes([broker]) * 16, PLAINTEXT, f"rack-{broker % 3}"
                )
            )

    def create_topics(self, names: list[str], partitions: int, rf: int) -> list[dict[str, Any]]:
        controller = self.leader().controller
        assert controller is not None
        request: CreateTopicsRequest = {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": rf,
                    "assignments": [],
                    "configs": [],
                }
                for name in names
            ],
            "timeout_ms": 1000,
            "validate_only": False,
        }
        response = self.run(controller.create_topics(request, 7))
        return [{**topic} for topic in response["topics"]]

    def close(self) -> None:
        for node in self.nodes.values():
            node.close()
