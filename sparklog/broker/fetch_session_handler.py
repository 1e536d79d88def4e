"""The fetching side of a fetch session (KIP-227; Kafka's ``FetchSessionHandler``): what the
next Fetch request to one broker carries, and what its answer does to the session.

Plain and synchronous, one handler per connection to a broker. The caller passes the
partitions it wants now (``build``) and the answer's top-level error, session id and the
partitions it carried (``handle_response``), or tells it the request failed (``handle_error``).

Rules kept from Kafka:
- Without a session (id 0, epoch 0) the request is full and asks for a session; an answer with
  a session id makes the next requests incremental at epochs 1, 2, ... (wrapping to 1).
- An incremental request carries the partitions added since the last request or whose request
  data changed (fetch offset, log start offset, leader epochs, max bytes), and lists the
  partitions no longer wanted in ``forgotten_topics_data``. Partitions an incremental answer
  leaves out had nothing new.
- FETCH_SESSION_ID_NOT_FOUND starts over with a new full fetch (session id 0); any other
  top-level error, a failed request, or an answer naming partitions we did not ask for (a full
  answer must name exactly the session's) closes the session and asks for a new one in the
  next full fetch (the old id with epoch 0).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from sparklog.broker.fetch_session import INITIAL_EPOCH, INVALID_SESSION_ID, next_epoch
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import FetchRequestTopicsPartitions

# How the caller names a partition: (topic id, partition) from Fetch v13, (name, partition) before.
Key = TypeVar("Key", bound=Hashable)


@dataclass(frozen=True, slots=True)
class FetchRequestData(Generic[Key]):
    """The session part of one Fetch request."""

    session_id: int
    epoch: int
    to_send: dict[Key, FetchRequestTopicsPartitions]
    to_forget: list[Key]

    @property
    def full(self) -> bool:
        return self.epoch == INITIAL_EPOCH


class FetchSessionHandler(Generic[Key]):
    def __init__(self) -> None:
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self._session: dict[Key, FetchRequestTopicsPartitions] = {}
        self.full_requests = 0
        self.incremental_requests = 0

    def build(self, wanted: Mapping[Key, FetchRequestTopicsPartitions]) -> FetchRequestData[Key]:
        """The next request for ``wanted`` (partition -> its Fetch request partition data)."""
        if self.epoch == INITIAL_EPOCH:
            self._session = dict(wanted)
            self.full_requests += 1
            return FetchRequestData(self.session_id, self.epoch, dict(wanted), [])
        to_send = {key: data for key, data in wanted.items() if self._session.get(key) != data}
        to_forget = [key for key in self._session if key not in wanted]
        self._session = dict(wanted)
        self.incremental_requests += 1
        return FetchRequestData(self.session_id, self.epoch, to_send, to_forget)

    def handle_response(self, error_code: int, session_id: int, answered: Iterable[Key]) -> bool:
        """Follow the answer; False when its partitions must not be used."""
        if error_code != ErrorCode.NONE:
            if error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
                self.session_id = INVALID_SESSION_ID
            self.epoch = INITIAL_EPOCH
            return False
        keys = set(answered)
        if self.epoch == INITIAL_EPOCH:
            if keys != set(self._session):
                self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
                return False
            self.session_id = session_id
            self.epoch = next_epoch(INITIAL_EPOCH) if session_id else INITIAL_EPOCH
            return True
        if not keys <= set(self._session):
            self.epoch = INITIAL_EPOCH
            return False
        if session_id == INVALID_SESSION_ID:  # the broker closed the session
            self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
        else:
            self.epoch = next_epoch(self.epoch)
        return True

    def handle_error(self) -> None:
        """The request failed (connection, timeout): the next fetch is full."""
        self.epoch = INITIAL_EPOCH
