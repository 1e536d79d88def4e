"""Declarations of every message this node speaks, and the registry indexing them.

Every module in this package that defines a module-level :class:`~sparklog.protocol.schema.Api`
is imported when the package is; its Api lands in :data:`API_BY_KEY` and :data:`API_BY_NAME`.
Adding an API is adding a file here - this module never needs editing. Two modules declaring
the same key or name fail the import (a wrong registry must never reach the wire).
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from sparklog.protocol.schema import Api


def _discover() -> dict[int, Api]:
    by_key: dict[int, Api] = {}
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        for value in vars(module).values():
            if not isinstance(value, Api):
                continue
            existing = by_key.get(value.key)
            if existing is not None and existing is not value:
                raise ImportError(
                    f"api key {value.key} declared twice: {existing.name} and {value.name}"
                )
            by_key[value.key] = value
    return dict(sorted(by_key.items()))


API_BY_KEY: dict[int, Api] = _discover()

API_BY_NAME: dict[str, Api] = {api.name: api for api in API_BY_KEY.values()}
if len(API_BY_NAME) != len(API_BY_KEY):
    raise ImportError("two api keys share a name")


def apis_for_listener(listener: str) -> dict[int, Api]:
    """The APIs served on a listener kind (``"broker"`` or ``"controller"``), by key."""
    return {key: api for key, api in API_BY_KEY.items() if listener in api.listeners}


def supported_api_keys(listener: str) -> list[dict[str, Any]]:
    """The ``api_keys`` list of an ApiVersions response for ``listener``, by ascending key."""
    return [
        {"api_key": api.key, "min_version": api.min_version, "max_version": api.max_version}
        for api in apis_for_listener(listener).values()
    ]
