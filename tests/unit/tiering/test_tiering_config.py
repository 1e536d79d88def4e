"""Tiering configuration keys: defaults, the default store URL, S3 options, bad values."""

from __future__ import annotations

import pytest

from sparklog.config import ConfigError, ServerConfig
from sparklog.tiering.config import TieringConfig, default_storage_url

BASE = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.quorum.voters": "1@localhost:9093",
    "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
    "controller.listener.names": "CONTROLLER",
    "log.dirs": "/var/lib/sparklog/",
}


def test_defaults_from_server_config() -> None:
    config = TieringConfig.from_server_config(ServerConfig.from_props(BASE))
    assert not config.enabled
    assert config.task_interval_ms == 30000
    assert config.storage_url == "file:///var/lib/sparklog-remote"
    assert config.row_group_rows == 131072
    assert config.storage_options() == {}


def test_s3_settings() -> None:
    props = dict(BASE)
    props.update(
        {
            "remote.log.storage.system.enable": "true",
            "remote.log.manager.task.interval.ms": "500",
            "sparklog.remote.storage.url": "s3://bucket/prefix",
            "sparklog.remote.storage.s3.endpoint.url": "http://127.0.0.1:9000",
            "sparklog.remote.storage.s3.access.key.id": "AK",
            "sparklog.remote.storage.s3.secret.access.key": "SECRET",
            "sparklog.remote.storage.s3.region": "eu-west-1",
            "sparklog.remote.storage.parquet.row.group.rows": "1000",
        }
    )
    config = TieringConfig.from_server_config(ServerConfig.from_props(props))
    assert config.enabled and config.task_interval_ms == 500 and config.row_group_rows == 1000
    assert config.storage_options() == {
        "endpoint_url": "http://127.0.0.1:9000",
        "key": "AK",
        "secret": "SECRET",
        "client_kwargs": {"region_name": "eu-west-1"},
    }
    assert "SECRET" not in repr(config)
    assert TieringConfig.from_props(props) == config


def test_bad_values_name_the_key() -> None:
    props = dict(BASE, **{"sparklog.remote.storage.parquet.row.group.rows": "0"})
    with pytest.raises(ConfigError, match=r"row\.group\.rows"):
        ServerConfig.from_props(props)
    with pytest.raises(ValueError, match=r"sparklog\.remote\.storage\.url"):
        TieringConfig.from_props({})
    assert default_storage_url("data/logs/").endswith("/data/logs-remote")
