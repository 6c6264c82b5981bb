"""The README's front door, run as a newcomer runs it: ``make run`` itself (the Makefile's recipe
unchanged, its ports moved with the Makefile's own ``RUN_*_PORT`` variables so that it runs
beside other servers), then every command of the README's quick start against it, at the host
names the README writes (``localhost``). A README command that fails fails the suite."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

from tests.cli.test_serve_command import CLEAN_ENV, Running
from tests.docs.test_documents import README, ROOT, commands, text
from tests.support import free_port

pytestmark = pytest.mark.full

TIMEOUT_S: Final = 300.0
"""A README command's backstop (the strong bots' demo paces its moves)."""


@dataclass(frozen=True)
class MakeRun:
    """``make run`` serving on three free ports."""

    grpc_port: int
    http_port: int
    metrics_port: int

    def swap(self, line: str) -> str:
        """A README line with the default ports swapped for this server's (hosts kept)."""
        return (
            line.replace("localhost:50051", f"localhost:{self.grpc_port}")
            .replace("localhost:8080", f"localhost:{self.http_port}")
            .replace("localhost:9090", f"localhost:{self.metrics_port}")
        )


@pytest.fixture(scope="module")
def make_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MakeRun]:
    ports = MakeRun(free_port(), free_port(), free_port())
    log = tmp_path_factory.mktemp("make-run") / "run.log"
    command = [
        "make",
        "--no-print-directory",
        "run",
        f"RUN_GRPC_PORT={ports.grpc_port}",
        f"RUN_HTTP_PORT={ports.http_port}",
        f"RUN_METRICS_PORT={ports.metrics_port}",
    ]
    running = Running(command, log, cwd=ROOT, new_session=True)
    try:
        running.wait_serving(ports.grpc_port, "localhost")
        yield ports
    finally:
        # make and the server it started: Ctrl-C at a terminal reaches the whole group.
        if running.process.poll() is None:
            os.killpg(running.process.pid, signal.SIGINT)
            running.process.wait(timeout=60)
        running.close()


def fetch(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=10) as page:
        return int(page.status), page.read()


def test_make_run_serves_grpc_http_the_table_and_metrics_at_localhost(make_run: MakeRun) -> None:
    """What the README says `make run` serves, at the addresses it names."""
    status, _ = fetch(f"http://localhost:{make_run.http_port}/healthz")
    assert status == 200
    status, page = fetch(f"http://localhost:{make_run.http_port}/")
    assert status == 200
    assert b'<div id="app"' in page or b"<script" in page, page[:200]
    status, metrics = fetch(f"http://localhost:{make_run.metrics_port}/metrics")
    assert status == 200
    assert b"basra_store_up" in metrics


def test_the_readme_curl_call_answers_on_make_run(make_run: MakeRun) -> None:
    block = re.search(r"<!-- connect-curl:[^>]*-->\s*```sh\n(.*?)```", text(README), re.S)
    assert block, "README.md: no curl block after the connect-curl marker"
    call = make_run.swap(block.group(1))
    done = subprocess.run(["sh", "-c", call], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert '"name":"eram"' in done.stdout.replace(" ", "")


def client_commands() -> list[list[str]]:
    """The README's ``basra-engine demo`` and ``play`` commands (they call a server)."""
    found = [words for words in commands(README) if words[0] in ("demo", "play")]
    assert {words[0] for words in found} == {"demo", "play"}
    return found


@pytest.mark.parametrize("words", client_commands(), ids=" ".join)
def test_each_readme_client_command_runs_on_make_run(
    make_run: MakeRun, words: list[str], tmp_path: Path
) -> None:
    """Each command as written (ports swapped); ``play`` gets a person who leaves at the first
    prompt, and says how to resume."""
    argv = [make_run.swap(word) for word in words]
    if "--target" not in argv:  # the default target is make run's gRPC port
        argv += ["--target", f"localhost:{make_run.grpc_port}"]
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "basra-engine"), *argv],
        input="q\n",
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**CLEAN_ENV, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state")},
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    if argv[0] == "demo":
        assert re.search(r"wins", done.stdout), done.stdout[-2000:]
    else:
        assert "--resume" in done.stdout, done.stdout[-2000:]


def test_the_readme_first_match_runs_on_make_run(make_run: MakeRun) -> None:
    """The README's Python snippet, pasted into the venv's Python."""
    marker = "<!-- first-match: tests/service/test_readme_snippet.py runs this block -->"
    found = re.match(r"\s*```python\n(.*?)```", text(README).split(marker, 1)[1], re.S)
    assert found, "README.md: no python block after the first-match marker"
    done = subprocess.run(
        [sys.executable, "-c", make_run.swap(found.group(1))],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].endswith("wins"), done.stdout[-500:]
