"""The game state: one immutable value per position, and the small records it holds.

State is a frozen dataclass of tuples and ints (card sets are 52-bit masks), so ``apply`` returns
a new value and never mutates; ``engine.codec`` turns it into compact bytes and back.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from basra.engine.cards import DECK_SIZE, Card
from basra.engine.profile import Profile


class Phase(enum.IntEnum):
    """Where a match stands."""

    PLAYING = 1
    """A hand is in progress: the seat ``turn`` must play."""
    HAND_OVER = 2
    """The hand is scored and the match goes on: the next hand must be dealt (in a rubber, the
    next hand may start the next game)."""
    MATCH_OVER = 3
    """A side has won (the match, or the rubber)."""


@dataclass(frozen=True, slots=True, init=False)
class Play:
    """A seat's move: play ``card``, taking plan ``plan`` when named.

    ``plan`` may be omitted when the card has at most one plan. ``trail`` declares that the card
    should stay on the floor; it is rejected when the card can capture (capture is mandatory).
    """

    seat: int
    card: Card
    plan: int | None = None
    trail: bool = False

    # Written out, not generated: mypyc compiles this one to direct slot stores.
    def __init__(self, seat: int, card: Card, plan: int | None = None, trail: bool = False) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "card", card)
        object.__setattr__(self, "plan", plan)
        object.__setattr__(self, "trail", trail)


@dataclass(frozen=True, slots=True, init=False)
class SideHandScore:
    """One side's points for one hand (RULES.md, "Scoring"; a side is a seat or a partnership)."""

    cards: int
    """Captured cards, the leftover floor included."""
    majority: int
    """The profile's majority points (ERAM: 30) for the majority, else 0."""
    carry: int
    """Carry released to this side with its majority."""
    specials: int
    """Special points by the profile's table (ERAM: J and A 1 each, 2C 2, 10D 3)."""
    basras: int
    """Number of basras."""
    basra_points: int
    """Points for those basras (ERAM: 10 each)."""

    # Written out, not generated: mypyc compiles this one to direct slot stores.
    def __init__(
        self, cards: int, majority: int, carry: int, specials: int, basras: int, basra_points: int
    ) -> None:
        object.__setattr__(self, "cards", cards)
        object.__setattr__(self, "majority", majority)
        object.__setattr__(self, "carry", carry)
        object.__setattr__(self, "specials", specials)
        object.__setattr__(self, "basras", basras)
        object.__setattr__(self, "basra_points", basra_points)

    @property
    def total(self) -> int:
        """Everything this side scored in the hand."""
        return self.majority + self.carry + self.specials + self.basra_points


SeatHandScore = SideHandScore
"""The name from two-seat days, when every side was one seat."""


@dataclass(frozen=True, slots=True, init=False)
class HandScore:
    """The scoring of one complete hand."""

    hand: int
    """Hand number, from 1 (counted through the whole match, across a rubber's games)."""
    dealer: int
    sides: tuple[SideHandScore, ...]
    """Each side's scoring, indexed by side (with no partnerships, sides are seats)."""
    carry_before: int
    """Carry standing when the hand began."""
    carry_after: int
    """Carry after the hand: 0 once released, plus the majority's value after a tie that
    carries."""

    # Written out, not generated: mypyc compiles this one to direct slot stores.
    def __init__(
        self,
        hand: int,
        dealer: int,
        sides: tuple[SideHandScore, ...],
        carry_before: int,
        carry_after: int,
    ) -> None:
        object.__setattr__(self, "hand", hand)
        object.__setattr__(self, "dealer", dealer)
        object.__setattr__(self, "sides", sides)
        object.__setattr__(self, "carry_before", carry_before)
        object.__setattr__(self, "carry_after", carry_after)

    @property
    def seats(self) -> tuple[SideHandScore, ...]:
        """``sides``, under the name from two-seat days (one seat per side)."""
        return self.sides

    @property
    def totals(self) -> tuple[int, ...]:
        """Each side's total for the hand."""
        return tuple(s.total for s in self.sides)

    @property
    def unassigned_cards(self) -> int:
        """Leftover cards nobody took (only when nobody captured in the hand)."""
        return DECK_SIZE - sum(s.cards for s in self.sides)


@dataclass(frozen=True, slots=True)
class GameResult:
    """One finished game of a rubber."""

    winner: int
    """The winning side."""
    totals: tuple[int, ...]
    """Each side's final total in that game."""


@dataclass(frozen=True, slots=True, init=False)
class LastPlay:
    """The most recent play of the current hand, as every seat saw it."""

    seat: int
    card: Card
    plan: int
    """Plan id taken, 0 for a trail."""
    captured: tuple[Card, ...]
    """Floor cards taken (not the played card); empty for a trail."""
    basra_points: int
    """Points the play scored as a basra; 0 when it was none."""
    sweep: bool

    # Written out, not generated: one is made on every play, and mypyc compiles this one to
    # direct slot stores (a named tuple's __new__ is interpreted).
    def __init__(
        self,
        seat: int,
        card: Card,
        plan: int,
        captured: tuple[Card, ...],
        basra_points: int,
        sweep: bool,
    ) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "card", card)
        object.__setattr__(self, "plan", plan)
        object.__setattr__(self, "captured", captured)
        object.__setattr__(self, "basra_points", basra_points)
        object.__setattr__(self, "sweep", sweep)


@dataclass(frozen=True, slots=True, init=False)
class State:
    """A match at one moment. Build it with ``engine.new_match``; change it with ``apply``.

    Holds secrets: every hand, the stock order and the seed. Show players ``engine.view``.
    """

    profile: Profile
    seed: int
    """The match's randomness: with the plays it determines everything (replays)."""
    phase: Phase
    hand_number: int
    """Current (or just finished) hand, from 1."""
    dealer: int
    turn: int
    """Seat to play (meaningful only while PLAYING)."""
    hands: tuple[tuple[Card, ...], ...]
    """Each seat's cards in the order dealt."""
    floor: tuple[Card, ...]
    """Face-up cards in the order they arrived."""
    stock: tuple[Card, ...]
    """Undealt cards, top first."""
    captured: tuple[int, ...]
    """Each side's captured cards this hand (mask), played capturing cards included: partners
    keep one pile."""
    basras: tuple[int, ...]
    """Each side's basras this hand."""
    basra_points: tuple[int, ...]
    """Each side's basra points this hand (the profile's basra value of each basra)."""
    last_capturer: int | None
    """Seat that captured last this hand; None while nobody has."""
    last_play: LastPlay | None
    """The current hand's most recent play; None before its first."""
    plays: int
    """Plays made in the current hand (ERAM: 0..48)."""
    scores: tuple[int, ...]
    """Each side's total in the current game."""
    carry: int
    """Majority points carried after tied majorities (ERAM: 30, 60, ...)."""
    history: tuple[HandScore, ...]
    """Every completed hand's scoring in the current game, oldest first."""
    games: tuple[GameResult, ...]
    """A rubber's finished games, oldest first (empty without a rubber)."""
    winner: int | None
    """Winning side once the match is over."""
    game_ended: bool
    """A rubber's game has just been won (its result is the last of ``games``) and the next
    game is not dealt yet: ``scores``, ``carry`` and ``history`` are still the finished game's,
    so a score sheet shows it until the next game's first deal starts it at 0 with no carry."""

    # Written out, not generated: mypyc compiles this one to direct slot stores.
    def __init__(
        self,
        profile: Profile,
        seed: int,
        phase: Phase,
        hand_number: int,
        dealer: int,
        turn: int,
        hands: tuple[tuple[Card, ...], ...],
        floor: tuple[Card, ...],
        stock: tuple[Card, ...],
        captured: tuple[int, ...],
        basras: tuple[int, ...],
        basra_points: tuple[int, ...],
        last_capturer: int | None,
        last_play: LastPlay | None,
        plays: int,
        scores: tuple[int, ...],
        carry: int,
        history: tuple[HandScore, ...],
        games: tuple[GameResult, ...],
        winner: int | None,
        game_ended: bool = False,
    ) -> None:
        object.__setattr__(self, "profile", profile)
        object.__setattr__(self, "seed", seed)
        object.__setattr__(self, "phase", phase)
        object.__setattr__(self, "hand_number", hand_number)
        object.__setattr__(self, "dealer", dealer)
        object.__setattr__(self, "turn", turn)
        object.__setattr__(self, "hands", hands)
        object.__setattr__(self, "floor", floor)
        object.__setattr__(self, "stock", stock)
        object.__setattr__(self, "captured", captured)
        object.__setattr__(self, "basras", basras)
        object.__setattr__(self, "basra_points", basra_points)
        object.__setattr__(self, "last_capturer", last_capturer)
        object.__setattr__(self, "last_play", last_play)
        object.__setattr__(self, "plays", plays)
        object.__setattr__(self, "scores", scores)
        object.__setattr__(self, "carry", carry)
        object.__setattr__(self, "history", history)
        object.__setattr__(self, "games", games)
        object.__setattr__(self, "winner", winner)
        object.__setattr__(self, "game_ended", game_ended)

    @property
    def seats(self) -> int:
        """Number of seats."""
        return self.profile.seats

    @property
    def games_won(self) -> tuple[int, ...]:
        """Games each side has won in the rubber."""
        won = [0] * self.profile.sides
        for game in self.games:
            won[game.winner] += 1
        return tuple(won)

    @property
    def game(self) -> int:
        """The current game's number in a rubber, from 1 (the last game once the rubber is won);
        1 without a rubber."""
        over = (self.phase is Phase.MATCH_OVER or self.game_ended) and self.games
        return len(self.games) + (0 if over else 1)

    @property
    def bottom_card(self) -> Card | None:
        """The stock's bottom card (the card dealt last); None once the stock is empty."""
        return self.stock[-1] if self.stock else None

    @property
    def deal_number(self) -> int:
        """Deals made in the current hand (ERAM: 1..6)."""
        per_deal = self.profile.seats * self.profile.cards_per_deal
        return self.profile.deals_per_hand - len(self.stock) // per_deal

    @property
    def plays_left(self) -> int:
        """Plays still to come in the current hand."""
        return self.profile.plays_per_hand - self.plays
