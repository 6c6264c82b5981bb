"""Bot benchmark: how often the strong level beats greedy play, and how long its moves take.

    python -m tests.bench.bot_bench --matches 400          # alone; make bench runs it too

Whole matches, strong against greedy: two-seat ERAM (seats and first dealers alternated: match
i has the strong bot at seat i % 2, and the pairs of matches i, i + 1 share a seed, so each deal
is played from both sides), and a strong pair against a greedy pair at four seats (egyptian).
Each match's seed, the bots' generators and the budget fix every move, so a run is reproducible
apart from the move times. Matches run in at most two processes (the machine's cores are
shared). Prints figures, then one JSON line. Figures, not pass/fail.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from concurrent.futures import ProcessPoolExecutor

from basra.engine import COMPILED, Phase, Play, apply, deal_next_hand, match_profile, new_match
from basra.engine.bots import cards_gone, choose
from basra.engine.events import Event
from basra.engine.strong import DEFAULT_ITERATIONS
from basra.engine.view import view


def play_match(
    rules: str, seats: int, seed: int, strong_side: int, iterations: int
) -> tuple[bool, list[float], list[float]]:
    """One match, the strong level on side ``strong_side``: whether it won, and its moves' wall
    and CPU times (ms).

    The strong bot remembers the public events of the hand (``cards_gone``), as a player does.
    """
    profile = match_profile(rules, seats)
    state, events = new_match(seed, profile)
    hand_events: list[Event] = list(events)
    rng = random.Random(seed ^ 0x5EED)
    times: list[float] = []
    cpu_times: list[float] = []
    while state.phase is not Phase.MATCH_OVER:
        if state.phase is Phase.HAND_OVER:
            state, events = deal_next_hand(state)
            hand_events = list(events)
            continue
        seat = state.turn
        seen = view(state, seat)
        if profile.side_of(seat) == strong_side:
            started, cpu = time.perf_counter(), time.thread_time()
            card, plan = choose(
                "strong", seen, profile, rng, iterations=iterations, gone=cards_gone(hand_events)
            )
            times.append((time.perf_counter() - started) * 1000)
            cpu_times.append((time.thread_time() - cpu) * 1000)
        else:
            card, plan = choose("greedy", seen, profile, rng)
        play = Play(seat, card, plan) if plan else Play(seat, card, trail=True)
        state, events = apply(state, play)
        hand_events.extend(events)
    return state.winner == strong_side, times, cpu_times


def _match(args: tuple[str, int, int, int, int]) -> tuple[bool, list[float], list[float]]:
    return play_match(*args)


TIMED_MATCHES = 16
"""Matches (two-seat ERAM; half as many four-seat egyptian) whose strong moves are timed in one
process for ``bot_move_p99_ms``."""


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2] if values else 0.0


def wilson(wins: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion ``wins / n``."""
    if n == 0:
        return 0.0, 1.0
    p = wins / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return centre - half, centre + half


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)] if ordered else 0.0


def series(
    rules: str, seats: int, matches: int, iterations: int, workers: int
) -> tuple[int, list[float], list[float]]:
    """Wins of the strong side over ``matches`` matches, and every strong move's wall and CPU
    times (ms)."""
    jobs = [(rules, seats, 1000 + i // 2, i % 2, iterations) for i in range(matches)]
    wins = 0
    times: list[float] = []
    cpu_times: list[float] = []
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for won, took, cpu in pool.map(_match, jobs):
            wins += won
            times.extend(took)
            cpu_times.extend(cpu)
    return wins, times, cpu_times


def bot_figures(
    matches: int = 400,
    partnership_matches: int = 200,
    iterations: int = DEFAULT_ITERATIONS,
    workers: int = 2,
) -> dict[str, float]:
    """The bot figures (printed as they come), keyed as in ``make bench``'s JSON."""
    engine = "compiled" if COMPILED else "pure"
    print(f"bots: strong ({iterations} rollouts a move, {engine} engine) against greedy")
    wins, times, cpu = series("eram", 2, matches, iterations, workers)
    low, high = wilson(wins, matches)
    rate = wins / matches
    print(
        f"  eram, 2 seats: {wins}/{matches} won, {rate:.3f} "
        f"(95% Wilson interval {low:.3f}..{high:.3f})"
    )
    pair_wins, pair_times, pair_cpu = series(
        "egyptian", 4, partnership_matches, iterations, workers
    )
    pair_low, pair_high = wilson(pair_wins, partnership_matches)
    pair_rate = pair_wins / partnership_matches
    print(
        f"  egyptian, 4 seats, a strong pair against a greedy pair: {pair_wins}/"
        f"{partnership_matches} won, {pair_rate:.3f} "
        f"(95% Wilson interval {pair_low:.3f}..{pair_high:.3f})"
    )
    every = times + pair_times
    print(
        f"  strong moves in those matches: p50 {median(every):.1f} ms, p99 {p99(every):.1f} ms "
        f"(CPU time p99 {p99(cpu + pair_cpu):.1f} ms) over {len(every)} moves, {workers} "
        "processes at once"
    )
    # The move time, measured apart: one process, so the bench's own second process does not
    # stand in the queue for a core (other programs on the machine still may).
    _, alone, alone_cpu = series("eram", 2, TIMED_MATCHES, iterations, 1)
    _, pair_alone, pair_alone_cpu = series("egyptian", 4, TIMED_MATCHES // 2, iterations, 1)
    alone += pair_alone
    move_p99 = p99(alone)
    cpu_p99 = p99(alone_cpu + pair_alone_cpu)
    print(
        f"  strong move, one process: p50 {median(alone):.1f} ms, p99 {move_p99:.1f} ms "
        f"(CPU time p99 {cpu_p99:.1f} ms) over {len(alone)} moves of {TIMED_MATCHES} eram and "
        f"{TIMED_MATCHES // 2} egyptian matches"
    )
    return {
        "bot_strong_vs_greedy_win_rate": round(rate, 4),
        "bot_strong_vs_greedy_win_rate_low": round(low, 4),
        "bot_strong_vs_greedy_win_rate_high": round(high, 4),
        "bot_strong_vs_greedy_matches": matches,
        "bot_strong_vs_greedy_partnership_win_rate": round(pair_rate, 4),
        "bot_strong_vs_greedy_partnership_matches": partnership_matches,
        "bot_strong_iterations": iterations,
        "bot_move_p99_ms": round(move_p99, 1),
        "bot_move_cpu_p99_ms": round(cpu_p99, 1),
        "bot_move_p99_ms_two_processes": round(p99(every), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, default=400, help="two-seat ERAM matches")
    parser.add_argument(
        "--partnership-matches", type=int, default=200, help="four-seat egyptian matches"
    )
    parser.add_argument("--iterations", type=int, default=DEFAULT_ITERATIONS)
    parser.add_argument("--workers", type=int, default=2, choices=(1, 2))
    args = parser.parse_args()
    figures = bot_figures(args.matches, args.partnership_matches, args.iterations, args.workers)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
