"""Service benchmark: Play throughput and latency on Redis, against this stack's own ceiling.

Every match is scripted beforehand with the engine (seeded), so while timing the client only
sends requests: the real service and the bare server (tests/bench/bare_server.py) are driven by
the same client with the same requests. Redis figures come from Redis itself (INFO commandstats,
MEMORY USAGE).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import grpc
import redis
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc

from engine import Phase, apply, deal_next_hand, new_match
from engine.bots import random_play
from service.client import card_pb
from service.store import keys
from tests.support import RedisProcess, free_port


@dataclass(frozen=True)
class Step:
    """One scripted call: a play (card, plan) or the deal of the next hand."""

    seat: int
    card: str | None = None
    plan: int = 0


def script(seed: int) -> list[Step]:
    """A whole match as the calls that play it (random legal plays, seeded)."""
    rng = random.Random(seed)
    state, _ = new_match(seed)
    steps = []
    while state.phase is not Phase.MATCH_OVER:
        if state.phase is Phase.HAND_OVER:
            steps.append(Step(0))
            state, _ = deal_next_hand(state)
            continue
        play = random_play(state, rng)
        steps.append(Step(play.seat, str(play.card), play.plan or 0))
        state, _ = apply(state, play)
    return steps


@dataclass
class Match:
    seed: int
    match_id: str
    tokens: dict[int, str]
    steps: list[Step]


@dataclass
class LoadResult:
    plays: int
    deals: int
    seconds: float
    latencies_ms: list[float]

    @property
    def rps(self) -> float:
        return self.plays / self.seconds

    @property
    def p99_ms(self) -> float:
        return statistics.quantiles(self.latencies_ms, n=100)[98]


@contextlib.contextmanager
def process(args: Sequence[str], target: str) -> Iterator[subprocess.Popen[bytes]]:
    """A server process, ready when its port answers; stopped on exit."""
    proc = subprocess.Popen(list(args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with grpc.insecure_channel(target) as channel:
            grpc.channel_ready_future(channel).result(timeout=30)
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def serve_command(listen: str, redis_url: str, extra: Sequence[str] = ()) -> list[str]:
    command = shutil.which("basra-engine", path=str(Path(sys.executable).parent))
    assert command
    return [
        command,
        "serve",
        "--listen",
        listen,
        "--redis-url",
        redis_url,
        "--allow-seeds",
        "--metrics-port",
        "off",
        "--log-level",
        "WARNING",
        "--create-rate",
        "100000",
        "--create-burst",
        "100000",
        *extra,
    ]


async def create_matches(target: str, seeds: Sequence[int]) -> list[Match]:
    async with grpc.aio.insecure_channel(target) as channel:
        stub = basra_service_pb2_grpc.BasraServiceStub(channel)
        matches = []
        for seed in seeds:
            response = await stub.Deal(pb.DealRequest(seed=seed, request_id=str(uuid.uuid4())))
            tokens = {t.seat: t.token for t in response.seat_tokens}
            matches.append(Match(seed, response.match_id, tokens, script(seed)))
        return matches


async def drive(
    targets: Sequence[str], matches: Sequence[Match], channels: int, limit_s: float
) -> LoadResult:
    """Play every match concurrently; each call goes through one of ``channels`` channels."""
    # A connection per channel (gRPC shares one per target otherwise).
    local = [("grpc.use_local_subchannel_pool", 1)]
    pool = [
        grpc.aio.insecure_channel(targets[i % len(targets)], options=local) for i in range(channels)
    ]
    stubs = [basra_service_pb2_grpc.BasraServiceStub(c) for c in pool]
    latencies: list[float] = []
    counts = {"plays": 0, "deals": 0}
    deadline = time.perf_counter() + limit_s

    async def run(index: int, match: Match) -> None:
        stub = stubs[index % len(stubs)]
        for step in match.steps:
            if time.perf_counter() > deadline:
                return
            metadata = (("authorization", f"Bearer {match.tokens[step.seat]}"),)
            request_id = uuid.uuid4().hex
            if step.card is None:
                await stub.Deal(
                    pb.DealRequest(match_id=match.match_id, request_id=request_id),
                    metadata=metadata,
                )
                counts["deals"] += 1
                continue
            request = pb.PlayRequest(
                match_id=match.match_id,
                card=card_pb(step.card),
                plan_id=step.plan,
                request_id=request_id,
            )
            started = time.perf_counter()
            await stub.Play(request, metadata=metadata)
            latencies.append((time.perf_counter() - started) * 1000)
            counts["plays"] += 1

    started = time.perf_counter()
    await asyncio.gather(*(run(i, m) for i, m in enumerate(matches)))
    seconds = time.perf_counter() - started
    for channel in pool:
        await channel.close(None)
    return LoadResult(counts["plays"], counts["deals"], seconds, latencies)


def top_level_calls(client: redis.Redis) -> int:
    """Commands clients sent (commands run inside Lua scripts are not round trips)."""
    stats = cast(dict[str, dict[str, Any]], client.info("commandstats"))
    sent = (
        "cmdstat_hgetall",
        "cmdstat_evalsha",
        "cmdstat_eval",
        "cmdstat_xrange",
        "cmdstat_xread",
        "cmdstat_get",
        "cmdstat_set",
    )
    return sum(int(stats[name]["calls"]) for name in sent if name in stats)


async def sample_match(target: str, client: redis.Redis) -> tuple[int, int, bytes]:
    """Memory of one match played with request ids: (record bytes at play 20, mid-hand;
    event stream bytes once hand 1 is complete) and the Play response at play 20."""
    (match,) = await create_matches(target, [424242])
    record_bytes, response = 0, b""
    async with grpc.aio.insecure_channel(target) as channel:
        stub = basra_service_pb2_grpc.BasraServiceStub(channel)
        for index, step in enumerate(match.steps, start=1):
            if step.card is None:  # hand 1 is over: its whole stream is written
                break
            reply = await stub.Play(
                pb.PlayRequest(
                    match_id=match.match_id,
                    card=card_pb(step.card),
                    plan_id=step.plan,
                    request_id=uuid.uuid4().hex,
                ),
                metadata=(("authorization", f"Bearer {match.tokens[step.seat]}"),),
            )
            if index == 20:
                record_bytes = client.memory_usage(keys.match_key(match.match_id), samples=0) or 0
                response = reply.SerializeToString()
    stream_bytes = client.memory_usage(keys.events_key(match.match_id), samples=0) or 0
    return int(record_bytes), int(stream_bytes), response


def service_figures(
    seconds: float = 20.0, matches: int = 96, channels: int = 4
) -> dict[str, float]:
    """Measure and print the service figures; returns them for the JSON summary."""
    with tempfile.TemporaryDirectory() as tmp:
        redis_process = RedisProcess(Path(tmp) / "redis")
        redis_process.start()
        client = redis_process.client()
        try:
            return _measure(redis_process, client, Path(tmp), seconds, matches, channels)
        finally:
            redis_process.stop()


def _measure(
    redis_process: RedisProcess,
    client: redis.Redis,
    tmp: Path,
    seconds: float,
    matches: int,
    channels: int,
) -> dict[str, float]:
    port = free_port()
    target = f"127.0.0.1:{port}"
    seeds = list(range(1000, 1000 + matches))
    figures: dict[str, float] = {}
    with process(serve_command(target, redis_process.url), target):
        # Memory of one match: the record (state and request records) mid-hand, and the stream.
        record_bytes, stream_bytes, response = asyncio.run(sample_match(target, client))
        (tmp / "response.bin").write_bytes(response)
        played = asyncio.run(create_matches(target, seeds))
        before = top_level_calls(client)
        result = asyncio.run(drive([target], played, channels, seconds))
        calls = top_level_calls(client) - before
    print(
        f"service on Redis (grpc.aio, one process): {result.rps:,.0f} Play/s, "
        f"p50 {statistics.median(result.latencies_ms):.2f} ms, p99 {result.p99_ms:.2f} ms "
        f"({result.plays:,} plays, {result.deals} deals, {matches} matches in flight, "
        f"{result.seconds:.1f} s)"
    )
    roundtrips = calls / (result.plays + result.deals)
    print(f"Redis round trips per state change: {roundtrips:.2f}")
    print(
        f"Redis memory: {record_bytes} bytes per match record mid-hand (state and request "
        f"records), {stream_bytes:,} bytes of event stream per hand (49 entries)"
    )
    client.flushall()
    bare_port = free_port()
    bare_target = f"127.0.0.1:{bare_port}"
    bare = [
        sys.executable,
        "-m",
        "tests.bench.bare_server",
        "--listen",
        bare_target,
        "--redis-url",
        redis_process.url,
        "--response",
        str(tmp / "response.bin"),
    ]
    with process(bare, bare_target):
        bare_result = asyncio.run(drive([bare_target], played, channels, seconds))
    print(
        f"bare gRPC + Redis server (same client, same calls): {bare_result.rps:,.0f} Play/s, "
        f"p99 {bare_result.p99_ms:.2f} ms"
    )
    ratio = result.rps / bare_result.rps
    print(f"play / bare: {ratio:.2f} (target 0.8 or more)")
    figures.update(
        play_rps=round(result.rps, 1),
        play_p99_ms=round(result.p99_ms, 2),
        bare_rps=round(bare_result.rps, 1),
        play_vs_bare_ratio=round(ratio, 3),
        redis_roundtrips_per_play=round(roundtrips, 3),
        redis_bytes_per_match=float(record_bytes),
        redis_stream_bytes_per_hand=float(stream_bytes),
    )
    return figures


if __name__ == "__main__":
    print(service_figures())
