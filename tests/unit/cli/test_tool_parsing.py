"""The operator tools' parsing and formatting that need no broker: every command's --help,
Kafka's --add-config syntax, --to-datetime, the console producer's line reader and the
console consumer's formatter, get-offsets' filters, --generate's placement, --command-config."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparklog.cli.admin_client import CliError, read_command_config
from sparklog.cli.configs_tool import parse_add_config
from sparklog.cli.console_consumer_tool import Formatter
from sparklog.cli.console_producer_tool import LineReader
from sparklog.cli.consumer_groups_reset import parse_datetime_ms
from sparklog.cli.get_offsets_tool import parse_partition_set, parse_time
from sparklog.cli.main import main
from sparklog.cli.reassign_generate import propose
from sparklog.cli.reassign_partitions_tool import ReassignError
from sparklog.client.consumer import ConsumedRecord
from sparklog.client.groups import _classic_assignment

COMMANDS = [
    "topics", "consumer-groups", "configs", "get-offsets", "console-producer",
    "console-consumer", "producer-perf-test", "consumer-perf-test", "features",
    "transactions", "delete-records", "log-dirs", "reassign-partitions", "acls",
]  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: sparklog {command}")
    assert "--bootstrap-server" in out


def test_storage_info_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["storage", "info", "--help"])
    assert "--config" in capsys.readouterr().out


def test_add_config_brackets_and_errors() -> None:
    assert parse_add_config("a=1,b=[x,y],c=") == {"a": "1", "b": "x,y", "c": ""}
    with pytest.raises(CliError, match='must be in the format "key=val"'):
        parse_add_config("a=1,oops")


def test_to_datetime_formats() -> None:
    assert parse_datetime_ms("1970-01-01T00:00:01.500") == 1500
    assert parse_datetime_ms("1970-01-01T01:00:00.000+01:00") == 0
    assert parse_datetime_ms("1970-01-01T00:00:02Z") == 2000
    with pytest.raises(CliError, match="Error parsing timestamp"):
        parse_datetime_ms("yesterday")


def test_line_reader_keys_headers_null_marker() -> None:
    reader = LineReader({"parse.key": "true", "parse.headers": "true", "null.marker": "-"})
    assert reader.parse("h:1,g\tk\tv", 1) == (b"k", b"v", [("h", b"1"), ("g", None)])
    assert reader.parse("NO_HEADERS\t-\tv", 2) == (None, b"v", [])
    with pytest.raises(CliError, match="No key separator found on line number 3"):
        reader.parse("\tonly", 3)
    lenient = LineReader({"parse.key": "true", "ignore.error": "true"})
    assert lenient.parse("value only", 4) == (None, b"value only", [])


def test_formatter_is_kafkas_default() -> None:
    record = ConsumedRecord("t", 2, 7, 1000, 0, None, b"v", (("a", b"1"), ("b", None)))
    flags = ("print.timestamp", "print.partition", "print.offset", "print.headers", "print.key")
    every = Formatter(dict.fromkeys(flags, "true"))
    assert every.format(record) == "CreateTime:1000\tPartition:2\tOffset:7\ta:1,b:null\tnull\tv\n"
    assert Formatter({}).format(record) == "v\n"
    appended = ConsumedRecord("t", 0, 0, 5, 1, b"k", None, ())
    assert Formatter({"print.timestamp": "true", "print.headers": "true",
                      "key.separator": "|"}).format(appended) == (
        "LogAppendTime:5|NO_HEADERS|null\n"
    )  # fmt: skip


def test_get_offsets_filters() -> None:
    assert parse_partition_set("0,2-4") == {0, 2, 3, 4}
    assert parse_time("earliest-local") == -4 and parse_time("123") == 123
    with pytest.raises(CliError, match="Malformed time argument"):
        parse_time("soon")
    with pytest.raises(CliError):
        parse_partition_set("a-b")


def test_generate_spreads_like_kafka() -> None:
    assert propose(4, 2, [1, 2, 3]) == [[1, 2], [2, 3], [3, 1], [1, 3]]
    with pytest.raises(ReassignError, match="Replication factor: 3 larger than available"):
        propose(1, 3, [1, 2])


def test_classic_assignment_decoding() -> None:
    data = (b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\x00\x00\x00\x02"
            + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x03" + b"\x00\x00\x00\x00")  # fmt: skip
    assert _classic_assignment(data) == [("t", 0), ("t", 3)]
    assert _classic_assignment(b"") == []


def test_command_config_checks_security_settings(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\n")
    with pytest.raises(CliError, match=r"sasl\.mechanism GSSAPI is not supported"):
        read_command_config(str(path))
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n")
    with pytest.raises(CliError, match="SASL needs a user name and password"):
        read_command_config(str(path))
    path.write_text("security.protocol=SSL\nssl.truststore.location=/t.jks\n")
    with pytest.raises(CliError, match=r"ssl\.truststore\.type=JKS is not supported"):
        read_command_config(str(path))
    path.write_text("client.id=x\n")
    assert read_command_config(str(path)) == {"client.id": "x"}
    with pytest.raises(CliError, match="Cannot read configuration file"):
        read_command_config(str(tmp_path / "missing"))
