"""Every kustomization renders, and every rendered object is one Kubernetes accepts.

Built-in kinds are validated against the OpenAPI schemas shipped by kubernetes-validate, in
strict mode (unknown fields are errors), for the newest Kubernetes it knows and for the oldest
the manifests support (1.31: native gRPC probes, the preStop sleep action, PDB
unhealthyPodEvictionPolicy). Prometheus Operator kinds are checked in test_observability.py.
"""

from __future__ import annotations

from typing import Final

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from tests.deploy.manifests import KUSTOMIZE, Manifest, built, components, kustomizations

KUBERNETES_VERSIONS: Final = ("1.37.0", "1.31.0")
# Validated elsewhere: the Prometheus Operator kinds in test_observability.py, the Gateway API
# kinds (no schemas in kubernetes-validate) in test_gateway.py.
CUSTOM_KINDS: Final = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"),
    ("monitoring.coreos.com/v1", "PrometheusRule"),
    ("gateway.networking.k8s.io/v1", "Gateway"),
    ("gateway.networking.k8s.io/v1", "HTTPRoute"),
    ("gateway.networking.k8s.io/v1", "GRPCRoute"),
}
KUSTOMIZATIONS: Final = kustomizations()


def test_the_expected_kustomizations_exist() -> None:
    assert KUSTOMIZATIONS == [
        "base",
        "overlays/dev",
        "overlays/gateway-example",
        "overlays/production",
    ]
    assert components() == [
        "components/gateway-api",
        "components/observability",
        "components/redis-dev",
        "components/redis-external",
    ]


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_renders_with_kubectl_kustomize(name: str) -> None:
    objects = built(name)
    names = [(obj["kind"], obj["metadata"]["name"]) for obj in objects]
    assert len(names) == len(set(names)), f"{name} renders an object twice"
    assert ("Deployment", "basra-engine") in names


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_builtin_object_validates_strictly(name: str, version: str) -> None:
    checked = 0
    for obj in built(name):
        if (obj["apiVersion"], obj["kind"]) in CUSTOM_KINDS:
            continue
        label = f"{obj['kind']}/{obj['metadata']['name']} in {name}"
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{label} is invalid for Kubernetes {version}: {exc}")
        except kubernetes_validate.SchemaNotFoundError:
            pytest.fail(f"{label}: no schema for {obj['apiVersion']} in Kubernetes {version}")
        checked += 1
    assert checked >= 6


def test_every_component_is_used_by_an_overlay() -> None:
    used: set[str] = set()
    for name in KUSTOMIZATIONS:
        document: Manifest = yaml.safe_load((KUSTOMIZE / name / "kustomization.yaml").read_text())
        for component in document.get("components", []):
            used.add(str((KUSTOMIZE / name / component).resolve().relative_to(KUSTOMIZE)))
    assert used == set(components())


@pytest.mark.parametrize(
    "name", ["overlays/dev", "overlays/gateway-example", "overlays/production"]
)
def test_overlays_put_everything_in_one_namespace(name: str) -> None:
    namespaces = {
        obj["metadata"].get("namespace") for obj in built(name) if obj["kind"] != "Namespace"
    }
    assert len(namespaces) == 1
    assert None not in namespaces
