"""The API guide's worked example (proto/README.md, "Worked example") is what a real server
answers: every request is sent as the guide writes it to a server that allows seeds, and every
response is compared with the guide's JSON.

The guide writes responses in JSON with ``//`` and ``/* */`` comments, where ``…`` leaves parts
out: ``[…]`` and ``{…}`` stand for any value, and ``…`` as an object's member for members not
shown. Everything else must be the server's, field for field: a response written without
``…`` (the creation's) is the whole response. Seat tokens are random, so they are compared by
shape. The plays between the steps shown are the greedy policy's (``basra.client``'s
``greedy_choice`` for the seat to play, seat 0 dealing), as the guide says.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, Final

import grpc
import pytest
from google.protobuf import json_format

# error_details_pb2 is imported for its registration: a Status's details print as messages.
from google.rpc import error_details_pb2, status_pb2  # noqa: F401

from basra.client import greedy_choice
from basra.service.config import Settings
from basra.service.errors import DETAILS_KEY
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc, game_pb2
from tests.contract.golden import CALL_TIMEOUT_S, Json
from tests.contract.test_guide_snippets import GUIDE
from tests.support import ServerThread

ANY: Final = "\x00any"
"""What ``[…]`` and ``{…}`` become: any value."""
MORE: Final = "\x00more"
"""The key an object ending in ``…`` gets: members not shown."""
TOKEN: Final = re.compile(r"^[A-Za-z0-9_-]{43}$")
STEP: Final = re.compile(r"^\*\*(\d+)\. ", re.M)
COMMENT: Final = re.compile(r'("(?:[^"\\]|\\.)*")|//[^\n]*|/\*.*?\*/', re.S)
"""A comment (dropped), or a string (kept: it may hold "//")."""


def section() -> str:
    text = GUIDE.read_text()
    start = text.index("### Worked example\n")
    return text[start : text.index("\n## ", start)]


def steps() -> dict[int, list[str]]:
    """Each numbered step's fenced JSON blocks, in order."""
    parts = STEP.split(section())
    return {
        int(number): re.findall(r"^```jsonc?\n(.*?)^```", body, re.M | re.S)
        for number, body in zip(parts[1::2], parts[2::2], strict=True)
    }


def parse(block: str) -> Json:
    """A guide's JSON block as an expectation (``ANY`` and ``MORE`` where it writes ``…``)."""
    code = COMMENT.sub(lambda m: m.group(1) or "", block)
    code = re.sub(r"\[\s*…\s*\]|\{\s*…\s*\}", lambda _: json.dumps(ANY), code)
    code = re.sub(r",\s*…\s*(?=[,}])", lambda _: f", {json.dumps(MORE)}: true", code)
    assert "…" not in code, f"an ellipsis the test cannot read:\n{code}"
    return json.loads(code)


def differences(expected: Json, actual: Json, path: str = "") -> Iterator[str]:
    if expected == ANY:
        return
    if isinstance(expected, dict) and isinstance(actual, dict):
        shown = {k: v for k, v in expected.items() if k != MORE}
        missing = set(shown) - set(actual)
        extra = set() if MORE in expected else set(actual) - set(shown)
        if missing or extra:
            yield f"{path}: missing {sorted(missing)}, not in the guide {sorted(extra)}"
        for key in set(shown) & set(actual):
            if key == "token":
                if not TOKEN.match(actual[key]):
                    yield f"{path}.token: {actual[key]!r} is no token"
            else:
                yield from differences(shown[key], actual[key], f"{path}.{key}")
    elif isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            yield f"{path}: {len(expected)} items in the guide, {len(actual)} in the response"
        for i, (e, a) in enumerate(zip(expected, actual, strict=False)):
            yield from differences(e, a, f"{path}[{i}]")
    elif expected != actual:
        yield f"{path}: the guide has {expected!r}, the server {actual!r}"


def check(step: int, block: str, actual: Json) -> None:
    found = list(differences(parse(block), actual))
    assert not found, f"worked example, step {step}:\n  " + "\n  ".join(found)


class Seats:
    """The match's stub and the seats' tokens."""

    def __init__(self, channel: grpc.Channel, created: Json) -> None:
        self.stub = basra_service_pb2_grpc.BasraServiceStub(channel)
        self.match_id: str = created["matchId"]
        self.tokens = {t.get("seat", 0): t["token"] for t in created["seatTokens"]}

    def metadata(self, seat: int) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.tokens[seat]}"),)

    def call(self, method: str, request: Json, seat: int) -> Json:
        message = json_format.ParseDict(request, getattr(pb, f"{method}Request")())
        response = getattr(self.stub, method)(
            message, metadata=self.metadata(seat), timeout=CALL_TIMEOUT_S
        )
        return json_format.MessageToDict(response)

    def greedy_until(self, version: int) -> Json:
        """Play greedily (seat 0 deals) until the match reaches ``version``; its response."""
        response: Json = None
        view = self.call("GetMatch", {"matchId": self.match_id}, 0)["view"]
        while int(view["version"]) < version:
            current = game_pb2.MatchView()
            json_format.ParseDict(view, current)
            if current.status == game_pb2.MATCH_STATUS_HAND_OVER:
                request: Json = {"matchId": self.match_id, "expectedVersion": view["version"]}
                response = self.call("Deal", request, 0)
            else:
                seat = current.to_play
                plans = self.stub.ListPlans(
                    pb.ListPlansRequest(match_id=self.match_id),
                    metadata=self.metadata(seat),
                    timeout=CALL_TIMEOUT_S,
                )
                card, plan_id = greedy_choice(plans.cards)
                play = pb.PlayRequest(
                    match_id=self.match_id,
                    card=card,
                    plan_id=plan_id,
                    expected_version=current.version,
                )
                response = json_format.MessageToDict(
                    self.stub.Play(play, metadata=self.metadata(seat), timeout=CALL_TIMEOUT_S)
                )
            view = response["view"]
        assert int(view["version"]) == version
        return response


def rejection(error: grpc.RpcError) -> Json:
    """The google.rpc.Status of a rejection, in the JSON mapping."""
    call: Any = error
    (details,) = [v for k, v in call.trailing_metadata() if k == DETAILS_KEY]
    return json_format.MessageToDict(status_pb2.Status.FromString(details))


@pytest.fixture(scope="module")
def seeded_server() -> Iterator[ServerThread]:
    """A server that takes seeds, as the example's was started."""
    server = ServerThread(Settings(metrics_port=None, allow_seeds=True))
    yield server
    server.stop()


def test_the_worked_example_is_what_the_server_answers(seeded_server: ServerThread) -> None:
    blocks = steps()
    assert sorted(blocks) == list(range(1, 11))
    stub = basra_service_pb2_grpc.BasraServiceStub(seeded_server.channel)

    # 1. The creation's response is complete: every field of it, tokens by shape.
    request = json_format.ParseDict(parse(blocks[1][0]), pb.CreateMatchRequest())
    created = json_format.MessageToDict(stub.CreateMatch(request, timeout=CALL_TIMEOUT_S))
    check(1, blocks[1][1], created)
    seats = Seats(seeded_server.channel, created)

    # 2, 3. Seat 1 joins and asks for the plans of a card.
    check(2, blocks[2][1], seats.call("GetMatch", parse(blocks[2][0]), 1))
    check(3, blocks[3][1], seats.call("ListPlans", parse(blocks[3][0]), 1))

    # 4. A play without a plan: the status and its details.
    with pytest.raises(grpc.RpcError) as refused:
        seats.call("Play", parse(blocks[4][0]), 1)
    check(4, blocks[4][1], rejection(refused.value))

    # 5, 6. The play, its retry, and seat 0's stream, opened after version 1.
    watch = pb.WatchMatchRequest(match_id=seats.match_id, after_version=1)
    stream: Any = stub.WatchMatch(watch, metadata=seats.metadata(0), timeout=CALL_TIMEOUT_S)
    played = seats.call("Play", parse(blocks[5][0]), 1)
    check(5, blocks[5][1], played)
    assert seats.call("Play", parse(blocks[5][0]), 1) == played  # the same request: replayed
    check(6, blocks[6][0], json_format.MessageToDict(next(stream)))
    stream.cancel()

    # 7 to 10. The greedy plays to the end of hand 1, hand 2's deal, the deciding play, scores.
    check(7, blocks[7][0], seats.greedy_until(49))
    check(8, blocks[8][1], seats.call("Deal", parse(blocks[8][0]), 0))
    decided = seats.greedy_until(147)
    check(9, blocks[9][0], decided)
    # "Both streams deliver these four events and then end with status OK."
    for seat in (0, 1):
        watch = pb.WatchMatchRequest(match_id=seats.match_id, after_version=146)
        final = stub.WatchMatch(watch, metadata=seats.metadata(seat), timeout=CALL_TIMEOUT_S)
        events = [json_format.MessageToDict(message.event) for message in final]
        assert [next(iter(e.keys() - {"version", "versionComplete"})) for e in events] == [
            "cardPlayed",
            "floorCollected",
            "handScored",
            "matchEnded",
        ]
        assert events == decided["events"]
    check(10, blocks[10][0], seats.call("Score", {"matchId": seats.match_id}, 1))


def test_an_ellipsis_leaves_out_only_what_it_stands_for() -> None:
    expectation = parse('{"a": [1, 2], "b": […], "c": {"d": 1, …}}  // a comment')
    assert parse('{"a": 1, …, "b": 2}') == {"a": 1, MORE: True, "b": 2}
    assert not list(differences(expectation, {"a": [1, 2], "b": 7, "c": {"d": 1, "e": 2}}))
    assert list(differences(expectation, {"a": [1, 2], "b": 7, "c": {"d": 2}}))
    assert list(differences(expectation, {"a": [1], "b": 7, "c": {"d": 1}}))
    assert list(differences(parse('{"a": 1}'), {"a": 1, "b": 2}))
