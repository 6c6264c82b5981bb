"""buf breaking guards the contract: the released baseline, and proof that it bites."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUF = shutil.which("buf", path=str(Path(sys.executable).parent))
RELEASED = ROOT / "proto" / "released.json"


def breaking(workspace: Path) -> subprocess.CompletedProcess[str]:
    assert BUF, "buf comes with the dev environment (buf-bin)"
    return subprocess.run(
        [BUF, "breaking", str(workspace), "--against", str(RELEASED), "--error-format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def workspace(tmp_path: Path, mutate: tuple[str, str, str] | None = None) -> Path:
    """A copy of the contract (buf.yaml and proto/), optionally with one textual change."""
    shutil.copy(ROOT / "buf.yaml", tmp_path / "buf.yaml")
    shutil.copytree(ROOT / "proto" / "basra", tmp_path / "proto" / "basra")
    if mutate:
        name, old, new = mutate
        path = tmp_path / "proto" / "basra" / "v1" / name
        text = path.read_text()
        assert re.search(old, text), f"{old!r} not in {name}"
        path.write_text(re.sub(old, new, text, count=1))
    return tmp_path


def test_the_contract_is_compatible_with_the_released_baseline(tmp_path: Path) -> None:
    result = breaking(workspace(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("change", "rule"),
    [
        (("game.proto", r"  int32 stock_size = 7;\n", ""), "FIELD_NO_DELETE"),
        (("game.proto", r"int64 version = 2;", "int32 version = 2;"), "FIELD_SAME_TYPE"),
        (("game.proto", r"int32 plan_id = 3;", "int32 plan_number = 3;"), "FIELD_SAME_NAME"),
        (("basra_service.proto", r"int32 plan_id = 3;", "int32 plan_id = 9;"), "FIELD_NO_DELETE"),
        (("basra_service.proto", r"rpc Score\(", "rpc Scores("), "RPC_NO_DELETE"),
        (("errors.proto", r"  ERROR_REASON_HAND_OVER = 36;\n", ""), "ENUM_VALUE_NO_DELETE"),
        (
            ("basra_service.proto", r"returns \(PlayResponse\)", "returns (ScoreResponse)"),
            "RPC_SAME_RESPONSE_TYPE",
        ),
    ],
)
def test_breaking_changes_are_caught(
    tmp_path: Path, change: tuple[str, str, str], rule: str
) -> None:
    result = breaking(workspace(tmp_path, change))
    assert result.returncode != 0
    findings = [json.loads(line) for line in result.stdout.splitlines()]
    assert rule in {f["type"] for f in findings}, result.stdout


def test_additive_changes_pass(tmp_path: Path) -> None:
    addition = (
        "game.proto",
        r"  string rules = 18;\n",
        "  string rules = 18;\n  // A new field.\n  int32 new_field = 999;\n",
    )
    result = breaking(workspace(tmp_path, addition))
    assert result.returncode == 0, result.stdout + result.stderr
