"""Properties over random play: conservation, scoring identities, and rejected plays."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from basra.engine import (
    BasraError,
    CardPlayed,
    HandScored,
    Phase,
    Play,
    State,
    apply,
    deal_next_hand,
    encode,
    new_match,
)
from basra.engine.cards import ALL_CARDS_MASK, CARDS, DECK_SIZE, mask_of
from basra.engine.game import legal_plans, legal_plays
from tests.profiles import examples


def assert_conserved(state: State) -> None:
    """The 52 cards are each in exactly one place: a hand, the floor, the stock or a pile."""
    piles = [mask_of(h) for h in state.hands] + [mask_of(state.floor), mask_of(state.stock)]
    piles += state.captured
    assert sum(p.bit_count() for p in piles) == DECK_SIZE
    union = 0
    for p in piles:
        union |= p
    assert union == ALL_CARDS_MASK


def check_hand_points(scored: HandScored, carry_before: int) -> None:
    """A hand distributes 43 points plus 10 per basra, plus the carry when it is released;
    a 26/26 tie moves its 30 into the carry instead."""
    score = scored.score
    basras = sum(s.basras for s in score.seats)
    assert sum(score.totals) + score.carry_after - carry_before == 43 + 10 * basras
    assert sum(s.cards for s in score.seats) == DECK_SIZE


@settings(max_examples=examples(60), deadline=None)
@given(seed=st.integers(0, 2**64 - 1), choices=st.randoms(use_true_random=False))
def test_every_step_conserves_cards_and_every_hand_adds_up(
    seed: int, choices: random.Random
) -> None:
    state, _ = new_match(seed)
    carry = 0
    while state.phase is not Phase.MATCH_OVER and state.hand_number <= 3:
        if state.phase is Phase.HAND_OVER:
            state, _ = deal_next_hand(state)
            continue
        plays = legal_plays(state)
        state, events = apply(state, choices.choice(plays))
        assert_conserved(state)
        for event in events:
            if isinstance(event, HandScored):
                check_hand_points(event, carry)
                carry = event.score.carry_after


play_strategy = st.builds(
    Play,
    seat=st.integers(-1, 2),
    card=st.sampled_from(CARDS),
    plan=st.none() | st.integers(-2, 14),
    trail=st.booleans(),
)


@settings(max_examples=examples(400), deadline=None)
@given(seed=st.integers(0, 2**16), steps=st.integers(0, 47), play=play_strategy)
def test_any_play_is_either_legal_or_rejected_without_a_trace(
    seed: int, steps: int, play: Play
) -> None:
    state, _ = new_match(seed)
    rng = random.Random(seed)
    for _ in range(steps):
        state, _ = apply(state, rng.choice(legal_plays(state)))
    before = encode(state)
    legal = legal_plays(state)
    try:
        after, events = apply(state, play)
    except BasraError:
        assert encode(state) == before
        plans = legal_plans(state, play.card)
        might_be_legal = play.seat == state.turn and play.card in state.hands[state.turn]
        assert not (might_be_legal and play.plan is None and not play.trail and len(plans) <= 1)
        assert Play(play.seat, play.card, play.plan, play.trail) not in legal
        return
    played = events[0]
    assert isinstance(played, CardPlayed)
    assert played.seat == state.turn
    assert any(p.card == play.card and (p.plan or 0) == played.plan for p in legal), (
        "an accepted play must be one of the legal plays"
    )
    assert_conserved(after)
