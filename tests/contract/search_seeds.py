"""Offline search, on the engine alone, for the seeded matches the rarer golden vectors need.

    .venv/bin/python -m tests.contract.search_seeds

Two positions are too rare to stumble on: a hand split 26/26 (no majority: 30 points carried to
the next hand) and totals tied at 121 or more after a hand (an extra hand is played). Both are
reachable by plain play, so the search plays seeded matches with seeded random choices
(``engine.bots.random_play``) and keeps the first match, in seed order, showing each:

- carry: hand 1 ends 26/26 and hand 2 releases the carry to its majority;
- tie: a hand ends with both totals equal and at 121 or more, and the match then ends;
- showcase: hand 1 alone shows every kind of play (a basra, a plan other than 1, a jack sweep,
  the seven of diamonds, a trail), for the full-hand vector.

The result (match seed, choice seed, every play, matches tried, seconds) is written to
``search_results.json``; ``generate_vectors`` plays those plays on the real server. Match seed
``n`` is searched with choices from ``random.Random(f"contract/{n}")``, so a result replays
from its seed alone.
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from basra.engine import CardPlayed, HandScored, Phase, State, apply, deal_next_hand, new_match
from basra.engine.bots import random_play
from basra.engine.cards import JACK, SEVEN_OF_DIAMONDS

RESULTS: Final = Path(__file__).with_name("search_results.json")
MAX_MATCHES: Final = 200_000

PlayRecord = tuple[int, str, int]
"""(seat, card, plan id) with plan id 0 for a trail: what a client sends to Play."""


def choices(seed: int) -> random.Random:
    """The random choices of the search's match ``seed``."""
    return random.Random(f"contract/{seed}")


Stop = Callable[[State, list[HandScored], list[CardPlayed]], bool | None]
"""Decides after every hand, from the state, the hands scored so far and every play so far:
True keeps the match (stop here), False abandons it, None plays on."""


def play_match(seed: int, stop: Stop) -> tuple[list[PlayRecord], list[HandScored], bool]:
    """Play match ``seed`` with seeded random choices until it ends or ``stop`` decides.

    Returns the plays, the hand scorings and whether the match was kept.
    """
    rng = choices(seed)
    state, _ = new_match(seed)
    plays: list[PlayRecord] = []
    played: list[CardPlayed] = []
    scored: list[HandScored] = []
    while True:
        if state.phase is Phase.HAND_OVER:
            state, _ = deal_next_hand(state)
        play = random_play(state, rng)
        plays.append((play.seat, str(play.card), play.plan or 0))
        state, events = apply(state, play)
        played.extend(e for e in events if isinstance(e, CardPlayed))
        if state.phase is Phase.PLAYING:
            continue
        scored.extend(e for e in events if isinstance(e, HandScored))
        verdict = stop(state, scored, played)
        if verdict is not None:
            return plays, scored, verdict
        if state.phase is Phase.MATCH_OVER:
            return plays, scored, False


def carry_released(state: State, scored: list[HandScored], _: list[CardPlayed]) -> bool | None:
    """Hand 1 split 26/26 and hand 2 paid the 30 carried points to its majority."""
    if len(scored) == 1:
        return None if scored[0].score.carry_after == 30 else False
    return any(s.carry == 30 for s in scored[1].score.seats)


def tie_then_win(state: State, scored: list[HandScored], _: list[CardPlayed]) -> bool | None:
    """Some hand left equal totals of 121 or more, and a later hand ended the match."""
    if state.phase is not Phase.MATCH_OVER:
        return None
    return any(s.extra_hand for s in scored)


def every_kind_of_play(state: State, scored: list[HandScored], played: list[CardPlayed]) -> bool:
    """Hand 1 has a basra, a plan other than 1, a jack sweep, the 7D and a trail."""
    return (
        any(p.basra and p.card.rank != JACK for p in played)
        and any(p.plan >= 2 for p in played)
        and any(p.sweep and p.card.rank == JACK for p in played)
        and any(p.card == SEVEN_OF_DIAMONDS for p in played)
        and any(p.trail for p in played)
    )


def search(name: str, stop: Stop) -> dict[str, object]:
    """The first match seed whose play ``stop`` keeps, with its plays and the search's cost."""
    start = time.perf_counter()
    for seed in range(MAX_MATCHES):
        plays, scored, kept = play_match(seed, stop)
        if kept:
            elapsed = time.perf_counter() - start
            print(f"{name}: seed {seed} after {seed + 1} matches, {elapsed:.1f}s", file=sys.stderr)
            return {
                "seed": seed,
                "choices": f"random.Random('contract/{seed}') with engine.bots.random_play",
                "matches_tried": seed + 1,
                "seconds": round(elapsed, 2),
                "hands": [
                    {"hand": s.score.hand, "totals": list(s.totals), "extra_hand": s.extra_hand}
                    for s in scored
                ],
                "plays": [list(p) for p in plays],
            }
    raise SystemExit(f"{name}: no match in {MAX_MATCHES} seeds; see the module docstring")


def main() -> None:
    results = {
        "showcase": search("showcase", every_kind_of_play),
        "carry": search("carry", carry_released),
        "tie": search("tie", tie_then_win),
    }
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {RESULTS}", file=sys.stderr)


if __name__ == "__main__":
    main()
