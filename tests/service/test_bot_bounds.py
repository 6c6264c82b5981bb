"""The bots' cost is bounded and fair: live matches of bots only are counted per caller (its
address here: the server listens on every address, so 127.0.0.1 and ::1 are two callers) and
per replica, a creation past either bound is refused naming it and creates nothing, a match
that ends frees its place, one whose move failed is played again; and in the thinking queue
the moves of matches with a person come first (through the queue's own API: nothing is
timed)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import grpc
import pytest
import redis

from basra.client.match import Rejection
from basra.service.bots import ThinkingQueue
from basra.service.config import SettingError, Settings
from basra.service.store import MatchRecord, StoreUnavailableError
from basra.service.store.base import Commit
from basra.service.store.memory import MemoryStore
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc as pb_grpc
from basra.v1 import game_pb2
from tests.service.conftest import rpc_error
from tests.service.driver import bearer
from tests.service.test_bots import GREEDY, PERSON, RANDOM, STRONG, match_keys
from tests.support import ServerThread, StreamReader, sample_value, wait_until


@contextmanager
def caller(address: str, server: ServerThread) -> Iterator[pb_grpc.BasraServiceStub]:
    """A stub whose calls come from ``address`` (the loopback address it connects to)."""
    with grpc.insecure_channel(f"{address}:{server.port}") as channel:
        yield pb_grpc.BasraServiceStub(channel)


def create(
    stub: pb_grpc.BasraServiceStub, bots: Sequence[game_pb2.BotLevel.ValueType], seed: int = 5
) -> pb.CreateMatchResponse:
    response: pb.CreateMatchResponse = stub.CreateMatch(pb.CreateMatchRequest(bots=bots, seed=seed))
    return response


def refused(stub: pb_grpc.BasraServiceStub, store: redis.Redis) -> Rejection:
    """A creation of bots only, refused with nothing stored."""
    before = match_keys(store)
    rejection = Rejection.of(rpc_error(lambda: create(stub, [GREEDY, GREEDY])))
    assert (rejection.code, rejection.reason) == (
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "RATE_LIMITED",
    ), rejection
    assert rejection.metadata["bound"] == "bot_only_matches"
    assert rejection.retry_after_s is not None
    assert rejection.retry_after_s > 0
    assert match_keys(store) == before, "a refused creation stored something"
    return rejection


def live(server: ServerThread) -> float:
    return sample_value(server.server.metrics.bot_only_matches)


def test_a_caller_at_its_bound_of_bot_only_matches_is_refused_and_others_still_create(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    # The bots wait their pace (long): the matches stay live for the whole test.
    server = start_server(
        redis_url=redis_url,
        listen="[::]:0",
        bot_pace_s=600.0,
        bot_only_matches_per_caller=2,
        bot_only_matches=3,
    )
    store = redis.Redis.from_url(redis_url)
    with caller("127.0.0.1", server) as flooder, caller("[::1]", server) as other:
        create(flooder, [GREEDY, GREEDY])
        create(flooder, [RANDOM, STRONG])
        rejection = refused(flooder, store)
        assert rejection.metadata["scope"] == "caller"
        assert rejection.metadata["limit"] == "2"
        assert "2 live" in rejection.message
        # A match with a person is no bot-only match: the caller still creates those.
        create(flooder, [PERSON, STRONG])
        # Another caller still creates one, up to the replica's bound (3 in all).
        create(other, [GREEDY, GREEDY])
        assert live(server) == 3
        rejection = refused(other, store)
        assert rejection.metadata["scope"] == "replica"
        assert rejection.metadata["limit"] == "3"
        assert live(server) == 3


def test_a_creation_refused_by_the_rate_limit_holds_no_place(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    server = start_server(
        redis_url=redis_url,
        bot_pace_s=600.0,
        bot_only_matches_per_caller=2,
        caller_create_rate=0.001,
        caller_create_burst=1,
    )
    with caller("127.0.0.1", server) as stub:
        create(stub, [GREEDY, GREEDY])
        rejection = Rejection.of(rpc_error(lambda: create(stub, [GREEDY, GREEDY])))
        assert rejection.reason == "RATE_LIMITED"
        assert "bound" not in rejection.metadata, "the creation rate refused it"
    assert live(server) == 1


def test_a_match_of_bots_only_that_ends_frees_its_place(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    server = start_server(redis_url=redis_url, bot_only_matches_per_caller=1)
    with caller("127.0.0.1", server) as stub:
        created = create(stub, [GREEDY, RANDOM], seed=3)
        stream = StreamReader(
            stub.WatchMatch(
                pb.WatchMatchRequest(match_id=created.match_id),
                metadata=bearer(created.watch_token),
            )
        )
        wait_until(lambda: stream.ended or stream.error is not None, 60, "the match ends")
        assert stream.error is None, stream.error
        wait_until(lambda: live(server) == 0, 30, "its place freed")
        create(stub, [GREEDY, RANDOM], seed=4)
        assert live(server) == 1


def test_a_person_s_move_is_served_before_the_bot_only_moves_that_fill_the_queue() -> None:
    queue: ThinkingQueue[str] = ThinkingQueue(3)
    for name in ("bots-1", "bots-2", "bots-3"):
        assert queue.put(name, person=False) is None
    # Full: the person's move takes the place of the bot-only move that waited longest.
    assert queue.put("person-1", person=True) == "bots-1"
    assert len(queue) == 3
    assert queue.take() == "person-1"
    assert queue.take() == "bots-2"
    # A bot-only move finding the queue full is left out itself.
    assert queue.put("bots-4", person=False) is None
    assert queue.put("person-2", person=True) is None
    assert queue.put("bots-5", person=False) == "bots-5"
    assert [queue.take() for _ in range(4)] == ["person-2", "bots-3", "bots-4", None]


def test_a_full_queue_of_persons_moves_leaves_the_next_one_out_and_a_retry_goes_first() -> None:
    queue: ThinkingQueue[str] = ThinkingQueue(2)
    assert queue.put("person-1", person=True) is None
    assert queue.put("person-2", person=True) is None
    assert queue.put("person-3", person=True) == "person-3"
    assert queue.put("bots-1", person=False) == "bots-1"
    # A move whose process died goes back first of its kind, past the bound.
    queue.put_back("person-0", person=True)
    queue.put_back("bots-0", person=False)
    assert [queue.take() for _ in range(5)] == [
        "person-0",
        "person-1",
        "person-2",
        "bots-0",
        None,
    ]


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"bot_move_deadline_s": 0.5, "bot_strong_seconds": 0.5}, "--bot-move-deadline-seconds"),
        ({"bot_queue": 0}, "--bot-queue"),
        ({"bot_only_matches": 0}, "--bot-only-matches"),
        ({"bot_only_matches_per_caller": -1}, "--bot-only-matches-per-caller"),
    ],
)
def test_bot_bounds_out_of_range_are_refused(overrides: dict[str, object], named: str) -> None:
    with pytest.raises(SettingError, match=named):
        Settings(**overrides)  # type: ignore[arg-type]


class FailsOnce(MemoryStore):
    """The embedded store, whose first commit fails as when Redis is away for a moment."""

    failures = 1

    async def commit_or_current(
        self, match_id: str, commit: Commit
    ) -> tuple[bool, MatchRecord | None]:
        if self.failures:
            self.failures -= 1
            raise StoreUnavailableError("Redis did not answer")
        return await super().commit_or_current(match_id, commit)


def test_a_match_of_bots_only_whose_move_failed_is_played_again_unasked(
    start_server: Callable[..., ServerThread],
) -> None:
    """Nobody's call would notice a match of bots only whose bot move failed: the replica that
    counts it plays it again after a wait (the store is read directly here, not through the
    server, whose reads would notice the move due)."""
    store = FailsOnce(ttl_s=600, events_maxlen=2000)
    server = start_server(on_store=store)
    with caller("127.0.0.1", server) as stub:
        created = create(stub, [GREEDY, RANDOM], seed=3)

    def version() -> int:
        record = server.run(store.load(created.match_id))
        assert record is not None
        return record.version

    wait_until(lambda: store.failures == 0, 30, "the first bot move fails")
    wait_until(lambda: version() > 1, 60, "the bots move again")
