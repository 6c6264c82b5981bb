"""Scoring after every hand, and the end of a game (RULES.md, "Scoring", "End of the match";
VARIANTS.md, each profile's "Majority" and "Target" lines). Everything is counted per side."""

from __future__ import annotations

from collections.abc import Sequence

from basra.engine.cards import DECK_SIZE
from basra.engine.profile import Profile
from basra.engine.rules import CARRY_AFTER_TIE
from basra.engine.state import HandScore, SideHandScore


def score_hand(
    profile: Profile,
    *,
    hand: int,
    dealer: int,
    carry_before: int,
    cards: Sequence[int],
    specials: Sequence[int],
    basras: Sequence[int],
    basra_points: Sequence[int] | None = None,
) -> HandScore:
    """Score one complete hand from each side's captured-card count, special points and basras.

    Majority: the side with more cards than every other side, and at least the profile's
    ``majority_cards`` (ERAM: 27), scores the majority points plus the carry, and the carry
    returns to 0. A shared top count with every card taken is a tie: the profile's tie rule says
    what it does (ERAM: nobody scores, 30 more carried). Leftover cards that nobody took (nobody
    captured) are neither a majority nor a tie. ``basra_points`` defaults to the profile's fixed
    basra points per basra.
    """
    if basra_points is None:
        basra_points = [n * profile.basra_points for n in basras]
    top = max(cards)
    leaders = [side for side, n in enumerate(cards) if n == top]
    majority_side = leaders[0] if len(leaders) == 1 and top >= profile.majority_cards else None
    if majority_side is not None:
        carry_after = 0
    elif len(leaders) > 1 and sum(cards) == DECK_SIZE:
        carry_after = CARRY_AFTER_TIE[profile.majority_tie](carry_before, profile.majority_points)
    else:
        carry_after = carry_before
    sides = tuple(
        SideHandScore(
            cards=cards[side],
            majority=profile.majority_points if side == majority_side else 0,
            carry=carry_before if side == majority_side else 0,
            specials=specials[side],
            basras=basras[side],
            basra_points=basra_points[side],
        )
        for side in range(profile.sides)
    )
    return HandScore(
        hand=hand,
        dealer=dealer,
        sides=sides,
        carry_before=carry_before,
        carry_after=carry_after,
    )


def game_winner(target: int, totals: Sequence[int]) -> tuple[int | None, bool]:
    """Which side won a game after a complete hand, and whether an extra hand must break a tie.

    The target is checked only after a complete hand. One side at the target or above wins; of
    several, the highest total wins; equal highest totals play another normal hand (no lottery).
    """
    reached = [side for side, total in enumerate(totals) if total >= target]
    if not reached:
        return None, False
    best = max(totals[side] for side in reached)
    leaders = [side for side in reached if totals[side] == best]
    if len(leaders) == 1:
        return leaders[0], False
    return None, True


def match_winner(profile: Profile, totals: Sequence[int]) -> tuple[int | None, bool]:
    """``game_winner`` at the profile's target (a match of one game)."""
    return game_winner(profile.target, totals)
