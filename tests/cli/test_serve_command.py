"""``basra-engine serve`` run as an operator runs it: start-up errors are one line naming the
flag, the metrics server binds like the gRPC one, and ``make run`` stops at once on Ctrl-C."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.support import basra_engine, free_port

ROOT = Path(__file__).resolve().parents[2]
COMMAND: Final = basra_engine()  # the console command installed with the package
# No BASRA_* or REDIS_URL from the caller's environment: each test says what it sets.
CLEAN_ENV = {k: v for k, v in os.environ.items() if not k.startswith("BASRA_") and k != "REDIS_URL"}


def serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A serve command expected to exit by itself (a start-up error)."""
    return subprocess.run(
        [COMMAND, "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**CLEAN_ENV, **(env or {})},
    )


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port some other program is listening on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_a_busy_grpc_port_is_one_line_naming_the_port_and_the_flag(busy_port: int) -> None:
    result = serve("--store", "embedded", "--listen", f"127.0.0.1:{busy_port}")
    assert result.returncode == 1
    line = one_line_error(result)
    assert line.startswith("basra-engine serve: error: cannot listen on 127.0.0.1:"), line
    assert f":{busy_port} (--listen)" in line


def test_a_busy_http_port_is_one_line_naming_the_port_and_the_flag(busy_port: int) -> None:
    result = serve(
        "--store",
        "embedded",
        "--listen",
        f"127.0.0.1:{free_port()}",
        "--metrics-port",
        "off",
        "--http-listen",
        f"127.0.0.1:{busy_port}",
    )
    assert result.returncode == 1
    line = one_line_error(result)
    assert f"cannot listen on 127.0.0.1:{busy_port} (--http-listen): " in line, line
    assert "in use" in line


def test_a_busy_metrics_port_is_one_line_naming_the_port_and_the_flag(busy_port: int) -> None:
    result = serve(
        "--store",
        "embedded",
        "--listen",
        f"127.0.0.1:{free_port()}",
        "--metrics-port",
        str(busy_port),
    )
    assert result.returncode == 1
    line = one_line_error(result)
    assert f"cannot serve metrics on 127.0.0.1 port {busy_port} (--metrics-port" in line, line
    assert "in use" in line


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        ([], {}, "no store chosen"),
        ([], {"REDIS_URL": ""}, "$REDIS_URL is set but empty"),
        (["--store", "embedded"], {"BASRA_API_KEY": " "}, "$BASRA_API_KEY is set but empty"),
        (["--store", "embedded", "--drain-seconds", "-5"], {}, "--drain-seconds must be 0 or"),
        (["--store", "embedded", "--metrics-port", "nine"], {}, "argument --metrics-port: must"),
    ],
)
def test_bad_configuration_is_refused_at_start_up_in_one_line(
    args: list[str], env: dict[str, str], message: str
) -> None:
    result = serve(*args, env=env)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr
    assert lines[-1].startswith("basra-engine serve: error: "), lines
    assert message in lines[-1]


def listening_addresses(port: int) -> set[str]:
    """The local addresses with a listening TCP socket on ``port`` (from /proc/net/tcp*)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not Path(table).exists():
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.partition(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                raw = bytes.fromhex(address)
                if len(raw) == 4:
                    found.add(socket.inet_ntop(socket.AF_INET, raw[::-1]))
                else:
                    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
                    found.add(socket.inet_ntop(socket.AF_INET6, words))
    return found


class Running:
    """A serve process with its stderr in a file (never a pipe that could fill)."""

    def __init__(
        self, command: list[str], log: Path, cwd: Path | None = None, new_session: bool = False
    ) -> None:
        self.log = log
        with log.open("wb") as output:
            self.process = subprocess.Popen(
                command,
                stdout=output,
                stderr=output,
                env=CLEAN_ENV,
                cwd=cwd,
                start_new_session=new_session,
            )

    def wait_serving(self, port: int, host: str = "127.0.0.1") -> None:
        where = f"[{host}]" if ":" in host else host
        with grpc.insecure_channel(f"{where}:{port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            deadline = time.monotonic() + 60
            while True:
                assert self.process.poll() is None, self.log.read_text()
                try:
                    stub.Check(health_pb2.HealthCheckRequest(service="liveness"), timeout=1)
                    return
                except grpc.RpcError:
                    assert time.monotonic() < deadline, self.log.read_text()
                    time.sleep(0.1)

    def serving_line(self) -> dict[str, Any]:
        """The server's "serving" log line (its ports), once it is written."""
        deadline = time.monotonic() + 60
        while True:
            assert self.process.poll() is None, self.log.read_text()
            for line in self.log.read_text().splitlines():
                with contextlib.suppress(ValueError):
                    entry: dict[str, Any] = json.loads(line)
                    if entry.get("msg") == "serving":
                        return entry
            assert time.monotonic() < deadline, self.log.read_text()
            time.sleep(0.1)  # a polling interval, not a wait for the outcome

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def test_metrics_bind_the_listen_host_unless_told_otherwise(tmp_path: Path) -> None:
    grpc_port, metrics_port = free_port(), free_port()
    running = Running(
        [
            COMMAND,
            "serve",
            "--store",
            "embedded",
            "--http-listen",
            "off",
            "--listen",
            f"127.0.0.1:{grpc_port}",
            "--metrics-port",
            str(metrics_port),
        ],
        tmp_path / "serve.log",
    )
    try:
        running.wait_serving(grpc_port)
        assert listening_addresses(metrics_port) == {"127.0.0.1"}
        url = f"http://127.0.0.1:{metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as page:
            assert b"basra_store_up" in page.read()
    finally:
        running.close()
    other = free_port()
    running = Running(
        [
            COMMAND,
            "serve",
            "--store",
            "embedded",
            "--http-listen",
            "off",
            "--listen",
            f"127.0.0.1:{grpc_port}",
            "--metrics-host",
            "0.0.0.0",
            "--metrics-port",
            str(other),
        ],
        tmp_path / "serve2.log",
    )
    try:
        running.wait_serving(grpc_port)
        assert listening_addresses(other) == {"0.0.0.0"}
    finally:
        running.close()


def make_run_variables() -> dict[str, str]:
    """The Makefile's ``RUN_*`` variables with their defaults (``RUN_HOST ?= localhost``)."""
    makefile = (ROOT / "Makefile").read_text()
    return dict(re.findall(r"^(RUN_[A-Z_]+) \?= (\S+)$", makefile, re.MULTILINE))


def make_run_command(**variables: str) -> list[str]:
    """The command of the Makefile's ``run`` target as make expands it, its ``RUN_*`` variables
    given as on make's command line (the three ports free ones unless given)."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^run:.*\n\t(.+)$", makefile, re.MULTILINE)
    assert recipe, "the Makefile has no run target"
    given = make_run_variables()
    assert {"RUN_HOST", "RUN_GRPC_PORT", "RUN_HTTP_PORT", "RUN_METRICS_PORT"} <= given.keys()
    given |= {name: str(free_port()) for name in given if name.endswith("_PORT")} | variables
    line = recipe.group(1).replace("$(BIN)/", "")
    for name, value in given.items():
        line = line.replace(f"$({name})", value)
    words = shlex.split(line)
    assert words[:2] == ["basra-engine", "serve"]
    assert "$(" not in line, line
    return [COMMAND, *words[1:]]


def address(command: list[str], flag: str) -> tuple[str, int]:
    """The (host, port) a serve command's ``flag`` names, host names kept."""
    host, _, port = command[command.index(flag) + 1].rpartition(":")
    return host.strip("[]"), int(port)


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "0.0.0.0", "[::1]"])
def test_make_run_serves_both_ports_on_the_host_it_is_given(tmp_path: Path, host: str) -> None:
    """``make run``'s own command with its host name (``localhost``, as the README shows it)
    or an IP literal: the gRPC port answers its health service and the HTTP port /healthz and
    the web table, each at the address the command names."""
    if host == "[::1]" and not socket.has_ipv6:
        pytest.fail("this machine has no IPv6: the test needs the IPv6 loopback")
    # Port 0 for each: the server takes free ports itself and says which in its "serving" line
    # (a port found free here could be taken by another test's server before this one binds).
    command = make_run_command(RUN_HOST=host, RUN_GRPC_PORT="0", RUN_HTTP_PORT="0")
    grpc_host, _ = address(command, "--listen")
    http_host, _ = address(command, "--http-listen")
    reach = {"0.0.0.0": "127.0.0.1"}
    running = Running(command, tmp_path / "run.log")
    try:
        serving = running.serving_line()
        grpc_port, http_port = int(serving["port"]), int(serving["http_port"])
        running.wait_serving(grpc_port, reach.get(grpc_host, grpc_host))
        where = reach.get(http_host, http_host)
        url = f"http://{'[' + where + ']' if ':' in where else where}:{http_port}"
        with urllib.request.urlopen(f"{url}/healthz", timeout=10) as page:
            assert page.status == 200
        with urllib.request.urlopen(f"{url}/", timeout=10) as page:
            assert b"<html" in page.read().lower()
    finally:
        running.close()


def test_a_host_that_does_not_resolve_is_one_line_saying_what_would_work() -> None:
    for flag in ("--listen", "--http-listen"):
        other = "--http-listen" if flag == "--listen" else "--listen"
        result = serve(
            "--store",
            "embedded",
            "--metrics-port",
            "off",
            other,
            f"127.0.0.1:{free_port()}",
            flag,
            "no-such-host.invalid:8080",
        )
        assert result.returncode == 1
        line = one_line_error(result)
        assert f"cannot listen on no-such-host.invalid:8080 ({flag}): " in line, line
        assert "localhost:8080" in line, line
        assert "[::]:8080" in line, line


@pytest.mark.parametrize("listen", ["localhost", "localhost:99999", "::1:8080", "[::1:8080"])
def test_a_listen_address_that_does_not_parse_is_refused_saying_what_would_work(
    listen: str,
) -> None:
    for flag in ("--listen", "--http-listen"):
        result = serve("--store", "embedded", flag, listen)
        assert result.returncode == 2
        assert "Traceback" not in result.stderr
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith(f"basra-engine serve: error: argument {flag}: "), last
        assert "give HOST:PORT" in last, last


def test_make_run_serves_the_embedded_store_and_stops_at_once_on_ctrl_c(tmp_path: Path) -> None:
    command = make_run_command()
    _, port = address(command, "--listen")
    assert "--store" in command
    assert command[command.index("--store") + 1] == "embedded"
    running = Running(command, tmp_path / "run.log")
    try:
        running.wait_serving(port)
        running.process.send_signal(signal.SIGINT)
        # No production drain: a drain would hold the process for a quarter of it (5 s) before
        # it even stops accepting calls; here it exits straight away (60 s is only a backstop).
        assert running.process.wait(timeout=60) == 0
    finally:
        running.close()
    messages = [json.loads(line)["msg"] for line in running.log.read_text().splitlines()]
    assert messages[-2:] == ["draining", "stopped"]
    draining = json.loads(running.log.read_text().splitlines()[-2])
    assert draining["grace_s"] == 0
