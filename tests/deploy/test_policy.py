"""What an operator checks before approving the manifests, asserted on the rendered objects.

Probes, resources, security context, disruption and scaling, Services, network policy, and
that every setting the server reads (``service.config.ENVIRONMENT``) is wired in each overlay,
secrets only from Secrets.
"""

from __future__ import annotations

import argparse
import base64
import ipaddress
import re
from typing import Final
from urllib.parse import urlsplit

import pytest

from basra.service import config, tracing
from basra.service.http import HEALTH_PATH
from basra.service.server import LIVENESS
from tests.deploy.manifests import (
    Manifest,
    built,
    containers,
    kustomizations,
    of_kind,
    one,
    selects,
    workloads,
)

SERVER: Final = "basra-engine"
SECRET: Final = "basra-engine-secrets"
SECRET_SETTINGS: Final = {"REDIS_URL", "BASRA_API_KEY"}
ALL: Final = kustomizations()
DNS_PORTS: Final = {(53, "UDP"), (53, "TCP")}
REDIS_PORTS: Final = {6379, 6380, 26379}
CREDENTIALS_IN_URL: Final = re.compile(r"://[^/@\s]*:[^/@\s]+@")


def server(objects: list[Manifest]) -> Manifest:
    return one(objects, "Deployment", SERVER)


def server_container(objects: list[Manifest]) -> Manifest:
    (container,) = (c for c in containers(server(objects)) if c["name"] == SERVER)
    return container


def pod_labels(workload: Manifest) -> dict[str, str]:
    labels: dict[str, str] = workload["spec"]["template"]["metadata"]["labels"]
    return labels


def ports(container: Manifest) -> dict[str, int]:
    return {port["name"]: port["containerPort"] for port in container["ports"]}


def settings_configmap(objects: list[Manifest]) -> dict[str, str]:
    """The data of the ConfigMap the server takes its environment from."""
    (ref,) = server_container(objects)["envFrom"]
    data: dict[str, str] = one(objects, "ConfigMap", ref["configMapRef"]["name"])["data"]
    return data


def secret_refs(container: Manifest) -> dict[str, Manifest]:
    return {
        env["name"]: env["valueFrom"]["secretKeyRef"]
        for env in container.get("env", [])
        if "secretKeyRef" in env.get("valueFrom", {})
    }


def cpu(quantity: str) -> float:
    return float(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)


def memory(quantity: str) -> int:
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    for suffix, factor in units.items():
        if quantity.endswith(suffix):
            return int(quantity[: -len(suffix)]) * factor
    return int(quantity)


def policies_for(objects: list[Manifest], labels: dict[str, str]) -> list[Manifest]:
    return [
        policy
        for policy in of_kind(objects, "NetworkPolicy")
        if selects(policy["spec"]["podSelector"], labels)
    ]


def rule_ports(rule: Manifest) -> set[tuple[int, str]]:
    return {(port["port"], port.get("protocol", "TCP")) for port in rule.get("ports", [])}


# -- probes, ports and draining -------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_liveness_is_grpc_health_and_readiness_is_the_http_healthz(name: str) -> None:
    container = server_container(built(name))
    grpc_port = ports(container)["grpc"]
    liveness = container["livenessProbe"]["grpc"]
    startup = container["startupProbe"]["grpc"]
    # Readiness follows Redis (and proves the HTTP listener); liveness and startup must not
    # follow Redis, or a Redis outage restarts every pod.
    assert container["readinessProbe"]["httpGet"] == {"port": "http", "path": HEALTH_PATH}
    assert liveness == {"port": grpc_port, "service": LIVENESS}
    assert startup == {"port": grpc_port, "service": LIVENESS}


@pytest.mark.parametrize("name", ALL)
def test_the_listen_and_metrics_settings_match_the_container_ports(name: str) -> None:
    objects = built(name)
    settings = settings_configmap(objects)
    container_ports = ports(server_container(objects))
    assert int(settings["BASRA_LISTEN"].rsplit(":", 1)[1]) == container_ports["grpc"]
    assert int(settings["BASRA_HTTP_LISTEN"].rsplit(":", 1)[1]) == container_ports["http"]
    assert int(settings["BASRA_METRICS_PORT"]) == container_ports["metrics"]


@pytest.mark.parametrize("name", ALL)
def test_the_grace_period_covers_the_prestop_pause_and_the_drain(name: str) -> None:
    objects = built(name)
    pod = server(objects)["spec"]["template"]["spec"]
    pre_stop = server_container(objects)["lifecycle"]["preStop"]
    # The native sleep action: the image has no shell to run `sleep` with.
    assert list(pre_stop) == ["sleep"]
    pause = pre_stop["sleep"]["seconds"]
    drain = float(settings_configmap(objects)["BASRA_DRAIN_SECONDS"])
    assert pause >= 3, "load balancers need a few seconds to stop routing to the pod"
    assert pod["terminationGracePeriodSeconds"] >= pause + drain + 5


# -- every setting wired, secrets only from Secrets ----------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_every_setting_the_server_reads_is_wired(name: str) -> None:
    objects = built(name)
    container = server_container(objects)
    from_configmap = set(settings_configmap(objects))
    from_secret = set(secret_refs(container))
    explicit = {env["name"] for env in container.get("env", [])}
    # The OpenTelemetry SDK's own standard settings (traces), beside the service's.
    tracing_settings = {name for name in from_configmap if name.startswith("OTEL_")}
    assert tracing_settings <= tracing.ENVIRONMENT
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in tracing_settings
    assert from_configmap | from_secret == set(config.ENVIRONMENT.values()) | tracing_settings
    assert from_secret == SECRET_SETTINGS
    assert not from_configmap & explicit, "a setting set twice: the env entry silently wins"


# What the Secret adds to the ConfigMap's environment (placeholders: the shape is what counts).
SECRET_PLACEHOLDERS: Final = {"REDIS_URL": "redis://:pw@redis:6379/0", "BASRA_API_KEY": "k"}


def configured(environ: dict[str, str]) -> config.Settings:
    parser = argparse.ArgumentParser()
    config.add_arguments(parser)
    return config.from_args(parser.parse_args([]), environ=environ)


@pytest.mark.parametrize("name", ALL)
def test_the_configmap_is_a_valid_configuration_on_redis_only(name: str) -> None:
    data = settings_configmap(built(name))
    assert data["BASRA_STORE"] == "redis", "replicas must share Redis, never embedded stores"
    settings = configured({**data, **SECRET_PLACEHOLDERS})
    assert settings.redis_url == SECRET_PLACEHOLDERS["REDIS_URL"]  # from the Secret only
    # Fail closed: without its Secret the server refuses to start rather than run embedded.
    with pytest.raises(ValueError, match="redis needs a Redis URL"):
        configured(data)
    with pytest.raises(ValueError, match=r"\$REDIS_URL is set but empty"):
        configured({**data, "REDIS_URL": ""})


def test_production_refuses_seeds_and_debug_logs() -> None:
    data = settings_configmap(built("overlays/production"))
    settings = configured({**data, **SECRET_PLACEHOLDERS})
    assert settings.allow_seeds is False
    assert settings.log_level == "INFO"


@pytest.mark.parametrize("name", ALL)
def test_secrets_are_never_in_a_configmap(name: str) -> None:
    for configmap in of_kind(built(name), "ConfigMap"):
        for key, value in configmap.get("data", {}).items():
            assert key not in SECRET_SETTINGS
            assert not re.search(r"PASSWORD|SECRET|TOKEN|API_KEY", key, re.IGNORECASE), key
            assert not CREDENTIALS_IN_URL.search(value), f"credentials in {key}"
            assert not re.search(r"^\s*requirepass\s", value, re.MULTILINE), key


@pytest.mark.parametrize("name", ALL)
def test_secret_settings_come_from_the_basra_engine_secret(name: str) -> None:
    objects = built(name)
    refs = secret_refs(server_container(objects))
    generated = {secret["metadata"]["name"] for secret in of_kind(objects, "Secret")}
    for setting, ref in refs.items():
        assert ref["key"] == setting
        assert ref.get("optional") is not True, "the server must not start without its secrets"
        # The generated dev Secret carries a content hash suffix; elsewhere it is external.
        assert ref["name"] == SECRET or (
            ref["name"] in generated and ref["name"].startswith(f"{SECRET}-")
        )


def test_production_ships_no_secret() -> None:
    objects = built("overlays/production")
    assert of_kind(objects, "Secret") == []
    assert {ref["name"] for ref in secret_refs(server_container(objects)).values()} == {SECRET}


def test_dev_secrets_are_placeholders_that_agree_with_the_dev_redis() -> None:
    objects = built("overlays/dev")
    values: dict[str, str] = {}
    for secret in of_kind(objects, "Secret"):
        for key, encoded in secret["data"].items():
            values[key] = base64.b64decode(encoded).decode()
    assert set(values) == SECRET_SETTINGS | {"REDIS_PASSWORD"}
    assert all("dev-only" in value for value in values.values())
    url = urlsplit(values["REDIS_URL"])
    redis = one(objects, "Service", "basra-redis")
    assert url.scheme == "redis"
    assert url.password == values["REDIS_PASSWORD"]
    assert (url.hostname, url.port) == ("basra-redis", redis["spec"]["ports"][0]["port"])


# -- resources and security ---------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_every_container_has_requests_and_limits(name: str) -> None:
    for workload in workloads(built(name)):
        for container in containers(workload):
            resources = container["resources"]
            requests, limits = resources["requests"], resources["limits"]
            assert cpu(requests["cpu"]) <= cpu(limits["cpu"]), container["name"]
            assert memory(requests["memory"]) <= memory(limits["memory"]), container["name"]


@pytest.mark.parametrize("name", ALL)
def test_every_pod_runs_restricted(name: str) -> None:
    found = workloads(built(name))
    assert found
    for workload in found:
        pod = workload["spec"]["template"]["spec"]
        context = pod["securityContext"]
        assert context["runAsNonRoot"] is True
        assert context["runAsUser"] > 0
        assert context["seccompProfile"] == {"type": "RuntimeDefault"}
        assert pod["automountServiceAccountToken"] is False
        assert not any(pod.get(key) for key in ("hostNetwork", "hostPID", "hostIPC"))
        for container in containers(workload):
            security = container["securityContext"]
            assert security["allowPrivilegeEscalation"] is False
            assert security["readOnlyRootFilesystem"] is True
            assert security.get("privileged", False) is False
            assert security["capabilities"] == {"drop": ["ALL"]}


@pytest.mark.parametrize("name", ALL)
def test_the_server_writes_only_to_an_emptydir_tmp(name: str) -> None:
    objects = built(name)
    container = server_container(objects)
    volumes = {v["name"]: v for v in server(objects)["spec"]["template"]["spec"]["volumes"]}
    assert [(m["name"], m["mountPath"]) for m in container["volumeMounts"]] == [("tmp", "/tmp")]
    assert "emptyDir" in volumes["tmp"]
    assert {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"} in container["env"]


@pytest.mark.parametrize("name", ALL)
def test_every_image_is_pinned(name: str) -> None:
    for workload in workloads(built(name)):
        for container in containers(workload):
            image = container["image"]
            name_part, _, tag = image.partition("@")[0].rpartition(":")
            assert "@sha256:" in image or (name_part and tag and tag != "latest"), image


def test_production_pulls_from_a_registry() -> None:
    image = server_container(built("overlays/production"))["image"]
    assert "." in image.split("/")[0], f"{image} has no registry host"


# -- replicas, disruption, spreading --------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_the_autoscaler_owns_the_replica_count(name: str) -> None:
    objects = built(name)
    deployment = server(objects)
    hpa = one(objects, "HorizontalPodAutoscaler", SERVER)
    assert "replicas" not in deployment["spec"], "an applied replica count fights the HPA"
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": deployment["metadata"]["name"],
    }
    assert 2 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]
    assert any(m["resource"]["name"] == "cpu" for m in hpa["spec"]["metrics"])


def test_production_runs_at_least_three_replicas() -> None:
    hpa = one(built("overlays/production"), "HorizontalPodAutoscaler", SERVER)
    assert hpa["spec"]["minReplicas"] >= 3


@pytest.mark.parametrize("name", ALL)
def test_the_disruption_budget_covers_exactly_the_server_pods(name: str) -> None:
    objects = built(name)
    pdb = one(objects, "PodDisruptionBudget", SERVER)
    hpa = one(objects, "HorizontalPodAutoscaler", SERVER)
    for workload in workloads(objects):
        assert selects(pdb["spec"]["selector"], pod_labels(workload)) == (
            workload is server(objects)
        )
    assert 1 <= pdb["spec"]["maxUnavailable"] < hpa["spec"]["minReplicas"]
    assert pdb["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"


@pytest.mark.parametrize("name", ALL)
def test_replicas_spread_over_zones_and_nodes(name: str) -> None:
    deployment = server(built(name))
    spread = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
    keys = {constraint["topologyKey"] for constraint in spread}
    assert keys == {"topology.kubernetes.io/zone", "kubernetes.io/hostname"}
    for constraint in spread:
        assert selects(constraint["labelSelector"], pod_labels(deployment))
        assert constraint["maxSkew"] == 1


@pytest.mark.parametrize("name", ALL)
def test_rollouts_never_reduce_capacity(name: str) -> None:
    strategy = server(built(name))["spec"]["strategy"]
    assert strategy["type"] == "RollingUpdate"
    assert strategy["rollingUpdate"]["maxUnavailable"] == 0


# -- Services and network -------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_the_service_exposes_grpc_http_and_metrics(name: str) -> None:
    objects = built(name)
    container_ports = ports(server_container(objects))
    service = one(objects, "Service", SERVER)
    assert selects(service["spec"]["selector"], pod_labels(server(objects)))
    by_name = {port["name"]: port for port in service["spec"]["ports"]}
    assert set(by_name) == {"grpc", "http", "metrics"}
    assert by_name["grpc"]["appProtocol"] == "kubernetes.io/h2c"
    assert by_name["http"]["appProtocol"] == "http"
    assert by_name["metrics"]["appProtocol"] == "http"
    for port_name, port in by_name.items():
        assert port["targetPort"] == port_name
        assert port["port"] == container_ports[port_name]
    headless = one(objects, "Service", f"{SERVER}-headless")
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["selector"] == service["spec"]["selector"]


@pytest.mark.parametrize("name", ALL)
def test_server_ingress_is_only_the_grpc_http_and_metrics_ports(name: str) -> None:
    objects = built(name)
    policies = policies_for(objects, pod_labels(server(objects)))
    container_ports = ports(server_container(objects))
    assert any(p["spec"]["policyTypes"] == ["Ingress", "Egress"] for p in policies)
    allowed: set[tuple[int, str]] = set()
    for policy in policies:
        for rule in policy["spec"].get("ingress", []):
            assert rule.get("ports"), "an ingress rule without ports opens every port"
            allowed |= rule_ports(rule)
    assert allowed == {(container_ports[p], "TCP") for p in ("grpc", "http", "metrics")}


@pytest.mark.parametrize("name", ALL)
def test_server_egress_is_only_dns_and_redis(name: str) -> None:
    objects = built(name)
    rules = [
        rule
        for policy in policies_for(objects, pod_labels(server(objects)))
        for rule in policy["spec"].get("egress", [])
    ]
    dns = [rule for rule in rules if rule_ports(rule) == DNS_PORTS]
    assert len(dns) == 1
    (peer,) = dns[0]["to"]
    assert peer["podSelector"] == {"matchLabels": {"k8s-app": "kube-dns"}}
    redis = [rule for rule in rules if rule is not dns[0]]
    for rule in redis:
        assert rule.get("to"), "an egress rule without peers reaches everywhere"
        assert rule_ports(rule), "an egress rule without ports opens every port"
        assert {port for port, _ in rule_ports(rule)} <= REDIS_PORTS
    # Only an overlay knows where Redis is; the base opens nothing but DNS.
    assert len(redis) == (0 if name == "base" else 1)


def test_dev_server_reaches_only_the_dev_redis_pods() -> None:
    objects = built("overlays/dev")
    redis = one(objects, "StatefulSet", "basra-redis")
    (rule,) = one(objects, "NetworkPolicy", "basra-engine-redis-egress")["spec"]["egress"]
    (peer,) = rule["to"]
    assert list(peer) == ["podSelector"]
    assert selects(peer["podSelector"], pod_labels(redis))
    assert rule_ports(rule) == {(6379, "TCP")}


def test_production_redis_egress_is_a_bounded_address_range() -> None:
    objects = built("overlays/production")
    (rule,) = one(objects, "NetworkPolicy", "basra-engine-redis-egress")["spec"]["egress"]
    for peer in rule["to"]:
        network = ipaddress.ip_network(peer["ipBlock"]["cidr"])
        assert network.prefixlen >= 8, f"{network} is the internet, not a Redis"


def test_dev_redis_takes_connections_only_from_the_server() -> None:
    objects = built("overlays/dev")
    redis = one(objects, "StatefulSet", "basra-redis")
    (policy,) = policies_for(objects, pod_labels(redis))
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert "egress" not in policy["spec"], "Redis needs no way out"
    (rule,) = policy["spec"]["ingress"]
    (peer,) = rule["from"]
    assert selects(peer["podSelector"], pod_labels(server(objects)))
    assert rule_ports(rule) == {(6379, "TCP")}


# -- the dev Redis ---------------------------------------------------------------------------


def test_dev_redis_is_persistent_probed_and_append_only() -> None:
    objects = built("overlays/dev")
    redis = one(objects, "StatefulSet", "basra-redis")
    (container,) = containers(redis)
    (claim,) = redis["spec"]["volumeClaimTemplates"]
    mounts = {mount["name"]: mount["mountPath"] for mount in container["volumeMounts"]}
    assert mounts[claim["metadata"]["name"]] == "/data"
    assert claim["spec"]["resources"]["requests"]["storage"]
    assert "tcpSocket" in container["livenessProbe"]
    assert "redis-cli" in " ".join(container["readinessProbe"]["exec"]["command"])
    volumes = {v["name"]: v for v in redis["spec"]["template"]["spec"]["volumes"]}
    conf = one(objects, "ConfigMap", volumes["config"]["configMap"]["name"])["data"]["redis.conf"]
    assert re.search(r"^appendonly yes$", conf, re.MULTILINE)
    assert re.search(r"^appendfsync everysec$", conf, re.MULTILINE)
    assert re.search(r"^dir /data$", conf, re.MULTILINE)
    assert re.search(r"^maxmemory-policy noeviction$", conf, re.MULTILINE)
    assert container["args"][-2:] == ["--requirepass", "$(REDIS_PASSWORD)"]
    service = one(objects, "Service", "basra-redis")
    assert selects(service["spec"]["selector"], pod_labels(redis))
    headless = one(objects, "Service", redis["spec"]["serviceName"])
    assert headless["spec"]["clusterIP"] == "None"
