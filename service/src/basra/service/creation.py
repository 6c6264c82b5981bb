"""Creating a match: CreateMatch and the deprecated first Deal.

A creation checks its request and the API key, spends one creation of the caller's and the
replica's rate limits, draws the match (seed, seat tokens, invitations) and stores it with its
seat table. A request_id makes it idempotent: the match id derives from it (scoped to the
caller), and the tokens the response hands out are kept sealed under it, so a retry gets the
original response back whatever the creation rate. A match of bots only also hands its creator
a watch token, and holds one of its creator's and one of the replica's places for live matches
of bots only until it ends (``bots.BotOnlyMatches``): past either bound the creation is
refused and nothing is made.
"""

from __future__ import annotations

import hmac
import logging
import math
import secrets
from collections.abc import Mapping, Sequence
from typing import Final, TypeVar

from basra.engine import ERAM, Event, Profile, State, encode, new_match, rule_system
from basra.engine.game import MAX_SEED
from basra.service import auth, bots, convert, names, records
from basra.service.caches import Matches
from basra.service.callers import Caller, Callers, access_kept_changing
from basra.service.changes import CAS_ATTEMPTS, Engine, Outcome, fingerprint, request_id_reused
from basra.service.errors import Reason, ServiceError, internal, invalid_argument
from basra.service.metrics import Metrics
from basra.service.ratelimit import CallerBuckets, TokenBucket, peer_host
from basra.service.store import MatchRecord, NewMatch, WatchAccess
from basra.service.store.base import SALT_BYTES
from basra.v1 import basra_service_pb2 as pb

log = logging.getLogger("basra.rpc")
CreateRequest = pb.DealRequest | pb.CreateMatchRequest
CreateResponse = TypeVar("CreateResponse", pb.DealResponse, pb.CreateMatchResponse)

_BOT_SEAT: Final = bytes(32)
"""The token hash of a bot seat: no token hashes to it, so no call can act as the bot."""


class Creation:
    """Creates matches, within the creation rate limits.

    ``api_key``: the key a creation must present (None: none asked, callers told apart by
    peer); ``allow_seeds``: whether a request may choose its seed; ``creations`` the replica's
    bucket and ``caller_creations`` each caller's; ``bot_only`` the live matches of bots only
    each caller and the replica may have.
    """

    def __init__(
        self,
        matches: Matches,
        callers: Callers,
        metrics: Metrics,
        engine: Engine,
        *,
        api_key: str | None,
        allow_seeds: bool,
        creations: TokenBucket,
        caller_creations: CallerBuckets,
        bot_only: bots.BotOnlyMatches,
    ) -> None:
        self._matches = matches
        self._store = matches.store
        self._callers = callers
        self._metrics = metrics
        self._engine = engine
        self._api_key = api_key
        self._allow_seeds = allow_seeds
        self._creations = creations
        self._caller_creations = caller_creations
        self._bot_only = bot_only

    async def first_deal(self, request: pb.DealRequest, caller: Caller) -> pb.DealResponse:
        """Deprecated creation: an ERAM match for two seats, exactly as before CreateMatch."""
        request_id = auth.check_request_id(request.request_id, creating=True)
        if request.seat not in range(ERAM.seats):
            raise invalid_argument("seat", f"must be 0..{ERAM.seats - 1}")
        if request.HasField("expected_version"):
            raise invalid_argument("expected_version", "applies only to dealing a next hand")
        return await self._create(request, caller, request_id, ERAM, pb.DealResponse)

    async def create_match(
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
        auth.check_api_key(caller.metadata, self._api_key)
        if request.HasField("seed") and not self._allow_seeds:
            raise ServiceError(
                Reason.SEEDS_DISABLED,
                "this server draws its own seeds: omit seed",
            )
        fingerprinted = fingerprint(request)
        # Idempotency is the caller's: its scope goes into the derived match id and the seal key.
        request_id = auth.caller_scope(self._api_key) + request_id if request_id else ""
        derived = auth.match_id_for(request_id) if request_id else None
        invited = _invited_seats(profile.seats, levels, request.seat, invitations=invitations)
        if derived is not None and await self._store.load(derived) is not None:
            # A retry of a creation already made: answer it, whatever the creation rate.
            return await self._repeat_creation(
                derived, request_id, fingerprinted, response_type, invited, name
            )
        who = self._caller_key(caller)
        # A match of bots only plays itself out on this replica's CPU: its place is held from
        # here, and given back unless the match is made.
        place = self._bot_only.take(who) if bots.bots_only(levels) else None
        try:
            self._take_creation(who)
            return await self._draw_and_store(
                request,
                request_id,
                fingerprinted,
                derived,
                profile,
                response_type,
                levels,
                invited,
                name,
                place,
            )
        finally:
            if place is not None:
                place.give_back()  # nothing once the match has kept it

    async def _draw_and_store(
        self,
        request: CreateRequest,
        request_id: str,
        fingerprinted: bytes,
        derived: str | None,
        profile: Profile,
        response_type: type[CreateResponse],
        levels: bytes,
        invited: Sequence[int],
        name: str,
        place: bots.Place | None,
    ) -> CreateResponse:
        """Draw the match and store it; a retry's original response when the derived id was
        taken meanwhile. ``place``: the one a match of bots only keeps."""
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
                creation = records.Creation(fingerprinted, request.seat, sealed).encode()
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
                if place is not None:
                    # Before the bots are told of it: its end gives the place back.
                    place.keep(match_id)
                self._metrics.matches_created.inc()
                self._metrics.hands_dealt.inc()
                log.info("match created", extra={"match_id": match_id})
                self._matches.bots(match_id, state, levels)
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
                    match_id, request_id, fingerprinted, response_type, invited, name
                )
        raise internal()  # three random 128-bit ids taken: not a thing that happens

    def _caller_key(self, caller: Caller) -> str:
        """Who the creation limits count: the API key's scope when one is required (every
        holder of the key is one caller), else the client's address."""
        key = self._api_key
        return auth.caller_scope(key) if key is not None else "peer:" + peer_host(caller.peer)

    def _take_creation(self, who: str) -> None:
        """Spend one creation of ``who``'s bucket and one of the replica's.

        Raises:
            ServiceError: RESOURCE_EXHAUSTED / RATE_LIMITED, metadata ``scope`` ``caller`` (this
                caller made too many) or ``replica`` (all callers together did).
        """
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
        fingerprinted: bytes,
        response_type: type[CreateResponse],
        invited: Sequence[int],
        name: str,
    ) -> CreateResponse:
        """A retried creation: the original response, tokens and invitations included."""
        record = await self._matches.load(match_id)
        creation = records.Creation.decode(record.creation)
        if creation is None or not hmac.compare_digest(creation.fingerprint, fingerprinted):
            raise request_id_reused()
        stored = self._matches.states.decode(record.state)
        try:
            # The tokens of the seats not invited, then the invitations: as many as seats.
            raw = auth.open_tokens(request_id, creation.sealed_tokens, stored.seats)
        except ValueError:
            raise request_id_reused() from None
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
            access = await self._callers.watch_access(record.match_id)
            if access is not None and access.hashes[0]:
                return auth.watch_token(tokens[0], access.salt)
            salt = secrets.token_bytes(SALT_BYTES)
            watch_token = auth.watch_token(tokens[0], salt)
            hashes = (auth.token_hash(watch_token),) + (b"",) * (len(tokens) - 1)
            if await self._callers.swap_watch_access(record, access, WatchAccess(salt, hashes)):
                return watch_token
        raise access_kept_changing(record)


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


def _rate_limited(wait: float, scope: str) -> ServiceError:
    wait = math.ceil(wait * 1000) / 1000  # whole milliseconds, no float noise
    return ServiceError(
        Reason.RATE_LIMITED,
        f"too many matches created (per {scope}): retry later",
        {"retry_after_s": wait, "scope": scope},
        retry_after_s=wait,
    )
