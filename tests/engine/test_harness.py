"""The random-play harness: thousands of complete matches to a winner, invariants every step."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from basra.engine import (
    ERAM,
    RULE_SYSTEMS,
    CardPlayed,
    CardsDealt,
    GameEnded,
    HandScored,
    HandStarted,
    MatchEnded,
    Phase,
    Play,
    Profile,
    apply,
    deal_next_hand,
    match_profile,
    new_match,
)
from basra.engine.bots import greedy_play, random_play
from basra.engine.cards import Card
from basra.engine.game import legal_plays
from basra.engine.profile import PointTable
from tests.engine.builders import position
from tests.engine.test_properties import CONFIGS, assert_conserved, check_hand_points, config_id

MATCHES = 2000


def play_match(seed: int, rng: random.Random, profile: Profile = ERAM, greedy: bool = False) -> int:
    """Play one match to its winner, checking invariants; returns the number of hands."""
    state, events = new_match(seed, profile)
    carry = 0
    hands = 0
    plays_in_hand = 0
    game_won = False
    while True:
        for event in events:
            if isinstance(event, HandStarted):
                plays_in_hand = 0
                if game_won:  # a rubber's next game starts at 0 with no carry
                    assert state.scores == (0,) * profile.sides
                    assert (state.carry, state.history, state.game_ended) == (0, (), False)
                    game_won = False
            elif isinstance(event, CardPlayed):
                plays_in_hand += 1
                assert event.basra <= bool(event.captured)
            elif isinstance(event, CardsDealt):
                assert event.cards_each == profile.cards_per_deal
            elif isinstance(event, HandScored):
                hands += 1
                assert plays_in_hand == profile.plays_per_hand
                if profile.name in RULE_SYSTEMS:
                    check_hand_points(event, carry, profile.name)
                carry = event.score.carry_after
                # A won game's totals stay shown until the next game's first deal.
                assert event.totals == state.scores
            elif isinstance(event, GameEnded):
                assert event.totals[event.winner] == max(event.totals)
                assert event.totals.count(max(event.totals)) == 1
                assert event.games_won == state.games_won
                assert state.game_ended or state.phase is Phase.MATCH_OVER
                assert state.history[-1].carry_after == state.carry
                game_won = True
                carry = 0  # each game of a rubber starts with no carry
            elif isinstance(event, MatchEnded):
                assert event.totals[event.winner] >= profile.target
                assert event.totals[event.winner] == max(event.totals)
                assert event.totals.count(max(event.totals)) == 1
                if profile.rubber_wins:
                    assert state.games_won[event.winner] == profile.rubber_wins
                return hands
        assert_conserved(state)
        if state.phase is Phase.PLAYING:
            play = greedy_play(state) if greedy and state.turn == 0 else random_play(state, rng)
            state, events = apply(state, play)
        else:
            state, events = deal_next_hand(state)


def test_thousands_of_random_matches_end_with_a_winner() -> None:
    rng = random.Random(2026)
    hands = sum(play_match(rng.getrandbits(64), rng) for _ in range(MATCHES))
    assert hands >= 2 * MATCHES  # 121 points take at least two hands of 43+


def binomial_tail(successes: int, trials: int, p: float) -> float:
    """P(X >= successes) for X ~ Binomial(trials, p): a one-sided test's p-value."""
    return sum(
        math.comb(trials, k) * p**k * (1 - p) ** (trials - k) for k in range(successes, trials + 1)
    )


def test_binomial_tail_matches_hand_computed_values() -> None:
    assert binomial_tail(0, 10, 0.3) == pytest.approx(1.0)
    assert binomial_tail(2, 2, 0.5) == pytest.approx(0.25)
    assert binomial_tail(3, 4, 0.5) == pytest.approx(5 / 16)
    assert binomial_tail(61, 60, 0.9) == 0


# The claim: the greedy bot beats the random bot with probability above 0.6, whichever seat it
# takes. Tested as one: H0 "p <= 0.6" is rejected at the 1% level on 60 seeded matches (seats
# alternate). Seeded, so the verdict is reproducible; at the greedy bot's real strength (about
# 0.9), a fresh sample would fail this test far less than once in a million runs.
CLAIMED_EDGE, SIGNIFICANCE, MATCHES = 0.6, 0.01, 60


def test_greedy_bot_beats_random_bot_with_probability_above_point_six() -> None:
    rng = random.Random(4)
    wins = 0
    for match in range(MATCHES):
        greedy_seat = match % 2
        state, _ = new_match(rng.getrandbits(64))
        while state.phase is not Phase.MATCH_OVER:
            if state.phase is Phase.HAND_OVER:
                state, _ = deal_next_hand(state)
            else:
                greedy = state.turn == greedy_seat
                play = greedy_play(state) if greedy else random_play(state, rng)
                state, _ = apply(state, play)
        wins += state.winner == greedy_seat
    p_value = binomial_tail(wins, MATCHES, CLAIMED_EDGE)
    assert p_value < SIGNIFICANCE, f"{wins}/{MATCHES} wins: p = {p_value:.3g} under p <= 0.6"


def test_hand_built_profiles_play_through_three_and_four_seats_and_six_card_deals() -> None:
    rng = random.Random(9)
    for profile in (
        Profile("three", seats=3, majority_cards=18),
        Profile("four", seats=4, majority_cards=14),
        Profile("six-card deals", cards_per_deal=6),
    ):
        for _ in range(20):
            assert play_match(rng.getrandbits(64), rng, profile) >= 1


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_every_rule_system_plays_whole_matches_to_the_end_at_every_seat_count(
    config: tuple[str, int, bool],
) -> None:
    name, seats, rubber = config
    profile = match_profile(name, seats, rubber=rubber)
    rng = random.Random(f"{name}/{seats}/{rubber}")
    hands = [play_match(rng.getrandbits(64), rng, profile, greedy=i % 2 == 1) for i in range(40)]
    assert min(hands) >= 1


def test_the_bots_play_exactly_what_legal_plays_lists() -> None:
    """A trail comes as a declared trail (trail=True), a capture with its plan, as the service's
    clients send them: each bot's play is one of legal_plays, never just an applicable play."""
    rng = random.Random(5)
    trails = 0
    for seed in range(3):
        state, _ = new_match(seed)
        while state.phase is Phase.PLAYING:
            legal = legal_plays(state)
            assert greedy_play(state) in legal
            play = random_play(state, rng)
            assert play in legal
            trails += play.trail
            state, _ = apply(state, play)
    assert trails > 0


def test_the_greedy_bot_counts_points_from_the_profiles_table() -> None:
    """9S takes 9H and 6S takes 6C: worth the same by RULES.md's points (the lower card would
    be played), but this profile's table makes 9H worth 50."""
    points = [0] * 52
    points[Card.parse("9H")] = 50
    profile = Profile("nines", points=PointTable(tuple(points)))
    state = position(["9S 6S", "2D"], "9H 6C", profile=profile)
    assert greedy_play(state) == Play(0, Card.parse("9S"), 1)
    assert greedy_play(replace(state, profile=ERAM)) == Play(0, Card.parse("6S"), 1)
