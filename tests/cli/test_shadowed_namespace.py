"""A folder named ``basra`` beside a script (a clone of this repository, say) shadows the
installed ``basra`` namespace: importing the client says so, naming the folder and the fix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_clone_named_basra_beside_a_script_is_named_in_the_import_error(
    tmp_path: Path,
) -> None:
    # The suite runs with the packages installed editable (make setup), where the clone's
    # engine/ folder is found before the installed basra.engine. The clone's top folders,
    # as this repository has them (no __init__.py: namespace portions).
    clone = tmp_path / "basra"
    for top in sorted(p.name for p in ROOT.iterdir() if p.is_dir() and p.name[0] != "."):
        (clone / top).mkdir(parents=True)
        (clone / top / "README.md").write_text("a folder of the clone\n", encoding="utf-8")
    script = tmp_path / "first_match.py"
    script.write_text("from basra.client import Client\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last == (
        f"ImportError: basra.engine is the folder {clone / 'engine'}, not the installed "
        f"package: the folder {clone} (beside your script, or the current directory's) shadows "
        "the installed basra namespace. Rename that folder (e.g. clone into basra-engine) or "
        "run the script from another directory."
    )


def test_the_client_imports_from_a_directory_without_such_a_folder(tmp_path: Path) -> None:
    script = tmp_path / "first_match.py"
    script.write_text("import basra.client\nprint(basra.client.Client.__name__)\n")
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stdout) == (0, "Client\n"), result.stderr
