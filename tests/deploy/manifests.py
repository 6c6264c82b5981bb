"""The kustomizations under deploy/kustomize, rendered with ``kubectl kustomize``, and lookups.

Rendering shells out to kubectl as an operator would (``kubectl kustomize <dir>``). A missing
kubectl is an error, never a skip: ``make test`` installs Debian's kubernetes-client first.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import yaml

ROOT: Final = Path(__file__).resolve().parents[2]
DEPLOY: Final = ROOT / "deploy"
KUSTOMIZE: Final = DEPLOY / "kustomize"

Manifest = dict[str, Any]


KUSTOMIZE_AT_LEAST: Final = (5, 0)
"""Components, ``labels:`` and ``patches:`` need kustomize 5 (embedded in kubectl >= 1.27)."""


@functools.cache
def kubectl() -> str:
    """The kubectl executable, checked to embed a recent enough kustomize.

    Raises:
        AssertionError: kubectl is not on PATH (``make kubectl`` installs it), or too old.
    """
    found = shutil.which("kubectl")
    assert found, "kubectl is not on PATH: run `make kubectl` (Debian's kubernetes-client)"
    result = subprocess.run(
        [found, "version", "--client", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, f"{found} version failed:\n{result.stderr}"
    version = json.loads(result.stdout)
    embedded = re.match(r"v(\d+)\.(\d+)", version.get("kustomizeVersion", "v0.0"))
    assert embedded, version
    assert (int(embedded[1]), int(embedded[2])) >= KUSTOMIZE_AT_LEAST, (
        f"{found} {version['clientVersion']['gitVersion']} embeds kustomize "
        f"{version.get('kustomizeVersion', '< v4 (unreported)')}; the manifests need kustomize "
        ">= 5.0, i.e. kubectl >= 1.27 (Debian bookworm's kubernetes-client 1.20 is too old)"
    )
    return found


def _kind_of(directory: Path) -> str:
    document = yaml.safe_load((directory / "kustomization.yaml").read_text())
    return str(document["kind"])


def kustomizations() -> list[str]:
    """Every buildable kustomization (kind Kustomization), relative to deploy/kustomize."""
    return sorted(
        str(path.parent.relative_to(KUSTOMIZE))
        for path in KUSTOMIZE.rglob("kustomization.yaml")
        if _kind_of(path.parent) == "Kustomization"
    )


def components() -> list[str]:
    """Every kustomize Component, relative to deploy/kustomize."""
    return sorted(
        str(path.parent.relative_to(KUSTOMIZE))
        for path in KUSTOMIZE.rglob("kustomization.yaml")
        if _kind_of(path.parent) == "Component"
    )


def render(directory: Path) -> list[Manifest]:
    """The objects ``kubectl kustomize directory`` prints.

    Raises:
        AssertionError: kustomize failed (its message is included).
    """
    result = subprocess.run(
        [kubectl(), "kustomize", str(directory)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, f"kubectl kustomize {directory} failed:\n{result.stderr}"
    objects = [doc for doc in yaml.safe_load_all(result.stdout) if doc is not None]
    assert objects, f"kubectl kustomize {directory} rendered nothing"
    return objects


@functools.cache
def built(name: str) -> list[Manifest]:
    """``render`` of the kustomization ``name`` (relative to deploy/kustomize), once per run.

    Callers share the result: read it, never change it.
    """
    return render(KUSTOMIZE / name)


def of_kind(objects: list[Manifest], kind: str) -> list[Manifest]:
    return [obj for obj in objects if obj["kind"] == kind]


def one(objects: list[Manifest], kind: str, name: str | None = None) -> Manifest:
    """The single object of ``kind`` (named ``name`` if given)."""
    found = [
        obj for obj in of_kind(objects, kind) if name is None or obj["metadata"]["name"] == name
    ]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def workloads(objects: list[Manifest]) -> list[Manifest]:
    """Objects that run pods."""
    return [obj for obj in objects if obj["kind"] in ("Deployment", "StatefulSet", "DaemonSet")]


def containers(workload: Manifest) -> Iterator[Manifest]:
    """Every container and init container of a workload's pod template."""
    spec = workload["spec"]["template"]["spec"]
    yield from spec.get("initContainers", [])
    yield from spec["containers"]


def selects(selector: Manifest, labels: dict[str, str]) -> bool:
    """Whether a matchLabels-style selector matches ``labels``."""
    match = selector.get("matchLabels", selector)
    assert match, "an empty selector selects everything"
    assert "matchExpressions" not in selector, "selectors here use matchLabels only"
    return all(labels.get(key) == value for key, value in match.items())
