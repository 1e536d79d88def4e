"""Kafka's sampled rate (``SampledStat`` + ``Rate``), the measure behind every quota.

A rate is kept as at most ``num_samples`` samples of ``window_ms`` each: a value is recorded
into the current sample (a new one starts once the current is a window old), samples older than
``num_samples`` windows are dropped, and the rate divides the samples' total by the time since
the oldest one started, counted as at least ``num_samples - 1`` whole windows (so a first burst
is measured over the whole span, not over a few milliseconds). Used by client quotas
(``quota.window.num`` / ``quota.window.size.seconds``) and connection-creation limits.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class QuotaConfig:
    num_samples: int = 11
    window_ms: int = 1000


@dataclass(slots=True)
class SampledRate:
    """Kafka's ``Rate`` over ``SampledStat`` samples: (window start ms, value) pairs."""

    config: QuotaConfig
    samples: deque[list[float]] = field(default_factory=deque)

    def record(self, value: float, now_ms: float) -> None:
        if not self.samples or now_ms >= self.samples[-1][0] + self.config.window_ms:
            self.samples.append([now_ms, 0.0])
            while len(self.samples) > self.config.num_samples:
                self.samples.popleft()
        self.samples[-1][1] += value

    def _purge(self, now_ms: float) -> None:
        expire_age = self.config.num_samples * self.config.window_ms
        while self.samples and now_ms - self.samples[0][0] >= expire_age:
            self.samples.popleft()

    def window_ms(self, now_ms: float) -> float:
        """The elapsed time the rate divides by (at least ``num - 1`` full windows)."""
        oldest = self.samples[0][0] if self.samples else now_ms
        elapsed = now_ms - oldest
        full_windows = int(elapsed // self.config.window_ms)
        minimum = self.config.num_samples - 1
        if full_windows < minimum:
            elapsed += (minimum - full_windows) * self.config.window_ms
        return elapsed

    def rate_per_second(self, now_ms: float) -> float:
        self._purge(now_ms)
        total = sum(value for _, value in self.samples)
        return total / (self.window_ms(now_ms) / 1000.0)
