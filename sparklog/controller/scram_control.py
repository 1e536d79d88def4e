"""AlterUserScramCredentials (51, KIP-554) on the controller: validate, then write records.

Contract (Kafka's ScramControlManager): each user's alterations succeed or fail together; the
response has one result per user named in the request. Checks, in Kafka's order and codes: an
empty user name is UNACCEPTABLE_CREDENTIAL; an unknown mechanism UNSUPPORTED_SASL_MECHANISM;
iterations outside 4096..16384 UNACCEPTABLE_CREDENTIAL; the same (user, mechanism) altered twice
DUPLICATE_RESOURCE; deleting an absent credential RESOURCE_NOT_FOUND. An upsertion becomes a
UserScramCredentialRecord holding StoredKey and ServerKey derived from the client's salted
password (the salted password itself is not kept); a deletion a
RemoveUserScramCredentialRecord. Pure: image and request in, records and response out.
"""

from __future__ import annotations

from sparklog.metadata.image import MetadataImage
from sparklog.metadata.records import MetadataRecord, make_record
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsRequestUpsertions,
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResponseResults,
)
from sparklog.security.scram import (
    MAX_ITERATIONS,
    MECHANISM_NAMES,
    MIN_ITERATIONS,
    credential_from_salted_password,
)


def _check(name: str, mechanism_type: int, iterations: int | None) -> tuple[ErrorCode, str] | None:
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism_type not in MECHANISM_NAMES:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    if iterations is not None and iterations < MIN_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if iterations is not None and iterations > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    return None


def alter_user_scram_credentials(
    image: MetadataImage, request: AlterUserScramCredentialsRequest
) -> tuple[list[MetadataRecord], AlterUserScramCredentialsResponse]:
    # (user, mechanism, the upsertion or None for a deletion): deletions first, as Kafka
    entries: list[tuple[str, int, AlterUserScramCredentialsRequestUpsertions | None]] = [
        (d["name"], d["mechanism"], None) for d in request["deletions"]
    ]
    entries += [(u["name"], u["mechanism"], u) for u in request["upsertions"]]
    users: list[str] = []
    errors: dict[str, tuple[ErrorCode, str]] = {}
    seen: set[tuple[str, int]] = set()
    records_by_user: dict[str, list[MetadataRecord]] = {}

    def fail(user: str, code: ErrorCode, message: str) -> None:
        errors.setdefault(user, (code, message))

    for name, mechanism_type, upsert in entries:
        if name not in users:
            users.append(name)
        problem = _check(name, mechanism_type, upsert["iterations"] if upsert is not None else None)
        if problem is not None:
            fail(name, *problem)
            continue
        if (name, mechanism_type) in seen:
            fail(
                name,
                ErrorCode.DUPLICATE_RESOURCE,
                "A user credential cannot be altered twice in the same request",
            )
            continue
        seen.add((name, mechanism_type))
        mechanism = MECHANISM_NAMES[mechanism_type]
        if upsert is None:
            if image.scram.get(mechanism, name) is None:
                fail(
                    name,
                    ErrorCode.RESOURCE_NOT_FOUND,
                    "Attempt to delete a user credential that does not exist",
                )
                continue
            record = make_record(
                "RemoveUserScramCredentialRecord", {"name": name, "mechanism": mechanism_type}
            )
        else:
            credential = credential_from_salted_password(
                mechanism,
                bytes(upsert["salted_password"]),
                bytes(upsert["salt"]),
                upsert["iterations"],
            )
            record = make_record(
                "UserScramCredentialRecord",
                {
                    "name": name,
                    "mechanism": mechanism_type,
                    "salt": credential.salt,
                    "stored_key": credential.stored_key,
                    "server_key": credential.server_key,
                    "iterations": credential.iterations,
                },
            )
        records_by_user.setdefault(name, []).append(record)
    records: list[MetadataRecord] = []
    results: list[AlterUserScramCredentialsResponseResults] = []
    for user in users:
        error = errors.get(user)
        if error is None:
            records.extend(records_by_user.get(user, ()))
            results.append({"user": user, "error_code": 0, "error_message": None})
        else:
            results.append({"user": user, "error_code": int(error[0]), "error_message": error[1]})
    return records, {"throttle_time_ms": 0, "results": results}
