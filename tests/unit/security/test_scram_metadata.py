"""SCRAM credentials in the metadata log: AlterUserScramCredentials, the image, --add-scram."""

from __future__ import annotations

from typing import Any

import pytest

from sparklog.controller.scram_control import alter_user_scram_credentials
from sparklog.metadata.delta import MetadataDelta
from sparklog.metadata.image import MetadataImage
from sparklog.metadata.records import MetadataRecord, decode_record
from sparklog.metadata.scram_bootstrap import scram_record
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsRequestUpsertions,
)
from sparklog.security import scram

SHA512 = scram.MECHANISM_TYPES["SCRAM-SHA-512"]
SHA256 = scram.MECHANISM_TYPES["SCRAM-SHA-256"]


def apply(image: MetadataImage, records: list[MetadataRecord]) -> MetadataImage:
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(decode_record(record.encode()))  # through the wire format
    return delta.apply()


def upsert(
    name: str, password: str, mechanism: int = SHA512, iterations: int = 4096
) -> AlterUserScramCredentialsRequestUpsertions:
    salt = b"salt-" + name.encode()
    mech = scram.MECHANISM_NAMES.get(mechanism, "SCRAM-SHA-512")
    salted = scram.salted_password(mech, password, salt, iterations)
    return {
        "name": name,
        "mechanism": mechanism,
        "iterations": iterations,
        "salt": salt,
        "salted_password": salted,
    }


def test_upsert_then_authenticate_then_delete() -> None:
    records, response = alter_user_scram_credentials(
        MetadataImage(), {"deletions": [], "upsertions": [upsert("alice", "pw1")]}
    )
    assert response["results"] == [{"user": "alice", "error_code": 0, "error_message": None}]
    image = apply(MetadataImage(), records)
    credential = image.scram.get("SCRAM-SHA-512", "alice")
    assert credential is not None and credential.iterations == 4096
    assert image.scram.get("SCRAM-SHA-256", "alice") is None
    # The stored credential authenticates the password, and only it.
    for password, ok in (("pw1", True), ("pw2", False)):
        client = scram.ScramClient("SCRAM-SHA-512", "alice", password)
        server = scram.ScramServer("SCRAM-SHA-512", lambda u: image.scram.get("SCRAM-SHA-512", u))
        final = client.final(server.respond(client.first()))
        if ok:
            client.verify(server.respond(final))
        else:
            with pytest.raises(scram.ScramError):
                server.respond(final)
    # Snapshot round trip.
    assert apply(MetadataImage(), image.to_records()).scram == image.scram
    records, response = alter_user_scram_credentials(
        image, {"deletions": [{"name": "alice", "mechanism": SHA512}], "upsertions": []}
    )
    assert response["results"][0]["error_code"] == 0
    assert not apply(image, records).scram.credentials


@pytest.mark.parametrize(
    ("request_body", "code", "message"),
    [
        ({"upsertions": [upsert("", "x")]}, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must"),
        ({"upsertions": [upsert("a", "x", mechanism=9)]}, ErrorCode.UNSUPPORTED_SASL_MECHANISM, ""),
        (
            {"upsertions": [upsert("a", "x", iterations=10)]},
            ErrorCode.UNACCEPTABLE_CREDENTIAL,
            "Too few",
        ),
        (
            {"upsertions": [upsert("a", "x", iterations=20000)]},
            ErrorCode.UNACCEPTABLE_CREDENTIAL,
            "Too many",
        ),
        (
            {"deletions": [{"name": "a", "mechanism": SHA256}]},
            ErrorCode.RESOURCE_NOT_FOUND,
            "does not exist",
        ),
        (
            {"upsertions": [upsert("a", "x"), upsert("a", "y")]},
            ErrorCode.DUPLICATE_RESOURCE,
            "altered twice",
        ),
    ],
)
def test_alter_errors(request_body: dict[str, Any], code: ErrorCode, message: str) -> None:
    body: AlterUserScramCredentialsRequest = {
        "deletions": request_body.get("deletions", []),
        "upsertions": request_body.get("upsertions", []),
    }
    records, response = alter_user_scram_credentials(MetadataImage(), body)
    assert records == []
    [result] = response["results"]
    assert result["error_code"] == code
    assert message in (result["error_message"] or "")


def test_one_users_error_does_not_block_another() -> None:
    records, response = alter_user_scram_credentials(
        MetadataImage(),
        {"deletions": [], "upsertions": [upsert("ok", "x"), upsert("bad", "x", iterations=1)]},
    )
    assert [r["error_code"] for r in response["results"]] == [0, ErrorCode.UNACCEPTABLE_CREDENTIAL]
    assert set(apply(MetadataImage(), records).scram.credentials) == {("ok", "SCRAM-SHA-512")}


def test_add_scram_argument() -> None:
    record = scram_record('SCRAM-SHA-256=[name=alice,password="a,b=c",iterations=8192]')
    assert record.data["name"] == "alice" and record.data["iterations"] == 8192
    image = apply(MetadataImage(), [record])
    expected = scram.make_credential(
        "SCRAM-SHA-256", "a,b=c", salt=record.data["salt"], iterations=8192
    )
    assert image.scram.get("SCRAM-SHA-256", "alice") == expected
    for bad in (
        "SCRAM-SHA-1=[name=a,password=b]",
        "SCRAM-SHA-256=[password=b]",
        "SCRAM-SHA-256=[name=a]",
        "SCRAM-SHA-256=[name=a,password=b,iterations=1]",
        "SCRAM-SHA-256=[name=a,password=b,colour=red]",
        "SCRAM-SHA-256 name=a",
    ):
        with pytest.raises(ValueError) as info:
            scram_record(bad)
        assert "password=b" not in str(info.value)
