"""Cards: the 52-card deck, values for sums, scoring points, parsing and formatting.

A card is a small int subclass, its *index* in RULES.md's ordering: suit position (C, D, H, S)
* 13 + rank position (A..K). Card sets are plain ints used as 52-bit masks (bit ``index``),
which makes floors, hands and captured piles cheap to combine, compare and store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final

from basra.engine.errors import DuplicateCardError, InvalidCardError

try:
    from mypy_extensions import mypyc_attr
except ImportError:  # Only the compiler reads this hint: without mypy it is a no-op.

    def mypyc_attr(*_: str, **__: object) -> Callable[[type[Card]], type[Card]]:  # type: ignore[misc]
        return lambda cls: cls


RANKS: Final = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
SUITS: Final = ("C", "D", "H", "S")
SUIT_SYMBOLS: Final = ("\u2663", "\u2666", "\u2665", "\u2660")  # ♣ ♦ ♥ ♠
_SUIT_BY_TOKEN: Final = {
    **{s: i for i, s in enumerate(SUITS)},
    **{s: i for i, s in enumerate(SUIT_SYMBOLS)},
    # The outlined symbols are what many keyboards and chat apps produce.
    "\u2667": 0,
    "\u2662": 1,
    "\u2661": 2,
    "\u2664": 3,
}
# T is the one-letter ten of card notations (TD = 10D).
_RANK_BY_TOKEN: Final = {**{r: i for i, r in enumerate(RANKS)}, "T": 9}

DECK_SIZE: Final = 52
JACK: Final = 10
QUEEN: Final = 11
KING: Final = 12
ALL_CARDS_MASK: Final = (1 << DECK_SIZE) - 1


# mypyc compiles no subclass of int: Card stays a Python class, its users are compiled.
@mypyc_attr(native_class=False)
class Card(int):
    """One playing card; ``Card.parse("10D")`` and ``str(card) == "10D"`` are inverses.

    The 52 instances are interned (``CARDS[index]``), so identity, equality and hashing are
    those of the index.
    """

    __slots__ = ()

    @property
    def rank(self) -> int:
        """Rank position: 0 = A, 1..9 = 2..10, 10 = J, 11 = Q, 12 = K."""
        return self % 13

    @property
    def suit(self) -> int:
        """Suit position: 0 = C, 1 = D, 2 = H, 3 = S."""
        return self // 13

    @property
    def value(self) -> int:
        """Value for sums: A = 1, 2..10 = face value, 0 for J, Q, K (never part of a sum)."""
        return VALUES[self]

    @property
    def points(self) -> int:
        """Special scoring points: each J and A 1, 2C 2, 10D 3, any other card 0."""
        return POINTS[self]

    @property
    def bit(self) -> int:
        """This card as a one-card set (mask)."""
        return 1 << self

    @property
    def symbol(self) -> str:
        """The card with its suit symbol, as players read it: ``10♦``."""
        return RANKS[self % 13] + SUIT_SYMBOLS[self // 13]

    @classmethod
    def parse(cls, token: str) -> Card:
        """Parse ``10D``, ``TD``, ``10d``, ``10♦`` or ``q♠``.

        Raises:
            InvalidCardError: the token is not a card.
        """
        text = token.strip().replace("\ufe0f", "")  # emoji suits carry a variation selector
        if len(text) < 2:
            raise InvalidCardError(token)
        suit = _SUIT_BY_TOKEN.get(text[-1].upper())
        rank = _RANK_BY_TOKEN.get(text[:-1].upper())
        if suit is None or rank is None:
            raise InvalidCardError(token)
        return CARDS[suit * 13 + rank]

    def __str__(self) -> str:
        return RANKS[self % 13] + SUITS[self // 13]

    def __repr__(self) -> str:
        return f"Card.parse({str(self)!r})"


CARDS: Final[tuple[Card, ...]] = tuple(Card(i) for i in range(DECK_SIZE))
VALUES: Final[tuple[int, ...]] = tuple(r + 1 if r < JACK else 0 for _ in SUITS for r in range(13))
POINTS: Final[tuple[int, ...]] = tuple(
    1 if rank in (0, JACK) else 2 if (suit, rank) == (0, 1) else 3 if (suit, rank) == (1, 9) else 0
    for suit in range(4)
    for rank in range(13)
)

SEVEN_OF_DIAMONDS: Final = CARDS[1 * 13 + 6]

RANK_MASKS: Final[tuple[int, ...]] = tuple(
    sum(1 << (s * 13 + r) for s in range(4)) for r in range(13)
)
"""RANK_MASKS[rank] is the set of the four cards of that rank."""
FACE_MASK: Final = RANK_MASKS[QUEEN] | RANK_MASKS[KING]
JACK_MASK: Final = RANK_MASKS[JACK]
POINT_CARDS: Final = tuple(c for c in CARDS if POINTS[c])


def mask_of(cards: Iterable[int]) -> int:
    """The set (mask) holding ``cards``."""
    mask = 0
    if isinstance(cards, tuple):  # A state's floor, hand or stock, on every play.
        # Read by index as ints: compiled, the shift is then C arithmetic, not a Python call.
        for i in range(len(cards)):
            index: int = cards[i]
            mask |= 1 << index
        return mask
    for card in cards:
        mask |= 1 << card
    return mask


def union_of(masks: Iterable[int]) -> int:
    """The set holding every card of ``masks``."""
    out = 0
    for mask in masks:
        out |= mask
    return out


def cards_of(mask: int) -> tuple[Card, ...]:
    """The cards of ``mask`` in index order."""
    out = []
    while mask:
        low = mask & -mask
        out.append(CARDS[low.bit_length() - 1])
        mask ^= low
    return tuple(out)


def points_of(mask: int) -> int:
    """Special points held in ``mask`` (J/A 1, 2C 2, 10D 3)."""
    return sum(POINTS[c] for c in POINT_CARDS if mask >> c & 1)


def parse_cards(tokens: str | Iterable[str]) -> tuple[Card, ...]:
    """Parse cards separated by spaces or commas (or a sequence of tokens), rejecting repeats.

    Raises:
        InvalidCardError: a token is not a card.
        DuplicateCardError: a card appears twice.
    """
    if isinstance(tokens, str):
        tokens = tokens.replace(",", " ").split()
    cards = tuple(Card.parse(t) for t in tokens)
    seen = 0
    for card in cards:
        if seen >> card & 1:
            raise DuplicateCardError(card)
        seen |= 1 << card
    return cards


def format_cards(cards: Iterable[Card], *, symbols: bool = False) -> str:
    """Cards joined by spaces: ``10C 4S 6H`` (or ``10♣ 4♠ 6♥`` with ``symbols``)."""
    return " ".join(c.symbol if symbols else str(c) for c in cards)
