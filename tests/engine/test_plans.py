"""Capture plans (RULES.md, "Capture plans" and "Basra"), each rule by name."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from basra.engine import Card, capture_plans, match_profile, parse_cards
from basra.engine.cards import CARDS, format_cards, mask_of
from basra.engine.plans import MAX_PLANS, plan_count
from tests.engine.reference import (
    OverBudgetError,
    every_plan,
    plans_by_order,
    reference_plans,
)
from tests.profiles import examples


def plans_text(floor: str, card: str) -> list[str]:
    """Plans as RULES.md's worked-example table writes them."""
    out = []
    for plan in capture_plans(parse_cards(floor), Card.parse(card)):
        flags = [f for f in ("basra", "sweep") if getattr(plan, f)]
        out.append(f"{plan.id}: {format_cards(plan.captures)}" + "".join(f" ({f})" for f in flags))
    return out


@pytest.mark.parametrize(
    ("floor", "card", "expected"),
    [
        ("4S 6H 10C 3D", "10H", ["1: 10C 4S 6H"]),
        ("3C 4D 5H 8S", "9C", ["1: 4D 5H"]),
        ("AS 2H 6D", "3C", ["1: AS 2H"]),
        ("AS 2H 6D", "9C", ["1: AS 2H 6D (basra)"]),
        ("AC 2H 3D 4S 6C", "7H", ["1: AC 3D 4S 6C", "2: AC 2H 4S"]),
        ("QS KH 5D", "QH", ["1: QS"]),
        ("QS", "QH", ["1: QS (basra)"]),
        ("QS 2D 3C", "7D", ["1: 2D 3C QS (sweep)"]),
        ("9S 8H", "7D", ["1: 8H 9S (basra) (sweep)"]),
        ("5H 5C", "JD", ["1: 5C 5H (sweep)"]),
        ("", "JS", []),
        ("QS KH 9D", "8C", []),
    ],
)
def test_rules_md_worked_examples(floor: str, card: str, expected: list[str]) -> None:
    assert plans_text(floor, card) == expected


def test_a_seven_of_diamonds_sweep_shows_its_cards_by_rank_with_no_rank_match_first() -> None:
    """The 7D takes the whole floor as one capture, not as a rank match: its cards are shown by
    rank and suit alone (a 2 is no rank match to bring forward, nor a 7)."""
    assert plans_text("5S 2D AC", "7D") == ["1: AC 2D 5S (basra) (sweep)"]
    assert plans_text("7S 2D AC", "7D") == ["1: AC 2D 7S (basra) (sweep)"]


def test_rule_empty_floor_every_card_trails_j_and_7d_included() -> None:
    assert all(capture_plans(0, card) == () for card in CARDS)


def test_rule_j_sweep_takes_the_whole_floor_and_is_never_a_basra() -> None:
    assert plans_text("QS KH 2D", "JC") == ["1: 2D QS KH (sweep)"]
    assert plans_text("5H", "JC") == ["1: 5H (sweep)"]


def test_rule_7d_basra_is_by_count_of_ten_or_fewer_not_by_sum() -> None:
    ten = "AC 2C 3C 4C 5C 6C 8C 9C 10C 9H"  # 10 cards, sum 57
    assert plans_text(ten, "7D")[0].endswith("(basra) (sweep)")
    eleven = ten + " 8H"
    assert plans_text(eleven, "7D")[0].endswith("(sweep)")
    assert "(basra)" not in plans_text(eleven, "7D")[0]


@pytest.mark.parametrize("face", ["QC", "KD"])
def test_rule_7d_sweep_with_a_q_or_k_on_the_floor_is_no_basra(face: str) -> None:
    assert "(basra)" not in plans_text(f"2C {face}", "7D")[0]


def test_rule_7d_sweep_with_a_jack_on_the_floor_is_still_a_basra_in_eram() -> None:
    assert plans_text("JC 2H", "7D") == ["1: 2H JC (basra) (sweep)"]


def test_egyptian_profile_7d_basra_is_by_sum_of_numbers() -> None:
    egyptian = match_profile("egyptian", 2)
    (sum_ten,) = capture_plans(parse_cards("3C 7H"), Card.parse("7D"), egyptian)
    (sum_eleven,) = capture_plans(parse_cards("4C 7H"), Card.parse("7D"), egyptian)
    (with_jack,) = capture_plans(parse_cards("2C JH"), Card.parse("7D"), egyptian)
    assert (sum_ten.basra, sum_eleven.basra, with_jack.basra) == (True, False, False)


def test_rule_other_sevens_are_number_cards() -> None:
    assert plans_text("3C 4D 7S", "7H") == ["1: 7S 3C 4D (basra)"]


def test_rule_q_and_k_take_by_rank_only() -> None:
    assert plans_text("QS QD KH 5D", "QH") == ["1: QD QS"]
    assert plans_text("QS 5D", "KH") == []


def test_rule_rank_matches_are_always_taken_and_never_in_sum_groups() -> None:
    # 5C is taken as a rank match on top of the groups A+4 and 2+3.
    assert plans_text("5C AS 4D 2C 3D", "5H") == ["1: 5C AS 2C 3D 4D (basra)"]
    # Every rank match at once, never one of them as a choice.
    assert plans_text("5C 5D 9H", "5H") == ["1: 5C 5D"]
    # Cards of another rank do form groups: 5+5 for a ten.
    assert plans_text("5C 5D", "10H") == ["1: 5C 5D (basra)"]


def test_rule_sum_groups_are_disjoint() -> None:
    # Two groups of 6 exist (2+4 and 2+4), but only one 2: each card is used once.
    assert plans_text("2C 4D 4H", "6S") == ["1: 2C 4D", "2: 2C 4H"]


def test_rule_family_of_groups_must_be_maximal() -> None:
    # 1+3 alone leaves 2+2 behind: not maximal; the only plan takes both groups.
    assert plans_text("AC 3C 2D 2H", "4S") == ["1: AC 2D 2H 3C (basra)"]


def test_rule_two_families_taking_the_same_cards_are_one_plan() -> None:
    # {A+3, A+3} and {A+3, A+3} with the aces swapped take the same four cards.
    assert plans_text("AC AD 3C 3D", "4H") == ["1: AC AD 3C 3D (basra)"]


def test_rule_order_more_cards_first() -> None:
    assert plans_text("AC 2H 3D 4S 6C", "7H") == ["1: AC 3D 4S 6C", "2: AC 2H 4S"]


def test_rule_order_then_more_points() -> None:
    # 2C (2 points) against 2D: equal size, the 2C plan comes first whatever the indexes.
    assert plans_text("2D 2C 8H", "10S") == ["1: 2C 8H", "2: 2D 8H"]


def test_rule_order_then_sorted_indexes_lexicographically() -> None:
    # 3+3+3 takes most; then three plans of 2 cards and 0 points, ordered by sorted indexes:
    # 3D+6C (5, 15) before 3H+6C (5, 28) before 3S+6C (5, 41).
    assert plans_text("3S 3H 3D 6C", "9C") == [
        "1: 3D 3H 3S",
        "2: 3D 6C",
        "3: 3H 6C",
        "4: 3S 6C",
    ]


def test_rule_at_most_twelve_plans_the_first_twelve_of_the_order() -> None:
    floor = parse_cards("AC AD AH AS 2C 2D 2H 2S 3C 3D 3H 3S 4C 4D 4H 4S 5C 5D 5H 5S 6C 6D 6H 6S")
    card = Card.parse("10H")
    plans = capture_plans(floor, card)
    assert len(plans) == MAX_PLANS
    assert [p.id for p in plans] == list(range(1, 13))
    keys = [
        (-len(p.captures), -sum(c.points for c in p.captures), sorted(p.captures)) for p in plans
    ]
    assert keys == sorted(keys)
    for plan in plans:
        assert_legal(list(floor), card, frozenset(plan.captures))


def assert_legal(floor: list[Card], card: Card, captured: frozenset[Card]) -> None:
    """The captured set is rank matches plus disjoint groups summing to the value, maximal."""
    rank_matches = {c for c in floor if c.rank == card.rank}
    assert rank_matches <= captured
    grouped = sorted((c.value for c in captured - rank_matches), reverse=True)
    assert sum(grouped) % card.value == 0
    assert partitions(grouped, card.value)
    left = [c.value for c in floor if c not in captured and 0 < c.value < card.value]
    reachable = {0}
    for v in left:
        reachable |= {r + v for r in reachable}
    assert card.value not in reachable, "another group was left on the floor"


def partitions(values: list[int], target: int) -> bool:
    if not values:
        return True
    first, rest = values[0], values[1:]
    for n in range(1, len(rest) + 1):
        for idx in _combinations(len(rest), n):
            if first + sum(rest[i] for i in idx) == target:
                remaining = [v for i, v in enumerate(rest) if i not in idx]
                if partitions(remaining, target):
                    return True
    return False


def _combinations(n: int, k: int) -> list[tuple[int, ...]]:
    from itertools import combinations

    return list(combinations(range(n), k))


def test_crafted_floors_answer_twelve_legal_plans_in_order() -> None:
    """Colluding players may build huge floors: still the best 12, every one legal."""
    rng = random.Random(5)
    numeric = [c for c in CARDS if 1 <= c.value <= 9]
    for _ in range(20):
        floor = rng.sample(numeric, 24)
        card = rng.choice([c for c in CARDS if c not in floor and c.value >= 7 and str(c) != "7D"])
        plans = capture_plans(floor, card)
        assert plans, "a 24-card small floor always holds a group"
        keys = [
            (-len(p.captures), -sum(c.points for c in p.captures), sorted(p.captures))
            for p in plans
        ]
        assert keys == sorted(keys)
        assert len(set(map(str, keys))) == len(keys)
        for plan in plans:
            assert_legal(floor, card, frozenset(plan.captures))


@settings(max_examples=examples(1500), deadline=None)
@given(st.data())
def test_plans_match_an_independent_brute_force_reading(data: st.DataObject) -> None:
    size = data.draw(st.integers(0, 11), label="floor size")
    pool = data.draw(st.sampled_from(["any", "small"]), label="pool")
    cards = [c for c in CARDS if pool == "any" or 1 <= c.value <= 6]
    floor = data.draw(st.lists(st.sampled_from(cards), unique=True, max_size=size), label="floor")
    card = data.draw(st.sampled_from([c for c in CARDS if c not in floor]), label="card")
    got = [(frozenset(p.captures), p.basra, p.sweep) for p in capture_plans(floor, card)]
    assert got == reference_plans(floor, card)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.sampled_from(CARDS), unique=True, max_size=20), st.sampled_from(CARDS))
def test_every_plan_is_legal_and_plans_are_distinct(floor: list[Card], card: Card) -> None:
    if card in floor:
        floor.remove(card)
    plans = capture_plans(floor, card)
    assert len({p.mask for p in plans}) == len(plans) <= MAX_PLANS
    for plan in plans:
        assert set(plan.captures) <= set(floor)
        assert plan.basra == (len(plan.captures) == len(floor)) or card in parse_cards(
            "7D JC JD JH JS"
        )
        if card.value and str(card) != "7D":
            assert_legal(floor, card, frozenset(plan.captures))


def offered(floor: list[Card], card: Card) -> list[tuple[frozenset[Card], bool, bool]]:
    return [(frozenset(p.captures), p.basra, p.sweep) for p in capture_plans(floor, card)]


def test_the_order_walk_agrees_with_the_literal_reading_on_small_floors() -> None:
    """The walk used on large floors is itself checked against reference_plans."""
    rng = random.Random(11)
    for _ in range(400):
        floor = rng.sample(CARDS, rng.randint(0, 10))
        card = rng.choice([c for c in CARDS if c not in floor])
        assert plans_by_order(floor, card, budget=10**7) == reference_plans(floor, card)


NUMBER_CARDS = [c for c in CARDS if 1 <= c.value <= 10 and str(c) != "7D"]
POOLS = {
    "small": [c for c in CARDS if 1 <= c.value <= 6],
    "numbers": [c for c in CARDS if 1 <= c.value <= 9],
    "any": list(CARDS),
}


@settings(max_examples=examples(200), deadline=None)
@given(st.data())
def test_the_plans_offered_on_large_floors_are_the_first_twelve_of_the_order(
    data: st.DataObject,
) -> None:
    """Floors of 10 to 30 cards, each compared with a walk of RULES.md's order itself; the walk
    is capped by the sets it may examine (a few floors exceed it and are drawn again), not by
    the floor's size."""
    pool = POOLS[data.draw(st.sampled_from(sorted(POOLS)), label="pool")]
    floor = data.draw(
        st.lists(st.sampled_from(pool), unique=True, min_size=10, max_size=30), label="floor"
    )
    card = data.draw(st.sampled_from([c for c in NUMBER_CARDS if c not in floor]), label="card")
    try:
        expected = plans_by_order(floor, card)
    except OverBudgetError:
        reject()
    assert offered(floor, card) == expected


CRAFTED = [
    # Every card of the small values: many sets of one size and equal points, told apart only by
    # their indexes (the k-best search must prune against its worst kept plan).
    ("AC AD AH AS 2C 2D 2H 2S 3C 3D 3H 3S 4C 4D 4H 4S", ["5C", "6D", "7H", "8S", "9C", "10H"]),
    ("2C 2D 2H 2S 3C 3D 3H 3S 4C 4D 4H 4S", ["6H", "8S", "10D", "7C", "9D"]),
    ("AC AD AH AS 2C 2D 2H 2S 3C 3D 3H 3S 4C 4D 4H 4S 5C 5D 5H 5S", ["6S", "9H", "10C"]),
    ("AD AH AS 3C 3D 3H 3S 5D 5H 5S 7C 7H 7S", ["8C", "10S", "6C", "4D"]),
    ("2D 2H 2S 4D 4H 4S 6D 6H 6S 8D 8H 8S", ["10S", "10H", "7D", "9C"]),
    ("AC AD AH AS 4C 4D 4H 4S 5C 5D 5H 5S 9D 9H 9S", ["10C", "6S", "9C"]),
    ("3C 3D 3H 3S 6C 6D 6H 6S 9C 9D 9H 9S 2D 2H", ["10D", "8H", "5C"]),
    ("AC 2C 3C 4C 5C 6C 8C 9C AD 2D 3D 4D 5D 6D 8D 9D AH 2H 3H 4H 5H", ["10S", "7S", "9S"]),
]


@pytest.mark.parametrize(("floor_text", "cards"), CRAFTED)
def test_crafted_floors_of_many_equal_values_offer_the_first_twelve_of_the_order(
    floor_text: str, cards: list[str]
) -> None:
    floor = list(parse_cards(floor_text))
    for text in cards:
        card = Card.parse(text)
        expected = plans_by_order(floor, card, budget=200_000)
        assert offered(floor, card) == expected, text
    assert any(len(plans_by_order(floor, Card.parse(t), 200_000)) == MAX_PLANS for t in cards)


@settings(max_examples=examples(400), deadline=None)
@given(st.data())
def test_plan_count_counts_every_plan_before_the_cap(data: st.DataObject) -> None:
    """plan_count says how many plans exist, the 12 offered and those left out."""
    pool = POOLS[data.draw(st.sampled_from(["small", "any"]), label="pool")]
    floor = data.draw(st.lists(st.sampled_from(pool), unique=True, max_size=11), label="floor")
    card = data.draw(st.sampled_from([c for c in CARDS if c not in floor]), label="card")
    expected = len(every_plan(floor, card))
    assert plan_count(floor, card) == expected
    assert plan_count(mask_of(floor), card) == expected  # a floor given as a mask
    assert len(capture_plans(floor, card)) == min(expected, MAX_PLANS)


def test_plan_count_on_a_floor_of_more_than_twelve_plans() -> None:
    floor = parse_cards("AC AD AH AS 2C 2D 2H 2S 3C 3D 3H 3S 4C 4D 4H 4S 5C 5D 5H 5S")
    card = Card.parse("6S")
    assert plan_count(floor, card) > MAX_PLANS == len(capture_plans(floor, card))
    assert plan_count(parse_cards("QS 9D"), Card.parse("8C")) == 0
    assert plan_count(parse_cards("QS 9D"), Card.parse("JC")) == 1
    assert plan_count([], Card.parse("7D")) == 0
