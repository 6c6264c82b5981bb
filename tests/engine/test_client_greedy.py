"""The Python client's greedy policy over ListPlans answers, against the policy as its
docstring and docs/bots.md state it: a basra first, then the most special points (the card's
and the captured ones), then the most cards, then the lower card; when nothing captures, the
card worth least trails, its special points first, then its value in sums."""

from __future__ import annotations

import pytest

from basra.client import cards, greedy_choice
from basra.v1 import game_pb2

Option = tuple[str, list[tuple[str, bool]]]
"""A card and its plans as (captured cards, basra), in the order the service offers them."""


def answer(options: list[Option]) -> list[game_pb2.CardPlans]:
    """ListPlans' ``cards`` for these options, plan ids 1..n in the given order."""
    return [
        game_pb2.CardPlans(
            card=cards.to_pb(card),
            plans=[
                game_pb2.Plan(
                    id=i,
                    captures=[cards.to_pb(c) for c in captured.split()],
                    basra=basra,
                    sweep=False,
                )
                for i, (captured, basra) in enumerate(plans, 1)
            ],
            trails=not plans,
        )
        for card, plans in options
    ]


CASES: dict[str, tuple[list[Option], tuple[str, int]]] = {
    # 5C takes the lone 5H, a basra, over 10S taking the 10D's 3 points.
    "a basra before points": (
        [("10S", [("10D", False)]), ("5C", [("5H", True)])],
        ("5C", 1),
    ),
    # AS and AH are 2 points in 2 cards; 9C's 4H 5S are 3 cards and no point.
    "points before cards": (
        [("9C", [("4H 5S", False)]), ("AS", [("AH", False)])],
        ("AS", 1),
    ),
    # The card's own points count: 2C (2 points) taking 2H over 6D taking AH 5S (1 point).
    "the card's own points": (
        [("6D", [("AH 5S", False)]), ("2C", [("2H", False)])],
        ("2C", 1),
    ),
    # No point either way: 9D takes two cards, 3C one.
    "cards before the lower card": (
        [("3C", [("3H", False)]), ("9D", [("4S 5H", False)])],
        ("9D", 1),
    ),
    # One card and no point each way: the lower card, 3C, whatever the order offered.
    "the lower card on a tie": (
        [("4D", [("4S", False)]), ("3C", [("3H", False)])],
        ("3C", 1),
    ),
    # Of one card's plans, the best by the same order, whatever its id: plan 2 holds the ace.
    "the best plan of a card": (
        [("7H", [("3D 4S", False), ("AC 6C", False)])],
        ("7H", 2),
    ),
    # Nothing captures: the ace is worth a point, the nine none.
    "a trail: points before the value": (
        [("AC", []), ("9H", [])],
        ("9H", 0),
    ),
    # Nothing captures and no point either way: the lower value, a king having none.
    "a trail: the lower value": (
        [("9H", []), ("3D", []), ("KD", [])],
        ("KD", 0),
    ),
    # A card that captures is played before any trail, even one worth nothing.
    "a capture before a trail": (
        [("KD", []), ("9S", [("4C 5D", False)])],
        ("9S", 1),
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_the_clients_greedy_policy_plays_by_its_stated_order(case: str) -> None:
    options, (card, plan_id) = CASES[case]
    for order in (options, options[::-1]):
        chosen, chosen_plan = greedy_choice(answer(order))
        assert (str(cards.from_pb(chosen)), chosen_plan) == (card, plan_id)
