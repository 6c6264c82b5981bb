"""The complete programs of the API guide (proto/README.md) run as pasted against a server set up
like ``make run`` (embedded store, no caller seeds, gRPC and HTTP ports on ``localhost``); only
the port numbers are swapped for the test server's free ports, the host name stays."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import grpc
import pytest

from basra.service.config import Settings
from basra.service.server import create_server, new_event_loop
from tests.contract.golden import Json
from tests.contract.test_node_client import NODE_DIR, ROOT, TIMEOUT_S, node_project
from tests.support import ServerThread, wait_until

GUIDE: Final = ROOT / "proto" / "README.md"
MAKE_RUN_GRPC: Final = "localhost:50051"
MAKE_RUN_HTTP: Final = "localhost:8080"


def block(language: str, first_line: str) -> str:
    """The guide's one fenced ``language`` block whose code starts with ``first_line``."""
    found = [
        code
        for code in re.findall(rf"^( *)```{language}\n(.*?)^\1```", GUIDE.read_text(), re.M | re.S)
        if code[1].lstrip().startswith(first_line)
    ]
    assert len(found) == 1, f"expected one {language} block starting {first_line!r}"
    indent, code = found[0]
    return "\n".join(line.removeprefix(indent) for line in code.splitlines()) + "\n"


def quick_start() -> list[str]:
    """The shell blocks of the guide's quick start, in order."""
    text = GUIDE.read_text()
    start = text.index("\n## Quick start")
    section = text[start : text.index("\n## ", start + 1)]
    return re.findall(r"^```sh\n(.*?)^```", section, re.M | re.S)


class MakeRunServer(ServerThread):
    """What `make run` starts: defaults (no seeds, embedded store), both ports on ``localhost``
    as the Makefile's ``RUN_HOST`` has them (``ServerThread`` puts its HTTP port on
    127.0.0.1), each on a free port."""

    def __init__(self) -> None:
        self.settings = Settings(metrics_port=None, listen="localhost:0", http_listen="localhost:0")
        self.loop = new_event_loop(self.settings.event_loop)
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server, self.port = self.run(create_server(self.settings))
        self.channel = grpc.insecure_channel(f"localhost:{self.port}")

    @property
    def http_port(self) -> int:
        assert self.server.http is not None
        return self.server.http.port


@pytest.fixture(scope="module")
def make_run_server() -> Iterator[MakeRunServer]:
    server = MakeRunServer()
    yield server
    server.stop()


def addresses(code: str, server: MakeRunServer) -> str:
    """``code`` with make run's ports replaced by the server's (the host name kept)."""
    assert MAKE_RUN_GRPC in code or MAKE_RUN_HTTP in code, "the code names no make run address"
    return code.replace(MAKE_RUN_GRPC, f"localhost:{server.port}").replace(
        MAKE_RUN_HTTP, f"localhost:{server.http_port}"
    )


class Output:
    """A process's output lines, read in a thread of their own as they come."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        assert process.stdout is not None
        self._stdout = process.stdout
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        for line in self._stdout:
            self.lines.append(line)

    def json(self) -> list[Json]:
        return [json.loads(line) for line in list(self.lines) if line.strip()]


def test_the_quick_start_plays_a_card_over_curl_on_make_run(
    make_run_server: MakeRunServer, tmp_path: Path
) -> None:
    """The quick start's commands, pasted in order into one shell: a match created, the seat
    to play's plans, a card played (and, as the guide says to retry, its ``$PLAY`` sent again:
    the same answer), and the stream showing the match's two versions."""
    create, token, plans, play, watch = quick_start()
    retry = play[play.index("curl ") :]  # the Play call alone, with the same $PLAY
    assert "$PLAY" in retry
    code = "\n".join((create, token, plans, play, retry, watch))
    script = "set -euo pipefail\n" + addresses(code, make_run_server)
    with subprocess.Popen(
        ["bash", "-c", script],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the stream never ends by itself: its process group is killed
    ) as process:
        output = Output(process)
        try:
            wait_until(
                lambda: len(output.json()) >= 6 or process.poll() is not None,
                timeout=TIMEOUT_S,
                what="the quick start's answers and the stream's two messages",
            )
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            output.thread.join(timeout=10)
        assert process.stderr is not None
        assert len(output.json()) == 6, process.stderr.read()
    created, plans, played, replayed, first, second = output.json()
    assert len(created["seatTokens"]) == 2
    assert created["view"]["version"] == "1"
    assert played["played"]["card"] == plans["cards"][0]["card"]
    assert played["view"]["version"] == "2"
    assert replayed == played  # applied once: the retry answers the play's response
    assert first["event"]["version"] == "1"
    assert first["event"]["handStarted"]["hand"] == 1  # with the watching seat's cards
    assert second == {"event": played["events"][0]}
    assert json.loads((tmp_path / "match.json").read_text()) == created


def test_the_python_snippet_creates_a_match_on_make_run(make_run_server: MakeRunServer) -> None:
    """Each run creates a match of its own (a fresh request id); the snippet itself asserts
    that a retry with the same id answers the same match and tokens."""
    code = addresses(block("python", "import json\nimport uuid"), make_run_server)
    outputs = []
    for _ in range(2):
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT_S
        )
        assert result.returncode == 0, result.stderr
        outputs.append(json.loads(result.stdout))
    first, second = outputs
    for created in outputs:
        assert len(created["seatTokens"]) == 2
        assert created["view"]["version"] == "1"
    assert first["matchId"] != second["matchId"]


def test_the_grpc_js_program_runs_against_make_run(make_run_server: MakeRunServer) -> None:
    node_project()
    program = NODE_DIR / f".guide-grpc-js-{uuid.uuid4().hex}.mjs"  # beside node_modules
    program.write_text(block("js", "// grpc-js.mjs"))
    try:
        result = subprocess.run(
            ["node", str(program)],
            cwd=NODE_DIR,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            env={
                "PATH": "/usr/local/bin:/usr/bin:/bin",
                "BASRA_TARGET": f"localhost:{make_run_server.port}",
                "BASRA_PROTO": str(ROOT / "proto"),
            },
            check=False,
        )
    finally:
        program.unlink()
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert re.fullmatch(r"created [\w-]{22} version 1 turn [01] winner false", lines[0])
    assert re.fullmatch(r'rejected FAILED_PRECONDITION NOT_YOUR_TURN \{"turn":"[01]"\}', lines[1])
    assert re.fullmatch(r"played RANK_\w+ SUIT_\w+ version 2", lines[2])
    assert lines[3] == "event 1 hand_started complete"
    assert lines[4] == "stream rejected PERMISSION_DENIED TOKEN_INVALID {}"
    assert len(lines) == 5


def test_the_guides_node_packages_are_the_pinned_ones() -> None:
    """The versions the guide tells grpc-js users to install are the ones the test ran."""
    package = json.loads((NODE_DIR / "package.json").read_text())
    pinned = {**package["dependencies"], **package["devDependencies"]}
    install = block("js", "// grpc-js.mjs").splitlines()[1]
    for name in ("@grpc/grpc-js", "@grpc/proto-loader", "protobufjs", "google-proto-files"):
        assert f"{name}@{pinned[name]}" in install, name
