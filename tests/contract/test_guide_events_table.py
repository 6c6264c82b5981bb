"""The API guide's table of which events each version holds (proto/README.md, "Resuming
`WatchMatch`") is what the engine's changes yield.

Random matches of every rule system at every seat count, and a rubber of each game that has one,
are played on the engine; each change is put in the table's row by what it is (a deal, a play
that leaves a card in some hand, one that empties every hand with the stock not empty, a hand's
last play), never by its events. Its events must then be the row's, in the row's order, each
optional one left out or not; and every event the row names must turn up in some match, so a
row that names too many is caught as well as one that names too few.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from typing import Final

import pytest

from basra.engine import (
    RULE_SYSTEMS,
    Phase,
    State,
    apply,
    deal_next_hand,
    match_profile,
    new_match,
)
from basra.engine.bots import random_play
from basra.engine.events import Event
from tests.contract.test_guide_snippets import GUIDE

KINDS: Final = (
    "HandStarted",
    "CardsDealt",
    "CardPlayed",
    "FloorCollected",
    "HandScored",
    "GameEnded",
    "MatchEnded",
    "SeatChanged",
)
DEAL: Final = "deal"
PLAY: Final = "play"
REDEAL: Final = "redeal"
LAST: Final = "last"
SEATS: Final = "seats"
# The words of each row's first column that says which change it is.
ROW_WORDS: Final = {
    "next-hand `Deal`": DEAL,
    "leaves a card in some hand": PLAY,
    "empties every hand": REDEAL,
    "last play of a hand": LAST,
    "`ClaimSeat`": SEATS,
}
MATCHES: Final = 2
"""Random matches per rule system, seat count and option."""


def table() -> dict[str, list[str]]:
    """The table's rows: the change each is for, and the events it names, in order."""
    text = GUIDE.read_text()
    start = text.index("### Resuming `WatchMatch`")
    section = text[start : text.index("\n## ", start)]
    rows = re.findall(r"^ *\| (.+?) \| (.+?) \|$", section, re.M)
    out: dict[str, list[str]] = {}
    assert rows[0] == ("Version made by", "Events")
    for made_by, events in rows[1:]:
        (change,) = [v for k, v in ROW_WORDS.items() if k in made_by]
        out[change] = [name for name in re.findall(r"`(\w+)`", events) if name in KINDS]
    return out


def kinds(events: tuple[Event, ...]) -> list[str]:
    return [type(event).__name__ for event in events]


def games() -> list[tuple[str, int, bool]]:
    return [
        (name, seats, rubber)
        for name, system in RULE_SYSTEMS.items()
        for seats in system.seat_counts
        for rubber in ((False, True) if system.rubber else (False,))
    ]


def changes(name: str, seats: int, rubber: bool, seed: int) -> list[tuple[str, list[str]]]:
    """Every change of one random match to its end: which it is, and its events' kinds."""
    rng = random.Random(f"events-table/{name}/{seats}/{rubber}/{seed}")
    state: State
    state, events = new_match(seed, match_profile(name, seats, rubber=rubber))
    out = [(DEAL, kinds(events))]
    while state.phase is not Phase.MATCH_OVER:
        if state.phase is Phase.HAND_OVER:
            state, events = deal_next_hand(state)
            out.append((DEAL, kinds(events)))
            continue
        in_hands = sum(len(hand) for hand in state.hands)
        stock = len(state.stock)
        state, events = apply(state, random_play(state, rng))
        if state.phase is not Phase.PLAYING:
            change = LAST
        elif in_hands == 1 and stock:
            change = REDEAL
        else:
            change = PLAY
        out.append((change, kinds(events)))
    return out


def follows(row: list[str], seen: list[str]) -> bool:
    """Whether ``seen`` is ``row`` with some events after its first left out."""
    rest = iter(row[1:])
    return seen[:1] == row[:1] and all(kind in rest for kind in seen[1:])


def test_the_table_has_a_row_for_every_change() -> None:
    rows = table()
    assert set(rows) == {DEAL, PLAY, REDEAL, LAST, SEATS}
    assert rows[SEATS] == ["SeatChanged"]  # the service's own change: tests/service prove it


@pytest.mark.parametrize(("name", "seats", "rubber"), games())
def test_every_change_holds_the_events_its_row_names(name: str, seats: int, rubber: bool) -> None:
    rows = table()
    seen: dict[str, set[str]] = defaultdict(set)
    for seed in range(MATCHES):
        for change, events in changes(name, seats, rubber, seed):
            assert follows(rows[change], events), f"{change}: {events} is not {rows[change]}"
            seen[change].update(events)
    if rubber:  # only a rubber's games end apart from the match
        assert "GameEnded" in seen[LAST]
    else:
        assert "GameEnded" not in seen[LAST]
    assert {"CardPlayed", "HandScored", "MatchEnded"} <= seen[LAST]


def test_every_event_a_row_names_happens() -> None:
    rows = table()
    seen: dict[str, set[str]] = defaultdict(set)
    for name, seats, rubber in games():
        for change, events in changes(name, seats, rubber, 0):
            seen[change].update(events)
    for change in (DEAL, PLAY, REDEAL, LAST):
        assert set(rows[change]) == seen[change], change


def test_follows_takes_only_the_rows_order() -> None:
    row = ["CardPlayed", "FloorCollected", "HandScored", "GameEnded", "MatchEnded"]
    assert follows(row, ["CardPlayed", "HandScored", "GameEnded", "MatchEnded"])
    assert follows(row, ["CardPlayed", "HandScored"])
    assert not follows(row, ["CardPlayed", "GameEnded", "HandScored"])
    assert not follows(row, ["HandScored"])
