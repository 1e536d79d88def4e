"""Request dispatch: one handler per API key, and the per-request error policy.

Every API this node serves on its client listener is listed in :data:`HANDLERS`, keyed by
:class:`~sparklog.protocol.message_types.ApiKey`; ApiVersions advertises exactly those, with the
version ranges of their declarations. A handler may declare its request's and response's
TypedDicts (``TypedRequest[ProduceRequest] -> ProduceResponse``); the table holds them as
:data:`Handler`, and the response leaves :class:`BrokerApis` as the plain dict it is at run time
(the quota layer sets its ``throttle_time_ms``). A handler bug is
logged and answered as UNKNOWN_SERVER_ERROR where the response allows a top-level error;
otherwise the connection is closed. Nothing a client sends can take the node down.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, cast

from sparklog.broker.acl_apis import (
    handle_acl_write,
    handle_describe_acls,
    handle_describe_client_quotas,
)
from sparklog.broker.admin import (
    forward_to_controller,
    handle_describe_configs,
    handle_list_config_resources,
)
from sparklog.broker.authz import authorized_call
from sparklog.broker.context import BrokerContext
from sparklog.broker.fetch import handle_fetch
from sparklog.broker.lifecycle import SUPPORTED_METADATA_VERSIONS
from sparklog.broker.metadata_apis import handle_describe_cluster, handle_metadata
from sparklog.broker.offsets import (
    handle_delete_records,
    handle_list_offsets,
    handle_offset_for_leader_epoch,
)
from sparklog.broker.produce import handle_produce
from sparklog.broker.producer_ids import handle_init_producer_id
from sparklog.broker.quota_enforcement import serve_with_quotas, wait_while_muted
from sparklog.broker.replica_state_apis import handle_describe_log_dirs, handle_describe_producers
from sparklog.broker.scram_apis import handle_describe_user_scram_credentials
from sparklog.broker.share_fetch import handle_share_acknowledge, handle_share_fetch
from sparklog.broker.share_gate import (
    SHARE_GROUP_API_KEYS,
    SUPPORTED_SHARE_VERSIONS,
    share_disabled_response,
    share_groups_enabled,
)
from sparklog.broker.topic_partitions import handle_describe_topic_partitions
from sparklog.broker.txn_markers import handle_write_txn_markers
from sparklog.config import ServerConfig
from sparklog.controller.apis import FeatureFields
from sparklog.coordinator.apis import GROUP_HANDLERS
from sparklog.coordinator.share_apis import SHARE_GROUP_HANDLERS
from sparklog.coordinator.share_offsets_apis import SHARE_OFFSETS_HANDLERS
from sparklog.coordinator.share_state_apis import SHARE_STATE_HANDLERS
from sparklog.coordinator.txn_apis import TXN_HANDLERS
from sparklog.metadata.bootstrap import ELR_FEATURE
from sparklog.metadata.image import (
    METADATA_VERSION_FEATURE,
    SHARE_VERSION_FEATURE,
    TRANSACTION_VERSION_FEATURE,
    MetadataImage,
)
from sparklog.net.server import Connection
from sparklog.protocol.headers import Request, TypedRequest
from sparklog.protocol.message_types import (
    ApiKey,
    ApiVersionsResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from sparklog.protocol.messages import API_BY_KEY
from sparklog.protocol.schema import Api

log = logging.getLogger(__name__)

# A handler takes the request (its body typed or not) and returns the response body, or None
# for no response (acks=0 Produce). TypedRequest[Any] admits every TypedRequest[<Request>].
Handler = Callable[[BrokerContext, TypedRequest[Any], str], Awaitable[Mapping[str, Any] | None]]


async def _init_producer_id(
    ctx: BrokerContext, request: TypedRequest[InitProducerIdRequest], listener: str
) -> InitProducerIdResponse:
    return await handle_init_producer_id(ctx.producer_ids, request, ctx.transactions)


def _simple(
    fn: Callable[[BrokerContext, TypedRequest[Any]], Awaitable[Mapping[str, Any] | None]],
) -> Handler:
    async def handler(
        ctx: BrokerContext, request: TypedRequest[Any], listener: str
    ) -> Mapping[str, Any] | None:
        return await fn(ctx, request)

    return handler


# Keyed by ApiKey members; typed by int so the dispatcher looks a request's key up directly.
HANDLERS: dict[int, Handler] = {
    ApiKey.PRODUCE: _simple(handle_produce),
    ApiKey.FETCH: _simple(handle_fetch),
    ApiKey.LIST_OFFSETS: _simple(handle_list_offsets),
    ApiKey.METADATA: handle_metadata,
    ApiKey.CREATE_TOPICS: _simple(forward_to_controller),
    ApiKey.DELETE_TOPICS: _simple(forward_to_controller),
    ApiKey.DELETE_RECORDS: _simple(handle_delete_records),
    ApiKey.INIT_PRODUCER_ID: _init_producer_id,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: _simple(handle_offset_for_leader_epoch),
    ApiKey.WRITE_TXN_MARKERS: _simple(handle_write_txn_markers),
    ApiKey.DESCRIBE_CONFIGS: _simple(handle_describe_configs),
    ApiKey.ALTER_CONFIGS: _simple(forward_to_controller),
    ApiKey.CREATE_PARTITIONS: _simple(forward_to_controller),
    ApiKey.ELECT_LEADERS: _simple(forward_to_controller),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _simple(forward_to_controller),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _simple(forward_to_controller),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _simple(forward_to_controller),
    ApiKey.DESCRIBE_CLUSTER: handle_describe_cluster,
    # DescribeQuorum, AddRaftVoter, RemoveRaftVoter: answered by the KRaft leader.
    ApiKey.DESCRIBE_QUORUM: _simple(forward_to_controller),
    ApiKey.UPDATE_FEATURES: _simple(forward_to_controller),
    ApiKey.ADD_RAFT_VOTER: _simple(forward_to_controller),
    ApiKey.REMOVE_RAFT_VOTER: _simple(forward_to_controller),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: _simple(handle_describe_topic_partitions),
    ApiKey.DESCRIBE_LOG_DIRS: _simple(handle_describe_log_dirs),
    ApiKey.DESCRIBE_PRODUCERS: _simple(handle_describe_producers),
    ApiKey.LIST_CONFIG_RESOURCES: handle_list_config_resources,
    ApiKey.DESCRIBE_ACLS: _simple(handle_describe_acls),
    ApiKey.CREATE_ACLS: _simple(handle_acl_write),
    ApiKey.DELETE_ACLS: _simple(handle_acl_write),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: _simple(handle_describe_client_quotas),
    ApiKey.ALTER_CLIENT_QUOTAS: _simple(forward_to_controller),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _simple(handle_describe_user_scram_credentials),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _simple(forward_to_controller),
}
HANDLERS.update(GROUP_HANDLERS)
HANDLERS.update(TXN_HANDLERS)
HANDLERS.update(SHARE_GROUP_HANDLERS)
HANDLERS.update(SHARE_STATE_HANDLERS)
HANDLERS.update(SHARE_OFFSETS_HANDLERS)
HANDLERS[ApiKey.SHARE_FETCH] = handle_share_fetch
HANDLERS[ApiKey.SHARE_ACKNOWLEDGE] = handle_share_acknowledge

# ApiVersions is answered by BrokerApis itself, per listener.
SERVED: dict[int, Api] = {key: API_BY_KEY[key] for key in sorted({ApiKey.API_VERSIONS, *HANDLERS})}


def served_broker_apis(config: ServerConfig) -> dict[int, Api]:
    """The APIs a broker listener may serve; the KIP-932 share-group APIs among them are
    advertised and served only while share groups are enabled
    (:func:`~sparklog.broker.share_gate.share_groups_enabled`, checked per request)."""
    return dict(SERVED)


def _advertised_min_version(api: Api) -> int:
    # Kafka 4.x advertises Produce from v0 although it rejects v0-v2: librdkafka refuses to
    # produce compressed batches to a broker whose Produce range does not start at 0
    # (KAFKA-18659). A v0-v2 request still fails version negotiation in the listener.
    return 0 if api.key == 0 else api.min_version


def api_versions_body(apis: Mapping[int, Api]) -> ApiVersionsResponse:
    return {
        "error_code": 0,
        "api_keys": [
            {
                "api_key": a.key,
                "min_version": _advertised_min_version(a),
                "max_version": a.max_version,
            }
            for a in sorted(apis.values(), key=lambda a: a.key)
        ],
        "throttle_time_ms": 0,
        "supported_features": [],
        "finalized_features_epoch": -1,
        "finalized_features": [],
        "zk_migration_ready": False,
    }


# Features this broker implements (KIP-584), advertised in ApiVersions v3+ with the levels the
# cluster finalized, as Kafka's brokers do: `sparklog features describe` reads them.
SUPPORTED_FEATURES: dict[str, tuple[int, int]] = {
    METADATA_VERSION_FEATURE: SUPPORTED_METADATA_VERSIONS,
    ELR_FEATURE: (0, 1),
    SHARE_VERSION_FEATURE: SUPPORTED_SHARE_VERSIONS,
    TRANSACTION_VERSION_FEATURE: (0, 2),
}


def feature_fields(image: MetadataImage) -> FeatureFields:
    return {
        "supported_features": [
            {"name": name, "min_version": low, "max_version": high}
            for name, (low, high) in sorted(SUPPORTED_FEATURES.items())
        ],
        "finalized_features_epoch": image.provenance.last_offset,
        "finalized_features": [
            {"name": name, "max_version_level": level, "min_version_level": level}
            for name, level in sorted(image.features.levels.items())
        ],
    }


class BrokerApis:
    """Binds the handlers to a broker context; the listener's request callback."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    async def __call__(self, request: Request, conn: Connection) -> dict[str, Any] | None:
        if request.api.key == ApiKey.API_VERSIONS:
            # Each listener advertises what it serves (the controller listener less), the
            # share-group APIs only while share groups are enabled.
            apis = conn.served_apis
            if not share_groups_enabled(self.ctx.config, self.ctx.image):
                apis = {k: a for k, a in apis.items() if k not in SHARE_GROUP_API_KEYS}
            body: ApiVersionsResponse = {
                **api_versions_body(apis),
                **feature_fields(self.ctx.image),
            }
            return _as_dict(body)
        if request.api.key in SHARE_GROUP_API_KEYS and not share_groups_enabled(
            self.ctx.config, self.ctx.image
        ):
            return _as_dict(share_disabled_response(request))
        quotas = self.ctx.quotas
        if quotas is not None and quotas.active:
            # Client quotas (sparklog.broker.quota_enforcement): a throttled connection's next
            # request waits out its mute, then is recorded against the quotas.
            await wait_while_muted(conn)
            return await serve_with_quotas(
                quotas, request, conn, lambda: self._authorized(request, conn)
            )
        return await self._authorized(request, conn)

    async def _authorized(self, request: Request, conn: Connection) -> dict[str, Any] | None:
        handler = HANDLERS[request.api.key]
        try:
            authorizer = self.ctx.authorizer
            if authorizer is None:
                return _as_dict(await handler(self.ctx, request, conn.listener_name))

            async def serve(allowed: TypedRequest[Any]) -> Mapping[str, Any] | None:
                return await handler(self.ctx, allowed, conn.listener_name)

            return _as_dict(
                await authorized_call(authorizer, conn.session, request, serve, self.ctx.topic_name)
            )
        except Exception:
            log.exception(
                "Error handling %s v%d from %s",
                request.api.name,
                request.header.api_version,
                conn.peer,
            )
            raise


def _as_dict(response: Mapping[str, object] | None) -> dict[str, Any] | None:
    """A handler's response as the dict it is at run time (the codec builds, handlers build,
    dicts; a TypedDict is only their static type), for the layers that set throttle_time_ms."""
    return cast("dict[str, Any] | None", response)
