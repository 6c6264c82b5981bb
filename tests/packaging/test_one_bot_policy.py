"""One greedy policy: the client's choice from ListPlans answers is the engine bot's play."""

from __future__ import annotations

import random

import pytest

from basra.client import cards, greedy_choice
from basra.engine import Phase, Play, State, apply, deal_next_hand, legal_plans, new_match
from basra.engine.bots import greedy_play, random_play
from basra.v1 import game_pb2

# The engine's and the client's policies agree: in `make test` too (docs/testing.md).
pytestmark = pytest.mark.core


def list_plans(state: State) -> list[game_pb2.CardPlans]:
    """What ListPlans answers for the seat to move (every card of its hand, in hand order)."""
    return [
        game_pb2.CardPlans(
            card=cards.to_pb(card),
            plans=[
                game_pb2.Plan(id=p.id, captures=[cards.to_pb(c) for c in p.captures], basra=p.basra)
                for p in legal_plans(state, card)
            ],
        )
        for card in state.hands[state.turn]
    ]


def test_the_client_and_the_engine_bot_choose_the_same_play() -> None:
    rng = random.Random(5)
    compared = 0
    for seed in range(12):
        state, _ = new_match(seed)
        while state.phase is not Phase.MATCH_OVER and compared < 3000:
            if state.phase is Phase.HAND_OVER:
                state, _ = deal_next_hand(state)
                continue
            card, plan_id = greedy_choice(list_plans(state))
            expected = greedy_play(state)
            assert (cards.from_pb(card), plan_id) == (expected.card, expected.plan or 0)
            compared += 1
            play: Play = random_play(state, rng)  # wander through varied positions
            state, _ = apply(state, play)
    assert compared >= 1000
