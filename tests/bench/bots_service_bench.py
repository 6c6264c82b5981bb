"""The service's Play throughput with bots in play: two-seat ERAM matches, a person (this
client, greedy) at seat 0 and the service's greedy bot at seat 1, on Redis, the bot's moves
made by the server (``--bot-pace-seconds 0``) through the same compare-and-set as every play.
Reports every play's rate (the person's and the bot's), and the person's Play latency. The
person learns of the bot's move by reading its view (GetMatch) every millisecond, so the server
also serves those reads.

    .venv/bin/python -m tests.bench.bots_service_bench
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import grpc

from basra.client import AsyncClient, greedy_choice
from basra.client.aio import AsyncMatch
from basra.client.retry import CHANNEL_OPTIONS
from basra.v1 import game_pb2
from tests.bench.service_bench import process, serve_command
from tests.support import RedisProcess, free_port

MATCHES = 200
SECONDS = 10.0
CONNECTIONS = 4
"""The client's connections, the matches shared out among them: each carries at most 50 calls
at once, within the server's 100 concurrent streams per connection (one connection carrying
all 200 has its streams past 100 refused, REFUSED_STREAM, as a loaded server sees them)."""
BOT_LEVELS = {1: "greedy"}
"""The seats the service plays, and at which level (the person is seat 0)."""


async def _person(match: AsyncMatch, deadline: float, latencies: list[float]) -> int:
    """Play seat 0 greedily until the match ends or time is up; the versions the match moved
    (the person's plays and deals, and the bot's plays between them)."""
    seat = match.seat(0)
    first = (await seat.view()).version
    while time.perf_counter() < deadline:
        view = await seat.view()
        if view.status == game_pb2.MATCH_STATUS_MATCH_OVER:
            return view.version - first
        if view.status == game_pb2.MATCH_STATUS_HAND_OVER:
            with contextlib.suppress(Exception):  # the bot may deal first: either is fine
                await seat.deal(expected_version=view.version)
            continue
        if view.turn != 0:
            await asyncio.sleep(0.001)  # the bot's move, made by the server
            continue
        card, plan_id = greedy_choice(await seat.plans())
        started = time.perf_counter()
        await seat.play(card, plan_id, expected_version=view.version)
        latencies.append((time.perf_counter() - started) * 1000)
    return (await seat.view()).version - first


async def _drive(target: str) -> tuple[int, float, list[float]]:
    # A connection of its own per client (gRPC shares one per target otherwise).
    options = (*CHANNEL_OPTIONS, ("grpc.use_local_subchannel_pool", 1))
    clients = [
        AsyncClient(channel=grpc.aio.insecure_channel(target, options=options))
        for _ in range(CONNECTIONS)
    ]
    try:
        matches = [
            await clients[index % CONNECTIONS].create_match(
                rules="eram", seats=2, bots=BOT_LEVELS, request_id=str(uuid.uuid4())
            )
            for index in range(MATCHES)
        ]
        latencies: list[float] = []
        started = time.perf_counter()
        moved = await asyncio.gather(*(_person(m, started + SECONDS, latencies) for m in matches))
        return sum(moved), time.perf_counter() - started, latencies
    finally:
        for client in clients:
            await client.channel.close(None)


def bots_service_figures() -> dict[str, float]:
    port = free_port()
    target = f"127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        redis = RedisProcess(Path(tmp) / "redis")
        redis.start()
        try:
            command = serve_command(
                target, redis.url, ("--bot-pace-seconds", "0", "--bot-workers", "1")
            )
            with process(command, target):
                versions, seconds, latencies = asyncio.run(_drive(target))
        finally:
            redis.stop()
    p99 = statistics.quantiles(latencies, n=100)[98] if len(latencies) > 1 else 0.0
    figures = {
        "bots_plays_per_s": round(versions / seconds, 1),
        "bots_person_play_p99_ms": round(p99, 2),
    }
    print(
        f"service with greedy bots in {MATCHES} matches: {figures['bots_plays_per_s']:,} plays/s "
        f"(the person's and the bot's), the person's Play p99 {p99:.1f} ms"
    )
    return figures


if __name__ == "__main__":
    print(bots_service_figures())
