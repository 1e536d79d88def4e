"""QuorumController: the only writer of cluster metadata.

Rules (Kafka's QuorumController, single-threaded):

- Every operation (``create_topics``, ``register_broker``, ...) is a pure function of the
  controller's current image and its arguments, returning a :class:`ControllerResult` (records
  + response). Nothing changes until :meth:`QuorumController.run` appends the records through
  the :class:`~sparklog.raft.client.RaftClient`; the controller's image advances only when the
  records come back committed (``handle_commit``). So the in-memory state is, by construction,
  a replay of the committed log: a restart, or a standby replaying the same log, ends with an
  identical image.
- Only the raft leader is active. ``run`` refuses with NOT_CONTROLLER otherwise, and refuses a
  result computed on another image than the current one (operations must be computed and run
  back to back, which the single driver thread guarantees).
- On activation with an empty metadata log the controller appends the bootstrap records
  (FeatureLevelRecord metadata.version from ``bootstrap.checkpoint``) first, before anything
  else may be written.

Usage (the node's driver)::

    controller = QuorumController(raft, config=server_config, bootstrap=bootstrap)
    raft.start(); controller.activate()
    response = controller.run(controller.create_topics(request, version))
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from sparklog.config import ServerConfig
from sparklog.controller.brokers import (
    BrokerHeartbeats,
    assign_replicas_to_dirs,
    fence_records,
    heartbeat,
    move_leaderships,
)
from sparklog.controller.configs import (
    TopicConfigPolicy,
    alter_configs,
    incremental_alter_configs,
)
from sparklog.controller.feature_control import update_features
from sparklog.controller.partition_change import alter_partition
from sparklog.controller.reassignment import (
    alter_partition_reassignments,
    list_partition_reassignments,
)
from sparklog.controller.replication_control import (
    ReplicationContext,
    balance_partition_leaders,
    elect_leaders,
    elect_offline_partitions,
    elr_enabled,
    remove_broker_from_isrs,
)
from sparklog.controller.result import ControllerResult
from sparklog.controller.scram_control import alter_user_scram_credentials
from sparklog.controller.security_control import alter_client_quotas, create_acls, delete_acls
from sparklog.controller.topics import (
    TopicDefaults,
    create_partitions,
    create_topics,
    delete_topics,
)
from sparklog.metadata.bootstrap import BOOTSTRAP_FEATURES, BootstrapMetadata
from sparklog.metadata.delta import MetadataDelta
from sparklog.metadata.image import (
    METADATA_VERSION_FEATURE,
    BrokerRegistration,
    Endpoint,
    MetadataImage,
    Provenance,
)
from sparklog.metadata.records import MetadataRecord, make_record
from sparklog.metadata.snapshot_image import image_from_snapshot
from sparklog.protocol import message_types as mt
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.kafka_uuid import random_uuid_bytes
from sparklog.raft.client import (
    CommittedBatch,
    LeaderAndEpoch,
    LoadedSnapshot,
    NotLeaderError,
    RaftClient,
)

R = TypeVar("R")

PRODUCER_ID_BLOCK_SIZE = 1000


class QuorumController:
    def __init__(
        self,
        raft: RaftClient[MetadataRecord],
        *,
        config: ServerConfig | None = None,
        bootstrap: BootstrapMetadata | None = None,
        defaults: TopicDefaults | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self._raft = raft
        self._node_id = raft.node_id
        self._bootstrap = bootstrap or BootstrapMetadata.from_release_version(
            None, "the default bootstrap"
        )
        if defaults is None:
            defaults = TopicDefaults()
            if config is not None:
                defaults.num_partitions = int(config.get("num.partitions"))
                defaults.replication_factor = int(config.get("default.replication.factor"))
                defaults.delete_topic_enable = bool(config.get("delete.topic.enable"))
                defaults.config_policy = TopicConfigPolicy(
                    config.default_log_config(),
                    config.explicit_topic_defaults(),
                    bool(config.get("remote.log.storage.system.enable")),
                )
        defaults.new_topic_id = self._new_topic_id
        if rng is not None:
            defaults.rng = rng
        self._defaults = defaults
        self._image = MetadataImage()
        self._leader = LeaderAndEpoch(-1, 0)
        session_ms = int(config.get("broker.session.timeout.ms")) if config else 9000
        # Preferred-leader rebalancing (auto.leader.rebalance.enable and friends), run by the
        # ControllerDriver's periodic task.
        self.imbalance_percentage = (
            int(config.get("leader.imbalance.per.broker.percentage")) if config else 10
        )
        self.auto_leader_rebalance = (
            bool(config.get("auto.leader.rebalance.enable")) if config else True
        )
        self.imbalance_check_interval_ms = (
            int(config.get("leader.imbalance.check.interval.seconds")) * 1000 if config else 300_000
        )
        self.sessions = BrokerHeartbeats(session_ms)
        self.elections_from_elr = 0
        self.unclean_elections = 0
        raft.register_listener(self)

    # -- state -------------------------------------------------------------------------------

    @property
    def image(self) -> MetadataImage:
        """The committed state this controller decides on."""
        return self._image

    @property
    def is_active(self) -> bool:
        return self._leader.leader_id == self._node_id

    @property
    def defaults(self) -> TopicDefaults:
        return self._defaults

    @property
    def replication(self) -> ReplicationContext:
        """The current image with the topic config policy: what leader/ISR decisions read."""
        return ReplicationContext(self._image, self._defaults.config_policy)

    def handle_commit(self, batch: CommittedBatch[MetadataRecord]) -> None:
        delta = MetadataDelta(self._image)
        count_elections = self.is_active
        for record in batch.records:
            if count_elections and record.name == "PartitionChangeRecord":
                self._count_election(delta, record.data)
            delta.replay(record)
        self._image = delta.apply(
            Provenance(batch.last_offset, batch.epoch, batch.append_timestamp)
        )

    def _count_election(self, delta: MetadataDelta, change: Mapping[str, Any]) -> None:
        """Kafka's ElectionFromEligibleLeaderReplicasPerSec / UncleanLeaderElectionsPerSec,
        counted on the active controller as its records commit."""
        leader = int(change.get("leader", -2))
        if leader < 0:
            return
        topic = delta.topics.get(bytes(change["topic_id"]))
        before = (
            topic.partition(change["partition_id"])
            if topic is not None
            else self._image.topics.get_partition(bytes(change["topic_id"]), change["partition_id"])
        )
        if before is None or before.leader == leader:
            return
        if leader in before.elr and leader not in before.isr:
            self.elections_from_elr += 1
        elif change.get("leader_recovery_state") == 1 and change.get("isr") == [leader]:
            self.unclean_elections += 1

    def handle_load_snapshot(self, snapshot: LoadedSnapshot[MetadataRecord]) -> None:
        """A snapshot replaces the whole image (a restart, or a standby far behind)."""
        self._image = image_from_snapshot(snapshot, self._image.cluster_id)

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self._leader = leader

    # -- driving -----------------------------------------------------------------------------

    def _result(self, records: Sequence[MetadataRecord], response: R) -> ControllerResult[R]:
        return ControllerResult(tuple(records), response, self._image.provenance.last_offset)

    def run(self, op: ControllerResult[R] | Callable[[], ControllerResult[R]]) -> R:
        """Append the result's records (if any), wait for their commit, return the response.

        Only for a raft client that commits inside ``schedule_append`` (one voter); with a
        real quorum the :class:`~sparklog.controller.driver.ControllerDriver` appends with
        :meth:`append` and awaits the commit.
        """
        result = op() if callable(op) else op
        self.append(result)
        return result.response

    def check_active(self) -> None:
        if not self.is_active:
            raise KafkaApiError(
                ErrorCode.NOT_CONTROLLER, f"Node {self._node_id} is not the active controller."
            )

    def append(self, result: ControllerResult[Any]) -> int:
        """Append the result's records as one atomic batch; their last offset (-1: none)."""
        self.check_active()
        if not result.records:
            return -1
        if result.image_offset != self._image.provenance.last_offset:
            raise RuntimeError(
                "ControllerResult computed on image at offset "
                f"{result.image_offset}, but the image is at "
                f"{self._image.provenance.last_offset}"
            )
        try:
            return self._raft.schedule_append(
                self._leader.epoch, [record.encode() for record in result.records]
            )
        except NotLeaderError as exc:
            # A replica restarted as the resigned leader of its last epoch still names
            # itself; only the raft client knows it cannot append.
            raise KafkaApiError(ErrorCode.NOT_CONTROLLER, str(exc)) from None

    @property
    def leader(self) -> LeaderAndEpoch:
        return self._leader

    def bootstrap_result(self) -> ControllerResult[None]:
        """The bootstrap records if the log has none yet (nothing otherwise)."""
        if METADATA_VERSION_FEATURE in self._image.features.levels:
            return self._result((), None)
        return self._result(self._bootstrap.records, None)

    def activate(self) -> None:
        """Called once this node leads: bootstrap an empty metadata log."""
        if not self.is_active:
            raise KafkaApiError(ErrorCode.NOT_CONTROLLER, "activate() on an inactive controller")
        if METADATA_VERSION_FEATURE not in self._image.features.levels:
            self.run(self._result(self._bootstrap.records, None))

    def _new_topic_id(self) -> bytes:
        while True:
            topic_id = random_uuid_bytes()
            if self._image.topics.get_topic_by_id(topic_id) is None:
                return topic_id

    # -- operations (pure: compute records + response) ----------------------------------------

    def create_topics(
        self, request: mt.CreateTopicsRequest, version: int
    ) -> ControllerResult[mt.CreateTopicsResponse]:
        records, response = create_topics(self._image, request, self._defaults)
        return self._result(records, response)

    def auto_create_topic(
        self, name: str, num_partitions: int = -1, replication_factor: int = -1
    ) -> ControllerResult[mt.CreateTopicsResponseTopics]:
        """Metadata-request auto-creation: one topic with broker defaults; the response is
        that topic's CreateTopics result (``error_code``, ``topic_id``, ...)."""
        request: mt.CreateTopicsRequest = {
            "topics": [
                {
                    "name": name,
                    "num_partitions": num_partitions,
                    "replication_factor": replication_factor,
                    "assignments": [],
                    "configs": [],
                }
            ],
            "timeout_ms": 0,
            "validate_only": False,
        }
        records, response = create_topics(self._image, request, self._defaults)
        return self._result(records, response["topics"][0])

    def delete_topics(
        self, request: mt.DeleteTopicsRequest, version: int
    ) -> ControllerResult[mt.DeleteTopicsResponse]:
        records, response = delete_topics(self._image, request, version, self._defaults)
        return self._result(records, response)

    def create_partitions(
        self, request: mt.CreatePartitionsRequest, version: int
    ) -> ControllerResult[mt.CreatePartitionsResponse]:
        records, response = create_partitions(self._image, request, self._defaults)
        return self._result(records, response)

    def incremental_alter_configs(
        self, request: mt.IncrementalAlterConfigsRequest, version: int
    ) -> ControllerResult[mt.IncrementalAlterConfigsResponse]:
        records, response = incremental_alter_configs(
            self._image, request, self._defaults.config_policy
        )
        return self._result(records, response)

    def alter_configs(
        self, request: mt.AlterConfigsRequest, version: int
    ) -> ControllerResult[mt.AlterConfigsResponse]:
        """AlterConfigs (33): whole-resource replace (see :mod:`sparklog.controller.configs`)."""
        records, response = alter_configs(self._image, request, self._defaults.config_policy)
        return self._result(records, response)

    def create_acls(
        self, request: mt.CreateAclsRequest, version: int
    ) -> ControllerResult[mt.CreateAclsResponse]:
        """CreateAcls (30), see :mod:`sparklog.controller.security_control`."""
        records, response = create_acls(self._image, request, random_uuid_bytes)
        return self._result(records, response)

    def update_features(
        self, request: mt.UpdateFeaturesRequest, version: int
    ) -> ControllerResult[mt.UpdateFeaturesResponse]:
        """UpdateFeatures (57), see :mod:`sparklog.controller.feature_control`; the features
        (other than metadata.version) this node implements are ``storage format``'s."""
        records, response = update_features(self._image, request, version, BOOTSTRAP_FEATURES)
        return self._result(records, response)

    def delete_acls(
        self, request: mt.DeleteAclsRequest, version: int
    ) -> ControllerResult[mt.DeleteAclsResponse]:
        records, response = delete_acls(self._image, request)
        return self._result(records, response)

    def alter_client_quotas(
        self, request: mt.AlterClientQuotasRequest, version: int
    ) -> ControllerResult[mt.AlterClientQuotasResponse]:
        records, response = alter_client_quotas(self._image, request)
        return self._result(records, response)

    def alter_user_scram_credentials(
        self, request: mt.AlterUserScramCredentialsRequest, version: int
    ) -> ControllerResult[mt.AlterUserScramCredentialsResponse]:
        """AlterUserScramCredentials (51), see :mod:`sparklog.controller.scram_control`."""
        records, response = alter_user_scram_credentials(self._image, request)
        return self._result(records, response)

    def alter_partition(
        self, request: mt.AlterPartitionRequest, version: int
    ) -> ControllerResult[mt.AlterPartitionResponse]:
        """A partition leader's ISR change (see :mod:`sparklog.controller.partition_change`)."""
        records, response = alter_partition(self.replication, request, version)
        return self._result(records, response)

    def elect_leaders(
        self, request: mt.ElectLeadersRequest, version: int
    ) -> ControllerResult[mt.ElectLeadersResponse]:
        """ElectLeaders (43), PREFERRED or UNCLEAN (see
        :mod:`sparklog.controller.replication_control`)."""
        records, response = elect_leaders(self.replication, request, version)
        return self._result(records, response)

    def alter_partition_reassignments(
        self, request: mt.AlterPartitionReassignmentsRequest, version: int
    ) -> ControllerResult[mt.AlterPartitionReassignmentsResponse]:
        """AlterPartitionReassignments (45), see :mod:`sparklog.controller.reassignment`."""
        records, response = alter_partition_reassignments(self.replication, request)
        return self._result(records, response)

    def list_partition_reassignments(
        self, request: mt.ListPartitionReassignmentsRequest, version: int
    ) -> ControllerResult[mt.ListPartitionReassignmentsResponse]:
        return self._result((), list_partition_reassignments(self.replication, request))

    def balance_partition_leaders(self) -> ControllerResult[int]:
        """Preferred elections for the brokers over ``leader.imbalance.per.broker.percentage``
        (the ``auto.leader.rebalance.enable`` task); the response counts the records."""
        records = balance_partition_leaders(self.replication, self.imbalance_percentage)
        return self._result(records, len(records))

    def elect_offline_partitions(self) -> ControllerResult[int]:
        """Leaders for offline partitions that may have one now (say unclean election was
        just allowed for their topic); the response counts the records."""
        records = elect_offline_partitions(self.replication)
        return self._result(records, len(records))

    def register_broker(
        self,
        broker_id: int,
        incarnation_id: bytes,
        listeners: Sequence[Endpoint],
        rack: str | None = None,
        features: Mapping[str, tuple[int, int]] | None = None,
        *,
        log_dirs: Sequence[bytes] = (),
        unfence: bool = True,
        unclean_shutdown: bool = False,
    ) -> ControllerResult[int]:
        """Register (or re-register) a broker; the response is its new broker epoch.

        The epoch is the offset of the RegisterBrokerRecord, so it grows with every
        registration. ``unfence`` (a combined node registering its own broker) unfences it in
        the same batch. A new incarnation bumps the leader epoch of the partitions it leads,
        as Kafka's fence-then-unfence does, so followers and clients see a new leadership.
        """
        supported = dict(features or {})
        level = self._image.features.metadata_version
        if METADATA_VERSION_FEATURE in supported and level:
            low, high = supported[METADATA_VERSION_FEATURE]
            if not low <= level <= high:
                raise KafkaApiError(
                    ErrorCode.UNSUPPORTED_VERSION,
                    f"Unable to register because the broker does not support finalized version "
                    f"{level} of metadata.version. The broker wants a version between {low} and "
                    f"{high}, inclusive.",
                )
        epoch = self._raft.log_end_offset
        previous = self._image.cluster.broker(broker_id)
        registration = BrokerRegistration(
            broker_id=broker_id,
            epoch=epoch,
            incarnation_id=incarnation_id,
            endpoints=tuple(listeners),
            supported_features=supported,
            rack=rack,
            fenced=True,
            log_dirs=tuple(log_dirs),
        )
        records = [registration.to_record()]
        if unfence:
            records.append(
                make_record(
                    "BrokerRegistrationChangeRecord",
                    {"broker_id": broker_id, "broker_epoch": epoch, "fenced": -1},
                )
            )
        if previous is not None and unclean_shutdown:
            # KIP-966: its log may have lost acknowledged records, so it leaves every ISR and
            # ELR as well as its leaderships.
            records.extend(
                remove_broker_from_isrs(self.replication, broker_id, unclean_shutdown=True)
            )
        elif previous is not None and previous.incarnation_id != incarnation_id and not unfence:
            # The old incarnation is gone: its leaderships move until the new one unfences.
            records.extend(move_leaderships(self.replication, broker_id))
        elif previous is not None and previous.incarnation_id != incarnation_id:
            ctx = self.replication
            accept = ctx.acceptable(added=frozenset({broker_id}))
            for topic in self._image.topics.by_id.values():
                for partition_id, partition in sorted(topic.partitions.items()):
                    if partition.leader == broker_id:
                        builder = ctx.builder(topic, partition_id, partition, accept)
                        builder.bump_leader_epoch = True
                        record = builder.build()
                        if record is not None:
                            records.append(record)
        return self._result(records, epoch)

    def allocate_producer_ids(
        self, broker_id: int, broker_epoch: int
    ) -> ControllerResult[tuple[int, int]]:
        """A block of producer ids for a broker: response ``(first id, block length)``."""
        broker = self._image.cluster.broker(broker_id)
        if broker is None:
            raise KafkaApiError(
                ErrorCode.BROKER_ID_NOT_REGISTERED, f"Broker {broker_id} is not registered."
            )
        if broker.epoch != broker_epoch:
            raise KafkaApiError(
                ErrorCode.STALE_BROKER_EPOCH,
                f"Expected broker epoch {broker.epoch}, but got {broker_epoch}",
            )
        first = max(self._image.producer_ids.next_producer_id, 0)
        record = make_record(
            "ProducerIdsRecord",
            {
                "broker_id": broker_id,
                "broker_epoch": broker_epoch,
                "next_producer_id": first + PRODUCER_ID_BLOCK_SIZE,
            },
        )
        return self._result([record], (first, PRODUCER_ID_BLOCK_SIZE))

    # -- broker lifecycle (KIP-631) --------------------------------------------------------------

    def broker_registration(
        self, body: mt.BrokerRegistrationRequest, cluster_id: str | None, now_ms: int
    ) -> ControllerResult[mt.BrokerRegistrationResponse]:
        """A BrokerRegistration request: a fenced registration and the new broker epoch."""
        broker_id = body["broker_id"]

        def error(code: ErrorCode) -> ControllerResult[mt.BrokerRegistrationResponse]:
            return self._result(
                (), {"throttle_time_ms": 0, "error_code": int(code), "broker_epoch": -1}
            )

        if cluster_id is not None and body["cluster_id"] != cluster_id:
            return error(ErrorCode.INCONSISTENT_CLUSTER_ID)
        incarnation = bytes(body["incarnation_id"])
        previous = self._image.cluster.broker(broker_id)
        if (
            previous is not None
            and previous.incarnation_id != incarnation
            and self.sessions.heard_from(broker_id, now_ms)
            and not previous.fenced
        ):
            return error(ErrorCode.DUPLICATE_BROKER_REGISTRATION)
        endpoints = [
            Endpoint(e["name"], e["host"], e["port"], e["security_protocol"])
            for e in body["listeners"]
        ]
        features = {
            f["name"]: (f["min_supported_version"], f["max_supported_version"])
            for f in body["features"]
        }
        if previous is not None and previous.incarnation_id == incarnation:
            # A retried registration of the same process: answer with the epoch it got.
            return self._result(
                (), {"throttle_time_ms": 0, "error_code": 0, "broker_epoch": previous.epoch}
            )
        try:
            result = self.register_broker(
                broker_id,
                incarnation,
                endpoints,
                body["rack"],
                features,
                log_dirs=[bytes(d) for d in body["log_dirs"]],
                unfence=False,
                unclean_shutdown=(
                    previous is not None
                    and elr_enabled(self._image)
                    and body["previous_broker_epoch"] != previous.epoch
                ),
            )
        except KafkaApiError as exc:
            return error(exc.code)
        self.sessions.touch(broker_id, now_ms)
        return self._result(
            result.records,
            {"throttle_time_ms": 0, "error_code": 0, "broker_epoch": result.response},
        )

    def broker_heartbeat(
        self, body: mt.BrokerHeartbeatRequest, now_ms: int
    ) -> ControllerResult[mt.BrokerHeartbeatResponse]:
        outcome = heartbeat(self.replication, self.sessions, body, now_ms)
        return self._result(outcome.records, outcome.response)

    def assign_replicas_to_dirs(
        self, body: mt.AssignReplicasToDirsRequest
    ) -> ControllerResult[mt.AssignReplicasToDirsResponse]:
        """AssignReplicasToDirs (73), see :mod:`sparklog.controller.directories`."""
        records, response = assign_replicas_to_dirs(self.replication, body)
        return self._result(records, response)

    def fence_expired_brokers(self, now_ms: int) -> ControllerResult[list[int]]:
        """Fence every broker whose lease ran out (one at a time: each move reads the image)."""
        for broker_id in self.sessions.expired(self._image, now_ms):
            return self._result(fence_records(self.replication, broker_id), [broker_id])
        return self._result((), [])

    def unregister_broker(
        self, body: mt.UnregisterBrokerRequest
    ) -> ControllerResult[mt.UnregisterBrokerResponse]:
        broker_id = body["broker_id"]
        broker = self._image.cluster.broker(broker_id)
        if broker is None:
            return self._result(
                (),
                {
                    "throttle_time_ms": 0,
                    "error_code": int(ErrorCode.BROKER_ID_NOT_REGISTERED),
                    "error_message": f"Broker ID {broker_id} is not currently registered",
                },
            )
        records = [*move_leaderships(self.replication, broker_id)]
        records.append(
            make_record(
                "UnregisterBrokerRecord", {"broker_id": broker_id, "broker_epoch": broker.epoch}
            )
        )
        return self._result(records, {"throttle_time_ms": 0, "error_code": 0})
