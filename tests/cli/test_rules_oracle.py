"""`basra-engine plans --rules NAME` and `basra-engine rules [--json]`, run as users run them."""

from __future__ import annotations

import json
import subprocess

from google.protobuf import json_format

from basra.engine import RULE_SYSTEMS
from basra.service import convert
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import rules_pb2
from tests.cli.test_oracle import COMMAND


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [COMMAND, *args], input=stdin, capture_output=True, text=True, timeout=60, check=False
    )


def test_plans_under_the_jordanian_rules_give_each_basra_its_value() -> None:
    result = run("plans", "--rules", "jordanian", "--floor", "QS", "--card", "QH")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "plan 1: QS  (basra +20)"


def test_plans_under_the_lobashev_rules_treat_the_7d_as_an_ordinary_seven() -> None:
    result = run("plans", "--rules", "lobashev", "--floor", "3C 4D 9S", "--card", "7D", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "floor": ["3C", "4D", "9S"],
        "card": "7D",
        "rules": "lobashev",
        "plans": [
            {"id": 1, "captures": ["3C", "4D"], "basra": False, "sweep": False, "basra_points": 0}
        ],
    }


def test_plans_under_eram_by_default_answer_as_before() -> None:
    default = run("plans", "--floor", "9S 8H", "--card", "7D", "--json")
    named = run("plans", "--rules", "eram", "--floor", "9S 8H", "--card", "7D", "--json")
    assert default.stdout == named.stdout
    assert json.loads(default.stdout)["plans"][0]["basra"] is True
    egyptian = run("plans", "--rules", "egyptian", "--floor", "9S 8H", "--card", "7D", "--json")
    assert json.loads(egyptian.stdout)["plans"][0]["basra"] is False  # 17 > 10


def test_a_batch_line_may_name_its_rules() -> None:
    lines = [
        {"floor": ["9S", "8H"], "card": "7D"},
        {"floor": ["9S", "8H"], "card": "7D", "rules": "persian"},
        {"floor": ["QS"], "card": "QH", "rules": "atlantis"},
    ]
    result = run("plans", "--batch", "-", stdin="\n".join(json.dumps(x) for x in lines))
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.returncode == 1
    assert [a.get("plans", [{}])[0].get("basra") for a in answers[:2]] == [True, False]
    assert answers[2]["error"]["reason"] == "UNKNOWN_RULES"


def test_unknown_rules_are_an_error_naming_the_known_ones() -> None:
    result = run("plans", "--rules", "lebanese", "--card", "QH")
    assert result.returncode == 1
    assert "unknown rules 'lebanese'" in result.stderr
    assert "persian-partnership" in result.stderr


def test_rules_json_is_what_list_rules_answers() -> None:
    result = run("rules", "--json")
    assert result.returncode == 0, result.stderr
    expected = pb.ListRulesResponse(
        rules=[convert.rule_system_to_pb(s) for s in RULE_SYSTEMS.values()],
        left_out=[rules_pb2.LeftOutRuleSystem(name="lebanese", reason=convert.LEFT_OUT[0][1])],
    )
    assert json.loads(result.stdout) == json_format.MessageToDict(expected)


def test_rules_lists_every_rule_system_readably_and_says_the_lebanese_game_is_missing() -> None:
    result = run("rules")
    assert result.returncode == 0, result.stderr
    heads = [line for line in result.stdout.splitlines() if not line[0].isspace()]
    # Each rule system under the name players read, with the value --rules takes.
    assert heads[:-1] == [f"{s.title} (--rules {s.name})" for s in RULE_SYSTEMS.values()]
    assert heads[0] == "Classic, to 121 (--rules eram)"
    assert "Lebanese" in result.stdout.splitlines()[-1]
    assert ".txt" not in result.stdout  # the seeds' file names are for developers
