"""How one shared reader should wait on Redis for many matches: measured, not guessed.

    python -m tests.bench.watch_transports [--keys 5000]

Two ways for one connection to wait on ``--keys`` event streams, against a real redis-server:

- ``xread``: one ``XREAD BLOCK 0 STREAMS k1..kN id1..idN`` over every stream key, sent again
  (with every key) each time it returns;
- ``pubsub``: each append also ``SPUBLISH``es its version on a channel of the match (one Lua
  script, like the service's commit); the reader ``SSUBSCRIBE``s every channel once, and on a
  message reads the new entries with ``XRANGE`` (pipelined, on another connection): the stream
  stays the source of truth, the message is only a wake-up.

A writer process appends one entry to every key, paced (``--rate`` per second) and then in one
burst. Figures: delivery latency (append sent to entry read), Redis CPU per delivered entry
(``INFO cpu``), and the bytes the reader sends to Redis per delivered entry.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from redis.asyncio import Redis

from tests.support import RedisProcess

_APPEND = """
redis.call('XADD', KEYS[1], ARGV[1] .. '-0', 't', ARGV[2])
if ARGV[3] == '1' then redis.call('SPUBLISH', KEYS[2], ARGV[1]) end
return 1
"""


def _key(i: int) -> str:
    return f"bench:{{m{i}}}:events"


def _channel(i: int) -> str:
    return f"bench:{{m{i}}}:wake"


def _writer(url: str, keys: int, version: int, rate: float, publish: bool) -> None:
    """Append version ``version`` to every key, ``rate`` per second (0: as fast as possible)."""
    client = redis.Redis.from_url(url)
    append = client.register_script(_APPEND)
    start = time.monotonic()
    for i in range(keys):
        if rate:
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        append(keys=[_key(i), _channel(i)], args=[version, repr(time.monotonic()), int(publish)])
    client.close()


def _redis_cpu(client: redis.Redis) -> float:
    info: dict[str, Any] = client.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def _net_input(client: redis.Redis) -> int:
    info: dict[str, Any] = client.info("stats")
    return int(info["total_net_input_bytes"])


class Reader:
    """Delivery times of entries, by key index."""

    def __init__(self, keys: int) -> None:
        self.keys = keys
        self.latencies: list[float] = []
        self.pending = 0
        self.done = asyncio.Event()

    def delivered(self, sent: bytes) -> None:
        self.latencies.append(time.monotonic() - float(sent))
        self.pending -= 1
        if self.pending == 0:
            self.done.set()

    def expect(self, count: int) -> None:
        self.latencies = []
        self.pending = count
        self.done = asyncio.Event()


async def _xread_loop(url: str, reader: Reader, ids: list[str], ready: asyncio.Event) -> None:
    client = Redis.from_url(url)
    streams = {_key(i): ids[i] for i in range(reader.keys)}
    index = {_key(i).encode(): i for i in range(reader.keys)}
    ready.set()
    try:
        while True:
            found: Any = await client.xread(streams, block=0)  # type: ignore[arg-type]
            for key, entries in found:
                for entry_id, fields in entries:
                    streams[_key(index[key])] = entry_id.decode()
                    reader.delivered(fields[b"t"])
    finally:
        await client.aclose()


async def _pubsub_loop(url: str, reader: Reader, ids: list[int], ready: asyncio.Event) -> None:
    listen = Redis.from_url(url)
    reads = Redis.from_url(url)
    pubsub = listen.pubsub()
    channels = [_channel(i) for i in range(reader.keys)]
    for start in range(0, len(channels), 1000):
        await pubsub.ssubscribe(*channels[start : start + 1000])
    confirmed = 0
    while confirmed < len(channels):
        message = await pubsub.get_message(timeout=5)
        if message and message["type"] == "ssubscribe":
            confirmed += 1
    ready.set()
    try:
        while True:
            message = await pubsub.get_message(timeout=None)
            if message is None or message["type"] != "smessage":
                continue
            woken = [message]
            while (more := await pubsub.get_message(timeout=0)) is not None:
                woken.append(more)
            pipe = reads.pipeline(transaction=False)
            touched = []
            for woke in woken:
                if woke["type"] != "smessage":
                    continue
                i = int(woke["channel"].split(b"{m", 1)[1].split(b"}", 1)[0])
                touched.append(i)
                pipe.xrange(_key(i), f"({ids[i]}-0", "+")
            for i, entries in zip(touched, await pipe.execute(), strict=True):
                for entry_id, fields in entries:
                    ids[i] = int(entry_id.split(b"-", 1)[0])
                    reader.delivered(fields[b"t"])
    finally:
        await pubsub.aclose()  # type: ignore[no-untyped-call]
        await listen.aclose()
        await reads.aclose()


def _percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else values[0]


async def _measure(url: str, keys: int, rate: float, way: str) -> dict[str, float]:
    direct = redis.Redis.from_url(url)
    direct.flushall()
    for i in range(keys):  # every stream exists at version 1
        direct.xadd(_key(i), {"t": "0"}, id="1-0")
    # The writer's own bytes, measured alone, so that the reader's part can be told apart.
    sent = _net_input(direct)
    await asyncio.to_thread(_writer, url, keys, 2, 0.0, way == "pubsub")
    writer_bytes = _net_input(direct) - sent
    reader = Reader(keys)
    ready = asyncio.Event()
    loop: Callable[..., Any] = _xread_loop if way == "xread" else _pubsub_loop
    ids: list[Any] = ["2-0"] * keys if way == "xread" else [2] * keys
    task = asyncio.create_task(loop(url, reader, ids, ready))
    await ready.wait()
    figures: dict[str, float] = {}
    for phase, version, pace in (("paced", 3, rate), ("burst", 4, 0.0)):
        reader.expect(keys)
        cpu, sent = _redis_cpu(direct), _net_input(direct)
        writer = multiprocessing.Process(
            target=_writer, args=(url, keys, version, pace, way == "pubsub")
        )
        started = time.monotonic()
        writer.start()
        await asyncio.wait_for(reader.done.wait(), 120)
        elapsed = time.monotonic() - started
        await asyncio.to_thread(writer.join)
        figures[f"{phase}_p50_ms"] = statistics.median(reader.latencies) * 1e3
        figures[f"{phase}_p99_ms"] = _percentile(reader.latencies, 99) * 1e3
        figures[f"{phase}_seconds"] = elapsed
        figures[f"{phase}_redis_cpu_us"] = (_redis_cpu(direct) - cpu) / keys * 1e6
        figures[f"{phase}_reader_bytes"] = max(0, _net_input(direct) - sent - writer_bytes) / keys
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    direct.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keys", type=int, default=5000, help="matches followed")
    parser.add_argument("--rate", type=float, default=1000, help="paced appends per second")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        process = RedisProcess(Path(tmp) / "redis")
        process.start()
        try:
            for way in ("pubsub", "xread"):
                figures = asyncio.run(_measure(process.url, args.keys, args.rate, way))
                print(
                    f"{way:7} {args.keys} keys | paced {args.rate:.0f}/s: p50 "
                    f"{figures['paced_p50_ms']:.1f} ms, p99 {figures['paced_p99_ms']:.1f} ms, "
                    f"Redis CPU {figures['paced_redis_cpu_us']:.0f} us/entry, reader sends "
                    f"{figures['paced_reader_bytes']:,.0f} B/entry | burst of {args.keys}: all "
                    f"read in {figures['burst_seconds']:.2f} s, p99 "
                    f"{figures['burst_p99_ms']:.0f} ms, Redis CPU "
                    f"{figures['burst_redis_cpu_us']:.0f} us/entry, reader sends "
                    f"{figures['burst_reader_bytes']:,.0f} B/entry",
                    flush=True,
                )
        finally:
            process.stop()


if __name__ == "__main__":
    main()
