"""deploy/README.md, the operator guide, stays true to the code and the manifests: every
setting with its flag and default, every exported metric, every alert, and its commands run."""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Final

import pytest

from basra.service.config import ENVIRONMENT, Settings, flag_name, shown
from tests.deploy.exported import metric_names
from tests.deploy.manifests import DEPLOY, built, one

ROOT: Final = DEPLOY.parent

README: Final = (DEPLOY / "README.md").read_text()
CONFIGURE: Final = README.split("\n## Configure\n", 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize("setting", sorted(ENVIRONMENT))
def test_every_setting_is_documented_with_its_flag_and_default(setting: str) -> None:
    variable = ENVIRONMENT[setting]
    rows = [line for line in CONFIGURE.splitlines() if line.startswith(f"| `{variable}` |")]
    assert len(rows) == 1, f"{variable} needs one row in the configuration table"
    cells = [cell.strip() for cell in rows[0].strip("|").split("|")]
    default = Settings.__dataclass_fields__[setting].default
    assert cells[1] == f"`{flag_name(setting)}`"
    assert cells[2] == f"`{shown(default)}`"


def test_every_exported_metric_is_listed() -> None:
    listed = set(re.findall(r"^- `(basra_\w+)`", README, re.MULTILINE))
    assert listed == metric_names()


def test_every_alert_has_a_section() -> None:
    rule = one(built("overlays/production"), "PrometheusRule")
    for group in rule["spec"]["groups"]:
        for alert in group["rules"]:
            assert re.search(rf"^### {alert['alert']}$", README, re.MULTILINE), alert["alert"]


def test_the_image_check_of_the_guide_works_with_kubectl() -> None:
    """The guide's command that shows the production overlay's image runs as written."""
    guide = " ".join(README.split())
    command = "kubectl kustomize deploy/kustomize/overlays/production | grep 'image:'"
    assert f"`{command}`" in guide
    assert "kustomize edit set" not in guide
    kubectl = shutil.which("kubectl")
    assert kubectl, "make test-all installs kubectl"
    rendered = subprocess.run(
        ["sh", "-c", command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    images = set(re.findall(r"image: (\S+)", rendered))
    assert "registry.example.com/basra/basra-engine:0.1.0" in images
