"""The embedded store: everything in this process, for `make run` and single-process use.

It keeps the Redis store's semantics (compare-and-set commits, idle expiry, capped events, a
change feed) so one contract suite proves both. Each method runs without awaiting between its
read and its write, which makes it atomic on the event loop.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from basra.service.store.base import (
    Change,
    Commit,
    EventEntry,
    EventPage,
    Heartbeat,
    MatchRecord,
    NewMatch,
    PendingChanges,
    WatchAccess,
)


@dataclass(slots=True)
class _Match:
    record: MatchRecord
    entries: deque[EventEntry]
    expires_at: float
    watch: WatchAccess | None = None


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
        self._feeds: list[MemoryFeed] = []
        self._presence: dict[str, dict[tuple[int, str], float]] = {}
        """Per match, each (seat, replica) mark's expiry (seconds since the epoch)."""

    def _live(self, match_id: str) -> _Match | None:
        match = self._matches.get(match_id)
        if match is not None and match.expires_at <= self._clock():
            del self._matches[match_id]
            self._changed(match_id, 0)  # watchers read again and find the match gone
            return None
        return match

    def _changed(self, match_id: str, version: int) -> None:
        for feed in self._feeds:
            feed.changed(match_id, version)

    async def load(self, match_id: str) -> MatchRecord | None:
        match = self._live(match_id)
        return None if match is None else match.record

    async def create(self, new: NewMatch) -> bool:
        self._creates += 1
        if self._creates % 1024 == 0:
            for match_id in list(self._matches):
                self._live(match_id)  # drop what expired
        current = self._live(new.record.match_id)
        if current is not None:
            return current.record == new.record
        self._matches[new.record.match_id] = _Match(
            record=new.record,
            entries=deque([new.entry], maxlen=self._maxlen),
            expires_at=self._clock() + self._ttl_s,
        )
        return True

    async def commit(self, match_id: str, commit: Commit) -> bool:
        applied, _ = await self.commit_or_current(match_id, commit)
        return applied

    async def commit_or_current(
        self, match_id: str, commit: Commit
    ) -> tuple[bool, MatchRecord | None]:
        match = self._live(match_id)
        if match is None:
            return False, None
        if match.record.version != commit.expected_version:
            return False, match.record
        match.record = commit.record
        match.entries.append(commit.entry)
        match.expires_at = self._clock() + (
            self._finished_ttl_s if commit.finished else self._ttl_s
        )
        self._changed(match_id, commit.record.version)
        return True, None

    async def events(self, match_id: str, after_version: int) -> EventPage:
        match = self._live(match_id)
        if match is None:
            return EventPage((), None)
        entries = tuple(e for e in match.entries if e.version > after_version)
        return EventPage(entries, match.entries[0].version)

    async def events_many(self, after: Mapping[str, int]) -> dict[str, EventPage]:
        return {
            match_id: await self.events(match_id, version) for match_id, version in after.items()
        }

    async def watch_access(self, match_ids: Collection[str]) -> dict[str, WatchAccess | None]:
        found = {match_id: self._live(match_id) for match_id in match_ids}
        return {match_id: None if m is None else m.watch for match_id, m in found.items()}

    async def swap_watch_access(
        self,
        match_id: str,
        expected: WatchAccess | None,
        new: WatchAccess,
        *,
        revoke: bool,
    ) -> bool:
        # Kept with the match: it lives exactly as long, and commits replace only the record.
        # What watch_access answered is the very object kept, so identity is the comparison.
        match = self._live(match_id)
        if match is None or match.watch is not expected:
            return False
        match.watch = new
        if revoke:
            self._changed(match_id, 0)
        return True

    async def heartbeat(
        self, replica: str, beats: Mapping[str, Heartbeat], now: float, ttl_s: float
    ) -> dict[str, frozenset[int]]:
        for match_id, beat in beats.items():
            marks = self._presence.setdefault(match_id, {})
            for seat in beat.gone:
                marks.pop((seat, replica), None)
            for seat in beat.live:
                marks[(seat, replica)] = now + ttl_s
        return await self.connected(beats, now)

    async def connected(self, match_ids: Collection[str], now: float) -> dict[str, frozenset[int]]:
        found = {}
        for match_id in match_ids:
            marks = self._presence.get(match_id, {})
            for mark in [m for m, at in marks.items() if at <= now]:
                del marks[mark]  # expired: as Redis drops them
            if not marks:
                self._presence.pop(match_id, None)
            found[match_id] = frozenset(seat for seat, _ in marks)
        return found

    def feed(self, on_reconnect: Callable[[], None]) -> MemoryFeed:
        feed = MemoryFeed(self._feeds)
        self._feeds.append(feed)
        return feed

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        self._matches.clear()
        self._presence.clear()
        for feed in list(self._feeds):
            await feed.close()


class MemoryFeed:
    """The embedded store's change feed: commits report themselves, nothing can be missed."""

    def __init__(self, feeds: list[MemoryFeed]) -> None:
        self._feeds = feeds
        self._followed: set[str] = set()
        self._changes = PendingChanges()

    def changed(self, match_id: str, version: int) -> None:
        if match_id in self._followed:
            self._changes.put(Change(match_id, version))

    async def follow(self, match_id: str) -> None:
        self._followed.add(match_id)

    def unfollow(self, match_id: str) -> None:
        self._followed.discard(match_id)

    async def changes(self) -> list[Change]:
        return await self._changes.take()

    async def close(self) -> None:
        self._changes.close()
        if self in self._feeds:
            self._feeds.remove(self)
