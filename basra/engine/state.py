"""The game state: one immutable value per position, and the small records it holds.

State is a frozen dataclass of tuples and ints (card sets are 52-bit masks), so ``apply`` returns
a new value and never mutates; ``engine.codec`` turns it into compact bytes and back.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from basra.engine.cards import Card
from basra.engine.profile import Profile


class Phase(enum.IntEnum):
    """Where a match stands."""

    PLAYING = 1
    """A hand is in progress: the seat ``turn`` must play."""
    HAND_OVER = 2
    """The hand is scored and the match goes on: the next hand must be dealt."""
    MATCH_OVER = 3
    """A seat has won."""


@dataclass(frozen=True, slots=True)
class Play:
    """A seat's move: play ``card``, taking plan ``plan`` when named.

    ``plan`` may be omitted when the card has at most one plan. ``trail`` declares that the card
    should stay on the floor; it is rejected when the card can capture (capture is mandatory).
    """

    seat: int
    card: Card
    plan: int | None = None
    trail: bool = False


@dataclass(frozen=True, slots=True)
class SeatHandScore:
    """One seat's points for one hand (RULES.md, "Scoring")."""

    cards: int
    """Captured cards, the leftover floor included."""
    majority: int
    """30 for 27 or more cards, else 0."""
    carry: int
    """Carry released to this seat with its majority."""
    specials: int
    """J and A 1 each, 2C 2, 10D 3."""
    basras: int
    """Number of basras."""
    basra_points: int
    """Points for those basras (10 each)."""

    @property
    def total(self) -> int:
        """Everything this seat scored in the hand."""
        return self.majority + self.carry + self.specials + self.basra_points


@dataclass(frozen=True, slots=True)
class HandScore:
    """The scoring of one complete hand."""

    hand: int
    """Hand number, from 1."""
    dealer: int
    seats: tuple[SeatHandScore, ...]
    carry_before: int
    """Carry standing when the hand began."""
    carry_after: int
    """Carry after the hand: 0 once released, +30 after a shared top count."""

    @property
    def totals(self) -> tuple[int, ...]:
        """Each seat's total for the hand."""
        return tuple(s.total for s in self.seats)

    @property
    def unassigned_cards(self) -> int:
        """Leftover cards nobody took (only when nobody captured in the hand)."""
        return 52 - sum(s.cards for s in self.seats)


@dataclass(frozen=True, slots=True)
class State:
    """A match at one moment. Build it with ``engine.new_match``; change it with ``apply``.

    Holds secrets: every hand, the stock order and the seed. Show players ``engine.view``.
    """

    profile: Profile
    seed: int
    """The match's randomness: with the plays it determines everything (replays)."""
    phase: Phase
    hand_number: int
    """Current (or just finished) hand, from 1."""
    dealer: int
    turn: int
    """Seat to play (meaningful while PLAYING)."""
    hands: tuple[tuple[Card, ...], ...]
    """Each seat's cards in the order dealt."""
    floor: tuple[Card, ...]
    """Face-up cards in the order they arrived."""
    stock: tuple[Card, ...]
    """Undealt cards, top first."""
    captured: tuple[int, ...]
    """Each seat's captured cards this hand (mask), played capturing cards included."""
    basras: tuple[int, ...]
    """Each seat's basras this hand."""
    last_capturer: int | None
    """Seat that captured last this hand; None while nobody has."""
    plays: int
    """Plays made in the current hand (ERAM: 0..48)."""
    scores: tuple[int, ...]
    """Match totals."""
    carry: int
    """Majority points carried after 26/26 ties (30, 60, ...)."""
    history: tuple[HandScore, ...]
    """Every completed hand's scoring, oldest first."""
    winner: int | None
    """Winning seat once the match is over."""

    @property
    def seats(self) -> int:
        """Number of seats."""
        return self.profile.seats

    @property
    def deal_number(self) -> int:
        """Deals made in the current hand (ERAM: 1..6)."""
        per_deal = self.profile.seats * self.profile.cards_per_deal
        return self.profile.deals_per_hand - len(self.stock) // per_deal

    @property
    def plays_left(self) -> int:
        """Plays still to come in the current hand."""
        return self.profile.plays_per_hand - self.plays
