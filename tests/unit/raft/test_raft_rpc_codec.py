"""Every message a RaftReplica emits encodes with the declared schemas and decodes back."""

from __future__ import annotations

from typing import Any

from sparklog.protocol import codec
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.messages import API_BY_KEY
from sparklog.raft import rpc
from tests.sim.cluster import Simulation


def _normalise(value: Any) -> Any:
    if isinstance(value, memoryview):
        return bytes(value)
    if isinstance(value, dict):
        return {k: _normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    return value


def _subset(sent: Any, decoded: Any) -> bool:
    """Every field we set survives the round trip (decoding adds defaults for the rest)."""
    if isinstance(sent, dict):
        return all(k in decoded and _subset(v, decoded[k]) for k, v in sent.items())
    if isinstance(sent, list):
        return len(sent) == len(decoded) and all(
            _subset(a, b) for a, b in zip(sent, decoded, strict=True)
        )
    return bool(_normalise(sent) == _normalise(decoded))


def test_every_outbound_message_round_trips_through_the_codec() -> None:
    sim = Simulation(7, 3, 1)
    seen: dict[tuple[int, bool], int] = {}
    original = sim._send

    def capture(src: int, message: rpc.Outbound) -> None:
        api = API_BY_KEY[message.api_key]
        spec = api.response if message.is_response else api.request
        version = message.api_version
        assert api.supports(version)
        if message.destination_id >= 0 and "error_code" in message.body and len(message.body) == 1:
            original(src, message)
            return
        raw = codec.encode_bytes(spec, version, message.body)
        decoded = codec.decode(spec, version, memoryview(raw))
        assert _subset(dict(message.body), decoded), (message.api_key, message.body, decoded)
        seen[(message.api_key, message.is_response)] = (
            seen.get((message.api_key, message.is_response), 0) + 1
        )
        original(src, message)

    sim._send = capture  # type: ignore[method-assign]
    sim.workload(100, 2000, 50)

    def crash_leaders() -> None:
        for node in sim.leaders():
            sim.crash(node.node_id)

    sim.at(1000, crash_leaders)
    sim.at(1000, lambda: sim.admin(rpc.DESCRIBE_QUORUM, {"topics": []}))
    sim.run_until(3000)
    for api_key in (rpc.FETCH, rpc.VOTE, rpc.BEGIN_QUORUM_EPOCH):
        assert seen.get((api_key, False)) and seen.get((api_key, True)), (api_key, seen)


def test_fetch_snapshot_and_snapshot_id_bodies_round_trip() -> None:
    api = API_BY_KEY[rpc.FETCH_SNAPSHOT]
    version = rpc.REQUEST_VERSIONS[rpc.FETCH_SNAPSHOT]
    request = rpc.fetch_snapshot_request("c", 3, bytes(range(16)), 4, (120, 2), 77, 1000)
    response = rpc.fetch_snapshot_response(
        ErrorCode.NONE, ErrorCode.NONE, 1, 4, (120, 2), 500, 77, b"chunk"
    )
    for spec, body in ((api.request, request), (api.response, response)):
        raw = codec.encode_bytes(spec, version, body)
        assert _subset(body, codec.decode(spec, version, memoryview(raw)))
    fetch = API_BY_KEY[rpc.FETCH]
    fetch_body = rpc.fetch_response(
        ErrorCode.NONE, ErrorCode.NONE, 1, 4, 10, 120, None, snapshot=(120, 2)
    )
    raw = codec.encode_bytes(fetch.response, rpc.REQUEST_VERSIONS[rpc.FETCH], fetch_body)
    decoded = codec.decode(fetch.response, rpc.REQUEST_VERSIONS[rpc.FETCH], memoryview(raw))
    assert _subset(fetch_body, decoded)
