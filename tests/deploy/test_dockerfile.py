"""deploy/Dockerfile read statically (there is no container engine on the test machines).

test_entrypoint.py runs what the image would run; this file checks how the image is made. No
image is built here: where a Docker daemon and the registry are reachable, build it with
``docker build -f deploy/Dockerfile .`` (deploy/README.md) and check ``GET /`` answers the table.
"""

from __future__ import annotations

import fnmatch
import json
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
WEB: Final = next(stage for stage in STAGES if stage.name == "web")
PINNED_PYTHON: Final = re.compile(r"python:3\.11\.\d+-slim-[a-z]+(@sha256:[0-9a-f]{64})?")
PINNED_NODE: Final = re.compile(r"node:(\d+)\.\d+\.\d+-[a-z]+-slim(@sha256:[0-9a-f]{64})?")
VENV: Final = "/opt/basra"
WEB_ROOT: Final = "/opt/basra/web"
RUNTIME_LIBRARY: Final = re.compile(
    r"apt-get update && apt-get install -y --no-install-recommends (libicu\d+) "
    r"&& rm -rf /var/lib/apt/lists/\*"
)
"""The one Debian package the runtime installs: ICU's shared library (PyICU links to it)."""
BUILD_TOOLS: Final = re.compile(
    r"\b(apt-get|apt|apk|dnf|yum)\s+(install|add)\b|\bpip3?\s+install\b|-m\s+pip\s+install\b"
    r"|\b(gcc|g\+\+|cc|make|cmake|build-essential|buf)\b"
)


def run_lines(stage: Stage) -> str:
    return "\n".join(instruction.arguments for instruction in stage.all("RUN"))


def test_is_multi_stage_with_a_builder_a_web_build_and_a_runtime() -> None:
    assert [stage.name for stage in STAGES] == ["python", "builder", "web", "runtime"]
    assert FINAL.name == "runtime"


def test_every_base_image_is_exactly_pinned_one_python_and_one_node() -> None:
    external = [stage.base for stage in STAGES if stage.base not in {s.name for s in STAGES}]
    assert len(external) == 2, "two pins: the service's Python, the web table's Node.js"
    python, node = external
    assert PINNED_PYTHON.fullmatch(python), f"{python} is not pinned to an exact release"
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == ">=3.11"
    pinned = PINNED_NODE.fullmatch(node)
    assert pinned, f"{node} is not pinned to an exact release"
    assert WEB.base == node, "only the web stage runs Node"
    # The web table's declared Node.js (engines) is the one the image builds it with.
    engines = json.loads((ROOT / "web" / "package.json").read_text())["engines"]["node"]
    assert engines == f">={pinned.group(1)}"


def test_the_web_stage_builds_the_table_as_make_does() -> None:
    script = run_lines(WEB)
    makefile = (ROOT / "Makefile").read_text()
    # The packages from the lock file, never resolved afresh.
    assert {"web/package.json", "web/package-lock.json"} <= {
        source for c in copies(WEB) for source in c.sources
    }
    assert "npm ci --no-audit --no-fund" in script
    assert "npm install" not in script
    # The TypeScript stubs from proto/ with the Makefile's template, by the builder's pinned buf.
    assert "buf generate --template $(WEB)/buf.gen.yaml" in makefile
    assert "buf generate --template web/buf.gen.yaml" in script
    (buf,) = (c for c in copies(WEB) if c.flags == {"from": "builder"})
    assert buf.sources == ("/src/.venv/bin/buf",)
    # The Makefile's web target's build command (tsc --noEmit, then esbuild into dist/).
    assert "npm run --silent build" in makefile
    assert "npm run --silent build" in script
    assert set(copies(WEB)[-1].sources) == {"web/src/"}


def test_the_runtime_serves_the_built_web_table_at_its_web_root() -> None:
    (table,) = (c for c in copies(FINAL) if c.flags == {"from": "web"})
    assert table.sources == ("/src/web/dist/",)
    assert table.destination.rstrip("/") == WEB_ROOT
    assert FINAL.env()["BASRA_WEB_ROOT"] == WEB_ROOT
    # The manifests' ConfigMap (which overrides the image's ENV) names the same directory.
    for overlay in ("overlays/dev", "overlays/production"):
        deployment = one(built(overlay), "Deployment", "basra-engine")
        (ref,) = deployment["spec"]["template"]["spec"]["containers"][0]["envFrom"]
        configmap = one(built(overlay), "ConfigMap", ref["configMapRef"]["name"])
        assert configmap["data"]["BASRA_WEB_ROOT"] == WEB_ROOT, overlay


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
    # PyICU compiles against ICU's headers, found by pkg-config, with a C++ compiler.
    assert re.search(r"--no-install-recommends gcc libc6-dev g\+\+ libicu-dev pkg-config", script)
    assert "BASRA_ENGINE_COMPILE=yes .venv/bin/pip wheel --no-deps" in script
    assert FINAL.env()["BASRA_ENGINE"] == "compiled", "the image refuses the slow engine"
    assert f"{VENV}/bin/pip install -c constraints.txt /wheels/" in script
    # pip leaves the runtime venv last, after the code generator it does not need.
    uninstall = re.search(rf"{VENV}/bin/pip uninstall --yes ([\w\- ]+)", script)
    assert uninstall
    assert uninstall.group(1).split()[-1] == "pip"


def test_the_final_stage_has_no_build_tools_or_installer() -> None:
    script = run_lines(FINAL)
    # ICU's runtime library, its package lists removed in the same layer; nothing else.
    assert RUNTIME_LIBRARY.search(script), script
    assert not BUILD_TOOLS.search(RUNTIME_LIBRARY.sub("", script)), script
    assert 'python -c "import icu"' in script, "the build proves PyICU finds its ICU"
    assert "pip uninstall --yes pip" in script
    assert "ensurepip" in script
    venv, table = copies(FINAL)
    assert venv.flags == {"from": "builder"}
    assert (venv.sources, venv.destination) == ((VENV,), VENV), "the runtime venv"
    assert table.flags == {"from": "web"}, "and the web table's static files, nothing of Node"
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
    scripts = tomllib.loads((ROOT / "service" / "pyproject.toml").read_text())["project"]["scripts"]
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
        "proto/python/src/basra/v1/game_pb2.py",
        ".env",
        "engine/src/basra/engine/game.cpython-311-x86_64-linux-gnu.so",
        "engine/src/basra/engine/.compiled",
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
    assert not included("service/src/basra/service/__pycache__/x.pyc")


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
    # engine/setup.py compiles the engine with mypyc from the build requirements (the engine's own
    # project and the whole service's): the same mypy as the one that type-checks it
    # (constraints.txt), so both read the code alike.
    pins = (ROOT / "constraints.txt").read_text().splitlines()
    for project in ("pyproject.toml", "engine/pyproject.toml"):
        requires = tomllib.loads((ROOT / project).read_text())["build-system"]["requires"]
        (mypy,) = (r for r in requires if r.startswith("mypy"))
        assert mypy in pins, project
