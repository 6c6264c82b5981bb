"""Presence: which seats have a WatchMatch stream open, on any replica.

Stateless replicas share presence through the store: each replica marks the seats whose
streams it serves as connected until a TTL ahead (``Settings.presence_ttl_s``) and renews
every mark each interval (``Settings.presence_interval_s``), in store calls of ``BATCH``
matches (on Redis one pipeline each: one script per match). A seat's first stream on the
replica and its last one's end are sent at once, batched with whatever else changed
meanwhile, so a seat connects and disconnects without waiting for the interval; a replica
that stops without a goodbye leaves marks that expire within the TTL. Each store call answers
the connected seats of every match it names, which is how the replica learns the other
replicas' streams: within one interval.

The marks' expiries are instants of the replicas' own clocks (``now``, seconds since the
epoch): replicas whose clocks disagree by more than a small part of the TTL would see each
other's marks expire early or late.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Callable

from basra.service.store import Store
from basra.service.store.base import Heartbeat

log = logging.getLogger("basra.presence")
_RETRY_S = 1.0
"""The pause after a failed store call before the next one (the marks outlive one miss)."""
BATCH = 500
"""Matches per store call of a renewal (on Redis, one pipeline of as many scripts)."""


def now() -> float:
    """The presence marks' clock: seconds since the epoch. A test moves time for every replica
    of the process by replacing it (pytest's ``monkeypatch``)."""
    return time.time()


Changed = Callable[[str, frozenset[int]], None]
"""Told a match's connected seats whenever they differ from what the replica knew."""


class Presence:
    """One replica's presence: its streams' seats, renewed in the store, and what it knows of
    each followed match's connected seats."""

    def __init__(self, store: Store, *, interval_s: float, ttl_s: float, changed: Changed) -> None:
        self._store = store
        self._interval_s = interval_s
        self._ttl_s = ttl_s
        self._changed = changed
        self.replica = secrets.token_hex(6)
        """This replica's name in the marks: random, so that no two replicas share one."""
        self._seats: dict[str, dict[int, int]] = {}
        """Per match, the streams open on this replica per seat."""
        self._gone: dict[str, set[int]] = {}
        """Per match, the seats whose last stream here ended, not yet unmarked."""
        self._readers: dict[str, int] = {}
        """Per match, the streams here that asked for presence messages."""
        self._known: dict[str, frozenset[int]] = {}
        """Per match followed for presence, its connected seats as last read."""
        self._soon: set[str] = set()
        """Matches to send at once (a seat's first or last stream; a new reader)."""
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def arrive(self, match_id: str, seat: int) -> None:
        """A stream of ``seat`` opened here."""
        seats = self._seats.setdefault(match_id, {})
        seats[seat] = seats.get(seat, 0) + 1
        if seats[seat] == 1:
            gone = self._gone.get(match_id)
            if gone is not None:
                gone.discard(seat)
            self._soon_send(match_id)

    def depart(self, match_id: str, seat: int) -> None:
        """A stream of ``seat`` here ended."""
        seats = self._seats[match_id]
        seats[seat] -= 1
        if seats[seat] == 0:
            del seats[seat]
            if not seats:
                del self._seats[match_id]
            self._gone.setdefault(match_id, set()).add(seat)
            self._soon_send(match_id)

    def follow(self, match_id: str) -> None:
        """A stream here asked for the match's presence messages."""
        self._readers[match_id] = self._readers.get(match_id, 0) + 1
        if match_id not in self._known:
            self._soon_send(match_id)

    def unfollow(self, match_id: str) -> None:
        self._readers[match_id] -= 1
        if self._readers[match_id] == 0:
            del self._readers[match_id]
            self._known.pop(match_id, None)

    def known(self, match_id: str) -> frozenset[int] | None:
        """The match's connected seats as this replica last read them (None: not yet)."""
        return self._known.get(match_id)

    def _soon_send(self, match_id: str) -> None:
        self._soon.add(match_id)
        self._wake.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="basra-presence")

    async def close(self) -> None:
        """Stop renewing (the server is stopping): the marks of this replica's seats are
        removed when the store answers in time, else they expire within the TTL."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for match_id, seats in self._seats.items():
            self._gone.setdefault(match_id, set()).update(seats)
        self._seats.clear()
        if self._gone:
            with contextlib.suppress(Exception):
                await self._send(set(self._gone))

    async def _run(self) -> None:
        """Renew every mark each interval; send the matches that changed at once."""
        loop = asyncio.get_running_loop()
        renew_at = loop.time() + self._interval_s
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout_at(renew_at):
                    await self._wake.wait()
            self._wake.clear()
            if loop.time() >= renew_at:
                renew_at = loop.time() + self._interval_s
                matches = set(self._seats) | set(self._gone) | set(self._readers) | self._soon
            else:
                matches = set(self._soon)
            self._soon.clear()
            if not matches:
                continue
            try:
                await self._send(matches)
            except Exception as exc:
                # Tried again at once when something changes, else at the next renewal: the
                # marks of this replica outlive a missed renewal (the TTL is longer).
                self._soon |= matches & (set(self._gone) | set(self._readers))
                log.warning("presence renewal failed", extra={"cause": repr(exc)})
                await asyncio.sleep(_RETRY_S)

    async def _send(self, matches: set[str]) -> None:
        """Renew and unmark ``matches``' seats of this replica, and read their connected seats:
        one store call per ``BATCH`` matches, so that building and reading one call never holds
        the event loop for long, however many matches the replica serves."""
        pending = sorted(matches)
        while pending:
            batch, pending = pending[:BATCH], pending[BATCH:]
            gone = {m: self._gone.pop(m) for m in batch if m in self._gone}
            beats = {
                m: Heartbeat(tuple(self._seats.get(m, ())), tuple(gone.get(m, ()))) for m in batch
            }
            try:
                found = await self._store.heartbeat(self.replica, beats, now(), self._ttl_s)
            except BaseException:
                for match_id, left in gone.items():
                    # Not unmarked: unless the seat is back meanwhile, try again.
                    back = self._seats.get(match_id, {})
                    self._gone.setdefault(match_id, set()).update(s for s in left if s not in back)
                raise
            for match_id, connected in found.items():
                if match_id in self._readers and self._known.get(match_id) != connected:
                    self._known[match_id] = connected
                    self._changed(match_id, connected)
