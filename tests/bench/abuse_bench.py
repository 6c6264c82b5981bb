"""HTTP/2 abuse against a real server process with the shipped limits, from another address
(127.0.0.2) than an honest client (127.0.0.1): for each class of attack, at 250 and at 500
attacking connections, the server's peak memory (the pod's limit is 512 MiB), how the honest
client's calls on both ports fared during the attack (failed, slowest), the memory left 10 s
after the attackers leave, and whether the server is still ready. The attacks are
``tests.h2attacks``'s, which the abuse tests assert on.

    .venv/bin/python -m tests.bench.abuse_bench
"""

from __future__ import annotations

import http.client
import json
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Final

import grpc
from pyqwest import HTTPVersion, SyncClient, SyncHTTPTransport

from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc as pb_grpc
from basra.v1.basra_service_connect import BasraServiceClientSync
from tests.h2attacks import ATTACKS, POD_LIMIT, attacking, serving

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
