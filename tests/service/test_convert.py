"""Conversions to messages that share built parts: sharing must never leak a change."""

from __future__ import annotations

from basra.engine import CARDS
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
