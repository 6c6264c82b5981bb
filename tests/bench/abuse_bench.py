"""HTTP/2 abuse against a real server process with the shipped limits, from another address
(127.0.0.2) than an honest client (127.0.0.1): for each class of attack, at 250 and at 500
attacking connections, the server's peak memory (the pod's limit is 512 MiB), how the honest
client's calls on both ports fared during the attack (failed, slowest), the memory left 10 s
after the attackers leave, and whether the server is still ready. The attacks are
``tests.h2attacks``'s, which the abuse tests assert on.

Then the gRPC port's own: Rapid Reset there at 16, 250 and 500 connections, and half-open
requests (250 and 500 connections x 100 streams on the gRPC port, 250 x 100 on both ports at
once), while an honest client plays on the gRPC port: its Plays' p99 and slowest, the longest
gap between two of its turns, its calls that failed (by status), and the RSS before, at the
peak, and 10 and 30 s after the attack; some of them again with 16 streams per connection on
the gRPC port rather than the shipped 100 (``--max-concurrent-streams``).

    .venv/bin/python -m tests.bench.abuse_bench            # everything
    .venv/bin/python -m tests.bench.abuse_bench grpc       # the gRPC port's figures alone
"""

from __future__ import annotations

import contextlib
import http.client
import json
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

import grpc
from pyqwest import HTTPVersion, SyncClient, SyncHTTPTransport

from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc as pb_grpc
from basra.v1.basra_service_connect import BasraServiceClientSync
from tests.h2attacks import (
    ATTACKS,
    POD_LIMIT,
    HonestGrpc,
    PeakRss,
    Served,
    attacking,
    flood_ended,
    grpc_rapid_reset_for,
    half_open_flood,
    serving,
)

HONEST_DEADLINE_S: Final = 30.0


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
    with serving(tmp) as served:
        honest_calls(served.port, served.http_port, 3)  # warm: the figures are the attack's own
        base = served.rss
        peak, failed, slowest = base, 0, 0.0
        with attacking(served.http_port, connections, ATTACKS[name]):
            for _ in range(5):
                lost, slow = honest_calls(served.port, served.http_port, 2)
                failed, slowest = failed + lost, max(slowest, slow)
                peak = max(peak, served.rss)
        time.sleep(10)  # what the server gives back once the attackers leave
        return {
            "peak_mib": peak >> 20,
            "peak_of_pod_limit": round(peak / POD_LIMIT, 2),
            "base_mib": base >> 20,
            "after_mib": served.rss >> 20,
            "honest_failed": failed,
            "honest_slowest_s": round(slowest, 2),
            "ready_after": healthz(served.http_port) == 200 and served.process.poll() is None,
        }


def abuse_figures(
    connections: tuple[int, ...] = (250, 500),
    names: tuple[str, ...] = tuple(ATTACKS),
    grpc_port: bool = True,
) -> dict[str, float | bool]:
    """The HTTP port's attacks ``names`` at each of ``connections``, then (``grpc_port``) the
    gRPC port's (``grpc_port_figures``)."""
    figures: dict[str, float | bool] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for count in connections:
            for name in names:
                result = one_attack(Path(tmp), name, count)
                print(f"  {name} x {count}: {result}", flush=True)
                for key, value in result.items():
                    figures[f"abuse_{name}_{count}_{key}"] = value
    if grpc_port:
        figures.update(grpc_port_figures())
    return figures


GRPC_ATTACK_MOST_S: Final = 120.0
"""The longest the honest client plays through one attack on the gRPC port."""
GRPC_RESET_S: Final = 10.0
"""How long each Rapid Reset connection on the gRPC port sends its batches."""


def _play_through(
    served: Served, honest: HonestGrpc, attacked: Callable[[], bool], figures: dict[str, float]
) -> None:
    """Play on the gRPC port while ``attacked()`` and for five turns at least; put the figures
    of the honest client and the server's peak RSS in ``figures``."""
    failed: dict[str, int] = {}
    sampler = PeakRss(served.process.pid)
    started = last = time.monotonic()
    gap, turns, going = 0.0, 0, True
    while going:
        try:
            honest.play()
        except grpc.RpcError as exc:
            name = exc.code().name
            failed[name] = failed.get(name, 0) + 1
        now = time.monotonic()
        gap, last, turns = max(gap, now - last), now, turns + 1
        going = (turns < 5 or attacked()) and now - started < GRPC_ATTACK_MOST_S
    figures["peak_mib"] = sampler.stop() >> 20
    figures["attack_s"] = round(time.monotonic() - started, 1)
    plays = sorted(honest.plays)
    figures["honest_plays"] = len(plays)
    figures["honest_play_p99_s"] = round(plays[int(0.99 * (len(plays) - 1))], 3) if plays else -1
    figures["honest_play_max_s"] = round(plays[-1], 3) if plays else -1
    figures["honest_gap_max_s"] = round(gap, 2)
    for code in ("CANCELLED", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "UNAVAILABLE"):
        figures[f"honest_{code.lower()}"] = failed.pop(code, 0)
    figures["honest_failed_other"] = sum(failed.values())


@contextlib.contextmanager
def _measured(
    tmp: Path, figures: dict[str, float], streams: int | None
) -> Iterator[tuple[Served, HonestGrpc]]:
    """A server (``streams``: its gRPC port's streams per connection, else the shipped number)
    and an honest client on its gRPC port, warm, the RSS before the attack in ``figures``; once
    the block (the attack) ends, the RSS 10 and 30 s later and whether the server still
    serves."""
    flags = () if streams is None else ("--max-concurrent-streams", str(streams))
    with serving(tmp, flags=flags) as served:
        honest = HonestGrpc(served, deadline_s=HONEST_DEADLINE_S)
        try:
            for _ in range(5):
                honest.play()
            honest.plays.clear()
            figures["base_mib"] = served.rss >> 20
            yield served, honest
        finally:
            honest.close()
        time.sleep(10)
        figures["after_10s_mib"] = served.rss >> 20
        time.sleep(20)
        figures["after_30s_mib"] = served.rss >> 20
        figures["ready_after"] = healthz(served.http_port) == 200 and served.process.poll() is None


def grpc_rapid_reset_figures(
    tmp: Path, connections: int, streams: int | None = None
) -> dict[str, float]:
    """Rapid Reset on the gRPC port (``tests.h2attacks.grpc_rapid_reset_for``) from
    ``connections`` connections for ``GRPC_RESET_S``."""
    figures: dict[str, float] = {}
    with (
        _measured(tmp, figures, streams) as (served, honest),
        attacking(served.port, connections, grpc_rapid_reset_for(GRPC_RESET_S)) as attackers,
    ):
        _play_through(served, honest, lambda: attackers.sending, figures)
    return figures


def grpc_half_open_figures(
    tmp: Path, connections: int, both: bool, streams: int | None = None
) -> dict[str, float]:
    """Half-open requests, ``connections`` x 100 on the gRPC port (``both``: and as many on the
    HTTP port), held until the server has let go of every one."""
    figures: dict[str, float] = {}
    with _measured(tmp, figures, streams) as (served, honest):
        ports = [(served.port, "application/grpc")]
        if both:
            ports.append((served.http_port, "application/proto"))
        total = len(ports) * connections * 100
        with half_open_flood(ports, connections, 100) as attack:
            _play_through(served, honest, lambda: not flood_ended(attack, total), figures)
    return figures


def grpc_port_figures() -> dict[str, float | bool]:
    """Every attack on the gRPC port; prints each and returns them for the JSON summary, named
    ``grpc_rapid_reset_<n>_*``, ``grpc_half_open_<n>_*`` and ``grpc_half_open_both_<n>_*``, and
    some again with 16 streams per connection (``*_streams16_*``)."""
    figures: dict[str, float | bool] = {}
    cases: list[tuple[str, Callable[[Path], dict[str, float]]]] = [
        *(
            (f"grpc_rapid_reset_{n}", lambda tmp, n=n: grpc_rapid_reset_figures(tmp, n))
            for n in (16, 250, 500)
        ),
        *(
            (f"grpc_half_open_{n}", lambda tmp, n=n: grpc_half_open_figures(tmp, n, False))
            for n in (250, 500)
        ),
        ("grpc_half_open_both_250", lambda tmp: grpc_half_open_figures(tmp, 250, True)),
        # The same server with 16 streams per connection on its gRPC port rather than 100.
        ("grpc_rapid_reset_250_streams16", lambda tmp: grpc_rapid_reset_figures(tmp, 250, 16)),
        *(
            (
                f"grpc_half_open_{n}_streams16",
                lambda tmp, n=n: grpc_half_open_figures(tmp, n, False, 16),
            )
            for n in (250, 500)
        ),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for name, measure in cases:
            result = measure(Path(tmp))
            print(f"  {name}: {result}", flush=True)
            for key, value in result.items():
                figures[f"{name}_{key}"] = value
    return figures


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["grpc"]:
        print(json.dumps(grpc_port_figures()))
    else:
        chosen = tuple(sys.argv[1:]) or tuple(ATTACKS)
        print(json.dumps(abuse_figures(names=chosen, grpc_port=not sys.argv[1:])))
