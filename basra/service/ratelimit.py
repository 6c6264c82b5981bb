"""A token bucket: at most ``burst`` at once, refilled at ``rate`` per second."""

from __future__ import annotations

import time
from collections.abc import Callable


class TokenBucket:
    """Limits how fast something may happen (match creation, per replica)."""

    def __init__(
        self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._rate = rate
        self._burst = float(burst)
        self._tokens = float(burst)
        self._clock = clock
        self._at = clock()

    def take(self) -> float:
        """Take one token: 0.0 when allowed, else the seconds until one is available."""
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + (now - self._at) * self._rate)
        self._at = now
        if self._tokens >= 1:
            self._tokens -= 1
            return 0.0
        return (1 - self._tokens) / self._rate
