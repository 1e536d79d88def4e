"""Share sessions (KIP-932) of one partition leader, sans-IO.

A share consumer opens a session on each leader with ShareFetch epoch 0 (replacing any session
it had), then sends epochs 1, 2, ... (wrapping after 2^31-1 to 1); the partitions it named stay
in the session until it forgets them. Epoch -1 closes the session (ShareFetch or
ShareAcknowledge). A request for a session that does not exist is SHARE_SESSION_NOT_FOUND; a
wrong epoch is INVALID_SHARE_SESSION_EPOCH. The caller releases the records a member held in a
session's partitions when the session closes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparklog.protocol.errors import ErrorCode

SessionKey = tuple[str, str]  # (group id, member id)
TopicPartitionKey = tuple[bytes, int]  # (topic id, partition)

_MAX_EPOCH = 2**31 - 1


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    epoch: int
    partitions: list[TopicPartitionKey] = field(default_factory=list)


class ShareSessions:
    def __init__(self) -> None:
        self.sessions: dict[SessionKey, ShareSession] = {}

    def begin(
        self,
        group_id: str,
        member_id: str,
        epoch: int,
        added: list[TopicPartitionKey],
        forgotten: list[TopicPartitionKey],
    ) -> tuple[ErrorCode, ShareSession | None]:
        """Check and advance a request's session; epoch -1 returns the session (removed)."""
        key = (group_id, member_id)
        if epoch == 0:
            session = ShareSession(group_id, member_id, 1)
            self.sessions[key] = session
        else:
            found = self.sessions.get(key)
            if found is None:
                return ErrorCode.SHARE_SESSION_NOT_FOUND, None
            if epoch == -1:
                del self.sessions[key]
                return ErrorCode.NONE, found
            if epoch != found.epoch:
                return ErrorCode.INVALID_SHARE_SESSION_EPOCH, None
            session = found
            session.epoch = 1 if session.epoch >= _MAX_EPOCH else session.epoch + 1
        gone = set(forgotten)
        if gone:
            session.partitions = [p for p in session.partitions if p not in gone]
        for tp in added:
            if tp not in session.partitions:
                session.partitions.append(tp)
        return ErrorCode.NONE, session

    def acknowledge(
        self, group_id: str, member_id: str, epoch: int
    ) -> tuple[ErrorCode, ShareSession | None]:
        """A ShareAcknowledge's epoch: the open session's current one (which then advances, as
        a ShareFetch's does) or -1 (the session closes and is returned); 0 opens nothing."""
        key = (group_id, member_id)
        found = self.sessions.get(key)
        if found is None:
            return ErrorCode.SHARE_SESSION_NOT_FOUND, None
        if epoch == -1:
            del self.sessions[key]
            return ErrorCode.NONE, found
        if epoch != found.epoch:
            return ErrorCode.INVALID_SHARE_SESSION_EPOCH, None
        found.epoch = 1 if found.epoch >= _MAX_EPOCH else found.epoch + 1
        return ErrorCode.NONE, found
