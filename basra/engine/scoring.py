"""Scoring after every hand, and the end of the match (RULES.md, "Scoring", "End of the match")."""

from __future__ import annotations

from collections.abc import Sequence

from basra.engine.cards import DECK_SIZE
from basra.engine.profile import Profile
from basra.engine.state import HandScore, SeatHandScore


def score_hand(
    profile: Profile,
    *,
    hand: int,
    dealer: int,
    carry_before: int,
    cards: Sequence[int],
    specials: Sequence[int],
    basras: Sequence[int],
) -> HandScore:
    """Score one complete hand from each seat's captured-card count, special points and basras.

    Majority: a seat with 27 or more cards (and more than any other) scores 30 plus the carry,
    and the carry returns to 0. A shared top count with every card taken (26/26) scores no
    majority and adds 30 to the carry, which accumulates. Leftover cards that nobody took (nobody
    captured) are neither a majority nor a tie.
    """
    top = max(cards)
    leaders = [seat for seat, n in enumerate(cards) if n == top]
    majority_seat = leaders[0] if len(leaders) == 1 and top >= profile.majority_cards else None
    if majority_seat is not None:
        carry_after = 0
    elif len(leaders) > 1 and sum(cards) == DECK_SIZE:
        carry_after = carry_before + profile.majority_points
    else:
        carry_after = carry_before
    seats = tuple(
        SeatHandScore(
            cards=cards[seat],
            majority=profile.majority_points if seat == majority_seat else 0,
            carry=carry_before if seat == majority_seat else 0,
            specials=specials[seat],
            basras=basras[seat],
            basra_points=basras[seat] * profile.basra_points,
        )
        for seat in range(profile.seats)
    )
    return HandScore(
        hand=hand,
        dealer=dealer,
        seats=seats,
        carry_before=carry_before,
        carry_after=carry_after,
    )


def match_winner(profile: Profile, totals: Sequence[int]) -> tuple[int | None, bool]:
    """Who won after a complete hand, and whether an extra hand must break a tie.

    The target is checked only after a complete hand. One seat at the target or above wins; of
    several, the higher total wins; equal highest totals play another normal hand (no lottery).
    """
    reached = [seat for seat, total in enumerate(totals) if total >= profile.target]
    if not reached:
        return None, False
    best = max(totals[seat] for seat in reached)
    leaders = [seat for seat in reached if totals[seat] == best]
    if len(leaders) == 1:
        return leaders[0], False
    return None, True
