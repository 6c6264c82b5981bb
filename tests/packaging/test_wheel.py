"""The installable distribution: what the wheel holds and what installing it pulls in.

The wheel is built from a copy of the source (so the worktree gains no build/ or egg-info) with
the venv's own setuptools, offline (--no-build-isolation, --no-deps).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD_TOOLS = ("grpcio-tools", "buf-bin", "mypy-protobuf")
TEST_TOOLS = ("pytest", "hypothesis", "mypy", "ruff")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, source / name)
    # The components, as a clean clone has them plus the generated stubs.
    local = shutil.ignore_patterns(
        "__pycache__", "*.pyc", "*.so", ".compiled", "build", "*.egg-info"
    )
    for component in ("engine", "proto/python", "clients/python", "service"):
        shutil.copytree(ROOT / component, source / component, ignore=local)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "--wheel-dir",
            str(out),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (built,) = out.glob("*.whl")
    return built


def names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def test_the_wheel_holds_only_the_basra_namespace_and_its_dist_info(wheel: Path) -> None:
    listing = names(wheel)
    tops = {name.split("/")[0] for name in listing}
    (dist_info,) = (t for t in tops if t.endswith(".dist-info"))
    assert tops == {"basra", dist_info}, tops
    assert dist_info.startswith("basra_engine-")
    assert not [n for n in listing if "/tests/" in n or n.startswith(("tests/", "engine/"))]
    assert not [n for n in listing if n.startswith("service/") or "__pycache__" in n]


def test_the_wheel_ships_the_typing_marker_the_rules_and_the_generated_stubs(wheel: Path) -> None:
    listing = set(names(wheel))
    typed = {f"basra/{package}/py.typed" for package in ("engine", "service", "client", "v1")}
    assert {*typed, "basra/engine/RULES.md", "basra/engine/VARIANTS.md"} <= listing
    assert {"basra/engine/__init__.py", "basra/service/server.py", "basra/client/__init__.py"} <= (
        listing
    )
    for proto in ("basra_service", "game", "errors"):
        assert f"basra/v1/{proto}_pb2.py" in listing
        assert f"basra/v1/{proto}_pb2.pyi" in listing
    assert "basra/v1/basra_service_pb2_grpc.py" in listing
    assert "basra/v1/basra_service_pb2_grpc.pyi" in listing
    # basra/v1 ships every generated stub (protobuf, gRPC, Connect) and its typing marker, nothing
    # else: no stamp, no proto tooling.
    generated = {
        f"basra/v1/{path.name}"
        for path in (ROOT / "proto" / "python" / "src" / "basra" / "v1").iterdir()
        if path.suffix in (".py", ".pyi") or path.name == "py.typed"
    }
    shipped = {n for n in listing if n.startswith("basra/v1/")}
    assert shipped == generated
    assert all(
        re.fullmatch(r"basra/v1/((__init__|\w+_pb2(_grpc)?|\w+_connect)\.pyi?|py\.typed)", n)
        for n in shipped
    ), shipped


def metadata(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        (path,) = (n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        text = archive.read(path).decode()
    return Parser().parsestr(text).get_all("Requires-Dist") or []


def test_build_and_test_tools_are_not_runtime_dependencies(wheel: Path) -> None:
    requires = metadata(wheel)
    runtime = [r for r in requires if "extra ==" not in r]
    runtime_names = {re.split(r"[\s<>=!~;\[(]", r, maxsplit=1)[0].lower() for r in runtime}
    assert {"grpcio", "protobuf", "redis"} <= runtime_names
    assert not runtime_names & {*BUILD_TOOLS, *TEST_TOOLS}, runtime_names
    # buf and mypy-protobuf are build tools too: not even behind the dev extra's name at runtime.
    assert not any(r.lower().startswith("grpcio-tools") for r in requires)


def test_the_entry_point_is_the_one_command(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        (path,) = (n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt"))
        text = archive.read(path).decode()
    assert "basra-engine = basra.service.cli:main" in text
