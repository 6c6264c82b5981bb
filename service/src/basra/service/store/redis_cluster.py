"""Redis Cluster: ASK redirections that hold while a slot moves, and a close that closes
(redis-py's asyncio client).

While a hash slot moves between masters (the source MIGRATING, the target IMPORTING), a key
already MIGRATEd is answered ``ASK <slot> <target>`` by the source. The client must then send
``ASKING`` and the command to the target on one connection, ASKING right before the command: the
allowance lasts that one command, and on any other connection the target answers
``MOVED <source>``.

redis-py 8.1.0's ``redis.asyncio.cluster.RedisCluster._execute_command`` sends them as two
``ClusterNode.execute_command`` calls, and each takes a connection from the node's idle deque
(first in, first out) and gives it back after the reply. With two or more idle connections to the
target, ASKING and the command leave on different ones, the target answers MOVED, the source ASK
again, and every call on the match fails "ClusterError: TTL exhausted" (STORE_UNAVAILABLE) until
``CLUSTER SETSLOT ... NODE`` ends the move. Upstream folds ASKING into the command's write only
for HIMPORT SET (``ClusterNode.execute_command(asking=...)``); the open redis/redis-py#4214 (ASK
to a node that serves no slot yet) keeps the two-call sequence. On a redis-py upgrade, check
``_execute_command`` again: tests/load/test_redis_cluster.py moves a slot under live calls.

Reusing the connection last given back (LIFO) would pair them only as long as nothing comes
between the two calls: a connection marked for reconnect after a topology refresh is
disconnected, with its ASKING, on the way back to the deque. So the pairing is made atomic
instead: ``fold_asking`` gives the client's connections a class that does not send a lone
ASKING but notes it, for the calling task and that node; that task's next write to the node
carries ASKING and the command together, on the one connection the task holds until the
command's reply, and ASKING's reply is read and checked before the command's. No other task
sees the note (a context variable, bound to the task), so calls in flight at once cannot take
each other's allowance. Pipelines follow, as redis-py resends a pipeline's redirected commands
one by one through the same path.

The importing master may also refuse the ASK-redirected command: a multi-key command (the
store's scripts) some of whose keys it does not hold yet is answered ``TRYAGAIN``, and nothing
runs. redis-py then sends the command again to the same node, but without ASKING, which that
node answers ``MOVED`` back to the source (and every fifth MOVED makes redis-py drop all its
connections and reload the slot map). So a TRYAGAIN answering a folded command owes the task
ASKING again for that node: the retry carries it, and waits on the target until the keys are
there or the slot has moved (``RedisStore`` retries past redis-py's own tries, within the
call's deadline).

``RedisCluster.aclose`` closes nothing while the client waits to reload its slot map (it
disconnects the nodes only when the client counts as initialized), and redis-py asks for that
reload in the middle of a call (a lost connection, CLUSTERDOWN, every fifth MOVED) and goes on
opening connections until the call ends: a call that fails or is cancelled there leaves the
reload asked for, and the connections open through the client's close. ``close_cluster``
closes them all the same.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Iterable
from typing import Any, Final

from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.connection import AbstractConnection, Connection
from redis.exceptions import ResponseError, TryAgainError

# A lone ASKING as ClusterNode.execute_command("ASKING") writes it. Batches that carry ASKING
# among other commands (redis-py's HIMPORT SET, its transactions) already pair it themselves
# and are written as they are.
_LONE_ASKING: Final = [b"*1\r\n$6\r\nASKING\r\n"]

# The ASKING a task owes: (task, host, port) of the node its next write must carry it to.
_OWED: contextvars.ContextVar[tuple[asyncio.Task[Any] | None, str, int] | None] = (
    contextvars.ContextVar("basra_owed_asking", default=None)
)


class _FoldsAsking(Connection):
    """A cluster connection that sends an ASK-redirected command with its ASKING in one write.

    Mixed into the client's own connection class (plain or TLS) by ``fold_asking``.
    """

    _reply_ok = False  # a lone ASKING was noted, not sent: its reply is answered here
    _asking_first = False  # the last write began with ASKING: its +OK comes before the reply

    async def send_packed_command(
        self, command: bytes | str | Iterable[bytes], check_health: bool = True
    ) -> None:
        task = asyncio.current_task()
        if command == _LONE_ASKING:
            _OWED.set((task, self.host, self.port))
            self._reply_ok = True
            return
        self._reply_ok = self._asking_first = False
        owed = _OWED.get()
        if owed is None:
            await super().send_packed_command(command, check_health)
            return
        # The task's next write after the ASK carries ASKING when it goes to the ASK's target.
        # Elsewhere (a retry gone back to the slot's owner) the allowance lapses. Were the next
        # write to the target far later (its command found no connection), a stray ASKING
        # there changes nothing: a client routes a slot to the master importing it only when
        # the owner answered ASK, and for any slot but an importing one ASKING has no effect.
        _OWED.set(None)
        if owed != (task, self.host, self.port):
            await super().send_packed_command(command, check_health)
            return
        if isinstance(command, str):
            command = command.encode()
        parts = [command] if isinstance(command, bytes) else list(command)
        # A connection opened here says hello first (its own writes and reads), then this.
        await super().send_packed_command([*_LONE_ASKING, *parts], check_health)
        self._asking_first = True

    async def read_response(
        self,
        disable_decoding: bool = False,
        timeout: float | None = None,
        *,
        disconnect_on_error: bool = True,
        push_request: bool | None = False,
    ) -> Any:
        if self._reply_ok:
            self._reply_ok = False
            return b"OK"
        if self._asking_first:
            self._asking_first = False
            try:
                await super().read_response(
                    disable_decoding=True, disconnect_on_error=disconnect_on_error
                )
            except ResponseError:
                # ASKING refused (never on a cluster node): read the command's reply as well,
                # so that the connection stays in step, and say why the command did not run.
                await super().read_response(
                    disable_decoding=True, disconnect_on_error=disconnect_on_error
                )
                raise
            try:
                return await super().read_response(
                    disable_decoding,
                    timeout,
                    disconnect_on_error=disconnect_on_error,
                    push_request=push_request,
                )
            except TryAgainError:
                # The importing master refused a multi-key command some of whose keys it does
                # not hold yet; nothing ran. redis-py sends it again to this node, where only
                # ASKING lets it in: the allowance is owed again, or the node answers MOVED
                # back to the source and every retry costs an ASK and a MOVED.
                _OWED.set((asyncio.current_task(), self.host, self.port))
                raise
        return await super().read_response(
            disable_decoding,
            timeout,
            disconnect_on_error=disconnect_on_error,
            push_request=push_request,
        )


_FOLDING: dict[type[AbstractConnection], type[AbstractConnection]] = {}


def fold_asking(client: RedisCluster) -> RedisCluster:
    """Have ``client`` send each ASK-redirected command with its ASKING in one write on one
    connection (see the module's docstring); returns the client. Call it before the client's
    first command: nodes found later are built with the connection class set here."""
    base: type[AbstractConnection] = client.connection_kwargs["connection_class"]
    folding = _FOLDING.get(base)
    if folding is None:
        folding = type(f"FoldsAsking{base.__name__}", (_FoldsAsking, base), {})
        _FOLDING[base] = folding
    # The node manager builds every node it finds from this same dict; the startup nodes
    # were built from a copy.
    client.connection_kwargs["connection_class"] = folding
    for node in client.startup_nodes:
        node.connection_class = folding  # type: ignore[assignment]
    return client


async def close_cluster(client: RedisCluster) -> None:
    """Close ``client`` and every connection it holds: its ``aclose``, then a disconnect of
    every node it knows, the startup nodes included (nothing left to do for the nodes aclose
    closed; see the module's docstring for the nodes it leaves)."""
    await client.aclose()
    # By identity: a startup node and the known node of its address are two objects, each
    # with connections of its own, and equal (ClusterNode compares names).
    nodes: dict[int, ClusterNode] = {}
    for node in (*client.get_nodes(), *client.nodes_manager.startup_nodes.values()):
        nodes[id(node)] = node
    await asyncio.gather(*(node.disconnect() for node in nodes.values()))
