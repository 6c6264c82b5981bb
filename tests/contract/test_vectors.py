"""The golden vectors replay on the Python server, and they hold what they claim to cover."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest

from basra.engine import Card, Phase, Play, State, apply, deal_next_hand, new_match
from basra.v1 import errors_pb2
from tests.contract import golden, search_seeds
from tests.contract.conftest import ServeVector
from tests.contract.golden import Bindings, Json, VectorError

VECTORS = golden.all_vectors()
BY_NAME = {path.stem: golden.load(path) for path in VECTORS}

# Reasons no request can produce on a healthy server: STATE_CORRUPT needs a damaged stored match
# (tests/service writes garbage into Redis for it) and INTERNAL is an unexpected fault.
NOT_DETERMINISTIC = {"UNSPECIFIED", "STATE_CORRUPT", "INTERNAL"}
# Reasons no contract client can provoke by its requests alone, each proved elsewhere: a request
# that never finishes arriving (raw HTTP/2: tests/service/test_half_open_requests.py), a Redis
# out of memory (tests/service/test_store_full.py), a stream that is open when its watch token
# is revoked (a vector's steps run one after another: tests/service/test_watch_revocation.py),
# likewise one whose seat token is revoked (tests/service/test_claims.py); and one no server
# sends any more (WATCH_TOKENS_UNSUPPORTED).
NO_VECTOR = {
    "REQUEST_TIMEOUT",
    "STORE_FULL",
    "WATCH_TOKEN_REVOKED",
    "SEAT_TOKEN_REVOKED",
    "WATCH_TOKENS_UNSUPPORTED",
}


def errors_of(vector: Json) -> list[Json]:
    return [s["expect"]["error"] for s in vector["steps"] if "error" in s["expect"]]


def plays_of(vector: Json) -> list[list[object]]:
    """(seat, card, plan id) of every Play step that expects a response."""
    plays: list[list[object]] = []
    for step in vector["steps"]:
        if step["rpc"] == "Play" and "error" not in step["expect"]:
            card = golden_card(step["request"]["card"])
            plays.append([step["seat"], card, step["request"].get("planId", 0)])
    return plays


def golden_card(card: Json) -> str:
    ranks = ["ACE", "TWO", "THREE", "FOUR", "FIVE", "SIX", "SEVEN", "EIGHT", "NINE", "TEN"]
    ranks += ["JACK", "QUEEN", "KING"]
    rank = ranks.index(card["rank"].removeprefix("RANK_"))
    suit = ["CLUBS", "DIAMONDS", "HEARTS", "SPADES"].index(card["suit"].removeprefix("SUIT_"))
    return str(Card(suit * 13 + rank))


@pytest.mark.parametrize("path", VECTORS, ids=[p.stem for p in VECTORS])
def test_the_vector_replays_on_the_python_server(path: Path, serve_vector: ServeVector) -> None:
    vector = BY_NAME[path.stem]
    server = serve_vector(vector)
    assert golden.replay(vector, server.channel) == len(vector["steps"]) > 0


def test_every_deterministic_error_reason_has_a_vector() -> None:
    values = errors_pb2.ErrorReason.DESCRIPTOR.values
    reasons = {v.name.removeprefix("ERROR_REASON_") for v in values} - NOT_DETERMINISTIC - NO_VECTOR
    covered = {error["reason"] for vector in BY_NAME.values() for error in errors_of(vector)}
    assert covered == reasons
    assert len(reasons) == 30


def test_errors_follow_the_error_model() -> None:
    for vector in BY_NAME.values():
        for error in errors_of(vector):
            assert error["domain"] == "basra.v1", error
            assert error["code"] in grpc.StatusCode.__members__, error
            bad_request = error["code"] == "INVALID_ARGUMENT"
            assert ("badRequest" in error) == bad_request, error
            assert ("retryInfo" in error) == (error["reason"] == "RATE_LIMITED"), error
            if bad_request:
                fields = [v["field"] for v in error["badRequest"]["fieldViolations"]]
                assert fields == [error["metadata"]["field"]], error


def test_the_carry_vector_carries_30_points_from_a_26_26_hand() -> None:
    vector = BY_NAME["carry_26_26"]
    board = vector["steps"][-1]["expect"]["response"]["scoreboard"]
    first, second = board["hands"]
    assert [seat["cards"] for seat in first["seats"]] == [26, 26]
    assert all("majority" not in seat for seat in first["seats"])
    assert first["carryAfter"] == 30
    assert second["carryBefore"] == 30
    assert sorted(seat.get("carry", 0) for seat in second["seats"]) == [0, 30]
    assert "carry" not in board  # released: back to 0


def test_the_tie_vector_plays_an_extra_hand_after_121_all() -> None:
    vector = BY_NAME["tie_121"]
    scored = [
        event["handScored"]
        for step in vector["steps"]
        if step["rpc"] == "Play" and "response" in step["expect"]
        for event in step["expect"]["response"]["events"]
        if "handScored" in event
    ]
    tie = next(s for s in scored if s.get("extraHand"))
    assert tie["totals"][0] == tie["totals"][1] >= 121
    final = scored[-1]
    assert final["score"]["hand"] == tie["score"]["hand"] + 1
    assert final["totals"][0] != final["totals"][1]
    board = next(
        s["expect"]["response"]["scoreboard"]
        for s in reversed(vector["steps"])
        if s["rpc"] == "Score"
    )
    assert board["status"] == "MATCH_STATUS_MATCH_OVER"
    assert board["totals"][board.get("winner", 0)] == max(board["totals"])


def test_the_partnership_vector_is_a_whole_four_seat_match_scored_per_side() -> None:
    vector = BY_NAME["partnership_match"]
    created = vector["steps"][0]["expect"]["response"]
    assert [t.get("seat", 0) for t in created["seatTokens"]] == [0, 1, 2, 3]
    assert [s.get("side", 0) for s in created["view"]["seats"]] == [0, 1, 0, 1]
    assert created["view"]["rules"] == "egyptian"
    board = next(
        s["expect"]["response"]["scoreboard"]
        for s in reversed(vector["steps"])
        if s["rpc"] == "Score"
    )
    assert board["status"] == "MATCH_STATUS_MATCH_OVER"
    assert board["seatSides"] == [0, 1, 0, 1]
    winner = board.get("winnerSide", 0)
    assert board["sideTotals"][winner] == max(board["sideTotals"]) >= 101
    per_seat = board["totals"]
    assert per_seat == [board["sideTotals"][side] for side in (0, 1, 0, 1)]
    for hand in board["hands"]:
        assert sum(side.get("cards", 0) for side in hand["sides"]) == 52
    streams = [s for s in vector["steps"] if s["rpc"] == "WatchMatch"]
    assert [s["seat"] for s in streams] == [0, 1, 2, 3]
    assert all(s["expect"]["ends"] for s in streams)


def test_the_rules_vector_lists_every_rule_system_and_creates_nothing_when_rejected() -> None:
    rules = BY_NAME["list_rules"]["steps"][0]["expect"]["response"]["rules"]
    assert [r["name"] for r in rules] == [
        "eram",
        "egyptian",
        "jordanian",
        "lobashev",
        "persian",
        "persian-partnership",
    ]
    steps = BY_NAME["errors_rules"]["steps"]
    assert all("error" in s["expect"] for s in steps[:-1])
    assert steps[-1]["expect"]["response"]["view"]["version"] == "1"


def test_the_searched_matches_are_the_vectors_and_replay_on_the_engine() -> None:
    results = json.loads(search_seeds.RESULTS.read_text())
    for name, vector in [("carry", "carry_26_26"), ("tie", "tie_121"), ("showcase", "full_hand")]:
        found = results[name]
        assert plays_of(BY_NAME[vector]) == found["plays"], vector
        state, _ = new_match(found["seed"])
        for seat, card, plan_id in found["plays"]:
            if state.phase is Phase.HAND_OVER:
                state, _ = deal_next_hand(state)
            state, _ = apply(state, Play(seat, Card.parse(card), plan_id or None))
        assert running_totals(state) == [hand["totals"] for hand in found["hands"]], name


def running_totals(state: State) -> list[list[int]]:
    """Both seats' match totals after each hand."""
    totals = [0, 0]
    out = []
    for hand in state.history:
        totals = [t + s for t, s in zip(totals, hand.totals, strict=True)]
        out.append(totals)
    return out


def test_a_differing_response_fails_the_replay_naming_the_step_and_the_field(
    serve_vector: ServeVector,
) -> None:
    vector = json.loads(json.dumps(BY_NAME["errors_turns_and_plans"]))
    index = next(i for i, s in enumerate(vector["steps"]) if "error" in s["expect"])
    vector["steps"][index]["expect"]["error"]["metadata"]["turn"] = "7"
    server = serve_vector(vector)
    with pytest.raises(VectorError, match=rf"step {index} \(Play\)\n  error.metadata.turn: "):
        golden.replay(vector, server.channel)


def test_placeholders_bind_once_then_must_repeat() -> None:
    bindings = Bindings()
    token = "t" * 43
    assert list(bindings.match("{{token:0}}", token, "$", partial=False)) == []
    assert list(bindings.match("{{token:0}}", token, "$", partial=False)) == []
    assert list(bindings.match("{{token:0}}", "u" * 43, "$", partial=False)) == [
        f"$: expected {{{{token:0}}}} = {token!r}, got {'u' * 43!r}"
    ]
    assert list(bindings.match("{{match_id}}", "short", "$", partial=False)) == [
        "$: 'short' is not a match_id"
    ]
    assert list(bindings.match("{{seconds}}", "999.5", "$", partial=False)) == []
    assert list(bindings.match("{{duration}}", "0s", "$", partial=False)) == [
        "$: '0s' is not positive"
    ]
    assert bindings.fill({"authorization": "Bearer {{token:0}}"}) == {
        "authorization": f"Bearer {token}"
    }
    first = bindings.fill("{{request_id:a}}")
    assert bindings.fill("{{request_id:a}}") == first != bindings.fill("{{request_id:b}}")
    assert Bindings().fill("{{request_id:a}}") != first, "fresh in every replay"
    with pytest.raises(VectorError, match="used before it was bound"):
        Bindings().fill("{{match_id}}")


def test_partial_expectations_check_only_the_keys_given() -> None:
    bindings = Bindings()
    actual = {"view": {"version": "3", "turn": 1}, "events": [{"version": "3"}]}
    assert list(bindings.match({"view": {"version": "3"}}, actual, "$", partial=True)) == []
    assert list(bindings.match({"view": {"version": "3"}}, actual, "$", partial=False)) != []
    assert list(bindings.match({"view": {"version": 3}}, actual, "$", partial=True)) == [
        "$.view.version: expected 3, got '3'"
    ]
    assert list(bindings.match({"events": []}, actual, "$", partial=True)) == [
        "$.events: expected 0 items, got [{'version': '3'}]"
    ]
