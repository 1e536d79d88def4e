"""The follower's replication state machine for one partition (Kafka's fetcher logic).

The driver asks :meth:`FollowerCore.fetch_position` what to fetch, sends it to the leader and
hands the answer to :meth:`FollowerCore.on_fetch_response`, which changes the log and says what
to do next. No I/O, no clock.

Invariants:
- The log only changes in three ways: the leader's batches appended as they are (offsets and
  leader epochs kept, never decoded record by record), a truncation to the point where our
  history and the leader's diverge (KIP-320: the leader's ``diverging_epoch`` and our own
  epoch cache), or a full restart at the leader's log start offset, or, when the leader says
  OFFSET_MOVED_TO_TIERED_STORAGE, a restart the driver makes from the tier (KIP-405).
- A response is applied only if it answers our current position (fetch offset = our LEO, same
  leader epoch and, when the driver echoes it, the same position generation, which every
  truncation and leader change bumps); anything else is from before a truncation or an epoch
  change and is ignored, even if the log has since grown back to the same offset.
- The HW is ``min(leader HW, our LEO)``; the log start offset follows the leader's upwards.
- A view whose leader epoch is below the latest epoch in our log is stale (old metadata
  replayed after a restart) and refused: following it would truncate committed records.
- After FENCED_LEADER_EPOCH (the leader is ahead of us) we stop until the metadata image names
  a newer leader epoch; other errors back off and retry.
"""

from __future__ import annotations

from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.records import LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, parse_batch_header
from sparklog.replication.log import Records, ReplicaLog
from sparklog.replication.messages import (
    UNKNOWN_OFFSET,
    EpochEndOffset,
    FetchPosition,
    FetchResponsePartition,
    FollowerAction,
    FollowerOutcome,
    PartitionView,
)


def complete_batches(records: Records) -> memoryview:
    """The prefix of ``records`` made of whole batches (a fetch may end in a partial one)."""
    view = memoryview(records)
    pos = 0
    while len(view) - pos >= RECORD_BATCH_OVERHEAD:
        header = parse_batch_header(view, pos)
        size = header.batch_length + LOG_OVERHEAD
        if header.batch_length <= 0 or pos + size > len(view):
            break
        pos += size
    return view[:pos]


class FollowerCore:
    """Follower-side replication of one partition hosted on broker ``local_id``."""

    def __init__(self, local_id: int, log: ReplicaLog) -> None:
        self.local_id = local_id
        self.log = log
        self.leader_id = -1
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.awaiting_metadata = False
        self._generation = 0

    def become_follower(self, view: PartitionView) -> bool:
        """Adopt the leader named by the metadata image; True when fetching must (re)start
        from a new leader or leader epoch, False for a stale or unchanged view."""
        if view.leader == self.local_id:
            raise ValueError(f"broker {self.local_id} is the leader in {view}")
        if view.leader_epoch < self.leader_epoch or view.partition_epoch < self.partition_epoch:
            return False
        if view.leader_epoch < self.log.latest_epoch:
            return False  # history: our log already holds a newer leader's batches
        changed = view.leader_epoch != self.leader_epoch or view.leader != self.leader_id
        self.partition_epoch = view.partition_epoch
        if changed:
            self.leader_id = view.leader
            self.leader_epoch = view.leader_epoch
            self.awaiting_metadata = False
            self._generation += 1
        return changed

    def fetch_position(self) -> FetchPosition | None:
        """What to fetch next, or None while there is no leader to fetch from."""
        if self.leader_id < 0 or self.awaiting_metadata:
            return None
        log = self.log
        return FetchPosition(
            fetch_offset=log.log_end_offset,
            last_fetched_epoch=log.latest_epoch,
            current_leader_epoch=self.leader_epoch,
            log_start_offset=log.log_start_offset,
            generation=self._generation,
        )

    def on_fetch_response(
        self, response: FetchResponsePartition, now_ms: int | None = None
    ) -> FollowerOutcome:
        log = self.log
        if (
            response.current_leader_epoch != self.leader_epoch
            or response.fetch_offset != log.log_end_offset
            or (response.generation is not None and response.generation != self._generation)
            or self.awaiting_metadata
        ):
            return FollowerOutcome(FollowerAction.IGNORED)
        code = response.error_code
        if code == ErrorCode.NONE:
            if response.diverging_epoch is not None:
                self._generation += 1
                target = self._truncate_on_divergence(response.diverging_epoch)
                return FollowerOutcome(FollowerAction.CONTINUE, truncated_to=target)
            return self._append(response, now_ms)
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            return self._out_of_range(response)
        if code == ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE:
            # The leader's local log starts above us: the driver rebuilds the log from the
            # store (or restarts at the leader's local log start) and calls restarted().
            return FollowerOutcome(FollowerAction.BUILD_TIER_STATE, error=code)
        if code == ErrorCode.FENCED_LEADER_EPOCH:
            self.awaiting_metadata = True
            return FollowerOutcome(FollowerAction.AWAIT_METADATA, error=code)
        return FollowerOutcome(FollowerAction.BACKOFF, error=code)

    def restarted(self) -> None:
        """The driver restarted the log (from the store): answers to older positions are
        stale from now on."""
        self._generation += 1

    def _truncate_on_divergence(self, diverging: EpochEndOffset) -> int:
        log = self.log
        end = log.log_end_offset
        if diverging.end_offset < 0:
            target = min(log.high_watermark, end)
        elif diverging.epoch < 0:
            target = diverging.end_offset
        else:
            our_epoch, our_end = log.end_offset_for_epoch(diverging.epoch)
            if our_epoch < 0 or our_end < 0:
                # We know nothing of that epoch: the leader's end of it is all we have.
                target = diverging.end_offset
            elif our_epoch != diverging.epoch:
                # Our history skips the leader's epoch: cut back to the end of the largest
                # epoch we share below it; the next fetch checks again from there.
                target = our_end
            else:
                target = min(diverging.end_offset, our_end)
        target = max(min(target, end), 0)
        log.truncate_to(target)
        # Kafka truncates the epoch cache even when the log has nothing to cut: an epoch we
        # assigned as leader but never wrote to would otherwise diverge again forever.
        log.epoch_cache.truncate_from_end(log.log_end_offset)
        return target

    def _append(self, response: FetchResponsePartition, now_ms: int | None) -> FollowerOutcome:
        log = self.log
        appended_to = UNKNOWN_OFFSET
        if response.records is not None and len(response.records) > 0:
            batches = complete_batches(response.records)
            if len(batches) > 0:
                try:
                    log.append_as_follower(batches, now_ms)
                except KafkaApiError as exc:
                    return FollowerOutcome(FollowerAction.BACKOFF, error=int(exc.code))
                appended_to = log.log_end_offset
        hw_changed = self._follow_marks(response)
        return FollowerOutcome(
            FollowerAction.CONTINUE, appended_to=appended_to, hw_changed=hw_changed
        )

    def _follow_marks(self, response: FetchResponsePartition) -> bool:
        log = self.log
        end = log.log_end_offset
        if 0 <= log.log_start_offset < response.log_start_offset:
            log.increment_log_start_offset(min(response.log_start_offset, end))
        if response.high_watermark < 0:
            return False
        new_hw = min(response.high_watermark, end)
        if new_hw == log.high_watermark:
            return False
        before = log.high_watermark
        log.high_watermark = new_hw
        return log.high_watermark != before

    def _out_of_range(self, response: FetchResponsePartition) -> FollowerOutcome:
        log = self.log
        self._generation += 1
        end = log.log_end_offset
        leader_end = response.leader_log_end_offset
        if leader_end is None:
            # The leader's LEO is at least its HW; cutting back to the HW is safe and the
            # next fetch's divergence check finds any remaining difference.
            leader_end = response.high_watermark
        if 0 <= leader_end < end:
            log.truncate_to(leader_end)
            return FollowerOutcome(
                FollowerAction.CONTINUE, truncated_to=leader_end, error=response.error_code
            )
        if response.log_start_offset > end:
            log.truncate_fully_and_start_at(response.log_start_offset)
            return FollowerOutcome(
                FollowerAction.CONTINUE,
                truncated_to=response.log_start_offset,
                error=response.error_code,
            )
        return FollowerOutcome(FollowerAction.BACKOFF, error=response.error_code)
