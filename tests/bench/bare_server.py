"""The ceiling of this stack: a gRPC server that does only the Redis work of a Play.

Same RPCs as the scripted client sends (Play, and Deal for each next hand), same request and
response sizes, the same Redis round trips as the service (one GET of a real match record, one
Lua script that compares its version prefix, writes it back, appends an event entry and restarts
the stream's expiry), and no game logic. The benchmark
runs it beside the real service with the same client, so play_rps / bare_rps is how much of the
stack's capacity the game logic leaves. ``--model threads`` runs the same work on a thread-pool
server with a blocking Redis client, to choose the server model by measurement.

    python -m tests.bench.bare_server --listen 127.0.0.1:PORT --redis-url URL --response FILE
"""

from __future__ import annotations

import argparse
import asyncio
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import redis
import uvloop
from redis.asyncio import Redis

from basra.service.store import keys
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc

_WRITE = """
redis.call('GETRANGE', KEYS[1], 0, 7)
redis.call('SET', KEYS[1], ARGV[1], 'PX', 604800000)
redis.call('XADD', KEYS[2], 'MAXLEN', 2000, '*', 'c', ARGV[2], 'e', ARGV[3])
redis.call('PEXPIRE', KEYS[2], 604800000)
return 1
"""
_EVENTS = b"e" * 60  # one CardPlayed event


def _keys(match_id: str) -> list[str]:
    return [keys.match_key(match_id), keys.events_key(match_id)]


def _args(record: bytes) -> list[bytes | str]:
    return [record, b"P\x00\x00\x00", _EVENTS]


class Bare(basra_service_pb2_grpc.BasraServiceServicer):
    """grpc.aio and redis.asyncio, like the service."""

    def __init__(self, client: Redis, response: bytes, record: bytes) -> None:
        self.redis = client
        self.response = pb.PlayResponse.FromString(response)
        self.record = record
        self.write = client.register_script(_WRITE)

    async def _store(self, match_id: str, request: bytes) -> None:
        await self.redis.get(keys.match_key(match_id))
        self.response.SerializeToString()  # the service serializes its response to store it
        await self.write(keys=_keys(match_id), args=_args(self.record))

    async def Play(self, request: pb.PlayRequest, context: Any) -> pb.PlayResponse:  # noqa: N802
        await self._store(request.match_id, request.SerializeToString())
        return self.response

    async def Deal(self, request: pb.DealRequest, context: Any) -> pb.DealResponse:  # noqa: N802
        await self._store(request.match_id, request.SerializeToString())
        return pb.DealResponse(match_id=request.match_id)


class BareThreads(basra_service_pb2_grpc.BasraServiceServicer):
    """The same work on a thread-pool server with a blocking Redis client."""

    def __init__(self, client: redis.Redis, response: bytes, record: bytes) -> None:
        self.redis = client
        self.response = pb.PlayResponse.FromString(response)
        self.record = record
        self.write = client.register_script(_WRITE)

    def _store(self, match_id: str, request: bytes) -> None:
        self.redis.get(keys.match_key(match_id))
        self.response.SerializeToString()
        self.write(keys=_keys(match_id), args=_args(self.record))

    def Play(self, request: pb.PlayRequest, context: Any) -> pb.PlayResponse:  # noqa: N802
        self._store(request.match_id, request.SerializeToString())
        return self.response

    def Deal(self, request: pb.DealRequest, context: Any) -> pb.DealResponse:  # noqa: N802
        self._store(request.match_id, request.SerializeToString())
        return pb.DealResponse(match_id=request.match_id)


async def serve_aio(listen: str, redis_url: str, response: bytes, record: bytes) -> None:
    server = grpc.aio.server()
    bare = Bare(Redis.from_url(redis_url), response, record)  # type: ignore[abstract]  # Play and Deal
    basra_service_pb2_grpc.add_BasraServiceServicer_to_server(bare, server)
    server.add_insecure_port(listen)
    await server.start()
    await server.wait_for_termination()


def serve_threads(
    listen: str, redis_url: str, response: bytes, record: bytes, workers: int
) -> None:
    pool = redis.BlockingConnectionPool.from_url(redis_url, max_connections=workers)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers))
    bare = BareThreads(redis.Redis(connection_pool=pool), response, record)  # type: ignore[abstract]
    basra_service_pb2_grpc.add_BasraServiceServicer_to_server(bare, server)
    server.add_insecure_port(listen)
    server.start()
    server.wait_for_termination()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--listen", required=True)
    parser.add_argument("--redis-url", required=True)
    parser.add_argument("--response", type=Path, required=True, help="a real PlayResponse")
    parser.add_argument("--record", type=Path, required=True, help="a real stored match record")
    parser.add_argument("--model", choices=["aio", "threads"], default="aio")
    parser.add_argument("--workers", type=int, default=32, help="threads of the threads model")
    parser.add_argument(
        "--event-loop",
        choices=["asyncio", "uvloop"],
        default="asyncio",
        help="the aio model's event loop (default: asyncio's own, the targets' baseline)",
    )
    args = parser.parse_args()
    response, record = args.response.read_bytes(), args.record.read_bytes()
    if args.model == "threads":
        serve_threads(args.listen, args.redis_url, response, record, args.workers)
        return
    # No factory: asyncio.run's own loop.
    loop_factory = uvloop.new_event_loop if args.event_loop == "uvloop" else None
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(serve_aio(args.listen, args.redis_url, response, record))


if __name__ == "__main__":
    main()
