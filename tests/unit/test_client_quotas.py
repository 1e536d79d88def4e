"""Client quotas without a broker: Kafka's precedence of quota entities, the sampled rate and
the throttle time it gives, and AlterClientQuotas / DescribeClientQuotas on an image."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from sparklog.broker.acl_apis import describe_client_quotas
from sparklog.broker.quotas import PRODUCE, ClientQuotaManager, quota_for
from sparklog.controller.security_control import alter_client_quotas
from sparklog.metadata.delta import MetadataDelta
from sparklog.metadata.image import MetadataImage
from sparklog.metadata.security_image import ClientQuotasImage, quota_entity
from sparklog.protocol.errors import KafkaApiError
from sparklog.protocol.message_types import (
    AlterClientQuotasRequestEntries,
    AlterClientQuotasRequestEntriesEntity,
)
from sparklog.security.sampled_rate import QuotaConfig, SampledRate


def quotas(*entries: tuple[dict[str, str | None], float]) -> ClientQuotasImage:
    return ClientQuotasImage(
        MappingProxyType({quota_entity(e): MappingProxyType({PRODUCE: v}) for e, v in entries})
    )


def test_precedence_and_who_shares() -> None:
    image = quotas(
        ({"user": "alice", "client-id": "app"}, 1.0),
        ({"user": "alice", "client-id": None}, 2.0),
        ({"user": "alice"}, 3.0),
        ({"user": None, "client-id": "app"}, 4.0),
        ({"user": None, "client-id": None}, 5.0),
        ({"user": None}, 6.0),
        ({"client-id": "app"}, 7.0),
        ({"client-id": None}, 8.0),
    )
    assert quota_for(image, PRODUCE, "alice", "app") == (1.0, ("alice", "app"))
    assert quota_for(image, PRODUCE, "alice", "other") == (2.0, ("alice", "other"))
    assert quota_for(image, PRODUCE, "bob", "app") == (4.0, ("bob", "app"))
    assert quota_for(image, PRODUCE, "bob", "x") == (5.0, ("bob", "x"))
    only_users = quotas(({"user": "alice"}, 3.0), ({"user": None}, 6.0))
    assert quota_for(only_users, PRODUCE, "alice", "a") == (3.0, ("alice", ""))
    assert quota_for(only_users, PRODUCE, "bob", "a") == (6.0, ("bob", ""))
    only_clients = quotas(({"client-id": "app"}, 7.0), ({"client-id": None}, 8.0))
    assert quota_for(only_clients, PRODUCE, "ANONYMOUS", "app") == (7.0, ("", "app"))
    assert quota_for(only_clients, PRODUCE, "ANONYMOUS", "x") == (8.0, ("", "x"))
    assert quota_for(quotas(), PRODUCE, "a", "b") is None


def test_sampled_rate_counts_at_least_num_minus_one_windows() -> None:
    rate = SampledRate(QuotaConfig(num_samples=11, window_ms=1000))
    rate.record(10_000, 0)
    # one sample just started: the rate divides by 10 windows, not by ~0 s
    assert rate.rate_per_second(0) == pytest.approx(1000.0)
    for second in range(1, 30):
        rate.record(1000, second * 1000)
    # old samples expire: the steady 1000 B/s shows
    assert rate.rate_per_second(29_500) == pytest.approx(1000.0, rel=0.1)


def test_throttle_time_is_kafkas_formula() -> None:
    image = quotas(({"client-id": "app"}, 1000.0))
    manager = ClientQuotaManager(PRODUCE, QuotaConfig(11, 1000), lambda: image)
    assert manager.record("u", "app", 5000, 0) == 0  # 500 B/s over 10 windows
    # 20,000 B over 10.1 s (10 windows + 100 ms): throttle = (rate - 1000) / 1000 * 10,100 ms
    assert manager.record("u", "app", 15_000, 100) == 20_000 - 10_100
    assert manager.record("u", "other", 1_000_000, 100) == 0  # no quota for other clients


def _alter(
    image: MetadataImage, entries: list[AlterClientQuotasRequestEntries]
) -> tuple[MetadataImage, Any]:
    records, response = alter_client_quotas(image, {"entries": entries, "validate_only": False})
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    return delta.apply(), response


def test_alter_and_describe_client_quotas() -> None:
    user: list[AlterClientQuotasRequestEntriesEntity] = [
        {"entity_type": "user", "entity_name": "alice"}
    ]
    image, response = _alter(
        MetadataImage(),
        [
            {"entity": user, "ops": [{"key": PRODUCE, "value": 1024.0, "remove": False}]},
            {
                "entity": [{"entity_type": "client-id", "entity_name": None}],
                "ops": [{"key": "request_percentage", "value": 50.0, "remove": False}],
            },
            {"entity": user, "ops": [{"key": PRODUCE, "value": 1.5, "remove": False}]},
            {"entity": user, "ops": [{"key": "nope", "value": 1.0, "remove": False}]},
            {
                "entity": [{"entity_type": "ip", "entity_name": "1.2.3.4"}, *user],
                "ops": [{"key": PRODUCE, "value": 1.0, "remove": False}],
            },
        ],
    )
    codes = [e["error_code"] for e in response["entries"]]
    assert codes == [0, 0, 42, 42, 42]
    assert "fractional" in response["entries"][2]["error_message"]
    found = describe_client_quotas(
        image.client_quotas,
        {
            "components": [{"entity_type": "user", "match_type": 0, "match": "alice"}],
            "strict": False,
        },
    )
    assert found == [
        {
            "entity": [{"entity_type": "user", "entity_name": "alice"}],
            "values": [{"key": PRODUCE, "value": 1024.0}],
        }
    ]
    defaults = describe_client_quotas(
        image.client_quotas,
        {
            "components": [{"entity_type": "client-id", "match_type": 1, "match": None}],
            "strict": True,
        },
    )
    assert [d["values"] for d in defaults] == [[{"key": "request_percentage", "value": 50.0}]]
    everything = describe_client_quotas(image.client_quotas, {"components": [], "strict": False})
    assert len(everything) == 2
    with pytest.raises(KafkaApiError):
        describe_client_quotas(
            image.client_quotas,
            {
                "components": [{"entity_type": "user", "match_type": 0, "match": None}],
                "strict": False,
            },
        )
    image, response = _alter(
        image, [{"entity": user, "ops": [{"key": PRODUCE, "value": 0.0, "remove": True}]}]
    )
    assert response["entries"][0]["error_code"] == 0
    assert len(image.client_quotas.entities) == 1


def test_enforcement_answers_throttle_time_and_mutes_the_connection() -> None:
    import asyncio
    import time

    from sparklog.broker.quota_enforcement import serve_with_quotas, wait_while_muted
    from sparklog.broker.quotas import QuotaManagers
    from sparklog.protocol.headers import Request, RequestHeader
    from sparklog.protocol.messages import API_BY_KEY
    from sparklog.security.principal import SessionContext

    class Conn:
        session = SessionContext("PLAINTEXT")

    image = quotas(({"client-id": "app"}, 1000.0))
    managers = QuotaManagers(QuotaConfig(2, 1000), lambda: image)
    api = API_BY_KEY[0]
    body = {"topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"x" * 3000}]}]}
    request = Request(RequestHeader(0, api.max_version, 1, "app"), api, body)
    conn = Conn()

    async def serve() -> dict[str, Any]:
        return {"responses": [], "throttle_time_ms": 0}

    async def scenario() -> tuple[int, float]:
        response = await serve_with_quotas(managers, request, conn, serve)
        assert response is not None
        started = time.monotonic()
        await wait_while_muted(conn)
        return response["throttle_time_ms"], time.monotonic() - started

    assert managers.active
    throttle_ms, waited_s = asyncio.run(scenario())
    # 3000 B over one window of 1 s against 1000 B/s: (3000 - 1000) / 1000 * 1000 ms
    assert throttle_ms == 2000
    assert waited_s > 1.5
    assert managers.produce.throttled_requests == 1
