"""An independent, deliberately naive reading of RULES.md and VARIANTS.md, for cross-checking.

It enumerates every family of disjoint sum groups literally (exponential: small floors only), and
reads each rule system's differences (the 7D criterion, the majority and its ties, basra values,
the carry) straight from the text by the rule system's name, so it shares no code and no idea
with engine.plans, engine.profile, engine.rules or engine.scoring beyond the rule text.
"""

from __future__ import annotations

from itertools import combinations

from basra.engine.cards import Card

SUM_SEVEN = ("egyptian", "jordanian", "persian", "persian-partnership")
PARTNERSHIP_AT_FOUR = ("egyptian", "jordanian", "lobashev", "persian-partnership")


def reference_plans(
    floor: list[Card], card: Card, rules: str = "eram"
) -> list[tuple[frozenset[Card], bool, bool]]:
    """(captured set, basra, sweep) of each plan, in RULES.md's order, at most 12."""
    return every_plan(floor, card, rules)[:12]


def every_plan(
    floor: list[Card], card: Card, rules: str = "eram"
) -> list[tuple[frozenset[Card], bool, bool]]:
    """(captured set, basra, sweep) of each plan, in RULES.md's order, before the cap of 12."""
    if not floor:
        return []
    if str(card)[:-1] == "J":
        return [(frozenset(floor), False, True)]
    if str(card) == "7D" and rules == "eram":
        faces = any(str(c)[:-1] in ("Q", "K") for c in floor)
        return [(frozenset(floor), len(floor) <= 10 and not faces, True)]
    if str(card) == "7D" and rules in SUM_SEVEN:
        # "a basra when every floor card is a number card (A..10) and their values add up to 10
        # or less"; "a floor holding any J, Q or K gives no basra".
        numbers = all(str(c)[:-1] not in ("J", "Q", "K") for c in floor)
        total = sum(int({"A": "1"}.get(str(c)[:-1], str(c)[:-1])) for c in floor) if numbers else 0
        return [(frozenset(floor), numbers and total <= 10, True)]
    # lobashev: "7D has no special power: it is an ordinary 7".
    rank_matches = frozenset(c for c in floor if c.rank == card.rank)
    if str(card)[:-1] in ("Q", "K"):
        return [(rank_matches, rank_matches == frozenset(floor), False)] if rank_matches else []
    others = [c for c in floor if c.value and c.rank != card.rank]
    groups = [
        frozenset(g)
        for n in range(2, len(others) + 1)
        for g in combinations(others, n)
        if sum(c.value for c in g) == card.value
    ]
    captured_sets: set[frozenset[Card]] = set()

    def grow(family_cards: frozenset[Card], start: int) -> None:
        if not any(not (g & family_cards) for g in groups):  # maximal: no further group
            captured_sets.add(rank_matches | family_cards)
        for i in range(start, len(groups)):
            if not groups[i] & family_cards:
                grow(family_cards | groups[i], i + 1)

    grow(frozenset(), 0)
    captured_sets.discard(frozenset())

    def order(s: frozenset[Card]) -> tuple[int, int, list[int]]:
        return (-len(s), -sum(c.points for c in s), sorted(int(c) for c in s))

    return [(s, s == frozenset(floor), False) for s in sorted(captured_sets, key=order)]


class OverBudgetError(Exception):
    """The reading below would examine more sets than its budget allows."""


def plans_by_order(
    floor: list[Card], card: Card, budget: int = 20_000
) -> list[tuple[frozenset[Card], bool, bool]]:
    """The same answer as ``reference_plans``, found by walking RULES.md's order itself.

    For a number card every candidate captured set is visited in the order (more cards first,
    then more points, then the smaller sorted index list) and kept when it is legal, until 12 are
    kept. More cards means fewer left behind, so the walk goes over the floor cards *left* by
    increasing count: cheap on large floors, where legal plans leave few cards. The work is
    capped by ``budget`` sets examined, not by the floor's size.

    Raises:
        OverBudgetError: the floor needs more than ``budget`` sets examined.
    """
    if not 1 <= card.value <= 10 or str(card) == "7D":
        return reference_plans(floor, card)  # J, Q, K, 7D: no sum groups, nothing to walk
    rank_matches = frozenset(c for c in floor if c.rank == card.rank)
    # Only cards worth less than the played card can be in a group of two or more.
    candidates = [c for c in floor if 0 < c.value < card.value]
    splits: dict[tuple[int, ...], bool] = {}

    def split(values: tuple[int, ...]) -> bool:
        """Whether these values (largest first) split into groups each summing to the card's."""
        if not values:
            return True
        if values not in splits:
            first, rest = values[0], values[1:]
            splits[values] = any(split(left) for left in without_sum(rest, card.value - first))
        return splits[values]

    def without_sum(values: tuple[int, ...], target: int) -> set[tuple[int, ...]]:
        """What is left of ``values`` after taking some that sum to ``target``, each way."""
        if target == 0:
            return {values}
        return {
            values[:i] + left
            for i, v in enumerate(values)
            if v <= target
            for left in without_sum(values[i + 1 :], target - v)
        }

    def leaves_no_group(left: tuple[Card, ...]) -> bool:
        sums = {0}
        for c in left:
            sums |= {s + c.value for s in sums}
        return card.value not in sums

    kept: list[frozenset[Card]] = []
    examined = 0
    for size in range(len(candidates) + 1):
        legal = []
        for left in combinations(candidates, size):
            examined += 1
            if examined > budget:
                raise OverBudgetError(f"{len(floor)} floor cards, card {card}")
            taken = [c for c in candidates if c not in left]
            if sum(c.value for c in taken) % card.value or not leaves_no_group(left):
                continue
            if split(tuple(sorted((c.value for c in taken), reverse=True))):
                captured = rank_matches | frozenset(taken)
                if captured:
                    legal.append(captured)
        legal.sort(key=lambda s: (-sum(c.points for c in s), sorted(int(c) for c in s)))
        kept += legal
        if len(kept) >= 12:
            break
    return [(s, s == frozenset(floor), False) for s in kept[:12]]


SPECIAL_POINTS = {"A": 1, "J": 1, "2C": 2, "10D": 3}
"""RULES.md "each J 1, each A 1, 2C 2, 10D 3"; lobashev uses the main description's values,
which are the same (VARIANTS.md)."""


def reference_special_points(cards: list[Card]) -> int:
    return sum(SPECIAL_POINTS.get(str(c), SPECIAL_POINTS.get(str(c)[:-1], 0)) for c in cards)


def reference_basra_value(rules: str, card: Card) -> int:
    """What a basra made by ``card`` scores."""
    if rules == "jordanian":
        # "twice the value of the card that made it, Q and K counting 10"
        rank = str(card)[:-1]
        value = 10 if rank in ("Q", "K") else 1 if rank == "A" else int(rank)
        return 2 * value
    return 10


def reference_majority(rules: str, cards_per_side: list[int], carry: int) -> tuple[list[int], int]:
    """Each side's majority points (carry included) and the carry after, every card taken."""
    value = 3 if rules == "lobashev" else 30
    top = max(cards_per_side)
    leaders = [i for i, n in enumerate(cards_per_side) if n == top]
    out = [0] * len(cards_per_side)
    if len(leaders) == 1:
        # eram/egyptian: "27 or more" of 52 between two sides is the same as "more cards".
        out[leaders[0]] = value + carry
        return out, 0
    if rules == "lobashev":
        return out, carry  # "a tie for the most cards scores nothing and carries nothing"
    return out, carry + value  # "a tied majority is not scored; its value goes into the carry"


def reference_side(rules: str, seats: int, seat: int) -> int:
    """Seats {0, 2} and {1, 3} are partners in a four-seat partnership game."""
    return seat % 2 if seats == 4 and rules in PARTNERSHIP_AT_FOUR else seat


def reference_fixed_total(rules: str, majority_tied: bool) -> int:
    """VARIANTS.md "What every profile must keep": 43, or for lobashev 16 (13 when tied)."""
    if rules == "lobashev":
        return 13 if majority_tied else 16
    return 43
