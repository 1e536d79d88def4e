"""What the security package reads of the server configuration, as interfaces.

:class:`sparklog.config.ServerConfig` satisfies :class:`ServerSettings` (and its listeners
:class:`ListenerSettings`); security code takes these so that it does not import the config
package, which itself checks security settings when it loads (``config → security`` is the
one arrow between the two). Read-only: nothing here changes a setting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

__all__ = ["ListenerSettings", "ServerSettings"]


class ListenerSettings(Protocol):
    """One entry of ``listeners``."""

    @property
    def name(self) -> str: ...
    @property
    def security_protocol(self) -> str: ...


class ServerSettings(Protocol):
    """The server settings security code reads (``server.properties``, parsed)."""

    @property
    def props(self) -> Mapping[str, str]:
        """The keys as written in the file (``listener.name.*`` overrides among them)."""
        ...

    def get(self, key: str) -> Any: ...

    def is_set(self, key: str) -> bool: ...

    @property
    def is_broker(self) -> bool: ...
    @property
    def is_controller(self) -> bool: ...
    @property
    def listeners(self) -> Sequence[ListenerSettings]: ...
    @property
    def broker_listeners(self) -> Sequence[ListenerSettings]: ...
    @property
    def controller_listener_names(self) -> tuple[str, ...]: ...
    @property
    def inter_broker_listener_name(self) -> str: ...
    @property
    def security_protocol_map(self) -> dict[str, str]: ...
