"""Engine values to and from the basra.v1 messages. No logic of the game lives here."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from basra.engine import (
    CARDS,
    Card,
    CardPlayed,
    CardsDealt,
    Event,
    FloorCollected,
    HandScore,
    HandScored,
    HandStarted,
    MatchEnded,
    Phase,
    Plan,
    State,
    view,
)
from basra.service.errors import ServiceError, invalid_argument
from basra.v1 import game_pb2

_STATUS = {
    Phase.PLAYING: game_pb2.MATCH_STATUS_PLAYING,
    Phase.HAND_OVER: game_pb2.MATCH_STATUS_HAND_OVER,
    Phase.MATCH_OVER: game_pb2.MATCH_STATUS_MATCH_OVER,
}


def card_to_pb(card: Card) -> game_pb2.Card:
    # Rank and suit enums count from 1 in RULES.md's order (A..K, C D H S).
    return game_pb2.Card(rank=card.rank + 1, suit=card.suit + 1)  # type: ignore[arg-type]


def cards_to_pb(cards: Iterable[Card]) -> list[game_pb2.Card]:
    return [card_to_pb(c) for c in cards]


def card_from_pb(card: game_pb2.Card, field: str = "card") -> Card:
    """The engine card of a request's Card.

    Raises:
        ServiceError: INVALID_ARGUMENT / INVALID_CARD naming ``field``.
    """
    if not 1 <= card.rank <= 13 or not 1 <= card.suit <= 4:
        raise invalid_card(field)
    return CARDS[(card.suit - 1) * 13 + card.rank - 1]


def invalid_card(field: str) -> ServiceError:
    return invalid_argument(field, "must have a rank and a suit", reason="INVALID_CARD")


def status_of(phase: Phase) -> game_pb2.MatchStatus.ValueType:
    return _STATUS[phase]


def view_to_pb(state: State, seat: int, match_id: str, version: int) -> game_pb2.MatchView:
    """One seat's view: its own hand, the table, never another hand or the stock."""
    seen = view(state, seat)
    return game_pb2.MatchView(
        match_id=match_id,
        version=version,
        seat=seat,
        hand=cards_to_pb(seen.hand),
        floor=cards_to_pb(seen.floor),
        seats=[
            game_pb2.SeatSummary(
                seat=s,
                hand_size=seen.hand_sizes[s],
                captured_count=seen.captured_counts[s],
                basras=seen.basras[s],
                score=seen.scores[s],
            )
            for s in range(state.seats)
        ],
        stock_size=seen.stock_size,
        turn=seen.turn,
        dealer=seen.dealer,
        hand_number=seen.hand_number,
        deal_number=seen.deal_number,
        plays_left=seen.plays_left,
        carry=seen.carry,
        target=seen.target,
        status=status_of(seen.phase),
        winner=seen.winner,
        last_capturer=seen.last_capturer,
        rules=state.profile.name,
    )


def spectator_view_to_pb(state: State, match_id: str, version: int) -> game_pb2.MatchView:
    """A spectator's view: the table and every seat's public figures, no hand at all."""
    public = view_to_pb(state, 0, match_id, version)
    public.ClearField("hand")
    public.spectator = True
    return public


def plan_to_pb(plan: Plan) -> game_pb2.Plan:
    return game_pb2.Plan(
        id=plan.id, captures=cards_to_pb(plan.captures), basra=plan.basra, sweep=plan.sweep
    )


def card_plans_to_pb(card: Card, plans: Sequence[Plan]) -> game_pb2.CardPlans:
    return game_pb2.CardPlans(
        card=card_to_pb(card), plans=[plan_to_pb(p) for p in plans], trails=not plans
    )


def hand_score_to_pb(score: HandScore) -> game_pb2.HandScore:
    return game_pb2.HandScore(
        hand=score.hand,
        dealer=score.dealer,
        seats=[
            game_pb2.SeatHandScore(
                seat=seat,
                cards=s.cards,
                majority=s.majority,
                carry=s.carry,
                specials=s.specials,
                basras=s.basras,
                basra_points=s.basra_points,
                total=s.total,
            )
            for seat, s in enumerate(score.seats)
        ],
        carry_before=score.carry_before,
        carry_after=score.carry_after,
    )


def scoreboard_to_pb(state: State) -> game_pb2.Scoreboard:
    return game_pb2.Scoreboard(
        hands=[hand_score_to_pb(h) for h in state.history],
        totals=state.scores,
        carry=state.carry,
        target=state.profile.target,
        status=status_of(state.phase),
        winner=state.winner,
    )


def card_played_to_pb(event: CardPlayed) -> game_pb2.CardPlayed:
    return game_pb2.CardPlayed(
        seat=event.seat,
        card=card_to_pb(event.card),
        plan_id=event.plan,
        captured=cards_to_pb(event.captured),
        basra=event.basra,
        sweep=event.sweep,
        trail=event.trail,
    )


def event_to_pb(event: Event, version: int) -> game_pb2.MatchEvent:
    """The public MatchEvent of an engine event (no seat's cards: see ``for_seat``)."""
    out = game_pb2.MatchEvent(version=version)
    if isinstance(event, HandStarted):
        out.hand_started.CopyFrom(
            game_pb2.HandStarted(
                hand=event.hand,
                dealer=event.dealer,
                leader=event.leader,
                floor=cards_to_pb(event.floor),
            )
        )
    elif isinstance(event, CardsDealt):
        out.cards_dealt.CopyFrom(
            game_pb2.CardsDealt(
                hand=event.hand,
                deal=event.deal,
                cards_each=event.cards_each,
                stock_left=event.stock_left,
            )
        )
    elif isinstance(event, CardPlayed):
        out.card_played.CopyFrom(card_played_to_pb(event))
    elif isinstance(event, FloorCollected):
        out.floor_collected.CopyFrom(
            game_pb2.FloorCollected(seat=event.seat, cards=cards_to_pb(event.cards))
        )
    elif isinstance(event, HandScored):
        out.hand_scored.CopyFrom(
            game_pb2.HandScored(
                score=hand_score_to_pb(event.score),
                totals=event.totals,
                extra_hand=event.extra_hand,
            )
        )
    elif isinstance(event, MatchEnded):
        out.match_ended.CopyFrom(game_pb2.MatchEnded(winner=event.winner, totals=event.totals))
    return out


def for_seat(event: game_pb2.MatchEvent, dealt: Sequence[Card]) -> game_pb2.MatchEvent:
    """The event as one seat receives it: a deal carries that seat's own new cards."""
    kind = event.WhichOneof("event")
    if kind not in ("hand_started", "cards_dealt") or not dealt:
        return event
    seat_event = game_pb2.MatchEvent()
    seat_event.CopyFrom(event)
    getattr(seat_event, kind).your_cards.extend(cards_to_pb(dealt))
    return seat_event
