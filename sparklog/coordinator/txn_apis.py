"""Request handlers of the transaction APIs: AddPartitionsToTxn (24), AddOffsetsToTxn (25),
EndTxn (26), TxnOffsetCommit (28), DescribeTransactions (65) and ListTransactions (66).

Handlers translate wire bodies into :class:`TransactionCoordinator` (and, for TxnOffsetCommit,
:class:`GroupCoordinator`) calls and shape errors per version as Kafka does: PRODUCER_FENCED is
INVALID_PRODUCER_EPOCH for versions that predate it (AddPartitionsToTxn, AddOffsetsToTxn,
EndTxn and TxnOffsetCommit before v2); a partition of an unknown topic fails AddPartitionsToTxn
with UNKNOWN_TOPIC_OR_PARTITION and the other partitions of the request with
OPERATION_NOT_ATTEMPTED; a node that does not coordinate the id answers NOT_COORDINATOR.

Transactions version 2 (KIP-890 part 2) is honoured only while the cluster's finalized
``transaction.version`` is 2 or more (:func:`request_transaction_version`): then EndTxn v5 bumps
the epoch and answers the next producer id and epoch, a partition leader's AddPartitionsToTxn
v5 (not verify-only) is a TV2 producer's implicit add, and TxnOffsetCommit v5 adds the group's
offsets partition itself (Kafka's implicit AddOffsetsToTxn); older TxnOffsetCommits have it
verified. Below those versions, or on a
cluster at transaction.version < 2, the same requests keep version 1 semantics.
"""

from __future__ import annotations

import re

from sparklog.coordinator.coordinator import OFFSETS_TOPIC, GroupCoordinator
from sparklog.coordinator.coordinator import partition_for as group_partition_for
from sparklog.coordinator.offsets import CommitPartition
from sparklog.coordinator.runtime import CoordinatorContext, Handler
from sparklog.coordinator.txn_coordinator import TransactionCoordinator
from sparklog.coordinator.txn_records import TxnState
from sparklog.coordinator.txn_state import TV_0, TV_2, TopicPartition, supports_epoch_bump
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.headers import TypedRequest
from sparklog.protocol.message_types import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnRequestTransactions,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResponseResultsByTransaction,
    AddPartitionsToTxnResponseResultsByTransactionTopicResults,
    AddPartitionsToTxnResponseResultsByTransactionTopicResultsResultsByPartition,
    ApiKey,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    DescribeTransactionsResponseTransactionStates,
    EndTxnRequest,
    EndTxnResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponseTopics,
    TxnOffsetCommitResponseTopicsPartitions,
)

# AddPartitionsToTxn's per-topic results (v3 and below's TypedDict has the same fields, so
# mypy takes one for the other).
_TopicResults = AddPartitionsToTxnResponseResultsByTransactionTopicResults
_PartitionResult = AddPartitionsToTxnResponseResultsByTransactionTopicResultsResultsByPartition


def _transactions(ctx: CoordinatorContext) -> TransactionCoordinator:
    if ctx.transactions is None:
        raise KafkaApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "No transaction coordinator")
    return ctx.transactions


def request_transaction_version(ctx: CoordinatorContext, version: int, first_tv2: int) -> int:
    """The transaction version a request speaks: 2 when its version is at least ``first_tv2``
    and the cluster finalized transaction.version >= 2, else 0 (Kafka's TV_0)."""
    finalized = ctx.image.features.transaction_version
    return TV_2 if version >= first_tv2 and supports_epoch_bump(finalized) else TV_0


def _fenced_for(version: int, code: ErrorCode) -> ErrorCode:
    if code == ErrorCode.PRODUCER_FENCED and version < 2:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code


def _partition_known(ctx: CoordinatorContext, topic: str, index: int) -> bool:
    registered = ctx.image.topics.by_name.get(topic)
    return registered is not None and index in registered.partitions


# -- AddPartitionsToTxn ---------------------------------------------------------------------
async def _add_one(
    ctx: CoordinatorContext,
    version: int,
    txn: AddPartitionsToTxnRequestTransactions,
    verify_only: bool,
) -> dict[TopicPartition, ErrorCode]:
    wanted = [(t["name"], p) for t in txn["topics"] for p in t["partitions"]]
    unknown = {tp for tp in wanted if not _partition_known(ctx, *tp)}
    if unknown:
        return {
            tp: (
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                if tp in unknown
                else ErrorCode.OPERATION_NOT_ATTEMPTED
            )
            for tp in wanted
        }
    try:
        coordinator = _transactions(ctx)
        if verify_only:
            return coordinator.verify_partitions(
                txn["transactional_id"], txn["producer_id"], txn["producer_epoch"], wanted
            )
        code = await coordinator.add_partitions(
            txn["transactional_id"],
            txn["producer_id"],
            txn["producer_epoch"],
            wanted,
            request_transaction_version(ctx, version, 5),
        )
    except KafkaApiError as exc:
        code = exc.code
    return dict.fromkeys(wanted, _fenced_for(version, code))


def _topic_results(errors: dict[TopicPartition, ErrorCode]) -> list[_TopicResults]:
    by_topic: dict[str, list[_PartitionResult]] = {}
    for (topic, index), code in errors.items():
        by_topic.setdefault(topic, []).append(
            {"partition_index": index, "partition_error_code": int(code)}
        )
    return [{"name": name, "results_by_partition": parts} for name, parts in by_topic.items()]


async def handle_add_partitions_to_txn(
    ctx: CoordinatorContext, request: TypedRequest[AddPartitionsToTxnRequest], listener: str
) -> AddPartitionsToTxnResponse:
    body = request.body
    version = request.header.api_version
    if version < 4:
        txn: AddPartitionsToTxnRequestTransactions = {
            "transactional_id": body["v3_and_below_transactional_id"],
            "producer_id": body["v3_and_below_producer_id"],
            "producer_epoch": body["v3_and_below_producer_epoch"],
            "verify_only": False,
            "topics": body["v3_and_below_topics"],
        }
        errors = await _add_one(ctx, version, txn, verify_only=False)
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": _topic_results(errors)}
    results: list[AddPartitionsToTxnResponseResultsByTransaction] = []
    for txn in body["transactions"]:
        errors = await _add_one(ctx, version, txn, verify_only=txn["verify_only"])
        results.append(
            {"transactional_id": txn["transactional_id"], "topic_results": _topic_results(errors)}
        )
    return {"throttle_time_ms": 0, "error_code": 0, "results_by_transaction": results}


# -- AddOffsetsToTxn / EndTxn -----------------------------------------------------------------
def _offsets_partition(ctx: CoordinatorContext, group_id: str) -> TopicPartition:
    if isinstance(ctx.groups, GroupCoordinator):
        return OFFSETS_TOPIC, ctx.groups.partition_for(group_id)
    count = int(ctx.config.get("offsets.topic.num.partitions"))
    return OFFSETS_TOPIC, group_partition_for(group_id, count)


async def handle_add_offsets_to_txn(
    ctx: CoordinatorContext, request: TypedRequest[AddOffsetsToTxnRequest], listener: str
) -> AddOffsetsToTxnResponse:
    body = request.body
    try:
        code = await _transactions(ctx).add_partitions(
            body["transactional_id"],
            body["producer_id"],
            body["producer_epoch"],
            [_offsets_partition(ctx, body["group_id"])],
        )
    except KafkaApiError as exc:
        code = exc.code
    return {
        "throttle_time_ms": 0,
        "error_code": int(_fenced_for(request.header.api_version, code)),
    }


async def handle_end_txn(
    ctx: CoordinatorContext, request: TypedRequest[EndTxnRequest], listener: str
) -> EndTxnResponse:
    body = request.body
    version = request.header.api_version
    try:
        code, producer_id, producer_epoch = await _transactions(ctx).end_transaction(
            body["transactional_id"],
            body["producer_id"],
            body["producer_epoch"],
            body["committed"],
            request_transaction_version(ctx, version, 5),
        )
    except KafkaApiError as exc:
        code, producer_id, producer_epoch = exc.code, -1, -1
    return {
        "throttle_time_ms": 0,
        "error_code": int(_fenced_for(version, code)),
        "producer_id": producer_id,
        "producer_epoch": producer_epoch,
    }


# -- TxnOffsetCommit --------------------------------------------------------------------------
async def _offsets_in_transaction(
    ctx: CoordinatorContext, body: TxnOffsetCommitRequest, version: int
) -> ErrorCode:
    """Before a TxnOffsetCommit is written, the group coordinator (leader of the group's offsets
    partition) asks the transaction coordinator, wherever it is, about that partition: v5 on a
    TV2 cluster adds it (Kafka's implicit AddOffsetsToTxn), older versions verify the client's
    AddOffsetsToTxn (``transaction.partition.verification.enable``, KIP-890 part 1). What the
    client gets if that fails: COORDINATOR_NOT_AVAILABLE while the coordinator cannot be
    reached or is busy (retriable), PRODUCER_FENCED as is, and TRANSACTION_ABORTABLE (v4+;
    INVALID_TXN_STATE before) when the partition is not, or cannot be, in the transaction."""
    adder = ctx.txn_verification
    add = request_transaction_version(ctx, version, 5) >= TV_2
    if not add and (adder is None or not adder.verification_enabled):
        return ErrorCode.NONE
    if adder is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    offsets = _offsets_partition(ctx, body["group_id"])
    codes = await adder.add_or_verify(
        body["transactional_id"], body["producer_id"], body["producer_epoch"], [offsets], not add
    )
    code = codes.get(offsets, ErrorCode.UNKNOWN_SERVER_ERROR)
    if code in (ErrorCode.NONE, ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH):
        return code
    if code in (
        ErrorCode.TRANSACTION_ABORTABLE,
        ErrorCode.INVALID_TXN_STATE,
        ErrorCode.INVALID_PRODUCER_ID_MAPPING,
    ):
        return ErrorCode.TRANSACTION_ABORTABLE if version >= 4 else ErrorCode.INVALID_TXN_STATE
    return ErrorCode.COORDINATOR_NOT_AVAILABLE


async def handle_txn_offset_commit(
    ctx: CoordinatorContext, request: TypedRequest[TxnOffsetCommitRequest], listener: str
) -> TxnOffsetCommitResponse:
    body = request.body
    version = request.header.api_version
    partitions: list[CommitPartition] = []
    unknown: set[TopicPartition] = set()
    for topic in body["topics"]:
        for p in topic["partitions"]:
            if not _partition_known(ctx, topic["name"], p["partition_index"]):
                unknown.add((topic["name"], p["partition_index"]))
                continue
            partitions.append(
                CommitPartition(
                    topic["name"],
                    p["partition_index"],
                    p["committed_offset"],
                    p["committed_leader_epoch"],
                    p["committed_metadata"],
                )
            )
    outcome: ErrorCode | list[ErrorCode]
    groups = ctx.groups
    implicit = await _offsets_in_transaction(ctx, body, version)
    if groups is None:
        outcome = ErrorCode.COORDINATOR_NOT_AVAILABLE
    elif implicit != ErrorCode.NONE:
        outcome = implicit
    else:
        try:
            outcome = await groups.commit_txn_offsets(
                body["group_id"],
                body["producer_id"],
                body["producer_epoch"],
                body["generation_id"],
                body["member_id"],
                body["group_instance_id"],
                partitions,
            )
        except KafkaApiError as exc:
            outcome = exc.code
    errors = iter(outcome) if isinstance(outcome, list) else None
    group_error = _fenced_for(version, outcome) if isinstance(outcome, ErrorCode) else None
    topics: list[TxnOffsetCommitResponseTopics] = []
    for topic in body["topics"]:
        results: list[TxnOffsetCommitResponseTopicsPartitions] = []
        for p in topic["partitions"]:
            index = p["partition_index"]
            if (topic["name"], index) in unknown:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif errors is not None:
                code = next(errors)
            else:
                code = group_error or ErrorCode.UNKNOWN_SERVER_ERROR
            results.append({"partition_index": index, "error_code": int(code)})
        topics.append({"name": topic["name"], "partitions": results})
    return {"throttle_time_ms": 0, "topics": topics}


# -- DescribeTransactions / ListTransactions --------------------------------------------------
async def handle_describe_transactions(
    ctx: CoordinatorContext, request: TypedRequest[DescribeTransactionsRequest], listener: str
) -> DescribeTransactionsResponse:
    states: list[DescribeTransactionsResponseTransactionStates] = []
    for transactional_id in request.body["transactional_ids"]:
        entry: DescribeTransactionsResponseTransactionStates = {
            "error_code": 0,
            "transactional_id": transactional_id,
            "transaction_state": "",
            "transaction_timeout_ms": 0,
            "transaction_start_time_ms": -1,
            "producer_id": -1,
            "producer_epoch": -1,
            "topics": [],
        }
        try:
            described = _transactions(ctx).describe(transactional_id)
        except KafkaApiError as exc:
            described = exc.code
        if isinstance(described, ErrorCode):
            entry["error_code"] = int(described)
        else:
            by_topic: dict[str, list[int]] = {}
            for topic, index in sorted(described.partitions):
                by_topic.setdefault(topic, []).append(index)
            entry["transaction_state"] = described.state.display_name
            entry["transaction_timeout_ms"] = described.timeout_ms
            entry["transaction_start_time_ms"] = described.start_ms
            entry["producer_id"] = described.producer_id
            entry["producer_epoch"] = described.producer_epoch
            entry["topics"] = [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]
        states.append(entry)
    return {"throttle_time_ms": 0, "transaction_states": states}


async def handle_list_transactions(
    ctx: CoordinatorContext, request: TypedRequest[ListTransactionsRequest], listener: str
) -> ListTransactionsResponse:
    body = request.body
    wanted_states: set[TxnState] = set()
    unknown_states: list[str] = []
    for name in body["state_filters"]:
        state = TxnState.from_display_name(name)
        if state is None:
            unknown_states.append(name)
        else:
            wanted_states.add(state)
    wanted_pids = set(body["producer_id_filters"])
    duration_ms = body["duration_filter"]
    response: ListTransactionsResponse = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "unknown_state_filters": unknown_states,
        "transaction_states": [],
    }
    id_pattern: re.Pattern[str] | None = None
    pattern = body["transactional_id_pattern"]
    if pattern:  # KIP-1152: null or empty lists every id
        try:
            id_pattern = re.compile(pattern)
        except re.error:
            response["error_code"] = int(ErrorCode.INVALID_REGULAR_EXPRESSION)
            return response
    try:
        coordinator = _transactions(ctx)
        listed = coordinator.transactions()
    except KafkaApiError as exc:
        response["error_code"] = int(exc.code)
        return response
    if body["state_filters"] and not wanted_states:
        return response  # only unknown states asked for: nothing can match
    now = coordinator.clock()
    states = response["transaction_states"] = []
    for meta in listed:
        if wanted_states and meta.state not in wanted_states:
            continue
        if wanted_pids and meta.producer_id not in wanted_pids:
            continue
        if duration_ms >= 0 and (meta.start_ms < 0 or now - meta.start_ms < duration_ms):
            continue
        if id_pattern is not None and id_pattern.fullmatch(meta.transactional_id) is None:
            continue
        states.append(
            {
                "transactional_id": meta.transactional_id,
                "producer_id": meta.producer_id,
                "transaction_state": meta.state.display_name,
            }
        )
    return response


TXN_HANDLERS: dict[int, Handler] = {
    ApiKey.ADD_PARTITIONS_TO_TXN: handle_add_partitions_to_txn,
    ApiKey.ADD_OFFSETS_TO_TXN: handle_add_offsets_to_txn,
    ApiKey.END_TXN: handle_end_txn,
    ApiKey.TXN_OFFSET_COMMIT: handle_txn_offset_commit,
    ApiKey.DESCRIBE_TRANSACTIONS: handle_describe_transactions,
    ApiKey.LIST_TRANSACTIONS: handle_list_transactions,
}
