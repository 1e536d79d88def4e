"""The one configuration framework: typed parsing, validators, error texts, formatting, hints."""

from __future__ import annotations

import pytest

from sparklog.configdef import (
    AtLeast,
    Between,
    ConfigDef,
    ConfigError,
    OneOf,
    did_you_mean,
    format_value,
    parse_value,
)


@pytest.mark.parametrize(
    ("definition", "raw", "value"),
    [
        (ConfigDef("a", "int", 1), " 42 ", 42),
        (ConfigDef("a", "short", 1), "-32768", -32768),
        (ConfigDef("a", "long", 1), str(2**63 - 1), 2**63 - 1),
        (ConfigDef("a", "double", 0.5), "0.25", 0.25),
        (ConfigDef("a", "boolean", False), "TRUE", True),
        (ConfigDef("a", "list", ()), " x, ,y ,", ("x", "y")),
        (ConfigDef("a", "string", ""), " s ", "s"),
        (ConfigDef("a", "class", ""), "org.Foo", "org.Foo"),
        (ConfigDef("a", "int"), "", None),  # nullable: empty means unset
        (ConfigDef("a", "list", (), OneOf(("p", "q"))), "q,p", ("q", "p")),
        (ConfigDef("a", "int", -1, Between(1, 9, also=(-1,))), "-1", -1),
    ],
)
def test_values_parse_to_their_type(definition: ConfigDef, raw: str, value: object) -> None:
    assert parse_value(definition, raw) == value
    if value is not None:
        assert parse_value(definition, format_value(value)) == value


@pytest.mark.parametrize(
    ("definition", "raw", "message"),
    [
        (ConfigDef("k", "int", 1), "x", "Invalid value 'x' for configuration k: expected a 32-bit"),
        (ConfigDef("k", "short", 1), "40000", "expected a 16-bit integer (out of range)"),
        (ConfigDef("k", "long", 1, AtLeast(0)), "1.5", "expected a 64-bit integer >= 0"),
        (ConfigDef("k", "boolean", True), "yes", "k: expected true or false"),
        (ConfigDef("k", "int", 1, AtLeast(1)), "0", "k: Value must be at least 1"),
        (ConfigDef("k", "double", 0.5, Between(0, 1)), "2", "Value must be between 0 and 1"),
        (ConfigDef("k", "int", 1, Between(1, 9, also=(-1,))), "0", "must be -1 or between 1 and 9"),
        (ConfigDef("k", "string", "a", OneOf(("a", "b"))), "c", "k: Value must be one of a, b"),
        (ConfigDef("k", "list", (), OneOf(("a",), unique=True)), "a,a", "must not repeat"),
    ],
)
def test_errors_name_key_value_and_expectation(
    definition: ConfigDef, raw: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=None) as info:
        parse_value(definition, raw)
    assert message in str(info.value)
    assert info.value.key == "k" and info.value.problem is not None


def test_password_values_never_appear_in_errors() -> None:
    secret = ConfigDef("ssl.key.password", "password", None, OneOf(("x",)))
    with pytest.raises(ConfigError) as info:
        parse_value(secret, "hunter2")
    assert "hunter2" not in str(info.value) and info.value.value is None
    assert "ssl.key.password" in str(info.value)


def test_declaring_an_unknown_type_fails() -> None:
    with pytest.raises(ValueError, match="unknown config type 'bool'"):
        ConfigDef("k", "bool", False)


def test_did_you_mean_offers_only_a_close_key() -> None:
    known = ["retention.ms", "segment.bytes"]
    assert did_you_mean("retention.mss", known) == " Did you mean 'retention.ms'?"
    assert did_you_mean("zzz", known) == ""
    # a listener's key: matched without the prefix, named with it
    prefix = "listener.name.internal."
    assert did_you_mean("retention.mss", known, prefix=prefix) == (
        " Did you mean 'listener.name.internal.retention.ms'?"
    )


def test_default_string_is_kafkas_spelling() -> None:
    assert ConfigDef("k", "list", ("a", "b")).default_string == "a,b"
    assert ConfigDef("k", "boolean", False).default_string == "false"
    assert ConfigDef("k", "string").default_string is None
