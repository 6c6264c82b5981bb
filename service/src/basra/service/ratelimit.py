"""Token buckets: at most ``burst`` at once, refilled at ``rate`` per second; one per replica
and one per caller for match creation.

A bucket made without a clock reads ``now``, looked up at every call: a test holds time still (or
moves it) for every bucket of a running server by replacing ``now`` (pytest's ``monkeypatch``).
"""

from __future__ import annotations

import ipaddress
import time
from collections import OrderedDict
from collections.abc import Callable

Clock = Callable[[], float]


def now() -> float:
    """The buckets' default clock: monotonic seconds."""
    return time.monotonic()


class TokenBucket:
    """Limits how fast something may happen (match creation, per replica)."""

    def __init__(self, rate: float, burst: int, clock: Clock | None = None) -> None:
        self._rate = rate
        self._burst = float(burst)
        self._tokens = float(burst)
        self._clock = clock
        self._at = self._now()

    def _now(self) -> float:
        return self._clock() if self._clock is not None else now()

    def take(self) -> float:
        """Take one token: 0.0 when allowed, else the seconds until one is available."""
        at = self._now()
        self._tokens = min(self._burst, self._tokens + (at - self._at) * self._rate)
        self._at = at
        if self._tokens >= 1:
            self._tokens -= 1
            return 0.0
        return (1 - self._tokens) / self._rate

    def give_back(self) -> None:
        """Return a token taken by a call that another limit then refused."""
        self._tokens = min(self._burst, self._tokens + 1)


class CallerBuckets:
    """One token bucket per caller, for at most ``max_callers`` callers at once.

    Memory is bounded: past ``max_callers`` the least recently seen caller's bucket is dropped
    (a caller seen again starts with a full burst, which a flood cannot exploit: it needs ever
    new callers, and the per-replica bucket still applies).
    """

    def __init__(
        self,
        rate: float,
        burst: int,
        max_callers: int,
        clock: Clock | None = None,
    ) -> None:
        self._rate = rate
        self._burst = burst
        self._max = max_callers
        self._clock = clock
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()

    def __len__(self) -> int:
        return len(self._buckets)

    def bucket(self, caller: str) -> TokenBucket:
        """The caller's bucket (created full), now the most recently seen."""
        found = self._buckets.get(caller)
        if found is None:
            found = self._buckets[caller] = TokenBucket(self._rate, self._burst, self._clock)
            if len(self._buckets) > self._max:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(caller)
        return found


def peer_host(peer: str) -> str:
    """The client address of a transport's peer string without its port: ``ipv4:1.2.3.4:5``
    and ``1.2.3.4:5`` give ``1.2.3.4``; ``ipv6:[::1]:5`` gives ``::1``."""
    for scheme in ("ipv4:", "ipv6:"):
        if peer.startswith(scheme):
            peer = peer[len(scheme) :]
    if peer.startswith("["):
        return peer[1:].partition("]")[0]
    if _is_ip(peer):
        return peer
    host, colon, port = peer.rpartition(":")
    # "1.2.3.4:5", or an IPv6 address with its port and no brackets ("::1:5", ASGI's form).
    return host if colon and port.isdigit() and (":" not in host or _is_ip(host)) else peer


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
