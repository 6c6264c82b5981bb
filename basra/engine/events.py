"""Events: what each step of a match did, for reporting, streaming and audit.

Every event holds only public information (what all seats see on the table), never a hand or the
stock, so events can be shown to any seat as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from basra.engine.cards import Card
from basra.engine.state import HandScore


@dataclass(frozen=True, slots=True)
class HandStarted:
    """A hand was shuffled and dealt: every seat got its cards and the floor was laid."""

    hand: int
    dealer: int
    leader: int
    """The non-dealer who plays first."""
    floor: tuple[Card, ...]


@dataclass(frozen=True, slots=True)
class CardsDealt:
    """The hands ran out and each seat got new cards (no floor cards)."""

    hand: int
    deal: int
    """Deal number within the hand (ERAM: 2..6)."""
    cards_each: int
    stock_left: int


@dataclass(frozen=True, slots=True)
class CardPlayed:
    """A seat played a card: a capture (with the plan taken) or a trail."""

    seat: int
    card: Card
    plan: int
    """Plan id taken, 0 for a trail."""
    captured: tuple[Card, ...]
    """Floor cards taken (empty for a trail)."""
    basra: bool
    sweep: bool

    @property
    def trail(self) -> bool:
        """The card stayed on the floor."""
        return not self.captured


@dataclass(frozen=True, slots=True)
class FloorCollected:
    """End of hand: the leftover floor went to the last capturer (never a basra)."""

    seat: int | None
    """Receiving seat; None when nobody captured in the hand (the cards go to no one)."""
    cards: tuple[Card, ...]


@dataclass(frozen=True, slots=True)
class HandScored:
    """A hand was scored and the match totals updated."""

    score: HandScore
    totals: tuple[int, ...]
    """Match totals after the hand."""
    extra_hand: bool
    """Several seats reached the target with equal highest totals: another hand is played."""


@dataclass(frozen=True, slots=True)
class MatchEnded:
    """A seat reached the target with the highest total."""

    winner: int
    totals: tuple[int, ...]


Event = HandStarted | CardsDealt | CardPlayed | FloorCollected | HandScored | MatchEnded
