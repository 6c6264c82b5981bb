"""The ``basra-engine`` command itself: its version and its help."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from basra import engine
from basra.service.cli import version
from basra.service.config import Settings
from tests.cli.test_oracle import COMMAND
from tests.support import ServerThread, at_a_terminal


def command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([COMMAND, *args], capture_output=True, text=True, timeout=60, check=False)


def test_version_prints_the_installed_version() -> None:
    result = command("--version")
    assert result.returncode == 0
    kind = "compiled" if engine.COMPILED else "interpreted"
    assert result.stdout == f"basra-engine {version()} (engine {kind})\n"
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", version())


def test_version_says_when_the_engine_runs_from_its_sources() -> None:
    result = subprocess.run(
        [COMMAND, "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "BASRA_ENGINE": "pure"},
    )
    assert result.stdout == f"basra-engine {version()} (engine interpreted)\n"


@pytest.mark.parametrize(
    ("subcommand", "defaults"),
    [
        ("plans", ["(default: an empty floor)", "(default: letters)"]),
        ("demo", ["(default: localhost:50051)", "(default: symbols)", "(default: 0, no pause)"]),
        ("play", ["(default: localhost:50051)", "(default: symbols)"]),
    ],
)
def test_every_help_shows_the_defaults(subcommand: str, defaults: list[str]) -> None:
    result = command(subcommand, "--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())  # argparse wraps lines
    for default in defaults:
        assert default in text


def test_demo_help_says_the_servers_bots_keep_the_servers_pace() -> None:
    # --pace paces the demo's own bots only: the server waits before each of its bots' moves
    # (`serve --bot-pace-seconds`), so a --levels demo takes that long whatever --pace says.
    result = command("demo", "--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "--bot-pace-seconds" in text
    assert "pause between two plays of the demo's own bots (default: 0, no pause)" in text
    assert "the server's bots (--levels) keep the server's pace, which --pace does not change" in (
        text
    )


def test_ctrl_c_stops_a_paced_demo_at_once_and_cleanly() -> None:
    server = ServerThread(Settings(allow_seeds=True, metrics_port=None))
    try:
        process = subprocess.Popen(
            at_a_terminal([COMMAND, "demo", "--target", server.target, "--pace", "600"]),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None
            for line in process.stdout:  # wait for the first play, then the long pause
                if re.match(r" +1\. seat", line):
                    break
            # Sent through a gRPC thread (kill() with its id hands it that thread first), a
            # signal does not wake the main thread's sleep: the demo must not wait 600 s.
            pid = process.pid
            deadline = time.monotonic() + 30
            while Path(f"/proc/{pid}/wchan").read_text() != "hrtimer_nanosleep":
                assert time.monotonic() < deadline, "the demo never paused"
                time.sleep(0.01)  # a polling interval, not a wait for the outcome
            threads = [int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid]
            assert threads
            os.kill(threads[0], signal.SIGINT)
            _, errors = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate(timeout=30)
    finally:
        server.stop()
    assert process.returncode == 130
    assert "Traceback" not in errors
