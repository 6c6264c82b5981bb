"""What one seat may see: its own hand and the table, never another hand, the stock or the seed."""

from __future__ import annotations

from dataclasses import dataclass

from basra.engine.cards import Card
from basra.engine.errors import InvalidSeatError
from basra.engine.state import Phase, State


@dataclass(frozen=True, slots=True)
class SeatView:
    """One seat's view of a match."""

    seat: int
    hand: tuple[Card, ...]
    """This seat's own cards, in the order dealt."""
    floor: tuple[Card, ...]
    hand_sizes: tuple[int, ...]
    """Cards in each seat's hand (the only thing shown of the other hands)."""
    captured_counts: tuple[int, ...]
    """Cards each seat has captured this hand."""
    basras: tuple[int, ...]
    """Basras each seat has made this hand."""
    stock_size: int
    turn: int
    dealer: int
    hand_number: int
    deal_number: int
    plays_left: int
    last_capturer: int | None
    scores: tuple[int, ...]
    carry: int
    target: int
    phase: Phase
    winner: int | None


def view(state: State, seat: int) -> SeatView:
    """The view of ``seat``.

    Raises:
        InvalidSeatError: no such seat.
    """
    if not 0 <= seat < state.seats:
        raise InvalidSeatError(seat, state.seats)
    return SeatView(
        seat=seat,
        hand=state.hands[seat],
        floor=state.floor,
        hand_sizes=tuple(len(h) for h in state.hands),
        captured_counts=tuple(m.bit_count() for m in state.captured),
        basras=state.basras,
        stock_size=len(state.stock),
        turn=state.turn,
        dealer=state.dealer,
        hand_number=state.hand_number,
        deal_number=state.deal_number,
        plays_left=state.plays_left,
        last_capturer=state.last_capturer,
        scores=state.scores,
        carry=state.carry,
        target=state.profile.target,
        phase=state.phase,
        winner=state.winner,
    )
