"""The Prometheus Operator objects (checked structurally: their CRDs are not in the Kubernetes
schemas) and their agreement with the metrics the server really exports."""

from __future__ import annotations

import re
from typing import Final

import grpc

from tests.deploy.exported import exported_series
from tests.deploy.manifests import Manifest, built, of_kind, one, selects

PRODUCTION: Final = "overlays/production"
SERVER_ERRORS: Final = {"UNAVAILABLE", "INTERNAL", "DATA_LOSS", "UNKNOWN", "DEADLINE_EXCEEDED"}
CLIENT_ERRORS: Final = {
    "INVALID_ARGUMENT",
    "FAILED_PRECONDITION",
    "ABORTED",
    "NOT_FOUND",
    "UNAUTHENTICATED",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "OUT_OF_RANGE",
}
REQUIRED_ALERTS: Final = {
    "BasraEngineHighErrorRate",
    "BasraEngineHighLatency",
    "BasraEngineRedisUnavailable",
}


def alert_rules() -> list[Manifest]:
    rule = one(built(PRODUCTION), "PrometheusRule")
    return [r for group in rule["spec"]["groups"] for r in group["rules"] if "alert" in r]


def alert(name: str) -> Manifest:
    (found,) = (rule for rule in alert_rules() if rule["alert"] == name)
    return found


def test_the_operator_kinds_are_well_formed() -> None:
    for obj in of_kind(built(PRODUCTION), "ServiceMonitor") + of_kind(
        built(PRODUCTION), "PrometheusRule"
    ):
        assert obj["apiVersion"] == "monitoring.coreos.com/v1"
        assert obj["metadata"]["namespace"] == "basra"
        assert set(obj) == {"apiVersion", "kind", "metadata", "spec"}


def test_the_servicemonitor_scrapes_the_metrics_port_of_the_server_service_only() -> None:
    objects = built(PRODUCTION)
    monitor = one(objects, "ServiceMonitor")
    assert "namespaceSelector" not in monitor["spec"], "its own namespace only"
    chosen = [
        service
        for service in of_kind(objects, "Service")
        if selects(monitor["spec"]["selector"], service["metadata"]["labels"])
    ]
    assert [service["metadata"]["name"] for service in chosen] == ["basra-engine"]
    port_names = {port["name"] for port in chosen[0]["spec"]["ports"]}
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in port_names
    assert endpoint["path"] == "/metrics"
    assert endpoint["scheme"] == "http"


def test_the_required_alerts_exist_with_severity_and_guidance() -> None:
    rules = alert_rules()
    assert {rule["alert"] for rule in rules} >= REQUIRED_ALERTS
    for rule in rules:
        assert set(rule) == {"alert", "expr", "for", "labels", "annotations"}
        assert re.fullmatch(r"\d+[smh]", rule["for"])
        assert rule["labels"]["severity"] in {"warning", "critical"}
        assert rule["annotations"]["summary"]
        assert f"deploy/README.md, alert {rule['alert']}" in rule["annotations"]["description"]


def test_alerts_use_only_series_the_server_exports() -> None:
    exported = exported_series()
    for rule in alert_rules():
        expression = rule["expr"]
        assert expression.count("(") == expression.count(")"), rule["alert"]
        used = set(re.findall(r"\bbasra_\w+", expression))
        assert used <= exported, f"{rule['alert']}: {used - exported} is never exported"


def test_the_error_rate_counts_server_errors_only() -> None:
    expression = alert("BasraEngineHighErrorRate")["expr"]
    (codes,) = re.findall(r'code=~"([^"]+)"', expression)
    assert set(codes.split("|")) == SERVER_ERRORS
    assert not SERVER_ERRORS & CLIENT_ERRORS
    assert {code.name for code in grpc.StatusCode} >= SERVER_ERRORS | CLIENT_ERRORS
    assert "basra_rpc_calls_total" in expression


def test_the_latency_alert_is_the_p99_of_the_unary_calls() -> None:
    expression = alert("BasraEngineHighLatency")["expr"]
    assert "histogram_quantile(0.99" in expression
    assert "basra_rpc_latency_seconds_bucket" in expression
    assert re.search(r"by \([^)]*\ble\b", expression), "the quantile needs the le label"
    assert 'method!="WatchMatch"' in expression, "a watch lasts as long as the client wants"


def test_the_redis_alert_is_the_store_health_gauge() -> None:
    assert alert("BasraEngineRedisUnavailable")["expr"].strip() == "basra_store_up == 0"


def test_job_labels_in_alerts_are_the_scraped_service_name() -> None:
    objects = built(PRODUCTION)
    monitor = one(objects, "ServiceMonitor")
    assert "jobLabel" not in monitor["spec"], "then job is the Service name"
    jobs = {job for rule in alert_rules() for job in re.findall(r'job="([^"]+)"', rule["expr"])}
    assert jobs == {"basra-engine"}
    assert selects(
        monitor["spec"]["selector"], one(objects, "Service", "basra-engine")["metadata"]["labels"]
    )
