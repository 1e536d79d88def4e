"""The controller listener's request handler: KRaft RPCs, broker lifecycle, admin writes.

What a request on a ``controller.listener.names`` listener reaches:

- ApiVersions: the APIs this listener serves (:data:`CONTROLLER_APIS` that this node can
  answer: a broker-only node serves none, it has no controller listener), with the supported
  and finalized feature levels the node injects (``features``).
- DescribeCluster (endpoint type CONTROLLER, KIP-919): the cluster id, the KRaft leader and
  the voters' addresses; ALTER on the cluster when an authorizer is set, as in Kafka.
- KRaft RPCs (Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch of ``__cluster_metadata``,
  FetchSnapshot, DescribeQuorum, Add/Remove/UpdateRaftVoter): the node's raft driver
  (``RaftDriver.handle_request``, injected: this package does not import ``net``).
- BrokerRegistration, BrokerHeartbeat, UnregisterBroker, AllocateProducerIds, AlterPartition
  (sent by partition leaders straight to the controller, never forwarded), CreateTopics,
  DeleteTopics, CreatePartitions, IncrementalAlterConfigs, AlterConfigs, ElectLeaders,
  AlterPartitionReassignments, ListPartitionReassignments: the
  :class:`~sparklog.controller.driver.ControllerDriver`, answered once committed. An inactive
  controller answers NOT_CONTROLLER in the places a Kafka client looks for it (top level, or
  per topic / resource), which the forwarding broker retries elsewhere.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, TypedDict, cast

from sparklog.controller.driver import ControllerDriver
from sparklog.controller.quorum_controller import QuorumController
from sparklog.controller.result import ControllerResult
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.headers import API_VERSIONS_KEY, Request
from sparklog.protocol.message_types import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    AlterConfigsRequest,
    AlterConfigsResponse,
    AlterPartitionReassignmentsResponse,
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    ApiKey,
    ApiVersionsResponseFinalizedFeatures,
    ApiVersionsResponseSupportedFeatures,
    CreateAclsRequest,
    CreateAclsResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeClusterResponseBrokers,
    ElectLeadersRequest,
    ElectLeadersResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    ListPartitionReassignmentsResponse,
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
)
from sparklog.protocol.messages import API_BY_KEY
from sparklog.protocol.schema import Api
from sparklog.raft import rpc
from sparklog.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from sparklog.security.authorizer import StandardAuthorizer

# The KRaft RPCs: the node's RaftDriver serves them.
RAFT_API_KEYS: Final = rpc.RAFT_API_KEYS
# (request, connection) -> response: the RaftDriver's handler, which also answers ApiVersions.
RaftHandler = Callable[[Request, Any], Awaitable[dict[str, Any]]]

log = logging.getLogger(__name__)

BROKER_REGISTRATION: Final = ApiKey.BROKER_REGISTRATION
BROKER_HEARTBEAT: Final = ApiKey.BROKER_HEARTBEAT
UNREGISTER_BROKER: Final = ApiKey.UNREGISTER_BROKER
ALLOCATE_PRODUCER_IDS: Final = ApiKey.ALLOCATE_PRODUCER_IDS
ASSIGN_REPLICAS_TO_DIRS: Final = ApiKey.ASSIGN_REPLICAS_TO_DIRS
ALTER_PARTITION: Final = ApiKey.ALTER_PARTITION
CREATE_TOPICS: Final = ApiKey.CREATE_TOPICS
DELETE_TOPICS: Final = ApiKey.DELETE_TOPICS
CREATE_PARTITIONS: Final = ApiKey.CREATE_PARTITIONS
INCREMENTAL_ALTER_CONFIGS: Final = ApiKey.INCREMENTAL_ALTER_CONFIGS
ALTER_CONFIGS: Final = ApiKey.ALTER_CONFIGS
ELECT_LEADERS: Final = ApiKey.ELECT_LEADERS
ALTER_PARTITION_REASSIGNMENTS: Final = ApiKey.ALTER_PARTITION_REASSIGNMENTS
LIST_PARTITION_REASSIGNMENTS: Final = ApiKey.LIST_PARTITION_REASSIGNMENTS
CREATE_ACLS: Final = ApiKey.CREATE_ACLS
DELETE_ACLS: Final = ApiKey.DELETE_ACLS
ALTER_CLIENT_QUOTAS: Final = ApiKey.ALTER_CLIENT_QUOTAS
DESCRIBE_QUORUM: Final = ApiKey.DESCRIBE_QUORUM
DESCRIBE_CLUSTER: Final = ApiKey.DESCRIBE_CLUSTER
ADD_RAFT_VOTER: Final = ApiKey.ADD_RAFT_VOTER
REMOVE_RAFT_VOTER: Final = ApiKey.REMOVE_RAFT_VOTER
ALTER_USER_SCRAM_CREDENTIALS: Final = ApiKey.ALTER_USER_SCRAM_CREDENTIALS
UPDATE_FEATURES: Final = ApiKey.UPDATE_FEATURES

ADMIN_OPERATIONS: Final[dict[int, str]] = {
    CREATE_TOPICS: "create_topics",
    DELETE_TOPICS: "delete_topics",
    CREATE_PARTITIONS: "create_partitions",
    INCREMENTAL_ALTER_CONFIGS: "incremental_alter_configs",
    ALTER_CONFIGS: "alter_configs",
    ELECT_LEADERS: "elect_leaders",
    ALTER_PARTITION_REASSIGNMENTS: "alter_partition_reassignments",
    LIST_PARTITION_REASSIGNMENTS: "list_partition_reassignments",
    CREATE_ACLS: "create_acls",
    DELETE_ACLS: "delete_acls",
    ALTER_CLIENT_QUOTAS: "alter_client_quotas",
    ALTER_USER_SCRAM_CREDENTIALS: "alter_user_scram_credentials",
    UPDATE_FEATURES: "update_features",
}
LIFECYCLE_KEYS: Final = frozenset(
    {
        BROKER_REGISTRATION,
        BROKER_HEARTBEAT,
        UNREGISTER_BROKER,
        ALLOCATE_PRODUCER_IDS,
        ALTER_PARTITION,
        ASSIGN_REPLICAS_TO_DIRS,
    }
)
CONTROLLER_APIS: Final = frozenset(
    {API_VERSIONS_KEY, DESCRIBE_CLUSTER, *RAFT_API_KEYS, *LIFECYCLE_KEYS, *ADMIN_OPERATIONS}
)


def controller_served_apis() -> dict[int, Api]:
    return {key: API_BY_KEY[key] for key in sorted(CONTROLLER_APIS)}


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def error_body(
    api_key: int, body: Mapping[str, Any], code: ErrorCode, message: str
) -> Mapping[str, object]:
    """The response a Kafka client expects when the whole request failed with ``code``;
    ``body`` is ``api_key``'s decoded request (its TypedDict, narrowed per branch)."""
    c = int(code)
    if api_key == DESCRIBE_CLUSTER:
        cluster: DescribeClusterResponse = {
            "throttle_time_ms": 0,
            "error_code": c,
            "error_message": message,
            "endpoint_type": 2,
            "cluster_id": "",
            "controller_id": -1,
            "brokers": [],
        }
        return cluster
    if api_key == CREATE_TOPICS:
        create = cast("CreateTopicsRequest", body)
        created: CreateTopicsResponse = {
            "throttle_time_ms": 0,
            "topics": [
                {"name": t["name"], "error_code": c, "error_message": message}
                for t in create.get("topics") or ()
            ],
        }
        return created
    if api_key == DELETE_TOPICS:
        delete = cast("DeleteTopicsRequest", body)
        names: list[str | None] = list(delete.get("topic_names") or ())
        names += [t.get("name") for t in delete.get("topics") or ()]
        deleted: DeleteTopicsResponse = {
            "throttle_time_ms": 0,
            "responses": [{"name": n, "error_code": c, "error_message": message} for n in names],
        }
        return deleted
    if api_key == CREATE_PARTITIONS:
        grow = cast("CreatePartitionsRequest", body)
        grown: CreatePartitionsResponse = {
            "throttle_time_ms": 0,
            "results": [
                {"name": t["name"], "error_code": c, "error_message": message}
                for t in grow.get("topics") or ()
            ],
        }
        return grown
    if api_key in (INCREMENTAL_ALTER_CONFIGS, ALTER_CONFIGS):
        alter = cast("IncrementalAlterConfigsRequest | AlterConfigsRequest", body)
        altered: IncrementalAlterConfigsResponse | AlterConfigsResponse = {
            "throttle_time_ms": 0,
            "responses": [
                {
                    "error_code": c,
                    "error_message": message,
                    "resource_type": r["resource_type"],
                    "resource_name": r["resource_name"],
                }
                for r in alter.get("resources") or ()
            ],
        }
        return altered
    if api_key == ELECT_LEADERS:
        elect = cast("ElectLeadersRequest", body)
        elected: ElectLeadersResponse = {
            "throttle_time_ms": 0,
            "error_code": c,
            "replica_election_results": [
                {
                    "topic": t["topic"],
                    "partition_result": [
                        {"partition_id": p, "error_code": c, "error_message": message}
                        for p in t.get("partitions") or ()
                    ],
                }
                for t in elect.get("topic_partitions") or ()
            ],
        }
        return elected
    if api_key == ALTER_PARTITION_REASSIGNMENTS:
        reassigned: AlterPartitionReassignmentsResponse = {
            "throttle_time_ms": 0,
            "error_code": c,
            "error_message": message,
            "responses": [],
        }
        return reassigned
    if api_key == CREATE_ACLS:
        acls = cast("CreateAclsRequest", body)
        created_acls: CreateAclsResponse = {
            "throttle_time_ms": 0,
            "results": [
                {"error_code": c, "error_message": message} for _ in acls.get("creations") or ()
            ],
        }
        return created_acls
    if api_key == DELETE_ACLS:
        filters = cast("DeleteAclsRequest", body)
        deleted_acls: DeleteAclsResponse = {
            "throttle_time_ms": 0,
            "filter_results": [
                {"error_code": c, "error_message": message, "matching_acls": []}
                for _ in filters.get("filters") or ()
            ],
        }
        return deleted_acls
    if api_key == ALTER_CLIENT_QUOTAS:
        quotas = cast("AlterClientQuotasRequest", body)
        altered_quotas: AlterClientQuotasResponse = {
            "throttle_time_ms": 0,
            "entries": [
                {
                    "error_code": c,
                    "error_message": message,
                    "entity": [
                        {"entity_type": part["entity_type"], "entity_name": part["entity_name"]}
                        for part in e.get("entity") or ()
                    ],
                }
                for e in quotas.get("entries") or ()
            ],
        }
        return altered_quotas
    if api_key == ALTER_USER_SCRAM_CREDENTIALS:
        scram = cast("AlterUserScramCredentialsRequest", body)
        users = [d["name"] for d in scram.get("deletions") or ()]
        users += [u["name"] for u in scram.get("upsertions") or ()]
        altered_users: AlterUserScramCredentialsResponse = {
            "throttle_time_ms": 0,
            "results": [
                {"user": u, "error_code": c, "error_message": message} for u in dict.fromkeys(users)
            ],
        }
        return altered_users
    if api_key == UPDATE_FEATURES:
        features = cast("UpdateFeaturesRequest", body)
        updated: UpdateFeaturesResponse = {
            "throttle_time_ms": 0,
            "error_code": c,
            "error_message": message,
            "results": [
                {"feature": u["feature"], "error_code": c, "error_message": message}
                for u in features.get("feature_updates") or ()
            ],
        }
        return updated
    if api_key == LIST_PARTITION_REASSIGNMENTS:
        listed: ListPartitionReassignmentsResponse = {
            "throttle_time_ms": 0,
            "error_code": c,
            "error_message": message,
            "topics": [],
        }
        return listed
    # Every other API's response has a top-level error code (and most a message).
    return {"throttle_time_ms": 0, "error_code": c, "error_message": message}


class FeatureFields(TypedDict):
    """ApiVersions' feature fields (v3+), which brokers and controllers fill from the image
    (:func:`sparklog.broker.apis.feature_fields`)."""

    supported_features: list[ApiVersionsResponseSupportedFeatures]
    finalized_features_epoch: int
    finalized_features: list[ApiVersionsResponseFinalizedFeatures]


class ControllerApis:
    """Binds a node's raft driver and (on a controller) controller driver to the listener."""

    def __init__(
        self,
        raft: RaftHandler,
        controller: ControllerDriver | None,
        cluster_id: str,
        *,
        clock_ms: Callable[[], int] = _now_ms,
    ) -> None:
        self.raft = raft
        self.controller = controller
        self.cluster_id = cluster_id
        self.clock_ms = clock_ms
        # authorizer.class.name's StandardAuthorizer (set by the node); None: allow all
        self.authorizer: StandardAuthorizer | None = None
        # DescribeCluster's (leader id, controllers): the raft driver's voters (set by the node)
        self.controllers: Callable[[], tuple[int, list[DescribeClusterResponseBrokers]]] | None = (
            None
        )
        # ApiVersions' supported/finalized feature fields (set by the node), as a Kafka
        # controller advertises them: kafka-features.sh --bootstrap-controller reads them
        self.features: Callable[[], FeatureFields] | None = None

    async def __call__(self, request: Request, conn: Any) -> dict[str, Any] | None:
        key = request.header.api_key
        if self.authorizer is not None and not self._authorized(key, conn):
            return dict(
                error_body(
                    key,
                    request.body,
                    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                    "Cluster authorization failed.",
                )
            )
        if key == API_VERSIONS_KEY and self.features is not None:
            answer = dict(await self.raft(request, conn))
            if not answer.get("error_code"):
                answer.update(self.features())
            return answer
        if key == API_VERSIONS_KEY or key in RAFT_API_KEYS:
            return await self.raft(request, conn)
        if key == DESCRIBE_CLUSTER:
            # dispatched by key: the body is DescribeCluster's request
            described = cast("DescribeClusterRequest", request.body)
            return dict(self._describe_cluster(described, request.header.api_version))
        body = request.body
        version = request.header.api_version
        try:
            if self.controller is None:
                raise KafkaApiError(ErrorCode.NOT_CONTROLLER, "This node is not a controller.")
            return await self.controller.call(self._operation(key, body, version))
        except KafkaApiError as exc:
            return dict(error_body(key, body, exc.code, exc.message or exc.code.name))

    def _describe_cluster(
        self, body: DescribeClusterRequest, version: int
    ) -> DescribeClusterResponse:
        """Kafka's ControllerApis.handleDescribeCluster: only endpoint type 2 (CONTROLLER) is
        served (MISMATCHED_ENDPOINT_TYPE for brokers, INVALID_REQUEST at v0); the controllers
        are the quorum's voters, ``controller_id`` the KRaft leader. Cluster authorized
        operations are not computed (the schema's default)."""
        answer: DescribeClusterResponse = {
            "throttle_time_ms": 0,
            "error_code": 0,
            "error_message": None,
            "endpoint_type": 2,
            "cluster_id": self.cluster_id,
            "controller_id": -1,
            "brokers": [],
        }
        wanted = int(body.get("endpoint_type", 1))
        if wanted != 2:
            code = ErrorCode.INVALID_REQUEST if version == 0 else ErrorCode.MISMATCHED_ENDPOINT_TYPE
            answer["error_code"] = int(code)
            answer["error_message"] = (
                "The request was sent to an endpoint of type CONTROLLER, but we wanted an "
                f"endpoint of type {'BROKER' if wanted == 1 else wanted}"
            )
            return answer
        if self.controllers is not None:
            answer["controller_id"], answer["brokers"] = self.controllers()
        return answer

    def _authorized(self, key: int, conn: Any) -> bool:
        """Kafka's ControllerApis: the quorum's RPCs, broker lifecycle and the admin requests
        brokers forward need CLUSTER_ACTION; DescribeQuorum DESCRIBE and voter changes ALTER on
        the cluster. ApiVersions (and SASL, before a principal exists) are never refused."""
        if key in (API_VERSIONS_KEY, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
            return True
        assert self.authorizer is not None
        session = getattr(conn, "session", None)
        if session is None:
            return False
        operations: dict[int, AclOperation] = {
            DESCRIBE_QUORUM: AclOperation.DESCRIBE,
            DESCRIBE_CLUSTER: AclOperation.ALTER,  # Kafka: ALTER on a controller
            ADD_RAFT_VOTER: AclOperation.ALTER,
            REMOVE_RAFT_VOTER: AclOperation.ALTER,
            UPDATE_FEATURES: AclOperation.ALTER,  # Kafka's ControllerApis: ALTER on the cluster
        }
        operation = operations.get(key, AclOperation.CLUSTER_ACTION)
        return self.authorizer.authorize(
            session.principal,
            session.client_host,
            operation,
            ResourceType.CLUSTER,
            CLUSTER_NAME,
        )

    def _operation(self, key: int, body: Any, version: int) -> Callable[[], ControllerResult[Any]]:
        """The controller call answering ``key``; ``body`` is what the codec decoded from
        ``key``'s request declaration, so it is that request's TypedDict (dispatched by key, as
        the broker's HANDLERS are)."""
        assert self.controller is not None
        controller = self.controller.controller
        if key == BROKER_REGISTRATION:
            return lambda: controller.broker_registration(body, self.cluster_id, self.clock_ms())
        if key == BROKER_HEARTBEAT:
            return lambda: controller.broker_heartbeat(body, self.clock_ms())
        if key == UNREGISTER_BROKER:
            return lambda: controller.unregister_broker(body)
        if key == ALLOCATE_PRODUCER_IDS:
            return lambda: _allocate(controller, body)
        if key == ALTER_PARTITION:
            return lambda: controller.alter_partition(body, version)
        if key == ASSIGN_REPLICAS_TO_DIRS:
            return lambda: controller.assign_replicas_to_dirs(body)
        operation: Callable[[Mapping[str, Any], int], ControllerResult[Any]] = getattr(
            controller, ADMIN_OPERATIONS[key]
        )
        return lambda: operation(body, version)


def _allocate(
    controller: QuorumController, body: AllocateProducerIdsRequest
) -> ControllerResult[AllocateProducerIdsResponse]:
    try:
        result = controller.allocate_producer_ids(body["broker_id"], body["broker_epoch"])
    except KafkaApiError as exc:
        return ControllerResult((), {"throttle_time_ms": 0, "error_code": int(exc.code)}, -1)
    start, length = result.response
    return ControllerResult(
        result.records,
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "producer_id_start": start,
            "producer_id_len": length,
        },
        result.image_offset,
    )
