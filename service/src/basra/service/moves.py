"""The moves of a match: Play, the next hand's Deal, and the service's bots' moves.

Each move checks its request, then goes through the one change path (``changes.Changes.change``)
with its ``Act``, the engine's work on the state it is decided on. The bots (bots.py) read a
match and make their moves through ``Moves.bot_read`` and ``Moves.bot_move``: the same path, the
bot's seat in place of a caller's token.
"""

from __future__ import annotations

import logging
from typing import Final

from basra.engine import (
    CARDS,
    BasraError,
    Card,
    CardPlayed,
    HandScored,
    MatchEnded,
    Play,
    State,
    apply,
    deal_next_hand,
)
from basra.service import bots, convert, records
from basra.service.caches import Matches
from basra.service.callers import Caller
from basra.service.changes import Act, Changes, Engine, Outcome
from basra.service.errors import Reason, ServiceError, invalid_argument
from basra.service.metrics import Metrics
from basra.service.store import EventEntry
from basra.v1 import basra_service_pb2 as pb

log = logging.getLogger("basra.rpc")

_BOT_MOVED_ON: Final = frozenset(
    {Reason.VERSION_MISMATCH.name, Reason.REQUEST_ID_REUSED.name, Reason.MATCH_NOT_FOUND.name}
)
"""The refusals of a bot move that mean the match moved on without it (or is gone)."""


class Moves:
    """Play, the next hand's Deal and the bots' moves, over the change path."""

    def __init__(
        self, matches: Matches, changes: Changes, metrics: Metrics, engine: Engine
    ) -> None:
        self._matches = matches
        self._changes = changes
        self._metrics = metrics
        self._engine = engine

    async def play(self, request: pb.PlayRequest, caller: Caller) -> pb.PlayResponse:
        if not request.HasField("card"):
            raise invalid_argument("card", "is required", reason=Reason.INVALID_CARD)
        card = convert.card_from_pb(request.card)
        if request.plan_id < 0:
            raise invalid_argument("plan_id", "must be 0 (none named) or a plan id from 1")
        if request.plan_id and request.trail:
            raise invalid_argument("trail", "cannot be combined with plan_id")
        response = await self._changes.change(
            request, caller, pb.PlayResponse, _play_act(request, card, self._engine)
        )
        self._played(request.match_id, response)
        return response

    async def next_hand(self, request: pb.DealRequest, caller: Caller) -> pb.DealResponse:
        if request.HasField("seed"):
            raise invalid_argument("seed", "applies only to creating a match")
        if request.seat:
            raise invalid_argument("seat", "applies only to creating a match")
        response = await self._changes.change(
            request, caller, pb.DealResponse, _deal_act(request, self._engine)
        )
        self._metrics.hands_dealt.inc()
        return response

    def _played(self, match_id: str, response: pb.PlayResponse) -> None:
        self._metrics.plays.inc()
        if response.played.basra:
            self._metrics.basras.inc()
        if response.HasField("result"):
            log.info("match ended", extra={"match_id": match_id, "winner": response.result.winner})

    async def bot_read(self, match_id: str) -> bots.Current | None:
        """The match as a bot move starts from: the record this replica last wrote or read."""
        record = self._matches.records.get(match_id)
        if record is None:
            record = await self._matches.store.load(match_id)
            if record is None:
                return None
            self._matches.records.put(record)
        return bots.Current(
            record.version, self._matches.states.decode(record.state), record.state, record.bots
        )

    async def bot_move(
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
                await self._changes.change(
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
                response = await self._changes.change(
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
