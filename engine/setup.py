"""The build's one dynamic part: the engine compiled with mypyc when a C compiler is present.

Everything else about the package lives in pyproject.toml. mypy and black ship themselves the
same way: the wheel carries both the C extensions and the ``.py`` sources, and the sources are the
fallback. ``basra.engine`` is standard library only and ``mypy --strict`` clean, which is what
mypyc needs; ``__init__.py`` stays interpreted because it chooses between the two
(``BASRA_ENGINE=pure``, see src/basra/engine/__init__.py).

The top-level setup.py, which builds the whole service as one distribution, compiles the engine
with ``engine_extensions`` from here.

    BASRA_ENGINE_COMPILE=auto  (default) compile when mypyc and a working C compiler are present
    BASRA_ENGINE_COMPILE=yes   compile or fail (the image: it must not ship the slow engine)
    BASRA_ENGINE_COMPILE=no    the pure-Python engine only
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from setuptools import Extension, setup

# The engine's sources, relative to this file's folder.
ENGINE = Path("src/basra/engine")
# The shared library lands inside the package (basra/engine/_native__mypyc.*.so) rather than
# at the top level of site-packages under a hashed name.
GROUP = "basra.engine._native"


def _compiler_works() -> bool:
    """Whether the C compiler the build would use (``$CC``, else the one Python was built with)
    compiles a file that includes Python's headers here."""
    compiler = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp, "probe.c")
        probe.write_text("#include <Python.h>\nint probe(void) { return 0; }\n")
        command = [*compiler, "-c", str(probe), "-o", str(Path(tmp, "probe.o"))]
        try:
            done = subprocess.run(  # noqa: S603 (the build's own compiler, as setuptools runs it)
                [*command, "-I", sysconfig.get_paths()["include"]],
                capture_output=True,
                check=False,
            )
        except OSError:
            return False
    return done.returncode == 0


def engine_extensions(engine: Path = ENGINE) -> list[Extension]:
    """The engine's modules as mypyc extensions, or none (see the module docstring).

    ``engine`` is the package's folder relative to the working directory, whose mypy
    configuration must name the ``src`` folder holding it (``mypy_path``).
    """
    mode = os.environ.get("BASRA_ENGINE_COMPILE", "auto")
    if mode not in ("auto", "yes", "no"):
        sys.exit(f"BASRA_ENGINE_COMPILE={mode!r}: use auto, yes or no")
    if mode == "no":
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        if mode == "yes":
            sys.exit("BASRA_ENGINE_COMPILE=yes but mypyc (from mypy) is not installed")
        print("basra: mypyc not installed: the pure-Python engine only", file=sys.stderr)
        return []
    if not _compiler_works():
        if mode == "yes":
            sys.exit("BASRA_ENGINE_COMPILE=yes but no working C compiler was found")
        print("basra: no working C compiler: the pure-Python engine only", file=sys.stderr)
        return []
    # Every engine module but the package's __init__, in a stable order (the build hashes it).
    sources = sorted(str(p) for p in engine.glob("*.py") if p.name != "__init__.py")
    return list(mypycify(sources, opt_level="3", group_name=GROUP))


if __name__ == "__main__":
    setup(ext_modules=engine_extensions())
