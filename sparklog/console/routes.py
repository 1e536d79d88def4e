"""The console's routes on the node's HTTP listener (``sparklog.console.enable=true``).

Contract:

- :meth:`Console.answer` maps ``GET /console...`` to ``(status, html)``; any other path is
  ``None`` (the listener answers it: metrics, or 404). Routes: ``/console`` (overview),
  ``/console/topics``, ``/console/topics/<topic>``,
  ``/console/topics/<topic>/partitions/<n>?offset=&limit=&format=text|hex`` (record browser),
  ``/console/groups``, ``/console/groups/<group>``, ``/console/tier``.
- Read-only: the console sends no request that changes the cluster.
- Work happens off the event loop (a thread per page, a fresh client connection to this node's
  own broker listener), bounded by the client's request timeout. A missing topic, partition or
  group is 404 naming it; a malformed query (non-numeric offset) is 400 saying what to fix; a
  cluster error is 503 with its message. Never a traceback in a page.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from urllib.parse import parse_qs, unquote

from sparklog.client.admin import AdminClient, AdminError
from sparklog.client.consumer import FetchError
from sparklog.console import data, pages
from sparklog.metadata.image import MetadataImage
from sparklog.metrics import MetricsRegistry

log = logging.getLogger(__name__)

PREFIX = "/console"
TOPIC_RESOURCE = 2
CLIENT_SETTINGS = {"client.id": "sparklog-console", "request.timeout.ms": "15000"}


class BadQuery(ValueError):
    """A query parameter the page cannot use; the message says what to fix."""


def _int_param(query: dict[str, list[str]], name: str, default: int) -> int:
    raw = query.get(name, [str(default)])[0]
    try:
        return int(raw)
    except ValueError:
        raise BadQuery(f"{name} must be a whole number, got {raw!r}") from None


class Console:
    def __init__(
        self,
        bootstrap: Callable[[], str],
        image: Callable[[], MetadataImage],
        registry: MetricsRegistry,
    ) -> None:
        self._bootstrap = bootstrap
        self._image = image
        self._registry = registry

    async def answer(self, method: str, target: str) -> tuple[int, str] | None:
        path, _, query_text = target.partition("?")
        if path != PREFIX and not path.startswith(PREFIX + "/"):
            return None
        if method not in ("GET", "HEAD"):
            return 405, pages.error_page(405, "The console is read-only: use GET.")
        parts = [unquote(p) for p in path[len(PREFIX) :].split("/") if p]
        query = parse_qs(query_text)
        try:
            return 200, await asyncio.to_thread(self._render, parts, query)
        except data.NotFound as exc:
            return 404, pages.error_page(404, str(exc))
        except BadQuery as exc:
            return 400, pages.error_page(400, str(exc))
        except (AdminError, OSError, ConnectionError, FetchError) as exc:
            return 503, pages.error_page(503, f"The cluster did not answer: {exc}")

    def _render(self, parts: list[str], query: dict[str, list[str]]) -> str:
        image = self._image()
        if parts[:1] == ["topics"] and len(parts) == 4 and parts[2] == "partitions":
            partition = _int_param({"partition": [parts[3]]}, "partition", 0)
            offset = _int_param(query, "offset", 0)
            limit = _int_param(query, "limit", 50)
            as_text = query.get("format", ["text"])[0] != "hex"
            rows = data.records(self._bootstrap(), image, parts[1], partition, offset, limit)
            return pages.records_page(parts[1], partition, offset, rows, as_text)
        with AdminClient(self._bootstrap(), CLIENT_SETTINGS) as admin:
            match parts:
                case []:
                    return pages.overview_page(data.cluster_view(admin, image))
                case ["topics"]:
                    return pages.topics_page(data.cluster_view(admin, image))
                case ["topics", name]:
                    return pages.topic_page(data.topic_view(admin, image, name))
                case ["groups"]:
                    return pages.groups_page(data.groups(admin))
                case ["groups", group_id]:
                    return pages.group_page(data.group_view(admin, group_id))
                case ["tier"]:
                    tiered = [
                        name
                        for name in sorted(image.topics.by_name)
                        if image.configs.resources.get((TOPIC_RESOURCE, name), {})
                        .get("remote.storage.enable", "false")
                        .lower()
                        == "true"
                    ]
                    views = [data.topic_view(admin, image, name) for name in tiered]
                    return pages.tier_page(views, self._tier_metrics())
        raise data.NotFound(f"No console page at /console/{'/'.join(parts)}.")

    def _tier_metrics(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for mbean, attributes in self._registry.to_json().items():
            if not mbean.startswith("kafka.server:type=BrokerTopicMetrics,name=Remote"):
                continue
            if ",topic=" in mbean:
                continue
            name = mbean.rsplit("name=", 1)[1]
            value = attributes.get("Value", attributes.get("OneMinuteRate"))
            if isinstance(value, int | float):
                out[name] = float(value)
        return out
