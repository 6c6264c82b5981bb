"""Readable transcripts of whole seeded matches: the golden files a reviewer reads.

    python -m tests.engine.transcript --update   # rewrite tests/engine/golden/*.txt

Every deal shows both hands (a transcript is omniscient), every play shows the hand it came from,
the floor it met, the plans it had and what it took; every hand ends with its full scoring.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from basra.engine import (
    CardPlayed,
    CardsDealt,
    FloorCollected,
    HandScored,
    HandStarted,
    MatchEnded,
    Phase,
    State,
    apply,
    deal_next_hand,
    format_cards,
    new_match,
)
from basra.engine.bots import greedy_play, random_play
from basra.engine.game import legal_plans

GOLDEN = Path(__file__).parent / "golden"
CASES = {
    "match-seed-1-random-vs-random": (1, "random", "random"),
    "match-seed-2026-greedy-vs-random": (2026, "greedy", "random"),
    "match-seed-77-greedy-vs-greedy": (77, "greedy", "greedy"),
}


def transcript(seed: int, bots: tuple[str, str]) -> str:
    rng = random.Random(seed)
    state, events = new_match(seed)
    lines = [
        f"# Basra, ERAM rules. Seed {seed}; seat 0 {bots[0]} bot, seat 1 {bots[1]} bot.",
        f"# First dealer: seat {state.dealer} (drawn from the seed).",
    ]
    while True:
        lines += describe(state, events)  # what the last step did besides the play itself
        if state.phase is Phase.MATCH_OVER:
            return "\n".join(lines) + "\n"
        if state.phase is Phase.HAND_OVER:
            state, events = deal_next_hand(state)
            continue
        seat = state.turn
        play = greedy_play(state) if bots[seat] == "greedy" else random_play(state, rng)
        plans = legal_plans(state, play.card)
        before = state
        state, events = apply(state, play)
        played = events[0]
        assert isinstance(played, CardPlayed)
        offer = f"{len(plans)} plan{'s' if len(plans) != 1 else ''}" if plans else "no plan"
        action = (
            f"takes {format_cards(played.captured)} (plan {played.plan} of {len(plans)})"
            if played.captured
            else "trails"
        )
        flags = "".join(f"  {f.upper()}" for f in ("basra", "sweep") if getattr(played, f))
        lines.append(
            f"  {before.plays + 1:2}. seat {seat} [{format_cards(before.hands[seat])}] on "
            f"[{format_cards(before.floor)}]: {played.card} ({offer}) {action}{flags}"
        )
        events = events[1:]  # described at the top of the loop


def describe(state: State, events: tuple[object, ...]) -> list[str]:
    out: list[str] = []
    for event in events:
        if isinstance(event, HandStarted):
            out += [
                "",
                f"== Hand {event.hand}: dealer seat {event.dealer}, seat {event.leader} leads",
                f"deal 1: seat 0 [{format_cards(state.hands[0])}], "
                f"seat 1 [{format_cards(state.hands[1])}], floor [{format_cards(event.floor)}]",
            ]
        elif isinstance(event, CardsDealt):
            out.append(
                f"deal {event.deal}: seat 0 [{format_cards(state.hands[0])}], "
                f"seat 1 [{format_cards(state.hands[1])}], stock left {event.stock_left}"
            )
        elif isinstance(event, FloorCollected):
            who = "nobody" if event.seat is None else f"seat {event.seat} (last capturer)"
            out.append(f"leftover [{format_cards(event.cards)}] goes to {who}, not a basra")
        elif isinstance(event, HandScored):
            score = event.score
            for seat, s in enumerate(score.seats):
                out.append(
                    f"score seat {seat}: {s.cards} cards, majority {s.majority}, carry {s.carry}, "
                    f"specials {s.specials}, basras {s.basras} ({s.basra_points}) = {s.total}"
                )
            out.append(
                f"totals: seat 0 {event.totals[0]}, seat 1 {event.totals[1]}; "
                f"carry {score.carry_after}"
                + ("; tie at the target: extra hand" if event.extra_hand else "")
            )
        elif isinstance(event, MatchEnded):
            out.append(f"== Seat {event.winner} wins {event.totals[0]} to {event.totals[1]}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--update", action="store_true", help="rewrite the golden files")
    args = parser.parse_args()
    for name, (seed, *bots) in CASES.items():
        text = transcript(seed, (bots[0], bots[1]))
        path = GOLDEN / f"{name}.txt"
        if args.update:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
        else:
            print(text)


if __name__ == "__main__":
    main()
