"""An independent, deliberately naive reading of RULES.md's capture plans, for cross-checking.

It enumerates every family of disjoint sum groups literally (exponential: small floors only), so
it shares no code and no idea with engine.plans beyond the rule text.
"""

from __future__ import annotations

from itertools import combinations

from basra.engine.cards import Card


def reference_plans(floor: list[Card], card: Card) -> list[tuple[frozenset[Card], bool, bool]]:
    """(captured set, basra, sweep) of each plan, in RULES.md's order, at most 12."""
    if not floor:
        return []
    if str(card)[:-1] == "J":
        return [(frozenset(floor), False, True)]
    if str(card) == "7D":
        faces = any(str(c)[:-1] in ("Q", "K") for c in floor)
        return [(frozenset(floor), len(floor) <= 10 and not faces, True)]
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

    return [(s, s == frozenset(floor), False) for s in sorted(captured_sets, key=order)][:12]
