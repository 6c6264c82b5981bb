"""basra.client figures: how soon a command-line user hears that no server answers, and a whole
match played through the client (both seats, greedy), on the embedded store."""

from __future__ import annotations

import io
import statistics
import time
from typing import Any

from basra.client import Client, demo, greedy_choice
from basra.service.config import Settings
from basra.v1 import game_pb2
from tests.support import ServerThread, free_port


def _unreachable_s() -> float:
    out = io.StringIO()
    started = time.perf_counter()
    status = demo.run(f"127.0.0.1:{free_port()}", out)
    elapsed = time.perf_counter() - started
    assert status == 1
    assert "No server answers" in out.getvalue()
    return elapsed


def _match(target: str, seed: int) -> tuple[float, int]:
    started = time.perf_counter()
    calls = 0
    with Client(target) as client:
        match = client.create_match(seed=seed)
        view = match.view()
        while view.status != game_pb2.MATCH_STATUS_MATCH_OVER:
            if view.status == game_pb2.MATCH_STATUS_HAND_OVER:
                match.deal()
            else:
                seat = match.seat(view.turn)
                card, plan_id = greedy_choice(seat.plans())
                seat.play(card, plan_id, expected_version=view.version)
                calls += 2
            view = match.view()
            calls += 1
    return time.perf_counter() - started, calls


def client_figures() -> dict[str, Any]:
    unreachable = [_unreachable_s() for _ in range(3)]
    print(f"demo on an unreachable target reports it in {max(unreachable):.2f} s (worst of 3)")
    server = ServerThread(Settings(allow_seeds=True, metrics_port=None))
    try:
        runs = [_match(server.target, seed) for seed in range(1, 4)]
    finally:
        server.stop()
    match_s = statistics.median(s for s, _ in runs)
    per_call_us = statistics.median(s / calls * 1e6 for s, calls in runs)
    print(
        f"a whole match through basra.client: {match_s:.2f} s median of 3, "
        f"{per_call_us:.0f} us per call (embedded store, one process)"
    )
    return {
        "client_unreachable_report_s": round(max(unreachable), 3),
        "client_match_s": round(match_s, 3),
        "client_call_us": round(per_call_us),
    }
