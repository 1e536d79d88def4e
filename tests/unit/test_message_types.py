"""The generated message types (sparklog.protocol.message_types) match the declarations.

The module on disk must equal what ``python -m sparklog.protocol.gen_types`` writes now: a
declaration edited without regenerating fails here. The type rules themselves (required keys
for decoded requests, ``total=False`` for built responses, ``None`` where the codec can produce
it) are checked against what the codec actually decodes.
"""

from __future__ import annotations

from pathlib import Path
from typing import get_type_hints

from sparklog.metadata import gen_record_types as record_types_module
from sparklog.metadata import record_types
from sparklog.protocol import codec, message_types
from sparklog.protocol.gen_types import (
    TARGET,
    api_constant,
    api_specs,
    main,
    render,
    write_or_check,
)
from sparklog.protocol.message_types import ApiKey
from sparklog.protocol.messages import API_BY_KEY
from sparklog.protocol.schema import message


def test_generated_module_is_current() -> None:
    assert TARGET.read_text() == render(api_specs()), (
        "sparklog/protocol/message_types.py is stale: run python -m sparklog.protocol.gen_types"
    )
    assert main(["--check"]) == 0


def test_a_declaration_change_shows_in_the_rendering() -> None:
    produce = API_BY_KEY[0].request
    changed = message(produce.name, "3-13", "9+", *produce.fields[:-1])
    assert render([changed]) != render([produce])
    assert "topic_data" not in render([changed], with_api_keys=False)


def test_api_key_names_every_declared_api() -> None:
    assert {int(k): k.name for k in ApiKey} == {
        key: api_constant(api.name) for key, api in API_BY_KEY.items()
    }
    named = (ApiKey.PRODUCE, ApiKey.API_VERSIONS, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
    assert [int(k) for k in named] == [0, 18, 50]


def test_requests_are_total_and_responses_are_not() -> None:
    for api in API_BY_KEY.values():
        request = getattr(message_types, api.request.name)
        response = getattr(message_types, api.response.name)
        assert request.__total__ and request.__required_keys__ == {
            f.name for f in api.request.fields
        }
        assert not response.__total__ and response.__required_keys__ == frozenset()


def test_decoded_requests_hold_exactly_the_typed_keys() -> None:
    # The codec fills every declared key, which is why request keys are all required.
    for api in API_BY_KEY.values():
        spec = api.request
        version = api.max_version
        decoded = codec.decode(spec, version, codec.encode_bytes(spec, version, {}))
        hints = get_type_hints(getattr(message_types, spec.name))
        assert set(decoded) == set(hints), spec.name
        for key, value in decoded.items():
            # A default of None shows in the type (e.g. ProduceRequest.transactional_id).
            if value is None:
                assert type(None) in getattr(hints[key], "__args__", ()), (spec.name, key)


def test_generated_record_types_are_current() -> None:
    assert record_types_module.TARGET.read_text() == record_types_module.render(), (
        "sparklog/metadata/record_types.py is stale: "
        "run python -m sparklog.metadata.gen_record_types"
    )
    assert record_types_module.main(["--check"]) == 0
    names = {spec.name for spec in record_types_module.record_specs()}
    assert {"PartitionRecord", "TopicRecord", "VotersRecord", "LeaderChangeMessage"} <= names
    for name in names:
        assert not getattr(record_types, name).__total__


def test_check_fails_on_a_stale_file(tmp_path: Path) -> None:
    target = tmp_path / "types.py"
    target.write_text("old\n")
    assert write_or_check(target, "new\n", "gen", ["--check"]) == 1
    assert write_or_check(target, "new\n", "gen", []) == 0
    assert target.read_text() == "new\n"
    assert write_or_check(target, "new\n", "gen", ["--check"]) == 0
