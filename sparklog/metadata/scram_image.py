"""The SCRAM credentials part of the metadata image (Kafka's ScramImage / ScramDelta).

Contract: :class:`ScramImage` maps ``(user name, mechanism)`` - the mechanism as Kafka's
ScramMechanism name, ``SCRAM-SHA-256`` or ``SCRAM-SHA-512`` - to its
:class:`~sparklog.security.scram.ScramCredential`. A UserScramCredentialRecord adds or replaces
one; a RemoveUserScramCredentialRecord removes it (removing an absent one is a corrupt log, as
in Kafka). The image is immutable; :class:`ScramDelta` collects changes and :meth:`apply`
builds the next image. Passwords never reach the log: only salt, StoredKey, ServerKey and the
iteration count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from sparklog.metadata.records import MetadataRecord, make_record
from sparklog.metadata.security_image import with_changes
from sparklog.security.scram import MECHANISM_NAMES, MECHANISM_TYPES, ScramCredential

ScramKey = tuple[str, str]

_EMPTY: Mapping[ScramKey, ScramCredential] = MappingProxyType({})


def _empty() -> Mapping[ScramKey, ScramCredential]:
    return _EMPTY


@dataclass(frozen=True, slots=True)
class ScramImage:
    credentials: Mapping[ScramKey, ScramCredential] = field(default_factory=_empty)

    def get(self, mechanism: str, user: str) -> ScramCredential | None:
        return self.credentials.get((user, mechanism))

    def to_records(self) -> list[MetadataRecord]:
        return [
            make_record(
                "UserScramCredentialRecord",
                {
                    "name": user,
                    "mechanism": MECHANISM_TYPES[mechanism],
                    "salt": credential.salt,
                    "stored_key": credential.stored_key,
                    "server_key": credential.server_key,
                    "iterations": credential.iterations,
                },
            )
            for (user, mechanism), credential in sorted(self.credentials.items())
        ]


class ScramDelta:
    def __init__(self, image: ScramImage) -> None:
        self._image = image
        self._changes: dict[ScramKey, ScramCredential | None] = {}

    def _key(self, data: Mapping[str, Any]) -> ScramKey:
        mechanism = MECHANISM_NAMES.get(int(data["mechanism"]))
        if mechanism is None:
            raise ValueError(f"unknown SCRAM mechanism type {data['mechanism']}")
        return str(data["name"]), mechanism

    def replay_credential(self, data: Mapping[str, Any]) -> None:
        self._changes[self._key(data)] = ScramCredential(
            salt=bytes(data["salt"]),
            stored_key=bytes(data["stored_key"]),
            server_key=bytes(data["server_key"]),
            iterations=int(data["iterations"]),
        )

    def replay_remove(self, data: Mapping[str, Any]) -> str | None:
        """Remove a credential; the error text if it did not exist."""
        key = self._key(data)
        exists = (
            self._changes[key] is not None
            if key in self._changes
            else key in self._image.credentials
        )
        if not exists:
            return f"cannot remove the absent SCRAM credential {key[1]} of user {key[0]!r}"
        self._changes[key] = None
        return None

    def apply(self) -> ScramImage:
        if not self._changes:
            return self._image
        return ScramImage(with_changes(self._image.credentials, self._changes))
