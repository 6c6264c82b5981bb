"""Test infrastructure shared by the service, contract and load tests: a real redis-server on a
free port, and the gRPC server running in-process on port 0 in its own event-loop thread."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import io
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, Final, TypeVar

import grpc
import redis
from prometheus_client import Counter, Gauge

from basra.service.config import Settings
from basra.service.server import BasraServer, create_server, new_event_loop
from basra.service.store import Store

T = TypeVar("T")

REDIS_SERVER = shutil.which("redis-server")


def wait_until(condition: Callable[[], object], timeout: float = 10, what: str = "") -> None:
    """Return once ``condition()`` is true; fail the test if it is not within ``timeout`` s.

    For waiting on something to happen: the deadline only bounds a failure, it times nothing.
    """
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"still waiting after {timeout} s: {what}"
        time.sleep(0.02)


def sample_value(metric: Gauge | Counter) -> float:
    """An unlabelled gauge's or counter's value (a counter's total), read through
    prometheus_client's public ``collect``."""
    (family,) = metric.collect()
    return float(family.samples[0].value)


class StreamReader:
    """A WatchMatch stream read in a thread of its own: the events it sent (and the presence
    messages, apart), and how it ended (``ended``: by itself; ``error``: with a status)."""

    def __init__(self, call: Any) -> None:
        self.call = call
        self.events: list[Any] = []
        self.presences: list[list[bool]] = []
        """The Presence messages of a stream that asked for them, each as its list."""
        self.error: grpc.RpcError | None = None
        self.ended = False
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            for response in self.call:
                if response.HasField("presence"):
                    self.presences.append(list(response.presence.connected))
                else:
                    self.events.append(response.event)
            self.ended = True
        except grpc.RpcError as error:
            self.error = error

    def received(self, version: int) -> bool:
        """Whether the stream sent ``version`` (or a later one) whole."""
        return any(e.version >= version and e.version_complete for e in self.events)

    def has(self, version: int) -> bool:
        """``received``, for a stream that must not fail: a failed one fails the test with its
        status."""
        assert self.error is None, self.error
        return self.received(version)

    def close(self) -> None:
        self.call.cancel()
        self.thread.join(timeout=10)


_DEFAULT_CTRL_C: Final = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


def at_a_terminal(command: list[str]) -> list[str]:
    """``command`` started with Ctrl-C (SIGINT) at its default, as a terminal starts it: a
    runner that starts the suite in the background (a shell's ``&``) ignores SIGINT, a child
    inherits an ignored signal across exec, and a command under test would never see the
    Ctrl-C a test sends it."""
    return [sys.executable, "-c", _DEFAULT_CTRL_C, *command]


def basra_engine() -> str:
    """The ``basra-engine`` command installed beside this Python (the project's venv)."""
    command = shutil.which("basra-engine", path=str(Path(sys.executable).parent))
    assert command, "basra-engine is not installed beside this Python: make setup"
    return command


@contextlib.contextmanager
def serve_process(
    log_path: Path, port: int, *flags: str, files: int | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """``embedded_serve(port, *flags)`` in a child process, with none of this environment's
    ``BASRA_`` variables and its output in ``log_path`` (``files``: the most file descriptors
    it may open, else this process's limit); yields once its gRPC port accepts calls, and kills
    it as the block ends."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BASRA_")}
    command = embedded_serve(port, *flags)
    if files is not None:
        command = ["prlimit", f"--nofile={files}:{files}", "--", *command]
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=log, env=env)
        try:
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                grpc.channel_ready_future(channel).result(timeout=60)
            yield process
        finally:
            process.kill()
            process.wait()


def embedded_serve(port: int, *flags: str) -> list[str]:
    """``basra-engine serve`` on the embedded store, gRPC on 127.0.0.1:``port`` and no metrics
    or HTTP port, then ``flags``: the command of the tests that serve from a child process."""
    return [
        basra_engine(),
        "serve",
        "--store",
        "embedded",
        "--listen",
        f"127.0.0.1:{port}",
        "--metrics-port",
        "off",
        "--http-listen",
        "off",
        *flags,
    ]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisProcess:
    """A redis-server of the test session's own, on a free loopback port."""

    def __init__(self, directory: Path, *, appendonly: bool = False, args: tuple[str, ...] = ()):
        assert REDIS_SERVER, "redis-server is required: `make test` installs it"
        self.directory = directory
        self.appendonly = appendonly
        self.args = args
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=5)

    def start(self) -> None:
        assert REDIS_SERVER
        self.directory.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "yes" if self.appendonly else "no",
                "--appendfsync",
                "always",
                "--dir",
                str(self.directory),
                "--logfile",
                "redis.log",
                *self.args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                with self.client() as client:  # closed: an open one warns when collected
                    if client.ping():
                        return
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError(f"redis-server did not start on {self.port}") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None


class ServerThread:
    """The service in this process, on port 0, with its own event loop in a thread."""

    def __init__(
        self, settings: Settings, listen: str = "127.0.0.1:0", store: Store | None = None
    ) -> None:
        self.settings = replace(
            settings,
            listen=listen,
            http_listen=None if settings.http_listen is None else "127.0.0.1:0",
        )
        # The loop the settings choose, made as serve() makes it: the suite runs production's.
        self.loop = new_event_loop(self.settings.event_loop)
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server: BasraServer
        self.server, self.port = self.run(create_server(self.settings, store))
        self.channel = grpc.insecure_channel(self.target)

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def http_url(self) -> str:
        """The base URL of the HTTP port (Connect, gRPC-Web, /healthz, web table)."""
        assert self.server.http is not None, "this server's HTTP port is disabled"
        return f"http://127.0.0.1:{self.server.http.port}"

    @property
    def http_address(self) -> tuple[str, int]:
        """The HTTP port's host and port, for the clients that take them apart."""
        assert self.server.http is not None, "this server's HTTP port is disabled"
        return "127.0.0.1", self.server.http.port

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        """Run a coroutine on the server's loop and return its result.

        On a timeout the failure shows what every task of the server's loop is waiting on.
        """
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            stacks = asyncio.run_coroutine_threadsafe(_task_stacks(), self.loop).result(5)
            raise AssertionError(
                f"the server loop did not answer in {timeout} s:\n{stacks}"
            ) from None

    def stop(self, grace_s: float | None = 0) -> None:
        """Stop the server and its loop (again: nothing)."""
        if self.loop.is_closed():
            return
        self.channel.close()
        self.run(self.server.stop(grace_s))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


class RedisClusterProcess:
    """Three Redis Cluster masters on loopback, joined with ``redis-cli --cluster create``."""

    def __init__(self, directory: Path, masters: int = 3) -> None:
        self.nodes = [
            RedisProcess(directory / f"node{i}", args=self._node_args(directory, i))
            for i in range(masters)
        ]

    @staticmethod
    def _node_args(directory: Path, index: int) -> tuple[str, ...]:
        return (
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            str(directory / f"nodes-{index}.conf"),
            "--cluster-node-timeout",
            "2000",
        )

    @property
    def url(self) -> str:
        return self.nodes[0].url

    def start(self) -> None:
        for node in self.nodes:
            node.port = _port_with_free_bus()
            node.start()
        cli = shutil.which("redis-cli")
        assert cli, "redis-cli comes with redis-server"
        subprocess.run(
            [
                cli,
                "--cluster",
                "create",
                *(f"127.0.0.1:{n.port}" for n in self.nodes),
                "--cluster-replicas",
                "0",
                "--cluster-yes",
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
        deadline = time.monotonic() + 20
        while not all(_cluster_ok(n) for n in self.nodes):
            assert time.monotonic() < deadline, "the cluster did not come up"
            time.sleep(0.1)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


async def _task_stacks() -> str:
    """Where every task of the running loop is waiting."""
    out = io.StringIO()
    for task in asyncio.all_tasks():
        if task is not asyncio.current_task():
            try:
                task.print_stack(limit=8, file=out)
            except TypeError:  # a frame of compiled (Cython) code has no line number
                print(repr(task), file=out)
    return out.getvalue()


def _cluster_ok(node: RedisProcess) -> bool:
    info = node.client().execute_command("CLUSTER", "INFO")  # type: ignore[no-untyped-call]
    return b"cluster_state:ok" in info


def _port_with_free_bus() -> int:
    """A free port whose cluster bus port (+10000) is free too."""
    for _ in range(100):
        port = free_port()
        if port + 10000 < 65536:
            with socket.socket() as sock:
                try:
                    sock.bind(("127.0.0.1", port + 10000))
                except OSError:
                    continue
            return port
    raise RuntimeError("no port with a free cluster bus port")
