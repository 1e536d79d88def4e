"""ListTransactions v2 (KIP-1152): the transactional id pattern filter, a regular expression
that must match a whole id; null or empty lists every id; a bad pattern is
INVALID_REGULAR_EXPRESSION."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from sparklog.protocol.errors import ErrorCode
from tests.unit.coordinator.test_txn_apis import call, context, init


def _body(pattern: str | None) -> dict[str, Any]:
    return {
        "state_filters": [],
        "producer_id_filters": [],
        "duration_filter": -1,
        "transactional_id_pattern": pattern,
    }


def test_pattern_filters_whole_transactional_ids(tmp_path: Path) -> None:
    async def run() -> None:
        ctx = context(tmp_path)
        for tid in ("orders-1", "orders-2", "payments"):
            await init(ctx, tid=tid)

        async def listed(pattern: str | None) -> list[str]:
            response = await call(ctx, "ListTransactions", 2, _body(pattern))
            assert response["error_code"] == 0, response
            return sorted(t["transactional_id"] for t in response["transaction_states"])

        assert await listed(None) == ["orders-1", "orders-2", "payments"]
        assert await listed("") == ["orders-1", "orders-2", "payments"]
        assert await listed("orders-.*") == ["orders-1", "orders-2"]
        assert await listed("orders") == []  # a whole-id match, not a search
        assert await listed("pay.*|orders-2") == ["orders-2", "payments"]
        bad = await call(ctx, "ListTransactions", 2, _body("(orders"))
        assert bad["error_code"] == ErrorCode.INVALID_REGULAR_EXPRESSION
        assert bad["transaction_states"] == []

    asyncio.run(run())
