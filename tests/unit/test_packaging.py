"""The distribution ships every package, and connector/ and tiering/ only under sparklog."""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _declared() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return set(config["tool"]["setuptools"]["packages"])


def test_every_subpackage_is_listed_in_pyproject() -> None:
    on_disk = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "sparklog").rglob("__init__.py")
    }
    on_disk |= {"sparklog.connector", "sparklog.tiering"}
    assert _declared() == on_disk


def test_connector_and_tiering_import_under_sparklog() -> None:
    for name in ("sparklog.connector", "sparklog.tiering"):
        module = importlib.import_module(name)
        assert module.__doc__, f"{name} needs a docstring"
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    # One root: sparklog/connector and sparklog/tiering are symlinks the wheel build follows,
    # and an editable install stays a plain path entry (Spark finds pyspark_sparklog there).
    assert config["tool"]["setuptools"]["package-dir"] == {"": "."}
    for name in ("connector", "tiering"):
        assert (ROOT / "sparklog" / name).resolve() == (ROOT / name).resolve()
    assert config["project"]["scripts"]["sparklog"] == "sparklog.cli.main:main"
