"""``sparklog storage``: random-uuid, format, and the formatted-storage check run at start-up.

Mirrors Kafka's ``kafka-storage`` (StorageTool / Formatter / MetaPropertiesEnsemble):

- ``format`` writes ``meta.properties`` (``version=1``, ``cluster.id``, ``node.id``, a fresh
  ``directory.id`` per directory) and ``bootstrap.checkpoint`` (the FeatureLevelRecord pinning
  ``metadata.version``) into every ``log.dirs`` entry and ``metadata.log.dir``. It refuses an
  invalid cluster id, an unknown release version, flag combinations Kafka refuses, and a
  directory that is already formatted (unless ``ignore_formatted``, which skips it). Each file
  is written to a temp name, fsynced and renamed, so a crash never leaves half a file.
- :func:`~sparklog.config.check_formatted` (re-exported here) is what ``sparklog server start``
  calls first; reading and checking ``meta.properties`` lives in
  :mod:`sparklog.storage.meta_properties`.

Errors are :class:`StorageToolError` (the storage package's ``MetaPropertiesError``: a format
refused and a ``meta.properties`` in error are one kind); the CLI prints the message and
exits 1. The functions return the lines the CLI prints, so they stay testable without a
terminal.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sparklog.config import ServerConfig, check_formatted
from sparklog.metadata.bootstrap import (
    BootstrapError,
    BootstrapMetadata,
    metadata_version_name,
    write_bootstrap_checkpoint,
)
from sparklog.metadata.bootstrap_voters import write_bootstrap_voters
from sparklog.metadata.scram_bootstrap import scram_record
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
from sparklog.storage.meta_properties import (
    META_PROPERTIES,
    MetaProperties,
    MetaPropertiesError,
    read_meta_properties,
    verify_ensemble,
)

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

# format errors and meta.properties errors reach the user the same way
StorageToolError = MetaPropertiesError


@dataclass(frozen=True, slots=True)
class InitialController:
    """One ``--initial-controllers`` entry: ``id@host:port:directory-id``."""

    node_id: int
    host: str
    port: int
    directory_id: str


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


def _feature_levels(arguments: Sequence[str]) -> dict[str, int]:
    levels: dict[str, int] = {}
    for argument in arguments:
        name, eq, level = argument.partition("=")
        try:
            levels[name.strip()] = int(level)
        except ValueError:
            eq = ""
        if not eq or not name.strip():
            raise StorageToolError(f"Can't parse feature={argument!r}: expected FEATURE=LEVEL")
    return levels


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
    features: Sequence[str] = (),
) -> list[str]:
    """Format this node's directories; returns the lines to print. ``features`` are
    ``name=level`` overrides of the release's bootstrapped feature levels (``--feature``)."""
    _validate_cluster_id(cluster_id)
    try:
        bootstrap = BootstrapMetadata.from_release_version(release_version, "format command")
        if features:
            bootstrap = bootstrap.with_feature_levels(_feature_levels(features))
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
    verify_ensemble(existing, cluster_id, config.node_id)
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
