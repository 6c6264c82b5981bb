"""The service's Play throughput with bots in play: two-seat ERAM matches, a person (this
client, greedy) at seat 0 and the service's greedy bot at seat 1, on Redis, the bot's moves
made by the server (``--bot-pace-seconds 0``) through the same compare-and-set as every play.
Reports every play's rate (the person's and the bot's), and the person's Play latency. The
person learns of the bot's move by reading its view (GetMatch) every millisecond, so the server
also serves those reads.

Then, at the shipped bot settings (``bot_faults_figures``): how soon a strong bot moves again
after its thinking process is killed (``kill -9`` just before a person's play, so the bot's
reply needs the process that replaces it), and a person's strong-bot reply (the pace
included) alone, while one caller keeps every match of four strong bots it may, and while
ten callers do (past the replica's bound), with the CPU the thinking process and the server
took meanwhile.

    .venv/bin/python -m tests.bench.bots_service_bench
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import os
import signal
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc

from basra.client import AsyncClient, greedy_choice
from basra.client.aio import AsyncMatch
from basra.client.retry import CHANNEL_OPTIONS
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc as pb_grpc
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
    figures.update(bot_faults_figures())
    return figures


# -- Faults and fairness: a killed thinking process, and a caller flooding with bots only -----

STRONG = game_pb2.BOT_LEVEL_STRONG
PERSON = game_pb2.BOT_LEVEL_UNSPECIFIED
KILLS = 3
"""Thinking processes killed, one per person's play, for the recovery figure."""
FLOOD_SECONDS = 40.0
"""How long one caller keeps every match of bots only it may while a person plays."""
PERSONS = 2
"""People playing a strong bot at once during the flood (each from another address)."""
SHIPPED = (
    # deploy/kustomize/base/config.env's creation limits (serve_command lifts them).
    "--create-rate",
    "50",
    "--create-burst",
    "100",
    "--caller-create-rate",
    "10",
    "--caller-create-burst",
    "50",
)


def _ticks(pid: int) -> int:
    """A process's CPU time (user and system), in clock ticks; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])


def _thinkers(server: int) -> list[int]:
    """The server's thinking processes (its multiprocessing children that run spawn_main)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rpartition(")")[2].split()[1]) == server and b"spawn_main" in command:
            found.append(int(entry.name))
    return found


async def _reply(stub: Any, match_id: str, token: str, version: int) -> float:
    """Wait until the bot has answered the move that made ``version``: the moment it did."""
    metadata = (("authorization", f"Bearer {token}"),)
    while True:
        seen = await stub.GetMatch(pb.GetMatchRequest(match_id=match_id), metadata=metadata)
        if seen.view.version > version:
            return time.perf_counter()
        await asyncio.sleep(0.005)


async def _person_plays(
    stub: Any, deadline: float, replies: list[float], kill: Callable[[], None] | None = None
) -> None:
    """Play ERAM against a strong bot (seat 1) until ``deadline``: each of the bot's replies,
    seconds from the person's play (pace included) to the bot's move, into ``replies``. With
    ``kill``, called just before each play (the bot's process idle), the reply is timed from
    the kill: the bot's move needs the process that replaces the killed one."""
    while time.perf_counter() < deadline:
        created = await stub.CreateMatch(
            pb.CreateMatchRequest(bots=[PERSON, STRONG], request_id=str(uuid.uuid4()))
        )
        match_id, token = created.match_id, created.seat_tokens[0].token
        metadata = (("authorization", f"Bearer {token}"),)
        view = created.view
        while time.perf_counter() < deadline and view.status != game_pb2.MATCH_STATUS_MATCH_OVER:
            if view.status == game_pb2.MATCH_STATUS_HAND_OVER:
                if view.next_dealer == 0:
                    await stub.Deal(
                        pb.DealRequest(match_id=match_id, expected_version=view.version),
                        metadata=metadata,
                    )
                else:
                    await _reply(stub, match_id, token, view.version)
            elif view.to_play != 0:
                await _reply(stub, match_id, token, view.version)
            else:
                plans = await stub.ListPlans(
                    pb.ListPlansRequest(match_id=match_id), metadata=metadata
                )
                choice = next((c for c in plans.cards if c.plans), plans.cards[0])
                started = time.perf_counter()
                if kill is not None:
                    kill()
                    started = time.perf_counter()
                played = await stub.Play(
                    pb.PlayRequest(
                        match_id=match_id,
                        card=choice.card,
                        plan_id=choice.plans[0].id if choice.plans else 0,
                        trail=not choice.plans,
                        expected_version=view.version,
                        request_id=str(uuid.uuid4()),
                    ),
                    metadata=metadata,
                )
                after = played.view
                if after.status == game_pb2.MATCH_STATUS_PLAYING and after.to_play == 1:
                    replies.append(await _reply(stub, match_id, token, after.version) - started)
            view = (
                await stub.GetMatch(pb.GetMatchRequest(match_id=match_id), metadata=metadata)
            ).view
            if kill is not None and len(replies) >= KILLS:
                return


def _flood(caller: str, http_port: int, deadline: float, counts: dict[str, int]) -> None:
    """One caller (the loopback address ``caller``: the server tells callers apart by address)
    creating every match of four strong bots it may, over Connect, as often as its creation
    rate lets it (10 a second): the creations refused are counted by what refused them."""
    connection = http.client.HTTPConnection(
        "127.0.0.1", http_port, timeout=30, source_address=(caller, 0)
    )
    try:
        while time.perf_counter() < deadline:
            request = pb.CreateMatchRequest(
                rules="egyptian", seats=4, bots=[STRONG] * 4, request_id=str(uuid.uuid4())
            )
            connection.request(
                "POST",
                "/basra.v1.BasraService/CreateMatch",
                request.SerializeToString(),
                {"content-type": "application/proto", "connect-protocol-version": "1"},
            )
            response = connection.getresponse()
            body = response.read()
            if response.status == 200:
                counts["created"] += 1
            elif response.status == 429 and b"matches of bots only" in body:
                counts["refused_caller" if b"per caller" in body else "refused_replica"] += 1
            elif response.status == 429:
                counts["refused_rate"] += 1
            else:
                raise AssertionError(f"CreateMatch answered HTTP {response.status}: {body!r}")
            time.sleep(0.1)
    finally:
        connection.close()


def _p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] if len(values) > 1 else max(values, default=0)


async def _recovery(target: str, server: int) -> list[float]:
    """Kill the thinking process just after a person's play, ``KILLS`` times: the seconds from
    each kill to the strong bot's reply."""
    async with grpc.aio.insecure_channel(target) as channel:
        stub = pb_grpc.BasraServiceStub(channel)
        replies: list[float] = []
        # A first reply starts the thinking process.
        await _person_plays(stub, time.perf_counter() + 3, [])

        def kill() -> None:
            pids = _thinkers(server)
            assert pids, "no thinking process to kill"
            for pid in pids:
                os.kill(pid, signal.SIGKILL)

        await _person_plays(stub, time.perf_counter() + 120, replies, kill)
        return replies


async def _flooded(
    flooders: Sequence[str], http_port: int, persons: Sequence[str]
) -> tuple[list[float], dict[str, int]]:
    """People's strong-bot replies (on the gRPC port, at ``persons``) while callers (one per
    loopback address of ``flooders``) flood: (replies, the flood's counts)."""
    kinds = ("created", "refused_caller", "refused_replica", "refused_rate")
    each = [dict.fromkeys(kinds, 0) for _ in flooders]
    deadline = time.perf_counter() + FLOOD_SECONDS
    replies: list[float] = []
    loop = asyncio.get_running_loop()
    async with contextlib.AsyncExitStack() as stack:
        channels = [
            await stack.enter_async_context(grpc.aio.insecure_channel(address))
            for address in persons
        ]
        # A thread per caller: they all flood at once.
        threads = stack.enter_context(ThreadPoolExecutor(len(flooders)))
        await asyncio.gather(
            *(
                loop.run_in_executor(threads, _flood, ip, http_port, deadline, counts)
                for ip, counts in zip(flooders, each, strict=True)
            ),
            *(_person_plays(pb_grpc.BasraServiceStub(c), deadline, replies) for c in channels),
        )
    return replies, {kind: sum(counts[kind] for counts in each) for kind in kinds}


def _flood_figures(
    server: int, flooders: Sequence[str], http_port: int, persons: Sequence[str], name: str
) -> dict[str, float]:
    """``_flooded``'s figures, named ``bots_<name>_...``, with the CPU the server's process
    and its thinking processes took meanwhile, as shares of the machine's cores."""
    cores = os.cpu_count() or 1
    tick = os.sysconf("SC_CLK_TCK")
    workers = {pid: _ticks(pid) for pid in _thinkers(server)}
    served = _ticks(server)
    started = time.perf_counter()
    replies, counts = asyncio.run(_flooded(flooders, http_port, persons))
    wall = time.perf_counter() - started
    bots_cpu = sum(_ticks(pid) - workers.get(pid, 0) for pid in _thinkers(server))
    server_cpu = _ticks(server) - served
    figures = {
        f"bots_{name}_person_reply_p99_s": round(_p99(replies), 2),
        f"bots_{name}_person_reply_max_s": round(max(replies), 2),
        f"bots_{name}_created": counts["created"],
        f"bots_{name}_refused_caller": counts["refused_caller"],
        f"bots_{name}_refused_replica": counts["refused_replica"],
        f"bots_{name}_cpu_share": round(bots_cpu / tick / wall / cores, 3),
        f"bots_{name}_server_cpu_share": round(server_cpu / tick / wall / cores, 3),
    }
    print(
        f"{len(flooders)} caller(s) keeping every match of four strong bots they may "
        f"({counts['created']} created; refused: {counts['refused_caller']} by a caller's "
        f"bound, {counts['refused_replica']} by the replica's, {counts['refused_rate']} by the "
        f"rate; {FLOOD_SECONDS:.0f} s): a person's strong-bot "
        f"reply p99 {figures[f'bots_{name}_person_reply_p99_s']} s (max "
        f"{figures[f'bots_{name}_person_reply_max_s']} s); CPU: the bots' thinking process "
        f"{figures[f'bots_{name}_cpu_share']:.0%} of the {cores} cores (bound: one process, "
        f"{1 / cores:.0%}), the server {figures[f'bots_{name}_server_cpu_share']:.0%}"
    )
    return figures


def bot_faults_figures() -> dict[str, float]:
    """Recovery after a killed thinking process, and people's strong-bot replies and the bots'
    CPU while one anonymous caller keeps every match of bots only it may, then while ten
    callers do (the replica's bound); at the shipped bot settings (pace 0.4 s, one thinking
    process, 32 matches of bots only a replica and 4 a caller)."""
    port, http_port = free_port(), free_port()
    target = f"127.0.0.1:{port}"
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        redis = RedisProcess(Path(tmp) / "redis")
        redis.start()
        try:
            command = serve_command(
                f"[::]:{port}", redis.url, SHIPPED, http_listen=f"127.0.0.1:{http_port}"
            )
            with process(command, target) as server:
                recoveries = asyncio.run(_recovery(target, server.pid))
                figures["bots_recovery_after_kill_max_s"] = round(max(recoveries), 2)
                figures["bots_recovery_after_kill_median_s"] = round(
                    statistics.median(recoveries), 2
                )
                print(
                    f"killed thinking process: a strong bot moved again "
                    f"{figures['bots_recovery_after_kill_max_s']} s after the kill at most "
                    f"({KILLS} kills, median {figures['bots_recovery_after_kill_median_s']} s; "
                    "its pace 0.4 s included)"
                )
                # The people come from other addresses than the flooding callers.
                persons = [f"[::1]:{port}"] * PERSONS
                quiet: list[float] = []
                asyncio.run(_quiet(persons[0], quiet))
                figures["bots_person_reply_p99_s"] = round(_p99(quiet), 2)
                print(
                    f"a person's strong-bot reply alone (pace 0.4 s included): p99 "
                    f"{figures['bots_person_reply_p99_s']} s"
                )
                figures.update(
                    _flood_figures(server.pid, ["127.0.0.2"], http_port, persons, "flood")
                )
                callers = [f"127.0.0.{2 + i}" for i in range(10)]
                figures.update(
                    _flood_figures(server.pid, callers, http_port, persons, "replica_flood")
                )
        finally:
            redis.stop()
    return figures


async def _quiet(address: str, replies: list[float]) -> None:
    async with grpc.aio.insecure_channel(address) as channel:
        await _person_plays(pb_grpc.BasraServiceStub(channel), time.perf_counter() + 15, replies)


if __name__ == "__main__":
    print(bots_service_figures())
