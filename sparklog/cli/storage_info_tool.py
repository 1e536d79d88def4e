"""``sparklog storage info -c server.properties``: Kafka's ``kafka-storage.sh info``.

Looks at every directory of the config (``log.dirs`` and ``metadata.log.dir``) and prints, as
Kafka does, ``Found log directories:`` (``directory`` when one), the ``meta.properties``
they share as ``Found metadata: {cluster.id=..., node.id=..., version=1}`` (with
``directory.id`` when there is a single directory), then ``Found problems:`` (a directory
missing, not formatted, or formatted for another cluster or node id). Status 1 when there
is a problem.
"""

from __future__ import annotations

from pathlib import Path

from sparklog.cli.storage_tool import StorageToolError
from sparklog.config import ServerConfig
from sparklog.storage.meta_properties import MetaProperties, read_meta_properties


def storage_info(config: ServerConfig) -> tuple[list[str], int]:
    directories = list(dict.fromkeys([*config.log_dirs, config.metadata_log_dir]))
    problems: list[str] = []
    found: list[str] = []
    metas: list[tuple[Path, MetaProperties]] = []
    for text in directories:
        path = Path(text)
        if not path.is_dir():
            problems.append(f"{path} {'is not a directory' if path.exists() else 'does not exist'}")
            continue
        found.append(str(path))
        try:
            meta = read_meta_properties(path)
        except StorageToolError as exc:
            problems.append(str(exc))
            continue
        if meta is None:
            problems.append(f"{path} is not formatted.")
            continue
        if metas and (meta.cluster_id, meta.node_id) != (
            metas[0][1].cluster_id,
            metas[0][1].node_id,
        ):
            first = metas[0][1]
            problems.append(
                f"Metadata for {path / 'meta.properties'} was cluster.id={meta.cluster_id}, "
                f"node.id={meta.node_id}, but other directories featured "
                f"cluster.id={first.cluster_id}, node.id={first.node_id}"
            )
        metas.append((path, meta))
    lines: list[str] = []
    if found:
        lines.append(f"Found log director{'y' if len(found) == 1 else 'ies'}:")
        lines += [f"  {d}" for d in found]
        lines.append("")
    elif not problems:
        lines.append("No directories specified.")
    if metas:
        meta = metas[0][1]
        shown = {"cluster.id": meta.cluster_id, "node.id": str(meta.node_id), "version": "1"}
        if len(metas) == 1 and meta.directory_id is not None:
            shown["directory.id"] = meta.directory_id
        text = ", ".join(f"{k}={v}" for k, v in sorted(shown.items()))
        lines += [f"Found metadata: {{{text}}}", ""]
    if problems:
        lines.append(f"Found problem{'' if len(problems) == 1 else 's'}:")
        lines += [f"  {p}" for p in problems]
        lines.append("")
    return lines, 1 if problems else 0
