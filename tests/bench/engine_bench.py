"""Engine benchmark: self-play speed, plan enumeration speed, and the worst crafted floors.

    make bench            # or: python -m tests.bench.engine_bench

Prints human-readable figures, then one JSON line. Figures, not pass/fail: targets are judged by
reading them (see docs/performance.md).
"""

from __future__ import annotations

import gc
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from basra.engine import (
    COMPILED,
    ERAM,
    Phase,
    Profile,
    apply,
    deal_next_hand,
    encode,
    match_profile,
    new_match,
)
from basra.engine import plans as plans_module
from basra.engine.bots import random_play
from basra.engine.cards import CARDS, Card, mask_of
from basra.engine.plans import capture_plans

REFERENCE_HANDS_PER_S = 9500
"""The fastest public engine we know (JIT TypeScript), measured once on the machine the target
was set on: a constant, so the ratio printed beside it holds only on a machine as fast.
``engine_instructions_per_hand`` (callgrind) is the figure that does not depend on the machine's
speed or load."""


def clear_caches() -> None:
    for cached in (
        plans_module._group_profiles,
        plans_module._splits,
        plans_module._choices,
    ):
        cached.cache_clear()


def self_play(profile: Profile = ERAM) -> Iterator[None]:
    """Random self-play (ERAM, two seats, unless ``profile`` says otherwise): a random card,
    then a random plan of it; yields at the end of each hand, for ever (seeded: the same hands
    every time)."""
    rng = random.Random(1)
    state, _ = new_match(rng.getrandbits(64), profile)
    while True:
        if state.phase is Phase.PLAYING:
            state, _ = apply(state, random_play(state, rng))
            continue
        yield
        if state.phase is Phase.HAND_OVER:
            state, _ = deal_next_hand(state)
        else:
            state, _ = new_match(rng.getrandbits(64), profile)


def self_play_hands_per_s(seconds: float, profile: Profile = ERAM) -> float:
    """Hands per second of ``self_play``, played for ``seconds``."""
    hands = 0
    start = time.perf_counter()
    deadline = start + seconds
    for _ in self_play(profile):
        hands += 1
        if time.perf_counter() > deadline:
            break
    return hands / (time.perf_counter() - start)


# The hands counted by callgrind: self_play's, in a process of their own.
_SELF_PLAY = (
    "import itertools, sys; from tests.bench.engine_bench import self_play; "
    "sum(1 for _ in itertools.islice(self_play(), int(sys.argv[1])))"
)


def instructions_per_hand(few: int = 20, many: int = 120) -> float | None:
    """Instructions per hand of random self-play, counted by callgrind: the same count whatever
    the machine's speed or load (for one build of Python and of the engine, hashing seeded).
    Two runs, of ``few`` and ``many`` hands, so that start-up and imports cancel out; None
    without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    totals = []
    with tempfile.TemporaryDirectory() as tmp:
        for hands in (few, many):
            out = Path(tmp) / f"callgrind.{hands}"
            subprocess.run(
                [
                    "valgrind",
                    "--tool=callgrind",
                    f"--callgrind-out-file={out}",
                    sys.executable,
                    "-c",
                    _SELF_PLAY,
                    str(hands),
                ],
                check=True,
                capture_output=True,
                cwd=Path(__file__).parents[2],  # where tests.bench imports from
                # String hashing seeds the order of sets and dicts, and with it the count.
                env={**os.environ, "PYTHONHASHSEED": "0"},
            )
            summary = [line for line in out.read_text().splitlines() if line.startswith("summary:")]
            totals.append(int(summary[0].split()[1]))
    return (totals[1] - totals[0]) / (many - few)


def four_seat_state_bytes() -> int:
    """engine.codec bytes of a 4-seat partnership (egyptian) state mid-hand, at play 20."""
    profile = match_profile("egyptian", 4)
    rng = random.Random(20)
    state, _ = new_match(rng.getrandbits(64), profile)
    while state.plays < 20:
        state, _ = apply(state, random_play(state, rng))
    return len(encode(state))


def typical_positions(count: int) -> list[tuple[int, Card]]:
    """(floor, card) pairs met in random self-play, each card of the hand against its floor."""
    rng = random.Random(2)
    positions: list[tuple[int, Card]] = []
    state, _ = new_match(3)
    while len(positions) < count:
        if state.phase is Phase.PLAYING:
            floor = mask_of(state.floor)
            positions += [(floor, card) for card in state.hands[state.turn]]
            state, _ = apply(state, random_play(state, rng))
        elif state.phase is Phase.HAND_OVER:
            state, _ = deal_next_hand(state)
        else:
            state, _ = new_match(rng.getrandbits(64))
    return positions[:count]


def plans_per_s(positions: list[tuple[int, Card]]) -> float:
    clear_caches()
    start = time.perf_counter()
    for floor, card in positions:
        capture_plans(floor, card)
    return len(positions) / (time.perf_counter() - start)


CRAFTED: dict[str, Callable[[], list[Card]]] = {
    "24 cards: every A-5 and four 6s": lambda: [c for c in CARDS if 1 <= c.value <= 6],
    "24 random cards of values 1..5 and 6..9": lambda: random.Random(4).sample(
        [c for c in CARDS if 1 <= c.value <= 9], 24
    ),
    "36 cards: every A-9 (the largest sum floor)": lambda: [c for c in CARDS if 1 <= c.value <= 9],
}


def cold_ms(mask: int, card: Card, runs: int = 5) -> tuple[float, int]:
    """The best of ``runs`` cold (caches cleared) timings, and the number of plans: the work
    itself, without the pauses of a busy process (a garbage collection can add 40 ms)."""
    best = float("inf")
    plans = 0
    for _ in range(runs):
        clear_caches()
        start = time.perf_counter()
        plans = len(capture_plans(mask, card))
        best = min(best, (time.perf_counter() - start) * 1000)
    return best, plans


def worst_crafted_ms() -> tuple[float, list[str]]:
    """Cold time of the slowest card on each crafted floor."""
    gc.collect()
    lines = []
    worst_overall = 0.0
    for name, make in CRAFTED.items():
        floor = make()
        mask = mask_of(floor)
        worst, worst_card, count = 0.0, CARDS[0], 0
        for card in CARDS:
            if mask >> card & 1:
                continue
            elapsed, plans = cold_ms(mask, card)
            if elapsed > worst:
                worst, worst_card, count = elapsed, card, plans
        worst_overall = max(worst_overall, worst)
        lines.append(
            f"  {name}: slowest card {worst_card}, {worst:.2f} ms cold (best of 5), {count} plans"
        )
    return worst_overall, lines


def engine_figures(seconds: float = 3.0) -> dict[str, float | bool]:
    """Measure and print the engine figures; returns them for the JSON summary."""
    engine = "compiled (mypyc)" if COMPILED else "interpreted (.py sources)"
    print(
        f"# engine benchmark on {platform.python_implementation()} {platform.python_version()}, "
        f"engine {engine}"
    )
    hands = self_play_hands_per_s(seconds)
    print(
        f"random self-play: {hands:,.0f} hands/s (48 plays each), "
        f"{hands / REFERENCE_HANDS_PER_S:.2f}x the {REFERENCE_HANDS_PER_S:,} hands/s of the "
        "fastest public (JIT TypeScript) engine"
    )
    instructions = instructions_per_hand()
    if instructions is None:
        print("instructions per hand: not counted (no valgrind)")
    else:
        print(
            f"instructions per hand (callgrind, random self-play): {instructions / 1e6:.3f} M; "
            "unlike hands/s, this count does not depend on the machine's speed or load"
        )
    partnership = self_play_hands_per_s(seconds, match_profile("egyptian", 4))
    print(f"random self-play, 4 seats in two partnerships (egyptian): {partnership:,.0f} hands/s")
    state_bytes = four_seat_state_bytes()
    print(f"a 4-seat partnership state mid-hand (play 20): {state_bytes} bytes (engine.codec)")
    positions = typical_positions(50_000)
    rate = plans_per_s(positions)
    print(
        f"capture plans on self-play positions: {rate:,.0f} positions/s "
        f"({len(positions):,} positions, caches cleared first)"
    )
    worst, lines = worst_crafted_ms()
    print("crafted floors (colluding players):")
    print("\n".join(lines))
    return {
        "engine_hands_per_s": round(hands, 1),
        "engine_vs_reference_ratio": round(hands / REFERENCE_HANDS_PER_S, 3),
        "plans_per_s": round(rate, 1),
        "plans_adversarial_max_ms": round(worst, 2),
        "engine_partnership_4_seat_hands_per_s": round(partnership, 1),
        "engine_state_bytes_4_seat_mid_hand": state_bytes,
        "engine_compiled": COMPILED,
        **({} if instructions is None else {"engine_instructions_per_hand": round(instructions)}),
    }


def main() -> None:
    figures = engine_figures()
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
