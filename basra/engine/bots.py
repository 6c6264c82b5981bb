"""Simple players for self-play, tests, benchmarks and demos. Pure: randomness is an argument."""

from __future__ import annotations

import random

from basra.engine.chance import below
from basra.engine.game import legal_plans
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
    table = state.profile.points.points
    best: tuple[tuple[int, int, int, int], Play] | None = None
    for card in state.hands[seat]:
        for plan in legal_plans(state, card):
            points = sum(table[c] for c in plan.captures) + table[card]
            key = (plan.basra, points, len(plan.captures), -card)
            if best is None or key > best[0]:
                best = (key, Play(seat, card, plan.id))
    if best is not None:
        return best[1]
    # Nothing captures: trail the card worth least to the opponent.
    card = min(state.hands[seat], key=lambda c: (table[c], c.value, c))
    return Play(seat, card, trail=True)
