"""``sparklog storage``: random-uuid, format, and the formatted-storage check run at start-up.

Mirrors Kafka's ``kafka-storage`` (StorageTool / Formatter / MetaPropertiesEnsemble):

- ``format`` writes ``meta.properties`` (``version=1``, ``cluster.id``, ``node.id``, a fresh
  ``directory.id`` per directory) and ``bootstrap.checkpoint`` (the FeatureLevelRecord pinning
  ``metadata.version``) into every ``log.dirs`` entry and ``metadata.log.dir``. It refuses an
  invalid cluster id, an unknown release version, flag combinations Kafka refuses, and a
  directory that is already formatted (unless ``ignore_formatted``, which skips it). Each file
  is written to a temp name, fsynced and renamed, so a crash never leaves half a file.
- :func:`check_formatted` is what ``sparklog server start`` calls first: every directory must
  hold a ``meta.properties`` with the same cluster id and this node's id; the error message
  says which command to run.

Errors are :class:`StorageToolError`; the CLI prints the message and exits 1. The functions
return the lines the CLI prints, so they stay testable without a terminal.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sparklog.config import ServerConfig
from sparklog.metadata.bootstrap import (
    BootstrapError,
    BootstrapMetadata,
    metadata_version_name,
    write_bootstrap_checkpoint,
)
from sparklog.metadata.bootstrap_voters import write_bootstrap_voters
from sparklog.protocol.kafka_uuid import (
    RESERVED_UUIDS,
    ZERO_UUID,
    random_uuid,
    random_uuid_bytes,
    uuid_from_str,
    uuid_to_str,
)
from sparklog.raft.voters import Endpoint as RaftEndpoint
from sparklog.raft.voters import ReplicaKey, VoterNode, VoterSet
from sparklog.security.scram_bootstrap import scram_record

__all__ = [
    "META_PROPERTIES",
    "InitialController",
    "MetaProperties",
    "StorageToolError",
    "check_formatted",
    "format_storage",
    "parse_initial_controllers",
    "random_uuid",
    "read_meta_properties",
]

META_PROPERTIES = "meta.properties"


class StorageToolError(Exception):
    """A format or start-up storage check that failed; the message tells the user what to do."""


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


@dataclass(frozen=True, slots=True)
class InitialController:
    """One ``--initial-controllers`` entry: ``id@host:port:directory-id``."""

    node_id: int
    host: str
    port: int
    directory_id: str


def read_meta_properties(directory: str | Path) -> MetaProperties | None:
    """The directory's meta.properties, ``None`` if absent; StorageToolError if unreadable."""
    path = Path(directory) / META_PROPERTIES
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageToolError(f"Unable to read {path}: {exc.strerror}") from None
    props: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        key, _, value = line.partition("=")
        props[key.strip()] = value.strip()
    version_text = props.get("version", "0")
    if version_text != "1":
        raise StorageToolError(
            f"Found unexpected version in {path}: version={version_text}. Only version 1 "
            "(KRaft) meta.properties files are supported."
        )
    if "cluster.id" not in props:
        raise StorageToolError(f"cluster.id was not specified in the v1 file: {path}")
    if "node.id" not in props:
        raise StorageToolError(f"node.id was not specified in {path}")
    try:
        node_id = int(props["node.id"])
    except ValueError:
        raise StorageToolError(f"Invalid node.id {props['node.id']!r} in {path}") from None
    directory_id = props.get("directory.id")
    if directory_id is not None:
        try:
            uuid_from_str(directory_id)
        except ValueError as exc:
            raise StorageToolError(
                f"Unable to read directory.id as a Uuid in {path}: {exc}"
            ) from None
    return MetaProperties(1, props["cluster.id"], node_id, directory_id)


def _write_atomically(path: Path, text: str) -> None:
    temp = path.with_name(path.name + ".tmp")
    with open(temp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def parse_initial_controllers(text: str) -> list[InitialController]:
    """Parse ``1@host:9093:dirid,2@host:9093:dirid`` (Kafka's DynamicVoters.parse)."""
    voters: list[InitialController] = []
    for entry in (part.strip() for part in text.split(",")):
        node, at, rest = entry.partition("@")
        address, colon, directory_id = rest.rpartition(":")
        host, port_colon, port_text = address.rpartition(":")
        try:
            node_id, port = int(node), int(port_text)
            uuid_from_str(directory_id)
            valid = bool(at and colon and port_colon and host) and node_id >= 0
        except ValueError:
            valid = False
        if not valid:
            raise StorageToolError(
                f"Invalid --initial-controllers entry {entry!r}: expected "
                "id@host:port:directory-id (directory-id from 'sparklog storage random-uuid')"
            )
        voters.append(InitialController(node_id, host.strip("[]"), port, directory_id))
    ids = [voter.node_id for voter in voters]
    if len(set(ids)) != len(ids):
        raise StorageToolError(f"Duplicate node id in --initial-controllers: {text}")
    return voters


def _validate_cluster_id(cluster_id: str) -> None:
    try:
        raw = uuid_from_str(cluster_id)
    except ValueError as exc:
        raise StorageToolError(
            f"Cluster ID string {cluster_id} does not appear to be a valid UUID: {exc}. "
            "Generate one with: sparklog storage random-uuid"
        ) from None
    if raw in RESERVED_UUIDS:
        raise StorageToolError(
            f"Cluster ID {cluster_id} is a reserved UUID. "
            "Generate one with: sparklog storage random-uuid"
        )


def format_storage(
    config: ServerConfig,
    cluster_id: str,
    standalone: bool = False,
    initial_controllers: str | None = None,
    no_initial_controllers: bool = False,
    release_version: str | None = None,
    ignore_formatted: bool = False,
    add_scram: Sequence[str] = (),
) -> list[str]:
    """Format this node's directories; returns the lines to print."""
    _validate_cluster_id(cluster_id)
    try:
        bootstrap = BootstrapMetadata.from_release_version(release_version, "format command")
    except BootstrapError as exc:
        raise StorageToolError(str(exc)) from None
    if add_scram:
        # KIP-900: SCRAM users exist from the first metadata record on.
        try:
            scram = tuple(scram_record(argument) for argument in add_scram)
        except ValueError as exc:
            raise StorageToolError(str(exc)) from None
        bootstrap = BootstrapMetadata(bootstrap.records + scram, bootstrap.source)
    flags = [standalone, initial_controllers is not None, no_initial_controllers]
    if sum(flags) > 1:
        raise StorageToolError(
            "Only one of --standalone, --initial-controllers and --no-initial-controllers "
            "may be given."
        )
    if standalone and not config.is_controller:
        raise StorageToolError("You can only use --standalone on a controller.")
    if (standalone or initial_controllers is not None) and config.quorum_voters:
        raise StorageToolError(
            "You cannot specify controller.quorum.voters and format the node with "
            "--initial-controllers or --standalone. If you want to use dynamic quorum, please "
            "remove controller.quorum.voters and specify controller.quorum.bootstrap.servers "
            "instead."
        )
    if config.is_controller and not config.quorum_voters and not any(flags):
        raise StorageToolError(
            "Because controller.quorum.voters is not set on this controller, you must specify "
            "one of the following: --standalone, --initial-controllers, or "
            "--no-initial-controllers."
        )
    voters = parse_initial_controllers(initial_controllers) if initial_controllers else []
    voter_dir_ids = {voter.node_id: voter.directory_id for voter in voters}

    dirs = config.all_dirs
    existing: dict[str, MetaProperties] = {}
    for directory in dirs:
        props = read_meta_properties(directory)
        if props is not None:
            existing[directory] = props
    _verify_ensemble(existing, cluster_id, config.node_id)
    if existing and not ignore_formatted:
        first = next(iter(existing))
        raise StorageToolError(
            f"Log directory {first} is already formatted. "
            "Use --ignore-formatted to ignore this directory and format the others."
        )
    to_format = [d for d in dirs if d not in existing]
    if not to_format:
        return ["All of the log directories are already formatted."]

    used_ids = {p.directory_id for p in existing.values() if p.directory_id}
    version_name = metadata_version_name(bootstrap.metadata_version)
    lines: list[str] = []
    for directory in to_format:
        is_metadata = directory == config.metadata_log_dir
        if is_metadata and config.node_id in voter_dir_ids:
            directory_id = voter_dir_ids[config.node_id]
        else:
            directory_id = uuid_to_str(random_uuid_bytes())
            while directory_id in used_ids:
                directory_id = uuid_to_str(random_uuid_bytes())
        used_ids.add(directory_id)
        kind = "metadata directory" if is_metadata else "data directory"
        lines.append(f"Formatting {kind} {directory} with metadata.version {version_name}.")
        path = Path(directory)
        try:
            path.mkdir(parents=True, exist_ok=True)
            write_bootstrap_checkpoint(path, bootstrap)
            if is_metadata and (standalone or voters):
                write_bootstrap_voters(path, _voter_set(config, voters, directory_id))
            meta = MetaProperties(1, cluster_id, config.node_id, directory_id)
            _write_atomically(path / META_PROPERTIES, meta.to_text())
        except OSError as exc:
            raise StorageToolError(
                f"Error while writing meta.properties file {directory}: {exc}"
            ) from None
    return lines


def _voter_set(
    config: ServerConfig, voters: list[InitialController], own_directory_id: str
) -> VoterSet:
    """The first voter set: ``--initial-controllers``, or this node alone (``--standalone``)."""
    names = config.controller_listener_names
    name = names[0] if names else "CONTROLLER"
    if voters:
        return VoterSet.of(
            VoterNode(
                ReplicaKey(v.node_id, uuid_from_str(v.directory_id)),
                (RaftEndpoint(name, v.host, v.port),),
            )
            for v in voters
        )
    endpoints = tuple(
        RaftEndpoint(listener.name, listener.host or "localhost", listener.port)
        for listener in config.controller_listeners
    )
    if not endpoints:
        raise StorageToolError(
            "--standalone needs a controller listener: list one of controller.listener.names "
            "in listeners"
        )
    directory_id = uuid_from_str(own_directory_id) if own_directory_id else ZERO_UUID
    return VoterSet.of([VoterNode(ReplicaKey(config.node_id, directory_id), endpoints)])


def _verify_ensemble(
    found: dict[str, MetaProperties], expected_cluster_id: str | None, expected_node_id: int
) -> str | None:
    """Kafka's MetaPropertiesEnsemble.verify: one cluster id, this node id, unique dir ids."""
    cluster_id = expected_cluster_id
    seen: dict[str, str] = {}
    for directory, props in found.items():
        path = Path(directory) / META_PROPERTIES
        if cluster_id is None:
            cluster_id = props.cluster_id
        elif props.cluster_id != cluster_id:
            raise StorageToolError(
                f"Invalid cluster.id in: {path}. Expected {cluster_id}, but read {props.cluster_id}"
            )
        if props.node_id != expected_node_id:
            raise StorageToolError(
                f"Stored node id {props.node_id} doesn't match previous node id "
                f"{expected_node_id} in {path}. If you moved your data, make sure your "
                "configured node id matches. If you intend to create a new node, you should "
                "remove all data in your data directories."
            )
        if props.directory_id is not None:
            if uuid_from_str(props.directory_id) in RESERVED_UUIDS:
                raise StorageToolError(
                    f"Invalid reserved directory ID {props.directory_id} found in {directory}"
                )
            previous = seen.setdefault(props.directory_id, directory)
            if previous != directory:
                raise StorageToolError(
                    f"Duplicate directory ID {props.directory_id} found. It was the ID of "
                    f"{previous}, but also of {directory}"
                )
    return cluster_id


def _format_hint(config: ServerConfig, config_path: str, cluster_id: str | None) -> str:
    if cluster_id is not None:
        return (
            f"sparklog storage format --cluster-id {cluster_id} --config {config_path} "
            "--ignore-formatted"
        )
    command = (
        "sparklog storage format --cluster-id $(sparklog storage random-uuid) "
        f"--config {config_path}"
    )
    if config.is_controller and not config.quorum_voters:
        command += " --standalone"
    return command


def check_formatted(
    config: ServerConfig, config_path: str = "server.properties"
) -> tuple[str, dict[str, str]]:
    """Verify every directory is formatted for this node; returns ``(cluster id, {dir: dir id})``.

    The StorageToolError message names the directory and the command to run.
    """
    found: dict[str, MetaProperties] = {}
    missing: list[str] = []
    for directory in config.all_dirs:
        props = read_meta_properties(directory)
        if props is None:
            missing.append(directory)
        else:
            found[directory] = props
    cluster_id = _verify_ensemble(found, None, config.node_id)
    if missing:
        raise StorageToolError(
            f"No {META_PROPERTIES} found in {missing[0]}. Format it with: "
            + _format_hint(config, config_path, cluster_id)
        )
    assert cluster_id is not None
    directory_ids = {d: p.directory_id or "" for d, p in found.items()}
    return cluster_id, directory_ids
