"""What becomes of a match's keys in Redis: restored from an older snapshot, a client resuming
WatchMatch after a version the match no longer has is told OUT_OF_RANGE/VERSION_AHEAD (a status
to recover from, not a client bug) and recovers by GetMatch; finished, both keys expire after the
short finished TTL instead of the idle one."""

from __future__ import annotations

import random
from collections.abc import Callable

import grpc
import redis

from basra.client.match import Rejection
from basra.service.store import keys
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import game_pb2
from tests.service.conftest import new_match, rpc_error
from tests.service.driver import play_match
from tests.support import ServerThread


def test_resuming_beyond_a_rolled_back_match_is_version_ahead_and_recoverable(
    server: ServerThread, redis_url: str
) -> None:
    store = redis.Redis.from_url(redis_url)
    client = new_match(server, seed=6)
    play_match(client, random.Random(2), stop=lambda v: v.version >= 2)
    snapshot = {
        key: store.dump(key)
        for key in (keys.match_key(client.match_id), keys.events_key(client.match_id))
    }
    play_match(client, random.Random(3), stop=lambda v: v.version >= 5)
    seen = client.view(0).version
    # The operators restore the snapshot taken at version 2.
    for key, dumped in snapshot.items():
        assert dumped is not None
        store.restore(key, 0, dumped, replace=True)
    current = client.view(0).version
    assert current < seen
    error = rpc_error(
        lambda: list(
            client.stub.WatchMatch(
                pb.WatchMatchRequest(match_id=client.match_id, after_version=seen),
                metadata=client.metadata(0),
            )
        )
    )
    r = Rejection.of(error)
    assert (r.code, r.reason) == (grpc.StatusCode.OUT_OF_RANGE, "VERSION_AHEAD")
    assert r.metadata == {"after_version": str(seen), "current_version": str(current)}
    assert r.message == (
        f"after_version is beyond the match's current version {current}: call GetMatch and "
        "resume from its version"
    )
    # Recovery as the guide says: GetMatch, then resume from its version; the next play arrives.
    stream = client.stub.WatchMatch(
        pb.WatchMatchRequest(match_id=client.match_id, after_version=current),
        metadata=client.metadata(0),
    )
    play_match(client, random.Random(4), stop=lambda v: v.version > current)
    event = next(iter(stream))
    assert event.event.version == current + 1
    stream.cancel()  # type: ignore[no-untyped-call]  # grpc-stubs leaves it untyped


def test_resuming_exactly_one_version_beyond_a_rolled_back_match_is_version_ahead(
    server: ServerThread, redis_url: str
) -> None:
    """Restored one version back, a stream resumed after the version the client last saw (the
    match's current version plus one) is refused: accepted, it would wait for that version and
    never send the match's next one, which has the number the client already saw."""
    store = redis.Redis.from_url(redis_url)
    client = new_match(server, seed=6)
    play_match(client, random.Random(2), stop=lambda v: v.version >= 2)
    match_keys = (keys.match_key(client.match_id), keys.events_key(client.match_id))
    snapshot = {key: store.dump(key) for key in match_keys}
    play_match(client, random.Random(3), stop=lambda v: v.version >= 3)
    seen = client.view(0).version
    for key, dumped in snapshot.items():
        assert dumped is not None
        store.restore(key, 0, dumped, replace=True)
    current = client.view(0).version
    assert seen == current + 1
    error = rpc_error(
        lambda: list(
            client.stub.WatchMatch(
                pb.WatchMatchRequest(match_id=client.match_id, after_version=seen),
                metadata=client.metadata(0),
                timeout=10,
            )
        )
    )
    r = Rejection.of(error)
    assert (r.code, r.reason) == (grpc.StatusCode.OUT_OF_RANGE, "VERSION_AHEAD")
    assert r.metadata == {"after_version": str(seen), "current_version": str(current)}


def test_a_finished_match_expires_after_the_finished_ttl_not_the_idle_one(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    server = start_server(redis_url=redis_url, finished_ttl_s=120)
    store = redis.Redis.from_url(redis_url)
    client = new_match(server, seed=8)
    client.watch_token(0)  # a seat's watch access: its key expires with the match too
    match_id = client.match_id
    match_keys = (keys.match_key(match_id), keys.events_key(match_id), keys.watch_key(match_id))
    play_match(client, random.Random(5), stop=lambda v: v.version >= 3)
    for key in match_keys:
        assert store.pttl(key) > 6 * 24 * 3600 * 1000  # the idle TTL (7 days) while it runs
    play_match(client, random.Random(5))  # to MatchEnded
    assert client.view(0).status == game_pb2.MATCH_STATUS_MATCH_OVER
    for key in match_keys:
        assert 0 < store.pttl(key) <= 120_000
