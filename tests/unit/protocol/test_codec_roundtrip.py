"""Property tests: every declared message, every version, request and response.

For a random message ``m`` drawn from the declaration: ``decode(encode(m)) == m``,
``encode(decode(b)) == b``, chunked and joined encodings agree, ``decode_from`` stops exactly at
the end with trailing data after it, and every truncation or extension of ``b`` is a
``ProtocolError``.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparklog.protocol import codec
from sparklog.protocol.errors import ProtocolError
from sparklog.protocol.messages import API_BY_KEY
from sparklog.protocol.schema import MessageSpec
from sparklog.protocol.types import Reader, join_chunks
from tests.unit.protocol.message_strategies import message_strategy


def _cases() -> list[Any]:
    cases = []
    for api in API_BY_KEY.values():
        for direction, spec in (("request", api.request), ("response", api.response)):
            low, high = spec.valid_versions.low, spec.valid_versions.high
            for version in range(low, high + 1):
                cases.append(pytest.param(spec, version, id=f"{api.name}-{direction}-v{version}"))
    return cases


CASES = _cases()


def test_every_api_is_covered() -> None:
    assert 18 in API_BY_KEY
    assert len(CASES) >= 2 * 5  # ApiVersions alone declares versions 0-4


@pytest.mark.parametrize(("spec", "version"), CASES)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_roundtrip(spec: MessageSpec, version: int, data: st.DataObject) -> None:
    message = data.draw(message_strategy(spec, version), label="message")
    encoded = codec.encode_bytes(spec, version, message)

    decoded = codec.decode(spec, version, encoded)
    assert decoded == message
    assert set(decoded) == {f.name for f in spec.fields}
    assert codec.encode_bytes(spec, version, decoded) == encoded
    assert join_chunks(codec.encode(spec, version, message)) == encoded

    trailing = data.draw(st.binary(min_size=1, max_size=8), label="trailing")
    reader = Reader(encoded + trailing)
    assert codec.decode_from(spec, version, reader) == message
    assert reader.pos == len(encoded)
    with pytest.raises(ProtocolError):
        codec.decode(spec, version, encoded + trailing)

    if encoded:
        cut = data.draw(st.integers(0, len(encoded) - 1), label="cut")
        with pytest.raises(ProtocolError):
            codec.decode(spec, version, encoded[:cut])


@pytest.mark.parametrize(("spec", "version"), CASES)
def test_defaults_roundtrip(spec: MessageSpec, version: int) -> None:
    """An empty dict encodes as all defaults, and decodes to every key at its default."""
    encoded = codec.encode_bytes(spec, version, {})
    decoded = codec.decode(spec, version, encoded)
    assert codec.encode_bytes(spec, version, decoded) == encoded
    for f in spec.fields:
        if not f.present_in(version) or f.tagged_in(version):
            assert decoded[f.name] == f.default_value()
