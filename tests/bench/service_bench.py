"""Service benchmark: Play throughput and latency on Redis, against this stack's own ceiling.

Every match is scripted beforehand with the engine (seeded), so while timing the client only
sends requests: the real service and the bare server (tests/bench/bare_server.py) are driven by
the same client with the same requests. Redis figures come from Redis itself (INFO commandstats,
MEMORY USAGE).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

import grpc
import redis
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from pyqwest import Client as HTTPClient
from pyqwest import HTTPTransport, HTTPVersion

from basra.client.match import card_pb
from basra.engine import CardPlayed, Phase, apply, deal_next_hand, match_profile, new_match
from basra.engine.bots import random_play
from basra.service.store import keys
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc
from basra.v1.basra_service_connect import BasraServiceClient
from tests.otlp import receiving
from tests.support import RedisProcess, basra_engine, free_port


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
def process(
    args: Sequence[str], target: str, env: Mapping[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """A server process (with ``env`` added to this one's environment), ready when its port
    answers; stopped on exit."""
    proc = subprocess.Popen(
        list(args),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **env} if env else None,
    )
    try:
        with grpc.insecure_channel(target) as channel:
            grpc.channel_ready_future(channel).result(timeout=30)
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def serve_command(
    listen: str, redis_url: str, extra: Sequence[str] = (), http_listen: str = "off"
) -> list[str]:
    """The bench's server: shipped settings but for the limits a load generator needs; an HTTP
    port speaks cleartext HTTP/2 too, as behind a gateway that speaks it to the pods (the
    Connect runs measure HTTP/2)."""
    http2 = () if http_listen == "off" else ("--http2-cleartext",)
    return [
        basra_engine(),
        "serve",
        "--listen",
        listen,
        "--redis-url",
        redis_url,
        "--allow-seeds",
        "--metrics-port",
        "off",
        "--http-listen",
        http_listen,
        *http2,
        "--log-level",
        "WARNING",
        "--create-rate",
        "100000",
        "--create-burst",
        "100000",
        "--caller-create-rate",
        "100000",
        "--caller-create-burst",
        "100000",
        *extra,
    ]


def bare_command(listen: str, redis_url: str, files: Path, model: str = "aio") -> list[str]:
    """The bare server, replaying the response and record saved in ``files``."""
    return [
        sys.executable,
        "-m",
        "tests.bench.bare_server",
        "--listen",
        listen,
        "--redis-url",
        redis_url,
        "--response",
        str(files / "response.bin"),
        "--record",
        str(files / "record.bin"),
        "--model",
        model,
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


class Calls(Protocol):
    """One connection's way to send the two changing calls (gRPC, or Connect over HTTP)."""

    async def play(self, request: pb.PlayRequest, token: str) -> object: ...
    async def deal(self, request: pb.DealRequest, token: str) -> object: ...
    async def close(self) -> None: ...


class GrpcCalls:
    def __init__(self, target: str) -> None:
        # A connection per channel (gRPC shares one per target otherwise).
        self.channel = grpc.aio.insecure_channel(
            target, options=[("grpc.use_local_subchannel_pool", 1)]
        )
        self.stub = basra_service_pb2_grpc.BasraServiceStub(self.channel)

    async def play(self, request: pb.PlayRequest, token: str) -> object:
        return await self.stub.Play(request, metadata=(("authorization", f"Bearer {token}"),))

    async def deal(self, request: pb.DealRequest, token: str) -> object:
        return await self.stub.Deal(request, metadata=(("authorization", f"Bearer {token}"),))

    async def close(self) -> None:
        await self.channel.close(None)


class ConnectCalls:
    """The Connect protocol (binary, uncompressed like the gRPC calls), one HTTP/2 connection,
    through connectrpc's own client (pyqwest)."""

    def __init__(self, url: str, http2: bool = True) -> None:
        version = HTTPVersion.HTTP2 if http2 else HTTPVersion.HTTP1
        self.transport = HTTPTransport(http_version=version)
        self.client = BasraServiceClient(
            url,
            http_client=HTTPClient(self.transport),
            send_compression=None,
            accept_compression=(),
        )

    retries = 0
    """Calls sent again, across every instance, after failing UNAVAILABLE (a connection the
    server closed under them): a client sends them again with the same request id, as clients
    must. Expected 0: hyper closes no connection that is in use."""

    async def play(self, request: pb.PlayRequest, token: str) -> object:
        headers = {"authorization": f"Bearer {token}"}
        return await self._again(lambda: self.client.play(request, headers=headers))

    async def deal(self, request: pb.DealRequest, token: str) -> object:
        headers = {"authorization": f"Bearer {token}"}
        return await self._again(lambda: self.client.deal(request, headers=headers))

    async def _again(self, call: Callable[[], Awaitable[object]]) -> object:
        for _ in range(3):
            try:
                return await call()
            except ConnectError as error:
                if error.code != Code.UNAVAILABLE:
                    raise
                ConnectCalls.retries += 1
        return await call()

    async def close(self) -> None:
        await self.client.close()
        await self.transport.aclose()


async def drive(
    targets: Sequence[str],
    matches: Sequence[Match],
    channels: int,
    limit_s: float,
    connect: Callable[[str], Calls] = GrpcCalls,
    spread: bool = False,
) -> LoadResult:
    """Play every match concurrently; each call goes through one of ``channels`` connections
    (gRPC channels by default): the match's own (a match sticks to one target, as consistent
    hashing on the match id would route it), or with ``spread`` any connection at random."""
    pool = [connect(targets[i % len(targets)]) for i in range(channels)]
    chooser = random.Random(0)
    latencies: list[float] = []
    counts = {"plays": 0, "deals": 0}
    deadline = time.perf_counter() + limit_s

    async def run(index: int, match: Match) -> None:
        calls = pool[index % len(pool)]
        for step in match.steps:
            if spread:
                calls = chooser.choice(pool)
            if time.perf_counter() > deadline:
                return
            token = match.tokens[step.seat]
            request_id = uuid.uuid4().hex
            if step.card is None:
                await calls.deal(
                    pb.DealRequest(match_id=match.match_id, request_id=request_id), token
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
            await calls.play(request, token)
            latencies.append((time.perf_counter() - started) * 1000)
            counts["plays"] += 1

    started = time.perf_counter()
    await asyncio.gather(*(run(i, m) for i, m in enumerate(matches)))
    seconds = time.perf_counter() - started
    for calls in pool:
        await calls.close()
    return LoadResult(counts["plays"], counts["deals"], seconds, latencies)


def cpu_seconds(pid: int) -> float:
    """User and system CPU time a process has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def top_level_calls(client: redis.Redis) -> int:
    """Commands a client sent: each is a round trip. Redis counts the commands a Lua script runs
    (SET, XADD, PEXPIRE, GETRANGE) in commandstats too, so only commands the service sends
    itself are summed. The service sends PEXPIRE directly too, but only in the same write as a
    commit's script (the watch key's expiry), or for a lost commit without waiting for it: no
    round trip of its own, so it is not counted."""
    stats = cast(dict[str, dict[str, Any]], client.info("commandstats"))
    sent = (
        "cmdstat_get",
        "cmdstat_evalsha",
        "cmdstat_eval",
        "cmdstat_hgetall",
        "cmdstat_xrange",
        "cmdstat_xread",
    )
    return sum(int(stats[name]["calls"]) for name in sent if name in stats)


def gets(client: redis.Redis) -> int:
    """GETs sent: in the load loop (plays and deals, no reads) each is a change that did not
    start from the replica's remembered record: a cache miss."""
    stats = cast(dict[str, dict[str, Any]], client.info("commandstats"))
    return int(stats.get("cmdstat_get", {}).get("calls", 0))


async def sample_match(target: str, client: redis.Redis) -> tuple[int, int, bytes, bytes]:
    """Memory of one match played with request ids: (record and watch access bytes at play 20,
    mid-hand; event stream bytes once hand 1 is complete), and at play 20 the Play response and
    the stored record itself."""
    (match,) = await create_matches(target, [424242])
    record_bytes, response, record = 0, b"", b""
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
                record_bytes = sum(
                    client.memory_usage(key, samples=0) or 0
                    for key in (keys.match_key(match.match_id), keys.watch_key(match.match_id))
                )
                response = reply.SerializeToString()
                record = cast(bytes, client.get(keys.match_key(match.match_id)))
    stream_bytes = client.memory_usage(keys.events_key(match.match_id), samples=0) or 0
    return int(record_bytes), int(stream_bytes), response, record


async def sample_partnership_match(target: str, client: redis.Redis) -> int:
    """Redis bytes of a 4-seat partnership (egyptian) match record and its empty watch access at
    play 20, every play with a request id (so every seat's request record is full)."""
    async with grpc.aio.insecure_channel(target) as channel:
        stub = basra_service_pb2_grpc.BasraServiceStub(channel)
        created = await stub.CreateMatch(
            pb.CreateMatchRequest(
                rules="egyptian", seats=4, seed=424242, request_id=str(uuid.uuid4())
            )
        )
        state, _ = new_match(424242, match_profile("egyptian", 4))
        tokens = {t.seat: t.token for t in created.seat_tokens}
        rng = random.Random(7)
        while state.plays < 20:
            play = random_play(state, rng)
            state, events = apply(state, play)
            played = events[0]
            assert isinstance(played, CardPlayed)
            await stub.Play(
                pb.PlayRequest(
                    match_id=created.match_id,
                    card=card_pb(play.card),
                    plan_id=played.plan,
                    request_id=uuid.uuid4().hex,
                ),
                metadata=(("authorization", f"Bearer {tokens[play.seat]}"),),
            )
    return sum(
        int(client.memory_usage(key, samples=0) or 0)
        for key in (keys.match_key(created.match_id), keys.watch_key(created.match_id))
    )


def service_figures(
    seconds: float = 15.0, matches: int = 64, channels: int = 4
) -> dict[str, float]:
    """Measure and print the service figures; returns them for the JSON summary."""
    with tempfile.TemporaryDirectory() as tmp:
        redis_process = RedisProcess(Path(tmp) / "redis")
        redis_process.start()
        try:
            return _measure(redis_process, Path(tmp), seconds, matches, channels)
        finally:
            redis_process.stop()


def _load(
    targets: list[str], seeds: list[int], seconds: float, channels: int, spread: bool = False
) -> LoadResult:
    matches = asyncio.run(create_matches(targets[0], seeds))
    return asyncio.run(drive(targets, matches, channels, seconds, spread=spread))


def _describe(name: str, result: LoadResult) -> str:
    return (
        f"{name}: {result.rps:,.0f} Play/s, p50 {statistics.median(result.latencies_ms):.2f} "
        f"ms, p99 {result.p99_ms:.2f} ms ({result.plays:,} plays in {result.seconds:.1f} s)"
    )


ALTERNATIONS = 6
"""Runs of the service and of each bare server, interleaved: on a shared, noisy machine one run
swings by 15 % or more, so the figures are medians of runs taken turn about, each service run
paired with the bare run right after it. Each of these runs lasts a third of the other loads'
time (cut off while all the matches are still in flight), which keeps the service part of
`make bench` under twice its length with single runs: six short pairs rather than three of
twice the length (until 2026-12-02), the same time for a median one noisy run sways less."""

RUN_SHARE = 1 / 3
"""Each alternated run's length, as a share of the other loads' ``seconds``."""


@dataclass
class Run:
    """One load run against one server process: the load, and the server's CPU per call."""

    result: LoadResult
    cpu_us: float


def measured(
    pid: int,
    target: str,
    played: Sequence[Match],
    seconds: float,
    channels: int,
    connect: Callable[[str], Calls] = GrpcCalls,
) -> Run:
    cpu = cpu_seconds(pid)
    result = asyncio.run(drive([target], played, channels, seconds, connect=connect))
    return Run(result, (cpu_seconds(pid) - cpu) / (result.plays + result.deals) * 1e6)


def _spread(values: Sequence[float], digits: int = 2) -> str:
    """A median and the range around it: "0.93 (0.88-1.01)"."""
    return (
        f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-"
        f"{max(values):.{digits}f})"
    )


def _medians(name: str, runs: Sequence[Run]) -> str:
    """The median figures of several runs, each with its range."""
    return (
        f"{name}: {_spread([r.result.rps for r in runs], 0)} Play/s, p99 "
        f"{_spread([r.result.p99_ms for r in runs], 1)} ms, server CPU per call "
        f"{_spread([r.cpu_us for r in runs], 0)} us (median and range of {len(runs)} runs)"
    )


def _measure(
    redis_process: RedisProcess, tmp: Path, seconds: float, matches: int, channels: int
) -> dict[str, float]:
    client = redis_process.client()
    seeds = list(range(1000, 1000 + matches))
    target = f"127.0.0.1:{free_port()}"
    http = f"127.0.0.1:{free_port()}"
    bare_target = f"127.0.0.1:{free_port()}"
    bare_uvloop_target = f"127.0.0.1:{free_port()}"
    traced_target = f"127.0.0.1:{free_port()}"
    serve = serve_command(target, redis_process.url, http_listen=http)
    with contextlib.ExitStack() as servers:
        server = servers.enter_context(process(serve, target))
        # The same server with tracing on, every call sampled, exporting to a receiver in this
        # process (idle while another server is measured).
        receiver, receiver_port = servers.enter_context(receiving(keep=False))
        traced = servers.enter_context(
            process(
                serve_command(traced_target, redis_process.url),
                traced_target,
                env={
                    "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver_port}",
                    "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
                    "OTEL_TRACES_SAMPLER_ARG": "1.0",
                    "OTEL_SERVICE_NAME": "basra-bench",
                },
            )
        )
        record_bytes, stream_bytes, response, record = asyncio.run(sample_match(target, client))
        (tmp / "response.bin").write_bytes(response)
        (tmp / "record.bin").write_bytes(record)
        four_seat_bytes = asyncio.run(sample_partnership_match(target, client))
        # The bare servers replay the sampled response and record: started once they exist, and
        # idle while another server is measured.
        bare = servers.enter_context(
            process(bare_command(bare_target, redis_process.url, tmp), bare_target)
        )
        bare_uvloop = servers.enter_context(
            process(
                [
                    *bare_command(bare_uvloop_target, redis_process.url, tmp),
                    "--event-loop",
                    "uvloop",
                ],
                bare_uvloop_target,
            )
        )
        service_runs: list[Run] = []
        bare_runs: list[Run] = []
        bare_uvloop_runs: list[Run] = []
        connect_runs: list[Run] = []
        traced_runs: list[Run] = []
        calls = changes = misses = 0
        for alternation in range(ALTERNATIONS):
            # Fresh matches of the same seeds for each service run: the same calls every time.
            # Each bare server gets the same calls on the same match ids right after.
            client.flushall()
            played = asyncio.run(create_matches(target, seeds))
            before, got = top_level_calls(client), gets(client)
            run = measured(server.pid, target, played, seconds * RUN_SHARE, channels)
            service_runs.append(run)
            calls += top_level_calls(client) - before
            misses += gets(client) - got
            changes += run.result.plays + run.result.deals
            client.flushall()
            bare_runs.append(measured(bare.pid, bare_target, played, seconds * RUN_SHARE, channels))
            client.flushall()
            bare_uvloop_runs.append(
                measured(bare_uvloop.pid, bare_uvloop_target, played, seconds * RUN_SHARE, channels)
            )
            # The same load over the HTTP port of the same server, in the alternation of its
            # gRPC run (after the bare runs): new matches of the same seeds, as many HTTP/2
            # connections as gRPC channels, Connect binary.
            client.flushall()
            fresh = asyncio.run(create_matches(target, seeds))
            connect_runs.append(
                measured(
                    server.pid,
                    f"http://{http}",
                    fresh,
                    seconds * RUN_SHARE,
                    channels,
                    connect=ConnectCalls,
                )
            )
            # The same load on the traced server: new matches of the same seeds.
            client.flushall()
            fresh = asyncio.run(create_matches(traced_target, seeds))
            traced_runs.append(
                measured(traced.pid, traced_target, fresh, seconds * RUN_SHARE, channels)
            )
            for name, run in (
                ("service", service_runs[-1]),
                ("bare", bare_runs[-1]),
                ("bare on uvloop", bare_uvloop_runs[-1]),
                ("service over Connect", connect_runs[-1]),
                ("service traced (sampler 1.0)", traced_runs[-1]),
            ):
                print(
                    f"  run {alternation + 1} of {ALTERNATIONS}, "
                    + _describe(name, run.result)
                    + f", server CPU {run.cpu_us:.0f} us per call"
                )
    result_rps = statistics.median(r.result.rps for r in service_runs)
    play_p99 = statistics.median(r.result.p99_ms for r in service_runs)
    play_cpu_us = statistics.median(r.cpu_us for r in service_runs)
    bare_rps = statistics.median(r.result.rps for r in bare_runs)
    bare_p99 = statistics.median(r.result.p99_ms for r in bare_runs)
    bare_cpu_us = statistics.median(r.cpu_us for r in bare_runs)
    # Each service run against the bare run right after it: a change of the machine's load
    # between alternations moves both.
    ratios = [s.result.rps / b.result.rps for s, b in zip(service_runs, bare_runs, strict=True)]
    cpu_ratios = [s.cpu_us / b.cpu_us for s, b in zip(service_runs, bare_runs, strict=True)]
    uvloop_ratios = [
        s.result.rps / b.result.rps for s, b in zip(service_runs, bare_uvloop_runs, strict=True)
    ]
    ratio = statistics.median(ratios)
    hit_rate = 1 - misses / changes
    print(_medians(f"service, grpc.aio, 1 process, {matches} matches in flight", service_runs))
    print(_medians("service, Connect over HTTP/2 (granian), same process, same load", connect_runs))
    # Each Connect run against the gRPC run of its alternation, as play / bare.
    connect_ratios = [
        c.result.rps / s.result.rps for c, s in zip(connect_runs, service_runs, strict=True)
    ]
    connect_ratio = statistics.median(connect_ratios)
    connect_cpu_us = statistics.median(r.cpu_us for r in connect_runs)
    print(
        f"  connect / gRPC: {_spread(connect_ratios)} (median and range of the "
        f"{ALTERNATIONS} paired runs; target 0.8 or more); server CPU per call "
        f"{connect_cpu_us:.0f} us (Connect) against {play_cpu_us:.0f} us (gRPC)"
    )
    roundtrips = calls / changes
    print(
        f"  Redis round trips per play or deal: {roundtrips:.2f}; changes made from the "
        f"replica's remembered record: {hit_rate:.3f}"
    )
    print(
        f"  Redis memory per match: {record_bytes} bytes (state and request records, and the "
        f"empty watch access, mid-hand); event stream {stream_bytes:,} bytes per hand (49 entries)"
    )
    print(f"  Redis memory per 4-seat partnership match: {four_seat_bytes} bytes (mid-hand)")
    print(
        _medians("bare gRPC + Redis, grpc.aio, asyncio's loop (same client, same calls)", bare_runs)
    )
    print(
        f"  play / bare: {_spread(ratios)} (median and range of the {ALTERNATIONS} paired runs; "
        f"target 1.0 or more, p99 no worse); p99 {play_p99:.1f} ms against "
        f"{bare_p99:.1f} ms bare (medians)"
    )
    print(
        f"  server CPU per call: {play_cpu_us:.0f} us (service) against {bare_cpu_us:.0f} us "
        f"(bare), {_spread(cpu_ratios)}x (target 1.2x or less): the game logic, protobuf views "
        "and metrics cost the difference"
    )
    otel_cpu_us = statistics.median(r.cpu_us for r in traced_runs)
    # Each traced run against the untraced run of its alternation.
    otel_ratios = [t.cpu_us / s.cpu_us for t, s in zip(traced_runs, service_runs, strict=True)]
    print(_medians("service traced, OTLP export of every call (sampler 1.0)", traced_runs))
    print(
        f"  traced / untraced server CPU per call: {otel_cpu_us:.0f} us against "
        f"{play_cpu_us:.0f} us, {_spread(otel_ratios)}x (target 1.25x or less); "
        f"{receiver.received:,} spans received"
    )
    print(
        _medians(
            "bare gRPC + Redis on uvloop (for information: not the targets' baseline)",
            bare_uvloop_runs,
        )
    )
    print(
        f"  play / bare on uvloop: {_spread(uvloop_ratios)}; server CPU per call "
        f"{play_cpu_us:.0f} us against "
        f"{statistics.median(r.cpu_us for r in bare_uvloop_runs):.0f} us"
    )
    client.flushall()

    # The server model, by measurement: threads for the bare ceiling, and two aio processes.
    threads_target = f"127.0.0.1:{free_port()}"
    threads = bare_command(threads_target, redis_process.url, tmp, model="threads")
    with process(threads, threads_target):
        threads_result = asyncio.run(drive([threads_target], played, channels, seconds))
    print(_describe("bare gRPC + Redis, thread pool of 32 (same client)", threads_result))
    client.flushall()
    targets = [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]
    with (
        process(serve_command(targets[0], redis_process.url), targets[0]),
        process(serve_command(targets[1], redis_process.url), targets[1]),
    ):
        got, before = gets(client), top_level_calls(client)
        two = _load(targets, seeds, seconds, channels)
        two_hit_rate = 1 - (gets(client) - got) / (two.plays + two.deals)
        two_trips = (top_level_calls(client) - before) / (two.plays + two.deals)
        got, before = gets(client), top_level_calls(client)
        spread = _load(targets, list(range(5000, 5000 + matches)), seconds, channels, spread=True)
        spread_hit_rate = 1 - (gets(client) - got) / (spread.plays + spread.deals)
        spread_trips = (top_level_calls(client) - before) / (spread.plays + spread.deals)
    print(_describe("service, grpc.aio, 2 processes (each match on one of them)", two))
    print(
        f"  remembered records: {two_hit_rate:.3f} of changes, {two_trips:.2f} Redis round "
        "trips per change"
    )
    print(_describe("service, 2 processes, each call to either at random", spread))
    print(
        f"  remembered records: {spread_hit_rate:.3f} of changes (stale ones included), "
        f"{spread_trips:.2f} Redis round trips per change"
    )
    return {
        "play_rps": round(result_rps, 1),
        "connect_play_rps": round(statistics.median(r.result.rps for r in connect_runs), 1),
        "connect_play_p99_ms": round(statistics.median(r.result.p99_ms for r in connect_runs), 2),
        "connect_vs_play_ratio": round(connect_ratio, 3),
        "connect_retries": ConnectCalls.retries,
        "connect_vs_play_ratio_min": round(min(connect_ratios), 3),
        "connect_vs_play_ratio_max": round(max(connect_ratios), 3),
        "connect_server_cpu_us": round(connect_cpu_us, 1),
        "play_p99_ms": round(play_p99, 2),
        "bare_rps": round(bare_rps, 1),
        "bare_p99_ms": round(bare_p99, 2),
        "play_vs_bare_ratio": round(ratio, 3),
        "play_vs_bare_ratio_min": round(min(ratios), 3),
        "play_vs_bare_ratio_max": round(max(ratios), 3),
        "bench_alternations": float(ALTERNATIONS),
        "redis_roundtrips_per_play": round(roundtrips, 3),
        "redis_bytes_per_match": float(record_bytes),
        "redis_stream_bytes_per_hand": float(stream_bytes),
        "redis_bytes_per_4_seat_match": float(four_seat_bytes),
        "bare_threads_rps": round(threads_result.rps, 1),
        "play_rps_two_processes": round(two.rps, 1),
        "cache_hit_rate": round(hit_rate, 4),
        "cache_hit_rate_two_replicas": round(two_hit_rate, 4),
        "redis_roundtrips_per_play_two_replicas": round(two_trips, 3),
        "cache_hit_rate_two_replicas_random": round(spread_hit_rate, 4),
        "redis_roundtrips_per_play_two_replicas_random": round(spread_trips, 3),
        "play_server_cpu_us": round(play_cpu_us, 1),
        "otel_play_server_cpu_us": round(otel_cpu_us, 1),
        "otel_vs_play_server_cpu_ratio": round(statistics.median(otel_ratios), 3),
        "bare_server_cpu_us": round(bare_cpu_us, 1),
        "play_vs_bare_server_cpu_ratio": round(statistics.median(cpu_ratios), 3),
        "play_vs_bare_server_cpu_ratio_min": round(min(cpu_ratios), 3),
        "play_vs_bare_server_cpu_ratio_max": round(max(cpu_ratios), 3),
        "bare_uvloop_rps": round(statistics.median(r.result.rps for r in bare_uvloop_runs), 1),
        "bare_uvloop_p99_ms": round(
            statistics.median(r.result.p99_ms for r in bare_uvloop_runs), 2
        ),
        "bare_uvloop_server_cpu_us": round(
            statistics.median(r.cpu_us for r in bare_uvloop_runs), 1
        ),
        "play_vs_bare_uvloop_ratio": round(statistics.median(uvloop_ratios), 3),
    }


if __name__ == "__main__":
    print(service_figures())
