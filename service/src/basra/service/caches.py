"""The matches as this replica knows them: the store's records, the last one seen of each recent
match (``RecordCache``) and decoded states by their bytes (``StateCache``).

Every job of the servicer reads a match through ``Matches.load``, which remembers the record and
makes sure a bot move the match waits for gets made; a change starts from the remembered record
(``changes.py``), which is what keeps a Play to one store round trip on a warm replica.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from basra.engine import State, decode
from basra.service import auth, presence
from basra.service.errors import Reason, ServiceError
from basra.service.store import MatchRecord, Store


class StateCache:
    """Decoded states by their bytes, the most recent first: the bytes a replica commits are
    usually the bytes it loads next. States are immutable and their bytes canonical, so a hit is
    always right."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._states: OrderedDict[bytes, State] = OrderedDict()

    def decode(self, data: bytes) -> State:
        state = self._states.get(data)
        if state is None:
            state = decode(data)
            self.put(data, state)
        return state

    def put(self, data: bytes, state: State) -> None:
        self._states[data] = state
        self._states.move_to_end(data)
        if len(self._states) > self._size:
            self._states.popitem(last=False)


class RecordCache:
    """The last record this replica wrote or read of each recent match, the most recent first.

    A change starts from it instead of a GET; the commit script checks its version and, when
    another replica moved the match on, answers the current record (``Store.commit_or_current``),
    so a stale entry costs one retry and never a wrong move. Routing each match's calls to one
    replica (deploy/README.md) keeps nearly every change to one round trip.
    """

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._records: OrderedDict[str, MatchRecord] = OrderedDict()

    def get(self, match_id: str) -> MatchRecord | None:
        return self._records.get(match_id)

    def put(self, record: MatchRecord) -> None:
        # Last seen wins, even an older version a slow read brought: a stale entry costs a
        # retry, and a newer check would keep a dead match's record over its recreation.
        self._records[record.match_id] = record
        self._records.move_to_end(record.match_id)
        if len(self._records) > self._size:
            self._records.popitem(last=False)

    def forget(self, match_id: str) -> None:
        self._records.pop(match_id, None)


BotsNotice = Callable[[str, State, bytes], None]
"""Told of a match's state and bot levels, makes sure a bot move it waits for gets made
(``bots.BotPlayer.notice``)."""


class Matches:
    """The store's match records through this replica's caches: every record read or committed
    is remembered (``records``) and shown to the bots (``notice``). Also where the seats'
    presence is read (``connected``)."""

    def __init__(self, store: Store, bots: BotsNotice) -> None:
        self.store = store
        self.states = StateCache()
        self.records = RecordCache()
        self.bots = bots

    async def load(self, match_id: str) -> MatchRecord:
        """The match as the store has it now, remembered.

        Raises:
            ServiceError: NOT_FOUND / MATCH_NOT_FOUND when it never existed or has expired.
        """
        record = await self.store.load(match_id)
        if record is None:
            self.records.forget(match_id)
            raise not_found(match_id)
        self.records.put(record)
        self.notice(record)
        return record

    async def connected(self, match_id: str) -> frozenset[int]:
        """The match's connected seats now (any replica's streams)."""
        auth.check_match_id(match_id)
        found = await self.store.connected((match_id,), presence.now())
        return found[match_id]

    def notice(self, record: MatchRecord) -> None:
        """Make sure a bot move the match waits for gets made (see bots.py)."""
        if record.bots:
            self.bots(record.match_id, self.states.decode(record.state), record.bots)


def not_found(match_id: str) -> ServiceError:
    return ServiceError(
        Reason.MATCH_NOT_FOUND,
        f"no match {match_id!r}: it never existed or has expired",
        {"match_id": match_id},
    )
