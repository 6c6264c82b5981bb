"""Capture plans: what a played card may take from the floor (RULES.md, "Capture plans").

A number card takes every floor card of its rank plus a maximal family of disjoint sum groups.
Two families taking the same cards are one plan, so this module works with captured *sets*, never
with families, and it never enumerates every family:

* Whether a set U of the other numeric floor cards is capturable depends only on how many cards of
  each value it holds: U must split into groups that each sum to the card's value, and the floor
  left over must hold no such group (maximality). With at most four cards per value, the value
  profiles are few; the leftover profiles with no group ("sum-free") are enumerated with a bitmask
  of reachable sums, which prunes every extension of a leftover that already contains a group.
* The offering order (more cards, then more points, then the lexicographically smaller sorted
  index list) is additive over cards for sets of equal size: A comes before B exactly when the
  smallest card of their symmetric difference is in A, that is when the sum of 2**(51 - index)
  over A is larger. So each card gets one integer score, a plan's rank is the sum of its cards'
  scores, and the best 12 plans come from a k-best search over the value profiles.

This keeps a crafted floor of two dozen small cards to milliseconds (see ``make bench``).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import combinations
from math import comb, prod
from typing import Final

from basra.engine.cards import (
    CARDS,
    DECK_SIZE,
    JACK,
    KING,
    QUEEN,
    RANK_MASKS,
    SEVEN_OF_DIAMONDS,
    Card,
    cards_of,
    mask_of,
)
from basra.engine.profile import ERAM, PointTable, Profile
from basra.engine.rules import SEVEN_SWEEP_BASRA

MAX_PLANS: Final = 12
"""RULES.md: at most 12 plans are offered, the first 12 of the order."""

# Display order of captured cards: rank matches first, then by rank and suit ("10C 4S 6H").
_ALL_RANKS: Final = (1 << 13) - 1
_SEVEN_OF_DIAMONDS: Final[int] = SEVEN_OF_DIAMONDS
# _LOWER_MASKS[rank] is the set of the cards of lower rank (for a number card, of lower value).
_LOWER_MASKS: Final = tuple(sum(RANK_MASKS[:rank]) for rank in range(13))


@dataclass(frozen=True, slots=True, init=False)
class Plan:
    """One capture plan offered for a card: the cards it takes and what the capture is."""

    id: int
    """1..n in the offering order."""
    captures: tuple[Card, ...]
    """Captured floor cards: rank matches first, then the sum-group cards by value and suit."""
    basra: bool
    """The capture scores a basra (worth the profile's basra value)."""
    sweep: bool
    """A J or 7D taking the whole floor."""
    mask: int = field(repr=False, compare=False)
    """``captures`` as a set."""

    # Written out, not generated: mypyc compiles this one to direct slot stores.
    def __init__(
        self,
        id: int,
        captures: tuple[Card, ...],
        basra: bool,
        sweep: bool,
        mask: int,
    ) -> None:
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "captures", captures)
        object.__setattr__(self, "basra", basra)
        object.__setattr__(self, "sweep", sweep)
        object.__setattr__(self, "mask", mask)


def capture_plans(
    floor: int | Iterable[Card], card: Card, profile: Profile = ERAM
) -> tuple[Plan, ...]:
    """The plans ``card`` has on ``floor`` (a mask or cards) under ``profile``, in offering order.

    An empty tuple means the card trails. ``floor`` must not hold ``card``.
    """
    floor_mask = floor if isinstance(floor, int) else mask_of(floor)
    # The card as a plain int from here on: compiled, arithmetic on a Card object goes through
    # generic Python calls, on an int it is C arithmetic.
    index: int = card
    if index == _SEVEN_OF_DIAMONDS:
        seven_basra = SEVEN_SWEEP_BASRA.get(profile.seven)
        if seven_basra is not None:  # No criterion: an ordinary 7 (lobashev).
            if not floor_mask:
                return ()  # Empty floor: any card trails, 7D included.
            return (Plan(1, _display(floor_mask, -1), seven_basra(floor_mask), True, floor_mask),)
    return _plans(floor_mask, index, profile.points)


# Not cached here: in self-play most questions are new floors, and a cache costs more to probe,
# fill and evict than a typical floor's plans cost to find (`make bench`'s self-play shows it,
# large cache or small). A question asked twice in a row (list a
# card's plans, then play it) is answered by game.legal_plans; the costly steps of a crowded
# floor, _group_profiles, _splits and _choices, keep their caches.
def _plans(floor: int, card: int, table: PointTable) -> tuple[Plan, ...]:
    if not floor:
        return ()  # Empty floor: any card trails.
    rank = card % 13
    if rank == JACK:
        # J sweep: takes the whole floor, never a basra.
        return (Plan(1, _display(floor, -1), basra=False, sweep=True, mask=floor),)
    rank_matches = floor & RANK_MASKS[rank]
    if rank in (QUEEN, KING):
        masks: tuple[int, ...] = (rank_matches,) if rank_matches else ()
    else:
        masks = _number_plan_masks(floor, rank, table)
    # Basra: a capture by any card but J and 7D that leaves the floor empty.
    return tuple(
        [
            Plan(i + 1, _display(masks[i], rank), masks[i] == floor, False, masks[i])
            for i in range(len(masks))  # An index loop: compiled, enumerate is a Python call.
        ]
    )


def _number_plan_masks(floor: int, rank: int, table: PointTable) -> tuple[int, ...]:
    """Captured sets of a number card (A..10) in offering order, at most MAX_PLANS."""
    value = rank + 1
    rank_matches = floor & RANK_MASKS[rank]
    # Sum groups use the other numeric cards; only values below the card's can be in one.
    lower = floor & _LOWER_MASKS[rank]
    if not lower & (lower - 1):
        # At most one such card, and a group needs two: nothing but the rank matches. Seven
        # number-card questions in ten in self-play, decided without the value profiles below.
        return (rank_matches,) if rank_matches else ()
    # Index loops into lists, not generators: compiled, a generator is an object and a call
    # per item, and int.bit_count a method call; _rank_count is C arithmetic.
    by_value = tuple([floor & RANK_MASKS[r] for r in range(rank)])
    counts = tuple([_rank_count(floor, r) for r in range(rank)])
    profiles = _group_profiles(value, counts)
    if len(profiles) == 1 and _all_or_none(profiles[0], counts):
        # The usual small floor: one way to take, all or none of each value.
        only = profiles[0]
        taken = 0
        for u in range(len(only)):  # Index loops, not zip and all: compiled, they are plain C.
            if only[u]:
                taken |= by_value[u]
        sets = [taken]
    else:
        sets = _best_sets(profiles, by_value, table)
    if sets == [0] and not rank_matches:
        return ()  # Nothing to take: the card trails.
    return tuple(rank_matches | s for s in sets)


def _rank_count(cards: int, rank: int) -> int:
    """How many cards of ``rank`` the set ``cards`` holds (one bit per suit, 13 apart)."""
    return (
        (cards >> rank & 1)
        + (cards >> (rank + 13) & 1)
        + (cards >> (rank + 26) & 1)
        + (cards >> (rank + 39) & 1)
    )


def _all_or_none(profile: tuple[int, ...], counts: tuple[int, ...]) -> bool:
    """Whether ``profile`` takes, of each value, none of the floor's cards or all of them."""
    # An index loop, not all() over a generator: compiled, it is plain C.
    for u in range(len(profile)):  # noqa: SIM110
        if profile[u] and profile[u] != counts[u]:
            return False
    return True


def _best_sets(
    profiles: tuple[tuple[int, ...], ...], by_value: tuple[int, ...], table: PointTable
) -> list[int]:
    """The best MAX_PLANS concrete sets over all value profiles, best first."""
    # Bound each profile by its best set (the top-scoring cards of each value), best first.
    bounded = sorted(
        (
            (sum(_best_score(by_value[u], k, table) for u, k in enumerate(p) if k), p)
            for p in profiles
        ),
        reverse=True,
    )
    found: list[tuple[int, int]] = []  # (score, set), kept as a min-heap of the best
    for bound, profile in bounded:
        if len(found) == MAX_PLANS and bound <= found[0][0]:
            break  # No set of this or any later profile can enter the best MAX_PLANS.
        for scored in _profile_sets(profile, by_value, table):
            if len(found) < MAX_PLANS:
                heapq.heappush(found, scored)
            elif scored[0] > found[0][0]:
                heapq.heapreplace(found, scored)
            else:
                break  # The profile's sets come best first: the rest are worse still.
    return [s for _, s in sorted(found, reverse=True)]


def _profile_sets(
    profile: tuple[int, ...], by_value: tuple[int, ...], table: PointTable
) -> list[tuple[int, int]]:
    """The best MAX_PLANS concrete sets with this many cards of each value, best first.

    Scores are additive, so the best sets of the whole are among the best sets of each prefix of
    the values: keeping MAX_PLANS after each value is exact.
    """
    partial = [(0, 0)]
    for u, k in enumerate(profile):
        if k:
            options = _choices(by_value[u], k, table)
            partial = heapq.nlargest(
                MAX_PLANS, [(s + os, m | om) for s, m in partial for os, om in options]
            )
    return partial


@lru_cache(maxsize=1 << 12)
def _choices(cards: int, k: int, table: PointTable) -> tuple[tuple[int, int], ...]:
    """Every way to pick ``k`` of ``cards`` (one value's cards) as (score, set), best first."""
    return _choices_uncached(cards, k, table)


def _choices_uncached(cards: int, k: int, table: PointTable) -> tuple[tuple[int, int], ...]:
    """``_choices`` without its cache: mutmut mutates no decorated function."""
    picks = combinations(cards_of(cards), k)
    score = table.plan_scores
    return tuple(sorted(((sum(score[c] for c in p), mask_of(p)) for p in picks), reverse=True))


def _best_score(cards: int, k: int, table: PointTable) -> int:
    return _choices(cards, k, table)[0][0]


@lru_cache(maxsize=1 << 14)
def _group_profiles(value: int, counts: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Every capturable value profile: how many cards of each value 1..value-1 a plan takes.

    ``counts[u - 1]`` is how many floor cards of value ``u`` are available. A profile is
    capturable when it splits into groups summing to ``value`` and the leftover is sum-free
    (maximality). Leftovers are enumerated directly: sum-freeness is inherited by sub-multisets,
    so the search stops extending a leftover as soon as ``value`` becomes a reachable sum.
    """
    return _group_profiles_uncached(value, counts)


def _group_profiles_uncached(value: int, counts: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """``_group_profiles`` without its cache: mutmut mutates no decorated function."""
    found: list[tuple[int, ...]] = []
    total = 0  # The values of all the cards, leftover or taken.
    for i in range(len(counts)):
        total += (i + 1) * counts[i]
    _extend_leftovers(value, counts, [0] * len(counts), len(counts), 1, total, found)
    return tuple(found)


def _extend_leftovers(
    value: int,
    counts: tuple[int, ...],
    leftover: list[int],
    u: int,
    reachable: int,
    taken: int,
    found: list[tuple[int, ...]],
) -> None:
    """``_group_profiles``'s search: every sum-free leftover of the values ``u`` and below,
    given ``leftover``'s counts of the values above (``reachable``: the sums they reach, one
    bit each; ``taken``: the sum of the values of every card not left over so far), adding
    to ``found`` each capturable profile. Each call sets the count of value ``u`` before it
    goes deeper, so a leaf reads only counts its own path set. A module function, not a
    closure: compiled, its recursive calls are plain C calls."""
    if u == 0:
        if taken % value:
            return  # Most leftovers: what they leave cannot be whole groups.
        profile = tuple([counts[i] - leftover[i] for i in range(len(counts))])
        if _splits(value, profile):
            found.append(profile)
        return
    mask = (1 << (value + 1)) - 1
    for r in range(counts[u - 1] + 1):
        leftover[u - 1] = r
        _extend_leftovers(value, counts, leftover, u - 1, reachable, taken - r * u, found)
        reachable = (reachable | reachable << u) & mask
        if reachable >> value & 1:
            break  # One more card of value u would leave a group behind.


@lru_cache(maxsize=1 << 16)
def _splits(value: int, taken: tuple[int, ...]) -> bool:
    """Whether the multiset ``taken`` (counts per value) splits into groups summing to ``value``."""
    return _splits_uncached(value, taken)


def _splits_uncached(value: int, taken: tuple[int, ...]) -> bool:
    """``_splits`` without its cache: mutmut mutates no decorated function."""
    top = len(taken)
    while top and not taken[top - 1]:
        top -= 1
    if not top:
        return True
    # The largest card must be in some group: try every group it can complete.
    rest = list(taken)
    rest[top - 1] -= 1
    return any(_splits(value, left) for left in _remove_group(value - top, rest, top))


def _remove_group(target: int, counts: list[int], top: int) -> Iterable[tuple[int, ...]]:
    """Each way to take cards of values <= ``top`` summing to ``target``: what is left."""
    if target == 0:
        yield tuple(counts)
        return
    for u in range(min(top, target), 0, -1):
        if counts[u - 1]:
            counts[u - 1] -= 1
            # Non-increasing values, so each sub-multiset is produced once.
            yield from _remove_group(target - u, counts, u)
            counts[u - 1] += 1


def _display(mask: int, rank: int) -> tuple[Card, ...]:
    """The cards of ``mask`` in display order: those of ``rank`` first (none for a negative
    rank), then the others by rank, each rank's by suit."""
    shown: list[Card] = []
    # The ranks the set holds, one bit each: a plan takes a few cards, so only their ranks are
    # visited (compiled, this is C arithmetic on small ints).
    present = (mask | mask >> 13 | mask >> 26 | mask >> 39) & _ALL_RANKS
    if rank >= 0 and present >> rank & 1:
        _append_rank(shown, mask, rank)
        present ^= 1 << rank
    while present:
        low = present & -present
        _append_rank(shown, mask, low.bit_length() - 1)
        present ^= low
    return tuple(shown)


def _append_rank(shown: list[Card], mask: int, rank: int) -> None:
    """Append the cards of ``rank`` that ``mask`` holds, by suit."""
    for c in range(rank, DECK_SIZE, 13):
        if mask >> c & 1:
            shown.append(CARDS[c])


def plan_count(floor: int | Iterable[Card], card: Card, profile: Profile = ERAM) -> int:
    """How many plans ``card`` has on ``floor`` before the cap: ``capture_plans`` offers the
    first ``MAX_PLANS`` of them, so a count above it says that some were left out."""
    floor_mask = floor if isinstance(floor, int) else mask_of(floor)
    rank = card % 13
    sweeping_seven = card == SEVEN_OF_DIAMONDS and profile.seven in SEVEN_SWEEP_BASRA
    if sweeping_seven or not floor_mask or rank >= JACK:
        return len(capture_plans(floor_mask, card, profile))  # one plan at most
    value = rank + 1
    counts = tuple([_rank_count(floor_mask, r) for r in range(rank)])
    profiles = _group_profiles(value, counts)
    if profiles == (tuple(0 for _ in counts),) and not floor_mask & RANK_MASKS[rank]:
        return 0  # Nothing to take: the card trails.
    return sum([prod([comb(n, k) for n, k in zip(counts, p, strict=True)]) for p in profiles])


__all__ = ["MAX_PLANS", "Plan", "capture_plans", "plan_count"]
