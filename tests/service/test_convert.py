"""Conversions to messages that share built parts (sharing must never leak a change) or parse
prebuilt bytes (the message is the one protobuf builds)."""

from __future__ import annotations

import random

import pytest

from basra.engine import (
    CARDS,
    RULE_SYSTEMS,
    BottomCard,
    Phase,
    Profile,
    State,
    apply,
    deal_next_hand,
    new_match,
    view,
)
from basra.engine.bots import random_play
from basra.service import convert
from basra.v1 import game_pb2


def test_the_shared_card_messages_are_copied_into_every_message_that_takes_them() -> None:
    view = game_pb2.MatchView(hand=convert.cards_to_pb(CARDS[:3]))
    view.hand[0].rank = game_pb2.RANK_KING
    later = game_pb2.MatchView()
    later.floor.extend(convert.cards_to_pb(CARDS[:1]))
    assert later.floor[0] == convert.card_to_pb(CARDS[0])
    assert [(c.rank, c.suit) for c in convert.cards_to_pb(CARDS)] == [
        (card.rank + 1, card.suit + 1) for card in CARDS
    ]


def reference_view(state: State, seat: int, match_id: str, version: int) -> game_pb2.MatchView:
    """The seat's view built through protobuf's own API, every field by keyword and every card
    as its Card message (``convert.view_to_pb`` as it was written before it parsed its cards
    from their bytes): the oracle the faster one is compared with."""
    seen = view(state, seat)
    profile = state.profile
    out = game_pb2.MatchView(
        match_id=match_id,
        version=version,
        seat=seat,
        hand=[convert.card_to_pb(c) for c in seen.hand],
        floor=[convert.card_to_pb(c) for c in seen.floor],
        stock_size=seen.stock_size,
        turn=state.turn,
        dealer=seen.dealer,
        hand_number=seen.hand_number,
        deal_number=seen.deal_number,
        plays_left=seen.plays_left,
        carry=seen.carry,
        target=seen.target,
        status=convert.status_of(seen.phase),
        winner=None if seen.winner is None else convert._first_seat(state, seen.winner),
        last_capturer=seen.last_capturer,
        rules=profile.name,
        side=seen.side,
        to_play=seen.turn,
        next_dealer=seen.next_dealer,
        games=[convert.game_result_to_pb(n, g) for n, g in enumerate(seen.games, start=1)],
        options=game_pb2.MatchOptions(
            rubber=profile.rubber_wins > 0,
            bottom_card_shown=profile.bottom_card is BottomCard.EVERY_SEAT,
        ),
        game=state.game,
        winner_side=seen.winner,
        seat_count=state.seats,
    )
    for s, side in enumerate(seen.sides):
        out.seats.append(
            game_pb2.SeatSummary(
                seat=s,
                hand_size=seen.hand_sizes[s],
                captured_count=seen.captured_counts[side],
                basras=seen.basras[side],
                score=seen.scores[side],
                side=side,
            )
        )
    for side in range(profile.sides):
        out.sides.append(
            game_pb2.SideSummary(
                side=side,
                seats=[s for s in range(state.seats) if profile.side_of(s) == side],
                captured_count=seen.captured_counts[side],
                basras=seen.basras[side],
                basra_points=seen.basra_points[side],
                score=seen.scores[side],
                captured_specials=[convert.card_to_pb(c) for c in seen.captured_specials[side]],
                games_won=state.games_won[side],
            )
        )
    if seen.bottom_card is not None:
        out.bottom_card.CopyFrom(convert.card_to_pb(seen.bottom_card))
    if seen.last_play is not None:
        last = seen.last_play
        out.last_play.CopyFrom(
            game_pb2.CardPlayed(
                seat=last.seat,
                card=convert.card_to_pb(last.card),
                plan_id=last.plan,
                captured=[convert.card_to_pb(c) for c in last.captured],
                basra=last.basra_points > 0,
                sweep=last.sweep,
                trail=not last.captured,
                basra_points=last.basra_points,
                side=profile.side_of(last.seat),
            )
        )
    return out


def profiles() -> list[Profile]:
    """Every rule system at every seat count, with each option it has."""
    out = []
    for system in RULE_SYSTEMS.values():
        for seats in system.seat_counts:
            out.append(system.profile(seats))
            if system.rubber:
                out.append(system.profile(seats, rubber=True))
            if seats in system.bottom_card_seats:
                out.append(system.profile(seats, bottom_card_shown=True))
    return out


@pytest.mark.parametrize("profile", profiles(), ids=lambda p: f"{p.name}-{p.seats}")
def test_every_view_of_whole_matches_is_the_message_protobuf_builds(profile: Profile) -> None:
    """``view_to_pb`` writes the cards as bytes that protobuf parses: at every moment of whole
    matches (random plays; hands over, rubbers' games, a match over) each seat's view is the
    message built through protobuf's own API, field for field and byte for byte."""
    rng = random.Random(7)
    for seed in range(2):
        state, _ = new_match(seed, profile)
        version = 1
        seen_kinds: set[str] = set()
        while True:
            for seat in range(state.seats):
                got = convert.view_to_pb(state, seat, "M" * 22, version)
                want = reference_view(state, seat, "M" * 22, version)
                assert got == want
                assert got.SerializeToString(deterministic=True) == want.SerializeToString(
                    deterministic=True
                )
                seen_kinds.update(f.name for f, _ in got.ListFields())
                for side in got.sides:
                    seen_kinds.update(f"sides.{f.name}" for f, _ in side.ListFields())
            if state.phase is Phase.MATCH_OVER:
                break
            if state.phase is Phase.HAND_OVER:
                state, _ = deal_next_hand(state)
            else:
                state, _ = apply(state, random_play(state, rng))
            version += 1
        # The fields the faster path writes were all met.
        assert {"hand", "floor", "last_play", "sides.captured_specials"} <= seen_kinds
        if profile.bottom_card is not BottomCard.HIDDEN:
            assert "bottom_card" in seen_kinds


def test_the_basra_words_name_the_seven_of_diamonds_only_where_it_has_a_rule_of_its_own() -> None:
    # VARIANTS.md, lobashev: "the 7D is an ordinary 7"; every other rule system gives it a rule.
    words = {name: convert.rule_system_to_pb(s).basra for name, s in RULE_SYSTEMS.items()}
    assert "seven of diamonds" not in words["lobashev"], words["lobashev"]
    for name in ("eram", "egyptian", "jordanian", "persian", "persian-partnership"):
        assert "the seven of diamonds by its own rule" in words[name], name


def test_list_rules_says_the_lebanese_game_is_left_out_and_why() -> None:
    # VARIANTS.md, "Not a profile: the Lebanese game": "Say so in the rules list".
    listed = convert.list_rules_response()
    assert [left.name for left in listed.left_out] == ["lebanese"]
    assert "missing" in listed.left_out[0].reason
    assert "lebanese" not in [system.name for system in listed.rules]
