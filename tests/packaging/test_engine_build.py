"""The engine's build compiles with mypyc only where a C compiler works, and says so."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ENGINE_SETUP = Path(__file__).resolve().parents[2] / "engine" / "setup.py"
pytestmark = pytest.mark.core


def engine_setup() -> ModuleType:
    """engine/setup.py as a module (its ``setup()`` runs only as a script)."""
    spec = importlib.util.spec_from_file_location("engine_setup", ENGINE_SETUP)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_missing_compiler_builds_the_pure_engine_or_fails_when_compiling_is_required(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    build = engine_setup()
    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.setenv("BASRA_ENGINE_COMPILE", "auto")
    assert build.engine_extensions() == []
    assert "no working C compiler" in capsys.readouterr().err
    monkeypatch.setenv("BASRA_ENGINE_COMPILE", "yes")
    with pytest.raises(SystemExit, match="no working C compiler"):
        build.engine_extensions()


def test_a_compiler_that_fails_on_python_headers_does_not_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CC", "false")
    assert engine_setup()._compiler_works() is False
