"""``share.auto.offset.reset`` values (a GROUP config, KIP-932/KIP-1106): ``latest`` (default),
``earliest``, or ``by_duration:<ISO-8601 duration>`` such as ``by_duration:PT1H`` or
``by_duration:P1DT30M``; a share-partition with no state starts there."""

from __future__ import annotations

import re

from sparklog.config_keys import ConfigError

_DURATION = re.compile(
    r"^P(?:(?P<days>\d+)D)?(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?"
    r"(?:(?P<seconds>\d+(?:\.\d{1,3})?)S)?)?$"
)


def parse_offset_reset(value: str) -> tuple[str, int]:
    """``(kind, duration_ms)``; kind is ``latest``, ``earliest`` or ``by_duration``."""
    if value in ("latest", "earliest"):
        return value, 0
    prefix = "by_duration:"
    if value.startswith(prefix):
        spec = value[len(prefix) :]
        match = _DURATION.match(spec)
        if match and spec not in ("P", "PT") and not spec.endswith("T"):
            parts = match.groupdict()
            ms = (
                int(parts["days"] or 0) * 86_400_000
                + int(parts["hours"] or 0) * 3_600_000
                + int(parts["minutes"] or 0) * 60_000
                + round(float(parts["seconds"] or 0) * 1000)
            )
            return "by_duration", ms
    raise ConfigError(
        f"Invalid value {value} for configuration share.auto.offset.reset: must be latest, "
        "earliest or by_duration:<ISO-8601 duration>"
    )
