"""Events: what each step of a match did, for reporting, streaming and audit.

Every event holds only public information (what all seats see on the table), never a hand or the
stock, so events can be shown to any seat as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from basra.engine.cards import Card
from basra.engine.state import HandScore


@dataclass(frozen=True, slots=True, init=False)
class HandStarted:
    """A hand was shuffled and dealt: every seat got its cards and the floor was laid."""

    hand: int
    dealer: int
    leader: int
    """The seat after the dealer, who plays first."""
    floor: tuple[Card, ...]
    game: int = 1
    """The rubber's game this hand belongs to (1 without a rubber)."""

    # Written out, not generated: mypyc compiles this one to direct slot stores.
    def __init__(
        self, hand: int, dealer: int, leader: int, floor: tuple[Card, ...], game: int = 1
    ) -> None:
        object.__setattr__(self, "hand", hand)
        object.__setattr__(self, "dealer", dealer)
        object.__setattr__(self, "leader", leader)
        object.__setattr__(self, "floor", floor)
        object.__setattr__(self, "game", game)


@dataclass(frozen=True, slots=True, init=False)
class CardsDealt:
    """The hands ran out and each seat got new cards (no floor cards)."""

    hand: int
    deal: int
    """Deal number within the hand (2 up to the profile's deals per hand; ERAM: 2..6)."""
    cards_each: int
    stock_left: int

    # Written out, not generated: mypyc compiles this one to direct slot stores.
    def __init__(self, hand: int, deal: int, cards_each: int, stock_left: int) -> None:
        object.__setattr__(self, "hand", hand)
        object.__setattr__(self, "deal", deal)
        object.__setattr__(self, "cards_each", cards_each)
        object.__setattr__(self, "stock_left", stock_left)


@dataclass(frozen=True, slots=True, init=False)
class CardPlayed:
    """A seat played a card: a capture (with the plan taken) or a trail."""

    seat: int
    card: Card
    plan: int
    """Plan id taken, 0 for a trail."""
    captured: tuple[Card, ...]
    """Floor cards taken, not the played card (empty for a trail)."""
    basra: bool
    sweep: bool
    basra_points: int = 0
    """What the basra scored (the profile's basra value); 0 when it is none."""

    # Written out, not generated: mypyc compiles this one to direct slot stores.
    def __init__(
        self,
        seat: int,
        card: Card,
        plan: int,
        captured: tuple[Card, ...],
        basra: bool,
        sweep: bool,
        basra_points: int = 0,
    ) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "card", card)
        object.__setattr__(self, "plan", plan)
        object.__setattr__(self, "captured", captured)
        object.__setattr__(self, "basra", basra)
        object.__setattr__(self, "sweep", sweep)
        object.__setattr__(self, "basra_points", basra_points)

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


@dataclass(frozen=True, slots=True, init=False)
class HandScored:
    """A hand was scored and the match totals updated."""

    score: HandScore
    totals: tuple[int, ...]
    """Each side's game total after the hand."""
    extra_hand: bool
    """Several sides reached the target with equal highest totals: another hand is played."""
    game: int = 1
    """The rubber's game the hand belongs to (1 without a rubber)."""

    # Written out, not generated: mypyc compiles this one to direct slot stores.
    def __init__(
        self, score: HandScore, totals: tuple[int, ...], extra_hand: bool, game: int = 1
    ) -> None:
        object.__setattr__(self, "score", score)
        object.__setattr__(self, "totals", totals)
        object.__setattr__(self, "extra_hand", extra_hand)
        object.__setattr__(self, "game", game)


@dataclass(frozen=True, slots=True)
class GameEnded:
    """A game of a rubber was won; the next hand (if the rubber goes on) starts a new game."""

    game: int
    """The game's number, from 1."""
    winner: int
    """The winning side."""
    totals: tuple[int, ...]
    """Each side's final total in that game."""
    games_won: tuple[int, ...]
    """Games each side has won in the rubber so far."""


@dataclass(frozen=True, slots=True)
class MatchEnded:
    """A side won the match: it reached the target with the highest total (or won the rubber)."""

    winner: int
    """The winning side (with no partnerships, the winning seat)."""
    totals: tuple[int, ...]
    """Each side's final total (of the last game, in a rubber)."""


Event = HandStarted | CardsDealt | CardPlayed | FloorCollected | HandScored | GameEnded | MatchEnded
