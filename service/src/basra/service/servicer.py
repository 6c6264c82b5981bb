"""The BasraService RPCs: decode the request, load the match, call the engine, store, reply.

This is the transport-neutral core: each RPC takes the request and the ``Caller`` (its metadata,
peer and end) and returns messages or raises; ``Servicer.handle`` and ``Servicer.handle_stream``
turn every failure into a ``ServiceError`` and observe the call. The transports (gRPC in
``grpc_transport``, Connect and gRPC-Web over HTTP in ``http``) only turn their metadata into a
``Caller`` and a ``ServiceError`` into their wire form.

Every change to a match (Play, the next hand's Deal) takes one path, ``_change``: authenticate
the seat, answer a retried request_id from its record, check expected_version, apply the engine,
then commit with compare-and-set on the version, deciding again on the current record (which the
lost commit answers) when another replica won the race. So a play is applied exactly once,
whatever the retries and races. A replica starts from the record it last wrote or read of the
match (``RecordCache``) when it has it: one store round trip per change on a warm replica.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import math
import secrets
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, NamedTuple, TypeVar

from google.protobuf.message import Message
from opentelemetry import trace
from opentelemetry.trace import SpanContext

from basra.engine import (
    CARDS,
    ERAM,
    BasraError,
    Card,
    CardNotInHandError,
    CardPlayed,
    CardsDealt,
    Event,
    HandScored,
    HandStarted,
    MatchEnded,
    Play,
    Profile,
    State,
    apply,
    deal_next_hand,
    decode,
    encode,
    format_cards,
    legal_plans,
    new_match,
    rule_system,
)
from basra.engine.game import MAX_SEED
from basra.service import auth, bots, convert, names, presence, records, watch
from basra.service.config import Settings
from basra.service.errors import (
    Reason,
    ServiceError,
    from_engine,
    internal,
    invalid_argument,
    store_full,
    store_unavailable,
)
from basra.service.metrics import Metrics
from basra.service.ratelimit import CallerBuckets, TokenBucket, peer_host
from basra.service.store import (
    Commit,
    EventEntry,
    MatchRecord,
    NewMatch,
    Store,
    StoreFullError,
    StoreUnavailableError,
    WatchAccess,
)
from basra.service.store.base import SALT_BYTES
from basra.service.tracing import Tracing, protocol
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import game_pb2

log = logging.getLogger("basra.rpc")
R = TypeVar("R", bound=Message)
T = TypeVar("T")
CAS_ATTEMPTS: Final = 8
_UNTRACED: Final = contextlib.nullcontext()
CreateRequest = pb.DealRequest | pb.CreateMatchRequest
CreateResponse = TypeVar("CreateResponse", pb.DealResponse, pb.CreateMatchResponse)

_SEAT_CHANGES: Final = frozenset({"Play", "Deal"})
"""The RPCs that change a match with a seat token (``Servicer._change``)."""
SERVICE: Final = pb.DESCRIPTOR.services_by_name["BasraService"]
"""The contract's service: the one place RPC names, request and response types come from."""
RPC_OF_REQUEST: Final[Mapping[str, str]] = {
    method.input_type.full_name: method.name for method in SERVICE.methods
}


class Caller(NamedTuple):
    """Who makes a call, as every transport sees it.

    ``metadata`` holds the call's metadata (gRPC) or headers (HTTP) as (lower-case key, value)
    pairs; ``peer`` the client's address, for logs; ``ended`` completes when the call is over
    (the client left, cancelled or the call finished): streaming calls stop waiting on it.
    """

    metadata: auth.Metadata
    peer: str
    ended: asyncio.Future[None]


async def _no_responses() -> AsyncIterator[Any]:
    return
    yield  # noqa: V201 (an async generator that yields nothing: vulture reads it as unreachable)


class MalformedRequest:
    """What a request that does not parse as its message becomes: the transports pass it to
    ``Servicer.handle``, which rejects it like any other bad input."""

    def __init__(self, message: str) -> None:
        self.message = message
        self.match_id = ""


def _check_parsed(request: object) -> None:
    if isinstance(request, MalformedRequest):
        raise invalid_argument("request", f"is not a valid {request.message} message")


def _reject(error: BaseException) -> ServiceError:
    """The status a failure of a call becomes."""
    if isinstance(error, ServiceError):
        return error
    if isinstance(error, StoreUnavailableError):
        log.warning("store unavailable", extra={"cause": str(error)})
        return store_unavailable()
    if isinstance(error, StoreFullError):
        # No traceback: an expected operating condition, counted and alerted on (metrics.py).
        log.warning("store full", extra={"cause": str(error)})
        return store_full()
    if isinstance(error, BasraError):
        return from_engine(error)
    log.error("unexpected failure", exc_info=error)
    return internal()


class Servicer:
    """BasraService over a Store. Holds no match state between calls."""

    def __init__(
        self, settings: Settings, store: Store, metrics: Metrics, tracing: Tracing | None = None
    ) -> None:
        self._settings = settings
        self._tracing = tracing
        """Traces, when the OpenTelemetry environment turns them on (None: no span at all)."""
        self._store = store
        self._metrics = metrics
        self._creations = TokenBucket(settings.create_rate, settings.create_burst)
        self._caller_creations = CallerBuckets(
            settings.caller_create_rate, settings.caller_create_burst, settings.rate_limit_callers
        )
        self._states = StateCache()
        self._records = RecordCache()
        self._remembered = (metrics.record_cache.labels("miss"), metrics.record_cache.labels("hit"))
        # Both transports serve every RPC of the descriptor: one without a method here would
        # fail only when called.
        missing = [m.name for m in SERVICE.methods if not callable(getattr(self, m.name, None))]
        if missing:
            raise TypeError(f"RPCs of the contract without an implementation: {missing}")
        self._watchers = watch.Watchers(
            store,
            metrics,
            presence_interval_s=settings.presence_interval_s,
            presence_ttl_s=settings.presence_ttl_s,
        )
        self._bots = bots.BotPlayer(
            metrics,
            pace_s=settings.bot_pace_s,
            workers=settings.bot_workers,
            max_thinking=settings.bot_max_thinking,
            strong_seconds=settings.bot_strong_seconds,
            tracing=tracing,
        )
        self._bots.bind(self._bot_read, self._bot_move)

    async def close(self) -> None:
        """Stop making bot moves and end the open WatchMatch streams' shared reader (the server
        is stopping)."""
        await self._bots.close()
        await self._watchers.close()

    async def handle(self, method: str, request: Message | MalformedRequest, caller: Caller) -> Any:
        """Run the unary RPC ``method``: its response, or ServiceError (the only exception).

        Traced (``basra.service.tracing``), the call's server span is current throughout, the
        log line included."""
        start = time.perf_counter()
        handler: Callable[[Any, Caller], Awaitable[Message]] = getattr(self, method)
        traced = None
        if self._tracing is not None:
            traced = self._tracing.server(method, caller.metadata, getattr(request, "match_id", ""))
        try:
            _check_parsed(request)
            response = await handler(request, caller)
        except Exception as exc:
            error = _reject(exc)
            if error.reason == Reason.TOKEN_INVALID.name and method in _SEAT_CHANGES:
                error = await self._watch_token_refused(request, caller, error)
            self._observe(method, request, start, error, caller)
            if traced is not None:
                traced.failed(error)
                traced.end(ok=False)
            raise error from exc
        except BaseException:
            if traced is not None:
                traced.cancelled()
                traced.end(ok=False)
            raise
        self._observe(method, request, start, None, caller)
        if traced is not None:
            traced.end(ok=True)
        return response

    async def handle_stream(
        self, method: str, request: Message | MalformedRequest, caller: Caller
    ) -> AsyncGenerator[Any, None]:
        """Run the server-streaming RPC ``method`` (a coroutine that checks the call and returns
        its responses' iterator): its responses, then ServiceError if it fails (the only
        exception)."""
        start = time.perf_counter()
        match_id = getattr(request, "match_id", "")
        port = protocol(caller.metadata)[0]
        # Traced, the stream's setup has a span of its own, ended once the stream is open; each
        # version it then sends whole is an event of a span of its own (``Tracing.delivered``).
        traced = setup = None
        if self._tracing is not None:
            traced = self._tracing.server(method, caller.metadata, match_id)
        deliveries = self._metrics.watch_deliveries
        try:
            _check_parsed(request)
            handler: Callable[[Any, Caller], Awaitable[AsyncIterator[Message]]] = getattr(
                self, method
            )
            opened = await handler(request, caller)
            if traced is not None:
                if traced.span.is_recording():
                    setup = traced.span.get_span_context()
                traced.end(ok=True)
                traced = None
            # An open stream waits here for as long as its client stays: it keeps neither the
            # request nor the caller (memory per idle stream, see watch.py).
            del request, caller
            async with contextlib.aclosing(opened) as responses:  # type: ignore[type-var]
                async for response in responses:
                    deliveries.inc()
                    if setup is not None:
                        self._delivered(setup, response)
                    yield response
                    del response  # not kept while the stream waits for the next one
        except Exception as exc:
            error = _reject(exc)
            with _within(setup):
                self._metrics.observe_call(
                    method, match_id, time.perf_counter() - start, error, port
                )
            if traced is not None:
                traced.failed(error)
                traced.end(ok=False)
            raise error from exc
        except BaseException:
            if traced is not None:
                traced.cancelled()
                traced.end(ok=False)
            raise
        else:
            with _within(setup):
                self._metrics.observe_call(
                    method, match_id, time.perf_counter() - start, None, port
                )

    def _delivered(self, setup: SpanContext, response: Any) -> None:
        """Trace a WatchMatch response that completes a version."""
        event = response.event
        if event.version_complete and self._tracing is not None:
            self._tracing.delivered(setup, event.version)

    async def _watch_token_refused(
        self, request: Any, caller: Caller, error: ServiceError
    ) -> ServiceError:
        """WATCH_TOKEN_READ_ONLY rather than ``error`` (TOKEN_INVALID) when the token of a
        refused Play or Deal is one of the match's watch tokens (of its current watch salt, or
        the salt-less ones of a match from before RevokeWatchTokens never revoked since): the
        change path compares only seat tokens."""
        try:
            token = auth.bearer_token(caller.metadata)
            record = await self._store.load(auth.check_match_id(request.match_id))
            if record is not None:
                await self._spectator_salt(record, token)
                return auth.read_only()
        except (ServiceError, StoreUnavailableError, StoreFullError):
            pass
        return error

    def _observe(
        self, method: str, request: Any, start: float, error: ServiceError | None, caller: Caller
    ) -> None:
        match_id = getattr(request, "match_id", "")
        port = protocol(caller.metadata)[0]
        self._metrics.observe_call(method, match_id, time.perf_counter() - start, error, port)

    # -- Deal ---------------------------------------------------------------------------------

    async def Deal(self, request: pb.DealRequest, caller: Caller) -> pb.DealResponse:
        if request.match_id:
            return await self._next_hand(request, caller)
        # Deprecated creation: an ERAM match for two seats, exactly as before CreateMatch.
        request_id = auth.check_request_id(request.request_id, creating=True)
        if request.seat not in range(ERAM.seats):
            raise invalid_argument("seat", f"must be 0..{ERAM.seats - 1}")
        if request.HasField("expected_version"):
            raise invalid_argument("expected_version", "applies only to dealing a next hand")
        return await self._create(request, caller, request_id, ERAM, pb.DealResponse)

    # -- CreateMatch, ListRules ---------------------------------------------------------------

    async def CreateMatch(
        self, request: pb.CreateMatchRequest, caller: Caller
    ) -> pb.CreateMatchResponse:
        request_id = auth.check_request_id(request.request_id, creating=True)
        # Unknown rules, seats or options raise engine errors that name their field.
        system = rule_system(request.rules or ERAM.name)
        seats = request.seats or system.seat_counts[0]
        profile = system.profile(
            seats,
            rubber=request.options.rubber,
            bottom_card_shown=request.options.bottom_card_shown,
        )
        if request.seat not in range(seats):
            raise invalid_argument("seat", f"must be 0..{seats - 1}")
        levels = _bot_levels(request.bots, seats)
        if levels and levels[request.seat] and not all(levels):
            raise invalid_argument(
                "seat", f"seat {request.seat} is a bot seat: name a person's seat"
            )
        name = ""
        if request.display_name:
            name = names.display_name(request.display_name, "display_name")
        return await self._create(
            request,
            caller,
            request_id,
            profile,
            pb.CreateMatchResponse,
            levels,
            name=name,
            invitations=request.invitations,
        )

    async def ListRules(self, request: pb.ListRulesRequest, caller: Caller) -> pb.ListRulesResponse:
        return _RULES

    async def _create(
        self,
        request: CreateRequest,
        caller: Caller,
        request_id: str,
        profile: Profile,
        response_type: type[CreateResponse],
        levels: bytes = b"",
        *,
        name: str = "",
        invitations: bool = False,
    ) -> CreateResponse:
        auth.check_api_key(caller.metadata, self._settings.api_key)
        if request.HasField("seed") and not self._settings.allow_seeds:
            raise ServiceError(
                Reason.SEEDS_DISABLED,
                "this server draws its own seeds: omit seed",
            )
        fingerprint = auth.fingerprint(_rpc(request), _without_request_id(request))
        # Idempotency is the caller's: its scope goes into the derived match id and the seal key.
        request_id = auth.caller_scope(self._settings.api_key) + request_id if request_id else ""
        derived = auth.match_id_for(request_id) if request_id else None
        invited = _invited_seats(profile.seats, levels, request.seat, invitations=invitations)
        if derived is not None and await self._store.load(derived) is not None:
            # A retry of a creation already made: answer it, whatever the creation rate.
            return await self._repeat_creation(
                derived, request_id, fingerprint, response_type, invited, name
            )
        self._take_creation(caller)
        for _ in range(3):
            seed = request.seed if request.HasField("seed") else secrets.randbits(64)
            assert 0 <= seed <= MAX_SEED
            match_id = derived or auth.new_match_id()
            with self._engine("new_match"):
                state, events = new_match(seed, profile)
            tokens = [auth.new_token() for _ in range(profile.seats)]
            codes = [auth.new_token() for _ in invited]
            creation = b""
            if request_id:
                # What the response hands out, and nothing more: an invited seat's token is for
                # its claimant, never for a retry of the creation.
                handed = [raw for s, (_, raw) in enumerate(tokens) if s not in invited]
                sealed = auth.seal_tokens(request_id, handed + [raw for _, raw in codes])
                creation = records.Creation(fingerprint, request.seat, sealed).encode()
            texts = [text for text, _ in tokens]
            invitation_codes = [text for text, _ in codes]
            table = _creation_table(levels, request.seat, name, texts, invited, invitation_codes)
            new = NewMatch(
                record=MatchRecord(
                    match_id=match_id,
                    version=1,
                    state=encode(state),
                    # A bot seat's hash is no token's: nobody can act as it.
                    token_hashes=tuple(
                        _BOT_SEAT if levels and levels[s] else auth.token_hash(text)
                        for s, (text, _) in enumerate(tokens)
                    ),
                    # Watch tokens live in the match's watch access, made on first request.
                    creation=creation,
                    requests=(b"",) * profile.seats,
                    bots=levels,
                    table=table,
                ),
                entry=Outcome.of(1, state, events).entry(records.new_match_command(seed, profile)),
            )
            if await self._store.create(new):
                self._metrics.matches_created.inc()
                self._metrics.hands_dealt.inc()
                log.info("match created", extra={"match_id": match_id})
                self._bots.notice(match_id, state, levels)
                watch_token = await self._bots_watch_token(new.record, texts)
                return _creation_response(
                    response_type,
                    match_id,
                    state,
                    events,
                    texts,
                    request.seat,
                    levels,
                    watch_token,
                    _creation_seating(levels, request.seat, name, invited, profile.seats),
                    dict(zip(invited, invitation_codes, strict=True)),
                )
            if request_id:
                return await self._repeat_creation(
                    match_id, request_id, fingerprint, response_type, invited, name
                )
        raise internal()  # three random 128-bit ids taken: not a thing that happens

    def _take_creation(self, caller: Caller) -> None:
        """Spend one creation of the caller's bucket and one of the replica's.

        Raises:
            ServiceError: RESOURCE_EXHAUSTED / RATE_LIMITED, metadata ``scope`` ``caller`` (this
                caller made too many) or ``replica`` (all callers together did).
        """
        key = self._settings.api_key
        who = auth.caller_scope(key) if key is not None else "peer:" + peer_host(caller.peer)
        mine = self._caller_creations.bucket(who)
        if (wait := mine.take()) > 0:
            raise _rate_limited(wait, "caller")
        if (wait := self._creations.take()) > 0:
            mine.give_back()
            raise _rate_limited(wait, "replica")

    async def _repeat_creation(
        self,
        match_id: str,
        request_id: str,
        fingerprint: bytes,
        response_type: type[CreateResponse],
        invited: Sequence[int],
        name: str,
    ) -> CreateResponse:
        """A retried creation: the original response, tokens and invitations included."""
        record = await self._load(match_id)
        creation = records.Creation.decode(record.creation)
        if creation is None or not hmac.compare_digest(creation.fingerprint, fingerprint):
            raise _request_id_reused()
        stored = self._states.decode(record.state)
        try:
            # The tokens of the seats not invited, then the invitations: as many as seats.
            raw = auth.open_tokens(request_id, creation.sealed_tokens, stored.seats)
        except ValueError:
            raise _request_id_reused() from None
        self._metrics.idempotent_replays.inc()
        # Version 1 is new_match(seed, profile) by construction: rebuild the original response.
        state, events = new_match(stored.seed, stored.profile)
        held = [s for s in range(stored.seats) if s not in invited]
        tokens = [""] * stored.seats  # an invited seat's token is not kept for this
        for seat, secret in zip(held, raw, strict=False):
            tokens[seat] = auth.token_text(secret)
        codes = [auth.token_text(secret) for secret in raw[len(held) :]]
        watch_token = await self._bots_watch_token(record, tokens)
        return _creation_response(
            response_type,
            match_id,
            state,
            events,
            tokens,
            creation.seat,
            record.bots,
            watch_token,
            _creation_seating(record.bots, creation.seat, name, invited, stored.seats),
            dict(zip(invited, codes, strict=True)),
        )

    async def _bots_watch_token(self, record: MatchRecord, tokens: Sequence[str]) -> str:
        """The watch token a match of bots only hands its creator ("" for any other match):
        seat 0's, derived from that seat's unused token as CreateWatchToken derives a seat's."""
        if not record.bots or not all(record.bots):
            return ""
        for _ in range(CAS_ATTEMPTS):
            access = await self._watch_access(record.match_id)
            if access is not None and access.hashes[0]:
                return auth.watch_token(tokens[0], access.salt)
            salt = secrets.token_bytes(SALT_BYTES)
            watch_token = auth.watch_token(tokens[0], salt)
            hashes = (auth.token_hash(watch_token),) + (b"",) * (len(tokens) - 1)
            if await self._swap_watch_access(record, access, WatchAccess(salt, hashes)):
                return watch_token
        raise _access_kept_changing(record)

    async def _next_hand(self, request: pb.DealRequest, caller: Caller) -> pb.DealResponse:
        if request.HasField("seed"):
            raise invalid_argument("seed", "applies only to creating a match")
        if request.seat:
            raise invalid_argument("seat", "applies only to creating a match")

        response = await self._change(
            request, caller, pb.DealResponse, _deal_act(request, self._engine)
        )
        self._metrics.hands_dealt.inc()
        return response

    # -- Play ---------------------------------------------------------------------------------

    async def Play(self, request: pb.PlayRequest, caller: Caller) -> pb.PlayResponse:
        if not request.HasField("card"):
            raise invalid_argument("card", "is required", reason=Reason.INVALID_CARD)
        card = convert.card_from_pb(request.card)
        if request.plan_id < 0:
            raise invalid_argument("plan_id", "must be 0 (none named) or a plan id from 1")
        if request.plan_id and request.trail:
            raise invalid_argument("trail", "cannot be combined with plan_id")
        response = await self._change(
            request, caller, pb.PlayResponse, _play_act(request, card, self._engine)
        )
        self._played(request.match_id, response)
        return response

    def _played(self, match_id: str, response: pb.PlayResponse) -> None:
        self._metrics.plays.inc()
        if response.played.basra:
            self._metrics.basras.inc()
        if response.HasField("result"):
            log.info("match ended", extra={"match_id": match_id, "winner": response.result.winner})

    # -- Bot moves ----------------------------------------------------------------------------

    async def _bot_read(self, match_id: str) -> bots.Current | None:
        """The match as a bot move starts from: the record this replica last wrote or read."""
        record = self._records.get(match_id)
        if record is None:
            record = await self._store.load(match_id)
            if record is None:
                return None
            self._records.put(record)
        return bots.Current(
            record.version, self._states.decode(record.state), record.state, record.bots
        )

    async def _bot_move(
        self, match_id: str, version: int, move: bots.Move, play: tuple[int, int] | None
    ) -> bool:
        """Make the bot's move at ``version`` through the change path every Play and Deal
        takes; False when the match moved on first (another replica made it, or the record
        this replica started from was stale)."""
        request_id = bots.request_id(match_id, version)
        try:
            if play is None:
                deal = pb.DealRequest(
                    match_id=match_id, expected_version=version, request_id=request_id
                )
                await self._change(
                    deal, None, pb.DealResponse, _deal_act(deal, self._engine), bot_seat=move.seat
                )
                self._metrics.hands_dealt.inc()
            else:
                card, plan_id = CARDS[play[0]], play[1]
                request = pb.PlayRequest(
                    match_id=match_id,
                    card=convert.card_to_pb(card),
                    plan_id=plan_id,
                    trail=not plan_id,
                    expected_version=version,
                    request_id=request_id,
                )
                response = await self._change(
                    request,
                    None,
                    pb.PlayResponse,
                    _play_act(request, card, self._engine),
                    bot_seat=move.seat,
                )
                self._played(match_id, response)
        except (ServiceError, BasraError) as exc:
            if isinstance(exc, ServiceError) and exc.reason not in _BOT_MOVED_ON:
                raise
            return False
        return True

    async def _commit(self, match_id: str, commit: Commit) -> tuple[bool, MatchRecord | None]:
        """``commit`` if the match is still at its expected version (the store's
        ``commit_or_current``). This replica's streams of the match get the commit's entry from
        here (watch.py), or are told that nothing came of it."""
        local = self._watchers.committing(match_id)
        applied = False
        try:
            applied, current = await self._store.commit_or_current(match_id, commit)
        finally:
            if local is not None:
                self._watchers.committed(match_id, local, commit.entry if applied else None)
        return applied, current

    def _notice(self, record: MatchRecord) -> None:
        """Make sure a bot move the match waits for gets made (see bots.py)."""
        if record.bots:
            self._bots.notice(record.match_id, self._states.decode(record.state), record.bots)

    # -- Reads --------------------------------------------------------------------------------

    async def ListPlans(self, request: pb.ListPlansRequest, caller: Caller) -> pb.ListPlansResponse:
        card = convert.card_from_pb(request.card) if request.HasField("card") else None
        record, seat, state = await self._read(request.match_id, caller)
        hand = state.hands[seat]
        if card is not None and card not in hand:
            raise CardNotInHandError(card, format_cards(sorted(hand)))
        cards = hand if card is None else (card,)
        with self._engine("plans"):
            plans = [(c, legal_plans(state, c)) for c in cards]
        return pb.ListPlansResponse(
            cards=[convert.card_plans_to_pb(c, found, state.profile) for c, found in plans],
            version=record.version,
        )

    async def Score(self, request: pb.ScoreRequest, caller: Caller) -> pb.ScoreResponse:
        record, _, state = await self._read_viewer(request.match_id, caller)
        return pb.ScoreResponse(scoreboard=convert.scoreboard_to_pb(state), version=record.version)

    async def GetMatch(self, request: pb.GetMatchRequest, caller: Caller) -> pb.GetMatchResponse:
        # The match and its presence read together: one round trip's wait, two reads.
        (record, seat, state), connected = await asyncio.gather(
            self._read_viewer(request.match_id, caller), self._connected(request.match_id)
        )
        seating = records.seating(record.table, record.bots, state.seats)
        args = (record.match_id, record.version, record.bots, seating, connected)
        if seat is None:
            view = convert.spectator_view_to_pb(state, *args)
        else:
            view = convert.view_to_pb(state, seat, *args)
        return pb.GetMatchResponse(view=view)

    async def _connected(self, match_id: str) -> frozenset[int]:
        """The match's connected seats now (any replica's streams)."""
        auth.check_match_id(match_id)
        found = await self._store.connected((match_id,), presence.now())
        return found[match_id]

    async def CreateWatchToken(
        self, request: pb.CreateWatchTokenRequest, caller: Caller
    ) -> pb.CreateWatchTokenResponse:
        token, record, seat = await self._seat_of_match(request.match_id, caller)
        for _ in range(CAS_ATTEMPTS):
            access = await self._watch_access(record.match_id)
            if access is None and record.watch_hashes:
                # A match from before RevokeWatchTokens, never revoked: its record holds the
                # hashes of the tokens derived without a salt.
                return pb.CreateWatchTokenResponse(watch_token=auth.watch_token(token))
            salt = secrets.token_bytes(SALT_BYTES) if access is None else access.salt
            watch_token = auth.watch_token(token, salt)
            hashes = list(access.hashes) if access else [b""] * len(record.token_hashes)
            hashes[seat] = auth.token_hash(watch_token)
            # Written even when unchanged: the write keeps the access alive with the match.
            if await self._swap_watch_access(record, access, WatchAccess(salt, tuple(hashes))):
                return pb.CreateWatchTokenResponse(watch_token=watch_token)
            record = await self._load(record.match_id)  # raced with another seat: again
        raise _access_kept_changing(record)

    async def RevokeWatchTokens(
        self, request: pb.RevokeWatchTokensRequest, caller: Caller
    ) -> pb.RevokeWatchTokensResponse:
        token, record, seat = await self._seat_of_match(request.match_id, caller)
        for _ in range(CAS_ATTEMPTS):
            access = await self._watch_access(record.match_id)
            # A new salt: every watch token derived under another one is worthless from now on.
            salt = secrets.token_bytes(SALT_BYTES)
            watch_token = auth.watch_token(token, salt)
            hashes = [b""] * len(record.token_hashes)
            hashes[seat] = auth.token_hash(watch_token)
            new = WatchAccess(salt, tuple(hashes))
            if await self._swap_watch_access(record, access, new, revoke=True):
                log.info("watch tokens revoked", extra={"match_id": record.match_id, "seat": seat})
                return pb.RevokeWatchTokensResponse(watch_token=watch_token)
            record = await self._load(record.match_id)
        raise _access_kept_changing(record)

    # -- Seats: claims and invitations ----------------------------------------------------

    async def ClaimSeat(self, request: pb.ClaimSeatRequest, caller: Caller) -> pb.ClaimSeatResponse:
        match_id = auth.check_match_id(request.match_id)
        if not request.invitation:
            raise invalid_argument("invitation", "is required: the code of the invitation")
        request_id = auth.check_request_id(request.request_id)
        name = names.display_name(request.display_name, "display_name")
        asked = auth.request_hash(request_id) if request_id else b""
        fingerprint = (
            auth.fingerprint(_rpc(request), _without_request_id(request)) if request_id else b""
        )
        invitation = request.invitation

        def claim(record: MatchRecord) -> tuple[Change | None, tuple[int, str]]:
            table = records.Table.decode(record.table) if record.table else None
            hashes = [h.invitation for h in table.holders] if table else []
            seat = auth.seat_or_none(invitation, hashes)
            if table is None or seat is None:
                raise _invitation_invalid(match_id)
            holder = table.holders[seat]
            if holder.claim == records.CLAIMED:
                done = holder.claim_request
                if asked and done and hmac.compare_digest(done[:16], asked):
                    if not hmac.compare_digest(done[16:], fingerprint):
                        raise _request_id_reused()
                    self._metrics.idempotent_replays.inc()
                    return None, (seat, _unsealed(invitation, holder.sealed))
                raise ServiceError(
                    Reason.INVITATION_CLAIMED,
                    f"this invitation to seat {seat} was claimed already",
                    {"seat": seat},
                )
            if holder.claim != records.CLAIM_OPEN:
                raise _invitation_invalid(match_id)
            # The sealed token stays only for the retries of a claim that sent a request_id.
            claimed = records.SeatHolder(
                records.CLAIMED,
                name,
                holder.invitation,
                holder.sealed if asked else b"",
                asked + fingerprint,
            )
            changed = record._replace(table=table.with_holder(seat, claimed).encode())
            entry = _seat_entry(record.version + 1, seat, holder, claimed)
            return (changed, entry), (seat, _unsealed(invitation, holder.sealed))

        record, (seat, token) = await self._seat_change(match_id, claim)
        state = self._states.decode(record.state)
        view = convert.view_to_pb(
            state,
            seat,
            match_id,
            record.version,
            record.bots,
            records.seating(record.table, record.bots, state.seats),
            await self._connected(match_id),
        )
        log.info("seat claimed", extra={"match_id": match_id, "seat": seat})
        return pb.ClaimSeatResponse(seat_token=pb.SeatToken(seat=seat, token=token), view=view)

    async def ReissueInvitation(
        self, request: pb.ReissueInvitationRequest, caller: Caller
    ) -> pb.ReissueInvitationResponse:
        token, record, _ = await self._seat_of_match(request.match_id, caller)
        target = request.seat

        def reissue(record: MatchRecord) -> tuple[Change | None, tuple[int, str]]:
            caller_seat = auth.seat_of(token, record.token_hashes)
            table = records.Table.decode(record.table) if record.table else None
            if table is None or table.creator != caller_seat:
                raise ServiceError(
                    Reason.NOT_MATCH_CREATOR,
                    "only the seat that created the match reissues its invitations",
                    {"seat": caller_seat},
                )
            seats = len(record.token_hashes)
            if target not in range(seats):
                raise invalid_argument("seat", f"must be 0..{seats - 1}")
            if target == table.creator:
                raise invalid_argument("seat", "is the creator's own seat")
            if record.bots and record.bots[target]:
                raise invalid_argument("seat", f"seat {target} is a bot seat: it has no holder")
            code, _ = auth.new_token()
            new_token, new_raw = auth.new_token()
            holder = records.SeatHolder(
                records.CLAIM_OPEN,
                invitation=auth.token_hash(code),
                sealed=auth.seal_for_invitation(code, new_raw),
            )
            hashes = list(record.token_hashes)
            revoked, hashes[target] = hashes[target], auth.token_hash(new_token)
            requests = list(record.requests)
            requests[target] = b""  # the revoked holder's request record is not the new one's
            changed = record._replace(
                token_hashes=tuple(hashes),
                requests=tuple(requests),
                table=table.with_holder(target, holder).encode(),
            )
            entry = _seat_entry(record.version + 1, target, table.holders[target], holder, revoked)
            return (changed, entry), (caller_seat, code)

        record, (seat, code) = await self._seat_change(record.match_id, reissue, record)
        state = self._states.decode(record.state)
        view = convert.view_to_pb(
            state,
            seat,
            record.match_id,
            record.version,
            record.bots,
            records.seating(record.table, record.bots, state.seats),
        )
        log.info("invitation reissued", extra={"match_id": record.match_id, "seat": target})
        return pb.ReissueInvitationResponse(
            invitation=pb.Invitation(seat=target, code=code), view=view
        )

    async def _seat_change(
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
            record = await self._load(match_id)
        for _ in range(CAS_ATTEMPTS):
            change, result = decide(record)
            if change is None:
                return record, result
            changed, entry = change
            changed = changed._replace(version=record.version + 1)
            finished = self._states.decode(record.state).winner is not None
            commit = Commit(record.version, changed, entry, finished=finished)
            applied, current = await self._commit(match_id, commit)
            if applied:
                self._records.put(changed)
                self._notice(changed)
                return changed, result
            self._metrics.version_conflicts.inc()
            if current is None:
                self._records.forget(match_id)
                raise _not_found(match_id)
            self._records.put(current)
            self._notice(current)
            record = current
        raise ServiceError(
            Reason.VERSION_MISMATCH,
            "the match kept changing under this call: call it again",
            {"current_version": record.version},
        )

    async def _seat_of_match(self, match_id: str, caller: Caller) -> tuple[str, MatchRecord, int]:
        """The caller's seat token, the match and the seat, for a call that needs a seat.

        Raises:
            ServiceError: the match_id, TOKEN_MISSING, MATCH_NOT_FOUND, TOKEN_INVALID, or
                WATCH_TOKEN_READ_ONLY for one of the match's watch tokens.
        """
        auth.check_match_id(match_id)
        token = auth.bearer_token(caller.metadata)
        record = await self._load(match_id)
        seat = auth.seat_or_none(token, record.token_hashes)
        if seat is None:
            await self._spectator_salt(record, token)
            raise auth.read_only()
        return token, record, seat

    async def _watch_access(self, match_id: str) -> WatchAccess | None:
        return (await self._store.watch_access((match_id,)))[match_id]

    async def _swap_watch_access(
        self,
        record: MatchRecord,
        access: WatchAccess | None,
        new: WatchAccess,
        *,
        revoke: bool = False,
    ) -> bool:
        return await self._store.swap_watch_access(record.match_id, access, new, revoke=revoke)

    async def _spectator_salt(self, record: MatchRecord, token: str) -> bytes:
        """The watch salt ``token`` is a watch token of the match under (b"": a token of a
        match from before RevokeWatchTokens, whose record holds its hash).

        Raises:
            ServiceError: PERMISSION_DENIED / TOKEN_INVALID when it is none of them (revoked
                tokens included: nothing of them is kept).
        """
        access = await self._watch_access(record.match_id)
        if access is None:
            hashes, salt = record.watch_hashes, b""
        else:
            hashes, salt = access.hashes, access.salt
        if not auth.is_one_of(token, hashes):
            raise auth.token_invalid()
        return salt

    async def WatchMatch(
        self, request: pb.WatchMatchRequest, caller: Caller
    ) -> AsyncIterator[pb.WatchMatchResponse]:
        """Check the call and open the stream; the caller iterates what this returns.

        A coroutine returning the iterator rather than an async generator around it: an idle
        stream then holds one generator (``WatchStream.responses``), not three nested ones.
        """
        # A transport may not close a streaming handler whose client left (gRPC finalizes it
        # whenever it is collected): the count of open streams follows the end of the call.
        self._metrics.watch_streams.inc()
        caller.ended.add_done_callback(self._stream_ended)
        if request.after_version < 0:
            raise invalid_argument("after_version", "must be 0 or more")
        record, seat, salt, state = await self._viewer(request.match_id, caller)
        if request.after_version > record.version:
            # Not INVALID_ARGUMENT: the client saw those versions, then the store went back to an
            # older snapshot. OUT_OF_RANGE tells it to reload and resume (proto/README.md).
            raise ServiceError(
                Reason.VERSION_AHEAD,
                f"after_version is beyond the match's current version {record.version}: call "
                "GetMatch and resume from its version",
                {"after_version": request.after_version, "current_version": record.version},
            )
        if state.winner is not None and request.after_version >= record.version:
            return _no_responses()  # the match is over and everything was sent
        # A spectator's stream ends once its watch token stops working (WATCH_TOKEN_REVOKED); a
        # seat's once the version that revokes its token is sent (SEAT_TOKEN_REVOKED).
        access = salt if seat is None else None
        token = b"" if seat is None else record.token_hashes[seat]
        info = watch.StreamInfo(state.seats, record.bots, token, presence=request.presence)
        stream = self._watchers.open(record.match_id, seat, request.after_version, access, info)
        # A stream waiting on an idle match writes nothing, so its transport would never notice
        # the client leave: the end of the call releases the stream's place at once.
        caller.ended.add_done_callback(stream.leave)
        return stream.responses()

    def _engine(self, name: str) -> contextlib.AbstractContextManager[Any]:
        """A span around the engine's ``name`` in a traced call; else nothing."""
        if self._tracing is None:
            return _UNTRACED
        return self._tracing.engine(name)

    def _stream_ended(self, _: asyncio.Future[None]) -> None:
        self._metrics.watch_streams.dec()

    # -- Shared paths -------------------------------------------------------------------------

    async def _load(self, match_id: str) -> MatchRecord:
        record = await self._store.load(match_id)
        if record is None:
            self._records.forget(match_id)
            raise _not_found(match_id)
        self._records.put(record)
        self._notice(record)
        return record

    async def _history_at(
        self, match_id: str, version: int, record: MatchRecord
    ) -> tuple[State, records.Seating]:
        """The match's state at ``version``, replayed from its event entries, and its seating
        then (``record``'s, the seat changes committed since undone).

        Raises:
            ServiceError: OUT_OF_RANGE / HISTORY_TRIMMED when the entries from version 1 are no
                longer kept (the store keeps the latest ``events_maxlen``).
        """
        page = await self._store.events(match_id, 0)
        if page.oldest_version is None:
            raise _not_found(match_id)
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

    async def _read(self, match_id: str, caller: Caller) -> tuple[MatchRecord, int, State]:
        """The match, the caller's seat and the state, for a read-only call of a seat."""
        record, seat, state = await self._read_viewer(match_id, caller)
        if seat is None:
            raise auth.read_only()
        return record, seat, state

    async def _read_viewer(
        self, match_id: str, caller: Caller
    ) -> tuple[MatchRecord, int | None, State]:
        """The match, the caller's seat (None for a spectator's watch token) and the state."""
        record, seat, _, state = await self._viewer(match_id, caller)
        return record, seat, state

    async def _viewer(
        self, match_id: str, caller: Caller
    ) -> tuple[MatchRecord, int | None, bytes, State]:
        """The match, the caller's seat (None for a spectator's watch token), the watch salt
        of a spectator's token (b"" for a seat) and the state."""
        auth.check_match_id(match_id)
        token = auth.bearer_token(caller.metadata)
        record = await self._load(match_id)
        seat = auth.seat_or_none(token, record.token_hashes)
        # Only a token that is no seat's costs a read of the watch access.
        salt = b"" if seat is not None else await self._spectator_salt(record, token)
        return record, seat, salt, self._states.decode(record.state)

    async def _change(
        self,
        request: pb.PlayRequest | pb.DealRequest,
        caller: Caller | None,
        response_type: type[R],
        act: Act[R],
        *,
        bot_seat: int | None = None,
    ) -> R:
        """Apply one change to a match exactly once (see the module docstring): the seat of the
        caller's token, or ``bot_seat`` (no caller) for the move of a bot of the service."""
        match_id = auth.check_match_id(request.match_id)
        request_id = auth.check_request_id(request.request_id)
        expected = request.expected_version if request.HasField("expected_version") else None
        if expected is not None and expected < 1:
            raise invalid_argument("expected_version", "versions start at 1")
        token = "" if caller is None else auth.bearer_token(caller.metadata)
        asked = auth.request_hash(request_id) if request_id else b""
        fingerprint = (
            auth.fingerprint(_rpc(request), _without_request_id(request)) if request_id else b""
        )
        # The record this replica last wrote or read of the match, when it still has it: the
        # commit below checks its version, so a stale one costs a retry, never a wrong move.
        remembered = self._records.get(match_id)
        self._remembered[remembered is not None].inc()
        record = remembered or await self._load(match_id)
        for _ in range(CAS_ATTEMPTS):
            try:
                # Seat tokens only: a watch token is told apart (WATCH_TOKEN_READ_ONLY) by
                # handle's _watch_token_refused, against the match's current watch access.
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
                        if not hmac.compare_digest(previous.fingerprint, fingerprint):
                            raise _request_id_reused()
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
            except (ServiceError, BasraError):
                if record is not remembered:
                    raise
                # Decided on a remembered record, which may be stale: decide on the store's.
                remembered = None
                record = await self._load(match_id)
                continue
            after_bytes = encode(after)
            stored = records.SeatRequest(asked, fingerprint, version)
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
            applied, current = await self._commit(match_id, commit)
            if applied:
                if commit.finished:
                    self._metrics.matches_finished.inc()
                self._states.put(after_bytes, after)
                self._records.put(commit.record)
                if record.bots:
                    self._bots.notice(match_id, after, record.bots)
                return response
            self._metrics.version_conflicts.inc()
            if current is None:  # expired meanwhile
                self._records.forget(match_id)
                raise _not_found(match_id)
            # Another change won the race; the script answered the match as it is now, fresh
            # from the store (a rejection decided on it stands).
            self._records.put(current)
            self._notice(current)
            record, remembered = current, None
        seen = {"current_version": record.version}
        if expected is not None:
            seen["expected_version"] = expected
        raise ServiceError(
            Reason.VERSION_MISMATCH,
            "the match kept changing under this call: reload and decide again",
            seen,
        )


def _within(setup: SpanContext | None) -> contextlib.AbstractContextManager[Any]:
    """The stream's setup span current again (its log line names it), when it was traced."""
    if setup is None:
        return _UNTRACED
    return trace.use_span(trace.NonRecordingSpan(setup))


def _creation_response(
    response_type: type[CreateResponse],
    match_id: str,
    state: State,
    events: Sequence[Event],
    tokens: Sequence[str],
    seat: int,
    levels: bytes,
    watch_token: str,
    seating: records.Seating,
    invitations: Mapping[int, str],
) -> CreateResponse:
    """A creation's response: the tokens of the person seats not invited (a bot seat has
    none), the invitations; with bots only, the public view and events and the watch token."""
    outcome = Outcome.of(1, state, events)
    response = response_type(
        match_id=match_id,
        seat_tokens=[
            pb.SeatToken(seat=s, token=t)
            for s, t in enumerate(tokens)
            if not (levels and levels[s]) and s not in invitations
        ],
    )
    if invitations:
        assert isinstance(response, pb.CreateMatchResponse)
        response.invitations.extend(
            pb.Invitation(seat=s, code=code) for s, code in invitations.items()
        )
    if watch_token:
        assert isinstance(response, pb.CreateMatchResponse)
        response.watch_token = watch_token
        response.events.extend(outcome.public)
        response.view.CopyFrom(convert.spectator_view_to_pb(state, match_id, 1, levels, seating))
        return response
    response.events.extend(outcome.for_seat(seat))
    convert.fill_view(response.view, state, seat, match_id, 1, levels, seating)
    return response


def _invited_seats(seats: int, levels: bytes, creator: int, *, invitations: bool) -> list[int]:
    """The seats a creation gives invitations to: with invitations, every person seat but the
    creator's."""
    if not invitations:
        return []
    return [s for s in range(seats) if s != creator and not (levels and levels[s])]


def _creation_seating(
    levels: bytes, creator: int, name: str, invited: Sequence[int], seats: int
) -> records.Seating:
    """How a creation seats its match (``_creation_table``'s claims and names), secrets aside."""
    claims = []
    for seat in range(seats):
        if levels and levels[seat]:
            claims.append(records.CLAIM_NONE)
        elif seat == creator:
            claims.append(records.CLAIM_CREATOR)
        else:
            claims.append(records.CLAIM_OPEN if seat in invited else records.CLAIM_TOKEN)
    names = tuple(
        name if seat == creator and claim == records.CLAIM_CREATOR else ""
        for seat, claim in enumerate(claims)
    )
    return records.Seating(tuple(claims), names)


def _creation_table(
    levels: bytes,
    creator: int,
    name: str,
    tokens: Sequence[str],
    invited: Sequence[int],
    codes: Sequence[str],
) -> bytes:
    """The seat table a creation stores: the creator's seat under its name, each invited seat
    open with its invitation's hash and its token sealed under the invitation, every other
    person seat's token handed out."""
    code_of = dict(zip(invited, codes, strict=True))
    holders = []
    for seat, token in enumerate(tokens):
        if levels and levels[seat]:
            holders.append(records.SeatHolder(records.CLAIM_NONE))
        elif seat == creator:
            holders.append(records.SeatHolder(records.CLAIM_CREATOR, name))
        elif seat in code_of:
            code = code_of[seat]
            raw = auth.token_raw(token)
            holders.append(
                records.SeatHolder(
                    records.CLAIM_OPEN,
                    invitation=auth.token_hash(code),
                    sealed=auth.seal_for_invitation(code, raw),
                )
            )
        else:
            holders.append(records.SeatHolder(records.CLAIM_TOKEN))
    return records.Table(creator, tuple(holders)).encode()


Act = Callable[[State, int, int, bytes, records.Seating], tuple[R, State, EventEntry]]
"""A change: (state, seat, new version, the seats' bot levels, the seating) -> (response, state
after, entry)."""
Engine = Callable[[str], contextlib.AbstractContextManager[Any]]
"""Spans the engine's work by name in a traced call (``Servicer._engine``)."""


def _deal_act(request: pb.DealRequest, engine: Engine) -> Act[pb.DealResponse]:
    """The next hand's deal, as ``seat`` asks it (``engine`` spans the engine's work)."""

    def act(
        state: State, seat: int, version: int, levels: bytes, seating: records.Seating
    ) -> tuple[pb.DealResponse, State, EventEntry]:
        with engine("deal"):
            after, events = deal_next_hand(state)
        outcome = Outcome.of(version, after, events)
        response = pb.DealResponse(match_id=request.match_id, events=outcome.for_seat(seat))
        convert.fill_view(response.view, after, seat, request.match_id, version, levels, seating)
        return response, after, outcome.entry(records.deal_command(seat))

    return act


def _play_act(request: pb.PlayRequest, card: Card, engine: Engine) -> Act[pb.PlayResponse]:
    """``seat`` plays ``card`` as ``request`` says (``engine`` spans the engine's work)."""

    def act(
        state: State, seat: int, version: int, levels: bytes, seating: records.Seating
    ) -> tuple[pb.PlayResponse, State, EventEntry]:
        play = Play(seat, card, request.plan_id or None, request.trail)
        with engine("apply"):
            after, events = apply(state, play)
        played = events[0]
        assert isinstance(played, CardPlayed)
        outcome = Outcome.of(version, after, events)
        response = pb.PlayResponse(
            played=outcome.public[0].card_played, events=outcome.for_seat(seat)
        )
        # Written into the response's own view: one given to the constructor is copied.
        convert.fill_view(response.view, after, seat, request.match_id, version, levels, seating)
        for event in events:
            if isinstance(event, HandScored):
                response.hand_score.CopyFrom(
                    convert.hand_score_to_pb(event.score, after.profile, event.game)
                )
            elif isinstance(event, MatchEnded):
                response.result.CopyFrom(convert.match_result_to_pb(after, event))
        return response, after, outcome.entry(records.play_command(play, played.plan))

    return act


_BOT_SEAT: Final = bytes(32)
"""The token hash of a bot seat: no token hashes to it, so no call can act as the bot."""
_BOT_MOVED_ON: Final = frozenset(
    {Reason.VERSION_MISMATCH.name, Reason.REQUEST_ID_REUSED.name, Reason.MATCH_NOT_FOUND.name}
)
"""The refusals of a bot move that mean the match moved on without it (or is gone)."""


def _bot_levels(levels: Sequence[int], seats: int) -> bytes:
    """CreateMatchRequest.bots as the record keeps them: one BotLevel per seat, or b"" when
    people play every seat.

    Raises:
        ServiceError: INVALID_ARGUMENT naming bots (more entries than seats) or bots[i] (a
            value that is no BotLevel).
    """
    if len(levels) > seats:
        raise invalid_argument("bots", f"has {len(levels)} entries for {seats} seats")
    for i, level in enumerate(levels):
        if level != 0 and level not in bots.LEVELS:
            raise invalid_argument(
                f"bots[{i}]",
                f"{level} is no BotLevel: BOT_LEVEL_UNSPECIFIED (a person), "
                "BOT_LEVEL_RANDOM, BOT_LEVEL_GREEDY or BOT_LEVEL_STRONG",
            )
    if not any(levels):
        return b""
    return bytes(levels) + bytes(seats - len(levels))


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


class StateCache:
    """Decoded states by their bytes, the most recent first: the bytes a replica commits are
    usually the bytes it loads next. States are immutable and their bytes canonical, so a hit is
    always right."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._states: OrderedDict[bytes, State] = OrderedDict()

    def decode(self, data: bytes) -> State:
        state = self._states.get(data)
        if state is None:
            state = decode(data)
            self.put(data, state)
        return state

    def put(self, data: bytes, state: State) -> None:
        self._states[data] = state
        self._states.move_to_end(data)
        if len(self._states) > self._size:
            self._states.popitem(last=False)


class RecordCache:
    """The last record this replica wrote or read of each recent match, the most recent first.

    A change starts from it instead of a GET; the commit script checks its version and, when
    another replica moved the match on, answers the current record (``Store.commit_or_current``),
    so a stale entry costs one retry and never a wrong move. Routing each match's calls to one
    replica (deploy/README.md) keeps nearly every change to one round trip.
    """

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._records: OrderedDict[str, MatchRecord] = OrderedDict()

    def get(self, match_id: str) -> MatchRecord | None:
        return self._records.get(match_id)

    def put(self, record: MatchRecord) -> None:
        # Last seen wins, even an older version a slow read brought: a stale entry costs a
        # retry, and a newer check would keep a dead match's record over its recreation.
        self._records[record.match_id] = record
        self._records.move_to_end(record.match_id)
        if len(self._records) > self._size:
            self._records.popitem(last=False)

    def forget(self, match_id: str) -> None:
        self._records.pop(match_id, None)


def _rpc(request: Message) -> str:
    """The name of the RPC that takes ``request`` (part of a request's fingerprint)."""
    return RPC_OF_REQUEST[request.DESCRIPTOR.full_name]


def _without_request_id(request: pb.PlayRequest | pb.ClaimSeatRequest | CreateRequest) -> bytes:
    """The request's bytes without its request_id (the request is left as it was)."""
    request_id = request.request_id
    request.ClearField("request_id")
    try:
        return request.SerializeToString(deterministic=True)
    finally:
        request.request_id = request_id


_RULES: Final = convert.list_rules_response()
"""ListRules' answer: the rule systems never change while the process runs."""


Change = tuple[MatchRecord, EventEntry]
"""A change of a seat's holder: the record changed (at the version it was decided on) and
the event entry of its new version."""


def _seat_entry(
    version: int,
    seat: int,
    before: records.SeatHolder,
    holder: records.SeatHolder,
    revoked: bytes = b"",
) -> EventEntry:
    """The event entry of a change of ``seat``'s holder from ``before`` to ``holder``
    (``revoked``: the hash of the seat token it revoked)."""
    event = convert.seat_changed_to_pb(version, seat, holder.claim, holder.name)
    command = records.seat_command(seat, before, revoked)
    return EventEntry(version, command, records.encode_events((event,)), ())


def _unsealed(invitation: str, sealed: bytes) -> str:
    """The seat token sealed under ``invitation`` in the seat table."""
    try:
        return auth.token_text(auth.open_for_invitation(invitation, sealed))
    except ValueError:
        raise internal() from None  # a table whose seal its own invitation does not open


def _invitation_invalid(match_id: str) -> ServiceError:
    return ServiceError(
        Reason.INVITATION_INVALID,
        "this invitation is none of the match's: ask its creator for a new one",
        {"match_id": match_id},
    )


def _not_found(match_id: str) -> ServiceError:
    return ServiceError(
        Reason.MATCH_NOT_FOUND,
        f"no match {match_id!r}: it never existed or has expired",
        {"match_id": match_id},
    )


def _access_kept_changing(record: MatchRecord) -> ServiceError:
    return ServiceError(
        Reason.VERSION_MISMATCH,
        "the match's watch tokens kept changing under this call: call it again",
        {"current_version": record.version},
    )


def _request_id_reused() -> ServiceError:
    return invalid_argument(
        "request_id", "was already used for a different request", reason=Reason.REQUEST_ID_REUSED
    )


def _rate_limited(wait: float, scope: str) -> ServiceError:
    wait = math.ceil(wait * 1000) / 1000  # whole milliseconds, no float noise
    return ServiceError(
        Reason.RATE_LIMITED,
        f"too many matches created (per {scope}): retry later",
        {"retry_after_s": wait, "scope": scope},
        retry_after_s=wait,
    )


def _version_mismatch(expected: int, current: int) -> ServiceError:
    return ServiceError(
        Reason.VERSION_MISMATCH,
        f"expected version {expected} but the match is at {current}: reload and decide again",
        {"expected_version": expected, "current_version": current},
    )
