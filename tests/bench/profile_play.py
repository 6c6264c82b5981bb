"""Where a Play's server CPU goes: cProfile on the server's event-loop thread while a client plays.

The service runs in this process (tests.support.ServerThread, on Redis, as deployed) and the
profiler is switched on inside its loop thread only, so the client's work is not in the figures.
The summary groups the functions a Play spends its own time in by where they live (the engine,
protobuf, gRPC, the Redis client, asyncio, the service's own modules), then lists the top ones.

    python -m tests.bench.profile_play
"""

from __future__ import annotations

import asyncio
import cProfile
import pstats
import random
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

from basra.client.match import MatchClient, card_pb
from basra.service.config import Settings
from basra.v1 import basra_service_pb2 as pb
from tests.bench.service_bench import script
from tests.support import RedisProcess, ServerThread

AREAS = (
    ("engine", "/basra/engine/"),
    ("service", "/basra/service/"),
    ("protobuf", "/google/protobuf/"),
    ("grpc", "/grpc/"),
    ("redis client", "/redis/"),
    ("asyncio", "/asyncio/"),
)


def area(filename: str, name: str) -> str:
    for label, part in AREAS:
        if part in filename:
            return label
    if filename == "~":  # a C function: by its name
        hints = (
            ("engine", "basra.engine"),
            ("protobuf", "google"),
            ("protobuf", "Message"),
            ("grpc", "grpc"),
            ("asyncio", "_asyncio"),
            ("asyncio", "Context"),
        )
        for label, hint in hints:
            if hint in name:
                return label
        return "builtins (C)"
    return "other Python"


def profile_plays(matches: int = 8, plays_per_match: int = 40) -> tuple[pstats.Stats, int]:
    """Play ``matches`` scripted matches (request ids, as a real client) while profiling."""
    with tempfile.TemporaryDirectory() as tmp:
        redis_process = RedisProcess(Path(tmp) / "redis")
        redis_process.start()
        server = ServerThread(
            Settings(
                redis_url=redis_process.url,
                allow_seeds=True,
                metrics_port=None,
                http_listen=None,
                log_level="WARNING",
            )
        )
        try:
            clients = []
            for seed in range(matches):
                client, _ = MatchClient.create(server.channel, seed=seed + 2000)
                clients.append((client, script(seed + 2000)))
            # CPU time of the loop thread (where the profiler is switched on), not wall time:
            # the loop's idle waits in epoll are not the service's cost.
            profiler = cProfile.Profile(time.thread_time)
            server.loop.call_soon_threadsafe(profiler.enable)
            made = 0
            rng = random.Random(0)
            for client, steps in clients:
                for step in steps[:plays_per_match]:
                    if step.card is None:
                        break
                    client.stub.Play(
                        pb.PlayRequest(
                            match_id=client.match_id,
                            card=card_pb(step.card),
                            plan_id=step.plan,
                            request_id=uuid.UUID(int=rng.getrandbits(128)).hex,
                        ),
                        metadata=client.metadata(step.seat),
                    )
                    made += 1
            done = asyncio.run_coroutine_threadsafe(_disable(profiler), server.loop)
            done.result(10)
        finally:
            server.stop()
            redis_process.stop()
    return pstats.Stats(profiler), made


async def _disable(profiler: cProfile.Profile) -> None:
    profiler.disable()


def summary(stats: pstats.Stats, plays: int) -> list[str]:
    """Own time per area and the top functions, in microseconds per Play."""
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    by_area: dict[str, float] = defaultdict(float)
    rows = []
    for (filename, line, name), (_, calls, own, _, _) in raw.items():
        by_area[area(filename, name)] += own
        rows.append((own, calls, f"{Path(filename).name}:{line}({name})"))
    total = sum(by_area.values())
    lines = [f"server CPU profile (cProfile, loop thread), {plays} Plays with request ids:"]
    lines.append(
        "  own time per Play by area: "
        + ", ".join(
            f"{label} {seconds / plays * 1e6:.0f} us"
            for label, seconds in sorted(by_area.items(), key=lambda kv: -kv[1])
        )
        + f" (total {total / plays * 1e6:.0f} us, profiler overhead included)"
    )
    lines.append("  top functions by own time per Play:")
    for own, calls, where in sorted(rows, reverse=True)[:12]:
        lines.append(f"    {own / plays * 1e6:7.1f} us  {calls / plays:5.1f} calls  {where}")
    return lines


def main() -> None:
    stats, plays = profile_plays()
    print("\n".join(summary(stats, plays)))


if __name__ == "__main__":
    main()
