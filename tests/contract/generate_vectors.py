"""Write the golden vectors by running each scenario against the real Python server.

    .venv/bin/python -m tests.contract.generate_vectors [NAME ...]

Each scenario below is a script of requests; the expected responses and errors are what the
server answered, recorded in the Protobuf JSON mapping with the values no seed decides (match
id, seat tokens, retry delays) turned into placeholders (see ``golden``). Every vector written
is then replayed on a fresh server, as the tests do. Review the diff before committing: a vector
is only as right as the server that recorded it. The seeded matches the rare scenarios need come
from ``search_results.json`` (``search_seeds``).
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from google.protobuf import json_format
from google.protobuf.message import Message

from basra.client.match import card_pb, to_card
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import game_pb2
from tests.contract import golden
from tests.contract.golden import Json, Outcome
from tests.support import RedisProcess, ServerThread, free_port

SEARCH: Final = golden.HERE / "search_results.json"
UNKNOWN_MATCH: Final = "AAAAAAAAAAAAAAAAAAAAAA"
WRONG_TOKEN: Final = "B" * 43
API_KEY: Final = "contract-test-key"
Keep = str | tuple[str, ...]
"""What a step's expectation pins: "full", "version", or top-level response fields."""


def card(token: str) -> Json:
    """A card in the JSON mapping, from its short name ("10D")."""
    return golden.to_json(card_pb(token))


class Recorder:
    """Runs one scenario's requests on a server and records them as a vector's steps."""

    def __init__(self, target: ServerThread) -> None:
        self.session = golden.Session(target.channel)
        self.steps: list[Json] = []
        self.secrets: dict[str, str] = {}  # value -> placeholder
        self.view = game_pb2.MatchView()

    # -- recording ----------------------------------------------------------------------------

    def call(
        self,
        rpc: str,
        request: Json,
        *,
        seat: int | None = None,
        metadata: dict[str, str] | None = None,
        keep: Keep = "full",
        take: int = 0,
        to_end: bool = False,
        note: str | None = None,
    ) -> Message | None:
        """Make a call, record it as a step, and return the response (None for an error)."""
        step: Json = {"rpc": rpc}
        if note:
            step["note"] = note
        if seat is not None:
            step["seat"] = seat
        if metadata:
            step["metadata"] = metadata
        step["request"] = request
        if rpc == "WatchMatch":
            step["expect"] = {"stream": [None] * take, "ends": to_end}
        else:
            step["expect"] = {}
        outcome = self.session.perform(step)
        if (
            rpc in ("Deal", "CreateMatch")
            and outcome.response
            and outcome.response.get("seatTokens")
        ):
            self._learn(outcome.response)
        if rpc in ("CreateWatchToken", "RevokeWatchTokens") and outcome.response:
            self._learn_watch_token(outcome.response["watchToken"], seat)
        if outcome.response:
            self._learn_seats(rpc, outcome.response)
        step["expect"] = self._expectation(rpc, outcome, keep)
        problems = self.session.check(step, outcome)
        assert not problems, problems
        self.steps.append(step)
        if outcome.response is None:
            return None
        response: Message = getattr(pb, f"{rpc}Response")()
        json_format.ParseDict(outcome.response, response)
        view = getattr(response, "view", None)
        if isinstance(view, game_pb2.MatchView) and response.HasField("view"):
            self.view = view
        return response

    def _learn(self, response: Json) -> None:
        """A match was created: its id and tokens become placeholders from now on."""
        self.secrets[response["matchId"]] = "{{match_id}}"
        for token in response["seatTokens"]:
            self.secrets[token["token"]] = f"{{{{token:{token.get('seat', 0)}}}}}"

    def _learn_watch_token(self, token: str, seat: int | None) -> None:
        """Seat 0's first watch token is {{token:watch0}}, a newer one (after a revocation)
        {{token:watch0-2}}, and so on."""
        self._learn_secret(token, f"watch{seat}")

    def _learn_seats(self, rpc: str, response: Json) -> None:
        """Invitations and claimed seat tokens become placeholders: seat 1's invitation is
        {{token:invitation1}} (a reissued one {{token:invitation1-2}}), the token its claim
        answers {{token:1}} (after a reissue and a new claim, {{token:1-2}})."""
        invitations = response.get("invitations", []) if rpc == "CreateMatch" else []
        if rpc == "ReissueInvitation":
            invitations = [response["invitation"]]
        for invitation in invitations:
            self._learn_secret(invitation["code"], f"invitation{invitation.get('seat', 0)}")
        if rpc == "ClaimSeat":
            claimed = response["seatToken"]
            self._learn_secret(claimed["token"], str(claimed.get("seat", 0)))

    def _learn_secret(self, value: str, base: str) -> None:
        """``value`` is {{token:<base>}}, or the next generation not taken yet."""
        if value in self.secrets:
            return
        names = set(self.secrets.values())
        name, generation = f"{{{{token:{base}}}}}", 1
        while name in names:
            generation += 1
            name = f"{{{{token:{base}-{generation}}}}}"
        self.secrets[value] = name

    def _abstract(self, value: Json) -> Json:
        if isinstance(value, dict):
            return {
                # Presence: whether a stream of the seat is open right now (golden's docstring).
                k: "{{presence}}" if k == "connected" else self._abstract(v)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self._abstract(v) for v in value]
        if isinstance(value, str):
            return self.secrets.get(value, value)
        return value

    def _expectation(self, rpc: str, outcome: Outcome, keep: Keep) -> Json:
        expect: Json = {}
        if outcome.stream is not None:
            expect["stream"] = self._abstract(outcome.stream)
            if outcome.ends:
                expect["ends"] = True
        if outcome.error is not None:
            error = self._abstract(outcome.error)
            if "retry_after_s" in error["metadata"]:
                error["metadata"]["retry_after_s"] = "{{seconds}}"
            if "retryInfo" in error:
                error["retryInfo"]["retryDelay"] = "{{duration}}"
            expect["error"] = error
            return expect
        if outcome.stream is not None:
            return expect
        response = self._abstract(outcome.response)
        if keep == "full":
            expect["response"] = response
            return expect
        fields = () if keep == "version" else keep
        if "seatTokens" in response:  # a creation: bind the match id and the tokens
            fields = ("matchId", "seatTokens", *fields)
        partial = {k: response[k] for k in fields if k in response}
        if rpc in ("ListPlans", "Score"):
            partial["version"] = response["version"]
        else:
            partial.setdefault("view", {})["version"] = response["view"]["version"]
        expect["partial"] = partial
        return expect

    # -- the calls a scenario makes -------------------------------------------------------------

    def create(
        self, seed: int | None, *, name: str = "create", keep: Keep = "full", note: str = ""
    ) -> pb.DealResponse:
        request: Json = {"requestId": f"{{{{request_id:{name}}}}}"}
        if seed is not None:
            request["seed"] = str(seed)
        response = self.call("Deal", request, keep=keep, note=note or None)
        assert isinstance(response, pb.DealResponse)
        return response

    def create_match(
        self,
        rules: str,
        seats: int,
        seed: int,
        *,
        keep: Keep = "full",
        note: str = "",
        **more: Json,
    ) -> pb.CreateMatchResponse:
        request: Json = {
            "rules": rules,
            "seats": seats,
            "seed": str(seed),
            "requestId": "{{request_id:create}}",
            **more,
        }
        response = self.call("CreateMatch", request, keep=keep, note=note or None)
        assert isinstance(response, pb.CreateMatchResponse)
        return response

    def plans(
        self, seat: int, token: str | None = None, keep: Keep = "full"
    ) -> pb.ListPlansResponse:
        request: Json = {"matchId": "{{match_id}}"}
        if token:
            request["card"] = card(token)
        response = self.call("ListPlans", request, seat=seat, keep=keep)
        assert isinstance(response, pb.ListPlansResponse)
        return response

    def play(
        self, seat: int, token: str, plan_id: int = 0, *, keep: Keep = "full", **extra: Json
    ) -> pb.PlayResponse:
        request: Json = {"matchId": "{{match_id}}", "card": card(token)}
        if plan_id:
            request["planId"] = plan_id
        request.update(extra)
        response = self.call("Play", request, seat=seat, keep=keep)
        assert isinstance(response, pb.PlayResponse), f"{token} {plan_id} was rejected"
        return response

    def deal(self, seat: int, *, keep: Keep = "full", **extra: Json) -> pb.DealResponse:
        response = self.call("Deal", {"matchId": "{{match_id}}", **extra}, seat=seat, keep=keep)
        assert isinstance(response, pb.DealResponse)
        return response

    def reject(
        self,
        rpc: str,
        request: Json,
        reason: str,
        *,
        seat: int | None = None,
        metadata: dict[str, str] | None = None,
        note: str | None = None,
    ) -> Json:
        """A call that must be rejected with ``reason``; returns the recorded error."""
        take_error = rpc == "WatchMatch"
        self.call(rpc, request, seat=seat, metadata=metadata, note=note, to_end=take_error)
        error = self.steps[-1]["expect"].get("error")
        assert error, f"expected {reason}, got {self.steps[-1]['expect']}"
        assert error["reason"] == reason, error
        return error

    def first_choice(self) -> tuple[int, str, int]:
        """The shared deterministic policy: the seat to move plays ListPlans' first card with
        its plan 1 (or trails it), as ``policy.play_first_choice`` does."""
        seat = self.view.to_play
        option = self.plans(seat, keep="version").cards[0]
        return seat, str(to_card(option.card)), option.plans[0].id if option.plans else 0


# -- Scenarios --------------------------------------------------------------------------------


Scenario = Callable[[Recorder], None]
SCENARIOS: dict[str, tuple[Json, str, Scenario]] = {}
SEEDED: Final = {"allow_seeds": True}


def scenario(server: Json, description: str) -> Callable[[Scenario], Scenario]:
    def register(build: Scenario) -> Scenario:
        SCENARIOS[build.__name__] = (server, description, build)
        return build

    return register


def searched(name: str) -> Json:
    results: Json = json.loads(SEARCH.read_text())
    return results[name]


@scenario(
    {"store": "redis", "settings": SEEDED},
    "One complete hand, every response pinned: creation and its idempotent retry, both seats' "
    "views, the plans, all 48 plays (a basra, a plan other than 1, a jack sweep, the seven of "
    "diamonds, trails), the scoring, the event stream, and the next hand's deal. Also "
    "HAND_IN_PROGRESS before the hand ends and HAND_OVER after.",
)
def full_hand(rec: Recorder) -> None:
    found = searched("showcase")
    rec.create(found["seed"], note="create the match: seat 0's view")
    rec.create(found["seed"], note="a retry with the same request_id returns the same tokens")
    rec.call("GetMatch", {"matchId": "{{match_id}}"}, seat=0)
    rec.call("GetMatch", {"matchId": "{{match_id}}"}, seat=1)
    rec.reject(
        "Deal", {"matchId": "{{match_id}}"}, "HAND_IN_PROGRESS", seat=0, note="no next hand yet"
    )
    events = 1  # HandStarted
    for index, (seat, token, plan_id) in enumerate(found["plays"]):
        if index < 8:
            rec.plans(seat)
        if index == 0:
            rec.plans(seat, token)
        version = rec.view.version
        extra: Json = {"expectedVersion": str(version), "requestId": f"play-{index + 1}"}
        played = rec.play(seat, token, plan_id, **extra)
        events += len(played.events)
    last = rec.view.version
    rec.reject("Play", {"matchId": "{{match_id}}", "card": card("AC")}, "HAND_OVER", seat=0)
    rec.call("Score", {"matchId": "{{match_id}}"}, seat=1)
    rec.call("GetMatch", {"matchId": "{{match_id}}"}, seat=1)
    rec.call(
        "WatchMatch",
        {"matchId": "{{match_id}}"},
        seat=1,
        take=events,
        note="every event of the hand as seat 1 sees it (its own dealt cards)",
    )
    rec.call(
        "WatchMatch",
        {"matchId": "{{match_id}}", "afterVersion": str(last - 1)},
        seat=0,
        take=len(played.events),
        note="resume after a version: the last play's events (the play, the floor, the scoring)",
    )
    rec.deal(1, expectedVersion=str(last), requestId="deal-2")
    rec.plans(rec.view.turn)


@scenario(
    {"store": "redis", "settings": SEEDED},
    "INVALID_ARGUMENT (BadRequest names the field) and INVALID_CARD for malformed requests.",
)
def errors_malformed(rec: Recorder) -> None:
    rec.create(11)
    mid = "{{match_id}}"
    two = card("2C")
    cases: list[tuple[str, Json, str, str]] = [
        ("Play", {"matchId": mid, "card": two, "planId": -1}, "INVALID_ARGUMENT", "plan id -1"),
        ("Play", {"matchId": mid, "card": two, "planId": 1, "trail": True}, "INVALID_ARGUMENT", ""),
        ("Play", {"matchId": mid, "card": two, "requestId": "a b"}, "INVALID_ARGUMENT", ""),
        ("Play", {"matchId": mid, "card": two, "requestId": "x" * 129}, "INVALID_ARGUMENT", ""),
        ("Play", {"matchId": mid, "card": two, "expectedVersion": "0"}, "INVALID_ARGUMENT", ""),
        ("Deal", {"matchId": mid, "seed": "3"}, "INVALID_ARGUMENT", "seed on a next hand"),
        ("GetMatch", {"matchId": "short"}, "INVALID_ARGUMENT", "malformed match id"),
        ("Score", {"matchId": "bad id with spaces!!"}, "INVALID_ARGUMENT", ""),
        ("WatchMatch", {"matchId": mid, "afterVersion": "-1"}, "INVALID_ARGUMENT", ""),
        ("WatchMatch", {"matchId": mid, "afterVersion": "999"}, "VERSION_AHEAD", "future"),
        ("Play", {"matchId": mid}, "INVALID_CARD", "no card"),
        ("Play", {"matchId": mid, "card": {"rank": "RANK_TEN"}}, "INVALID_CARD", "no suit"),
        ("Play", {"matchId": mid, "card": {"rank": 99, "suit": "SUIT_CLUBS"}}, "INVALID_CARD", ""),
        ("ListPlans", {"matchId": mid, "card": {"suit": "SUIT_HEARTS"}}, "INVALID_CARD", ""),
    ]
    for rpc, request, reason, note in cases:
        rec.reject(rpc, request, reason, seat=0, note=note or None)
    for request, note in [
        ({"seat": 2, "requestId": "{{request_id:seat}}"}, "seat 2 does not exist"),
        ({"expectedVersion": "1", "requestId": "{{request_id:version}}"}, ""),
        ({"requestId": "short"}, "a creating request_id guards the tokens: a random UUID"),
        ({"requestId": "lobby-room-000042"}, "a guessable creating request_id"),
    ]:
        rec.reject("Deal", request, "INVALID_ARGUMENT", note=note or None)
    rec.call("GetMatch", {"matchId": mid}, seat=0, keep="version", note="still at version 1")


@scenario(
    {"store": "redis", "settings": SEEDED},
    "TOKEN_MISSING and TOKEN_INVALID on every kind of call of an existing match.",
)
def errors_auth(rec: Recorder) -> None:
    rec.create(12)
    mid = "{{match_id}}"
    calls: list[tuple[str, Json]] = [
        ("GetMatch", {"matchId": mid}),
        ("Play", {"matchId": mid, "card": card("2C")}),
        ("Deal", {"matchId": mid}),
        ("ListPlans", {"matchId": mid}),
        ("Score", {"matchId": mid}),
        ("WatchMatch", {"matchId": mid}),
    ]
    for rpc, request in calls:
        rec.reject(rpc, request, "TOKEN_MISSING", note="no authorization metadata")
        rec.reject(
            rpc,
            request,
            "TOKEN_INVALID",
            metadata={"authorization": f"Bearer {WRONG_TOKEN}"},
            note="not a token of this match",
        )
    for value in ["Basic abc", "Bearer ", "{{token:0}}"]:
        rec.reject(
            "GetMatch",
            {"matchId": mid},
            "TOKEN_MISSING",
            metadata={"authorization": value},
            note="not 'Bearer <token>'",
        )


@scenario(
    {"store": "redis", "settings": {**SEEDED, "api_key": API_KEY}},
    "A server that requires an API key to create matches: API_KEY_MISSING, API_KEY_INVALID.",
)
def errors_api_key(rec: Recorder) -> None:
    request = {"seed": "13", "requestId": "{{request_id:create}}"}
    rec.reject("Deal", request, "API_KEY_MISSING")
    rec.reject("Deal", request, "API_KEY_INVALID", metadata={"x-api-key": "wrong"})
    rec.call("Deal", request, metadata={"x-api-key": API_KEY}, note="the right key")
    rec.call("GetMatch", {"matchId": "{{match_id}}"}, seat=1, note="seat calls need no API key")


@scenario(
    {"store": "redis", "settings": {"allow_seeds": False}},
    "A server that draws its own seeds (production): SEEDS_DISABLED, then a creation without one.",
)
def errors_seeds_disabled(rec: Recorder) -> None:
    rec.reject("Deal", {"seed": "14", "requestId": "{{request_id:seeded}}"}, "SEEDS_DISABLED")
    rec.create(None, keep=("matchId",), note="no seed: a random deal, so only its version")


@scenario(
    {"store": "redis", "settings": SEEDED},
    "Spectators: CreateWatchToken (a retry returns the same token, each seat has its own); the "
    "watch token reads GetMatch (spectator view, no hand), Score and WatchMatch (no dealt "
    "cards) and is refused WATCH_TOKEN_READ_ONLY by Play, ListPlans, Deal, CreateWatchToken and "
    "RevokeWatchTokens. RevokeWatchTokens ends both seats' watch tokens (TOKEN_INVALID from "
    "then on) and answers the caller's new one, which CreateWatchToken then returns; a retry "
    "revokes again.",
)
def spectator(rec: Recorder) -> None:
    rec.create(17)
    mid = "{{match_id}}"
    rec.call("CreateWatchToken", {"matchId": mid}, seat=0)
    rec.call("CreateWatchToken", {"matchId": mid}, seat=0, note="a retry: the same token")
    rec.call("CreateWatchToken", {"matchId": mid}, seat=1, note="seat 1's own watch token")
    watcher = {"authorization": "Bearer {{token:watch0}}"}
    seat, token, plan_id = rec.first_choice()
    rec.play(seat, token, plan_id)
    rec.call("GetMatch", {"matchId": mid}, metadata=watcher, note="the public view")
    rec.call("Score", {"matchId": mid}, metadata=watcher)
    rec.call("WatchMatch", {"matchId": mid}, metadata=watcher, take=2, note="public events only")
    for rpc, request in [
        ("Play", {"matchId": mid, "card": card(token)}),
        ("ListPlans", {"matchId": mid}),
        ("Deal", {"matchId": mid}),
        ("CreateWatchToken", {"matchId": mid}),
        ("RevokeWatchTokens", {"matchId": mid}),
    ]:
        rec.reject(rpc, request, "WATCH_TOKEN_READ_ONLY", metadata=watcher)
    rec.call("GetMatch", {"matchId": mid}, seat=0, keep="version", note="nothing changed")
    rec.call("RevokeWatchTokens", {"matchId": mid}, seat=1, note="seat 1's new watch token")
    for old in ("watch0", "watch1"):
        revoked = {"authorization": f"Bearer {{{{token:{old}}}}}"}
        rec.reject("GetMatch", {"matchId": mid}, "TOKEN_INVALID", metadata=revoked)
    fresh = {"authorization": "Bearer {{token:watch1-2}}"}
    rec.call("GetMatch", {"matchId": mid}, metadata=fresh, keep="version", note="it reads")
    rec.call("CreateWatchToken", {"matchId": mid}, seat=1, note="the same new token")
    rec.call("CreateWatchToken", {"matchId": mid}, seat=0, note="seat 0's new watch token")
    rec.call("RevokeWatchTokens", {"matchId": mid}, seat=1, note="a retry: revoked again")
    rec.reject("GetMatch", {"matchId": mid}, "TOKEN_INVALID", metadata=fresh)


@scenario(
    {"store": "embedded", "settings": SEEDED},
    "MATCH_NOT_FOUND on a well-formed id nobody created (on the embedded store).",
)
def errors_match_not_found(rec: Recorder) -> None:
    auth = {"authorization": f"Bearer {WRONG_TOKEN}"}
    for rpc, request in [
        ("GetMatch", {"matchId": UNKNOWN_MATCH}),
        ("Play", {"matchId": UNKNOWN_MATCH, "card": card("2C")}),
        ("Deal", {"matchId": UNKNOWN_MATCH}),
        ("WatchMatch", {"matchId": UNKNOWN_MATCH}),
    ]:
        rec.reject(rpc, request, "MATCH_NOT_FOUND", metadata=auth)


@scenario(
    {"store": "redis", "settings": SEEDED},
    "request_id: retries return the original response; REQUEST_ID_REUSED for another request.",
)
def errors_idempotency(rec: Recorder) -> None:
    rec.create(15)
    rec.create(15, note="the same creation again: the original response, tokens included")
    rec.reject(
        "Deal",
        {"seed": "16", "requestId": "{{request_id:create}}"},
        "REQUEST_ID_REUSED",
        note="the creating request_id with another seed",
    )
    seat = rec.view.turn
    first, second = rec.plans(seat, keep="version").cards[:2]
    plan_id = first.plans[0].id if first.plans else 0
    rec.play(seat, str(to_card(first.card)), plan_id, requestId="p-1")
    played = rec.steps[-1]["request"]
    rec.call("Play", played, seat=seat, note="a retry: the original response, version unchanged")
    other, token, plan_id = rec.first_choice()
    rec.play(other, token, plan_id, keep="version", requestId="p-2")
    rec.call("Play", played, seat=seat, note="still answered after the match moved on")
    rec.reject(
        "Play",
        {**played, "card": golden.to_json(second.card)},
        "REQUEST_ID_REUSED",
        seat=seat,
        note="the same request_id for another card",
    )
    rec.call("GetMatch", {"matchId": "{{match_id}}"}, seat=seat, keep="version")


@scenario(
    {"store": "redis", "settings": SEEDED},
    "Plays illegal now: NOT_YOUR_TURN, CARD_NOT_IN_HAND, VERSION_MISMATCH, and with a card of "
    "several plans PLAN_REQUIRED, UNKNOWN_PLAN and CAPTURE_REQUIRED; UNKNOWN_PLAN for a card "
    "that trails. Plays follow the first-choice policy until such a card is in hand.",
)
def errors_turns_and_plans(rec: Recorder) -> None:
    rec.create(19, keep="version")
    mid = "{{match_id}}"
    seat = rec.view.turn
    other = 1 - seat
    theirs = rec.call("GetMatch", {"matchId": mid}, seat=other)
    assert isinstance(theirs, pb.GetMatchResponse)
    their_card = str(to_card(theirs.view.hand[0]))
    rec.reject("Play", {"matchId": mid, "card": card(their_card)}, "NOT_YOUR_TURN", seat=other)
    rec.reject("Play", {"matchId": mid, "card": card(their_card)}, "CARD_NOT_IN_HAND", seat=seat)
    rec.reject(
        "ListPlans", {"matchId": mid, "card": card(their_card)}, "CARD_NOT_IN_HAND", seat=seat
    )
    stale = str(rec.view.version)
    rec.play(*rec.first_choice(), keep="version", expectedVersion=stale)
    seat, token, _ = rec.first_choice()
    rec.reject(
        "Play",
        {"matchId": mid, "card": card(token), "expectedVersion": stale},
        "VERSION_MISMATCH",
        seat=seat,
    )
    need = {"several": True, "trails": True}
    for _ in range(48):
        seat = rec.view.turn
        options = rec.plans(seat, keep="version").cards
        several = next((o for o in options if len(o.plans) >= 2), None) if need["several"] else None
        trails = next((o for o in options if o.trails), None) if need["trails"] else None
        if several or trails:
            rec.steps.pop()  # pin this ListPlans whole: the rejections below follow from it
            rec.plans(seat)
        if several:
            token, count = str(to_card(several.card)), len(several.plans)
            request = {"matchId": mid, "card": card(token)}
            rec.reject("Play", request, "PLAN_REQUIRED", seat=seat)
            rec.reject("Play", {**request, "planId": count + 1}, "UNKNOWN_PLAN", seat=seat)
            rec.reject("Play", {**request, "trail": True}, "CAPTURE_REQUIRED", seat=seat)
            need["several"] = False
        if trails:
            token = str(to_card(trails.card))
            request = {"matchId": mid, "card": card(token), "planId": 1}
            rec.reject("Play", request, "UNKNOWN_PLAN", seat=seat, note="a card that trails")
            need["trails"] = False
        if not any(need.values()):
            rec.call("GetMatch", {"matchId": mid}, seat=seat, note="rejections changed nothing")
            return
        first = options[0]
        rec.play(
            seat, str(to_card(first.card)), first.plans[0].id if first.plans else 0, keep="version"
        )
    raise AssertionError("no card with several plans or none came up: pick another seed")


@scenario(
    {"store": "redis", "settings": {**SEEDED, "events_maxlen": 10}},
    "A server keeping 10 event entries per match: resuming WatchMatch inside them works, "
    "before them is HISTORY_TRIMMED (OUT_OF_RANGE).",
)
def errors_history_trimmed(rec: Recorder) -> None:
    rec.create(18, keep="version")
    for _ in range(14):
        rec.play(*rec.first_choice(), keep="version")
    current = rec.view.version
    rec.reject(
        "WatchMatch", {"matchId": "{{match_id}}", "afterVersion": "1"}, "HISTORY_TRIMMED", seat=0
    )
    rec.call(
        "WatchMatch",
        {"matchId": "{{match_id}}", "afterVersion": str(current - 2)},
        seat=0,
        take=2,
        note="the last two versions are kept",
    )


@scenario(
    {"store": "redis", "settings": {**SEEDED, "create_rate": 0.001, "create_burst": 1}},
    "A server allowing one creation now and the next in 1000 s: RATE_LIMITED with RetryInfo.",
)
def errors_rate_limited(rec: Recorder) -> None:
    rec.create(21, keep="version", note="the burst of one")
    rec.reject("Deal", {"seed": "21", "requestId": "{{request_id:second}}"}, "RATE_LIMITED")


@scenario(
    {"store": "unreachable", "settings": {**SEEDED, "store_timeout_s": 0.5}},
    "A server whose Redis does not answer: STORE_UNAVAILABLE (UNAVAILABLE), retry later.",
)
def errors_store_unavailable(rec: Recorder) -> None:
    rec.reject("Deal", {"seed": "20", "requestId": "{{request_id:create}}"}, "STORE_UNAVAILABLE")
    auth = {"authorization": f"Bearer {WRONG_TOKEN}"}
    rec.reject("GetMatch", {"matchId": UNKNOWN_MATCH}, "STORE_UNAVAILABLE", metadata=auth)


def play_searched(rec: Recorder, found: Json, key_steps: Callable[[int], bool]) -> None:
    """Play a searched match on the server: a deal whenever a hand is over; pins each hand's
    last play, each deal and ``key_steps(play index)`` fully, other plays by version."""
    plays = found["plays"]
    for index, (seat, token, plan_id) in enumerate(plays):
        if rec.view.status == game_pb2.MATCH_STATUS_HAND_OVER:
            rec.call("Score", {"matchId": "{{match_id}}"}, seat=0, note="between hands")
            rec.deal(rec.view.dealer, keep="full", requestId=f"deal-{rec.view.hand_number + 1}")
        ends_hand = rec.view.plays_left == 1
        keep: Keep = "full" if ends_hand or key_steps(index) else "version"
        rec.play(seat, token, plan_id, keep=keep)


@scenario(
    {"store": "redis", "settings": SEEDED},
    "A 26/26 hand: no majority, 30 points carried; the next hand's majority takes them.",
)
def carry_26_26(rec: Recorder) -> None:
    found = searched("carry")
    rec.create(found["seed"], keep="full")
    play_searched(rec, found, lambda index: False)
    score = rec.call("Score", {"matchId": "{{match_id}}"}, seat=1)
    assert isinstance(score, pb.ScoreResponse)
    first, second = score.scoreboard.hands[:2]
    assert [s.cards for s in first.seats] == [26, 26]
    assert first.carry_after == 30
    assert sorted(s.carry for s in second.seats) == [0, 30]
    assert second.carry_after == 0


@scenario(
    {"store": "redis", "settings": SEEDED},
    "Totals tied at 121 after hand 4: no winner, an extra normal hand, which decides the match. "
    "Then MATCH_OVER, and a WatchMatch that the server ends after the last event.",
)
def tie_121(rec: Recorder) -> None:
    found = searched("tie")
    rec.create(found["seed"], keep="full")
    play_searched(rec, found, lambda index: False)
    score = rec.call("Score", {"matchId": "{{match_id}}"}, seat=0)
    assert isinstance(score, pb.ScoreResponse)
    totals = [0, 0]
    after: list[list[int]] = []
    for hand in score.scoreboard.hands:
        totals = [t + s.total for t, s in zip(totals, hand.seats, strict=True)]
        after.append(totals)
    assert any(a == b >= 121 for a, b in after[:-1]), after
    assert score.scoreboard.HasField("winner")
    rec.call("GetMatch", {"matchId": "{{match_id}}"}, seat=1)
    mid = "{{match_id}}"
    rec.reject("Play", {"matchId": mid, "card": card("AC")}, "MATCH_OVER", seat=0)
    rec.reject("Deal", {"matchId": mid}, "MATCH_OVER", seat=1)
    last = rec.view.version
    rec.call(
        "WatchMatch",
        {"matchId": mid, "afterVersion": str(last - 1)},
        seat=1,
        take=4,
        to_end=True,
        note="the last play, the floor, the scoring and the end; then the server ends the stream",
    )


@scenario(
    {"store": "embedded", "settings": {}},
    "ListRules: every rule system with its seat counts, sides, target, deals, scoring table, 7D "
    "rule in words, seating direction and source; no token or API key needed.",
)
def list_rules(rec: Recorder) -> None:
    rec.call("ListRules", {})


@scenario(
    {"store": "redis", "settings": SEEDED},
    "CreateMatch rejections: UNKNOWN_RULES, SEATS_NOT_ALLOWED, OPTION_NOT_AVAILABLE (each "
    "INVALID_ARGUMENT naming its field) and a seat beyond the seat count. None creates anything: "
    "the same request_id then creates a new match.",
)
def errors_rules(rec: Recorder) -> None:
    create = "{{request_id:create}}"
    cases: list[tuple[Json, str, str]] = [
        ({"rules": "lebanese", "seats": 2}, "UNKNOWN_RULES", "not a profile: no source"),
        ({"rules": "ERAM"}, "UNKNOWN_RULES", "names are lower case"),
        ({"rules": "egyptian", "seats": 3}, "SEATS_NOT_ALLOWED", "2 or 4"),
        ({"rules": "persian-partnership", "seats": 2}, "SEATS_NOT_ALLOWED", "4 only"),
        ({"rules": "eram", "seats": 4}, "SEATS_NOT_ALLOWED", "2 only"),
        ({"rules": "persian", "seats": 3, "options": {"rubber": True}}, "OPTION_NOT_AVAILABLE", ""),
        (
            {"rules": "egyptian", "seats": 4, "options": {"bottomCardShown": True}},
            "OPTION_NOT_AVAILABLE",
            "2 seats only",
        ),
        (
            {"rules": "lobashev", "seats": 2, "options": {"rubber": True}},
            "OPTION_NOT_AVAILABLE",
            "",
        ),
        ({"rules": "persian", "seats": 4, "seat": 4}, "INVALID_ARGUMENT", "seats are 0..3"),
    ]
    for request, reason, note in cases:
        rec.reject(
            "CreateMatch", {**request, "seed": "5", "requestId": create}, reason, note=note or None
        )
    rec.create_match(
        "persian", 3, 5, note="the same request_id: nothing was created by the rejected calls"
    )


@scenario(
    {"store": "redis", "settings": SEEDED},
    "A whole 4-seat partnership match (egyptian, seats 0+2 against 1+3) created by CreateMatch, "
    "played to its end with the first-choice policy: each seat's view at the start, every hand's "
    "last play, every deal (by the seat next_dealer names) and the final scoreboard pinned whole, "
    "the other plays by version; then each seat's stream of the last version.",
)
def partnership_match(rec: Recorder) -> None:
    rec.create_match("egyptian", 4, 44, note="seat 0's view and the four tokens")
    for seat in (1, 2, 3):
        rec.call("GetMatch", {"matchId": "{{match_id}}"}, seat=seat, note="only its own hand")
    while rec.view.status != game_pb2.MATCH_STATUS_MATCH_OVER:
        if rec.view.status == game_pb2.MATCH_STATUS_HAND_OVER:
            rec.call("Score", {"matchId": "{{match_id}}"}, seat=0, note="between hands")
            rec.deal(rec.view.next_dealer, requestId=f"deal-{rec.view.hand_number + 1}")
            continue
        keep: Keep = "full" if rec.view.plays_left == 1 else "version"
        rec.play(*rec.first_choice(), keep=keep)
    rec.call("Score", {"matchId": "{{match_id}}"}, seat=3)
    last = rec.view.version
    for seat in range(4):
        rec.call(
            "WatchMatch",
            {"matchId": "{{match_id}}", "afterVersion": str(last - 1)},
            seat=seat,
            take=4,
            to_end=True,
            note="the last play, the floor, the scoring and the end; then the stream ends",
        )


@scenario(
    {"store": "redis", "settings": SEEDED},
    "Invitations claimed once (egyptian, 4 seats, seat 2 a greedy bot that never gets its turn "
    "here): CreateMatch with invitations gives the creator its own token and an invitation per "
    "other person seat, none for the bot; ClaimSeat exchanges one for its seat's token once (its "
    "retry with the same request_id answers the same token; INVITATION_CLAIMED, "
    "REQUEST_ID_REUSED, DISPLAY_NAME_INVALID, INVITATION_INVALID); ReissueInvitation by the "
    "creator revokes the claimant's token (NOT_MATCH_CREATOR for another seat, INVALID_ARGUMENT "
    "for the bot); every seat's view shows the names and claims, each change a SeatChanged "
    "version on the stream. `connected` is presence, checked by type only.",
)
def invitations(rec: Recorder) -> None:
    mid = "{{match_id}}"
    person, greedy = "BOT_LEVEL_UNSPECIFIED", "BOT_LEVEL_GREEDY"
    created = rec.create_match(
        "egyptian",
        4,
        31,
        bots=[person, person, greedy, person],
        invitations=True,
        displayName="  Host ",
        note="the creator's token, invitations for seats 1 and 3; the name trimmed",
    )
    assert created.view.to_play != 2, "the bot must not be first to play: pick another seed"
    assert [i.seat for i in created.invitations] == [1, 3]
    claim: Json = {
        "matchId": mid,
        "invitation": "{{token:invitation1}}",
        "displayName": "Le\u00efla",
        "requestId": "{{request_id:claim1}}",
    }
    rec.call("ClaimSeat", claim, note="no token needed: the invitation is the credential")
    rec.call("ClaimSeat", claim, note="the same claim again: the same token, no new version")
    rec.reject(
        "ClaimSeat",
        {**claim, "displayName": "Mallory", "requestId": "{{request_id:mallory}}"},
        "INVITATION_CLAIMED",
        note="someone else with the same invitation",
    )
    rec.reject(
        "ClaimSeat",
        {**claim, "displayName": "Other"},
        "REQUEST_ID_REUSED",
        note="the claim's request_id with another name is no retry",
    )
    seat3: Json = {"matchId": mid, "invitation": "{{token:invitation3}}"}
    rec.reject(
        "ClaimSeat",
        {**seat3, "displayName": "evil\u202egnp"},
        "DISPLAY_NAME_INVALID",
        note="a right-to-left override",
    )
    rec.reject("ClaimSeat", {**seat3, "displayName": "   "}, "DISPLAY_NAME_INVALID", note="blank")
    rec.reject(
        "ClaimSeat",
        {"matchId": mid, "invitation": "C" * 43, "displayName": "Eve"},
        "INVITATION_INVALID",
    )
    rec.reject(
        "ReissueInvitation",
        {"matchId": mid, "seat": 3},
        "NOT_MATCH_CREATOR",
        seat=1,
        note="only the creator's seat reissues",
    )
    rec.reject(
        "ReissueInvitation", {"matchId": mid, "seat": 2}, "INVALID_ARGUMENT", seat=0, note="a bot"
    )
    rec.call(
        "ReissueInvitation",
        {"matchId": mid, "seat": 1},
        seat=0,
        note="seat 1 open again; its claimant's token revoked",
    )
    rec.reject("GetMatch", {"matchId": mid}, "TOKEN_INVALID", seat=1, note="the revoked token")
    rec.reject("ClaimSeat", claim, "INVITATION_INVALID", note="the replaced invitation")
    rec.call(
        "ClaimSeat",
        {"matchId": mid, "invitation": "{{token:invitation1-2}}", "displayName": "Sam"},
        note="the new invitation",
    )
    arabic = "\u0633\u0627\u0631\u0627"
    rec.call("ClaimSeat", {**seat3, "displayName": arabic}, note="a name written right to left")
    rec.call("GetMatch", {"matchId": mid}, seat=0, note="every seat's name and claim")
    rec.call(
        "GetMatch",
        {"matchId": mid},
        seat=3,
        note="the claimant sees its own hand only",
    )
    rec.call(
        "WatchMatch",
        {"matchId": mid, "afterVersion": "1"},
        seat=0,
        take=4,
        note="each claim and the reissue: a SeatChanged event of its own version",
    )


# -- Running ----------------------------------------------------------------------------------


@contextmanager
def server_for(spec: Json, redis: RedisProcess) -> Iterator[ServerThread]:
    unreachable = f"redis://127.0.0.1:{free_port()}/0"
    redis.client().flushall()
    target = ServerThread(golden.settings_for(spec, redis.url, unreachable))
    try:
        yield target
    finally:
        target.stop()


def generate(name: str, redis: RedisProcess) -> Path:
    server, description, build = SCENARIOS[name]
    with server_for(server, redis) as target:
        recorder = Recorder(target)
        build(recorder)
    vector = {"name": name, "description": description, "server": server, "steps": recorder.steps}
    path = golden.VECTORS / f"{name}.json"
    path.write_text(golden.dump(vector))
    with server_for(server, redis) as target:
        steps = golden.replay(golden.load(path), target.channel)
    print(f"{path.name}: {steps} steps, {path.stat().st_size // 1024} KiB", file=sys.stderr)
    return path


def main(names: list[str]) -> None:
    unknown = set(names) - set(SCENARIOS)
    if unknown:
        raise SystemExit(f"unknown scenarios {sorted(unknown)}; known: {sorted(SCENARIOS)}")
    golden.VECTORS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as directory:
        redis = RedisProcess(Path(directory))
        redis.start()
        try:
            for name in names or SCENARIOS:
                generate(name, redis)
        finally:
            redis.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
