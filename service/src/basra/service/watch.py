"""WatchMatch fan-out: one shared reader per replica, streams cost memory, not connections.

``Watchers`` follows the matches that this replica's streams watch through the store's one
change feed (``Store.feed``: on Redis, a connection per node that waits on every followed
match), reads each change once (``Store.events_many``, pipelined) and hands the entries to the
match's streams in memory. Each stream then sends them in its own view: a seat sees the cards
dealt to it, a spectator only public events.

What each stream guarantees, whatever the feed does:

- Exact resume: a stream sends every version after its ``after_version``, in order, once. It
  keeps its own last version and only ever sends versions above it; where the shared cache does
  not reach back to it, it reads the store itself.
- Nothing missed: a stream registers (and the feed subscribes) before the stream reads its
  backlog, so every later commit wakes it. When the feed lost its connection, it reports every
  match again once it is back (version 0) and the reader reads them all: whatever was committed
  meanwhile is sent, and nothing twice.
- A client that leaves releases its place at once (``WatchStream.leave``, when the call's
  ``ended`` completes; on gRPC, the cancellation of the call's handler): the match is unfollowed
  when its last stream goes.
- A spectator's stream ends with PERMISSION_DENIED / WATCH_TOKEN_REVOKED once its watch token
  stops working: it checks the match's watch access once subscribed, and again each time the
  feed reports the match with version 0 (a revocation publishes that, and a reconnection
  reports every match so), which the reader reads once for all streams of the match.
- A seat's stream ends with PERMISSION_DENIED / SEAT_TOKEN_REVOKED after the version that
  revoked its token (ReissueInvitation): that version's entry names the hash of the token it
  revoked (``records.revoked_by``), which the stream compares with its own.
- Presence (``service.presence``): a seat's stream makes its seat connected while it is open;
  a stream that asked for presence messages gets one when it opens and one whenever the
  match's connected seats change, between versions, never inside one.

What an idle stream holds is what a replica of 10,000 streams pays 10,000 times (``make bench``
reports it per stream): its ``WatchStream`` (slots), its place in the match's ``_Followed``, and
nothing it has already sent. Responses are built per batch and dropped once yielded (each
protobuf message holds an arena of its own), and the streams of a match wait on one shared
future of the match, not one each.

A change this replica commits reaches its streams here without a store read: the servicer
announces the commit to ``Watchers`` before awaiting it (``committing``) and hands over the
committed entry once the store took it (``committed``). The feed still reports the change; the
reader, seeing a report of a match with a commit of this replica in flight, waits for that commit
to finish, then reads only the matches whose reported version is still unknown. Without the
wait, Redis's report (published inside the commit script) usually arrives before the commit's own
reply and the reader would read what the servicer is about to hand over.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
from collections.abc import AsyncIterator
from typing import Final

from basra.service import convert, records
from basra.service.errors import Reason, ServiceError
from basra.service.metrics import Metrics
from basra.service.presence import Presence
from basra.service.store import EventEntry, Store, StoreUnavailableError, WatchAccess
from basra.service.store.base import Change, ChangeFeed, EventPage
from basra.v1 import basra_service_pb2 as pb

log = logging.getLogger("basra.watch")
RECENT: Final = 8
"""Entries kept per followed match, so that streams a little behind need no store read."""
_RETRY_S: Final = (0.05, 0.1, 0.25, 0.5, 1.0)


class _Entry:
    """An event entry and the responses made of it, built once for all streams of a match."""

    __slots__ = ("ends", "entry", "public", "revokes", "seats")

    def __init__(self, entry: EventEntry) -> None:
        self.entry = entry
        events = records.decode_events(entry.events)
        self.public = tuple(pb.WatchMatchResponse(event=e) for e in events)
        self.seats: dict[int, tuple[pb.WatchMatchResponse, ...]] = {}
        self.ends = any(e.HasField("match_ended") for e in events)
        self.revokes = records.revoked_by(entry.command)
        """(seat, hash of its token) when this version revoked a seat token."""

    @property
    def version(self) -> int:
        return self.entry.version

    def for_viewer(self, seat: int | None) -> tuple[pb.WatchMatchResponse, ...]:
        """The responses as ``seat`` receives them (None: a spectator, public events only)."""
        if seat is None or not self.entry.dealt_to(seat):
            return self.public
        responses = self.seats.get(seat)
        if responses is None:
            dealt = records.decode_cards(self.entry.dealt_to(seat))
            responses = tuple(
                pb.WatchMatchResponse(event=convert.for_seat(r.event, dealt)) for r in self.public
            )
            self.seats[seat] = responses
        return responses


class _Followed:
    """A match that streams of this replica watch."""

    __slots__ = (
        "access",
        "access_reads",
        "bots",
        "changed",
        "connected",
        "epoch",
        "gone",
        "latest",
        "match_id",
        "presence",
        "presence_reads",
        "ready",
        "recent",
        "seats",
        "spectators",
        "streams",
        "waiting",
    )

    def __init__(self, match_id: str) -> None:
        self.match_id = match_id
        self.streams = 0
        self.spectators = 0
        """How many of the streams are spectators' (they end when their watch token does)."""
        self.access: WatchAccess | None = None
        """The watch access as the reader last read it."""
        self.access_reads = 0
        """Grows each time the reader has read ``access`` again."""
        self.latest = 0
        """The highest version known to exist (0: not known yet)."""
        self.epoch = 0
        """Grows when the match may have changed in a way ``latest`` does not show: each
        stream reads the store again when it sees a new epoch."""
        self.recent: list[_Entry] = []
        self.waiting = 0
        """How many of the streams await ``changed`` now (the rest are reading or sending)."""
        self.changed: asyncio.Future[None] | None = None
        """What the match's waiting streams await (one future for all of them); ``wake``
        completes it, the next wait makes a new one."""
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        """Done once the feed reports the match (or failed to subscribe)."""
        self.gone = False
        """The last read found no events: the match expired (or Redis lost it)."""
        self.seats = 0
        """The match's seat count (set by its streams, for presence messages)."""
        self.bots = b""
        """Per seat, its BotLevel: a bot seat is always connected."""
        self.connected: frozenset[int] | None = None
        """The connected seats as this replica last read them (None: not yet)."""
        self.presence_reads = 0
        """Grows each time ``connected`` changes."""
        self.presence: pb.WatchMatchResponse | None = None
        """The presence message of ``connected``, built once for every stream that asked."""

    def presence_message(self) -> pb.WatchMatchResponse:
        """The presence message of what the replica last read."""
        if self.presence is None:
            seats = self.connected or frozenset()
            bots = self.bots
            connected = [s in seats or (s < len(bots) and bots[s] > 0) for s in range(self.seats)]
            self.presence = pb.WatchMatchResponse(presence=pb.Presence(connected=connected))
        return self.presence

    def present(self, seats: frozenset[int]) -> None:
        """The replica read the match's connected seats: wake the streams if they changed."""
        if seats != self.connected or self.presence_reads == 0:
            self.connected = seats
            self.presence = None
            self.presence_reads += 1
            self.wake()

    def remember(self, entries: tuple[EventEntry, ...]) -> None:
        fresh = [e for e in entries if not self.recent or e.version > self.recent[-1].version]
        if self.recent and fresh and fresh[0].version != self.recent[-1].version + 1:
            self.recent = []  # not contiguous: start again from these
        self.recent = [*self.recent, *(_Entry(e) for e in fresh)][-RECENT:]
        if self.recent:
            self.latest = max(self.latest, self.recent[-1].version)

    def cached_after(self, version: int) -> list[_Entry] | None:
        """The entries after ``version`` up to ``latest``, if the cache holds them all."""
        if not self.recent or self.recent[-1].version < self.latest:
            return None
        if self.recent[0].version > version + 1:
            return None
        return [e for e in self.recent if e.version > version]

    def wake(self) -> None:
        """Wake every stream waiting on the match: each looks again at what it needs."""
        changed, self.changed = self.changed, None
        if changed is not None and not changed.done():
            changed.set_result(None)

    def waiter(self) -> asyncio.Future[None]:
        """What to await for the next ``wake``: one future for every stream of the match."""
        if self.changed is None or self.changed.done():
            self.changed = asyncio.get_running_loop().create_future()
        return self.changed


class WatchStream:
    """One WatchMatch stream's place in the fan-out: iterate it for the responses."""

    __slots__ = (
        "_access",
        "_access_reads",
        "_after",
        "_ended",
        "_epoch",
        "_followed",
        "_left",
        "_presence",
        "_released",
        "_revoked",
        "_seat",
        "_token",
        "_watchers",
    )

    def __init__(
        self,
        watchers: Watchers,
        match_id: str,
        seat: int | None,
        after: int,
        access: bytes | None = None,
        info: StreamInfo | None = None,
    ) -> None:
        self._watchers = watchers
        self._followed = followed = watchers._join(match_id)
        self._seat = seat
        self._after = after
        self._access = access
        self._access_reads = 0
        if access is not None:
            followed.spectators += 1
        self._token = b"" if info is None else info.token_hash
        """The hash of the stream's seat token (b"": a spectator's stream)."""
        self._presence: int | None = None
        """With presence messages, the ``presence_reads`` of the last one sent (0: none yet)."""
        if info is not None:
            followed.seats, followed.bots = info.seats, info.bots
            if info.presence:
                self._presence = 0
                watchers.presence.follow(match_id)
                if (known := watchers.presence.known(match_id)) is not None:
                    followed.present(known)
                else:
                    # What the match's streams last heard may be old: wait for the read.
                    followed.connected = followed.presence = None
        if seat is not None:
            watchers.presence.arrive(match_id, seat)
        self._epoch = 0
        self._ended = False
        self._left = False
        self._released = False
        self._revoked = False

    def leave(self, _: object = None) -> None:
        """The client has gone: release the stream's place now and end the iteration (a done
        callback of the call's ``ended`` future: the argument is ignored)."""
        self._left = True
        self._release()
        self._followed.wake()

    def _release(self) -> None:
        if not self._released:
            self._released = True
            match_id = self._followed.match_id
            if self._access is not None:
                self._followed.spectators -= 1
            if self._seat is not None:
                self._watchers.presence.depart(match_id, self._seat)
            if self._presence is not None:
                self._watchers.presence.unfollow(match_id)
            self._watchers._leave(self._followed)

    async def responses(self) -> AsyncIterator[pb.WatchMatchResponse]:
        """The stream's responses: versions after ``after``, in the stream's view, until the
        match ends or the client leaves.

        Raises:
            ServiceError: NOT_FOUND / MATCH_NOT_FOUND (the match expired), OUT_OF_RANGE /
                HISTORY_TRIMMED (events after ``after`` are no longer kept), PERMISSION_DENIED
                / WATCH_TOKEN_REVOKED (a spectator's watch token stopped working) or
                SEAT_TOKEN_REVOKED (the seat's token was revoked).
            StoreUnavailableError: the first read failed.
        """
        followed = self._followed
        try:
            await self._watchers._subscribed(followed)
            self._epoch = followed.epoch
            self._access_reads = followed.access_reads
            # Reversed, so that pop() sends them in order; emptied before the stream waits, so
            # an idle stream keeps nothing it has sent (no named loop variable either). A match
            # gone is MATCH_NOT_FOUND.
            batch = self._batch(
                self._check(
                    await self._watchers.store.events(followed.match_id, self._after), first=True
                )
            )
            if self._access is not None:
                # Revoked between the caller's check and the subscription: no wake-up told it.
                found = await self._watchers.store.watch_access((followed.match_id,))
                self._check_access(found[followed.match_id])
            while True:
                while batch:
                    yield batch.pop()
                if self._left or self._ended:
                    return
                if self._revoked:
                    raise ServiceError(
                        Reason.SEAT_TOKEN_REVOKED,
                        "the match's creator gave this seat a new invitation: this seat token "
                        "no longer works",
                        {"match_id": followed.match_id, "seat": self._seat},
                    )
                if self._presence_due():
                    self._presence = followed.presence_reads
                    yield followed.presence_message()
                    continue
                followed.latest = max(followed.latest, self._after)
                batch = self._batch(await self._next())
        finally:
            self._release()

    def _batch(self, entries: list[_Entry]) -> list[pb.WatchMatchResponse]:
        """The responses of ``entries`` after the stream's version, in its view, reversed; the
        stream's version moves past them (MatchEnded ends the stream: nothing follows it)."""
        batch: list[pb.WatchMatchResponse] = []
        for entry in entries:
            if entry.version <= self._after:
                continue
            batch.extend(entry.for_viewer(self._seat))
            if entry.ends:
                self._ended = True
                break
            self._after = entry.version
            if entry.revokes is not None and self._token:
                seat, revoked = entry.revokes
                if seat == self._seat and hmac.compare_digest(revoked, self._token):
                    self._revoked = True
                    break
        batch.reverse()
        return batch

    async def _next(self) -> list[_Entry]:
        """The entries after the stream's version, once there are some (or the client left)."""
        followed = self._followed
        while not self._left:
            if self._presence_due():
                return []  # a presence message to send first
            # A match gone has no watch access either: its streams end MATCH_NOT_FOUND below.
            access_read = self._access_reads != followed.access_reads
            if self._access is not None and access_read and not followed.gone:
                self._access_reads = followed.access_reads
                self._check_access(followed.access)
            stale = self._epoch != followed.epoch
            if followed.latest > self._after or followed.gone or stale:
                cached = None if followed.gone or stale else followed.cached_after(self._after)
                if cached is not None:
                    return cached
                self._epoch = followed.epoch
                try:
                    page = await self._watchers.store.events(followed.match_id, self._after)
                except StoreUnavailableError:
                    # The reader tries again and wakes this stream once it could read.
                    log.info("watch read failed", extra={"match_id": followed.match_id})
                else:
                    entries = self._check(page, first=False)
                    if entries:
                        return entries
                    # Nothing after this stream's version exists: whatever said otherwise (a
                    # version from before a Redis rollback) is forgotten.
                    followed.latest = min(followed.latest, self._after)
            changed = followed.waiter()
            followed.waiting += 1
            try:
                await changed
            except asyncio.CancelledError:
                # Cancelling a task cancels the future it awaits: the match's shared one when
                # another of its streams was cancelled while waiting. That wakes this stream
                # too, harmlessly (it looks again); only its own task's cancellation ends it.
                task = asyncio.current_task()
                if not changed.cancelled() or task is None or task.cancelling():
                    raise
            finally:
                followed.waiting -= 1
        return []

    def _presence_due(self) -> bool:
        """Whether the stream asked for presence messages and one it has not sent is known."""
        sent, followed = self._presence, self._followed
        return (
            sent is not None and sent != followed.presence_reads and followed.connected is not None
        )

    def _check_access(self, access: WatchAccess | None) -> None:
        """End a spectator's stream whose watch token no longer works: the match's watch salt
        is not the one the token was derived under (b"": the salt-less tokens of a match from
        before RevokeWatchTokens, valid while it has no watch access)."""
        assert self._access is not None
        current = b"" if access is None else access.salt
        if not hmac.compare_digest(current, self._access):
            match_id = self._followed.match_id
            raise ServiceError(
                Reason.WATCH_TOKEN_REVOKED,
                "this watch token was revoked: ask a seat for a new one",
                {"match_id": match_id},
            )

    def _check(self, page: EventPage, *, first: bool) -> list[_Entry]:
        match_id = self._followed.match_id
        if page.oldest_version is None:
            raise ServiceError(
                Reason.MATCH_NOT_FOUND,
                f"no match {match_id!r}: it never existed or has expired",
                {"match_id": match_id},
            )
        after = self._after
        if (first and after and after + 1 < page.oldest_version) or (
            not first and after + 1 < page.oldest_version
        ):
            raise ServiceError(
                Reason.HISTORY_TRIMMED,
                "events after that version are no longer kept: call GetMatch and resume "
                "from its version",
                {"after_version": after, "oldest_version": page.oldest_version},
            )
        return [_Entry(e) for e in page.entries]


class StreamInfo:
    """What a stream knows of its match when it opens, for presence and revocation."""

    __slots__ = ("bots", "presence", "seats", "token_hash")

    def __init__(self, seats: int, bots: bytes, token_hash: bytes, *, presence: bool) -> None:
        self.seats = seats
        self.bots = bots
        self.token_hash = token_hash
        """The hash of the seat token the stream opened with (b"": a spectator's)."""
        self.presence = presence
        """The stream asked for presence messages."""


class Watchers:
    """Every WatchMatch stream of this replica, over one change feed of the store."""

    def __init__(
        self,
        store: Store,
        metrics: Metrics,
        *,
        presence_interval_s: float = 5.0,
        presence_ttl_s: float = 15.0,
    ) -> None:
        self.store = store
        self.presence = Presence(
            store, interval_s=presence_interval_s, ttl_s=presence_ttl_s, changed=self._present
        )
        self._metrics = metrics
        self._matches: dict[str, _Followed] = {}
        self._feed: ChangeFeed | None = None
        self._reader: asyncio.Task[None] | None = None
        self._reconnects = metrics.watch_reconnects
        self._tasks: set[asyncio.Task[None]] = set()
        self._committing: dict[str, list[asyncio.Future[None]]] = {}
        """Per followed match, the commits of this replica in flight (see the docstring)."""

    def open(
        self,
        match_id: str,
        seat: int | None,
        after_version: int,
        access: bytes | None = None,
        info: StreamInfo | None = None,
    ) -> WatchStream:
        """A stream of the match's events after ``after_version`` for ``seat`` (None: a
        spectator, whose watch token is valid under the watch salt ``access``), with the
        match's ``info`` (its seats, the stream's token, presence messages or not). The caller
        iterates ``responses()`` and calls ``leave()`` when the client goes."""
        return WatchStream(self, match_id, seat, after_version, access, info)

    def _present(self, match_id: str, seats: frozenset[int]) -> None:
        """Presence read the match's connected seats anew."""
        followed = self._matches.get(match_id)
        if followed is not None:
            followed.present(seats)

    def committing(self, match_id: str) -> asyncio.Future[None] | None:
        """Announce a commit of ``match_id`` about to be sent: None when no stream of this
        replica follows the match, else what to hand to ``committed`` once it is answered."""
        if match_id not in self._matches:
            return None
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._committing.setdefault(match_id, []).append(done)
        return done

    def committed(
        self, match_id: str, done: asyncio.Future[None], entry: EventEntry | None
    ) -> None:
        """The commit announced as ``done`` is answered: ``entry`` the version it committed,
        None when it did not commit (a lost race, a failure). Wakes the match's streams with
        the entry when they follow a known version (else they read the store as before)."""
        waiting = self._committing[match_id]
        waiting.remove(done)
        if not waiting:
            del self._committing[match_id]
        done.set_result(None)
        followed = self._matches.get(match_id)
        if entry is not None and followed is not None and followed.latest and not followed.gone:
            followed.remember((entry,))
            followed.wake()

    async def close(self) -> None:
        await self.presence.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        if self._feed is not None:
            await self._feed.close()
        for followed in self._matches.values():
            followed.gone = True
            followed.wake()

    def _join(self, match_id: str) -> _Followed:
        followed = self._matches.get(match_id)
        if followed is None:
            followed = self._matches[match_id] = _Followed(match_id)
            self._metrics.watch_matches.inc()
            task = asyncio.create_task(self._follow(followed))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        followed.streams += 1
        return followed

    def _leave(self, followed: _Followed) -> None:
        followed.streams -= 1
        if followed.streams == 0:
            self._forget(followed)

    def _feed_now(self) -> ChangeFeed:
        if self._feed is None:
            self._feed = self.store.feed(self._reconnects.inc)
            self._reader = asyncio.create_task(self._read(self._feed), name="basra-watch-reader")
        return self._feed

    async def _follow(self, followed: _Followed) -> None:
        try:
            await self._feed_now().follow(followed.match_id)
        except StoreUnavailableError as exc:
            # Its streams fail; the next stream of the match tries again.
            followed.ready.set_exception(exc)
            followed.ready.exception()  # retrieved, even when every stream has left
            self._forget(followed)
        else:
            followed.ready.set_result(None)

    def _forget(self, followed: _Followed) -> None:
        if self._matches.get(followed.match_id) is followed:
            del self._matches[followed.match_id]
            self._metrics.watch_matches.dec()
            if self._feed is not None:
                self._feed.unfollow(followed.match_id)

    async def _subscribed(self, followed: _Followed) -> None:
        await asyncio.shield(followed.ready)

    async def _read(self, feed: ChangeFeed) -> None:
        """The shared reader: read each changed match once, then wake its streams."""
        unread: dict[str, int] = {}
        reported: dict[str, int] = {}
        """Per match in ``unread``, the highest version the feed reported (0: unknown)."""
        recheck: set[str] = set()
        failures = 0
        while True:
            if not unread and not recheck:
                for change in await feed.changes():
                    self._note(change, unread, reported, recheck)
                continue
            if recheck:
                checks, recheck = recheck, set()
                try:
                    accesses = await self.store.watch_access(checks)
                except Exception as exc:
                    recheck = checks
                    failures = await _pause(
                        exc, failures, "watch reader failed to read watch access"
                    )
                    continue
                for match_id, access in accesses.items():
                    followed = self._matches.get(match_id)
                    if followed is not None:
                        followed.access = access
                        followed.access_reads += 1
                        if match_id not in unread:
                            # Else woken once its events are read: a match gone ends its
                            # streams MATCH_NOT_FOUND, not WATCH_TOKEN_REVOKED.
                            followed.wake()
                if not unread:
                    continue
            reads, unread, versions, reported = unread, {}, reported, {}
            local = [d for m in reads for d in self._committing.get(m, ())]
            if local:
                # Commits of this replica that the feed reported first: they hand over their
                # entries when answered (bounded by the store's deadline).
                await asyncio.wait(local)
                reads = {m: v for m, v in reads.items() if not self._known(m, versions.get(m, 0))}
                if not reads:
                    continue
            try:
                pages = await self.store.events_many(reads)
            except Exception as exc:
                # Read again after a pause (the feed reports any change made meanwhile): the
                # reader must outlive any failure, or every stream of the replica would wait.
                unread = reads
                failures = await _pause(exc, failures, "watch reader failed to read events")
                continue
            failures = 0
            for match_id, page in pages.items():
                followed = self._matches.get(match_id)
                if followed is None:
                    continue
                if page.oldest_version is None:
                    followed.gone = True
                else:
                    followed.remember(page.entries)
                followed.wake()

    def _known(self, match_id: str, version: int) -> bool:
        """Whether the streams of ``match_id`` already know ``version`` (0: never)."""
        followed = self._matches.get(match_id)
        return followed is None or (version != 0 and version <= followed.latest)

    def _note(
        self,
        change: Change,
        unread: dict[str, int],
        reported: dict[str, int],
        recheck: set[str],
    ) -> None:
        followed = self._matches.get(change.match_id)
        if followed is None:
            return
        if change.version == 0 and followed.spectators:
            recheck.add(change.match_id)  # a revocation, or a reconnection that may hide one
        if change.version and change.version <= followed.latest:
            return  # already known (a duplicate, or a stream read it first)
        if followed.latest == 0:
            # No stream has finished reading the match yet, so there is no version to read
            # after: each stream reads the store itself, once more.
            followed.latest = change.version
            followed.epoch += 1
            followed.wake()
            return
        unread[change.match_id] = followed.latest
        # The highest version reported since (0, a report of no version: always read).
        before = reported.get(change.match_id)
        unknown = before == 0 or not change.version
        reported[change.match_id] = 0 if unknown else max(before or 0, change.version)


async def _pause(exc: Exception, failures: int, message: str) -> int:
    """After the reader's ``failures``-th failure in a row: log it unless the store is merely
    unavailable, wait (longer as failures repeat), and answer the new count."""
    if not isinstance(exc, StoreUnavailableError):
        log.error(message, exc_info=exc)
    await asyncio.sleep(_RETRY_S[min(failures, len(_RETRY_S) - 1)])
    return failures + 1
