"""The Grafana dashboard: provisioned by the observability component as a ConfigMap Grafana's
sidecar picks up, and every panel's query naming only series a running server exports."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from typing import Any, Final

import pytest

from basra.service.config import Settings
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc, game_pb2
from tests.deploy.manifests import built, one
from tests.service.conftest import new_match
from tests.support import ServerThread, wait_until

PRODUCTION: Final = "overlays/production"
# The series of each metric family in the text exposition format (# TYPE name kind).
SUFFIXES: Final = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_count", "_sum")}


def dashboard() -> dict[str, Any]:
    config_map = one(built(PRODUCTION), "ConfigMap", "basra-engine-dashboard")
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    (text,) = config_map["data"].values()
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def queries(board: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(panel title, PromQL) of every panel's targets and of the template variables."""
    for panel in board["panels"]:
        for target in panel["targets"]:
            yield panel["title"], target["expr"]
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            yield variable["name"], variable["query"]


@pytest.fixture(scope="module")
def scraped() -> set[str]:
    """The series names on the /metrics page of a running server that served a match."""
    server = ServerThread(Settings(allow_seeds=True, metrics_port=0))
    try:
        new_match(server)
        url = f"http://127.0.0.1:{server.server.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            page = response.read().decode()
    finally:
        server.stop()
    names = set()
    for line in page.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            names |= {name, *(name + suffix for suffix in SUFFIXES.get(kind, ()))}
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def test_the_dashboard_is_a_configmap_for_grafanas_sidecar_with_the_on_call_panels() -> None:
    board = dashboard()
    assert board["uid"] == "basra-engine"
    titles = {panel["title"] for panel in board["panels"]}
    for expected in (
        "Calls per second, by port",
        "Rejected calls per second, by reason and port",
        "Latency p99 per RPC",
        "Redis round trips per second, by operation",
        "Redis failures",
        "Record cache hit rate",
        "Live WatchMatch streams",
        "WatchMatch deliveries per second",
        "Refused, stalled and half-open calls",
        "Matches created and finished per second",
    ):
        assert expected in titles
    for panel in board["panels"]:
        assert panel["description"], panel["title"]
        assert panel["targets"], panel["title"]
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))


def test_every_query_names_only_series_the_server_exports(scraped: set[str]) -> None:
    assert "basra_rpc_port_calls_total" in scraped  # the page was read and parsed
    used = 0
    for title, expression in queries(dashboard()):
        names = set(re.findall(r"\bbasra_\w+", expression))
        assert names, f"{title}: {expression}"
        assert names <= scraped, f"{title}: {sorted(names - scraped)} are not exported"
        used += len(names)
    assert used > 20


def test_the_bot_think_time_panel_reads_what_a_match_of_bots_records() -> None:
    server = ServerThread(Settings(allow_seeds=True, metrics_port=0, bot_pace_s=0))
    url = f"http://127.0.0.1:{server.server.metrics_port}/metrics"

    def page() -> str:
        with urllib.request.urlopen(url, timeout=10) as response:
            text: str = response.read().decode()
            return text

    try:
        greedy = game_pb2.BOT_LEVEL_GREEDY
        basra_service_pb2_grpc.BasraServiceStub(server.channel).CreateMatch(
            pb.CreateMatchRequest(bots=[greedy, greedy], seed=7)
        )
        wait_until(lambda: 'basra_bot_think_seconds_count{level="greedy"}' in page(), 30)
        samples = page()
    finally:
        server.stop()
    (panel,) = [p for p in dashboard()["panels"] if p["title"] == "Bots: think time per move"]
    for target in panel["targets"]:
        assert "by (le, level)" in target["expr"]
        for name in set(re.findall(r"\bbasra_\w+", target["expr"])):
            assert re.search(rf'^{name}\{{[^}}]*level="greedy"', samples, re.MULTILINE), name
