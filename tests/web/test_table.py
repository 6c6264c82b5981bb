"""The web table (web/) in a real browser: Debian's Chromium driven by playwright-core.

Each test starts ``basra-engine serve`` as a person runs it (its own process, free ports, the
session's real redis-server, the built table at / on the HTTP port; its bots move at once and
search briefly) and runs one scenario of web/e2e/ with Node (those that need a position for
certain drive a seeded match through the API while the page follows it: web/e2e/support.ts).
A scenario can ask this side to act on the service (``REQUEST restart``); it fails with the
browser's own assertion message.
The invitation scenario reaches the service at this machine's network address, where the page
is not a secure context. Chromium, the npm packages and the built table are prerequisites that
``make test`` sets up; when one is missing the tests fail (never skip) and say so. Screenshots
go to the test's temporary directory; ``make screenshot`` rewrites web/screenshot.png, the one
the README shows.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from tests.support import free_port

HERE: Final = Path(__file__).resolve().parent
ROOT: Final = HERE.parents[1]
WEB: Final = ROOT / "web"
DIST: Final = WEB / "dist"
TSX: Final = WEB / "node_modules" / "tsx"
CHROMIUM: Final = shutil.which("chromium") or "/usr/bin/chromium"
NODE: Final = shutil.which("node") or "node"
SERVE: Final = shutil.which("basra-engine", path=str(Path(sys.executable).parent)) or "basra-engine"
# Bounds on waiting (a scenario that hangs fails instead of blocking the suite); never asserted.
SCENARIO_LIMIT_S: Final = 600
START_LIMIT_S: Final = 30
SETUP: Final = "run `make test` (or `make web chromium`), which builds web/dist and installs them"


def prerequisites() -> None:
    missing = []
    if not Path(CHROMIUM).exists():
        missing.append("Chromium (Debian's chromium package)")
    if shutil.which(NODE) is None:
        missing.append("Node.js")
    if not TSX.exists():
        missing.append("the npm packages of web/")
    if not (DIST / "index.html").exists() or not (DIST / "app.js").exists():
        missing.append("the built table (web/dist)")
    if missing:
        pytest.fail(f"The browser tests cannot run: missing {', '.join(missing)}; {SETUP}.")


class Service:
    """``basra-engine serve`` in its own process on fixed free ports, so that it can be
    restarted where the pages expect it."""

    def __init__(self, redis_url: str, log: Path, host: str = "127.0.0.1") -> None:
        self.grpc_port = free_port()
        self.http_port = free_port()
        self.redis_url = redis_url
        self.log = log
        self.host = host
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.http_port}"

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    SERVE,
                    "serve",
                    "--listen",
                    f"127.0.0.1:{self.grpc_port}",
                    "--http-listen",
                    f"{self.host}:{self.http_port}",
                    "--redis-url",
                    self.redis_url,
                    "--metrics-port",
                    "off",
                    "--web-root",
                    str(DIST),
                    # Seeded matches make the scenarios that need a rare position certain.
                    "--allow-seeds",
                    # The bots move as soon as it is their turn, and the strong bot's search
                    # stops early: the scenarios wait for people, not for bots.
                    "--bot-pace-seconds",
                    "0",
                    "--bot-strong-seconds",
                    "0.05",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + START_LIMIT_S
        while not self._healthy():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"basra-engine serve did not become healthy:\n{self.log.read_text()}")
            time.sleep(0.05)

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=START_LIMIT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture
def service(redis_url: str, tmp_path: Path) -> Iterator[Service]:
    prerequisites()
    served = Service(redis_url, tmp_path / "serve.log")
    served.start()
    yield served
    served.stop()


def network_address() -> str:
    """This machine's IPv4 address on its network (not a loopback one): the address a friend's
    browser on the same network would open. Read from the route the system would take to a
    documentation address (a UDP connect sends nothing)."""
    found = []
    for target in ("192.0.2.1", "198.51.100.1", "10.255.255.254"):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                probe.connect((target, 9))
            except OSError:
                continue
            address = str(probe.getsockname()[0])
        if not ipaddress.ip_address(address).is_loopback:
            return address
        found.append(address)
    pytest.fail(
        "The network test needs a non-loopback IPv4 address on this machine (`hostname -I`): "
        f"found none (routes gave {found or 'nothing'})."
    )


@pytest.fixture
def network_service(redis_url: str, tmp_path: Path) -> Iterator[Service]:
    """The service's HTTP port on this machine's network address, where a page is not a secure
    context (Chromium trusts plain HTTP on localhost and 127.0.0.0/8 only)."""
    prerequisites()
    served = Service(redis_url, tmp_path / "serve.log", host=network_address())
    served.start()
    yield served
    served.stop()


def scenario(name: str, service: Service, screenshots: Path, **env: str) -> str:
    """Runs web/e2e/<name>.ts against the service and returns its output; fails with it."""
    script = f"e2e/{name}.ts"
    output = []
    with subprocess.Popen(
        # One process (node loading tsx, from web/ where it is installed), so that the scenario
        # itself reads our stdin.
        [NODE, "--import", "tsx", script],
        cwd=WEB,
        env={
            **os.environ,
            "BASE_URL": service.url,
            "CHROMIUM": CHROMIUM,
            "SCREENSHOTS": str(screenshots),
            **env,
        },
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        watchdog = threading.Timer(SCENARIO_LIMIT_S, process.kill)
        watchdog.start()
        for line in process.stdout:
            output.append(line)
            if line.startswith("REQUEST "):
                request = line.removeprefix("REQUEST ").strip()
                assert request == "restart", f"unknown request {request!r}"
                service.restart()
                process.stdin.write(f"DONE {request}\n")
                process.stdin.close()
        code = process.wait()
        watchdog.cancel()
    text = "".join(output)
    server_log = service.log.read_text()
    assert code == 0, f"scenario {name} failed:\n{text}\n--- server log ---\n{server_log}"
    return text


def test_two_people_play_a_whole_match_and_never_see_each_others_cards(
    service: Service, tmp_path: Path
) -> None:
    output = scenario("two-seats", service, tmp_path)
    assert "played" in output
    assert (tmp_path / "two-seats-mid-hand.png").stat().st_size > 0
    assert (tmp_path / "two-seats-result.png").stat().st_size > 0


# The web table's smoke in `make test` (docs/testing.md): the table loads, plays against the
# bot, and a reload resumes it.
@pytest.mark.core
def test_a_reload_mid_hand_resumes_the_table_against_the_bot(
    service: Service, tmp_path: Path
) -> None:
    output = scenario("reload", service, tmp_path)
    assert "resumed at version" in output
    assert (tmp_path / "bot-plans.png").stat().st_size > 0


def test_a_whole_match_against_the_strong_bot_with_its_captures_flying_to_the_piles(
    service: Service, tmp_path: Path
) -> None:
    output = scenario("strong-bot", service, tmp_path)
    assert "strong bot: " in output
    assert (tmp_path / "strong-bot-result.png").stat().st_size > 0


def test_a_rubbers_won_game_has_its_moment_and_stays_on_the_sheet_until_the_next_deal(
    service: Service, tmp_path: Path
) -> None:
    output = scenario("rubber", service, tmp_path)
    assert "rubber: game 1 won after " in output


def test_an_invited_person_claims_a_seat_from_another_browser_over_plain_http_on_the_network(
    network_service: Service, tmp_path: Path
) -> None:
    output = scenario("invitation", network_service, tmp_path)
    assert "invitation: claimed at " in output
    assert (tmp_path / "invitation-away.png").stat().st_size > 0


def test_a_server_restart_mid_hand_loses_and_doubles_nothing(
    service: Service, tmp_path: Path
) -> None:
    output = scenario("restart", service, tmp_path)
    assert "REQUEST restart" in output
    assert "the match went on" in output


def test_the_table_speaks_arabic_and_persian_right_to_left(
    service: Service, tmp_path: Path
) -> None:
    scenario("arabic", service, tmp_path)
    assert (tmp_path / "arabic-360px.png").stat().st_size > 0


def test_a_spectator_link_shows_the_public_table_live_and_no_seats_cards(
    service: Service, tmp_path: Path
) -> None:
    output = scenario("spectator", service, tmp_path)
    assert "REQUEST restart" in output
    assert "the spectator watched" in output
    assert (tmp_path / "spectator-score-sheet.png").stat().st_size > 0


def test_a_four_seat_partnership_hand_with_two_bots_and_an_invited_partner(
    service: Service, tmp_path: Path
) -> None:
    # Egyptian at four seats: partnerships (seats 0 and 2 against 1 and 3), the dealer sees the
    # stock's bottom card, a rubber; the service's bots play seats 1 (random) and 3 (greedy), a
    # person seat 2.
    match = {"RULES": "egyptian", "SEATS": "4", "OTHERS": "random,person,greedy", "SIDES": "2"}
    match["OPTIONS"] = "rubber"
    output = scenario("rule-systems", service, tmp_path, **match)
    assert "egyptian for 4" in output
    assert (tmp_path / "egyptian-4-score-sheet.png").stat().st_size > 0


def test_a_three_seat_persian_hand_with_an_invited_person_and_a_bot(
    service: Service, tmp_path: Path
) -> None:
    match = {"RULES": "persian", "SEATS": "3", "OTHERS": "person,strong", "SIDES": "3"}
    output = scenario("rule-systems", service, tmp_path, **match)
    assert "persian for 3" in output


def test_axe_finds_no_critical_or_serious_violation_in_three_languages_at_two_widths(
    service: Service, tmp_path: Path
) -> None:
    output = scenario("audit", service, tmp_path)
    assert "axe: no critical or serious violation" in output
    # The lobby, the table and the sheet in en, ar and fa at 360 and 1280 px, then the spectator.
    assert output.count(" critical or serious\n") >= 3 * 2 * 4


def test_on_a_phone_the_hand_stays_on_screen_and_no_card_covers_a_heading_or_button(
    service: Service, tmp_path: Path
) -> None:
    output = scenario("layout", service, tmp_path)
    assert "layout: the hand on screen" in output
    assert output.count(" turns, the hand's lowest edge at ") == 11


def test_lighthouse_scores_the_lobby_and_the_table_on_mobile(
    service: Service, tmp_path: Path
) -> None:
    output = scenario("lighthouse", service, tmp_path)
    assert "lighthouse: every floor met" in output
    assert output.count("lighthouse 12.2.3, mobile") == 2


def test_the_pictures_of_the_table(service: Service, tmp_path: Path) -> None:
    # `make screenshot` sets WEB_SCREENSHOTS to web/screenshots, the committed pictures, and
    # README_SCREENSHOT to web/screenshot.png, the README's (a capture choice).
    pictures = Path(os.environ.get("WEB_SCREENSHOTS", str(tmp_path)))
    readme = os.environ.get("README_SCREENSHOT", str(tmp_path / "readme.png"))
    output = scenario("screenshots", service, pictures, README_SCREENSHOT=readme)
    assert "pictures: " in output
    for name in ("lobby", "table-2-seats-mid-hand", "table-4-seats-mid-hand", "score-sheet"):
        assert (pictures / f"{name}.png").stat().st_size > 0
    assert (pictures / "capture-choice.png").stat().st_size > 0
    assert Path(readme).stat().st_size > 0
    assert (pictures / "spectator.png").stat().st_size > 0
    assert (pictures / "arabic-360px.png").stat().st_size > 0


def test_every_screen_fits_360_px_in_every_language_and_seat_labels_keep_their_parenthesis(
    service: Service, tmp_path: Path
) -> None:
    output = scenario("narrow", service, tmp_path)
    assert "narrow: every screen fits 360 px" in output


def test_a_hands_end_shows_the_leftover_floor_as_a_play_and_calls_no_turn_under_the_sheet(
    service: Service, tmp_path: Path
) -> None:
    # Also: a basra's count stands apart from the pile's count, on screen and in its text.
    output = scenario("hand-end", service, tmp_path)
    assert "hand end: seat " in output


def test_what_happened_is_never_an_empty_list_and_keeps_its_lines_across_a_reload(
    service: Service, tmp_path: Path
) -> None:
    output = scenario("log", service, tmp_path)
    assert "lines kept across a reload" in output


def test_the_match_end_says_who_won_with_the_final_scores_and_offers_a_new_match(
    service: Service, tmp_path: Path
) -> None:
    output = scenario("match-end", service, tmp_path)
    assert "match end: " in output


def test_the_rule_systems_names_and_lines_are_the_services_in_the_pages_language(
    service: Service, tmp_path: Path
) -> None:
    output = scenario("rule-names", service, tmp_path)
    assert "rule names: " in output


def test_an_invitation_link_says_taken_or_no_longer_works_before_any_name_is_typed(
    service: Service, tmp_path: Path
) -> None:
    output = scenario("invitation-state", service, tmp_path)
    assert "invitation states: " in output
