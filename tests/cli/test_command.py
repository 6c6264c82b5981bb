"""The ``basra-engine`` command itself: its version and its help."""

from __future__ import annotations

import re
import subprocess

import pytest

from basra.cli import version
from tests.cli.test_oracle import COMMAND


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
