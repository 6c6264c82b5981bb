"""deploy/Dockerfile read statically (there is no container engine on the test machines).

test_entrypoint.py runs what the image would run; this file checks how the image is made.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from typing import Final

import pytest

from basra.service.config import Settings
from tests.deploy.dockerfile import (
    DOCKERFILE,
    Stage,
    copies,
    dockerignore,
    external_base,
    stages,
)
from tests.deploy.manifests import ROOT, built, containers, one

STAGES: Final = stages()
FINAL: Final = STAGES[-1]
BUILDER: Final = next(stage for stage in STAGES if stage.name == "builder")
PINNED_PYTHON: Final = re.compile(r"python:3\.11\.\d+-slim-[a-z]+(@sha256:[0-9a-f]{64})?")
VENV: Final = "/opt/basra"
BUILD_TOOLS: Final = re.compile(
    r"\b(apt-get|apt|apk|dnf|yum)\s+(install|add)\b|\bpip3?\s+install\b|-m\s+pip\s+install\b"
    r"|\b(gcc|g\+\+|cc|make|cmake|build-essential|buf)\b"
)


def run_lines(stage: Stage) -> str:
    return "\n".join(instruction.arguments for instruction in stage.all("RUN"))


def test_is_multi_stage_with_a_builder_and_a_runtime() -> None:
    assert [stage.name for stage in STAGES] == ["python", "builder", "runtime"]
    assert FINAL.name == "runtime"


def test_every_base_image_is_one_exactly_pinned_python() -> None:
    external = [stage.base for stage in STAGES if stage.base not in {s.name for s in STAGES}]
    assert len(external) == 1, "one pin to refresh, shared by every stage"
    (image,) = external
    assert PINNED_PYTHON.fullmatch(image), f"{image} is not pinned to an exact release"
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == ">=3.11"


def test_builder_and_runtime_share_the_interpreter() -> None:
    # The runtime venv's python is a link to the builder's interpreter: they must be the same.
    assert external_base(BUILDER, STAGES) == external_base(FINAL, STAGES)


def test_builder_generates_the_stubs_and_builds_the_wheel() -> None:
    script = run_lines(BUILDER)
    assert "buf generate" in script
    assert (
        "pip install -c constraints.txt grpcio-tools buf-bin mypy-protobuf protoc-gen-connectrpc"
        in script
    )
    assert "pip wheel --no-deps" in script
    # The compiled engine: a C compiler in the builder, and a wheel that must compile.
    assert re.search(r"apt-get install -y --no-install-recommends gcc libc6-dev", script)
    assert "BASRA_ENGINE_COMPILE=yes .venv/bin/pip wheel --no-deps" in script
    assert FINAL.env()["BASRA_ENGINE"] == "compiled", "the image refuses the slow engine"
    assert f"{VENV}/bin/pip install -c constraints.txt /wheels/" in script
    # pip leaves the runtime venv last, after the code generator it does not need.
    uninstall = re.search(rf"{VENV}/bin/pip uninstall --yes ([\w\- ]+)", script)
    assert uninstall
    assert uninstall.group(1).split()[-1] == "pip"


def test_the_final_stage_has_no_build_tools_or_installer() -> None:
    script = run_lines(FINAL)
    assert not BUILD_TOOLS.search(script), script
    assert "pip uninstall --yes pip" in script
    assert "ensurepip" in script
    (copy,) = copies(FINAL)
    assert copy.flags == {"from": "builder"}
    assert (copy.sources, copy.destination) == ((VENV,), VENV), "only the runtime venv"
    assert not FINAL.all("ADD")


def test_the_final_stage_runs_as_the_numeric_non_root_user_of_the_deployment() -> None:
    (user,) = FINAL.all("USER")
    match = re.fullmatch(r"(\d+):(\d+)", user.arguments)
    assert match, "numeric, so the kubelet can check runAsNonRoot"
    uid, gid = int(match.group(1)), int(match.group(2))
    assert uid > 0
    assert gid > 0
    pod = one(built("overlays/production"), "Deployment", "basra-engine")["spec"]["template"]
    assert (
        pod["spec"]["securityContext"]["runAsUser"],
        pod["spec"]["securityContext"]["runAsGroup"],
    ) == (uid, gid)


def test_the_entrypoint_is_basra_engine_serve() -> None:
    (entrypoint,) = FINAL.all("ENTRYPOINT")
    assert entrypoint.exec_form() == ["basra-engine", "serve"]
    assert not FINAL.all("CMD"), "arguments come from the environment, not CMD"
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert "basra-engine" in scripts
    assert f"PATH={VENV}/bin:$PATH" in DOCKERFILE.read_text()


def test_exposes_the_default_grpc_http_and_metrics_ports() -> None:
    (expose,) = FINAL.all("EXPOSE")
    exposed = {int(port) for port in expose.arguments.split()}
    defaults = Settings()
    assert defaults.http_listen is not None
    assert exposed == {
        int(defaults.listen.rsplit(":", 1)[1]),
        int(defaults.http_listen.rsplit(":", 1)[1]),
        defaults.metrics_port,
    }
    deployment = one(built("overlays/production"), "Deployment", "basra-engine")
    declared = {port["containerPort"] for c in containers(deployment) for port in c["ports"]}
    assert declared == exposed


def test_the_runtime_never_writes_bytecode() -> None:
    assert FINAL.env()["PYTHONDONTWRITEBYTECODE"] == "1"


@pytest.mark.parametrize(
    "path",
    [
        ".git/HEAD",
        ".venv/bin/python",
        "basra/v1/game_pb2.py",
        ".env",
        "basra/engine/game.cpython-311-x86_64-linux-gnu.so",
    ],
)
def test_dockerignore_keeps_local_state_out_of_the_context(path: str) -> None:
    assert not included(path)


def test_dockerignore_lets_in_everything_the_dockerfile_copies() -> None:
    sources = [src for stage in STAGES for c in copies(stage) if not c.flags for src in c.sources]
    assert sources
    for source in sources:
        assert (ROOT / source).exists(), source
        assert included(source.rstrip("/") + ("/x.py" if source.endswith("/") else "")), source
    assert not included("basra/service/__pycache__/x.pyc")


def included(path: str) -> bool:
    """Whether .dockerignore lets ``path`` into the build context (last match wins)."""
    verdict = True
    for pattern in dockerignore():
        negated = pattern.startswith("!")
        glob = pattern.lstrip("!").rstrip("/")
        parts = path.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if glob.startswith("**/"):
            hit = any(fnmatch.fnmatchcase(part, glob[3:]) for part in parts)
        else:
            hit = any(fnmatch.fnmatchcase(prefix, glob) for prefix in prefixes)
        if hit:
            verdict = negated
    return verdict


def test_mypy_builds_the_engine_at_the_pinned_version() -> None:
    # setup.py compiles the engine with mypyc from the build requirements: the same mypy as the
    # one that type-checks it (constraints.txt), so both read the code alike.
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    (mypy,) = (r for r in requires if r.startswith("mypy"))
    pins = (ROOT / "constraints.txt").read_text().splitlines()
    assert mypy in pins
