"""Properties over random play, for every rule system at every seat count it allows:
conservation, the scoring identities, sides' piles, private hands, and rejected plays."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from basra.engine import (
    ERAM,
    RULE_SYSTEMS,
    BasraError,
    CardPlayed,
    Event,
    FloorCollected,
    GameEnded,
    HandScored,
    Phase,
    Play,
    Profile,
    State,
    apply,
    deal_next_hand,
    encode,
    match_profile,
    new_match,
    view,
)
from basra.engine.cards import ALL_CARDS_MASK, CARDS, DECK_SIZE, mask_of
from basra.engine.game import legal_plans, legal_plays
from tests.engine.reference import (
    reference_basra_value,
    reference_fixed_total,
    reference_majority,
    reference_side,
    reference_special_points,
)
from tests.profiles import examples

CONFIGS = [
    (name, seats, rubber)
    for name, system in RULE_SYSTEMS.items()
    for seats in system.seat_counts
    for rubber in ((False, True) if system.rubber else (False,))
]
"""Every rule system at every seat count it allows (with and without its rubber)."""


def config_id(config: tuple[str, int, bool]) -> str:
    name, seats, rubber = config
    return f"{name}-{seats}" + ("-rubber" if rubber else "")


def assert_conserved(state: State) -> None:
    """The 52 cards are each in exactly one place: a hand, the floor, the stock or a pile."""
    piles = [mask_of(h) for h in state.hands] + [mask_of(state.floor), mask_of(state.stock)]
    piles += state.captured
    assert sum(p.bit_count() for p in piles) == DECK_SIZE
    union = 0
    for p in piles:
        union |= p
    assert union == ALL_CARDS_MASK


def check_hand_points(scored: HandScored, carry_before: int, rules: str = "eram") -> None:
    """VARIANTS.md "What every profile must keep": a hand's points plus the change in the carry
    are the profile's fixed total (43; lobashev 16, or 13 when tied) plus its basra points."""
    score = scored.score
    basra_points = sum(s.basra_points for s in score.sides)
    cards = [s.cards for s in score.sides]
    tied = cards.count(max(cards)) > 1
    carry_change = score.carry_after - carry_before
    assert sum(score.totals) + carry_change == reference_fixed_total(rules, tied) + basra_points
    assert sum(cards) == DECK_SIZE


class Witness:
    """An independent account of a match from its events alone: each side's pile, basra points
    and the carry, to check the engine's state and scores against."""

    def __init__(self, rules: str, seats: int) -> None:
        self.rules, self.seats = rules, seats
        self.sides = len({reference_side(rules, seats, s) for s in range(seats)})
        self.carry = 0
        self.new_hand()

    def new_hand(self) -> None:
        self.piles: list[set[int]] = [set() for _ in range(self.sides)]
        self.basra_points = [0] * self.sides

    def see(self, events: tuple[Event, ...]) -> None:
        for event in events:
            if isinstance(event, CardPlayed) and event.captured:
                side = reference_side(self.rules, self.seats, event.seat)
                self.piles[side] |= {*event.captured, event.card}
                if event.basra:
                    expected = reference_basra_value(self.rules, event.card)
                    assert event.basra_points == expected
                    self.basra_points[side] += expected
            elif isinstance(event, FloorCollected) and event.seat is not None:
                self.piles[reference_side(self.rules, self.seats, event.seat)] |= set(event.cards)
            elif isinstance(event, HandScored):
                self.check_score(event)
                self.carry = event.score.carry_after
                self.new_hand()
            elif isinstance(event, GameEnded):
                self.carry = 0  # each game of a rubber starts with no carry

    def check_score(self, scored: HandScored) -> None:
        check_hand_points(scored, self.carry, self.rules)
        counts = [len(p) for p in self.piles]
        majority, carry_after = reference_majority(self.rules, counts, self.carry)
        for side, s in enumerate(scored.score.sides):
            assert s.cards == counts[side]
            assert s.majority + s.carry == majority[side]
            pile = [CARDS[c] for c in self.piles[side]]
            assert s.specials == reference_special_points(pile)
            assert s.basra_points == self.basra_points[side]
        assert scored.score.carry_after == carry_after

    def check_state(self, state: State) -> None:
        """Sides' piles partition the captured cards, and match what the events captured."""
        if state.phase is Phase.PLAYING:
            assert [{CARDS[i] for i in range(52) if m >> i & 1} for m in state.captured] == [
                set(p) for p in self.piles
            ]
        union = 0
        for pile in state.captured:
            assert not union & pile
            union |= pile
        for seat in range(state.seats):
            seen = view(state, seat)
            assert seen.hand == state.hands[seat]
            others = {c for s, h in enumerate(state.hands) if s != seat for c in h}
            shown = {*seen.hand, *seen.floor, *(c for p in seen.captured_specials for c in p)}
            if seen.bottom_card is not None:
                shown.add(seen.bottom_card)
            if seen.last_play is not None:
                shown |= {seen.last_play.card, *seen.last_play.captured}
            assert not others & shown, "a seat's view holds another seat's card"
            text = repr(seen)
            assert not any(f"Card.parse('{c}')" in text for c in others)


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
@settings(max_examples=examples(8), deadline=None)
@given(seed=st.integers(0, 2**64 - 1), choices=st.randoms(use_true_random=False))
def test_every_step_conserves_cards_partitions_piles_hides_hands_and_adds_up(
    config: tuple[str, int, bool], seed: int, choices: random.Random
) -> None:
    name, seats, rubber = config
    state, events = new_match(seed, match_profile(name, seats, rubber=rubber))
    witness = Witness(name, seats)
    witness.see(events)
    while state.phase is not Phase.MATCH_OVER and state.hand_number <= 2:
        if state.phase is Phase.HAND_OVER:
            state, events = deal_next_hand(state)
        else:
            state, events = apply(state, choices.choice(legal_plays(state)))
        witness.see(events)
        assert_conserved(state)
        witness.check_state(state)


def play_strategy(seats: int) -> st.SearchStrategy[Play]:
    return st.builds(
        Play,
        seat=st.integers(-1, seats),
        card=st.sampled_from(CARDS),
        plan=st.none() | st.integers(-2, 14),
        trail=st.booleans(),
    )


def check_legal_or_rejected_without_a_trace(state: State, play: Play) -> None:
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


@settings(max_examples=examples(400), deadline=None)
@given(seed=st.integers(0, 2**16), steps=st.integers(0, 47), play=play_strategy(2))
def test_any_play_is_either_legal_or_rejected_without_a_trace(
    seed: int, steps: int, play: Play
) -> None:
    state = _after(seed, steps, ERAM)
    check_legal_or_rejected_without_a_trace(state, play)


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
@settings(max_examples=examples(60), deadline=None)
@given(seed=st.integers(0, 2**16), steps=st.integers(0, 47), data=st.data())
def test_any_play_in_any_profile_is_either_legal_or_rejected_without_a_trace(
    config: tuple[str, int, bool], seed: int, steps: int, data: st.DataObject
) -> None:
    name, seats, rubber = config
    profile = match_profile(name, seats, rubber=rubber)
    state = _after(seed, steps % profile.plays_per_hand, profile)
    check_legal_or_rejected_without_a_trace(state, data.draw(play_strategy(seats), label="play"))


def _after(seed: int, steps: int, profile: Profile) -> State:
    state, _ = new_match(seed, profile)
    rng = random.Random(seed)
    for _ in range(steps):
        state, _ = apply(state, rng.choice(legal_plays(state)))
    return state


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_every_kind_of_play_of_some_positions_is_legal_or_rejected_without_a_trace(
    config: tuple[str, int, bool],
) -> None:
    """The cases the random plays above rarely draw, each made on purpose: every legal play
    (accepted), each card of the hand unnamed (one plan: accepted; several: PLAN_REQUIRED),
    declared a trail (refused when it can capture), with a plan past its last, and out of turn."""
    name, seats, rubber = config
    profile = match_profile(name, seats, rubber=rubber)
    kinds: set[str] = set()
    positions = 0
    for seed in range(300):
        if positions >= 20 and len(kinds) == 3:
            break
        for steps in (0, 5, 17, 30):
            state = _after(seed, steps % profile.plays_per_hand, profile)
            seat = state.turn
            counts = {card: len(legal_plans(state, card)) for card in state.hands[seat]}
            new_kinds = {f"plans-{min(n, 2)}" for n in counts.values()} - kinds
            if positions >= 20 and not new_kinds:
                continue
            kinds |= new_kinds
            positions += 1
            plays = list(legal_plays(state))
            for card, count in counts.items():
                plays += [
                    Play(seat, card),
                    Play(seat, card, trail=True),
                    Play(seat, card, count + 1),
                    Play((seat + 1) % seats, card),
                ]
            for play in plays:
                check_legal_or_rejected_without_a_trace(state, play)
    assert kinds == {"plans-0", "plans-1", "plans-2"}, "cards with no, one and several plans"


@pytest.mark.parametrize(
    "config", [c for c in CONFIGS if c[2]] + [("eram", 2, False)], ids=config_id
)
def test_whole_matches_conserve_cards_and_add_up_through_every_hand_and_game(
    config: tuple[str, int, bool],
) -> None:
    """The property above stops after two hands, where a game is rarely won: whole matches
    (rubbers included, whose games each start with no carry) go to their end, with the same
    witness checking every hand's score."""
    name, seats, rubber = config
    state, events = new_match(3, match_profile(name, seats, rubber=rubber))
    witness = Witness(name, seats)
    witness.see(events)
    rng = random.Random(3)
    seen: set[str] = set()
    while state.phase is not Phase.MATCH_OVER:
        if state.phase is Phase.HAND_OVER:
            state, events = deal_next_hand(state)
        else:
            state, events = apply(state, rng.choice(legal_plays(state)))
        witness.see(events)
        seen |= {type(e).__name__ for e in events}
        if any(isinstance(e, HandScored) for e in events):
            assert_conserved(state)
            witness.check_state(state)
    assert "MatchEnded" in seen
    if rubber:
        assert "GameEnded" in seen
