"""Instructions per Play on the server, counted by callgrind: a figure the machine's load does not
move (load changes how long an instruction takes, not how many a Play runs).

Each server runs under ``valgrind --tool=callgrind`` (every thread counted: gRPC's own threads
are part of the server's work) on a redis-server of its own; the client (the bench's, outside
valgrind) plays a warm-up, then the counters are zeroed (``callgrind_control -z``), the
measured calls are played, and the counters dumped (``callgrind_control -d``): start-up,
imports and the warm-up are not in the count. The servers: the service on asyncio's loop and on
uvloop, and the bare gRPC + Redis server (tests/bench/bare_server.py) on both loops, all driven
with the same calls (64 matches in flight over 4 channels, as ``make bench``). Slow (minutes:
callgrind runs a program about 50 times slower), so not part of ``make bench``.

    python -m tests.bench.callgrind_play [--plays-per-match 25]
    python -m tests.bench.callgrind_play --connect-only   # Connect calls against gRPC calls
    python -m tests.bench.callgrind_play --service-only --plays-per-match 10  # one server: A/B
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Final

import grpc

from tests.bench.service_bench import (
    Calls,
    ConnectCalls,
    GrpcCalls,
    Match,
    bare_command,
    create_matches,
    drive,
    sample_match,
    serve_command,
)
from tests.support import RedisProcess, free_port

WARM_UP_STEPS = 5
"""Calls per match before the counters are zeroed: connections open, caches and scripts warm."""


CALLGRIND_ENV: Final = {
    "PYTHONHASHSEED": "0",
    # Callgrind runs the server some 50 times slower: the wall-clock deadlines of a store call
    # and of a request's arrival, meant for a server at full speed, would fail calls (Connect
    # calls with 64 matches in flight did: the match store unavailable).
    "BASRA_STORE_TIMEOUT_SECONDS": "600",
    "BASRA_REQUEST_TIMEOUT_SECONDS": "600",
}


@contextlib.contextmanager
def under_callgrind(args: Sequence[str], target: str, out: Path) -> Iterator[int]:
    """A server process under callgrind, ready when its port answers; yields its pid."""
    proc = subprocess.Popen(
        [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            "--dump-instr=no",
            *args,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **CALLGRIND_ENV},
    )
    try:
        with grpc.insecure_channel(target) as channel:
            grpc.channel_ready_future(channel).result(timeout=600)
        yield proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=600)


def callgrind_control(flag: str, pid: int) -> None:
    subprocess.run(["callgrind_control", flag, str(pid)], check=True, capture_output=True)


def counted(
    pid: int,
    target: str,
    matches: Sequence[Match],
    out: Path,
    measured: int,
    connect: Callable[[str], Calls] = GrpcCalls,
) -> float:
    """Instructions per call of ``measured`` steps of every match, after the warm-up, made
    through ``connect``'s connections (gRPC channels by default)."""
    warm = [replace(m, steps=m.steps[:WARM_UP_STEPS]) for m in matches]
    steps = [replace(m, steps=m.steps[WARM_UP_STEPS : WARM_UP_STEPS + measured]) for m in matches]
    asyncio.run(drive([target], warm, 4, 3600, connect=connect))
    callgrind_control("-z", pid)
    result = asyncio.run(drive([target], steps, 4, 3600, connect=connect))
    dumps = set(out.parent.glob(f"{out.name}*"))
    callgrind_control("-d", pid)
    (dump,) = set(out.parent.glob(f"{out.name}*")) - dumps
    totals = [
        line for line in dump.read_text().splitlines() if line.startswith(("totals:", "summary:"))
    ]
    return int(totals[0].split()[1]) / (result.plays + result.deals)


def python_command(args: Sequence[str]) -> list[str]:
    """``basra-engine ARGS`` as ``python -c``: valgrind runs the interpreter, not a script."""
    return [
        sys.executable,
        "-c",
        "import sys; from basra.service.cli import main; sys.exit(main())",
        *args,
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plays-per-match", type=int, default=25, help="measured calls per match")
    parser.add_argument("--matches", type=int, default=64)
    parser.add_argument(
        "--connect-only",
        action="store_true",
        help="count only the service's Connect calls on its HTTP port (uvloop), against its "
        "gRPC calls in the same process",
    )
    parser.add_argument(
        "--service-only",
        action="store_true",
        help="count only the service on uvloop (its default loop): about a minute, to compare "
        "two versions of the service",
    )
    args = parser.parse_args()
    assert shutil.which("valgrind"), "valgrind is needed"
    assert shutil.which("callgrind_control"), "valgrind's callgrind_control is needed"
    seeds = list(range(1000, 1000 + args.matches))
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        redis_process = RedisProcess(Path(tmp) / "redis")
        redis_process.start()
        client = redis_process.client()
        try:
            if args.connect_only:
                connect_figures(redis_process, seeds, Path(tmp), args.plays_per_match)
                return
            for loop in ("uvloop",) if args.service_only else ("asyncio", "uvloop"):
                client.flushall()
                target = f"127.0.0.1:{free_port()}"
                serve = serve_command(target, redis_process.url, ["--event-loop", loop])
                out = Path(tmp) / f"service-{loop}"
                with under_callgrind(python_command(serve[1:]), target, out) as pid:
                    if loop == "asyncio":
                        _, _, response, record = asyncio.run(sample_match(target, client))
                        (Path(tmp) / "response.bin").write_bytes(response)
                        (Path(tmp) / "record.bin").write_bytes(record)
                    played = asyncio.run(create_matches(target, seeds))
                    figures[f"service_{loop}"] = counted(
                        pid, target, played, out, args.plays_per_match
                    )
                print(f"service on {loop}: {figures[f'service_{loop}'] / 1e6:.4f} M instructions")
            if args.service_only:
                return
            for loop in ("asyncio", "uvloop"):
                client.flushall()
                target = f"127.0.0.1:{free_port()}"
                bare = [*bare_command(target, redis_process.url, Path(tmp)), "--event-loop", loop]
                out = Path(tmp) / f"bare-{loop}"
                # The same calls as the service's (the bare server reads no token, checks nothing).
                played = [replace(m, match_id=uuid.uuid4().hex) for m in played]
                with under_callgrind(bare, target, out) as pid:
                    figures[f"bare_{loop}"] = counted(
                        pid, target, played, out, args.plays_per_match
                    )
                print(f"bare on {loop}: {figures[f'bare_{loop}'] / 1e6:.3f} M instructions")
        finally:
            redis_process.stop()
    service, baseline = figures["service_asyncio"], figures["bare_asyncio"]
    print(
        f"per call: service / bare, both on asyncio's loop: {service / baseline:.2f}x; service on "
        f"uvloop / bare on asyncio's loop: {figures['service_uvloop'] / baseline:.2f}x; both on "
        f"uvloop: {figures['service_uvloop'] / figures['bare_uvloop']:.2f}x"
    )


def connect_figures(
    redis_process: RedisProcess, seeds: Sequence[int], tmp: Path, plays: int
) -> None:
    """The service on uvloop, one process: instructions per gRPC call, then per Connect call
    (binary, the bench's connectrpc client over 4 HTTP/2 connections) of other matches."""
    target, http = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    serve = serve_command(target, redis_process.url, ["--event-loop", "uvloop"], http_listen=http)
    out = tmp / "service-connect"
    with under_callgrind(python_command(serve[1:]), target, out) as pid:
        grpc_matches = asyncio.run(create_matches(target, seeds))
        connect_matches = asyncio.run(create_matches(target, [s + len(seeds) for s in seeds]))
        grpc_call = counted(pid, target, grpc_matches, out, plays)
        connect_call = counted(
            pid, target, connect_matches, out, plays, lambda _: ConnectCalls(f"http://{http}")
        )
    print(
        f"service on uvloop: gRPC {grpc_call / 1e6:.3f} M, Connect {connect_call / 1e6:.3f} M "
        f"instructions per call ({connect_call / grpc_call:.2f}x)"
    )


if __name__ == "__main__":
    main()
