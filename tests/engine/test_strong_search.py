"""The strong search's parts against the rules: the worlds it deals from a seat's view, the hand
it plays and scores in a rollout, its rollout policy, and how it breaks ties.

The rollout's model of a hand (``strong.World``, ``play_move``, ``rollout_value``) is checked
move by move against ``apply`` on random deals of every rule system: the same plays leave the
same hands, floor and stock, and the finished hand's value is the one the engine's scoring
gives. A search that plays the engine's own rules must keep passing these."""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from basra.engine import (
    CARDS,
    ERAM,
    RULE_SYSTEMS,
    Card,
    HandScored,
    Phase,
    Play,
    Profile,
    State,
    apply,
    match_profile,
    new_match,
    strong,
    view,
)
from basra.engine.bots import cards_gone, choose, greedy_play, random_play
from basra.engine.cards import mask_of, parse_cards
from basra.engine.game import legal_plans, legal_plays
from basra.engine.plans import Plan
from tests.engine.builders import position
from tests.profiles import examples

CONFIGS = [
    (name, seats, shown)
    for name, system in RULE_SYSTEMS.items()
    for seats in system.seat_counts
    for shown in ((False, True) if seats in system.bottom_card_seats else (False,))
]
"""Every rule system at every seat count, with the every-seat bottom card option where it
exists."""


def config_id(config: tuple[str, int, bool]) -> str:
    name, seats, shown = config
    return f"{name}-{seats}" + ("-bottom-shown" if shown else "")


class NoEpsilon(random.Random):
    """A generator whose draws never fall in the rollout policy's random share: the policy then
    plays its greedy move every time."""

    def getrandbits(self, k: int, /) -> int:
        # The policy's draw below 100 (7 bits) gets 99, never below EPSILON_PERCENT; any other
        # draw gets 0, which is below every bound.
        return 99 if k == 7 else 0


def after_plays(seed: int, steps: int, profile: Profile) -> tuple[State, int]:
    """The state ``steps`` random plays into the first hand, and the cards seen leaving play."""
    state, events = new_match(seed, profile)
    seen = list(events)
    rng = random.Random(seed)
    for _ in range(steps % profile.plays_per_hand):
        state, events = apply(state, random_play(state, rng))
        seen.extend(events)
    return state, cards_gone(seen)


def hidden_of(world: strong.World, seat: int) -> tuple[list[int], int]:
    """The other seats' hands of a world (by seat, the seat's own as 0) and its stock, as sets."""
    hands = [0 if s == seat else world.hands[s] for s in range(len(world.hands))]
    return hands, mask_of(world.stock)


def shown_to(state: State, seat: int) -> int:
    """Every card the seat's view shows: its hand, the floor, the captured scoring cards, the
    last play and its captures, and the bottom card where the seat sees it."""
    seat_view = view(state, seat)
    shown = mask_of(seat_view.hand) | mask_of(seat_view.floor)
    shown |= mask_of(c for pile in seat_view.captured_specials for c in pile)
    if seat_view.last_play is not None:
        shown |= 1 << int(seat_view.last_play.card) | mask_of(seat_view.last_play.captured)
    if seat_view.bottom_card is not None:
        shown |= 1 << int(seat_view.bottom_card)
    return shown


# The worlds.


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
@pytest.mark.parametrize("memory", [False, True], ids=["no-memory", "memory"])
def test_worlds_deal_only_unseen_cards_and_every_unseen_scoring_card(
    config: tuple[str, int, bool], memory: bool
) -> None:
    """Each world gives the other hands their sizes and the stock its size, from cards the seat
    has not seen (the view, the last play's captures, and the remembered captures when given);
    every scoring card not shown is dealt, to another hand or the stock."""
    name, seats, shown_option = config
    profile = match_profile(name, seats, bottom_card_shown=shown_option)
    scoring = mask_of(c for c in CARDS if profile.points.points[c])
    checked = 0
    for seed in range(12):
        state, gone = after_plays(seed, 3 + seed * 5, profile)
        if state.last_play is None or not state.last_play.captured:
            continue  # only positions just after a capture, whose cards the view shows
        seat = state.turn
        seat_view = view(state, seat)
        sampler = strong.Sampler(seat_view, profile, gone if memory else 0)
        shown = shown_to(state, seat) | (gone if memory else 0)
        for draw in range(8):
            world = sampler.sample(random.Random(draw))
            hands, stock = hidden_of(world, seat)
            dealt = stock
            for s in range(seats):
                if s != seat:
                    assert hands[s].bit_count() == seat_view.hand_sizes[s]
                    assert not dealt & hands[s], "a card dealt twice"
                    dealt |= hands[s]
            assert len(world.stock) == seat_view.stock_size
            assert world.hands[seat] == mask_of(seat_view.hand)
            bottom = seat_view.bottom_card
            visible_bottom = 0 if bottom is None else 1 << int(bottom)
            assert not dealt & shown & ~visible_bottom, "a world deals a card the seat has seen"
            assert scoring & ~shown & ~dealt == 0, "an unseen scoring card left out of the deal"
        checked += 1
    assert checked >= 3


def test_worlds_spread_the_unseen_cards_at_random_over_the_other_hands_and_the_stock() -> None:
    """Four seats, each for themself, mid-hand, no memory: over many worlds every unseen scoring
    card lands in each other hand and in the stock, and every other unseen card is dealt in
    some worlds and left out (among the cards captured unseen) in others."""
    profile = match_profile("persian", 4)
    scoring = mask_of(c for c in CARDS if profile.points.points[c])
    state, _ = after_plays(8, 9, profile)
    seat = state.turn
    seat_view = view(state, seat)
    sampler = strong.Sampler(seat_view, profile, 0)
    unseen = mask_of(CARDS) & ~shown_to(state, seat)
    places: dict[int, set[int | None]] = {c: set() for c in range(len(CARDS)) if unseen >> c & 1}
    others = [s for s in range(4) if s != seat]
    stock_place = -1
    rng = random.Random(8)
    for _ in range(400):
        hands, stock = hidden_of(sampler.sample(rng), seat)
        for card, seen_at in places.items():
            at: list[int | None] = [s for s in others if hands[s] >> card & 1]
            if not at:
                at = [stock_place] if stock >> card & 1 else [None]  # None: not dealt
            seen_at.update(at)
    assert state.stock
    assert state.captured != (0, 0, 0, 0)
    hidden_scoring = [c for c in places if scoring >> c & 1]
    assert hidden_scoring
    for card in hidden_scoring:
        assert places[card] == {*others, stock_place}, f"{CARDS[card]} lands in {places[card]}"
    for card in places:
        if not scoring >> card & 1:
            assert {*others, stock_place} <= places[card], CARDS[card]
            assert None in places[card], f"{CARDS[card]} is dealt in every world"


@pytest.mark.parametrize("shown_option", [False, True], ids=["dealer-sees", "bottom-shown"])
def test_a_bottom_card_the_seat_sees_stays_at_the_bottom_of_every_worlds_stock(
    shown_option: bool,
) -> None:
    """Egyptian: the dealer sees the stock's bottom card (every seat with the option); each
    world keeps it last in the stock, and no hand holds it."""
    profile = match_profile("egyptian", 2, bottom_card_shown=shown_option)
    checked = 0
    for seed in range(20):
        state, _ = after_plays(seed, seed % 7, profile)
        seat = state.turn
        seat_view = view(state, seat)
        bottom = seat_view.bottom_card
        if bottom is None:
            continue
        assert bottom == state.stock[-1]
        sampler = strong.Sampler(seat_view, profile, 0)
        for draw in range(10):
            world = sampler.sample(random.Random(draw))
            assert len(world.stock) == seat_view.stock_size
            assert world.stock[-1] == bottom
            assert bottom not in world.stock[:-1]
            assert not any(hand >> int(bottom) & 1 for hand in world.hands)
        checked += 1
    assert checked >= 5


# The rollout's hand against the rules.


def world_of(state: State, rng: random.Random) -> tuple[strong.World, int]:
    """The search's world of the seat to move, with the true hidden hands and stock put in (the
    rest, the public part, as the search builds it from the view), and the carry it scores."""
    seat = state.turn
    sampler = strong.Sampler(view(state, seat), state.profile, 0)
    world = sampler.sample(rng)
    for s in range(state.seats):
        world.hands[s] = mask_of(state.hands[s])
    world.stock = state.stock
    return world, sampler.carry


def plan_of(state: State, play: Play) -> Plan | None:
    return legal_plans(state, play.card)[play.plan - 1] if play.plan else None


def assert_same_hand(world: strong.World, state: State) -> None:
    assert world.hands == [mask_of(h) for h in state.hands]
    assert world.floor == mask_of(state.floor)
    assert world.stock == state.stock
    assert world.turn == state.turn
    assert world.captured == [m.bit_count() for m in state.captured]
    assert world.basra_points == list(state.basra_points)


def play_both_to_the_end(
    state: State, choose_play: random.Random | None = None
) -> tuple[strong.World, int, HandScored, State]:
    """The rest of the hand played in the engine and, play for play, in the search's world:
    each play a random legal one (``choose_play``) or greedy's. The world before its scoring,
    the carry the search scores it with, and the engine's scoring of the hand."""
    world, carry = world_of(state, random.Random(0))
    assert_same_hand(world, state)
    while True:
        play = greedy_play(state) if choose_play is None else choose_play.choice(legal_plays(state))
        strong.play_move(world, state.profile, int(play.card), plan_of(state, play))
        state, events = apply(state, play)
        scored = [e for e in events if isinstance(e, HandScored)]
        if scored:
            return world, carry, scored[0], state
        assert_same_hand(world, state)


def assert_scored_as_the_rules_do(
    world: strong.World, profile: Profile, carry: int, scored: HandScored
) -> None:
    """For every side: the rollout's value of the finished hand is that side's points minus the
    best other side's, as the engine scored them (majority and carry, specials, basras, the
    leftover floor)."""
    totals = scored.score.totals
    for side in range(len(totals)):
        best_other = max(t for s, t in enumerate(totals) if s != side)
        value = strong.rollout_value(world.copy(), profile, side, carry, random.Random(1))
        assert value == totals[side] - best_other, (side, totals)


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
@settings(max_examples=examples(25), deadline=None)
@given(
    seed=st.integers(0, 2**32),
    steps=st.integers(0, 51),
    carried=st.integers(0, 2),
    plays=st.randoms(use_true_random=False),
)
def test_a_rollout_plays_and_scores_a_hand_as_the_rules_do(
    config: tuple[str, int, bool], seed: int, steps: int, carried: int, plays: random.Random
) -> None:
    """Property over random deals of every rule system: from any point of a hand, the search's
    world played with the engine's plays keeps the engine's hands, floor, stock, turn, captured
    counts and basra points (deals included), and its value of the finished hand, for every
    side, is the engine's hand totals: the side's minus the best other side's, with a carry of
    none, one or two majorities standing."""
    name, seats, shown = config
    profile = match_profile(name, seats, bottom_card_shown=shown)
    state, _ = after_plays(seed, steps, profile)
    state = dataclasses.replace(state, carry=carried * profile.majority_points)
    world, carry, scored, _ = play_both_to_the_end(state, plays)
    assert carry == state.carry
    assert_scored_as_the_rules_do(world, profile, carry, scored)


def last_plays(
    profile: Profile,
    hands: list[str],
    floor: str,
    counts: list[int],
    *,
    last_capturer: int,
    carry: int = 0,
) -> State:
    """The last plays of a hand (empty stock): ``hands`` and ``floor`` as given, and the other
    cards captured already, ``counts[side]`` by each side (in deck order)."""
    placed = mask_of(c for text in [*hands, floor] for c in parse_cards(text))
    rest = [c for c in CARDS if not placed >> int(c) & 1]
    assert sum(counts) == len(rest)
    piles, at = [], 0
    for n in counts:
        piles.append(" ".join(str(c) for c in rest[at : at + n]))
        at += n
    return position(
        hands,
        floor,
        turn=0,
        captured=piles,
        last_capturer=last_capturer,
        carry=carry,
        profile=profile,
    )


@dataclasses.dataclass(frozen=True)
class Edge:
    """The last plays of a hand set up to reach one scoring rule (see ``last_plays``), and each
    side's cards at the end when the case depends on them."""

    profile: Profile
    hands: list[str]
    floor: str
    counts: list[int]
    last_capturer: int
    carry: int = 0
    cards: list[int] | None = None


PERSIAN_3 = match_profile("persian", 3)
EDGES = {
    # AD takes AH last; the leftover QC goes to its side, whose 24 cards become exactly 27.
    "majority-at-27": Edge(ERAM, ["QC", "AD"], "AH", [25, 24], 1, cards=[25, 27]),
    "majority-at-27-with-a-carry": Edge(ERAM, ["QC", "AD"], "AH", [25, 24], 1, 30, [25, 27]),
    # The same with 23 before: 26 each, a tie that scores no majority and carries.
    "tie-at-26": Edge(ERAM, ["QC", "AD"], "AH", [26, 23], 1, 30, [26, 26]),
    # 5C takes 5H, then seat 1 trails last: the leftover AS QD goes to the last capturer (seat
    # 0, who captured now), not to the seat that played last.
    "leftover-to-the-last-capturer": Edge(ERAM, ["5C", "QD"], "5H AS", [23, 25], 1, cards=[27, 25]),
    # Nobody captures in the last plays: the leftover goes to the seat that captured before.
    "leftover-to-an-earlier-capturer": Edge(
        ERAM, ["QC", "KD"], "5H AS", [25, 23], 1, cards=[25, 27]
    ),
    # A 7 sweeping 3C 4S is a basra worth twice the card in jordanian (14).
    "basra-by-the-card": Edge(match_profile("jordanian", 2), ["7H", "KD"], "3C 4S", [20, 28], 0),
    # Three sides: each side's value is against the best of the two others.
    "three-sides": Edge(PERSIAN_3, ["5C", "KD", "QH"], "5H", [20, 12, 16], 2),
    # Two of three sides share the most cards: nobody takes the majority.
    "three-sides-tied": Edge(
        PERSIAN_3, ["5C", "KD", "QH"], "5H", [16, 20, 12], 2, cards=[20, 20, 12]
    ),
}


@pytest.mark.parametrize("name", EDGES, ids=list(EDGES))
def test_a_rollout_scores_the_edges_of_a_hand_as_the_rules_do(name: str) -> None:
    """The scoring rules a random hand rarely lands on, each set up on purpose: the majority's
    threshold itself, a carried majority, a tie, the leftover floor, a basra's value by the card,
    three sides."""
    edge = EDGES[name]
    state = last_plays(
        edge.profile,
        edge.hands,
        edge.floor,
        edge.counts,
        last_capturer=edge.last_capturer,
        carry=edge.carry,
    )
    world, carry, scored, _ = play_both_to_the_end(state)
    assert carry == edge.carry
    if edge.cards is not None:
        assert [s.cards for s in scored.score.sides] == edge.cards
    if name == "basra-by-the-card":
        assert [s.basra_points for s in scored.score.sides] == [14, 0]
    if name == "three-sides":
        assert len(set(scored.score.totals)) == 3, scored.score.totals
    assert_scored_as_the_rules_do(world, edge.profile, carry, scored)


# The policies and the choice.


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_the_rollout_policy_and_the_searchs_first_move_are_greedys_choice(
    config: tuple[str, int, bool],
) -> None:
    """Over positions of whole random hands: the rollout policy's move (outside its random
    share) and the first of the search's moves (the one ties go to) are ``greedy_play``'s."""
    name, seats, shown = config
    profile = match_profile(name, seats, bottom_card_shown=shown)
    trails = 0
    for seed in range(4):
        state, _ = new_match(seed, profile)
        rng = random.Random(seed)
        while state.phase is Phase.PLAYING:
            expected = greedy_play(state)
            world, _ = world_of(state, random.Random(seed))
            card, plan = strong.policy_move(world, profile, NoEpsilon())
            assert (CARDS[card], 0 if plan is None else plan.id) == (
                expected.card,
                expected.plan or 0,
            )
            first = strong.root_moves(view(state, state.turn), profile)[0]
            assert (first.card, first.plan_id) == (expected.card, expected.plan or 0)
            trails += expected.trail
            state, _ = apply(state, random_play(state, rng))
    assert trails > 0


@pytest.mark.parametrize(
    ("hand", "trailed"),
    [
        ("AC 9H", "9H"),  # the ace is worth a point, the nine none: points before the value
        ("10D AS 2H", "2H"),  # 3, 1 and 0 points
        ("9H 3D", "3D"),  # no points either: the lower value
        ("9H KD 3D", "KD"),  # a king has no value in sums
    ],
)
def test_greedy_and_the_rollout_policy_trail_the_card_worth_least(hand: str, trailed: str) -> None:
    """Nothing captures on QS 8C: every level that plays greedily trails the card worth least
    to the opponent, its special points first, then its value in sums."""
    other = " ".join(["4C", "5C", "6C"][: len(hand.split())])
    state = position([hand, other], "QS 8C", turn=0)
    expected = Play(0, Card.parse(trailed), trail=True)
    assert all(not legal_plans(state, c) for c in state.hands[0])
    assert greedy_play(state) == expected
    assert choose("greedy", view(state, 0), ERAM, random.Random(0)) == (expected.card, 0)
    world, _ = world_of(state, random.Random(0))
    assert strong.policy_move(world, ERAM, NoEpsilon()) == (int(expected.card), None)
    assert strong.root_moves(view(state, 0), ERAM)[0].card == expected.card


def test_the_search_breaks_a_tie_for_greedys_choice() -> None:
    """The last four plays, every other card captured by seat 0's side and remembered, so the
    opponent's KH KS are known: whichever queen seat 0 trails, the other takes it and a king
    takes the other king, so both moves are worth the same in every world. The search plays
    greedy's choice, the QC (the lower card), though the hand holds the QD first."""
    state = position(["QD QC", "KH KS"], "5C", turn=0, last_capturer=0)
    gone = state.captured[0]
    moves = strong.root_moves(view(state, 0), ERAM)
    assert [m.card for m in moves] == [Card.parse("QC"), Card.parse("QD")]
    expected = greedy_play(state)
    assert expected == Play(0, Card.parse("QC"), trail=True)
    for seed in range(5):
        card, plan = choose("strong", view(state, 0), ERAM, random.Random(seed), gone=gone)
        assert (card, plan) == (expected.card, 0)
