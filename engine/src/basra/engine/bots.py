"""Simple players for self-play, tests, benchmarks and demos. Pure: randomness is an argument."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

from basra.engine.cards import POINTS, Card
from basra.engine.chance import below
from basra.engine.game import legal_plans
from basra.engine.plans import Plan
from basra.engine.state import Play, State


def random_play(state: State, rng: random.Random) -> Play:
    """A uniformly random card of the seat to move, then a uniformly random plan of it."""
    seat = state.turn
    hand = state.hands[seat]
    # rng.choice and rng.randrange draw exactly these (chance.below), without random.py's frames.
    card = hand[below(rng, len(hand))]
    plans = legal_plans(state, card)
    if not plans:
        return Play(seat, card, trail=True)
    return Play(seat, card, below(rng, len(plans)) + 1)


def greedy_play(state: State) -> Play:
    """The play that takes the most: basra first, then points, then cards; else the lowest trail."""
    seat = state.turn
    options = [(card, legal_plans(state, card)) for card in state.hands[seat]]
    card, plan_id = greedy_choice(options, state.profile.points.points)
    return Play(seat, card, plan_id) if plan_id else Play(seat, card, trail=True)


def greedy_choice(
    options: Iterable[tuple[Card, Sequence[Plan]]], points: Sequence[int] = POINTS
) -> tuple[Card, int]:
    """The greedy policy over (card, its plans) pairs: (card, plan id), plan id 0 to trail.

    Basra first, then special points (the card's and the captured ones, from the point table
    ``points`` indexed by card), then cards taken, then the lower card; when nothing captures,
    the card worth least to the opponent trails. Clients of the service apply the same policy to
    ListPlans answers (``basra.client.greedy_choice``).
    """
    options = list(options)
    best: tuple[tuple[int, int, int, int], Card, int] | None = None
    for card, plans in options:
        for plan in plans:
            taken = sum(points[c] for c in plan.captures) + points[card]
            key = (plan.basra, taken, len(plan.captures), -card)
            if best is None or key > best[0]:
                best = (key, card, plan.id)
    if best is not None:
        return best[1], best[2]
    card = min((card for card, _ in options), key=lambda c: (points[c], c.value, c))
    return card, 0
