"""The Gateway API example (overlays/gateway-example = production + components/gateway-api).

kubernetes-validate has no schemas for Gateway API kinds, so the Gateway, HTTPRoute and
GRPCRoute are validated against the Gateway API v1 schemas of the npm package
@kubernetes-models/gateway-api (tests/deploy/gateway_api, installed by `make test`): types,
required fields, enums and patterns. What a schema cannot see is checked here: the routes attach
to HTTPS listeners that terminate TLS, reach the Service ports the server listens on, and route
the contract's paths and service.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from typing import Final

import pytest

from basra.service.http import RPC_PREFIX
from basra.service.servicer import SERVICE
from tests.deploy.manifests import ROOT, Manifest, built, of_kind, one

EXAMPLE: Final = "overlays/gateway-example"
VALIDATOR: Final = ROOT / "tests" / "deploy" / "gateway_api"
GROUP: Final = "gateway.networking.k8s.io/v1"


def gateway_objects() -> list[Manifest]:
    return [obj for obj in built(EXAMPLE) if obj["apiVersion"] == GROUP]


def validate(objects: list[Manifest]) -> subprocess.CompletedProcess[str]:
    node = shutil.which("node")
    assert node, "Node.js is needed to validate the Gateway API objects (make test)"
    assert (VALIDATOR / "node_modules").is_dir(), (
        "run `make test`, which runs `npm ci` in tests/deploy/gateway_api"
    )
    return subprocess.run(
        [node, "validate.mjs"],
        cwd=VALIDATOR,
        input=json.dumps(objects),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_example_has_one_gateway_and_one_route_of_each_kind() -> None:
    kinds = sorted(obj["kind"] for obj in gateway_objects())
    assert kinds == ["GRPCRoute", "Gateway", "HTTPRoute"]
    assert {obj["metadata"]["namespace"] for obj in gateway_objects()} == {"basra"}
    assert not of_kind(built("overlays/production"), "Gateway"), "production stays without"


def test_the_gateway_api_objects_match_the_gateway_api_schemas() -> None:
    result = validate(gateway_objects())
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(result.stdout.splitlines()) == [
        "ok GRPCRoute/basra-engine-grpc",
        "ok Gateway/basra",
        "ok HTTPRoute/basra-engine-http",
    ]


def test_the_schema_check_rejects_a_broken_route() -> None:
    broken = copy.deepcopy(one(gateway_objects(), "HTTPRoute"))
    broken["spec"]["rules"][0]["backendRefs"][0]["port"] = "8080"
    broken["spec"]["rules"][1]["matches"][0]["path"]["type"] = "Prefix"
    result = validate([broken])
    assert result.returncode == 1
    assert "invalid HTTPRoute/basra-engine-http" in result.stdout
    assert "port must be integer" in result.stdout


def listeners() -> dict[str, Manifest]:
    return {lst["name"]: lst for lst in one(gateway_objects(), "Gateway")["spec"]["listeners"]}


@pytest.mark.parametrize("kind", ["HTTPRoute", "GRPCRoute"])
def test_each_route_attaches_to_an_https_listener_that_terminates_tls(kind: str) -> None:
    route = one(gateway_objects(), kind)
    gateway = one(gateway_objects(), "Gateway")
    (parent,) = route["spec"]["parentRefs"]
    assert parent["name"] == gateway["metadata"]["name"]
    listener = listeners()[parent["sectionName"]]
    assert (listener["protocol"], listener["port"]) == ("HTTPS", 443)
    assert listener["tls"]["mode"] == "Terminate"
    assert listener["tls"]["certificateRefs"] == [{"kind": "Secret", "name": "basra-engine-tls"}]
    assert route["spec"]["hostnames"] == [listener["hostname"]]


def test_http_and_grpc_routes_never_share_a_hostname() -> None:
    # Gateway API rejects an HTTPRoute and a GRPCRoute with overlapping hostnames on a listener.
    http = set(one(gateway_objects(), "HTTPRoute")["spec"]["hostnames"])
    grpc = set(one(gateway_objects(), "GRPCRoute")["spec"]["hostnames"])
    assert not http & grpc


def service_port(number: int) -> Manifest:
    service = one(built(EXAMPLE), "Service", "basra-engine")
    ports: list[Manifest] = [p for p in service["spec"]["ports"] if p["port"] == number]
    (port,) = ports
    return port


def test_the_http_route_sends_the_rpcs_and_the_web_table_to_the_http_port() -> None:
    rules = one(gateway_objects(), "HTTPRoute")["spec"]["rules"]
    paths = [rule["matches"][0]["path"] for rule in rules]
    assert paths == [
        {"type": "PathPrefix", "value": RPC_PREFIX},
        {"type": "PathPrefix", "value": "/"},
    ]
    # WatchMatch responses stay open for a whole match: no request timeout on the RPCs.
    assert rules[0]["timeouts"] == {"request": "0s"}
    for rule in rules:
        (backend,) = rule["backendRefs"]
        assert backend["name"] == "basra-engine"
        assert service_port(backend["port"])["targetPort"] == "http"


def test_the_grpc_route_sends_the_contracts_service_to_the_grpc_port_as_h2c() -> None:
    (rule,) = one(gateway_objects(), "GRPCRoute")["spec"]["rules"]
    assert rule["matches"] == [{"method": {"type": "Exact", "service": SERVICE.full_name}}]
    (backend,) = rule["backendRefs"]
    port = service_port(backend["port"])
    assert backend["name"] == "basra-engine"
    assert port["targetPort"] == "grpc"
    assert port["appProtocol"] == "kubernetes.io/h2c"
