"""Every rule system through the service: CreateMatch and ListRules, and whole 3- and 4-seat
matches over gRPC on a real redis-server, one client per seat, with racing plays, retries and a
WatchMatch stream per seat."""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, cast

import grpc
import pytest
import redis

from basra.client.match import MatchClient, Rejection, to_card
from basra.engine import match_profile
from basra.service.store import keys
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc, game_pb2
from tests.service.conftest import rpc_error
from tests.service.driver import audit_replay, stored_state
from tests.support import ServerThread


def create(
    server: ServerThread, rules: str, seats: int, seed: int, **options: bool
) -> tuple[list[MatchClient], pb.CreateMatchResponse]:
    """CreateMatch, then one client per seat, each holding only its own seat's token."""
    stub = basra_service_pb2_grpc.BasraServiceStub(server.channel)
    request = pb.CreateMatchRequest(
        rules=rules,
        seats=seats,
        seed=seed,
        request_id=str(uuid.uuid4()),
        options=game_pb2.MatchOptions(**options),
    )
    response: pb.CreateMatchResponse = stub.CreateMatch(request, timeout=10)
    clients = [
        MatchClient(stub, response.match_id, {t.seat: t.token}) for t in response.seat_tokens
    ]
    return clients, response


def test_list_rules_needs_no_token_and_lists_every_rule_system(server: ServerThread) -> None:
    stub = basra_service_pb2_grpc.BasraServiceStub(server.channel)
    listed: pb.ListRulesResponse = stub.ListRules(pb.ListRulesRequest(), timeout=10)
    by_name = {r.name: r for r in listed.rules}
    assert list(by_name) == [
        "eram",
        "egyptian",
        "jordanian",
        "lobashev",
        "persian",
        "persian-partnership",
    ]
    egyptian = by_name["egyptian"]
    assert [(s.seats, s.partnerships, s.sides, s.deals_per_hand) for s in egyptian.seat_counts] == [
        (2, False, 2, 6),
        (4, True, 2, 3),
    ]
    assert (egyptian.target, egyptian.cards_per_deal, egyptian.fixed_points) == (101, 4, 43)
    assert (egyptian.rubber.games, egyptian.rubber.wins, egyptian.rubber.final_target) == (
        5,
        3,
        150,
    )
    assert "add up to 10 or less" in egyptian.seven_of_diamonds
    assert by_name["eram"].target == 121
    assert not by_name["persian"].HasField("rubber")
    assert [s.seats for s in by_name["persian"].seat_counts] == [2, 3, 4]
    lobashev = by_name["lobashev"]
    assert (lobashev.cards_per_deal, lobashev.dealt_one_at_a_time, lobashev.fixed_points) == (
        6,
        True,
        16,
    )
    assert sum(p.points for p in lobashev.special_cards) == 13
    assert by_name["jordanian"].basra_value == 2  # BASRA_VALUE_TWICE_THE_CARD


def test_list_rules_words_each_rule_system_for_players_in_english_arabic_and_persian(
    server: ServerThread,
) -> None:
    """Names and one-line descriptions a frontend shows as they are: English first, each
    language's own digits, a name per rule system that no other shares; the title is the
    English name, and no player-facing text names a seed file."""
    stub = basra_service_pb2_grpc.BasraServiceStub(server.channel)
    listed: pb.ListRulesResponse = stub.ListRules(pb.ListRulesRequest(), timeout=10)
    digits = {"en": "0123456789", "ar": "٠١٢٣٤٥٦٧٨٩", "fa": "۰۱۲۳۴۵۶۷۸۹"}
    for system in listed.rules:
        assert [w.language for w in system.wordings] == ["en", "ar", "fa"], system.name
        assert system.title == system.wordings[0].name
        for wording in system.wordings:
            assert wording.name.strip(), (system.name, wording.language)
            assert wording.description.strip(), (system.name, wording.language)
            text = wording.name + wording.description
            assert ".txt" not in text
            others = set("".join(d for lang, d in digits.items() if lang != wording.language))
            assert not others & set(text), (system.name, wording.language, text)
        target = str(system.target)
        assert target in system.wordings[0].description, system.name
    for language in range(3):
        names = [system.wordings[language].name for system in listed.rules]
        assert len(set(names)) == len(names), names
    eram = listed.rules[0].wordings
    assert [w.name for w in eram] == ["Classic, to 121", "كلاسيكية، إلى ١٢١", "کلاسیک، تا ۱۲۱"]


@pytest.mark.parametrize(
    ("request_fields", "reason", "field"),
    [
        ({"rules": "lebanese"}, "UNKNOWN_RULES", "rules"),
        ({"rules": "egyptian", "seats": 3}, "SEATS_NOT_ALLOWED", "seats"),
        ({"rules": "eram", "seats": 4}, "SEATS_NOT_ALLOWED", "seats"),
        (
            {"rules": "persian", "seats": 3, "rubber": True},
            "OPTION_NOT_AVAILABLE",
            "options.rubber",
        ),
        (
            {"rules": "jordanian", "seats": 4, "bottom_card_shown": True},
            "OPTION_NOT_AVAILABLE",
            "options.bottom_card_shown",
        ),
        ({"rules": "persian", "seats": 4, "seat": 4}, "INVALID_ARGUMENT", "seat"),
    ],
)
def test_create_match_rejects_what_the_rules_do_not_allow_naming_the_field_creating_nothing(
    server: ServerThread, redis_url: str, request_fields: dict[str, Any], reason: str, field: str
) -> None:
    store = redis.Redis.from_url(redis_url)
    # Match keys only: the health check writes its probe key whenever it runs.
    before = sorted(cast(list[bytes], store.keys("basra:{*")))
    option_names = ("rubber", "bottom_card_shown")
    options = {k: v for k, v in request_fields.items() if k in option_names}
    fields = {k: v for k, v in request_fields.items() if k not in option_names}
    request = pb.CreateMatchRequest(
        request_id=str(uuid.uuid4()), options=game_pb2.MatchOptions(**options), **fields
    )
    stub = basra_service_pb2_grpc.BasraServiceStub(server.channel)
    rejection = Rejection.of(rpc_error(lambda: stub.CreateMatch(request, timeout=10)))
    assert (rejection.code, rejection.reason) == (grpc.StatusCode.INVALID_ARGUMENT, reason)
    assert rejection.metadata["field"] == field
    assert list(rejection.field_violations) == [field]
    after = sorted(cast(list[bytes], store.keys("basra:{*")))
    assert after == before, "nothing was created"


def test_create_match_defaults_to_eram_at_its_smallest_seat_count(server: ServerThread) -> None:
    clients, created = create(server, "", 0, 3)
    assert (created.view.rules, created.view.seat_count, len(clients)) == ("eram", 2, 2)
    clients, created = create(server, "persian", 0, 3)
    assert (created.view.rules, created.view.seat_count) == ("persian", 2)


def test_a_retried_create_match_returns_the_same_match_and_all_its_tokens(
    server: ServerThread,
) -> None:
    stub = basra_service_pb2_grpc.BasraServiceStub(server.channel)
    request = pb.CreateMatchRequest(
        rules="persian-partnership", seats=4, seed=9, seat=2, request_id=str(uuid.uuid4())
    )
    first: pb.CreateMatchResponse = stub.CreateMatch(request, timeout=10)
    again: pb.CreateMatchResponse = stub.CreateMatch(request, timeout=10)
    assert again == first
    assert len(first.seat_tokens) == 4
    assert first.view.seat == 2
    assert first.view.side == 0


def seat_views_hide_other_hands(clients: list[MatchClient]) -> None:
    views = [c.view(seat) for seat, c in enumerate(clients)]
    for seat, seen in enumerate(views):
        mine = {str(to_card(c)) for c in seen.hand}
        for other, theirs in enumerate(views):
            if other != seat:
                assert not mine & {str(to_card(c)) for c in theirs.hand}
        assert seen.seat == seat
        assert len(seen.hand) == seen.seats[seat].hand_size


def play_to_the_end(
    clients: list[MatchClient], rng: random.Random, *, retries: bool = True
) -> tuple[int, list[pb.PlayResponse | pb.DealResponse]]:
    """Every seat tries to play at once at the version it saw (only the seat to play may, and
    only once); every few plays the
    winner's call is retried with its request_id. Deals come from the seat next_dealer names.
    Returns the number of plays and every accepted response, in version order."""
    accepted: list[pb.PlayResponse | pb.DealResponse] = []
    plays = 0
    with ThreadPoolExecutor(len(clients)) as pool:
        while True:
            view = clients[0].view(0)
            if view.status == game_pb2.MATCH_STATUS_MATCH_OVER:
                return plays, accepted
            if view.status == game_pb2.MATCH_STATUS_HAND_OVER:
                assert not view.HasField("to_play")
                dealer = view.next_dealer
                accepted.append(clients[dealer].deal(dealer, expected_version=view.version))
                continue
            assert view.to_play == view.turn

            def attempt(seat: int, view: game_pb2.MatchView = view) -> pb.PlayResponse | Rejection:
                client = clients[seat]
                hand = [str(to_card(c)) for c in client.view(seat).hand]
                card = hand[rng.randrange(len(hand))] if hand else "AC"
                options = client.plans(seat, card) if seat == view.to_play else []
                plan = rng.randint(1, len(options[0].plans)) if options and options[0].plans else 0
                request_id = f"{seat}-{view.version}-{uuid.uuid4()}"
                version = view.version  # so that only one of the racing calls can win
                try:
                    response = client.play(
                        seat, card, plan, request_id=request_id, expected_version=version
                    )
                except grpc.RpcError as error:
                    return Rejection.of(error)
                if retries and view.version % 5 == 0:
                    again = client.play(
                        seat, card, plan, request_id=request_id, expected_version=version
                    )
                    assert again == response, "a retry returns the original response"
                return response

            outcomes = list(pool.map(attempt, range(len(clients))))
            won = [o for o in outcomes if isinstance(o, pb.PlayResponse)]
            lost = [o for o in outcomes if isinstance(o, Rejection)]
            assert len(won) == 1, outcomes
            assert {r.reason for r in lost} <= {"NOT_YOUR_TURN", "VERSION_MISMATCH"}
            assert won[0].view.version == view.version + 1
            accepted.append(won[0])
            plays += 1


def watch_all(client: MatchClient, seat: int, out: list[game_pb2.MatchEvent]) -> None:
    for event in client.watch(seat, 0, timeout=300):
        out.append(event)


@pytest.mark.parametrize(
    ("rules", "seats"),
    [("persian", 3), ("egyptian", 4), ("persian-partnership", 4), ("persian", 4)],
)
def test_whole_matches_over_grpc_one_client_per_seat_racing_retrying_and_watching(
    start_server: Callable[..., ServerThread], redis_url: str, rules: str, seats: int
) -> None:
    a, b = start_server(redis_url=redis_url), start_server(redis_url=redis_url)
    clients, created = create(a, rules, seats, seed=seats * 101)
    # Alternate seats between two replicas on one Redis.
    clients = [c.via(b.channel) if seat % 2 else c for seat, c in enumerate(clients)]
    assert [s.side for s in created.view.seats] == [
        match_profile(rules, seats).side_of(s) for s in range(seats)
    ]
    seat_views_hide_other_hands(clients)
    streams: list[list[game_pb2.MatchEvent]] = [[] for _ in range(seats)]
    watchers = [
        threading.Thread(target=watch_all, args=(clients[s], s, streams[s]), daemon=True)
        for s in range(seats)
    ]
    for watcher in watchers:
        watcher.start()
    plays, accepted = play_to_the_end(clients, random.Random(seats))
    for watcher in watchers:
        watcher.join(timeout=120)
        assert not watcher.is_alive(), "every stream ends after the match ends"

    store = redis.Redis.from_url(redis_url)
    version, state = stored_state(store, created.match_id)
    assert version == 1 + len(accepted)
    assert audit_replay(store, created.match_id) == (version, state)
    assert state.winner is not None
    assert plays == sum(1 for r in accepted if isinstance(r, pb.PlayResponse))
    final = clients[0].view(0)
    assert final.winner_side == state.winner
    assert not final.HasField("to_play")
    board = clients[seats - 1].score(seats - 1).scoreboard
    assert list(board.side_totals) == list(state.scores)
    assert board.winner_side == state.winner
    # Every seat's stream: the same public events, each deal with only its own cards.
    public = [strip_cards(e) for e in streams[0]]
    for events in streams:
        assert [strip_cards(e) for e in events] == public
        assert events[-1].HasField("match_ended")
        assert events[-1].match_ended.winner_side == state.winner
    # Within each hand, the cards dealt to the seats are disjoint (nobody sees another's).
    per_hand = [dealt_by_hand(events) for events in streams]
    for hand in per_hand[0]:
        dealt = [cards[hand] for cards in per_hand]
        assert sum(map(len, dealt)) == len(set().union(*dealt)) == 52 - 4
    assert {e.version for e in streams[0]} == set(range(1, version + 1))


def dealt_by_hand(events: list[game_pb2.MatchEvent]) -> dict[int, set[str]]:
    """The cards a seat's stream dealt to it, by hand number."""
    out: dict[int, set[str]] = {}
    hand = 0
    for event in events:
        if event.HasField("hand_started"):
            hand = event.hand_started.hand
        cards = (*event.hand_started.your_cards, *event.cards_dealt.your_cards)
        out.setdefault(hand, set()).update(str(to_card(c)) for c in cards)
    return out


def strip_cards(event: game_pb2.MatchEvent) -> game_pb2.MatchEvent:
    public = game_pb2.MatchEvent()
    public.CopyFrom(event)
    public.hand_started.ClearField("your_cards") if event.HasField("hand_started") else None
    public.cards_dealt.ClearField("your_cards") if event.HasField("cards_dealt") else None
    return public


def test_a_four_seat_match_mid_hand_stays_under_a_kibibyte_in_redis(
    server: ServerThread, redis_url: str
) -> None:
    """State and request records (the match key: every seat's last response kept for retries)."""
    clients, created = create(server, "egyptian", 4, seed=12)
    rng = random.Random(12)
    store = redis.Redis.from_url(redis_url)
    for _ in range(24):
        view = clients[0].view(0)
        seat = view.to_play
        options = clients[seat].plans(seat)
        pick = rng.choice(options)
        clients[seat].play(seat, pick.card, 1 if pick.plans else 0, request_id=str(uuid.uuid4()))
    size = store.strlen(keys.match_key(created.match_id))
    assert size < 1024, size


def test_a_retry_is_answered_from_the_state_it_ran_on_even_after_three_more_plays(
    server: ServerThread,
) -> None:
    clients, _ = create(server, "persian", 4, seed=31)
    seat = clients[0].view(0).to_play
    first = clients[seat].plans(seat)[0]
    original = clients[seat].play(seat, first.card, 1 if first.plans else 0, request_id="again-1")
    for _ in range(3):
        turn = clients[0].view(0).to_play
        pick = clients[turn].plans(turn)[0]
        clients[turn].play(turn, pick.card, 1 if pick.plans else 0)
    retried = clients[seat].play(seat, first.card, 1 if first.plans else 0, request_id="again-1")
    assert retried == original
    assert clients[0].view(0).version == original.view.version + 3


def test_a_retry_older_than_the_kept_history_is_history_trimmed_and_changes_nothing(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    server = start_server(redis_url=redis_url, events_maxlen=3)
    clients, created = create(server, "egyptian", 4, seed=32)
    seat = clients[0].view(0).to_play
    first = clients[seat].plans(seat)[0]
    clients[seat].play(seat, first.card, 1 if first.plans else 0, request_id="early-1")
    for _ in range(3):  # the other seats play: versions 3..5 are kept, 1 and 2 are gone
        turn = clients[0].view(0).to_play
        assert turn != seat
        pick = clients[turn].plans(turn)[0]
        clients[turn].play(turn, pick.card, 1 if pick.plans else 0)
    store = redis.Redis.from_url(redis_url)
    before = store.get(keys.match_key(created.match_id))
    rejection = Rejection.of(
        rpc_error(
            lambda: clients[seat].play(
                seat, first.card, 1 if first.plans else 0, request_id="early-1"
            )
        )
    )
    assert (rejection.code, rejection.reason) == (grpc.StatusCode.OUT_OF_RANGE, "HISTORY_TRIMMED")
    assert rejection.message == (
        "this request is older than the match history kept, so its response cannot be given "
        "again: call GetMatch to see whether it was applied"
    )
    # The play made version 2 from version 1; versions 3..5 are kept.
    assert rejection.metadata == {"after_version": "1", "oldest_version": "3"}
    assert store.get(keys.match_key(created.match_id)) == before


def test_list_rules_and_create_match_answer_the_same_over_every_transport(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    from tests.service.test_http import TRANSPORTS, Client, normalized, rejected

    server = start_server(redis_url=redis_url)
    answers = {}
    for transport in TRANSPORTS:
        client = Client(server, transport)
        try:
            listed = client.call("ListRules", pb.ListRulesRequest())
            created = client.call(
                "CreateMatch",
                pb.CreateMatchRequest(
                    rules="persian", seats=3, seed=5, seat=1, request_id=str(uuid.uuid4())
                ),
            )
            names = {created.match_id: "<match>"}
            names |= {t.token: f"<token {t.seat}>" for t in created.seat_tokens}
            too_many = pb.CreateMatchRequest(
                rules="egyptian", seats=3, request_id=str(uuid.uuid4())
            )
            failure = rejected(partial(client.call, "CreateMatch", too_many))
            answers[transport] = (listed, normalized(created, names), failure)
        finally:
            client.close()
    reference = answers["grpc"]
    assert [r.name for r in reference[0].rules][:2] == ["eram", "egyptian"]
    assert reference[1]["view"]["seat"] == 1
    assert reference[2].code == "INVALID_ARGUMENT"
    for transport, answer in answers.items():
        assert answer == reference, transport


def test_the_demo_plays_a_four_seat_partnership_match_with_bots(server: ServerThread) -> None:
    import io

    from basra.client import demo

    out = io.StringIO()
    assert demo.run(server.target, out, seed=4, rules="egyptian", seats=4, symbols=False) == 0
    text = out.getvalue()
    assert "egyptian rules in partnerships (seats 1+3, 2+4)" in text
    assert "basra-engine demo --seed 4 --rules egyptian --seats 4" in text
    assert all(f"seat {s} (" in text for s in range(1, 5)), "every seat's bot plays"
    assert "side 1+3  side 2+4" in text
    last = text.splitlines()[-1]
    assert last.startswith("Side ")
    assert "wins" in last


def test_a_person_plays_the_first_seat_of_a_three_seat_persian_match_against_two_bots(
    server: ServerThread,
) -> None:
    import io

    from basra.client import play

    out = io.StringIO()
    prompts: list[str] = []

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        return "1"  # the first card, its first plan, and Enter for every next hand

    status = play.run(server.target, out, answer, seed=6, rules="persian", seats=3, symbols=False)
    text = out.getvalue()
    assert status == 0, text
    assert "Basra (persian rules). You are seat 1 against the bots in seats 2, 3" in text
    assert any(p.startswith("Play which card?") for p in prompts)
    assert "wins" in text.splitlines()[-1]


def test_the_hands_of_a_rubber_s_second_game_are_scored_as_its_own(server: ServerThread) -> None:
    # A Play that ends a hand answers its score with the game it belongs to: a client that
    # shows a rubber's scoreboard groups the hands by it.
    clients, _ = create(server, "egyptian", 2, seed=11, rubber=True)
    rng = random.Random(4)
    games: list[int] = []
    while 2 not in games:
        view = clients[0].view(0)
        assert view.status != game_pb2.MATCH_STATUS_MATCH_OVER, "a rubber has a second game"
        if view.status == game_pb2.MATCH_STATUS_HAND_OVER:
            clients[view.next_dealer].deal(view.next_dealer)
            continue
        seat = view.to_play
        pick = rng.choice(clients[seat].plans(seat))
        plan_id = rng.randint(1, len(pick.plans)) if pick.plans else 0
        played = clients[seat].play(seat, pick.card, plan_id)
        if played.HasField("hand_score"):
            games.append(played.hand_score.game)
    assert games[0] == 1
    assert games == sorted(games)  # each hand in the game it was played in, the last too


RUBBER_SEED = 20
"""A seed (also the random plays' seed) whose rubber is won 3-2, in its fifth game."""


def test_get_match_and_score_report_the_last_game_after_a_won_rubber_never_one_more(
    server: ServerThread,
) -> None:
    """The games are counted from the GameEnded events the plays answered, not from any game
    number the service reports: while the rubber runs, the current game is one past the games
    ended, except between a game-winning play and the next deal, when the finished game stays
    shown (its number, its totals, its hands on the score sheet); once the rubber is won,
    GetMatch and Score report the last game played (a best of five ends by game 5 at the
    latest, never "game 6")."""
    clients, _ = create(server, "egyptian", 2, seed=RUBBER_SEED, rubber=True)
    rng = random.Random(RUBBER_SEED)
    ended = 0
    won: game_pb2.GameEnded | None = None  # the game the last play won, until the next deal
    view = clients[0].view(0)
    while view.status != game_pb2.MATCH_STATUS_MATCH_OVER:
        if view.status == game_pb2.MATCH_STATUS_HAND_OVER:
            for seat, client in enumerate(clients):
                shown = client.view(seat)
                hands = client.score(seat).scoreboard.hands
                if won is None:
                    assert shown.game == ended + 1
                    assert {h.game for h in hands} <= {ended + 1}
                else:
                    assert shown.game == won.game == ended
                    assert [side.score for side in shown.sides] == list(won.side_totals)
                    assert hands, "the finished game's hands stay on the score sheet"
                    assert {h.game for h in hands} == {ended}
            view = clients[view.next_dealer].deal(view.next_dealer).view
            if won is not None:  # the next game's first deal starts it at 0
                assert (view.game, [side.score for side in view.sides]) == (ended + 1, [0, 0])
            won = None
            continue
        seat = view.to_play
        pick = rng.choice(clients[seat].plans(seat))
        plan_id = rng.randint(1, len(pick.plans)) if pick.plans else 0
        played = clients[seat].play(seat, pick.card, plan_id)
        for event in played.events:
            if event.WhichOneof("event") == "game_ended":
                ended += 1
                won = event.game_ended
        view = played.view
    assert ended == 5, "the seed plays the rubber to its fifth game"
    for seat, client in enumerate(clients):
        assert client.view(seat).game == 5
        hands = client.score(seat).scoreboard.hands
        assert hands, "the scoreboard keeps the last game's hands"
        assert {h.game for h in hands} == {5}
