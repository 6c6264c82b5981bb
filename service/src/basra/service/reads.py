"""The reads of a match: GetMatch, Score and ListPlans, and ListRules (no match at all).

A read resolves its caller (``callers.py``: a seat, or a spectator's watch token where the view
is public) on the match as the store has it, and answers from the state; it changes nothing.
"""

from __future__ import annotations

import asyncio
from typing import Final

from basra.engine import CardNotInHandError, format_cards, legal_plans
from basra.service import convert, records
from basra.service.caches import Matches
from basra.service.callers import Caller, Callers
from basra.service.changes import Engine
from basra.v1 import basra_service_pb2 as pb

RULES: Final = convert.list_rules_response()
"""ListRules' answer: the rule systems never change while the process runs."""


class Reads:
    """GetMatch, Score and ListPlans."""

    def __init__(self, matches: Matches, callers: Callers, engine: Engine) -> None:
        self._matches = matches
        self._callers = callers
        self._engine = engine

    async def list_plans(
        self, request: pb.ListPlansRequest, caller: Caller
    ) -> pb.ListPlansResponse:
        card = convert.card_from_pb(request.card) if request.HasField("card") else None
        record, seat, state = await self._callers.read(request.match_id, caller)
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

    async def score(self, request: pb.ScoreRequest, caller: Caller) -> pb.ScoreResponse:
        record, _, state = await self._callers.read_viewer(request.match_id, caller)
        return pb.ScoreResponse(scoreboard=convert.scoreboard_to_pb(state), version=record.version)

    async def get_match(self, request: pb.GetMatchRequest, caller: Caller) -> pb.GetMatchResponse:
        # The match and its presence read together: one round trip's wait, two reads.
        (record, seat, state), connected = await asyncio.gather(
            self._callers.read_viewer(request.match_id, caller),
            self._matches.connected(request.match_id),
        )
        seating = records.seating(record.table, record.bots, state.seats)
        args = (record.match_id, record.version, record.bots, seating, connected)
        if seat is None:
            view = convert.spectator_view_to_pb(state, *args)
        else:
            view = convert.view_to_pb(state, seat, *args)
        return pb.GetMatchResponse(view=view)
