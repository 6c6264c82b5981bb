"""``make help`` lists every target a person may call (every .PHONY one)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_make_help_lists_every_phony_target() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    phony = set(" ".join(re.findall(r"^\.PHONY:(.*)$", makefile, re.M)).split())
    make = shutil.which("make")
    assert make
    shown = subprocess.run(
        [make, "--no-print-directory", "help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    listed = set(re.findall(r"^make (\S+) +\S", shown, re.M))
    assert {"help", "setup", "run", "test"} <= phony
    assert listed == phony
