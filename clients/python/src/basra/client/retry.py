"""When a call is tried again, and how long the client waits in between.

A logical call gets one request id (a UUIDv4) for all its attempts, so a retry of a call that
was applied but whose answer was lost returns the original answer (the server remembers the
request id) and never plays twice. Only transport failures are retried: UNAVAILABLE (the
server or its store is out of reach) and DEADLINE_EXCEEDED (every call this client makes is
idempotent: a read, or a change carrying its request id). A rejection (a rule, a version, a
token...) is never retried: it raises at once.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

import grpc

RETRIED: Final = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})

CHANNEL_OPTIONS: Final = (
    # Reconnect soon after a server comes back (gRPC's default first backoff is 1 s, growing to
    # 2 minutes), so that retries and resumed watches find it.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
)


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff with jitter.

    Attributes:
        attempts: tries of one call in all (the first included); a watch gets this many
            reconnections in a row that deliver nothing before it gives up.
        first_delay: seconds before the second try.
        max_delay: the longest wait between tries (a server's RetryInfo is honoured up to it).
        multiplier: growth of the delay per try.
    """

    attempts: int = 6
    first_delay: float = 0.1
    max_delay: float = 2.0
    multiplier: float = 2.0

    def delays(self, rng: random.Random | None = None) -> Iterator[float]:
        """The waits before each retry (``attempts - 1`` of them), jittered by up to +-20%."""
        jitter = rng or random.Random()  # noqa: S311 - spreading retries, not a secret
        delay = self.first_delay
        for _ in range(self.attempts - 1):
            yield min(self.max_delay, delay) * jitter.uniform(0.8, 1.2)
            delay *= self.multiplier

    def wait(self, delay: float, retry_after: float | None) -> float:
        """The wait before a retry: the backoff, or the server's RetryInfo when longer (bounded)."""
        return min(self.max_delay, max(delay, retry_after or 0.0))


NO_RETRY: Final = RetryPolicy(attempts=1)
"""One try only: for tests of the server itself and for callers with their own retry loop."""
