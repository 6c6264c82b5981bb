"""The ``basra-engine`` command itself: its version and its help."""

from __future__ import annotations

import re
import signal
import subprocess

import pytest

from basra.cli import version
from basra.service.config import Settings
from tests.cli.test_oracle import COMMAND
from tests.support import ServerThread


def command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([COMMAND, *args], capture_output=True, text=True, timeout=60, check=False)


def test_version_prints_the_installed_version() -> None:
    result = command("--version")
    assert result.returncode == 0
    assert result.stdout == f"basra-engine {version()}\n"
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", version())


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


def test_ctrl_c_stops_the_demo_cleanly() -> None:
    server = ServerThread(Settings(allow_seeds=True, metrics_port=None))
    try:
        process = subprocess.Popen(
            [COMMAND, "demo", "--target", server.target, "--pace", "30"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None
        for line in process.stdout:  # wait for the first play, then the 30 s pause
            if re.match(r" +1\. seat", line):
                break
        process.send_signal(signal.SIGINT)
        _, errors = process.communicate(timeout=30)
    finally:
        server.stop()
    assert process.returncode == 130
    assert "Traceback" not in errors
