"""Each rule system's differences against the independent reading of VARIANTS.md
(tests/engine/reference.py), by Hypothesis: the 7D criterion, majority ties and the carry, basra
values."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from basra.engine import (
    RULE_SYSTEMS,
    Card,
    CardPlayed,
    Play,
    apply,
    capture_plans,
    match_profile,
    parse_cards,
)
from basra.engine.cards import CARDS
from basra.engine.scoring import score_hand
from tests.engine.builders import position
from tests.engine.reference import reference_basra_value, reference_majority, reference_plans

NAMES = list(RULE_SYSTEMS)
SEVEN_OF_DIAMONDS = Card.parse("7D")


@settings(max_examples=1500, deadline=None)
@given(st.data())
def test_every_profiles_plans_match_the_independent_reading(data: st.DataObject) -> None:
    rules = data.draw(st.sampled_from(NAMES), label="rules")
    profile = match_profile(rules, RULE_SYSTEMS[rules].seat_counts[0])
    size = data.draw(st.integers(0, 11), label="floor size")
    pool = data.draw(st.sampled_from(["any", "small"]), label="pool")
    cards = [c for c in CARDS if pool == "any" or 1 <= c.value <= 6]
    floor = data.draw(st.lists(st.sampled_from(cards), unique=True, max_size=size), label="floor")
    seven_likely = data.draw(st.booleans(), label="play the 7D")
    others = [c for c in CARDS if c not in floor]
    card = (
        SEVEN_OF_DIAMONDS
        if seven_likely and SEVEN_OF_DIAMONDS in others
        else data.draw(st.sampled_from(others), label="card")
    )
    got = [(frozenset(p.captures), p.basra, p.sweep) for p in capture_plans(floor, card, profile)]
    assert got == reference_plans(floor, card, rules)


@settings(max_examples=600, deadline=None)
@given(st.data())
def test_majority_ties_and_the_carry_match_the_independent_reading(data: st.DataObject) -> None:
    rules = data.draw(st.sampled_from(NAMES), label="rules")
    seats = data.draw(st.sampled_from(RULE_SYSTEMS[rules].seat_counts), label="seats")
    profile = match_profile(rules, seats)
    # Cards per side summing to 52; ties are drawn often on purpose.
    if data.draw(st.booleans(), label="tie"):
        top = data.draw(st.integers(52 // profile.sides, 26), label="top")
        rest = 52 - 2 * top
        others = [rest // max(1, profile.sides - 2)] * (profile.sides - 2)
        if others:
            others[0] += rest - sum(others)
        cards = [top, top, *others] if not others or max(others) <= top else None
    else:
        cuts = sorted(
            data.draw(
                st.lists(
                    st.integers(0, 52), min_size=profile.sides - 1, max_size=profile.sides - 1
                ),
                label="cuts",
            )
        )
        cards = [b - a for a, b in zip([0, *cuts], [*cuts, 52], strict=True)]
    if cards is None or sum(cards) != 52:
        return
    carry_unit = 3 if rules == "lobashev" else 30
    carry = 0 if rules == "lobashev" else carry_unit * data.draw(st.integers(0, 4), label="ties")
    zeros = [0] * profile.sides
    score = score_hand(
        profile, hand=1, dealer=0, carry_before=carry, cards=cards, specials=zeros, basras=zeros
    )
    majority, carry_after = reference_majority(rules, cards, carry)
    assert [s.majority + s.carry for s in score.sides] == majority
    assert score.carry_after == carry_after


@settings(max_examples=400, deadline=None)
@given(rules=st.sampled_from(NAMES), card=st.sampled_from(CARDS))
def test_basra_values_match_the_independent_reading(rules: str, card: Card) -> None:
    if card.rank == 10:  # a J sweep is never a basra, in every profile
        return
    profile = match_profile(rules, RULE_SYSTEMS[rules].seat_counts[0])
    # A lone card the played card takes: the same rank in another suit (an ace for the 7D
    # sweep, which every 7D criterion counts as a basra; lobashev's 7D takes a 7).
    sweeping_seven = card == SEVEN_OF_DIAMONDS and rules != "lobashev"
    target = parse_cards("AC")[0] if sweeping_seven else CARDS[(card.suit + 1) % 4 * 13 + card.rank]
    fillers = [t for t in ("2S", "3S", "4S", "5S", "6S") if t not in (str(card), str(target))]
    hands = [str(card), *fillers[: profile.seats - 1]]
    state = position(hands, str(target), turn=0, profile=profile)
    _, events = apply(state, Play(0, card))
    played = events[0]
    assert isinstance(played, CardPlayed)
    assert played.basra
    assert played.basra_points == reference_basra_value(rules, card)
