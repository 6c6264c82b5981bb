"""Readable transcripts of whole seeded matches: the golden files a reviewer reads.

    python -m tests.engine.transcript --update   # rewrite tests/engine/golden/*.txt

Every deal shows every hand (a transcript is omniscient), every play shows the hand it came
from, the floor it met, the plans it had and what it took; every hand ends with its full scoring.
One file per case: ERAM's three, then each rule system of VARIANTS.md at 2, 3 and 4 seats, both
partnership games, and a rubber.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from basra.engine import (
    ERAM,
    BasraValue,
    BottomCard,
    CardPlayed,
    CardsDealt,
    FloorCollected,
    GameEnded,
    HandScored,
    HandStarted,
    MatchEnded,
    Phase,
    Profile,
    State,
    apply,
    deal_next_hand,
    format_cards,
    match_profile,
    new_match,
)
from basra.engine.bots import greedy_play, random_play
from basra.engine.game import legal_plans

GOLDEN = Path(__file__).parent / "golden"
G, R = "greedy", "random"
CASES: dict[str, tuple[int, tuple[str, ...], str, bool]] = {
    # name: (seed, bot per seat, rules, rubber)
    "match-seed-1-random-vs-random": (1, (R, R), "eram", False),
    "match-seed-2026-greedy-vs-random": (2026, (G, R), "eram", False),
    "match-seed-77-greedy-vs-greedy": (77, (G, G), "eram", False),
    "egyptian-2-seed-5": (5, (G, R), "egyptian", False),
    "egyptian-4-partnership-seed-6": (6, (G, R, R, G), "egyptian", False),
    "egyptian-4-partnership-rubber-seed-8": (8, (G, R, G, R), "egyptian", True),
    "jordanian-2-seed-7": (7, (R, G), "jordanian", False),
    "jordanian-4-partnership-seed-9": (9, (G, G, R, R), "jordanian", False),
    "lobashev-2-seed-10": (10, (G, R), "lobashev", False),
    "lobashev-4-partnership-seed-11": (11, (G, R, G, R), "lobashev", False),
    "persian-2-seed-12": (12, (R, G), "persian", False),
    "persian-3-seed-13": (13, (G, R, R), "persian", False),
    "persian-4-seed-14": (14, (G, R, G, R), "persian", False),
    "persian-partnership-4-seed-15": (15, (R, G, R, G), "persian-partnership", False),
}


def case_transcript(name: str) -> str:
    seed, bots, rules, rubber = CASES[name]
    return transcript(seed, bots, match_profile(rules, len(bots), rubber=rubber))


def transcript(seed: int, bots: tuple[str, ...], profile: Profile = ERAM) -> str:
    rng = random.Random(seed)
    state, events = new_match(seed, profile)
    players = ", ".join(f"seat {s} {bot} bot" for s, bot in enumerate(bots))
    if profile == ERAM:
        title = "ERAM rules"
    else:
        title = f"{profile.name} rules, {profile.seats} seats" + (
            " in two partnerships (seats 0+2 against 1+3)" if profile.partnerships else ""
        )
        if profile.rubber_wins:
            title += f", a rubber (first to {profile.rubber_wins} games)"
    lines = [
        f"# Basra, {title}. Seed {seed}; {players}.",
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
        if played.basra and state.profile.basra_value is not BasraValue.FIXED:
            flags = flags.replace("BASRA", f"BASRA +{played.basra_points}")
        lines.append(
            f"  {before.plays + 1:2}. seat {seat} [{format_cards(before.hands[seat])}] on "
            f"[{format_cards(before.floor)}]: {played.card} ({offer}) {action}{flags}"
        )
        events = events[1:]  # described at the top of the loop


def describe(state: State, events: tuple[object, ...]) -> list[str]:
    profile = state.profile
    label = "side" if profile.partnerships else "seat"

    def hands() -> str:
        return ", ".join(f"seat {s} [{format_cards(h)}]" for s, h in enumerate(state.hands))

    def per_side(values: tuple[int, ...]) -> str:
        return ", ".join(f"{label} {side} {v}" for side, v in enumerate(values))

    out: list[str] = []
    for event in events:
        if isinstance(event, HandStarted):
            bottom = ""
            if profile.bottom_card is not BottomCard.HIDDEN and state.stock:
                bottom = f", bottom card {state.stock[-1]} shown to the dealer"
            game = f"game {event.game}, " if profile.rubber_wins else ""
            out += [
                "",
                f"== Hand {event.hand}: {game}dealer seat {event.dealer}, "
                f"seat {event.leader} leads",
                f"deal 1: {hands()}, floor [{format_cards(event.floor)}]{bottom}",
            ]
        elif isinstance(event, CardsDealt):
            out.append(f"deal {event.deal}: {hands()}, stock left {event.stock_left}")
        elif isinstance(event, FloorCollected):
            who = "nobody" if event.seat is None else f"seat {event.seat} (last capturer)"
            out.append(f"leftover [{format_cards(event.cards)}] goes to {who}, not a basra")
        elif isinstance(event, HandScored):
            score = event.score
            for side, s in enumerate(score.sides):
                out.append(
                    f"score {label} {side}: {s.cards} cards, majority {s.majority}, "
                    f"carry {s.carry}, specials {s.specials}, basras {s.basras} "
                    f"({s.basra_points}) = {s.total}"
                )
            out.append(
                f"totals: {per_side(event.totals)}; carry {score.carry_after}"
                + ("; tie at the target: extra hand" if event.extra_hand else "")
            )
        elif isinstance(event, GameEnded):
            won = "-".join(map(str, event.games_won))
            out.append(
                f"== Game {event.game} to {label} {event.winner} ({per_side(event.totals)}); "
                f"games {won}"
            )
        elif isinstance(event, MatchEnded):
            if len(event.totals) == 2:
                result = f"{event.totals[0]} to {event.totals[1]}"
            else:
                result = "with " + per_side(event.totals)
            out.append(f"== {label.capitalize()} {event.winner} wins {result}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--update", action="store_true", help="rewrite the golden files")
    args = parser.parse_args()
    for name in CASES:
        text = case_transcript(name)
        path = GOLDEN / f"{name}.txt"
        if args.update:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
        else:
            print(text)


if __name__ == "__main__":
    main()
