"""The differences between rule systems that are not numbers: one small named function each.

Every function here implements one line of VARIANTS.md (or of RULES.md for ``eram``) and is named
after it; a profile (``engine.profile``) picks one of each family by an enum value, so a reader
finds each difference in exactly one place and the engine never asks which profile it is playing.
A rule change is a new enum value (old records keep the old value and so the old rule), never an
edit of a function below.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable
from typing import Final

from basra.engine.cards import FACE_MASK, JACK_MASK, KING, QUEEN, VALUES, Card, cards_of


class SevenRule(enum.IntEnum):
    """What the seven of diamonds is (VARIANTS.md, each profile's "7D" line)."""

    COUNT_NO_QUEEN_OR_KING = 1
    """RULES.md: sweeps; a basra when the floor held 10 cards or fewer and no Q or K."""
    SUM_OF_NUMBERS = 2
    """egyptian, persian: sweeps; a basra when the floor is all numbers summing to 10 or less."""
    ORDINARY = 3
    """lobashev: an ordinary 7 with no special power."""


def seven_basra_by_count(floor: int) -> bool:
    """RULES.md: "a basra when F held 10 cards or fewer before the play and none is a Q or K"."""
    return floor.bit_count() <= 10 and not floor & FACE_MASK


def seven_basra_by_sum(floor: int) -> bool:
    """egyptian/persian: "a basra when every floor card is a number card (A..10) and their values
    add up to 10 or less"; a floor holding any J, Q or K gives no basra."""
    if floor & (FACE_MASK | JACK_MASK):
        return False
    return sum(VALUES[c] for c in cards_of(floor)) <= 10


SEVEN_SWEEP_BASRA: Final[dict[SevenRule, Callable[[int], bool]]] = {
    SevenRule.COUNT_NO_QUEEN_OR_KING: seven_basra_by_count,
    SevenRule.SUM_OF_NUMBERS: seven_basra_by_sum,
}
"""The 7D sweep's basra criterion; a rule missing here (ORDINARY) makes the 7D an ordinary 7."""


class MajorityTie(enum.IntEnum):
    """What a shared top count of cards does (each profile's "Majority" line)."""

    CARRY = 1
    """RULES.md, egyptian, persian: nobody scores it; its value is carried (30, 60, ...)."""
    NOTHING = 2
    """lobashev: "a tie for the most cards scores nothing and carries nothing"."""


def tie_carries(carry: int, majority_points: int) -> int:
    """RULES.md/VARIANTS.md "Carry": a tied majority's value goes into the carry, which grows."""
    return carry + majority_points


def tie_scores_nothing(carry: int, majority_points: int) -> int:
    """lobashev: a tie scores nothing and carries nothing (there is never a carry)."""
    return carry


CARRY_AFTER_TIE: Final[dict[MajorityTie, Callable[[int, int], int]]] = {
    MajorityTie.CARRY: tie_carries,
    MajorityTie.NOTHING: tie_scores_nothing,
}


class BasraValue(enum.IntEnum):
    """What one basra scores (each profile's "Basra" line)."""

    FIXED = 1
    """RULES.md, egyptian, persian, lobashev: the profile's basra points (10)."""
    TWICE_THE_CARD = 2
    """jordanian: twice the value of the card that made it, Q and K counting 10."""


def basra_fixed(card: Card, basra_points: int) -> int:
    """RULES.md "Each basra 10": the profile's fixed value."""
    return basra_points


def basra_twice_the_card(card: Card, basra_points: int) -> int:
    """jordanian: "twice the value of the card that made it, Q and K counting 10" (7 -> 14,
    a Q -> 20, an A -> 2, the 7D -> 14)."""
    return 2 * (10 if card.rank in (QUEEN, KING) else VALUES[card])


BASRA_VALUE: Final[dict[BasraValue, Callable[[Card, int], int]]] = {
    BasraValue.FIXED: basra_fixed,
    BasraValue.TWICE_THE_CARD: basra_twice_the_card,
}


class BottomCard(enum.IntEnum):
    """Who sees the bottom card of the stock (the card dealt last) until it is dealt."""

    HIDDEN = 0
    """RULES.md, persian: nobody."""
    DEALER = 1
    """egyptian family: "shown to the dealer after the shuffle"."""
    EVERY_SEAT = 2
    """egyptian family with option ``bottom_card_shown`` (2 seats): every seat's view shows it."""


def bottom_card_visible(rule: BottomCard, seat: int, dealer: int) -> bool:
    """Whether ``seat`` sees the stock's bottom card under ``rule``."""
    return rule is BottomCard.EVERY_SEAT or (rule is BottomCard.DEALER and seat == dealer)


def burial_position(rng: random.Random, stock_size: int, rule: BottomCard) -> int:
    """Where a J or 7D taken off the opening floor goes back into the stock.

    RULES.md: "a random position (not on top)" (the bottom allowed). egyptian: "neither the top
    nor the bottom", so the bottom card the dealer has seen stays the bottom card.
    """
    if rule is BottomCard.HIDDEN:
        return rng.randint(1, stock_size)
    return rng.randint(1, stock_size - 1)


def side_of_seat(seat: int, partnerships: bool) -> int:
    """VARIANTS.md "Seats, sides and order": a side is one seat, or in a partnership game two
    partners sitting opposite, seats {0, 2} (side 0) and {1, 3} (side 1)."""
    return seat % 2 if partnerships else seat


def rubber_game_target(
    target: int, final_target: int, wins_needed: int, games_won: tuple[int, ...]
) -> int:
    """egyptian "Rubber": best of five, "at two games all, the fifth game is played to 150"."""
    deciding = wins_needed > 0 and all(w == wins_needed - 1 for w in games_won)
    return final_target if deciding else target
