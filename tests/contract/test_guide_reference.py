"""The API guide's reference parts agree with the contract and a real server: its table of
RPCs names every RPC of the service, and the ListRules answer it shows is the server's."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from google.protobuf import json_format

from basra.service.config import Settings
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc
from tests.contract.golden import CALL_TIMEOUT_S
from tests.contract.test_guide_snippets import GUIDE, block
from tests.contract.test_guide_worked_example import differences, parse
from tests.support import ServerThread


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    thread = ServerThread(Settings(metrics_port=None))
    yield thread
    thread.stop()


def test_the_rpc_table_names_every_rpc_of_the_service() -> None:
    text = GUIDE.read_text()
    start = text.index("| RPC | Kind | Credentials | What it does |")
    table = text[start : text.index("\n\n", start)]
    named = set(re.findall(r"^\| `(\w+)`", table, re.M))
    methods = {m.name for m in pb.DESCRIPTOR.services_by_name["BasraService"].methods}
    assert named == methods


def test_the_rule_systems_wordings_the_guide_shows_are_the_servers(server: ServerThread) -> None:
    stub = basra_service_pb2_grpc.BasraServiceStub(server.channel)
    rules = stub.ListRules(pb.ListRulesRequest(), timeout=CALL_TIMEOUT_S).rules
    shown = parse(block("jsonc", '{"name": "eram"'))
    found = list(differences(shown, json_format.MessageToDict(rules[0])))
    assert not found, found
