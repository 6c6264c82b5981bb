"""Hardening figures: what a finished match keeps in Redis, and a server's memory under the
half-open request flood (250 connections x 100 streams, headers and one byte each)."""

from __future__ import annotations

import asyncio
import tempfile
import time
import uuid
from pathlib import Path

import grpc

from basra.client.match import card_pb
from basra.service.store import keys
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc
from tests.bench.service_bench import process, script, serve_command
from tests.halfopen import Attack, half_open, rss_bytes
from tests.support import RedisProcess, free_port


async def finished_match(target: str) -> tuple[str, int]:
    """Play one whole match (seeded, scripted); returns its id and the number of versions."""
    seed = 31337
    async with grpc.aio.insecure_channel(target) as channel:
        stub = basra_service_pb2_grpc.BasraServiceStub(channel)
        created = await stub.Deal(pb.DealRequest(seed=seed, request_id=str(uuid.uuid4())))
        tokens = {t.seat: t.token for t in created.seat_tokens}
        steps = script(seed)
        for step in steps:
            metadata = (("authorization", f"Bearer {tokens[step.seat]}"),)
            if step.card is None:
                await stub.Deal(pb.DealRequest(match_id=created.match_id), metadata=metadata)
            else:
                await stub.Play(
                    pb.PlayRequest(
                        match_id=created.match_id, card=card_pb(step.card), plan_id=step.plan
                    ),
                    metadata=metadata,
                )
        return created.match_id, len(steps) + 1


async def flood(
    ports: list[tuple[int, str]], pid: int, connections: int, streams: int
) -> tuple[Attack, int, float]:
    """Hold the half-open streams on every port (each with its calls' content type: gRPC, or
    Connect on the HTTP port) at once until the server has let go of every one, ending it or
    closing its connection (or 60 s); returns the attack, the peak RSS seen and the seconds
    that took."""
    attack, stop = Attack(), asyncio.Event()
    task = asyncio.gather(
        *(
            half_open("127.0.0.1", port, connections, streams, stop, attack, content_type=kind)
            for port, kind in ports
        )
    )
    peak, started = rss_bytes(pid), time.monotonic()
    while time.monotonic() - started < 60 and not (
        attack.opened == len(ports) * connections * streams
        and attack.answered + attack.dropped == attack.opened
    ):
        await asyncio.sleep(0.1)
        peak = max(peak, rss_bytes(pid))
    took = time.monotonic() - started
    stop.set()
    await task
    return attack, peak, took


def hardening_figures(connections: int = 250, streams: int = 100) -> dict[str, float]:
    """Measure and print the figures; returns them for the JSON summary."""
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        redis_process = RedisProcess(Path(tmp) / "redis")
        redis_process.start()
        try:
            target = f"127.0.0.1:{free_port()}"
            with process(serve_command(target, redis_process.url), target):
                match_id, versions = asyncio.run(finished_match(target))
            client = redis_process.client()
            match_keys = (
                keys.match_key(match_id),
                keys.events_key(match_id),
                keys.watch_key(match_id),
            )
            used = sum(int(client.memory_usage(key, samples=0) or 0) for key in match_keys)
            ttl_s = min(client.pttl(key) for key in match_keys)
            figures["finished_match_bytes"] = float(used)
            print(
                f"finished match: {used:,} bytes in Redis ({versions} versions), expiring in "
                f"{ttl_s / 1000:.0f} s (BASRA_FINISHED_TTL_SECONDS) instead of 7 days"
            )
        finally:
            redis_process.stop()

    figures.update(flood_figures("grpc", connections, streams))
    figures.update(flood_figures("http", connections, streams))
    figures.update(flood_figures("both", connections, streams))
    return figures


def flood_figures(port_kind: str, connections: int, streams: int) -> dict[str, float]:
    """The flood against a fresh embedded-store server's gRPC or HTTP port, or both at once
    (``connections`` x ``streams`` on each; default limits); the HTTP port's figures are named
    ``halfopen_http_*``, both ports' ``halfopen_both_*``."""
    grpc_port, http_port = free_port(), free_port()
    grpc_target = f"127.0.0.1:{grpc_port}"
    command = [
        *serve_command(grpc_target, "redis://unused")[:2],
        *("--store", "embedded", "--listen", grpc_target, "--metrics-port", "off"),
        *("--http-listen", "off" if port_kind == "grpc" else f"127.0.0.1:{http_port}"),
        *("--log-level", "ERROR"),
    ]
    on_grpc, on_http = (grpc_port, "application/grpc"), (http_port, "application/proto")
    ports = {"grpc": [on_grpc], "http": [on_http], "both": [on_grpc, on_http]}[port_kind]
    with process(command, grpc_target) as server:
        time.sleep(1)  # let start-up allocations settle before the baseline
        base = rss_bytes(server.pid)
        attack, peak, took = asyncio.run(flood(ports, server.pid, connections, streams))
        after = rss_bytes(server.pid)
    where = "both ports" if port_kind == "both" else f"the {port_kind} port"
    print(
        f"half-open flood on {where}, {connections} connections x {streams} streams each "
        f"(default limits): RSS {base / 2**20:.0f} MiB -> peak {peak / 2**20:.0f} MiB, "
        f"{after / 2**20:.0f} MiB after; of {attack.opened:,} streams the server ended "
        f"{attack.answered:,}, and {attack.dropped:,} were lost with their connection (closed "
        f"or reset before they were answered), in {took:.1f} s"
    )
    prefix = "halfopen" if port_kind == "grpc" else f"halfopen_{port_kind}"
    return {
        f"{prefix}_streams": float(attack.opened),
        f"{prefix}_streams_ended": float(attack.answered),
        f"{prefix}_streams_dropped": float(attack.dropped),
        f"{prefix}_base_rss_mib": round(base / 2**20, 1),
        f"{prefix}_peak_rss_mib": round(peak / 2**20, 1),
    }


if __name__ == "__main__":
    print(hardening_figures())
