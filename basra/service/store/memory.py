"""The embedded store: everything in this process, for `make run` and single-process use.

It keeps the Redis store's semantics (compare-and-set commits, idle expiry, capped events,
blocking event reads) so one contract suite proves both. Each method runs without awaiting
between its read and its write, which makes it atomic on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from basra.service.store.base import Commit, EventEntry, EventPage, MatchRecord, NewMatch


@dataclass(slots=True)
class _Match:
    record: MatchRecord
    entries: deque[EventEntry]
    expires_at: float
    changed: asyncio.Event = field(default_factory=asyncio.Event)


class MemoryStore:
    """In-process match storage with the Store interface."""

    def __init__(
        self,
        ttl_s: float,
        events_maxlen: int,
        clock: Callable[[], float] = time.monotonic,
        finished_ttl_s: float | None = None,
    ) -> None:
        self._ttl_s = ttl_s
        self._finished_ttl_s = finished_ttl_s or ttl_s
        self._maxlen = events_maxlen
        self._clock = clock
        self._matches: dict[str, _Match] = {}
        self._creates = 0

    def _live(self, match_id: str) -> _Match | None:
        match = self._matches.get(match_id)
        if match is not None and match.expires_at <= self._clock():
            del self._matches[match_id]
            match.changed.set()  # wake watchers: the match is gone
            return None
        return match

    async def load(self, match_id: str) -> MatchRecord | None:
        match = self._live(match_id)
        return None if match is None else match.record

    async def create(self, new: NewMatch) -> bool:
        self._creates += 1
        if self._creates % 1024 == 0:
            for match_id in list(self._matches):
                self._live(match_id)  # drop what expired
        if self._live(new.record.match_id) is not None:
            return False
        self._matches[new.record.match_id] = _Match(
            record=new.record,
            entries=deque([new.entry], maxlen=self._maxlen),
            expires_at=self._clock() + self._ttl_s,
        )
        return True

    async def commit(self, match_id: str, commit: Commit) -> bool:
        match = self._live(match_id)
        if match is None or match.record.version != commit.expected_version:
            return False
        match.record = commit.record
        match.entries.append(commit.entry)
        match.expires_at = self._clock() + (
            self._finished_ttl_s if commit.finished else self._ttl_s
        )
        match.changed.set()
        match.changed = asyncio.Event()
        return True

    async def events(self, match_id: str, after_version: int, wait_s: float) -> EventPage:
        match = self._live(match_id)
        if match is None:
            return EventPage((), None)
        if match.entries[-1].version <= after_version:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(match.changed.wait(), wait_s)
            match = self._live(match_id)
            if match is None:
                return EventPage((), None)
        entries = tuple(e for e in match.entries if e.version > after_version)
        return EventPage(entries, match.entries[0].version)

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        self._matches.clear()
