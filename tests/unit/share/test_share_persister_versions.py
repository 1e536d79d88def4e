"""The share persister sends each share-state RPC at the newest version both brokers speak, from
the peer's ApiVersions asked once per connection (and again while the peer does not list it)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from sparklog.broker.context import BrokerContext
from sparklog.broker.share_persister import SharePersister
from sparklog.net.client import KafkaClientConnection
from sparklog.protocol.messages.read_share_group_state import READ_SHARE_GROUP_STATE
from sparklog.protocol.messages.write_share_group_state import WRITE_SHARE_GROUP_STATE
from sparklog.protocol.schema import Api


class FakeConnection:
    def __init__(self, ranges: dict[int, tuple[int, int]]) -> None:
        self.ranges = ranges
        self.asked = 0

    async def request(self, api: Api, version: int, body: dict[str, Any]) -> dict[str, Any]:
        assert (api.key, version) == (18, 3)
        self.asked += 1
        keys = [{"api_key": k, "min_version": lo, "max_version": hi} for k, (lo, hi) in
                self.ranges.items()]  # fmt: skip
        return {"error_code": 0, "api_keys": keys}


def version(persister: SharePersister, connection: FakeConnection, api: Api) -> int:
    conn = cast(KafkaClientConnection, connection)
    return asyncio.run(persister._version(7, conn, api))


def test_newest_common_version_asked_once() -> None:
    persister = SharePersister(cast(BrokerContext, None))
    peer = FakeConnection({85: (0, 1), 84: (0, 0)})
    assert version(persister, peer, WRITE_SHARE_GROUP_STATE) == 1  # KIP-1226's v1
    assert version(persister, peer, READ_SHARE_GROUP_STATE) == 0
    assert peer.asked == 1
    older = FakeConnection({85: (0, 0)})
    assert version(SharePersister(cast(BrokerContext, None)), older, WRITE_SHARE_GROUP_STATE) == 0
    newer = FakeConnection({85: (0, 5)})  # a newer peer: our newest
    assert version(SharePersister(cast(BrokerContext, None)), newer, WRITE_SHARE_GROUP_STATE) == 1


def test_an_api_the_peer_does_not_list_goes_at_version_0_and_is_asked_again() -> None:
    persister = SharePersister(cast(BrokerContext, None))
    peer = FakeConnection({})  # share groups not enabled on the peer yet
    assert version(persister, peer, WRITE_SHARE_GROUP_STATE) == 0
    peer.ranges = {85: (0, 1)}
    assert version(persister, peer, WRITE_SHARE_GROUP_STATE) == 1
    assert peer.asked == 2
