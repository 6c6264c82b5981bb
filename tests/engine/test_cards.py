"""Cards: values, points, parsing and formatting (RULES.md, "Cards")."""

from __future__ import annotations

import pytest

from basra.engine.cards import (
    ALL_CARDS_MASK,
    CARDS,
    POINTS,
    Card,
    format_cards,
    mask_of,
    parse_cards,
    points_of,
)
from basra.engine.errors import DuplicateCardError, InvalidCardError
from basra.engine.profile import STANDARD_POINTS, PointTable


def test_every_card_formats_and_parses_back() -> None:
    assert len({str(c) for c in CARDS}) == 52
    for card in CARDS:
        assert Card.parse(str(card)) is card
        assert Card.parse(card.symbol) is card
        assert Card.parse(str(card).lower()) is card


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("10D", "10D"),
        ("10d", "10D"),
        ("10\u2666", "10D"),
        ("q\u2660", "QS"),
        ("a\u2663", "AC"),
        (" 7h ", "7H"),
        ("K\u2661", "KH"),
        ("J\u2665\ufe0f", "JH"),
    ],
)
def test_parse_accepts_lower_case_and_suit_symbols(token: str, expected: str) -> None:
    assert str(Card.parse(token)) == expected


@pytest.mark.parametrize("token", ["", "1D", "11D", "10", "D", "10X", "ZZ", "1 0D", "10DD", "0C"])
def test_parse_rejects_bad_tokens_with_the_token_in_the_message(token: str) -> None:
    with pytest.raises(InvalidCardError) as info:
        Card.parse(token)
    assert str(info.value) == (
        f"invalid card {token!r}: expected a rank (A 2-10 J Q K, T for 10) followed by a suit "
        "(C D H S or \u2663 \u2666 \u2665 \u2660), such as '10D'"
    )
    assert info.value.metadata == {"token": token}
    assert info.value.reason == "INVALID_CARD"


def test_card_index_is_suit_position_times_13_plus_rank_position() -> None:
    assert int(Card.parse("AC")) == 0
    assert int(Card.parse("KC")) == 12
    assert int(Card.parse("AD")) == 13
    assert int(Card.parse("10D")) == 22
    assert int(Card.parse("KS")) == 51


def test_values_for_sums_ace_one_numbers_face_value_faces_none() -> None:
    assert [
        Card.parse(r + "H").value
        for r in ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"]
    ] == [
        1,
        2,
        3,
        4,
        5,
        6,
        7,
        8,
        9,
        10,
        0,
        0,
        0,
    ]


def test_special_points_jack_ace_one_two_clubs_two_ten_diamonds_three() -> None:
    assert {str(c): c.points for c in CARDS if c.points} == {
        **{f"J{s}": 1 for s in "CDHS"},
        **{f"A{s}": 1 for s in "CDHS"},
        "2C": 2,
        "10D": 3,
    }
    assert sum(POINTS) == 13


def test_parse_cards_reads_spaces_and_commas_and_rejects_duplicates() -> None:
    assert format_cards(parse_cards("4S, 6h 10C,3d")) == "4S 6H 10C 3D"
    assert format_cards(parse_cards("4S 6H"), symbols=True) == "4\u2660 6\u2665"
    with pytest.raises(DuplicateCardError) as info:
        parse_cards("4S 6H 4s")
    assert str(info.value) == "card '4S' appears more than once"
    assert info.value.metadata == {"card": "4S"}


def test_special_points_of_a_set_of_cards() -> None:
    """RULES.md: each J and A 1, 2C 2, 10D 3: 13 in the deck."""
    assert points_of(ALL_CARDS_MASK) == 13
    assert points_of(mask_of(parse_cards("10D 2C JS AH 5C KD"))) == 3 + 2 + 1 + 1
    assert points_of(0) == 0
    assert STANDARD_POINTS.of(ALL_CARDS_MASK) == 13


def test_a_point_table_shows_the_cards_that_score() -> None:
    assert repr(STANDARD_POINTS) == (
        "PointTable({AC: 1, 2C: 2, JC: 1, AD: 1, 10D: 3, JD: 1, AH: 1, JH: 1, AS: 1, JS: 1})"
    )
    assert repr(PointTable((0,) * 51 + (7,))) == "PointTable({KS: 7})"
