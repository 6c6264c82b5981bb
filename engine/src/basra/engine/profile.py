"""Rule profiles: everything that distinguishes one rule system from another, as data.

A ``Profile`` is what the engine plays: one rule system at one seat count with its options. Where
a difference is a number it is a field; where it is not, the field is an enum naming one small
function of ``engine.rules`` (the 7D criterion, the majority tie, basra values, the bottom card).
The engine reads only fields, never a profile's name.

The rule systems of VARIANTS.md are in ``RULE_SYSTEMS``; ``rule_system(name).profile(seats,
rubber=..., bottom_card_shown=...)`` builds the profile of a match and rejects what the rule
system does not allow. ``ERAM`` (RULES.md, two seats) is the engine's default.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar, Final

from basra.engine.cards import (
    DECK_SIZE,
    JACK_MASK,
    POINTS,
    RANKS,
    SEVEN_OF_DIAMONDS,
    SUITS,
)
from basra.engine.errors import OptionNotAvailableError, SeatsNotAllowedError, UnknownRulesError
from basra.engine.rules import BasraValue, BottomCard, MajorityTie, SevenRule, side_of_seat
from basra.engine.wording import WORDINGS, Wording

_SIZE_SHIFT: Final = 120
_POINTS_SHIFT: Final = 60


class PointTable:
    """Special points per card (index order), and each card's share of a plan's offering rank.

    Interned: equal tables are one object, so equality and hashing are identity, done in C. The
    plan caches key on the table (a plan's order depends on the points), a lookup made for every
    card on every play.
    """

    __slots__ = ("plan_scores", "point_cards", "points", "total")
    _interned: ClassVar[dict[tuple[int, ...], PointTable]] = {}
    points: tuple[int, ...]
    plan_scores: tuple[int, ...]
    point_cards: tuple[int, ...]
    """The indexes of the cards worth points, in index order."""
    total: int

    def __new__(cls, points: tuple[int, ...]) -> PointTable:
        found = cls._interned.get(points)
        if found is not None:
            return found
        if len(points) != DECK_SIZE or not all(0 <= p <= 255 for p in points):
            raise ValueError("a point table holds 52 points of 0..255")
        table = super().__new__(cls)
        table.points = points
        table.total = sum(points)
        table.point_cards = tuple(c for c, p in enumerate(points) if p)
        # RULES.md's offering order: more cards, then more points, then the smaller index list;
        # additive per card (see engine.plans), so each card gets one integer share.
        table.plan_scores = tuple(
            (1 << _SIZE_SHIFT) + (p << _POINTS_SHIFT) + (1 << (DECK_SIZE - 1 - c))
            for c, p in enumerate(points)
        )
        cls._interned[points] = table
        return table

    def __repr__(self) -> str:
        held = ", ".join(
            f"{RANKS[c % 13]}{SUITS[c // 13]}: {p}" for c, p in enumerate(self.points) if p
        )
        return f"PointTable({{{held}}})"

    def __reduce__(self) -> tuple[type[PointTable], tuple[tuple[int, ...]]]:
        return (PointTable, (self.points,))

    def of(self, mask: int) -> int:
        """The special points held in ``mask``."""
        # The few point cards, not every card of the mask: a hand's piles hold dozens of cards.
        total = 0
        for c in self.point_cards:
            if mask >> c & 1:
                total += self.points[c]
        return total


STANDARD_POINTS: Final = PointTable(POINTS)
"""RULES.md and every profile of VARIANTS.md: each J and A 1, 2C 2, 10D 3 (13 in all)."""


@dataclass(frozen=True, slots=True)
class Profile:
    """One rule system at one seat count, with its options. Validated on construction.

    Raises:
        ValueError: the fields do not describe a playable game.
    """

    name: str
    seats: int = 2
    partnerships: bool = False
    """Four seats in two partnerships, seats {0, 2} and {1, 3}: a side is two partners."""
    target: int = 121
    """Points that win a game (checked after a complete hand)."""
    cards_per_deal: int = 4
    deal_singly: bool = False
    """Cards are dealt one at a time round the table (lobashev), not in packets."""
    floor_cards: int = 4
    buried: int = JACK_MASK | SEVEN_OF_DIAMONDS.bit
    """Cards that may not lie on the opening floor: buried in the stock and replaced."""
    bottom_card: BottomCard = BottomCard.HIDDEN
    seven: SevenRule = SevenRule.COUNT_NO_QUEEN_OR_KING
    majority_cards: int = 27
    """A side needs more cards than every other side and at least this many for the majority."""
    majority_points: int = 30
    majority_tie: MajorityTie = MajorityTie.CARRY
    basra_points: int = 10
    basra_value: BasraValue = BasraValue.FIXED
    points: PointTable = field(default=STANDARD_POINTS)
    rubber_wins: int = 0
    """Games a side must win to take the rubber (3: best of five); 0 plays one game."""
    final_target: int = 0
    """Target of a rubber's deciding game (two games all), when there is a rubber."""

    def __post_init__(self) -> None:
        if not 2 <= self.seats <= 4:
            raise ValueError(f"seats must be 2..4, not {self.seats!r}")
        if self.partnerships and self.seats != 4:
            raise ValueError("partnerships need four seats")
        for name in ("target", "final_target"):
            if not 0 <= getattr(self, name) <= 0xFFFF:
                raise ValueError(f"{name} must be 0..65535")
        if self.target < 1:
            raise ValueError("target must be positive")
        if self.cards_per_deal < 1 or not 0 <= self.floor_cards <= 8:
            raise ValueError("cards_per_deal must be positive and floor_cards 0..8")
        dealt = DECK_SIZE - self.floor_cards
        if dealt % (self.seats * self.cards_per_deal):
            raise ValueError(
                f"{dealt} cards do not split into deals of {self.cards_per_deal} "
                f"for {self.seats} seats"
            )
        if not 0 < self.majority_cards <= DECK_SIZE:
            raise ValueError("majority_cards must be 1..52")
        if not 0 <= self.buried < 1 << DECK_SIZE:
            raise ValueError("buried must be a set of cards")
        for points in (self.majority_points, self.basra_points):
            if not 0 <= points <= 255:
                raise ValueError("majority_points and basra_points must be 0..255")
        if self.buried and self.floor_cards:
            # clean_floor puts a buried card back into the stock and draws the next one: there
            # must be a stock (more than one deal a hand), and cards enough that no deal can
            # leave only buried ones for the floor (else it would never be clean).
            opening = self.seats * self.cards_per_deal
            if dealt == opening:
                raise ValueError("a buried card needs a stock to go back into: one deal a hand")
            if DECK_SIZE - self.buried.bit_count() - opening < self.floor_cards:
                raise ValueError(
                    f"{self.buried.bit_count()} buried cards can leave no clean opening floor"
                )
        if self.rubber_wins and (self.sides != 2 or self.final_target < 1):
            raise ValueError("a rubber needs two sides and a final target")
        if not 0 <= self.rubber_wins <= 9:
            raise ValueError("rubber_wins must be 0..9")

    @property
    def sides(self) -> int:
        """Number of sides (what scores): the seats, or two partnerships."""
        return 2 if self.partnerships else self.seats

    def side_of(self, seat: int) -> int:
        """The side ``seat`` plays for."""
        return side_of_seat(seat, self.partnerships)

    @property
    def deals_per_hand(self) -> int:
        """Deals in one hand (ERAM: 6)."""
        return (DECK_SIZE - self.floor_cards) // (self.seats * self.cards_per_deal)

    @property
    def plays_per_hand(self) -> int:
        """Plays in one hand (ERAM: 48)."""
        return DECK_SIZE - self.floor_cards

    @property
    def fixed_points(self) -> int:
        """Points every hand distributes besides basras and the carry (ERAM: 43)."""
        return self.points.total + self.majority_points


ERAM: Final = Profile(name="eram")
"""RULES.md: two seats, 121 points, deals of 4, 7D basra on 10 or fewer floor cards, no Q/K."""


@dataclass(frozen=True, slots=True)
class RuleSystem:
    """A rule system as players choose it: the seat counts and options it allows, what a
    frontend shows about it, and the profile of a match at one seat count."""

    name: str
    seat_counts: tuple[int, ...]
    partnership_seats: tuple[int, ...]
    """Seat counts played in two partnerships (the others: each seat for itself)."""
    direction: str
    """Where the next seat sits round a table: "anticlockwise", "clockwise" or "unspecified"."""
    source: str
    """The seed text this profile states (VARIANTS.md)."""
    seven_in_words: str
    base: Profile
    """The profile at the first allowed seat count, with no option."""
    rubber: bool = False
    """The rubber option exists (best of five, the deciding game to ``rubber_final_target``)."""
    bottom_card_seats: tuple[int, ...] = ()
    """Seat counts at which option ``bottom_card_shown`` exists."""

    @property
    def wordings(self) -> tuple[Wording, ...]:
        """Its name and description for players, once per language of ``LANGUAGES``."""
        return WORDINGS[self.name]

    @property
    def title(self) -> str:
        """Its name for players in English."""
        return WORDINGS[self.name][0].name

    def profile(
        self, seats: int, *, rubber: bool = False, bottom_card_shown: bool = False
    ) -> Profile:
        """The profile of a match of this rule system.

        Raises:
            SeatsNotAllowedError: the rule system is not played by ``seats`` seats.
            OptionNotAvailableError: an option the rule system (at that seat count) lacks.
        """
        if seats not in self.seat_counts:
            raise SeatsNotAllowedError(self.name, seats, self.seat_counts)
        if rubber and not self.rubber:
            raise OptionNotAvailableError(self.name, "rubber", seats)
        if bottom_card_shown and seats not in self.bottom_card_seats:
            raise OptionNotAvailableError(self.name, "bottom_card_shown", seats)
        profile = replace(self.base, seats=seats, partnerships=seats in self.partnership_seats)
        if rubber:
            profile = replace(profile, rubber_wins=RUBBER_WINS, final_target=RUBBER_FINAL_TARGET)
        if bottom_card_shown:
            profile = replace(profile, bottom_card=BottomCard.EVERY_SEAT)
        return profile


RUBBER_WINS: Final = 3
"""egyptian "Rubber": best of five games, won by the first side to win three."""
RUBBER_FINAL_TARGET: Final = 150
"""egyptian "Rubber": at two games all, the fifth game is played to 150."""

_SEVEN_BY_SUM: Final = (
    "Takes the whole floor; a basra when every floor card is a number card (A..10) and their "
    "values add up to 10 or less (the 7D itself not counted). A J, Q or K on the floor: no basra."
)
EGYPTIAN: Final = Profile(
    name="egyptian",
    target=101,
    bottom_card=BottomCard.DEALER,
    seven=SevenRule.SUM_OF_NUMBERS,
)
"""VARIANTS.md `egyptian`: deals of 4, the bottom card shown to the dealer, the 7D by sum, 101."""

RULE_SYSTEMS: Final[dict[str, RuleSystem]] = {
    s.name: s
    for s in (
        RuleSystem(
            name="eram",
            seat_counts=(2,),
            partnership_seats=(),
            direction="unspecified",
            source="000_b73154e96165528a.txt",
            seven_in_words=(
                "Takes the whole floor; a basra when the floor held 10 cards or fewer and none of "
                "them is a Q or K (the count of cards, not their sum)."
            ),
            base=ERAM,
        ),
        RuleSystem(
            name="egyptian",
            seat_counts=(2, 4),
            partnership_seats=(4,),
            direction="anticlockwise",
            source="001_e2f6147d063efb1f.txt",
            seven_in_words=_SEVEN_BY_SUM,
            base=EGYPTIAN,
            rubber=True,
            bottom_card_seats=(2,),
        ),
        RuleSystem(
            name="jordanian",
            seat_counts=(2, 4),
            partnership_seats=(4,),
            direction="anticlockwise",
            source="001_e2f6147d063efb1f.txt",
            seven_in_words=_SEVEN_BY_SUM + " A 7D basra scores 14.",
            base=replace(EGYPTIAN, name="jordanian", basra_value=BasraValue.TWICE_THE_CARD),
            rubber=True,
            bottom_card_seats=(2,),
        ),
        RuleSystem(
            name="lobashev",
            seat_counts=(2, 4),
            partnership_seats=(4,),
            direction="anticlockwise",
            source="001_e2f6147d063efb1f.txt",
            seven_in_words=(
                "No special power: an ordinary 7. A 7D capture that empties the floor is a basra "
                "like any 7's."
            ),
            base=replace(
                EGYPTIAN,
                name="lobashev",
                cards_per_deal=6,
                deal_singly=True,
                buried=JACK_MASK,
                seven=SevenRule.ORDINARY,
                majority_cards=1,
                majority_points=3,
                majority_tie=MajorityTie.NOTHING,
            ),
        ),
        RuleSystem(
            name="persian",
            seat_counts=(2, 3, 4),
            partnership_seats=(),
            direction="clockwise",
            source="004_0fc1e83764543eb3.txt",
            seven_in_words=_SEVEN_BY_SUM,
            base=Profile(
                name="persian", target=101, seven=SevenRule.SUM_OF_NUMBERS, majority_cards=1
            ),
        ),
        RuleSystem(
            name="persian-partnership",
            seat_counts=(4,),
            partnership_seats=(4,),
            direction="clockwise",
            source="004_0fc1e83764543eb3.txt",
            seven_in_words=_SEVEN_BY_SUM,
            base=Profile(
                name="persian-partnership",
                seats=4,
                partnerships=True,
                target=101,
                seven=SevenRule.SUM_OF_NUMBERS,
            ),
        ),
    )
}
"""Every rule system of VARIANTS.md by name, in the order it states them. (The Lebanese game is
not one: its basra cases are missing from the seed.)"""


def rule_system(name: str) -> RuleSystem:
    """The rule system called ``name``.

    Raises:
        UnknownRulesError: there is none.
    """
    try:
        return RULE_SYSTEMS[name]
    except KeyError:
        raise UnknownRulesError(name, tuple(RULE_SYSTEMS)) from None


def match_profile(
    name: str, seats: int, *, rubber: bool = False, bottom_card_shown: bool = False
) -> Profile:
    """The profile of a match of rule system ``name`` at ``seats`` seats with the options.

    Raises:
        UnknownRulesError, SeatsNotAllowedError, OptionNotAvailableError: see ``RuleSystem``.
    """
    return rule_system(name).profile(seats, rubber=rubber, bottom_card_shown=bottom_card_shown)
