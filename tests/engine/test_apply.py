"""Applying plays: mandatory capture, plan choice, and every illegal play rejected untouched."""

from __future__ import annotations

from dataclasses import replace

import pytest

from basra.engine import (
    BasraError,
    CaptureRequiredError,
    CardNotInHandError,
    CardPlayed,
    HandInProgressError,
    HandOverError,
    InvalidInputError,
    InvalidPlanIdError,
    InvalidSeatError,
    MatchOverError,
    NotYourTurnError,
    Phase,
    PlanRequiredError,
    Play,
    UnknownPlanError,
    apply,
    deal_next_hand,
    encode,
    new_match,
    view,
)
from basra.engine.cards import Card
from basra.engine.game import legal_plans, legal_plays
from basra.engine.state import LastPlay
from tests.engine.builders import cards, position

# Seat 0 to play. On this floor 7H has two plans, 10S three, 3S one, KC none.
STATE = position(["7H 10S KC 3S", "2D 9D QH 8C"], "AC 2H 3D 4S 6C", turn=0)


def c(token: str) -> Card:
    return Card.parse(token)


def test_one_plan_need_not_be_named() -> None:
    after, events = apply(STATE, Play(0, c("3S")))
    assert events == (CardPlayed(0, c("3S"), 1, cards("3D AC 2H"), basra=False, sweep=False),)
    assert after.floor == cards("4S 6C")
    assert after.turn == 1


def test_several_plans_require_a_number_and_the_number_picks_the_plan() -> None:
    with pytest.raises(PlanRequiredError) as info:
        apply(STATE, Play(0, c("7H")))
    assert info.value.metadata == {"card": "7H", "plan_count": "2"}
    after, (played,) = apply(STATE, Play(0, c("7H"), plan=2))
    assert isinstance(played, CardPlayed)
    assert played.captured == cards("AC 2H 4S")
    assert after.floor == cards("3D 6C")


def test_a_card_without_plan_trails() -> None:
    after, (played,) = apply(STATE, Play(0, c("KC")))
    assert isinstance(played, CardPlayed)
    assert played.trail
    assert played.plan == 0
    assert after.floor == (*STATE.floor, c("KC"))
    after_declared, _ = apply(STATE, Play(0, c("KC"), trail=True))
    assert after_declared == after


def test_capture_is_mandatory_a_card_with_a_plan_cannot_trail() -> None:
    with pytest.raises(CaptureRequiredError):
        apply(STATE, Play(0, c("10S"), trail=True))


@pytest.mark.parametrize(
    ("play", "error", "reason"),
    [
        (Play(1, c("2D")), NotYourTurnError, "NOT_YOUR_TURN"),
        (Play(0, c("2D")), CardNotInHandError, "CARD_NOT_IN_HAND"),
        (Play(0, c("7H"), plan=3), UnknownPlanError, "UNKNOWN_PLAN"),
        (Play(0, c("KC"), plan=1), UnknownPlanError, "UNKNOWN_PLAN"),
        (Play(0, c("7H"), plan=0), InvalidPlanIdError, "INVALID_PLAN_ID"),
        (Play(0, c("7H"), plan=-4), InvalidPlanIdError, "INVALID_PLAN_ID"),
        (Play(0, c("7H"), plan=1, trail=True), InvalidInputError, "INVALID_INPUT"),
        (Play(2, c("7H")), InvalidSeatError, "INVALID_SEAT"),
        (Play(0, c("7H")), PlanRequiredError, "PLAN_REQUIRED"),
        (Play(0, c("10S"), trail=True), CaptureRequiredError, "CAPTURE_REQUIRED"),
    ],
)
def test_illegal_plays_raise_a_typed_error_and_change_nothing(
    play: Play, error: type[BasraError], reason: str
) -> None:
    before = encode(STATE)
    with pytest.raises(error) as info:
        apply(STATE, play)
    assert info.value.reason == reason
    assert isinstance(info.value, ValueError)
    assert encode(STATE) == before


def test_error_messages_never_show_the_other_hand() -> None:
    for play in (Play(1, c("2D")), Play(0, c("9D")), Play(0, c("7H"))):
        with pytest.raises(BasraError) as info:
            apply(STATE, play)
        assert not {"2D", "9D", "QH", "8C"} & set(str(info.value).replace(",", " ").split()) - {
            str(play.card)
        }


def test_not_your_turn_names_the_seat_to_play() -> None:
    with pytest.raises(NotYourTurnError) as info:
        apply(STATE, Play(1, c("2D")))
    assert info.value.metadata == {"turn": "0"}


def test_legal_plays_are_sorted_and_legality_is_membership() -> None:
    plays = legal_plays(STATE)
    assert plays == tuple(sorted(plays, key=lambda p: (p.card, p.plan or 0)))
    assert Play(0, c("7H"), 1) in plays
    assert Play(0, c("7H"), 2) in plays
    assert Play(0, c("KC"), trail=True) in plays
    for play in plays:
        apply(STATE, play)


def test_no_play_when_the_hand_is_over_and_no_deal_while_it_is_in_progress() -> None:
    state, _ = new_match(seed=1)
    with pytest.raises(HandInProgressError) as info:
        deal_next_hand(state)
    assert info.value.metadata == {"hand": "1", "plays_left": "48"}
    finished = position(["5H", ""], "5C", turn=0)
    over, _ = apply(finished, Play(0, c("5H")))
    assert over.phase is Phase.HAND_OVER
    with pytest.raises(HandOverError):
        apply(over, Play(1, c("5H")))


def test_nothing_is_allowed_after_the_match_is_won() -> None:
    won = position(["5H", ""], "5C", turn=0, scores=(120, 10))
    over, _ = apply(won, Play(0, c("5H")))
    assert over.phase is Phase.MATCH_OVER
    assert over.winner == 0
    with pytest.raises(MatchOverError):
        deal_next_hand(over)
    with pytest.raises(MatchOverError):
        apply(over, Play(1, c("5H")))


def test_seed_out_of_range_is_invalid_input() -> None:
    for seed in (-1, 1 << 64):
        with pytest.raises(InvalidInputError) as refused:
            new_match(seed)
        # The message and metadata reach the player word for word (google.rpc.ErrorInfo).
        assert str(refused.value) == f"seed {seed} must be in 0..18446744073709551615"
        assert refused.value.metadata == {"seed": str(seed)}
    # The bounds themselves are seeds.
    assert new_match(0)[0].seed == 0
    assert new_match((1 << 64) - 1)[0].seed == (1 << 64) - 1


# What a refused request tells its player: the service sends the message and the metadata as they
# are (google.rpc.ErrorInfo), so each is pinned word for word.
@pytest.mark.parametrize(
    ("play", "message", "metadata"),
    [
        (Play(1, c("2D")), "seat 1 played out of turn: it is seat 0's turn", {"turn": "0"}),
        (
            Play(0, c("2D")),
            "card '2D' is not in your hand (KC 7H 3S 10S)",
            {"card": "2D"},
        ),
        (
            Play(0, c("7H"), plan=3),
            "card '7H' has no plan 3: its plans are 1..2",
            {"card": "7H", "plan_id": "3", "plan_count": "2"},
        ),
        (
            Play(0, c("KC"), plan=1),
            "card 'KC' has no plan 1: it has no capture plan and trails",
            {"card": "KC", "plan_id": "1", "plan_count": "0"},
        ),
        (Play(0, c("7H"), plan=0), "plan id 0 must be 1 or more", {"plan_id": "0"}),
        (
            Play(0, c("7H"), plan=1, trail=True),
            "a play cannot both take plan 1 and trail",
            {"plan_id": "1"},
        ),
        (Play(2, c("7H")), "seat 2 does not exist: seats are 0..1", {"seat": "2"}),
        (
            Play(0, c("7H")),
            "card '7H' has 2 capture plans: name one (1..2)",
            {"card": "7H", "plan_count": "2"},
        ),
        (
            Play(0, c("10S"), trail=True),
            "card '10S' cannot trail: capture is mandatory and it has 3 plan(s)",
            {"card": "10S", "plan_count": "3"},
        ),
    ],
)
def test_each_refused_play_says_what_was_wrong(
    play: Play, message: str, metadata: dict[str, str]
) -> None:
    with pytest.raises(BasraError) as info:
        apply(STATE, play)
    assert (str(info.value), info.value.metadata) == (message, metadata)


def test_a_refused_deal_or_play_between_hands_and_after_the_match_says_why() -> None:
    state, _ = new_match(seed=1)
    with pytest.raises(HandInProgressError) as in_progress:
        deal_next_hand(state)
    assert str(in_progress.value) == "hand 1 is still in progress (48 plays left)"
    over, _ = apply(position(["5H", ""], "5C", turn=0), Play(0, c("5H")))
    with pytest.raises(HandOverError) as hand_over:
        apply(over, Play(1, c("5H")))
    assert (
        str(hand_over.value)
        == f"hand {over.hand_number} is over: deal the next hand before playing"
    )
    assert hand_over.value.metadata == {"hand": str(over.hand_number)}
    won = replace(over, phase=Phase.MATCH_OVER, winner=1)
    with pytest.raises(MatchOverError) as played:
        apply(won, Play(0, c("5H")))
    with pytest.raises(MatchOverError) as dealt:
        deal_next_hand(won)
    for match_over in (played, dealt):
        assert (str(match_over.value), match_over.value.metadata) == (
            "the match is over: seat 1 won",
            {"winner": "1"},
        )


def test_the_hand_over_state_still_says_who_captured_last() -> None:
    """Seat 1's last play captures: the scored hand's state (and so every view) names it."""
    over, _ = apply(position(["", "5H"], "5C", turn=1, last_capturer=0), Play(1, c("5H")))
    assert over.phase is Phase.HAND_OVER
    assert over.last_capturer == 1
    assert view(over, 0).last_capturer == 1
    # And the play itself (a basra: it cleared the floor), the hand's 48 plays, its basras.
    assert over.last_play == LastPlay(1, c("5H"), 1, (c("5C"),), 10, False)
    assert view(over, 0).last_play == over.last_play
    assert (over.plays, over.basras, over.basra_points) == (48, (0, 1), (0, 10))


def test_legal_plans_answers_each_profile_on_a_shared_floor() -> None:
    """legal_plans remembers its last answer: a state of another profile with the same floor
    tuple gets its own plans (the 7D sweeps under eram, is an ordinary 7 under lobashev)."""
    from dataclasses import replace as _replace

    from basra.engine import capture_plans, legal_plans, match_profile, new_match

    eram, _ = new_match(1)
    lobashev = _replace(eram, profile=match_profile("lobashev", 2))
    seven = Card.parse("7D")
    assert legal_plans(eram, seven) == capture_plans(eram.floor, seven, eram.profile)
    assert legal_plans(lobashev, seven) == capture_plans(eram.floor, seven, lobashev.profile)
    assert legal_plans(eram, seven) != legal_plans(lobashev, seven)


def test_the_same_question_twice_in_a_row_is_answered_from_memory() -> None:
    # A player lists a card's plans, then apply checks the play against them: the second asking
    # gets the remembered answer itself (a search builds a new tuple every time).
    state = position(["5C 7D", "KH"], "2S 3H 5D")
    five, seven = cards("5C 7D")
    first = legal_plans(state, five)
    assert first
    assert legal_plans(state, five) is first
    other = legal_plans(state, seven)
    assert other
    assert other is not first
    again = legal_plans(state, five)
    assert again == first  # asked afresh after another card
    assert again is not first
    # The same floor's cards in another tuple are another floor: asked afresh, same plans.
    moved = replace(state, floor=(*state.floor,))  # a new tuple (tuple() would return it)
    assert moved.floor is not state.floor
    afresh = legal_plans(moved, five)
    assert afresh == again
    assert afresh is not again
