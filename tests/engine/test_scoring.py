"""Basras, end of hand, scoring and the end of the match (RULES.md)."""

from __future__ import annotations

import pytest

from basra.engine import (
    ERAM,
    FloorCollected,
    HandScored,
    MatchEnded,
    Phase,
    Play,
    Profile,
    apply,
    deal_next_hand,
)
from basra.engine.cards import Card
from basra.engine.scoring import match_winner, score_hand
from tests.engine.builders import cards, position


def c(token: str) -> Card:
    return Card.parse(token)


def hand(cards_taken: tuple[int, int], carry: int = 0, basras: tuple[int, int] = (0, 0)):  # type: ignore[no-untyped-def]
    return score_hand(
        ERAM,
        hand=1,
        dealer=0,
        carry_before=carry,
        cards=cards_taken,
        specials=(7, 6),
        basras=basras,
    )


def test_majority_is_30_for_27_or_more_cards() -> None:
    score = hand((27, 25))
    assert [s.majority for s in score.seats] == [30, 0]
    assert score.carry_after == 0
    assert [s.majority for s in hand((20, 32)).seats] == [0, 30]


def test_26_26_tie_scores_no_majority_and_carries_30_which_accumulates() -> None:
    first = hand((26, 26))
    assert [s.majority for s in first.seats] == [0, 0]
    assert first.carry_after == 30
    second = hand((26, 26), carry=first.carry_after)
    assert second.carry_after == 60


def test_carry_goes_with_the_next_majority_and_returns_to_zero() -> None:
    score = hand((25, 27), carry=60)
    assert [(s.majority, s.carry) for s in score.seats] == [(0, 0), (30, 60)]
    assert score.carry_after == 0
    assert score.totals == (7, 6 + 90)


def test_each_basra_is_ten_points() -> None:
    score = hand((30, 22), basras=(2, 1))
    assert [(s.basras, s.basra_points) for s in score.seats] == [(2, 20), (1, 10)]
    assert score.totals == (30 + 7 + 20, 6 + 10)


def test_a_basra_on_the_last_play_of_the_hand_counts() -> None:
    last = position(["", "9C"], "4D 5H", turn=1, dealer=1)
    _, events = apply(last, Play(1, c("9C")))
    scored = next(e for e in events if isinstance(e, HandScored))
    assert scored.score.seats[1].basras == 1
    assert not any(isinstance(e, FloorCollected) for e in events)


def test_leftover_floor_goes_to_the_last_capturer_and_is_not_a_basra() -> None:
    # Seat 0 captured last (earlier); seat 1 trails the last card.
    last = position(["", "KC"], "10D 2C", turn=1, dealer=1, last_capturer=0)
    after, events = apply(last, Play(1, c("KC")))
    collected = next(e for e in events if isinstance(e, FloorCollected))
    assert collected == FloorCollected(0, cards("10D 2C KC"))
    scored = next(e for e in events if isinstance(e, HandScored))
    assert scored.score.seats[0].basras == 0
    assert after.floor == ()
    assert c("10D").bit & after.captured[0]


def test_leftover_cards_count_for_cards_and_special_points() -> None:
    captured = (
        "AC 2D 3D 4D 5D 6D 7D 8D 9D JD QD KD AH 2H 3H 4H 5H 6H 7H 8H 9H 10H JH QH KH",
        "AS 2S 3S 4S 5S 6S 7S 8S 9S 10S JS QS KS AD 3C 4C 5C 6C 7C 8C 9C 10C JC QC",
    )
    # Seat 1 holds 24 cards; with the 3 leftover (10D 2C KC) it reaches 27 and the majority.
    last = position(["", "KC"], "10D 2C", turn=1, captured=(*captured, ""), last_capturer=1)
    _, events = apply(last, Play(1, c("KC")))
    seat1 = next(e for e in events if isinstance(e, HandScored)).score.seats[1]
    assert (seat1.cards, seat1.majority) == (27, 30)
    assert seat1.specials == 4 + 3 + 2  # AS AD JS JC, then 10D and 2C from the leftover


def test_nobody_captured_leaves_the_leftover_to_no_one() -> None:
    """Unreachable under ERAM (a J on a non-empty floor always captures), kept for the rule."""
    score = score_hand(
        ERAM, hand=1, dealer=0, carry_before=30, cards=(0, 0), specials=(0, 0), basras=(0, 0)
    )
    assert score.totals == (0, 0)
    assert score.carry_after == 30
    assert score.unassigned_cards == 52
    last = position(["", "KC"], "10D 2C", turn=1, last_capturer=None)
    after, events = apply(last, Play(1, c("KC")))
    assert FloorCollected(None, cards("10D 2C KC")) in events
    assert after.floor == cards("10D 2C KC")  # they stay on the table, nobody's


def test_a_hand_distributes_43_points_plus_10_per_basra_plus_released_carry() -> None:
    score = hand((28, 24), carry=30, basras=(1, 2))
    # 30 majority + 13 special points (7 + 6 here) + 3 basras + the released carry of 30.
    assert sum(score.totals) == 43 + 10 * 3 + 30


@pytest.mark.parametrize(
    ("totals", "expected"),
    [
        ((120, 119), (None, False)),
        ((121, 40), (0, False)),
        ((60, 130), (1, False)),
        ((130, 125), (0, False)),
        ((125, 131), (1, False)),
        ((121, 121), (None, True)),
        ((140, 140), (None, True)),
    ],
)
def test_match_end_at_121_higher_wins_exact_tie_plays_another_hand(
    totals: tuple[int, int], expected: tuple[int | None, bool]
) -> None:
    assert match_winner(ERAM, totals) == expected


def test_target_is_checked_only_after_a_complete_hand() -> None:
    mid = position(["5H 6S", "9C"], "5C", turn=0, scores=(119, 0), dealer=1)
    after, _ = apply(mid, Play(0, c("5H")))  # a basra mid-hand: 129 + points, but not scored yet
    assert after.phase is Phase.PLAYING
    assert after.scores == (119, 0)


def test_a_tie_at_121_plays_another_normal_hand_with_the_dealer_alternating() -> None:
    # Seat 1 trails KS last; seat 0, the last capturer, takes AH KS: 29 cards, majority 30,
    # specials AC 2C JC AD 10D JD AH = 10, so +40. Seat 1: JH AS JS = +3. 81 + 40 = 118 + 3.
    captured = (
        "AC 2C 3C 4C 5C 6C 7C 8C 9C 10C JC QC KC AD 2D 3D 4D 5D 6D 7D 8D 9D 10D JD QD KD 2H",
        "3H 4H 5H 6H 7H 8H 9H 10H JH QH KH AS 2S 3S 4S 5S 6S 7S 8S 9S 10S JS QS",
    )
    last = position(
        ["", "KS"],
        "AH",
        turn=1,
        dealer=1,
        captured=(*captured, ""),
        scores=(81, 118),
        carry=0,
        last_capturer=0,
    )
    after, events = apply(last, Play(1, c("KS")))
    scored = next(e for e in events if isinstance(e, HandScored))
    assert scored.totals == (121, 121)
    assert scored.extra_hand
    assert not any(isinstance(e, MatchEnded) for e in events)
    assert after.phase is Phase.HAND_OVER
    assert after.winner is None
    extra, _ = deal_next_hand(after)
    assert extra.dealer == 0
    assert extra.hand_number == 3
    assert extra.phase is Phase.PLAYING


def test_a_hand_score_names_its_hand_dealer_and_carry() -> None:
    score = score_hand(
        ERAM, hand=7, dealer=1, carry_before=30, cards=[30, 22], specials=[8, 5], basras=[1, 0]
    )
    assert (score.hand, score.dealer, score.carry_before, score.carry_after) == (7, 1, 30, 0)
    assert score.totals == (30 + 30 + 8 + 10, 5)


def test_a_single_leader_short_of_the_majority_is_no_tie() -> None:
    """Three seats, every card taken, 18 against 17 and 17, a majority needing 27: nobody scores
    it and the carry stands (a shared top count would have carried 30 more)."""
    three = Profile("three", seats=3, cards_per_deal=4, floor_cards=4)
    score = score_hand(
        three,
        hand=1,
        dealer=0,
        carry_before=30,
        cards=[18, 17, 17],
        specials=[0] * 3,
        basras=[0] * 3,
    )
    assert (score.carry_after, [s.majority for s in score.sides]) == (30, [0, 0, 0])
