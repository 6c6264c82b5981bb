"""What one seat may see: its own hand and the table, never another hand (a partner's included),
the stock's order or the seed; the stock's bottom card only where the profile shows it."""

from __future__ import annotations

from dataclasses import dataclass

from basra.engine.cards import Card, cards_of
from basra.engine.errors import InvalidSeatError
from basra.engine.game import current_target, next_dealer
from basra.engine.rules import bottom_card_visible
from basra.engine.state import GameResult, LastPlay, Phase, State


@dataclass(frozen=True, slots=True, init=False)
class SeatView:
    """One seat's view of a match. Figures "per side" are indexed by side (see ``sides``)."""

    seat: int
    side: int
    """The side this seat plays for."""
    sides: tuple[int, ...]
    """The side of each seat, indexed by seat (with no partnerships, ``sides[s] == s``)."""
    hand: tuple[Card, ...]
    """This seat's own cards, in the order dealt."""
    floor: tuple[Card, ...]
    hand_sizes: tuple[int, ...]
    """Cards in each seat's hand (the only thing shown of the other hands)."""
    captured_counts: tuple[int, ...]
    """Cards each side has captured this hand."""
    captured_specials: tuple[tuple[Card, ...], ...]
    """The special (scoring) cards each side has captured this hand."""
    basras: tuple[int, ...]
    """Basras each side has made this hand."""
    basra_points: tuple[int, ...]
    """Points of those basras, per side."""
    stock_size: int
    bottom_card: Card | None
    """The stock's bottom card when this seat may see it (the dealer in the egyptian family,
    every seat with option ``bottom_card_shown``) and it is not dealt yet; else None."""
    turn: int | None
    """Seat to play; None when no hand is in progress."""
    dealer: int
    next_dealer: int | None
    """The seat that deals the next hand, once a hand is over; None otherwise."""
    hand_number: int
    deal_number: int
    plays_left: int
    last_capturer: int | None
    last_play: LastPlay | None
    scores: tuple[int, ...]
    """Each side's total in the current game."""
    carry: int
    target: int
    """Points that win the current game."""
    games: tuple[GameResult, ...]
    """A rubber's finished games."""
    phase: Phase
    winner: int | None
    """The winning side once the match is over."""

    # Written out, not generated: one is made for every view (each Play's response), and mypyc
    # compiles this one to direct slot stores, where the generated one runs interpreted.
    def __init__(
        self,
        seat: int,
        side: int,
        sides: tuple[int, ...],
        hand: tuple[Card, ...],
        floor: tuple[Card, ...],
        hand_sizes: tuple[int, ...],
        captured_counts: tuple[int, ...],
        captured_specials: tuple[tuple[Card, ...], ...],
        basras: tuple[int, ...],
        basra_points: tuple[int, ...],
        stock_size: int,
        bottom_card: Card | None,
        turn: int | None,
        dealer: int,
        next_dealer: int | None,
        hand_number: int,
        deal_number: int,
        plays_left: int,
        last_capturer: int | None,
        last_play: LastPlay | None,
        scores: tuple[int, ...],
        carry: int,
        target: int,
        games: tuple[GameResult, ...],
        phase: Phase,
        winner: int | None,
    ) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "side", side)
        object.__setattr__(self, "sides", sides)
        object.__setattr__(self, "hand", hand)
        object.__setattr__(self, "floor", floor)
        object.__setattr__(self, "hand_sizes", hand_sizes)
        object.__setattr__(self, "captured_counts", captured_counts)
        object.__setattr__(self, "captured_specials", captured_specials)
        object.__setattr__(self, "basras", basras)
        object.__setattr__(self, "basra_points", basra_points)
        object.__setattr__(self, "stock_size", stock_size)
        object.__setattr__(self, "bottom_card", bottom_card)
        object.__setattr__(self, "turn", turn)
        object.__setattr__(self, "dealer", dealer)
        object.__setattr__(self, "next_dealer", next_dealer)
        object.__setattr__(self, "hand_number", hand_number)
        object.__setattr__(self, "deal_number", deal_number)
        object.__setattr__(self, "plays_left", plays_left)
        object.__setattr__(self, "last_capturer", last_capturer)
        object.__setattr__(self, "last_play", last_play)
        object.__setattr__(self, "scores", scores)
        object.__setattr__(self, "carry", carry)
        object.__setattr__(self, "target", target)
        object.__setattr__(self, "games", games)
        object.__setattr__(self, "phase", phase)
        object.__setattr__(self, "winner", winner)


def view(state: State, seat: int) -> SeatView:
    """The view of ``seat``.

    Raises:
        InvalidSeatError: no such seat.
    """
    if not 0 <= seat < state.seats:
        raise InvalidSeatError(seat, state.seats)
    profile = state.profile
    points = profile.points.points
    visible_bottom = bottom_card_visible(profile.bottom_card, seat, state.dealer)
    playing = state.phase is Phase.PLAYING
    return SeatView(
        seat=seat,
        side=profile.side_of(seat),
        sides=tuple(profile.side_of(s) for s in range(state.seats)),
        hand=state.hands[seat],
        floor=state.floor,
        hand_sizes=tuple(len(h) for h in state.hands),
        captured_counts=tuple(m.bit_count() for m in state.captured),
        captured_specials=tuple(tuple(c for c in cards_of(m) if points[c]) for m in state.captured),
        basras=state.basras,
        basra_points=state.basra_points,
        stock_size=len(state.stock),
        bottom_card=state.bottom_card if visible_bottom and playing else None,
        turn=state.turn if playing else None,
        dealer=state.dealer,
        next_dealer=next_dealer(state) if state.phase is Phase.HAND_OVER else None,
        hand_number=state.hand_number,
        deal_number=state.deal_number,
        plays_left=state.plays_left,
        last_capturer=state.last_capturer,
        last_play=state.last_play,
        scores=state.scores,
        carry=state.carry,
        target=current_target(state),
        games=state.games,
        phase=state.phase,
        winner=state.winner,
    )
