"""The ceiling of this stack: a gRPC server that does only the Redis work of a Play.

Same RPC (BasraService.Play), same request and response sizes, same Redis round trips (one
HGETALL, one Lua script writing the state, the request record and an event entry, restarting two
expiries), and no game logic. The benchmark runs it beside the real service with the same client,
so play_rps / bare_rps is how much of the stack's capacity the game logic leaves.

    python -m tests.bench.bare_server --listen 127.0.0.1:PORT --redis-url URL --response FILE
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

import grpc
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc
from redis.asyncio import Redis

from service.store import keys

_WRITE = """
local current = redis.call('HGET', KEYS[1], 'v')
redis.call('HSET', KEYS[1], 'v', tonumber(current or '0') + 1, 's', ARGV[1], ARGV[2], ARGV[3])
redis.call('XADD', KEYS[2], 'MAXLEN', 2000, '*', 'c', ARGV[4], 'e', ARGV[5])
redis.call('PEXPIRE', KEYS[1], 604800000)
redis.call('PEXPIRE', KEYS[2], 604800000)
return 1
"""


class Bare(basra_service_pb2_grpc.BasraServiceServicer):
    def __init__(self, redis: Redis, response: bytes) -> None:
        self.redis = redis
        self.response = pb.PlayResponse.FromString(response)
        self.write = redis.register_script(_WRITE)
        self.state = b"s" * 110  # a mid-hand engine state
        self.events = b"e" * 60  # one CardPlayed event

    async def Play(self, request: pb.PlayRequest, context: Any) -> pb.PlayResponse:  # noqa: N802
        match_key = keys.match_key(request.match_id)
        await self.redis.hgetall(match_key)
        await self.write(
            keys=[match_key, keys.events_key(request.match_id)],
            args=[
                self.state,
                "q0",
                request.SerializeToString() + self.response.SerializeToString(),
                b"P\x00\x00\x00",
                self.events,
            ],
        )
        return self.response


async def serve(listen: str, redis_url: str, response: bytes) -> None:
    server = grpc.aio.server()
    redis = Redis.from_url(redis_url)
    bare = Bare(redis, response)  # type: ignore[abstract]  # it serves Play only
    basra_service_pb2_grpc.add_BasraServiceServicer_to_server(bare, server)
    server.add_insecure_port(listen)
    await server.start()
    await server.wait_for_termination()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--listen", required=True)
    parser.add_argument("--redis-url", required=True)
    parser.add_argument("--response", type=Path, required=True, help="a real PlayResponse")
    args = parser.parse_args()
    asyncio.run(serve(args.listen, args.redis_url, args.response.read_bytes()))


if __name__ == "__main__":
    main()
