"""The complete programs of the API guide (proto/README.md) run as pasted against a server set up
like ``make run`` (embedded store, no caller seeds, gRPC and HTTP ports); only the addresses are
swapped for the test server's free ports."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Final

import pytest

from basra.service.config import Settings
from tests.contract.test_node_client import NODE_DIR, ROOT, TIMEOUT_S, node_project
from tests.support import ServerThread

GUIDE: Final = ROOT / "proto" / "README.md"


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


@pytest.fixture(scope="module")
def make_run_server() -> Iterator[ServerThread]:
    """What `make run` starts: defaults (no seeds, embedded store), both ports."""
    server = ServerThread(Settings(metrics_port=None))
    yield server
    server.stop()


def addresses(code: str, server: ServerThread) -> str:
    return code.replace("localhost:50051", server.target).replace(
        "localhost:8080", server.http_url.removeprefix("http://")
    )


def test_the_python_snippet_creates_a_match_on_make_run(make_run_server: ServerThread) -> None:
    code = addresses(block("python", "import grpc\nfrom google.protobuf"), make_run_server)
    outputs = []
    for _ in range(2):
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT_S
        )
        assert result.returncode == 0, result.stderr
        outputs.append(json.loads(result.stdout))
    first, again = outputs
    assert len(first["seatTokens"]) == 2
    assert first["view"]["version"] == "1"
    assert again == first  # the same requestId: the same match and tokens, not a second match


def test_the_curl_snippet_calls_connect_json_on_make_run(make_run_server: ServerThread) -> None:
    code = addresses(block("sh", "curl -sS http://localhost:8080"), make_run_server)
    result = subprocess.run(
        ["bash", "-c", code], capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )
    assert result.returncode == 0, result.stderr
    response = json.loads(result.stdout)
    assert {"matchId", "seatTokens", "view", "events"} <= response.keys()
    assert response["view"]["hand"]


def test_the_grpc_js_program_runs_against_make_run(make_run_server: ServerThread) -> None:
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
                "BASRA_TARGET": make_run_server.target,
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
