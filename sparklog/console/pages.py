"""The console's HTML: server-rendered pages, no script, no external resource.

Contract: each function turns a view from :mod:`sparklog.console.data` into one whole HTML
document (``str``). Every value from the cluster (topic names, keys, values, headers, hosts) is
escaped; figures a test or a scraper may want carry ``data-*`` attributes naming them
(``<td data-lag="0">``). Values are shown as UTF-8 text when they decode cleanly and
``format=text``, else as hex.
"""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Iterable, Sequence
from urllib.parse import quote

from sparklog.client.consumer import ConsumedRecord
from sparklog.console.data import ClusterView, GroupRow, GroupView, PartitionRow, TopicView

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2433;background:#f6f7f9}
header{background:#1d2433;color:#fff;padding:10px 20px;display:flex;gap:24px;align-items:center}
header a{color:#cfe0ff;text-decoration:none}header b{font-size:16px}
main{padding:16px 20px}h1{font-size:20px;margin:4px 0 12px}h2{font-size:16px;margin:18px 0 8px}
table{border-collapse:collapse;background:#fff;margin-bottom:12px}
th,td{border:1px solid #d9dde5;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eef1f6}td.num{text-align:right;font-variant-numeric:tabular-nums}
.bad{color:#b3261e;font-weight:600}.ok{color:#1e7b34}.muted{color:#6b7385}
.cards{display:flex;gap:12px;flex-wrap:wrap}.card{background:#fff;border:1px solid #d9dde5;
padding:8px 14px;min-width:140px}.card .v{font-size:22px;font-weight:600}
code,pre{font:12px/1.3 ui-monospace,monospace}pre{margin:0;white-space:pre-wrap;max-width:60em}
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _offset(value: int | None) -> str:
    return "—" if value is None else str(value)


def _ids(ids: Iterable[int]) -> str:
    return ",".join(str(i) for i in ids) or "—"


def page(title: str, body: str) -> str:
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{_e(title)} · sparklog</title><style>{_STYLE}</style></head><body>"
        "<header><b>sparklog</b><a href='/console'>Overview</a>"
        "<a href='/console/topics'>Topics</a><a href='/console/groups'>Groups</a>"
        "<a href='/console/tier'>Tier</a></header>"
        f"<main><h1>{_e(title)}</h1>{body}</main></body></html>"
    )


def _table(header: Sequence[str], rows: Iterable[str]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _card(label: str, value: object, name: str, bad: bool = False) -> str:
    cls = "v bad" if bad else "v"
    return (
        f"<div class=card><div class=muted>{_e(label)}</div>"
        f"<div class='{cls}' data-{name}='{_e(value)}'>{_e(value)}</div></div>"
    )


def _topic_link(name: str) -> str:
    return f"<a href='/console/topics/{quote(name, safe='')}'>{_e(name)}</a>"


def overview_page(view: ClusterView) -> str:
    fenced = sum(1 for b in view.brokers if b.fenced)
    offline = sum(t.offline for t in view.topics)
    under = sum(t.under_replicated for t in view.topics)
    quorum = view.quorum
    cards = (
        _card("Brokers", len(view.brokers), "brokers")
        + _card("Fenced brokers", fenced, "fenced", fenced > 0)
        + _card("Topics", len(view.topics), "topics")
        + _card("Offline partitions", offline, "offline", offline > 0)
        + _card("Under-replicated", under, "under-replicated", under > 0)
        + _card("Quorum leader", quorum.leader_id, "quorum-leader", quorum.leader_id < 0)
    )
    info = (
        f"<p>Cluster id <code data-cluster-id='{_e(view.cluster_id)}'>{_e(view.cluster_id)}</code>"
        f" · metadata offset {view.metadata_offset} · features "
        + ", ".join(f"{_e(k)}={v}" for k, v in view.features.items())
        + "</p>"
    )
    if quorum.error:
        quorum_html = f"<p class=bad>DescribeQuorum failed: {_e(quorum.error)}</p>"
    else:
        quorum_html = (
            f"<p>Leader {quorum.leader_id}, epoch {quorum.leader_epoch}, "
            f"high watermark {quorum.high_watermark}</p>"
            + _table(
                ("Node", "Role", "Log end offset", "Lag"),
                (
                    f"<tr data-voter='{v.replica_id}'><td>{v.replica_id}</td><td>{_e(v.role)}</td>"
                    f"<td class=num>{v.log_end_offset}</td><td class=num>{v.lag}</td></tr>"
                    for v in quorum.voters
                ),
            )
        )
    brokers = _table(
        ("Broker", "Endpoints", "Epoch", "State", "Rack"),
        (
            f"<tr data-broker='{b.broker_id}'><td>{b.broker_id}</td><td>{_e(b.endpoints)}</td>"
            f"<td class=num>{b.epoch}</td>"
            + (
                "<td class=bad>fenced</td>"
                if b.fenced
                else "<td>controlled shutdown</td>"
                if b.in_controlled_shutdown
                else "<td class=ok>unfenced</td>"
            )
            + f"<td>{_e(b.rack or '—')}</td></tr>"
            for b in view.brokers
        ),
    )
    return page(
        "Cluster overview",
        f"<div class=cards>{cards}</div>{info}<h2>Controller quorum</h2>{quorum_html}"
        f"<h2>Brokers</h2>{brokers}",
    )


def topics_page(view: ClusterView) -> str:
    rows = (
        f"<tr data-topic='{_e(t.name)}'><td>{_topic_link(t.name)}</td>"
        f"<td class=num>{t.partitions}</td><td class=num>{t.replication_factor}</td>"
        f"<td class='num{' bad' if t.under_replicated else ''}'>{t.under_replicated}</td>"
        f"<td class='num{' bad' if t.offline else ''}'>{t.offline}</td></tr>"
        for t in view.topics
    )
    return page(
        "Topics",
        _table(("Topic", "Partitions", "Replication", "Under-replicated", "Offline"), rows),
    )


def _partition_row(topic: str, p: PartitionRow) -> str:
    isr_bad = " bad" if len(p.isr) < len(p.replicas) else ""
    records = f"/console/topics/{quote(topic, safe='')}/partitions/{p.partition}"
    return (
        f"<tr data-partition='{p.partition}'><td><a href='{records}'>{p.partition}</a></td>"
        f"<td class='num{' bad' if p.leader < 0 else ''}'>{p.leader}</td>"
        f"<td class=num>{p.leader_epoch}</td><td>{_ids(p.replicas)}</td>"
        f"<td class='{isr_bad.strip()}'>{_ids(p.isr)}</td><td>{_ids(p.elr)}</td>"
        f"<td class=num data-log-start='{_offset(p.log_start)}'>{_offset(p.log_start)}</td>"
        f"<td class=num data-hw='{_offset(p.high_watermark)}'>{_offset(p.high_watermark)}</td>"
        f"<td class=num data-lso='{_offset(p.last_stable)}'>{_offset(p.last_stable)}</td>"
        f"<td class=num>{_offset(p.earliest_local)}</td><td>{_e(p.tiered_range)}</td>"
        f"<td class=bad>{_e(p.error or '')}</td></tr>"
    )


def topic_page(view: TopicView) -> str:
    header = (
        "Partition",
        "Leader",
        "Epoch",
        "Replicas",
        "ISR",
        "ELR",
        "Log start",
        "High watermark",
        "Last stable",
        "Earliest local",
        "Tiered",
        "Error",
    )
    configs = (
        _table(
            ("Config", "Value"),
            (f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in view.configs.items()),
        )
        if view.configs
        else "<p class=muted>No topic-level overrides (broker defaults apply).</p>"
    )
    return page(
        f"Topic {view.name}",
        f"<p class=muted>Topic id {_e(view.topic_id)}</p>"
        + _table(header, (_partition_row(view.name, p) for p in view.partitions))
        + f"<h2>Configs</h2>{configs}",
    )


def groups_page(rows: list[GroupRow]) -> str:
    body = _table(
        ("Group", "Type", "State"),
        (
            f"<tr data-group='{_e(g.group_id)}'><td><a href='/console/groups/"
            f"{quote(g.group_id, safe='')}'>{_e(g.group_id)}</a></td><td>{_e(g.group_type)}</td>"
            f"<td>{_e(g.state)}</td></tr>"
            for g in rows
        ),
    )
    return page("Consumer groups", body if rows else "<p class=muted>No groups.</p>")


def group_page(view: GroupView) -> str:
    d = view.description
    cards = (
        _card("State", d.state, "state")
        + _card("Members", len(d.members), "members")
        + _card("Total lag", view.total_lag, "total-lag")
    )
    members = _table(
        ("Member", "Client id", "Host", "Assignment"),
        (
            f"<tr><td><code>{_e(m.member_id)}</code></td><td>{_e(m.client_id)}</td>"
            f"<td>{_e(m.host)}</td><td>"
            + _e(", ".join(f"{t}-{p}" for t, p in sorted(m.assignment)) or "—")
            + "</td></tr>"
            for m in d.members
        ),
    )
    offsets = _table(
        ("Topic", "Partition", "Committed offset", "Log end offset", "Lag"),
        (
            f"<tr data-tp='{_e(r.topic)}-{r.partition}'><td>{_topic_link(r.topic)}</td>"
            f"<td class=num>{r.partition}</td><td class=num>{r.committed}</td>"
            f"<td class=num>{_offset(r.end)}</td>"
            f"<td class=num data-lag='{_offset(r.lag)}'>{_offset(r.lag)}</td></tr>"
            for r in view.offsets
        ),
    )
    return page(
        f"Group {d.group_id}",
        f"<div class=cards>{cards}</div><p>{_e(d.group_type)} group · coordinator "
        f"{_e(d.coordinator)} · assignor {_e(d.assignor or '—')}</p>"
        f"<h2>Members</h2>{members}<h2>Offsets and lag</h2>{offsets}",
    )


def tier_page(topics: list[TopicView], node_metrics: dict[str, float]) -> str:
    cards = "".join(
        _card(label, f"{node_metrics.get(key, 0):g}", key)
        for key, label in (
            ("RemoteCopyLagBytes", "Copy lag (bytes, this node)"),
            ("RemoteCopyLagSegments", "Copy lag (segments, this node)"),
            ("RemoteCopyBytesPerSec", "Copied (bytes/s, 1 min)"),
            ("RemoteFetchBytesPerSec", "Remote fetch (bytes/s, 1 min)"),
        )
    )
    rows = (
        f"<tr data-tier='{_e(t.name)}-{p.partition}'><td>{_topic_link(t.name)}</td>"
        f"<td class=num>{p.partition}</td><td>{_e(p.tiered_range)}</td>"
        f"<td class=num>{_offset(p.earliest_local)}</td>"
        f"<td class=num>{_offset(p.high_watermark)}</td>"
        f"<td class=num data-copy-lag='{_offset(p.copy_lag)}'>{_offset(p.copy_lag)}</td></tr>"
        for t in topics
        for p in t.partitions
    )
    table = _table(
        ("Topic", "Partition", "Tiered offsets", "Earliest local", "High watermark", "Copy lag"),
        rows,
    )
    body = f"<div class=cards>{cards}</div><h2>Tiered topics</h2>"
    return page(
        "Tiered storage",
        body + (table if topics else "<p class=muted>No topic has remote.storage.enable=true.</p>"),
    )


def _render(data: bytes | None, as_text: bool) -> str:
    if data is None:
        return "<span class=muted>null</span>"
    if as_text:
        try:
            return f"<pre>{_e(data.decode('utf-8'))}</pre>"
        except UnicodeDecodeError:
            pass
    return f"<pre>{data.hex(' ')}</pre>"


def records_page(
    topic: str, partition: int, offset: int, rows: list[ConsumedRecord], as_text: bool
) -> str:
    fmt = "text" if as_text else "hex"
    base = f"/console/topics/{quote(topic, safe='')}/partitions/{partition}"
    next_offset = rows[-1].offset + 1 if rows else offset
    nav = (
        f"<form method=get action='{base}'>From offset <input name=offset value='{offset}' "
        "size=10> <select name=format>"
        + "".join(f"<option{' selected' if f == fmt else ''}>{f}</option>" for f in ("text", "hex"))
        + f"</select> <button>Show</button> · <a href='{base}?offset={next_offset}&format={fmt}'>"
        "next page</a></form>"
    )
    body = _table(
        ("Offset", "Timestamp", "Key", "Value", "Headers"),
        (
            f"<tr data-offset='{r.offset}'><td class=num>{r.offset}</td><td>"
            + dt.datetime.fromtimestamp(r.timestamp / 1000, dt.UTC).isoformat(
                timespec="milliseconds"
            )
            + f"</td><td>{_render(r.key, as_text)}</td><td>{_render(r.value, as_text)}</td><td>"
            + "".join(
                f"<div><code>{_e(k)}</code>: {_render(v, as_text)}</div>" for k, v in r.headers
            )
            + "</td></tr>"
            for r in rows
        ),
    )
    return page(
        f"{topic}-{partition} records",
        nav + (body if rows else "<p class=muted>No records from this offset.</p>"),
    )


def error_page(status: int, message: str) -> str:
    return page(
        "Not found" if status == 404 else "Error", f"<p class=bad data-error>{_e(message)}</p>"
    )
