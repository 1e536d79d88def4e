"""The deployable units in deploy/ are consistent with each other and with the server's config.

The container build and systemd cannot run here, so this checks what can be checked without
them: every shipped server.properties parses with the node's own config framework (no unknown
or misspelt key), the compose file wires 3 controllers + 3 brokers + an S3 store whose names,
ports, voters and credentials agree with the node configs, the Dockerfile copies only files that
exist and builds from the wheel, and the systemd units run the CLI commands that exist.
``tests/integration/test_deploy_entrypoint.py`` runs the image's entry point for real.
"""

from __future__ import annotations

import configparser
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from sparklog.cli.main import build_parser
from sparklog.config import ServerConfig, read_properties_file

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
COMPOSE_DIR = DEPLOY / "compose"


def _compose() -> dict[str, Any]:
    loaded = yaml.safe_load((COMPOSE_DIR / "compose.yaml").read_text())
    assert isinstance(loaded, dict)
    return loaded


def _services() -> dict[str, dict[str, Any]]:
    services = _compose()["services"]
    assert isinstance(services, dict)
    return services


def _node_config(service: dict[str, Any]) -> tuple[Path, dict[str, str]]:
    """The host file mounted at the path the service's SPARKLOG_CONFIG names."""
    target = service["environment"]["SPARKLOG_CONFIG"]
    for volume in service["volumes"]:
        source, _, rest = volume.partition(":")
        if rest.split(":")[0] == target:
            path = (COMPOSE_DIR / source).resolve()
            return path, read_properties_file(path)
    raise AssertionError(f"no volume mounts {target}")


@pytest.mark.parametrize(
    "path", sorted(DEPLOY.rglob("*.properties")), ids=lambda p: str(p.relative_to(DEPLOY))
)
def test_every_shipped_server_properties_parses(path: Path) -> None:
    ServerConfig.from_file(path)


def test_compose_runs_three_controllers_three_brokers_and_a_store() -> None:
    services = _services()
    roles: dict[str, list[int]] = {"controller": [], "broker": []}
    for name, service in services.items():
        if "SPARKLOG_CONFIG" not in service.get("environment", {}):
            continue
        assert service["image"] == "sparklog:0.1.0"
        assert service["hostname"] == name
        _, props = _node_config(service)
        roles[props["process.roles"]].append(int(props["node.id"]))
    assert sorted(roles["controller"]) == [1, 2, 3]
    assert sorted(roles["broker"]) == [4, 5, 6]
    assert any("minio" in str(s.get("image", "")) for s in services.values())


def test_compose_voters_and_bootstrap_name_the_controller_services() -> None:
    services = _services()
    voters: set[str] = set()
    for service in services.values():
        env = service.get("environment", {})
        if "SPARKLOG_CONFIG" not in env:
            continue
        assert env["CLUSTER_ID"] == _compose()["x-cluster-env"]["CLUSTER_ID"]
        _, props = _node_config(service)
        bootstrap = props["controller.quorum.bootstrap.servers"].split(",")
        assert bootstrap == [f"controller-{i}:9093" for i in (1, 2, 3)]
        if props["process.roles"] == "controller":
            voters.add(f"{props['node.id']}@{props['advertised.listeners'].split('//')[1]}")
            assert "SPARKLOG_INITIAL_CONTROLLERS" in env
        else:
            assert "SPARKLOG_INITIAL_CONTROLLERS" not in env
    initial = _compose()["x-controller-env"]["SPARKLOG_INITIAL_CONTROLLERS"].split(",")
    assert {entry.rsplit(":", 1)[0] for entry in initial} == voters
    directory_ids = [entry.rsplit(":", 1)[1] for entry in initial]
    assert len(set(directory_ids)) == 3
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{22}", d) for d in directory_ids)


def test_compose_brokers_advertise_the_ports_they_publish_and_reach_the_store() -> None:
    services = _services()
    store = services["object-store"]["environment"]
    published: list[str] = []
    for service in services.values():
        env = service.get("environment", {})
        if "SPARKLOG_CONFIG" not in env:
            continue
        _, props = _node_config(service)
        if props["process.roles"] != "broker":
            continue
        external = next(
            a for a in props["advertised.listeners"].split(",") if a.startswith("EXTERNAL://")
        )
        port = external.rsplit(":", 1)[1]
        assert f"{port}:{port}" in service["ports"]
        published.extend(p.split(":")[0] for p in service["ports"])
        assert props["inter.broker.listener.name"] == "INTERNAL"
        assert props["sparklog.remote.storage.s3.endpoint.url"] == "http://object-store:9000"
        assert props["sparklog.remote.storage.s3.access.key.id"] == store["MINIO_ROOT_USER"]
        assert props["sparklog.remote.storage.s3.secret.access.key"] == store["MINIO_ROOT_PASSWORD"]
        bucket = props["sparklog.remote.storage.url"].removeprefix("s3://").split("/")[0]
        assert bucket in " ".join(services["object-store-bucket"]["command"])
        assert service["depends_on"]["object-store-bucket"] == {
            "condition": "service_completed_successfully"
        }
    assert len(published) == len(set(published)) == 6


def test_dockerfile_builds_from_the_wheel_and_copies_files_that_exist() -> None:
    lines = (DEPLOY / "docker" / "Dockerfile").read_text().splitlines()
    instructions = [line.split(None, 1) for line in lines if line and not line.startswith("#")]
    copies = [args for op, args in instructions if op == "COPY"]
    for args in copies:
        parts = shlex.split(args)
        if parts[0].startswith("--from="):
            continue
        for source in parts[:-1]:
            assert (ROOT / source).exists(), f"Dockerfile copies missing {source}"
    runs = " ".join(args for op, args in instructions if op == "RUN")
    assert "pip wheel" in runs and "--no-index --find-links /wheels" in runs
    entrypoint = next(args for op, args in instructions if op == "ENTRYPOINT")
    assert "/usr/local/bin/sparklog-entrypoint" in entrypoint
    installed = "deploy/docker/entrypoint.sh /usr/local/bin/sparklog-entrypoint"
    assert any(installed in args for args in copies)


def test_entrypoint_is_valid_posix_shell() -> None:
    script = DEPLOY / "docker" / "entrypoint.sh"
    subprocess.run(["sh", "-n", str(script)], check=True)
    assert script.stat().st_mode & 0o111, "entrypoint.sh must be executable"


@pytest.mark.parametrize("unit", ["sparklog-controller@.service", "sparklog-broker@.service"])
def test_systemd_units_run_commands_that_exist(unit: str) -> None:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(DEPLOY / "systemd" / unit)
    assert {"Unit", "Service", "Install"} <= set(parser.sections())
    service = parser["Service"]
    assert service["KillSignal"] == "SIGTERM"
    assert int(service["LimitNOFILE"]) >= 100000
    assert service["Restart"] == "on-failure"
    config = service["Environment"].split("=", 1)[1]
    assert config.startswith("/etc/sparklog/") and "%i" in config
    cli = build_parser()
    for key in ("ExecStartPre", "ExecStart"):
        argv = shlex.split(service[key])
        assert argv[:2] == ["/usr/bin/env", "sparklog"], argv
        args = [a.replace("${SPARKLOG_CONFIG}", "/etc/sparklog/x.properties") for a in argv[2:]]
        cli.parse_args(args)  # exits (SystemExit) on a command or flag the CLI lacks
