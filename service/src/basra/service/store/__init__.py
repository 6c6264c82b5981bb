"""Where matches live between calls: one interface, an embedded and a Redis implementation.

Both pass the same contract suite (tests/service/test_store_contract.py).
"""

from basra.service.store.base import (
    Commit,
    EventEntry,
    MatchRecord,
    NewMatch,
    Store,
    StoreFullError,
    StoreUnavailableError,
    WatchAccess,
)

__all__ = [
    "Commit",
    "EventEntry",
    "MatchRecord",
    "NewMatch",
    "Store",
    "StoreFullError",
    "StoreUnavailableError",
    "WatchAccess",
]
