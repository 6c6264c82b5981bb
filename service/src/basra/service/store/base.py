"""The store interface and the records it keeps.

A match is one record (version, engine state bytes, seat token hashes, creation and per-seat
request records) plus an append-only, capped list of event entries, one per version. A change
replaces the record, compare-and-set on the version, so two replicas racing on one match apply
exactly one change.

The records made on every change (``EventEntry``, ``MatchRecord``, ``Commit``, ``Change``;
the service's ``Caller``, ``Outcome`` and ``records.SeatRequest`` likewise) are NamedTuples, not
frozen dataclasses: as immutable, and built without a frozen dataclass's ``object.__setattr__`` per
field, which cost a Play about 29,000 of its 859,000 server instructions (3.4 %, by
``tests.bench.callgrind_play``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Final, NamedTuple, Protocol


class StoreUnavailableError(Exception):
    """The store could not be reached within the deadline; nothing is known to have changed."""


class StoreFullError(Exception):
    """The store refused a write for want of memory (Redis at ``maxmemory`` with the
    ``noeviction`` policy); nothing was changed."""


class EventEntry(NamedTuple):
    """What one version of a match did: stored once, streamed to every seat, replayable."""

    version: int
    command: bytes
    """The engine input that produced this version (see service.records), for audit replays."""
    events: bytes
    """The public MatchEvent messages of this version (service.records.encode_events)."""
    private: tuple[bytes, ...]
    """Per seat, the cards it was dealt at this version (empty when no deal happened)."""

    def dealt_to(self, seat: int) -> bytes:
        """The cards ``seat`` was dealt at this version (empty when none)."""
        return self.private[seat] if seat < len(self.private) else b""


class MatchRecord(NamedTuple):
    """A stored match."""

    match_id: str
    version: int
    state: bytes
    """engine.codec bytes."""
    token_hashes: tuple[bytes, ...]
    creation: bytes
    """The creating Deal's idempotency record (service.records.Creation), or empty."""
    requests: tuple[bytes, ...]
    """Per seat, its latest idempotent request (service.records.SeatRequest), or empty."""
    watch_hashes: tuple[bytes, ...] = ()
    """Per seat, the hash of its read-only watch token (service.auth.watch_token); empty for a
    match created before watch tokens existed."""
    bots: bytes = b""
    """Per seat, the BotLevel of the service's bot playing it (0: a person); empty when people
    play every seat. Fixed when the match is created."""
    table: bytes = b""
    """The seat table (service.records.Table): the creator's seat and who holds each seat, by
    name; empty for a match created before tables."""


SALT_BYTES: Final = 16
"""The length of a watch salt (WatchAccess.salt)."""


@dataclass(frozen=True, slots=True)
class WatchAccess:
    """Who may watch a match with a watch token: kept apart from the match record, so that a
    revocation is never undone by a change committed from a record read before it.

    Watch tokens are derived from a seat token and ``salt`` (service.auth.watch_token): a new
    salt (RevokeWatchTokens) makes every earlier watch token worthless.
    """

    salt: bytes
    """16 random bytes, drawn anew by each revocation."""
    hashes: tuple[bytes, ...]
    """Per seat, the hash of its watch token under ``salt``; empty until the seat asks for it."""


@dataclass(frozen=True, slots=True)
class NewMatch:
    """A match to create at version 1."""

    record: MatchRecord
    entry: EventEntry


class Commit(NamedTuple):
    """One change to a match: the new record and its event entry, applied only if the match is
    still at ``expected_version``."""

    expected_version: int
    record: MatchRecord
    entry: EventEntry
    finished: bool = False
    """The change ends the match: its keys (record, events, watch access) then expire after the
    store's finished TTL (short) instead of its idle TTL, set by the same write."""


@dataclass(frozen=True, slots=True)
class EventPage:
    """Entries after a version, and the oldest version the store still holds."""

    entries: tuple[EventEntry, ...]
    oldest_version: int | None
    """None when the match has no entries any more (expired)."""


class Store(Protocol):
    """Match storage shared by every replica. Every method raises StoreUnavailableError when the
    store cannot answer within its deadline."""

    async def load(self, match_id: str) -> MatchRecord | None:
        """The match, or None when it does not exist (never created, or expired)."""
        ...

    async def create(self, new: NewMatch) -> bool:
        """Create the match unless its id exists; True when created, or when the id holds
        this very record already (the same create sent again: a new match's record is
        unique, its seat token hashes drawn for it alone). Atomic."""
        ...

    async def commit(self, match_id: str, commit: Commit) -> bool:
        """Apply the change if the match is at ``commit.expected_version``; True when applied.

        False when another change won the race (or the match expired): reload and decide again.
        The event entry, the state and the request record are written together or not at all,
        and the match's expiry restarts: the idle TTL, or the finished TTL when
        ``commit.finished``.
        """
        ...

    async def commit_or_current(
        self, match_id: str, commit: Commit
    ) -> tuple[bool, MatchRecord | None]:
        """``commit``, answering in the same round trip what a retry needs: (True, None) when
        applied; (False, the current record) when another change won the race; (False, None)
        when the match is gone."""
        ...

    async def events(self, match_id: str, after_version: int) -> EventPage:
        """Entries with versions above ``after_version``, oldest first (none yet: empty)."""
        ...

    async def events_many(self, after: Mapping[str, int]) -> dict[str, EventPage]:
        """``events`` of many matches in one go (by match id: the version to read after)."""
        ...

    async def watch_access(self, match_ids: Collection[str]) -> dict[str, WatchAccess | None]:
        """Each match's watch access (None: none kept, or the match is gone), in one go."""
        ...

    async def swap_watch_access(
        self,
        match_id: str,
        expected: WatchAccess | None,
        new: WatchAccess,
        *,
        revoke: bool,
    ) -> bool:
        """Replace the match's watch access if it is still ``expected`` (as ``watch_access``
        answered it; None: none kept); False when it is not, or the match is gone (read again).

        The access is kept exactly as long as the match: it takes the match's remaining
        lifetime, and every later commit gives it the match's new one (idle or finished). With
        ``revoke`` the match's followers are told (a change of version 0), so WatchMatch
        streams of revoked tokens end.
        """
        ...

    async def heartbeat(
        self, replica: str, beats: Mapping[str, Heartbeat], now: float, ttl_s: float
    ) -> dict[str, frozenset[int]]:
        """Mark each match's ``live`` seats connected by ``replica`` until ``now + ttl_s``
        (seconds since the epoch, the replica's clock), remove its marks of the ``gone``
        seats, and answer each match's connected seats (marked by any replica, unexpired at
        ``now``), all in one go. A match's marks expire with their TTL when nobody renews
        them: they outlive neither the replicas nor the streams that made them by more."""
        ...

    async def connected(self, match_ids: Collection[str], now: float) -> dict[str, frozenset[int]]:
        """Each match's connected seats at ``now`` (see ``heartbeat``), in one go."""
        ...

    def feed(self, on_reconnect: Callable[[], None]) -> ChangeFeed:
        """A new change feed (a replica needs one: see ChangeFeed); ``on_reconnect`` is called
        each time the feed lost its connection to the store."""
        ...

    async def ping(self) -> None:
        """Return when the store answers and accepts writes.

        Raises:
            StoreUnavailableError: it does not answer.
            StoreFullError: it answers but refuses writes (out of memory).
        """
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


class Heartbeat(NamedTuple):
    """One replica's seats of one match for ``Store.heartbeat``."""

    live: tuple[int, ...]
    """Seats with a WatchMatch stream open on the replica: marked connected until the TTL."""
    gone: tuple[int, ...]
    """Seats whose last stream on the replica ended: their mark of the replica is removed. A
    seat also ``live`` (a stream of it opened again since) keeps its mark, renewed."""


class Change(NamedTuple):
    """A followed match changed."""

    match_id: str
    version: int
    """The version committed; 0 when unknown: the feed may have missed changes of the match
    (it lost its connection meanwhile, or its watch tokens were revoked) and its events and
    watch access must be read again."""


class PendingChanges:
    """The changes a feed has seen and not yet handed out, shared by both stores' feeds: the
    feed's source ``put``s them, ``take`` waits for at least one (or the close) and takes all."""

    def __init__(self) -> None:
        self._pending: list[Change] = []
        self._wake = asyncio.Event()
        self._closed = False

    def put(self, change: Change) -> None:
        self._pending.append(change)
        self._wake.set()

    async def take(self) -> list[Change]:
        while not self._pending and not self._closed:
            await self._wake.wait()
            self._wake.clear()
        pending, self._pending = self._pending, []
        return pending

    def close(self) -> None:
        self._closed = True
        self._wake.set()


class ChangeFeed(Protocol):
    """Tells which of the followed matches changed, so that one reader per replica serves every
    WatchMatch stream of the replica (service.watch). A wake-up only: the events themselves are
    read with Store.events, which stays the source of truth.

    Every method raises StoreUnavailableError when the store cannot answer within its deadline.
    """

    async def follow(self, match_id: str) -> None:
        """Report the match's changes: every commit after this returns is reported."""
        ...

    def unfollow(self, match_id: str) -> None:
        """Stop reporting the match (at once; the store is told soon after)."""
        ...

    async def changes(self) -> list[Change]:
        """Wait for changes of followed matches; returns those seen since the last call."""
        ...

    async def close(self) -> None:
        """Release the feed's connections; a waiting ``changes`` returns empty."""
        ...
