"""Tracing's cost alone: the service bench's Play load on an untraced server and on a traced one
(every call sampled, exported over OTLP/gRPC to a receiver in this process), taken turn about,
with each server's CPU per call split by thread (the event loop's, the others': the batch span
processor's among them). A few minutes, where ``make bench`` takes many.

    .venv/bin/python -m tests.bench.otel_bench [runs] [seconds]
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
from pathlib import Path

from tests.bench.service_bench import create_matches, measured, process, serve_command
from tests.otlp import receiving
from tests.support import RedisProcess, free_port

SEEDS = range(1000, 1064)
CHANNELS = 4


def thread_seconds(pid: int) -> dict[int, float]:
    """User and system CPU time of each of a process's threads (Linux /proc), by thread id."""
    found = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(FileNotFoundError):
            fields = Path(f"/proc/{pid}/task/{task}/stat").read_text().rsplit(")", 1)[1].split()
            found[int(task)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return found


def otel_figures(runs: int = 6, seconds: float = 5.0) -> dict[str, float]:
    """Measure and print traced against untraced server CPU per call, ``runs`` pairs."""
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        redis_process = RedisProcess(Path(tmp) / "redis")
        redis_process.start()
        stack.callback(redis_process.stop)
        client = redis_process.client()
        receiver, port = stack.enter_context(receiving(keep=False))
        untraced_target = f"127.0.0.1:{free_port()}"
        traced_target = f"127.0.0.1:{free_port()}"
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
            "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
            "OTEL_TRACES_SAMPLER_ARG": "1.0",
            "OTEL_SERVICE_NAME": "basra-bench",
        }
        servers = {
            "untraced": (
                stack.enter_context(
                    process(serve_command(untraced_target, redis_process.url), untraced_target)
                ),
                untraced_target,
            ),
            "traced": (
                stack.enter_context(
                    process(serve_command(traced_target, redis_process.url), traced_target, env)
                ),
                traced_target,
            ),
        }
        cpu: dict[str, list[float]] = {name: [] for name in servers}
        loop: dict[str, list[float]] = {name: [] for name in servers}
        for run in range(runs):
            # Which server goes first alternates: a change of the machine's load moves both.
            for name in sorted(servers, reverse=run % 2 == 1):
                server, target = servers[name]
                client.flushall()
                played = asyncio.run(create_matches(target, list(SEEDS)))
                before = thread_seconds(server.pid)
                result = measured(server.pid, target, played, seconds, CHANNELS)
                after = thread_seconds(server.pid)
                calls = result.result.plays + result.result.deals
                cpu[name].append(result.cpu_us)
                loop[name].append((after[server.pid] - before[server.pid]) / calls * 1e6)
            print(
                f"  run {run + 1} of {runs}: server CPU per call {cpu['untraced'][-1]:.0f} us "
                f"untraced, {cpu['traced'][-1]:.0f} us traced (event loop's thread "
                f"{loop['untraced'][-1]:.0f} and {loop['traced'][-1]:.0f} us)"
            )
    ratios = [t / u for t, u in zip(cpu["traced"], cpu["untraced"], strict=True)]
    loop_extra = [t - u for t, u in zip(loop["traced"], loop["untraced"], strict=True)]
    other_extra = [
        (t - tl) - (u - ul)
        for t, tl, u, ul in zip(
            cpu["traced"], loop["traced"], cpu["untraced"], loop["untraced"], strict=True
        )
    ]
    print(
        f"traced / untraced server CPU per call: {statistics.median(ratios):.2f} "
        f"({min(ratios):.2f}-{max(ratios):.2f}, {runs} paired runs; target 1.25x or less); "
        f"{statistics.median(cpu['traced']):.0f} against {statistics.median(cpu['untraced']):.0f} "
        f"us; tracing's share on the event loop's thread {statistics.median(loop_extra):.0f} us, "
        f"on the other threads {statistics.median(other_extra):.0f} us (medians); "
        f"{receiver.received:,} spans received"
    )
    return {
        "otel_play_server_cpu_us": round(statistics.median(cpu["traced"]), 1),
        "otel_vs_play_server_cpu_ratio": round(statistics.median(ratios), 3),
        "otel_loop_thread_extra_us": round(statistics.median(loop_extra), 1),
        "otel_other_threads_extra_us": round(statistics.median(other_extra), 1),
    }


if __name__ == "__main__":
    arguments = [float(a) for a in sys.argv[1:3]]
    print(otel_figures(int(arguments[0]) if arguments else 6, *arguments[1:]))
