"""Rules profiles: the parameters that distinguish one rule system from another, as data.

``ERAM`` is the profile RULES.md defines and the engine's default. The other rule systems in the
seeds (the traditional sum <= 10 seven of diamonds, 101 points, four seats, six-card deals) differ
only in these fields, so they are profiles, not code paths.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from basra.engine.cards import DECK_SIZE, JACK, KING, QUEEN, RANK_MASKS


class SevenMeasure(enum.IntEnum):
    """What the 7D basra criterion measures on the floor before the play."""

    COUNT = 1
    """Number of floor cards (ERAM: 10 or fewer)."""
    SUM = 2
    """Sum of the floor cards' values (traditional: 10 or less)."""


@dataclass(frozen=True, slots=True)
class Profile:
    """One rule system. Every field is validated on construction.

    Raises:
        ValueError: the fields do not describe a playable game.
    """

    name: str
    seats: int = 2
    target: int = 121
    cards_per_deal: int = 4
    floor_cards: int = 4
    majority_cards: int = 27
    """Captured cards needed for the majority bonus; a shared top count carries it instead."""
    majority_points: int = 30
    basra_points: int = 10
    seven_measure: SevenMeasure = SevenMeasure.COUNT
    seven_limit: int = 10
    seven_excluded_ranks: frozenset[int] = frozenset({QUEEN, KING})
    """Ranks whose presence on the floor denies the 7D basra (ERAM: Q and K)."""

    def __post_init__(self) -> None:
        if not 2 <= self.seats <= 4:
            raise ValueError(f"seats must be 2..4, not {self.seats!r}")
        if self.target < 1 or self.target > 0xFFFF:
            raise ValueError(f"target must be 1..65535, not {self.target!r}")
        if self.cards_per_deal < 1 or self.floor_cards < 0:
            raise ValueError("cards_per_deal must be positive and floor_cards not negative")
        dealt = DECK_SIZE - self.floor_cards
        if dealt % (self.seats * self.cards_per_deal):
            raise ValueError(
                f"{dealt} cards do not split into deals of {self.cards_per_deal} "
                f"for {self.seats} seats"
            )
        if not 0 < self.majority_cards <= DECK_SIZE or not 0 <= self.seven_limit <= 255:
            raise ValueError("majority_cards must be 1..52 and seven_limit 0..255")
        if not self.seven_excluded_ranks <= frozenset(range(13)):
            raise ValueError("seven_excluded_ranks must be rank positions 0..12")
        for points in (self.majority_points, self.basra_points):
            if not 0 <= points <= 255:
                raise ValueError("majority_points and basra_points must be 0..255")

    @property
    def deals_per_hand(self) -> int:
        """Deals in one hand (ERAM: 6)."""
        return (DECK_SIZE - self.floor_cards) // (self.seats * self.cards_per_deal)

    @property
    def plays_per_hand(self) -> int:
        """Plays in one hand (ERAM: 48)."""
        return DECK_SIZE - self.floor_cards

    @property
    def seven_excluded_mask(self) -> int:
        """The cards whose presence on the floor denies a 7D basra."""
        mask = 0
        for rank in self.seven_excluded_ranks:
            mask |= RANK_MASKS[rank]
        return mask


ERAM = Profile(name="eram")
"""RULES.md: two seats, 121 points, deals of 4, 7D basra on 10 or fewer floor cards, no Q/K."""

TRADITIONAL = Profile(
    name="traditional",
    target=101,
    seven_measure=SevenMeasure.SUM,
    seven_excluded_ranks=frozenset({JACK, QUEEN, KING}),
)
"""Seed 001's Egyptian description: 101 points, 7D basra when the floor is all numbers summing
to 10 or less. Not normative here; it shows the profile carries the differences."""
