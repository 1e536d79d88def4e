"""A log directory's ``meta.properties`` (Kafka's MetaProperties and MetaPropertiesEnsemble).

Contract:

- :func:`read_meta_properties` reads one directory's file: ``None`` when it has none, a
  :class:`MetaProperties` for a valid version-1 (KRaft) file, :class:`MetaPropertiesError` with
  the path and what is wrong otherwise (unreadable, another version, no ``cluster.id`` or
  ``node.id``, a ``directory.id`` that is not a Uuid).
- :func:`verify_ensemble` is Kafka's ``MetaPropertiesEnsemble.verify`` over the files found:
  one cluster id (the expected one if given), this node's id in every file, no reserved and no
  repeated directory id; it returns the cluster id (``None`` when nothing was found and none
  was expected).
- :meth:`MetaProperties.to_text` is the file's text as Kafka writes it.

Plain values in, plain values out: this module knows nothing of the server configuration.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sparklog.protocol.kafka_uuid import RESERVED_UUIDS, uuid_from_str

__all__ = [
    "META_PROPERTIES",
    "MetaProperties",
    "MetaPropertiesError",
    "read_meta_properties",
    "verify_ensemble",
]

META_PROPERTIES = "meta.properties"


class MetaPropertiesError(Exception):
    """A ``meta.properties`` that is unreadable or disagrees; the message says which and why."""


@dataclass(frozen=True, slots=True)
class MetaProperties:
    """One directory's ``meta.properties`` (Kafka's MetaProperties, version 1)."""

    version: int
    cluster_id: str
    node_id: int
    directory_id: str | None

    def to_text(self) -> str:
        lines = [
            "#",
            f"#{time.strftime('%a %b %d %H:%M:%S %Z %Y')}",
            f"cluster.id={self.cluster_id}",
        ]
        if self.directory_id is not None:
            lines.append(f"directory.id={self.directory_id}")
        lines += [f"node.id={self.node_id}", f"version={self.version}", ""]
        return "\n".join(lines)


def read_meta_properties(directory: str | Path) -> MetaProperties | None:
    """The directory's meta.properties, ``None`` if absent; MetaPropertiesError if unreadable."""
    path = Path(directory) / META_PROPERTIES
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise MetaPropertiesError(f"Unable to read {path}: {exc.strerror}") from None
    props: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        key, _, value = line.partition("=")
        props[key.strip()] = value.strip()
    version_text = props.get("version", "0")
    if version_text != "1":
        raise MetaPropertiesError(
            f"Found unexpected version in {path}: version={version_text}. Only version 1 "
            "(KRaft) meta.properties files are supported."
        )
    if "cluster.id" not in props:
        raise MetaPropertiesError(f"cluster.id was not specified in the v1 file: {path}")
    if "node.id" not in props:
        raise MetaPropertiesError(f"node.id was not specified in {path}")
    try:
        node_id = int(props["node.id"])
    except ValueError:
        raise MetaPropertiesError(f"Invalid node.id {props['node.id']!r} in {path}") from None
    directory_id = props.get("directory.id")
    if directory_id is not None:
        try:
            uuid_from_str(directory_id)
        except ValueError as exc:
            raise MetaPropertiesError(
                f"Unable to read directory.id as a Uuid in {path}: {exc}"
            ) from None
    return MetaProperties(1, props["cluster.id"], node_id, directory_id)


def verify_ensemble(
    found: Mapping[str, MetaProperties], expected_cluster_id: str | None, expected_node_id: int
) -> str | None:
    """Kafka's MetaPropertiesEnsemble.verify: one cluster id, this node id, unique dir ids."""
    cluster_id = expected_cluster_id
    seen: dict[str, str] = {}
    for directory, props in found.items():
        path = Path(directory) / META_PROPERTIES
        if cluster_id is None:
            cluster_id = props.cluster_id
        elif props.cluster_id != cluster_id:
            raise MetaPropertiesError(
                f"Invalid cluster.id in: {path}. Expected {cluster_id}, but read {props.cluster_id}"
            )
        if props.node_id != expected_node_id:
            raise MetaPropertiesError(
                f"Stored node id {props.node_id} doesn't match previous node id "
                f"{expected_node_id} in {path}. If you moved your data, make sure your "
                "configured node id matches. If you intend to create a new node, you should "
                "remove all data in your data directories."
            )
        if props.directory_id is not None:
            if uuid_from_str(props.directory_id) in RESERVED_UUIDS:
                raise MetaPropertiesError(
                    f"Invalid reserved directory ID {props.directory_id} found in {directory}"
                )
            previous = seen.setdefault(props.directory_id, directory)
            if previous != directory:
                raise MetaPropertiesError(
                    f"Duplicate directory ID {props.directory_id} found. It was the ID of "
                    f"{previous}, but also of {directory}"
                )
    return cluster_id
