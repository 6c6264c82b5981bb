"""Golden vectors: the format, the placeholders, and the Python replayer.

A vector (``vectors/*.json``) is one scenario against one server:

    {"name": ..., "description": ...,
     "server": {"store": "redis" | "embedded" | "unreachable", "settings": {...}},
     "steps": [{"rpc": "Play", "seat": 1, "request": {...}, "expect": {...}, "note": ...}, ...]}

``server.settings`` are ``service.config.Settings`` fields the scenario depends on; the runner
adds only operational ones (no metrics port, short polls). ``store`` "unreachable" is a Redis
URL on a port where nothing listens. A step calls one RPC as ``seat`` (its seat token is sent as
``authorization: Bearer <token>``; no seat: no token) plus any ``metadata`` given (which wins),
with ``request`` in the Protobuf JSON mapping. ``expect`` holds one of:

- ``response``: the whole response in the Protobuf JSON mapping;
- ``partial``: the object keys that must match (objects recursively; arrays and scalars whole);
- ``error``: ``{"code", "reason", "domain", "metadata"}`` of the one ``google.rpc.ErrorInfo``,
  plus ``badRequest`` / ``retryInfo`` (JSON mapping) when those details must be present (they
  must be absent otherwise);
- for WatchMatch, ``stream``: the first messages (the call is then cancelled), with ``ends``
  true when the server must close the stream right after them, or an ``error`` after them.

Values that no seed decides are placeholders, whole JSON strings ``{{kind}}`` or
``{{kind:name}}``. In requests and metadata they are replaced (also inside longer strings):
``match_id`` and ``token:<seat>`` by the values bound so far, ``request_id:<name>`` by a fresh
random id per replay (the same name gives the same id within a replay). In expectations,
``match_id`` and ``token:<name>`` bind on first sight (after a shape check) and must be equal
afterwards; ``seconds`` (a positive decimal) and ``duration`` (a positive JSON Duration) are
checked by shape only, and ``presence`` (a seat's ``connected``: whether some stream of it is
open at that instant, which a replay's timing decides, not its steps) by type, a boolean.
``node/src/golden.ts`` implements the same rules for TypeScript.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2

from basra.service.config import Settings
from basra.service.errors import DETAILS_KEY
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc

Json = Any
"""A JSON value as ``json.loads`` returns it."""

HERE: Final = Path(__file__).parent
VECTORS: Final = HERE / "vectors"
RPCS: Final = (
    "Deal",
    "ListPlans",
    "Play",
    "Score",
    "GetMatch",
    "WatchMatch",
    "CreateMatch",
    "ListRules",
    "CreateWatchToken",
    "RevokeWatchTokens",
    "ClaimSeat",
    "GetInvitation",
    "ReissueInvitation",
)
CALL_TIMEOUT_S: Final = 10.0

OPERATIONAL: Final = Settings(metrics_port=None, health_interval_s=0.2, watch_poll_s=0.5)
"""What a runner sets besides a vector's own settings: nothing the contract depends on."""

_WHOLE: Final = re.compile(r"^\{\{(\w+)(?::([\w-]+))?\}\}$")
_INSIDE: Final = re.compile(r"\{\{(\w+)(?::([\w-]+))?\}\}")
_SHAPES: Final = {
    "match_id": re.compile(r"^[A-Za-z0-9_-]{16,64}$"),
    "token": re.compile(r"^[A-Za-z0-9_-]{43}$"),
    "seconds": re.compile(r"^(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$"),
    "duration": re.compile(r"^\d+(?:\.\d{1,9})?s$"),
    "presence": re.compile(r"^(?:true|false)$"),
}
_BOUND: Final = ("match_id", "token")
_DETAIL_TYPES: Final = {
    error_details_pb2.ErrorInfo.DESCRIPTOR.full_name,
    error_details_pb2.BadRequest.DESCRIPTOR.full_name,
    error_details_pb2.RetryInfo.DESCRIPTOR.full_name,
}


class VectorError(AssertionError):
    """A replay did not match its vector."""


def load(path: Path) -> Json:
    """One vector file."""
    vector = json.loads(path.read_text())
    assert vector["name"] == path.stem, f"{path.name}: name must be the file's stem"
    return vector


def all_vectors() -> list[Path]:
    """Every vector file, by name."""
    return sorted(VECTORS.glob("*.json"))


def settings_for(server: Json, redis_url: str | None, unreachable_url: str | None) -> Settings:
    """The Settings a vector's ``server`` asks for (listen address left to the runner)."""
    store = server.get("store", "redis")
    urls = {"redis": redis_url, "embedded": None, "unreachable": unreachable_url}
    if store not in urls:
        raise ValueError(f"unknown store {store!r}")
    if store != "embedded" and urls[store] is None:
        raise ValueError(f"store {store!r} needs a URL")
    return replace(OPERATIONAL, **server.get("settings", {}), redis_url=urls[store])


# -- Outcomes: what a call returned, as JSON -------------------------------------------------


def error_json(error: grpc.RpcError) -> Json:
    """A rejection as a vector's ``error``: the code and the unpacked google.rpc details.

    Raises:
        VectorError: the details break the error model (not exactly one ErrorInfo, unknown or
            repeated details, a Status code that disagrees with the call's).
    """
    call: grpc.Call = error  # type: ignore[assignment]
    status = status_pb2.Status()
    for key, value in call.trailing_metadata() or ():
        if key == DETAILS_KEY:
            status = status_pb2.Status.FromString(value)
    code = call.code()
    if status.code != code.value[0]:
        raise VectorError(f"{code.name} whose details say code {status.code}: {call.details()}")
    types = [any_.TypeName() for any_ in status.details]
    if types.count(error_details_pb2.ErrorInfo.DESCRIPTOR.full_name) != 1:
        raise VectorError(f"{code.name} needs exactly one ErrorInfo, has {types}")
    if len(set(types)) != len(types) or not set(types) <= _DETAIL_TYPES:
        raise VectorError(f"{code.name} has unexpected details {types}")
    out: dict[str, Json] = {"code": code.name}
    for any_ in status.details:
        if any_.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            any_.Unpack(info)
            out.update(reason=info.reason, domain=info.domain, metadata=dict(info.metadata))
        elif any_.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            any_.Unpack(bad)
            out["badRequest"] = json_format.MessageToDict(bad)
        else:
            retry = error_details_pb2.RetryInfo()
            any_.Unpack(retry)
            out["retryInfo"] = json_format.MessageToDict(retry)
    return out


def to_json(message: Message) -> Json:
    """A message in the Protobuf JSON mapping (as the TypeScript runner's toJson writes it)."""
    return json_format.MessageToDict(message)


# -- Placeholders and matching ---------------------------------------------------------------


@dataclass
class Bindings:
    """The values a replay has bound to placeholders."""

    values: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def key(kind: str, name: str | None) -> str:
        return f"{kind}:{name}" if name else kind

    def fill(self, value: Json) -> Json:
        """``value`` with the placeholders of a request or metadata replaced."""
        if isinstance(value, dict):
            return {k: self.fill(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.fill(v) for v in value]
        if isinstance(value, str):
            return _INSIDE.sub(lambda m: self._value(m.group(1), m.group(2)), value)
        return value

    def _value(self, kind: str, name: str | None) -> str:
        key = self.key(kind, name)
        if kind == "request_id":
            return self.values.setdefault(key, str(uuid.uuid4()))
        if kind not in _BOUND:
            raise VectorError(f"placeholder {{{{{key}}}}} cannot appear in a request")
        if key not in self.values:
            raise VectorError(f"placeholder {{{{{key}}}}} used before it was bound")
        return self.values[key]

    def match(self, expected: Json, actual: Json, path: str, *, partial: bool) -> Iterator[str]:
        """The differences of ``actual`` from ``expected`` (binding placeholders on the way)."""
        if isinstance(expected, str) and (placeholder := _WHOLE.match(expected)):
            yield from self._placeholder(placeholder.group(1), placeholder.group(2), actual, path)
        elif isinstance(expected, dict):
            if not isinstance(actual, dict):
                yield f"{path}: expected an object, got {actual!r}"
                return
            extra = set(actual) - set(expected)
            if extra and not partial:
                yield f"{path}: unexpected {sorted(extra)} = {[actual[k] for k in sorted(extra)]}"
            for key, value in expected.items():
                if key not in actual:
                    yield f"{path}.{key}: missing (expected {value!r})"
                else:
                    yield from self.match(value, actual[key], f"{path}.{key}", partial=partial)
        elif isinstance(expected, list):
            if not isinstance(actual, list) or len(actual) != len(expected):
                yield f"{path}: expected {len(expected)} items, got {actual!r}"
                return
            for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
                yield from self.match(e, a, f"{path}[{i}]", partial=False)
        elif type(expected) is not type(actual) or expected != actual:
            yield f"{path}: expected {expected!r}, got {actual!r}"

    def _placeholder(self, kind: str, name: str | None, actual: Json, path: str) -> Iterator[str]:
        shape = _SHAPES.get(kind)
        if shape is None:
            raise VectorError(f"{path}: unknown placeholder kind {kind!r}")
        if kind == "presence":
            if not isinstance(actual, bool):
                yield f"{path}: {actual!r} is not a presence (a boolean)"
            return
        if not isinstance(actual, str) or not shape.match(actual):
            yield f"{path}: {actual!r} is not a {kind}"
            return
        if kind in ("seconds", "duration"):
            if float(actual.rstrip("s")) <= 0:
                yield f"{path}: {actual!r} is not positive"
            return
        key = self.key(kind, name)
        bound = self.values.setdefault(key, actual)
        if bound != actual:
            yield f"{path}: expected {{{{{key}}}}} = {bound!r}, got {actual!r}"


# -- Running steps ---------------------------------------------------------------------------


@dataclass
class Outcome:
    """What a call returned: a response, stream messages, an error (streams: after messages)."""

    response: Json = None
    stream: list[Json] | None = None
    ends: bool = False
    error: Json = None

    def as_json(self) -> Json:
        out: dict[str, Json] = {}
        if self.stream is not None:
            out.update(stream=self.stream, ends=self.ends)
        elif self.error is None:
            out["response"] = self.response
        if self.error is not None:
            out["error"] = self.error
        return out


class Session:
    """Replays steps on one channel, keeping the placeholder bindings of one vector."""

    def __init__(self, channel: grpc.Channel) -> None:
        self.stub = basra_service_pb2_grpc.BasraServiceStub(channel)
        self.bindings = Bindings()

    def metadata(self, step: Json) -> list[tuple[str, str]]:
        """The call metadata of a step: its seat's token, then its own metadata (which wins)."""
        headers: dict[str, str] = {}
        if step.get("seat") is not None:
            headers["authorization"] = f"Bearer {{{{token:{step['seat']}}}}}"
        headers.update(step.get("metadata", {}))
        return [(k, self.bindings.fill(v)) for k, v in headers.items()]

    def request(self, step: Json) -> Message:
        """The step's request message (strict JSON parsing: unknown fields are errors)."""
        if step["rpc"] not in RPCS:
            raise VectorError(f"unknown rpc {step['rpc']!r}")
        message: Message = getattr(pb, f"{step['rpc']}Request")()
        return json_format.ParseDict(self.bindings.fill(step.get("request", {})), message)

    def perform(self, step: Json) -> Outcome:
        """Make the step's call; a stream is read as far as its expectation says."""
        method = getattr(self.stub, step["rpc"])
        request, metadata = self.request(step), self.metadata(step)
        if step["rpc"] != "WatchMatch":
            try:
                return Outcome(
                    response=to_json(method(request, metadata=metadata, timeout=CALL_TIMEOUT_S))
                )
            except grpc.RpcError as error:
                return Outcome(error=error_json(error))
        expect = step["expect"]
        wanted = len(expect.get("stream", []))
        to_end = bool(expect.get("ends")) or "error" in expect
        messages: list[Json] = []
        outcome = Outcome(stream=messages)
        call = method(request, metadata=metadata, timeout=CALL_TIMEOUT_S)
        try:
            for message in call:
                messages.append(to_json(message))
                if len(messages) >= wanted and not to_end:
                    call.cancel()
                    return outcome
            outcome.ends = True
        except grpc.RpcError as error:
            outcome.error = error_json(error)
        return outcome

    def check(self, step: Json, outcome: Outcome) -> list[str]:
        """How ``outcome`` differs from the step's expectation (empty: it matches)."""
        expect = step["expect"]
        got = outcome.as_json()
        problems: list[str] = []
        if "stream" in expect:
            problems += self.bindings.match(
                expect["stream"], got.get("stream"), "stream", partial=False
            )
            if expect.get("ends") and not outcome.ends:
                problems.append("stream: expected the server to end the stream")
        if "error" in expect:
            problems += self.bindings.match(
                expect["error"], got.get("error"), "error", partial=False
            )
        elif "response" in expect:
            problems += self.bindings.match(
                expect["response"], got.get("response"), "response", partial=False
            )
        elif "partial" in expect:
            problems += self.bindings.match(
                expect["partial"], got.get("response"), "response", partial=True
            )
        elif "stream" not in expect:
            raise VectorError(f"step expects nothing: {sorted(expect)}")
        if outcome.error is not None and "error" not in expect:
            problems.append(f"unexpected error {outcome.error}")
        return problems


def replay(vector: Json, channel: grpc.Channel) -> int:
    """Replay every step of ``vector``; returns the number of steps.

    Raises:
        VectorError: at the first step whose outcome differs, naming the step and the
            differences.
    """
    session = Session(channel)
    for index, step in enumerate(vector["steps"]):
        outcome = session.perform(step)
        problems = session.check(step, outcome)
        if problems:
            label = f"{vector['name']} step {index} ({step['rpc']}"
            label += f": {step['note']})" if "note" in step else ")"
            raise VectorError(label + "\n  " + "\n  ".join(problems[:20]))
    return len(vector["steps"])


def dump(vector: Mapping[str, Json]) -> str:
    """A vector as its file holds it: one line per step, so diffs show which steps changed."""
    head = {k: v for k, v in vector.items() if k != "steps"}
    lines = [json.dumps(head, indent=1)[:-2] + ","]
    steps = [json.dumps(step, ensure_ascii=False) for step in vector["steps"]]
    lines.append(' "steps": [')
    lines.extend(f"  {text}," for text in steps[:-1])
    lines.append(f"  {steps[-1]}")
    lines.append(" ]")
    lines.append("}")
    return "\n".join(lines) + "\n"
