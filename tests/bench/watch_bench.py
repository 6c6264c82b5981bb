"""WatchMatch benchmark: many idle streams on one replica, then a play in every match.

    python -m tests.bench.watch_bench [--matches 5000] [--idle 30]

One server process on a real redis-server; ``--matches`` matches, each watched by both seats
(two streams per match, 100 per client connection like the shipped
``BASRA_MAX_CONCURRENT_STREAMS``), idle for ``--idle`` seconds, then one play in every match.
Figures: streams that got their event, delivery p50/p99 (from the Play sent to the event
received), the replica's Redis connections (Redis' own CLIENT LIST), and the server's resident
memory per idle stream (its RSS with the streams open, less before they were opened), beside
two floors that are gRPC's own: a bare ``grpc.aio`` server whose handler sends one message and
waits, and the same configured like the service (its channel options, call limit, request
deadline, request-stream registration and ``context.write``), which is the part of the figure
no change to the fan-out removes. Both floors count their connections and check that every
stream is open, as the service's figure does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import redis

from basra.service.config import Settings, from_args
from basra.service.limits import RequestDeadline
from basra.service.server import grpc_options
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc
from tests.bench.service_bench import cpu_seconds, process, serve_command
from tests.load.watchers import Crowd, redis_connections
from tests.support import RedisProcess, free_port


def rss_bytes(pid: int) -> int:
    """Resident memory of a process (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def gauge(port: int, name: str) -> float:
    """A metric's value from the server's Prometheus endpoint."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    raise RuntimeError(f"no metric {name}")


def full_collections(port: int) -> tuple[dict[float, float], float]:
    """The server's full (generation 2) garbage collections so far: the cumulative count per
    histogram bucket bound (``le``), and their seconds in all."""
    buckets: dict[float, float] = {}
    total = 0.0
    prefix = 'basra_gc_pause_seconds_bucket{generation="2",le="'
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(prefix):
                bound, _, value = line[len(prefix) :].partition('"} ')
                buckets[float(bound)] = float(value)
            elif line.startswith('basra_gc_pause_seconds_sum{generation="2"}'):
                total = float(line.split()[1])
    return buckets, total


def server_plays(port: int) -> tuple[float, float, dict[float, float]]:
    """The server's Play calls so far, from its ``basra_rpc_latency_seconds`` histogram: how
    many, their seconds in all, and the cumulative count per bucket bound (``le``)."""
    buckets: dict[float, float] = {}
    count = total = 0.0
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        for line in response.read().decode().splitlines():
            if 'method="Play"' not in line:
                continue
            name, _, value = line.rpartition(" ")
            if name.startswith("basra_rpc_latency_seconds_bucket"):
                bound = name.partition('le="')[2].partition('"')[0]
                buckets[float(bound)] = float(value)
            elif name.startswith("basra_rpc_latency_seconds_count"):
                count = float(value)
            elif name.startswith("basra_rpc_latency_seconds_sum"):
                total = float(value)
    return count, total, buckets


def _plays_between(
    before: tuple[float, float, dict[float, float]], after: tuple[float, float, dict[float, float]]
) -> str:
    """The server's own time for the Plays between two scrapes: the mean, and the share that
    took at most each of a few of the histogram's bounds."""
    count = after[0] - before[0]
    if not count:
        return "no Play timed"
    shares = ", ".join(
        f"{(after[2][bound] - before[2].get(bound, 0)) / count:.0%} within {bound * 1000:g} ms"
        for bound in (0.01, 0.05, 0.1, 0.25)
        if bound in after[2]
    )
    return f"mean {(after[1] - before[1]) / count * 1000:.0f} ms, {shares}"


@contextlib.contextmanager
def _crowd_collector_off() -> Iterator[None]:
    """No garbage collection in this process (the crowd's) while it measures the plays.

    The crowd is 10,000 clients in one process: its collections walk every open call's objects
    and stall its one loop for as long (full and young collections inside the plays), delaying
    the Plays it sends and the events it reads as 10,000 separate clients never are. Freezing
    alone is not enough: the young collections of what the plays allocate would still pause
    it. The plays last seconds, and reference counting frees what they drop."""
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.unfreeze()


def _collections_between(
    before: tuple[dict[float, float], float], after: tuple[dict[float, float], float]
) -> tuple[int, float, float]:
    """Full collections between two scrapes: how many, their seconds, and the bound of the
    histogram bucket the longest fell in (0 when there was none)."""
    count = after[0].get(float("inf"), 0) - before[0].get(float("inf"), 0)
    # The smallest bound under which every one of them fell.
    grown = [b for b in sorted(after[0]) if after[0][b] - before[0].get(b, 0) == count]
    longest = grown[0] if count and grown else 0.0
    return int(count), after[1] - before[1], longest


def watch_figures(
    matches: int = 5000, idle_s: float = 30.0, plays_per_s: float = 1000.0
) -> dict[str, float]:
    """Measure and print the WatchMatch figures; returns them for the JSON summary."""
    with tempfile.TemporaryDirectory() as tmp:
        redis_process = RedisProcess(Path(tmp) / "redis", args=("--maxclients", "20000"))
        redis_process.start()
        target = f"127.0.0.1:{free_port()}"
        metrics_port = free_port()
        # Every stream comes from this one client address: the per-address share of the call
        # limit is raised to the whole limit, which production's many addresses never reach.
        command = serve_command(
            target,
            redis_process.url,
            [
                *("--metrics-port", str(metrics_port), "--drain-seconds", "1"),
                *("--max-calls-per-peer", str(Settings().max_concurrent_rpcs)),
            ],
        )
        direct = redis_process.client()
        try:
            with process(command, target) as server:
                crowd = Crowd(target)
                try:
                    figures = _measure(
                        crowd, server.pid, metrics_port, direct, matches, idle_s, plays_per_s
                    )
                finally:
                    crowd.close()
        finally:
            direct.close()
            redis_process.stop()
    return figures


def _measure(
    crowd: Crowd,
    pid: int,
    metrics_port: int,
    direct: redis.Redis,
    matches: int,
    idle_s: float,
    plays_per_s: float,
) -> dict[str, float]:
    streams = 2 * matches
    started = time.monotonic()
    crowd.create(matches)
    created_s = time.monotonic() - started
    before = rss_bytes(pid)
    started = time.monotonic()
    crowd.watch()
    crowd.wait(
        lambda: (
            gauge(metrics_port, "basra_watch_streams") == streams
            and gauge(metrics_port, "basra_watch_matches") == matches
        ),
        timeout=300,
        what=f"{streams} streams open",
    )
    opened_s = time.monotonic() - started
    assert not crowd.failed(), [s.error for s in crowd.failed()[:5]]
    time.sleep(idle_s)  # the streams stay idle: this is the scenario
    per_stream = (rss_bytes(pid) - before) / streams
    scrapes = []
    for _ in range(3):
        scrape_started = time.monotonic()
        frozen = gauge(metrics_port, "basra_gc_frozen_objects")
        scrapes.append((time.monotonic() - scrape_started) * 1000)
    connections = redis_connections(direct)
    collections_before = full_collections(metrics_port)
    plays_before = server_plays(metrics_port)
    cpu_before, plays_started = cpu_seconds(pid), time.monotonic()
    client_cpu_before = time.process_time()
    with _crowd_collector_off():
        crowd.play_everywhere(per_second=plays_per_s)
        crowd.wait(
            lambda: crowd.arrived(2) + len(crowd.failed()) == streams,
            timeout=300,
            what="every stream gets its play",
        )
    window_s = time.monotonic() - plays_started
    server_busy = (cpu_seconds(pid) - cpu_before) / window_s
    client_busy = (time.process_time() - client_cpu_before) / window_s
    played, played_s, played_longest = _collections_between(
        collections_before, full_collections(metrics_port)
    )
    on_server = _plays_between(plays_before, server_plays(metrics_port))
    overall, overall_s, overall_longest = _collections_between(
        ({}, 0.0), full_collections(metrics_port)
    )
    delivered = len(crowd.got(2))
    connections = max(connections, redis_connections(direct))
    delays = crowd.delays_ms(2)
    after_answer = crowd.delays_ms(2, after_answer=True)
    plays = [(m.answered_at - m.played_at) * 1000 for m in crowd.matches]
    reconnects = gauge(metrics_port, "basra_watch_reader_reconnects_total")
    p50 = statistics.median(delays)
    p99 = statistics.quantiles(delays, n=100)[98]
    answer_p99 = statistics.quantiles(after_answer, n=100)[98]
    play_p99 = statistics.quantiles(plays, n=100)[98]
    print(
        f"WatchMatch: {matches:,} matches x 2 seats = {streams:,} streams on one replica "
        f"(created in {created_s:.1f} s, streams open in {opened_s:.1f} s, {crowd.reopened} cut "
        f"by the server before their first event and opened again), idle {idle_s:.0f} s, "
        f"then a play in every match, {plays_per_s:,.0f} plays/s"
    )
    print(
        f"  delivered to {delivered:,} of {streams:,} streams; from the Play sent: p50 "
        f"{p50:.0f} ms, p99 {p99:.0f} ms (target under 250 ms); the Play call itself p99 "
        f"{play_p99:.0f} ms, from its response to the event p99 {answer_p99:.0f} ms"
    )
    print(f"  the Play on the server, from its handler's start to its answer: {on_server}")
    print(
        f"  the {matches:,} plays and their events took {window_s:.1f} s "
        f"({matches / window_s:,.0f} plays/s); CPU in use meanwhile, two cores in all: the server "
        f"{server_busy:.0%} of a core, the crowd (this process) {client_busy:.0%}"
    )
    print(
        f"  full garbage collections during the plays: {played} ({played_s * 1000:.0f} ms in "
        f"all, the longest at most {played_longest * 1000:g} ms); since the server started: "
        f"{overall} ({overall_s * 1000:.0f} ms, the longest at most {overall_longest * 1000:g} ms)"
    )
    print(
        f"  Redis connections of the replica: {connections} (command pool 64, plus the shared "
        f"reader); reader reconnects {reconnects:.0f}"
    )
    print(
        f"  a scrape of the server's metrics with the streams open: {min(scrapes):.0f} ms at best "
        f"of 3 ({frozen:,.0f} frozen objects, basra_gc_frozen_objects, from the freezing "
        f"policy's count: not walked at the scrape)"
    )
    floor = grpc_floor_bytes_per_stream(crowd)
    configured = grpc_floor_bytes_per_stream(crowd, configured=True)
    print(
        f"  server memory per idle stream: {per_stream / 1024:.1f} KiB (target under 20 KiB); "
        f"a bare grpc.aio server whose handler sends one message and waits: "
        f"{floor / 1024:.1f} KiB, configured "
        f"like the service: {configured / 1024:.1f} KiB (malloc: {_allocator()})"
    )
    return {
        "watch_streams": float(delivered),
        "watch_p99_ms": round(p99, 1),
        "watch_redis_connections": float(connections),
        "watch_full_collections_during_plays": float(played),
        "watch_full_collection_seconds_during_plays": round(played_s, 3),
        "watch_bytes_per_stream": round(per_stream),
        "watch_grpc_floor_bytes_per_stream": round(floor),
        "watch_grpc_configured_floor_bytes_per_stream": round(configured),
    }


def soak(matches: int = 1000, rounds: int = 5) -> None:
    """Open and end ``2 * matches`` streams ``rounds`` times on one server: after each round,
    the objects frozen out of the collector's passes (``basra_gc_frozen_objects``: the freezing
    policy's last count plus what it froze since, an upper bound recounted whenever it may have
    doubled) and the server's resident memory, which levels off once the replica's caches of
    records and states (4,096 matches each) are full when the streams' objects are freed as
    they end."""
    with tempfile.TemporaryDirectory() as tmp:
        redis_process = RedisProcess(Path(tmp) / "redis", args=("--maxclients", "20000"))
        redis_process.start()
        target = f"127.0.0.1:{free_port()}"
        port = free_port()
        command = serve_command(target, redis_process.url, ["--metrics-port", str(port)])
        try:
            with process(command, target) as server:
                print(f"start: {gauge(port, 'basra_gc_frozen_objects'):,.0f} frozen objects")
                for round_ in range(rounds):
                    crowd = Crowd(target)
                    try:
                        crowd.create(matches, first_seed=1 + round_ * matches)
                        crowd.watch()
                        crowd.wait(
                            lambda: gauge(port, "basra_watch_streams") == 2 * matches,
                            timeout=300,
                            what="streams open",
                        )
                        opened = gauge(port, "basra_gc_frozen_objects")
                        crowd.leave()
                        crowd.wait(
                            lambda: gauge(port, "basra_watch_streams") == 0,
                            timeout=300,
                            what="streams ended",
                        )
                    finally:
                        crowd.close()
                    print(
                        f"round {round_ + 1}: {2 * matches:,} streams opened and ended; frozen "
                        f"objects {opened:,.0f} with them open, "
                        f"{gauge(port, 'basra_gc_frozen_objects'):,.0f} after; RSS "
                        f"{rss_bytes(server.pid) / 2**20:.0f} MiB; frozen garbage found by thaws "
                        f"{gauge(port, 'basra_gc_frozen_garbage_objects_total'):,.0f}"
                    )
        finally:
            redis_process.stop()


_MALLOC_SETTINGS = ("LD_PRELOAD", "MALLOC_ARENA_MAX", "MALLOC_CONF", "PYTHONMALLOC")


def _allocator() -> str:
    """The server processes' malloc: glibc's unless the environment preloads another (the
    service sets none; measured, jemalloc and MALLOC_ARENA_MAX did not lower the figure)."""
    tuned = [f"{name}={os.environ[name]}" for name in _MALLOC_SETTINGS if os.environ.get(name)]
    return ", ".join(tuned) or "glibc, default settings"


_FIRST = b"\xc2\x3e\xc3\x01" + b"x" * 195
"""What each floor stream sends before it waits: a response of 199 bytes (one unknown field,
kept as it is by protobuf), about the deal a service stream has sent (resident memory per
stream grows with what a stream has sent)."""


class _IdleStreams(basra_service_pb2_grpc.BasraServiceServicer):
    """WatchMatch that sends one message, then waits for its client to leave: gRPC's own cost
    of a stream, written the way grpc.aio's examples write a server stream."""

    async def WatchMatch(  # noqa: N802
        self, request: pb.WatchMatchRequest, context: Any
    ) -> AsyncIterator[pb.WatchMatchResponse]:
        yield pb.WatchMatchResponse.FromString(_FIRST)
        # Waits until gRPC cancels it (the client left).
        await asyncio.get_running_loop().create_future()


# Calls past core's default of 1,000 waiting to be accepted are cancelled: a floor measured
# without these would count streams that no longer exist.
_PENDING = ("grpc.server.max_pending_requests", "grpc.server.max_pending_requests_hard_limit")


async def _serve_idle(listen: str, *, configured: bool) -> None:
    if not configured:
        server = grpc.aio.server(
            options=[("grpc.max_concurrent_streams", 100), *((name, 20_000) for name in _PENDING)]
        )
        idle = _IdleStreams()  # type: ignore[abstract]  # WatchMatch only
        basra_service_pb2_grpc.add_BasraServiceServicer_to_server(idle, server)
    else:
        # As server.create_server and grpc_transport.register build the service's server.
        settings = from_args(argparse.Namespace(), {"BASRA_STORE": "embedded"})
        deadline = RequestDeadline(settings.request_timeout_s)
        server = grpc.aio.server(options=grpc_options(settings))

        async def watch(requests: AsyncIterator[Any], context: Any) -> None:
            await deadline.first(context)
            await context.write(_FIRST)
            # Waits until gRPC cancels it (the client left), as the service's streams do.
            await asyncio.get_running_loop().create_future()

        handler = grpc.stream_stream_rpc_method_handler(
            watch, pb.WatchMatchRequest.FromString, lambda data: data
        )
        server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(
                    "basra.v1.BasraService", {"WatchMatch": handler}
                ),
            )
        )
    server.add_insecure_port(listen)
    await server.start()
    await server.wait_for_termination()


def grpc_floor_bytes_per_stream(
    crowd: Crowd, streams: int = 5000, *, configured: bool = False
) -> float:
    """Resident memory per idle stream of a bare grpc.aio server whose handler sends one
    message and waits (the part of the service's figure that is gRPC's own), its connections
    included; ``configured``: with the service's server options, call limit, request deadline,
    request-stream registration and ``context.write``."""
    target = f"127.0.0.1:{free_port()}"
    command = [sys.executable, "-m", "tests.bench.watch_bench", "--idle-server", target]
    if configured:
        command.append("--configured")

    async def measure(pid: int) -> float:
        # Measured from before the connections, as the service's figure is.
        before = rss_bytes(pid)
        local = [("grpc.use_local_subchannel_pool", 1)]
        channels = [
            grpc.aio.insecure_channel(target, options=local) for _ in range(streams // 90 + 1)
        ]
        await asyncio.gather(*(c.channel_ready() for c in channels))
        calls = []
        for index in range(streams):
            stub = basra_service_pb2_grpc.BasraServiceStub(channels[index % len(channels)])
            calls.append(stub.WatchMatch(pb.WatchMatchRequest(match_id="idle")))
            if index % 500 == 499:
                await asyncio.sleep(0.5)  # arriving like clients, as in the service's figure
        # Every stream is open and has sent its message: none was cancelled on the way.
        await asyncio.gather(*(call.read() for call in calls))
        await asyncio.sleep(3)
        per_stream = (rss_bytes(pid) - before) / streams
        for call in calls:
            call.cancel()
        # Each call's status task ends once its cancellation is through; left pending, the
        # tasks were destroyed with the process ("Task was destroyed but it is pending!").
        await asyncio.gather(*(call.code() for call in calls))
        for channel in channels:
            await channel.close(None)
        return per_stream

    with process(command, target) as server:
        # On the crowd's event loop: grpc.aio in one process wants one loop.
        return crowd.run(measure(server.pid))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--idle-server", metavar="ADDRESS", help=argparse.SUPPRESS)
    parser.add_argument("--configured", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--matches", type=int, default=5000)
    parser.add_argument("--idle", type=float, default=30.0, help="seconds the streams stay idle")
    parser.add_argument("--rate", type=float, default=1000.0, help="plays per second")
    parser.add_argument(
        "--soak", type=int, metavar="ROUNDS", help="open and end 2 x --matches streams ROUNDS times"
    )
    args = parser.parse_args()
    if args.soak:
        soak(args.matches, args.soak)
        return
    if args.idle_server:
        asyncio.run(_serve_idle(args.idle_server, configured=args.configured))
        return
    print(json.dumps(watch_figures(args.matches, args.idle, args.rate)))


if __name__ == "__main__":
    main()
