"""Cards between the basra.v1 messages and the engine's ``Card``, and cards as text.

The client's own conversion (no server code): a message ``Card`` numbers rank and suit from 1
in RULES.md's order (A..K; C, D, H, S), the engine's ``Card`` from 0. One notation for every
command: letters (``10D QS``) or suit symbols (``10♦ Q♠``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from basra.v1 import game_pb2

try:
    from basra.engine import CARDS, Card, format_cards
except ImportError as error:
    # A folder named basra in the script's directory (or the current one, with -c or -m), a
    # clone of this repository say, joins the basra namespace; with the packages installed
    # editable (`make setup`) its engine/ folder is found first and stands for basra.engine, a
    # namespace of no module, and the import fails with "unknown location". Say which folder
    # does it and what to do.
    engine = sys.modules.get("basra.engine")
    if engine is None or getattr(engine, "__file__", None) is not None:
        raise
    found = [str(folder) for folder in getattr(engine, "__path__", ())]
    shadows = ", ".join(str(Path(folder).parent) for folder in found)
    raise ImportError(
        f"basra.engine is the folder {', '.join(found)}, not the installed package: the folder "
        f"{shadows} (beside your script, or the current directory's) shadows the installed "
        "basra namespace. Rename that folder (e.g. clone into basra-engine) or run the script "
        "from another directory.",
        name="basra.engine",
    ) from error

CardLike = Card | str | game_pb2.Card
"""A card as the client accepts it: an engine ``Card``, a token (``"10D"``, ``"TD"``,
``"10♦"``) or a message ``Card``."""


def from_pb(card: game_pb2.Card) -> Card:
    """The engine card of a message Card.

    Raises:
        ValueError: the message is not a card (rank or suit unset or out of range).
    """
    if not 1 <= card.rank <= 13 or not 1 <= card.suit <= 4:
        raise ValueError(f"not a card: rank {card.rank}, suit {card.suit}")
    return CARDS[(card.suit - 1) * 13 + card.rank - 1]


def to_pb(card: CardLike) -> game_pb2.Card:
    """The message Card of a card, a token such as ``"10D"`` or a message Card (copied).

    Raises:
        basra.engine.InvalidCardError: a token that is not a card.
    """
    if isinstance(card, game_pb2.Card):
        return game_pb2.Card(rank=card.rank, suit=card.suit)
    engine_card = Card.parse(card) if isinstance(card, str) else card
    return game_pb2.Card(rank=engine_card.rank + 1, suit=engine_card.suit + 1)  # type: ignore[arg-type]


def text(cards: Iterable[CardLike], *, symbols: bool = False, empty: str = "(none)") -> str:
    """Cards as people read them: ``10D 4S`` (or ``10♦ 4♠`` with ``symbols``)."""
    engine_cards = [
        from_pb(c) if isinstance(c, game_pb2.Card) else Card.parse(c) if isinstance(c, str) else c
        for c in cards
    ]
    return format_cards(engine_cards, symbols=symbols) or empty
