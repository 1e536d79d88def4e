"""Bootstrap metadata: the records a brand-new cluster's metadata log starts with.

``sparklog storage format`` writes them to ``bootstrap.checkpoint`` in the metadata log
directory; the active controller appends them to an empty metadata log on first start. The
first record is always the FeatureLevelRecord pinning ``metadata.version``.

File format (Kafka's ``BootstrapDirectory``/``BatchFileWriter``): a sequence of v2 record
batches with consecutive offsets from 0 and leader epoch 0 -- a control batch holding a
SnapshotHeaderRecord, data batches of metadata records, a control batch holding a
SnapshotFooterRecord. It is written to ``bootstrap.checkpoint.tmp``, fsynced and renamed.

Metadata versions: Kafka's ``MetadataVersion`` feature levels for 3.3-IV3 (the oldest a KRaft
cluster can bootstrap with) to 4.2-IV1; a release version ``X.Y`` means the newest IV of X.Y.
From 4.2-IV0 on, the bootstrap also finalizes ``share.version=1`` (Kafka 4.2's ShareVersion
SV_1 bootstraps from IBP_4_2_IV0: share groups, KIP-932, are on by default for new 4.2
clusters); below it share groups are turned on explicitly (``--feature share.version=1``,
UpdateFeatures). Kafka 4.2-IV1 also bootstraps ``streams.version=1`` (KIP-1071 streams groups),
which this node does not implement, so it is not written.
From 4.1-IV0 on, the bootstrap also finalizes ``eligible.leader.replicas.version=1`` (KIP-966
is on by default for new clusters from Kafka 4.1, as there); the default release (4.0) leaves
it off. From 4.0-IV2 on it finalizes ``transaction.version=2`` (Kafka's TransactionVersion TV_2
bootstraps from 4.0-IV2: transactions version 2, KIP-890 part 2, on new 4.0 clusters), below
that ``transaction.version`` stays unset (0). ``--feature name=level`` of ``storage format``
overrides a bootstrapped level (:func:`with_feature_levels`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from sparklog.metadata.image import (
    METADATA_VERSION_FEATURE,
    SHARE_VERSION_FEATURE,
    TRANSACTION_VERSION_FEATURE,
)
from sparklog.metadata.records import MetadataRecord, RecordError, decode_record, make_record
from sparklog.protocol.record_codec import RecordInput, build_batch, decode_batch
from sparklog.protocol.records import CorruptRecordError, iter_batches
from sparklog.raft.control_records import encode_control_record

BOOTSTRAP_FILENAME: Final = "bootstrap.checkpoint"

METADATA_VERSIONS: Final[dict[str, int]] = {
    "3.3-IV3": 7,
    "3.4-IV0": 8,
    "3.5-IV0": 9,
    "3.5-IV1": 10,
    "3.5-IV2": 11,
    "3.6-IV0": 12,
    "3.6-IV1": 13,
    "3.6-IV2": 14,
    "3.7-IV0": 15,
    "3.7-IV1": 16,
    "3.7-IV2": 17,
    "3.7-IV3": 18,
    "3.7-IV4": 19,
    "3.8-IV0": 20,
    "3.9-IV0": 21,
    "4.0-IV0": 22,
    "4.0-IV1": 23,
    "4.0-IV2": 24,
    "4.0-IV3": 25,
    "4.1-IV0": 26,
    "4.1-IV1": 27,
    "4.2-IV0": 28,
    "4.2-IV1": 29,
}
# metadata.version levels this node can run (3.3-IV3 .. 4.2-IV1).
SUPPORTED_METADATA_VERSIONS: Final = (
    min(METADATA_VERSIONS.values()),
    max(METADATA_VERSIONS.values()),
)
LATEST_PRODUCTION: Final = "4.0-IV3"
ELR_FEATURE: Final = "eligible.leader.replicas.version"
# 4.1-IV0: the first release that bootstraps eligible.leader.replicas.version=1.
ELR_DEFAULT_FROM_LEVEL: Final = 26
MINIMUM_BOOTSTRAP: Final = "3.3-IV3"
# 4.0-IV2: TransactionVersion TV_2's bootstrap metadata version.
TV2_DEFAULT_FROM_LEVEL: Final = 24
# 4.2-IV0: ShareVersion SV_1's bootstrap metadata version.
SHARE_DEFAULT_FROM_LEVEL: Final = 28
# The features `storage format --feature` may set, with the levels this node supports.
BOOTSTRAP_FEATURES: Final[dict[str, tuple[int, int]]] = {
    ELR_FEATURE: (0, 1),
    TRANSACTION_VERSION_FEATURE: (0, 2),
    # KIP-932: bootstrapped at 1 from 4.2-IV0 (SHARE_DEFAULT_FROM_LEVEL), as in Kafka 4.2.
    SHARE_VERSION_FEATURE: (0, 1),
}


class BootstrapError(Exception):
    """A release version or bootstrap file this node cannot use; the message says why."""


def metadata_version_level(release_version: str) -> int:
    """``"4.0"`` or ``"4.0-IV3"`` -> feature level; BootstrapError names the supported range."""
    text = release_version.strip()
    if text in METADATA_VERSIONS:
        return METADATA_VERSIONS[text]
    candidates = [name for name in METADATA_VERSIONS if name.split("-")[0] == text]
    if candidates:
        return METADATA_VERSIONS[candidates[-1]]
    # Every version this node accepts, not only up to the default: 4.1 is accepted (and the
    # README uses it), so an error that stopped at 4.0-IV3 sent people the wrong way.
    latest_accepted = max(METADATA_VERSIONS, key=METADATA_VERSIONS.__getitem__)
    raise BootstrapError(
        f"Unknown release version '{release_version}'. Supported versions are: "
        f"{MINIMUM_BOOTSTRAP} to {latest_accepted} (default {LATEST_PRODUCTION})"
    )


def metadata_version_name(level: int) -> str:
    for name, value in METADATA_VERSIONS.items():
        if value == level:
            return name
    return f"level {level}"


@dataclass(frozen=True, slots=True)
class BootstrapMetadata:
    records: tuple[MetadataRecord, ...]
    source: str

    @property
    def metadata_version(self) -> int:
        for record in self.records:
            if (
                record.name == "FeatureLevelRecord"
                and record.data["name"] == METADATA_VERSION_FEATURE
            ):
                level: int = record.data["feature_level"]
                return level
        raise BootstrapError(f"No FeatureLevelRecord for metadata.version in {self.source}")

    @staticmethod
    def from_release_version(release_version: str | None, source: str) -> BootstrapMetadata:
        level = metadata_version_level(release_version or LATEST_PRODUCTION)
        records = [
            make_record(
                "FeatureLevelRecord", {"name": METADATA_VERSION_FEATURE, "feature_level": level}
            )
        ]
        if level >= TV2_DEFAULT_FROM_LEVEL:
            records.append(
                make_record(
                    "FeatureLevelRecord", {"name": TRANSACTION_VERSION_FEATURE, "feature_level": 2}
                )
            )
        if level >= ELR_DEFAULT_FROM_LEVEL:
            # Kafka 4.1 turns eligible leader replicas (KIP-966) on for new clusters.
            records.append(
                make_record("FeatureLevelRecord", {"name": ELR_FEATURE, "feature_level": 1})
            )
        if level >= SHARE_DEFAULT_FROM_LEVEL:
            # Kafka 4.2 turns share groups (KIP-932) on for new clusters.
            records.append(
                make_record(
                    "FeatureLevelRecord", {"name": SHARE_VERSION_FEATURE, "feature_level": 1}
                )
            )
        return BootstrapMetadata(tuple(records), source)

    def with_feature_levels(self, levels: dict[str, int]) -> BootstrapMetadata:
        """These records with ``levels`` (``--feature name=level``) replacing the bootstrapped
        ones; level 0 leaves a feature out. BootstrapError for an unknown feature or level."""
        for name, level in levels.items():
            supported = BOOTSTRAP_FEATURES.get(name)
            if supported is None:
                raise BootstrapError(
                    f"Unsupported feature: {name}. Supported features are: "
                    f"{', '.join(sorted(BOOTSTRAP_FEATURES))}"
                )
            if not supported[0] <= level <= supported[1]:
                raise BootstrapError(
                    f"Unsupported level {level} of {name}: supported {supported[0]}-{supported[1]}"
                )
        kept = [
            r
            for r in self.records
            if not (r.name == "FeatureLevelRecord" and r.data["name"] in levels)
        ]
        added = [
            make_record("FeatureLevelRecord", {"name": name, "feature_level": level})
            for name, level in sorted(levels.items())
            if level > 0
        ]
        return BootstrapMetadata(tuple(kept + added), self.source)


def write_bootstrap_checkpoint(directory: str | Path, bootstrap: BootstrapMetadata) -> Path:
    """Atomically write ``bootstrap.checkpoint`` into ``directory``; returns its path."""
    target = Path(directory) / BOOTSTRAP_FILENAME
    temp = target.with_name(BOOTSTRAP_FILENAME + ".tmp")
    now = int(time.time() * 1000)
    header_key, header_value = encode_control_record(
        "SnapshotHeaderRecord", {"last_contained_log_timestamp": 0}
    )
    footer_key, footer_value = encode_control_record("SnapshotFooterRecord", {})
    records = [RecordInput(None, record.encode(), timestamp=now) for record in bootstrap.records]
    batches = [
        build_batch(
            [RecordInput(header_key, header_value, timestamp=now)], base_offset=0, is_control=True
        ),
        build_batch(records, base_offset=1, partition_leader_epoch=0),
        build_batch(
            [RecordInput(footer_key, footer_value, timestamp=now)],
            base_offset=1 + len(records),
            is_control=True,
        ),
    ]
    with open(temp, "wb") as handle:
        for batch in batches:
            handle.write(batch)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, target)
    return target


def read_bootstrap_checkpoint(directory: str | Path) -> BootstrapMetadata | None:
    """The bootstrap records in ``directory``, or ``None`` if it has no bootstrap.checkpoint."""
    path = Path(directory) / BOOTSTRAP_FILENAME
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    records: list[MetadataRecord] = []
    consumed = 0
    try:
        for pos, header in iter_batches(data):
            _, batch_records = decode_batch(data, pos)
            consumed = pos + header.size_in_bytes
            if header.is_control:
                continue
            records.extend(decode_record(r.value or b"") for r in batch_records)
    except (CorruptRecordError, RecordError) as exc:
        raise BootstrapError(f"Corrupt bootstrap metadata file {path}: {exc}") from None
    if consumed != len(data):
        raise BootstrapError(
            f"Corrupt bootstrap metadata file {path}: {len(data) - consumed} trailing bytes"
        )
    bootstrap = BootstrapMetadata(tuple(records), f"the binary bootstrap metadata file: {path}")
    _ = bootstrap.metadata_version  # raises BootstrapError if metadata.version is missing
    return bootstrap
