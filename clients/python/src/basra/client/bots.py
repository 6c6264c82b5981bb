"""Bot policies over ListPlans answers: the engine's own policy, for programs that see only
what the service tells a seat."""

from __future__ import annotations

import random
from collections.abc import Sequence

from basra.client import cards
from basra.engine import Plan
from basra.engine.bots import greedy_choice as engine_greedy_choice
from basra.engine.cards import mask_of
from basra.v1 import game_pb2


def _plans(option: game_pb2.CardPlans) -> tuple[Plan, ...]:
    return tuple(
        Plan(
            id=p.id,
            captures=tuple(captures := [cards.from_pb(c) for c in p.captures]),
            basra=p.basra,
            sweep=p.sweep,
            mask=mask_of(captures),
        )
        for p in option.plans
    )


def greedy_choice(options: Sequence[game_pb2.CardPlans]) -> tuple[game_pb2.Card, int]:
    """The greedy bot's play among ListPlans' ``cards``: (card, plan id; 0 trails).

    The engine's policy (``basra.engine.bots.greedy_choice``): a basra first, then the most
    special points, then the most cards; when nothing captures, the card worth least trails.
    """
    by_card = {cards.from_pb(o.card): o for o in options}
    card, plan_id = engine_greedy_choice((card, _plans(o)) for card, o in by_card.items())
    return by_card[card].card, plan_id


def random_choice(
    options: Sequence[game_pb2.CardPlans], rng: random.Random
) -> tuple[game_pb2.Card, int]:
    """A uniformly random card, then a uniformly random plan of it (0 when it trails)."""
    pick = rng.choice(options)
    return pick.card, rng.randint(1, len(pick.plans)) if pick.plans else 0
