"""Whole matches with every log line captured: no token and no card ever reaches the logs."""

from __future__ import annotations

import io
import json
import logging
import random
import re
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from basra.client.match import MatchClient
from basra.service import logs
from basra.service.config import Settings
from basra.v1 import basra_service_pb2 as pb
from tests.profiles import examples
from tests.service.conftest import rpc_error
from tests.service.driver import play_match
from tests.support import ServerThread

CARD_WORD = re.compile(r"\b(?:10|[2-9AJQK])[CDHS]\b|[\u2663\u2666\u2665\u2660]")


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    running = ServerThread(Settings(allow_seeds=True, metrics_port=None))
    yield running
    running.stop()


@settings(
    max_examples=examples(4),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(seed=st.integers(0, 2**32), choices=st.integers(0, 2**32))
def test_no_log_line_of_a_whole_match_holds_a_token_or_a_card(
    server: ServerThread, seed: int, choices: int
) -> None:
    buffer = io.StringIO()
    logs.setup("DEBUG", buffer)
    try:
        client, _ = MatchClient.create(server.channel, seed=seed)
        rng = random.Random(choices)
        play_match(client, rng)
        # Rejections log too: a wrong token, a foreign card, a play out of turn.
        request = pb.GetMatchRequest(match_id=client.match_id)
        forged = (("authorization", "Bearer " + "x" * 43),)
        rpc_error(lambda: client.stub.GetMatch(request, metadata=forged))
        rpc_error(lambda: client.play(0, "AC"))
    finally:
        logging.getLogger("basra").handlers.clear()
    lines = buffer.getvalue().splitlines()
    assert len(lines) > 200  # every call of the match was logged at DEBUG
    for line in lines:
        for token in client.tokens.values():
            assert token not in line
        record = json.loads(line)
        for key, value in record.items():
            if key not in ("match_id", "ts"):
                assert not CARD_WORD.search(str(value)), f"{key}={value!r} shows a card"
