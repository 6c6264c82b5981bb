"""How a change to a match is committed, exactly once whatever the retries and races.

A move (Play, the next hand's Deal, a bot's move) takes one path, ``Changes.change``: the seat
of the caller's token (``callers.py``), a retried request_id answered from the seat's request
record (its response rebuilt from the history), the expected_version check, the engine's work
(the move's ``Act``), then a commit with compare-and-set on the version, deciding again on the
current record (which the lost commit answers) when another replica won the race. A replica
starts from the record it last wrote or read of the match (``caches.RecordCache``) when it has
it: one store round trip per change on a warm replica.

A change of a seat's holder (ClaimSeat, ReissueInvitation) takes the same compare-and-set loop,
``Changes.seat_change``. Every commit goes through ``Changes.commit``, which hands its entry to
this replica's WatchMatch streams of the match (watch.py).
"""

from __future__ import annotations

import contextlib
import hmac
from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple, TypeVar

from google.protobuf.message import Message

from basra.engine import BasraError, CardsDealt, Event, HandStarted, State, encode
from basra.service import auth, convert, records, watch
from basra.service.caches import Matches, not_found
from basra.service.callers import Caller, Callers
from basra.service.errors import Reason, ServiceError, internal, invalid_argument
from basra.service.metrics import Metrics
from basra.service.store import Commit, EventEntry, MatchRecord
from basra.service.tracing import Tracing
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import game_pb2

R = TypeVar("R", bound=Message)
T = TypeVar("T")
CAS_ATTEMPTS: Final = 8
"""How many times a change decides again on the current record before it gives up."""
_UNTRACED: Final = contextlib.nullcontext()

_RPC_OF_REQUEST: Final = {
    method.input_type.full_name: method.name
    for method in pb.DESCRIPTOR.services_by_name["BasraService"].methods
}

Act = Callable[[State, int, int, bytes, records.Seating], tuple[R, State, EventEntry]]
"""A change: (state, seat, new version, the seats' bot levels, the seating) -> (response, state
after, entry)."""
Engine = Callable[[str], contextlib.AbstractContextManager[Any]]
"""Spans the engine's work by name in a traced call (``engine_spans``)."""
Change = tuple[MatchRecord, EventEntry]
"""A change of a seat's holder: the record changed (at the version it was decided on) and
the event entry of its new version."""


def engine_spans(tracing: Tracing | None) -> Engine:
    """A span around the engine's work by name in a traced call; else nothing."""
    if tracing is None:
        return lambda _: _UNTRACED
    return tracing.engine


Idempotent = pb.PlayRequest | pb.DealRequest | pb.ClaimSeatRequest | pb.CreateMatchRequest
"""The requests a request_id makes idempotent."""


def fingerprint(request: Idempotent) -> bytes:
    """What a retry of ``request`` must repeat to be answered as it: its RPC and its bytes
    without the request_id (the request is left as it was)."""
    request_id = request.request_id
    request.ClearField("request_id")
    try:
        body = request.SerializeToString(deterministic=True)
    finally:
        request.request_id = request_id
    return auth.fingerprint(_RPC_OF_REQUEST[request.DESCRIPTOR.full_name], body)


class Outcome(NamedTuple):
    """What one version did, converted to messages once: as each seat receives it, and as the
    store keeps it."""

    version: int
    after: State
    public: tuple[game_pb2.MatchEvent, ...]
    """The events with no seat's cards."""
    deals: bool
    """A deal happened: each seat's events carry its new hand."""

    @classmethod
    def of(cls, version: int, after: State, events: Sequence[Event]) -> Outcome:
        public = [convert.event_to_pb(e, version, after) for e in events]
        public[-1].version_complete = True  # clients resume after complete versions
        return cls(
            version=version,
            after=after,
            public=tuple(public),
            deals=any(isinstance(e, _DEALS) for e in events),
        )

    def for_seat(self, seat: int) -> list[game_pb2.MatchEvent]:
        """The events as ``seat`` receives them: a deal carries its own new cards."""
        dealt = self.after.hands[seat] if self.deals else ()
        return [convert.for_seat(event, dealt) for event in self.public]

    def entry(self, command: bytes) -> EventEntry:
        """The stored event entry: public events, plus each seat's dealt cards."""
        private = tuple(records.encode_cards(h) for h in self.after.hands) if self.deals else ()
        return EventEntry(self.version, command, records.encode_events(self.public), private)


_DEALS: Final = (HandStarted, CardsDealt)
"""The events of a deal (a tuple: ``A | B`` would build a union type for every event)."""


class Changes:
    """Commits the changes to matches: moves (``change``) and seat changes (``seat_change``)."""

    def __init__(
        self, matches: Matches, callers: Callers, watchers: watch.Watchers, metrics: Metrics
    ) -> None:
        self._matches = matches
        self._states = matches.states
        self._records = matches.records
        self._callers = callers
        self._watchers = watchers
        self._metrics = metrics
        self._remembered = (metrics.record_cache.labels("miss"), metrics.record_cache.labels("hit"))

    async def change(
        self,
        request: pb.PlayRequest | pb.DealRequest,
        caller: Caller | None,
        response_type: type[R],
        act: Act[R],
        *,
        bot_seat: int | None = None,
    ) -> R:
        """Apply one change to a match exactly once (see the module docstring): the seat of the
        caller's token, or ``bot_seat`` (no caller) for the move of a bot of the service.

        Raises:
            ServiceError: as the move's checks and the engine refuse it; TOKEN_INVALID for a
                token that is none of the match's, WATCH_TOKEN_READ_ONLY for one of its watch
                tokens.
        """
        match_id = auth.check_match_id(request.match_id)
        request_id = auth.check_request_id(request.request_id)
        expected = request.expected_version if request.HasField("expected_version") else None
        if expected is not None and expected < 1:
            raise invalid_argument("expected_version", "versions start at 1")
        token = "" if caller is None else auth.bearer_token(caller.metadata)
        asked = auth.request_hash(request_id) if request_id else b""
        fingerprinted = fingerprint(request) if request_id else b""
        # The record this replica last wrote or read of the match, when it still has it: the
        # commit below checks its version, so a stale one costs a retry, never a wrong move.
        remembered = self._records.get(match_id)
        self._remembered[remembered is not None].inc()
        record = remembered or await self._matches.load(match_id)
        for _ in range(CAS_ATTEMPTS):
            try:
                # Seat tokens only: a watch token is told apart below, once the store's record
                # refused it, so that a seat's change reads nothing more.
                if bot_seat is None:
                    seat = auth.seat_of(token, record.token_hashes)
                elif bot_seat < len(record.bots) and record.bots[bot_seat]:
                    seat = bot_seat
                else:
                    raise internal()  # a bot move for a person's seat: never asked for
                if request_id:
                    previous = records.SeatRequest.decode(record.requests[seat])
                    if previous is not None and hmac.compare_digest(previous.request_hash, asked):
                        if bot_seat is not None:  # another replica made this bot move
                            raise _version_mismatch(previous.version - 1, record.version)
                        if not hmac.compare_digest(previous.fingerprint, fingerprinted):
                            raise request_id_reused()
                        self._metrics.idempotent_replays.inc()
                        if previous.response is not None:  # a record from before versions
                            return response_type.FromString(previous.response)
                        # The same request on the state it ran on gives the original response.
                        before, then = await self._history_at(
                            match_id, previous.version - 1, record
                        )
                        return act(before, seat, previous.version, record.bots, then)[0]
                if expected is not None and expected != record.version:
                    raise _version_mismatch(expected, record.version)
                version = record.version + 1
                state = self._states.decode(record.state)
                seating = records.seating(record.table, record.bots, state.seats)
                response, after, entry = act(state, seat, version, record.bots, seating)
            except (ServiceError, BasraError) as error:
                if record is not remembered:
                    if isinstance(error, ServiceError) and error.reason == _TOKEN_INVALID:
                        raise await self._callers.refused(record, token, error) from None
                    raise
                # Decided on a remembered record, which may be stale: decide on the store's.
                remembered = None
                record = await self._matches.load(match_id)
                continue
            after_bytes = encode(after)
            stored = records.SeatRequest(asked, fingerprinted, version)
            requests = list(record.requests)
            requests[seat] = stored.encode() if request_id else b""
            # Every field named (``_replace`` costs a Play a few microseconds more); a
            # field added to MatchRecord must be carried over here too.
            committed = MatchRecord(
                match_id=record.match_id,
                version=version,
                state=after_bytes,
                token_hashes=record.token_hashes,
                creation=record.creation,
                requests=tuple(requests),
                watch_hashes=record.watch_hashes,
                bots=record.bots,
                table=record.table,
            )
            commit = Commit(
                expected_version=record.version,
                record=committed,
                entry=entry,
                finished=after.winner is not None,
            )
            applied, current = await self.commit(match_id, commit)
            if applied:
                if commit.finished:
                    self._metrics.matches_finished.inc()
                self._states.put(after_bytes, after)
                self._records.put(commit.record)
                if record.bots:
                    self._matches.bots(match_id, after, record.bots)
                return response
            self._metrics.version_conflicts.inc()
            if current is None:  # expired meanwhile
                self._records.forget(match_id)
                raise not_found(match_id)
            # Another change won the race; the script answered the match as it is now, fresh
            # from the store (a rejection decided on it stands).
            self._records.put(current)
            self._matches.notice(current)
            record, remembered = current, None
        seen = {"current_version": record.version}
        if expected is not None:
            seen["expected_version"] = expected
        raise ServiceError(
            Reason.VERSION_MISMATCH,
            "the match kept changing under this call: reload and decide again",
            seen,
        )

    async def seat_change(
        self,
        match_id: str,
        decide: Callable[[MatchRecord], tuple[Change | None, T]],
        record: MatchRecord | None = None,
    ) -> tuple[MatchRecord, T]:
        """Commit a change of a seat's holder exactly once: ``decide`` answers, from a record,
        the changed record (at that record's version: the new version is set here) with its
        event entry, or None when nothing is to change, and what the call answers. It runs
        again on the current record when another change won the race. Answers the record
        the answer stands on."""
        if record is None:
            record = await self._matches.load(match_id)
        for _ in range(CAS_ATTEMPTS):
            change, result = decide(record)
            if change is None:
                return record, result
            changed, entry = change
            changed = changed._replace(version=record.version + 1)
            finished = self._states.decode(record.state).winner is not None
            commit = Commit(record.version, changed, entry, finished=finished)
            applied, current = await self.commit(match_id, commit)
            if applied:
                self._records.put(changed)
                self._matches.notice(changed)
                return changed, result
            self._metrics.version_conflicts.inc()
            if current is None:
                self._records.forget(match_id)
                raise not_found(match_id)
            self._records.put(current)
            self._matches.notice(current)
            record = current
        raise ServiceError(
            Reason.VERSION_MISMATCH,
            "the match kept changing under this call: call it again",
            {"current_version": record.version},
        )

    async def commit(self, match_id: str, commit: Commit) -> tuple[bool, MatchRecord | None]:
        """``commit`` if the match is still at its expected version (the store's
        ``commit_or_current``). This replica's streams of the match get the commit's entry from
        here (watch.py), or are told that nothing came of it."""
        local = self._watchers.committing(match_id)
        applied = False
        try:
            applied, current = await self._matches.store.commit_or_current(match_id, commit)
        finally:
            if local is not None:
                self._watchers.committed(match_id, local, commit.entry if applied else None)
        return applied, current

    async def _history_at(
        self, match_id: str, version: int, record: MatchRecord
    ) -> tuple[State, records.Seating]:
        """The match's state at ``version``, replayed from its event entries, and its seating
        then (``record``'s, the seat changes committed since undone).

        Raises:
            ServiceError: OUT_OF_RANGE / HISTORY_TRIMMED when the entries from version 1 are no
                longer kept (the store keeps the latest ``events_maxlen``).
        """
        page = await self._matches.store.events(match_id, 0)
        if page.oldest_version is None:
            raise not_found(match_id)
        entries = page.entries
        state = records.replay([(e.version, e.command) for e in entries], version)
        if state is None:
            raise ServiceError(
                Reason.HISTORY_TRIMMED,
                "this request is older than the match history kept, so its response cannot be "
                "given again: call GetMatch to see whether it was applied",
                {"after_version": version, "oldest_version": page.oldest_version},
            )
        since = [e.command for e in entries if version < e.version <= record.version]
        now = records.seating(record.table, record.bots, state.seats)
        return state, records.seating_before(now, since)


_TOKEN_INVALID: Final = Reason.TOKEN_INVALID.name


def request_id_reused() -> ServiceError:
    return invalid_argument(
        "request_id", "was already used for a different request", reason=Reason.REQUEST_ID_REUSED
    )


def _version_mismatch(expected: int, current: int) -> ServiceError:
    return ServiceError(
        Reason.VERSION_MISMATCH,
        f"expected version {expected} but the match is at {current}: reload and decide again",
        {"expected_version": expected, "current_version": current},
    )
