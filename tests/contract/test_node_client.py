"""The TypeScript client (tests/contract/node) against the Python server these tests start.

It must type-check strictly, be built from the current contract, play a whole seeded match to the
same scoreboard as the Python client and the engine, and replay every golden vector. Node.js, the
npm packages and the generated stubs are prerequisites that ``make test`` sets up; when one is
missing these tests fail (they never skip) and say so.
"""

from __future__ import annotations

import filecmp
import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Final

import pytest
from google.protobuf import json_format

from basra.client.match import MatchClient
from basra.engine import (
    ERAM,
    Phase,
    Play,
    Profile,
    apply,
    deal_next_hand,
    legal_plans,
    match_profile,
    new_match,
)
from basra.v1 import game_pb2
from tests.contract import golden
from tests.contract.conftest import ServeVector
from tests.contract.policy import play_first_choice
from tests.support import ServerThread

ROOT: Final = golden.HERE.parent.parent
NODE_DIR: Final = golden.HERE / "node"
TEMPLATE: Final = NODE_DIR / "buf.gen.yaml"
STUBS: Final = NODE_DIR / "gen"
BIN: Final = NODE_DIR / "node_modules" / ".bin"
SEED: Final = 42
TIMEOUT_S: Final = 120
SETUP: Final = (
    "run `make test`, which sets it up: `cd tests/contract/node && npm ci`, then from the "
    "repository root `.venv/bin/buf generate --template tests/contract/node/buf.gen.yaml`"
)


def node_project() -> None:
    """Check that the Node project can run: Node.js on PATH, its packages, the generated stubs.

    Called by each test, so that a missing piece fails the test itself (never a skip).
    """
    missing = []
    if shutil.which("node") is None:
        missing.append("Node.js (node on PATH)")
    if not (BIN / "tsx").exists() or not (BIN / "tsc").exists():
        missing.append("the npm packages (tests/contract/node/node_modules)")
    if not (STUBS / "basra" / "v1" / "basra_service_pb.ts").exists():
        missing.append("the TypeScript stubs (tests/contract/node/gen)")
    if missing:
        pytest.fail(f"The TypeScript client cannot run: missing {', '.join(missing)}; {SETUP}.")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "tsx"), *args],
        cwd=NODE_DIR,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def test_the_typescript_type_checks_strictly() -> None:
    node_project()
    result = subprocess.run(
        [str(BIN / "tsc"), "--noEmit", "-p", str(NODE_DIR)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    config = json.loads((NODE_DIR / "tsconfig.json").read_text())
    assert config["compilerOptions"]["strict"] is True


def test_the_typescript_stubs_are_generated_from_the_current_contract(tmp_path: Path) -> None:
    node_project()
    buf = str(ROOT / ".venv" / "bin" / "buf")
    subprocess.run(
        [buf, "generate", "--template", str(TEMPLATE), "--output", str(tmp_path)],
        cwd=ROOT,
        check=True,
        timeout=TIMEOUT_S,
    )
    fresh = tmp_path / STUBS.relative_to(ROOT)
    files = sorted(p.relative_to(fresh) for p in fresh.rglob("*.ts"))
    assert Path("basra/v1/basra_service_pb.ts") in files
    assert Path("google/rpc/error_details_pb.ts") in files
    assert sorted(p.relative_to(STUBS) for p in STUBS.rglob("*.ts")) == files
    _, mismatch, errors = filecmp.cmpfiles(fresh, STUBS, [str(f) for f in files], shallow=False)
    assert not mismatch + errors, f"stale TypeScript stubs {mismatch + errors}; {SETUP}"


def first_choice_on_the_engine(seed: int, profile: Profile = ERAM) -> list[int]:
    """The policy's match played on the engine alone: the final totals (per side)."""
    state, _ = new_match(seed, profile)
    while state.phase is not Phase.MATCH_OVER:
        if state.phase is Phase.HAND_OVER:
            state, _ = deal_next_hand(state)
            continue
        card = state.hands[state.turn][0]
        plans = legal_plans(state, card)
        state, _ = apply(state, Play(state.turn, card, plans[0].id if plans else None))
    return list(state.scores)


@pytest.mark.parametrize(
    ("protocol", "port"),
    [
        ("grpc", "grpc"),
        # The HTTP port: the same RPCs (one core) over Connect, binary and JSON, and gRPC-Web;
        # every rejection's details decoded by ConnectError.findDetails.
        ("connect", "http"),
        ("connect-json", "http"),
        ("grpc-web", "http"),
    ],
)
def test_the_typescript_client_plays_the_python_clients_match(
    redis_url: str, protocol: str, port: str
) -> None:
    node_project()
    server = ServerThread(replace(golden.OPERATIONAL, allow_seeds=True, redis_url=redis_url))
    target = server.target if port == "grpc" else server.http_url.removeprefix("http://")
    try:
        result = run(
            "src/client.ts", "--target", target, "--seed", str(SEED), "--protocol", protocol
        )
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert len(lines) == 1, result.stdout
        client, _ = MatchClient.create(server.channel, seed=SEED)
        python = play_first_choice(client).scoreboard
    finally:
        server.stop()
    typescript = json_format.Parse(lines[0], game_pb2.Scoreboard())
    assert typescript == python
    assert json.loads(lines[0]) == json_format.MessageToDict(python), "one JSON mapping"
    assert python.status == game_pb2.MATCH_STATUS_MATCH_OVER
    assert python.HasField("winner")
    assert list(python.totals) == first_choice_on_the_engine(SEED)
    log = result.stderr.splitlines()
    rejections = [line.split()[4] for line in log if line.startswith("rejected as expected: ")]
    assert rejections == ["NOT_YOUR_TURN", "INVALID_ARGUMENT", "INVALID_CARD", "TOKEN_MISSING"]
    assert "BadRequest: plan_id: must be 0 (none named) or a plan id from 1" in log
    assert any(line.endswith("streams match") for line in log)
    assert f"protocol {protocol}" in log


def test_the_typescript_client_plays_a_four_seat_partnership_match(redis_url: str) -> None:
    node_project()
    server = ServerThread(replace(golden.OPERATIONAL, allow_seeds=True, redis_url=redis_url))
    try:
        result = run(
            "src/client.ts",
            "--target",
            server.target,
            "--seed",
            str(SEED),
            "--rules",
            "egyptian",
            "--seats",
            "4",
        )
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.stdout
    board = json_format.Parse(lines[0], game_pb2.Scoreboard())
    assert board.status == game_pb2.MATCH_STATUS_MATCH_OVER
    assert list(board.seat_sides) == [0, 1, 0, 1]
    assert list(board.side_totals) == first_choice_on_the_engine(SEED, match_profile("egyptian", 4))
    assert list(board.totals) == [board.side_totals[side] for side in (0, 1, 0, 1)]
    log = result.stderr.splitlines()
    assert any("egyptian rules, 4 seats" in line for line in log)
    rejections = [line.split()[4] for line in log if line.startswith("rejected as expected: ")]
    assert rejections == ["NOT_YOUR_TURN", "INVALID_ARGUMENT", "INVALID_CARD", "TOKEN_MISSING"]
    assert any(line.endswith("streams match") for line in log)


@pytest.mark.parametrize("protocol", ["grpc", "connect-json"])
def test_the_typescript_client_claims_its_invited_seats_then_plays_the_same_match(
    redis_url: str, protocol: str
) -> None:
    """Invitations claimed once from TypeScript: the creator keeps seat 0's token, every other
    seat is claimed (a retry with its request id answers the same token; someone else's claim
    is INVITATION_CLAIMED), then the match is the same as one created with every token."""
    node_project()
    server = ServerThread(replace(golden.OPERATIONAL, allow_seeds=True, redis_url=redis_url))
    target = server.target if protocol == "grpc" else server.http_url.removeprefix("http://")
    try:
        result = run(
            "src/client.ts",
            "--target",
            target,
            "--seed",
            str(SEED),
            "--rules",
            "egyptian",
            "--seats",
            "4",
            "--invitations",
            "--protocol",
            protocol,
        )
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr
    board = json_format.Parse(result.stdout.splitlines()[0], game_pb2.Scoreboard())
    assert list(board.side_totals) == first_choice_on_the_engine(SEED, match_profile("egyptian", 4))
    log = result.stderr.splitlines()
    rejections = [line.split()[4] for line in log if line.startswith("rejected as expected: ")]
    assert rejections == ["INVITATION_CLAIMED"] * 3 + [
        "NOT_YOUR_TURN",
        "INVALID_ARGUMENT",
        "INVALID_CARD",
        "TOKEN_MISSING",
    ]
    assert any(line.endswith("streams match") for line in log)


def test_the_typescript_replayer_replays_every_vector(
    serve_vector: ServeVector, tmp_path: Path
) -> None:
    node_project()
    vectors = {name: golden.load(path) for name, path in names().items()}
    targets = {name: serve_vector(vector).target for name, vector in vectors.items()}
    (tmp_path / "targets.json").write_text(json.dumps(targets))
    result = run("src/replay.ts", str(tmp_path / "targets.json"))
    assert result.returncode == 0, result.stdout + result.stderr
    for name, vector in vectors.items():
        assert f"ok {name} ({len(vector['steps'])} steps)" in result.stdout.splitlines()
    assert f"{len(vectors)} of {len(vectors)} vectors replayed" in result.stdout


def test_the_typescript_replayer_reports_a_differing_vector(
    serve_vector: ServeVector, tmp_path: Path
) -> None:
    node_project()
    vector = golden.load(names()["errors_turns_and_plans"])
    index = next(i for i, s in enumerate(vector["steps"]) if "error" in s["expect"])
    vector["steps"][index]["expect"]["error"]["metadata"]["turn"] = "7"
    (tmp_path / "vectors").mkdir()
    (tmp_path / "vectors" / f"{vector['name']}.json").write_text(golden.dump(vector))
    (tmp_path / "targets.json").write_text(
        json.dumps({vector["name"]: serve_vector(vector).target})
    )
    result = run("src/replay.ts", str(tmp_path / "targets.json"), str(tmp_path / "vectors"))
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"FAIL errors_turns_and_plans: errors_turns_and_plans step {index} (Play)" in (
        result.stdout
    )
    assert 'error.metadata.turn: expected "7", got "1"' in result.stdout


def names() -> dict[str, Path]:
    return {path.stem: path for path in golden.all_vectors()}
