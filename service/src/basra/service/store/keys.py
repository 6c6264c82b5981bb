"""Every Redis key and hash field name, in one place.

A match's keys share the ``{match id}`` hash tag, so they live in one Redis Cluster slot and one
Lua script can update them atomically.
"""

from __future__ import annotations

from typing import Final

PREFIX: Final = "basra"

# Fields of an event stream entry.
COMMAND: Final = "c"
EVENTS: Final = "e"
PRIVATE_PREFIX: Final = "p"  # p0, p1: the cards each seat was dealt


PROBE: Final = f"{PREFIX}:probe"
"""A one-byte key the health check writes: a Redis out of memory refuses even that."""


def match_key(match_id: str) -> str:
    """The string holding the match record (service.store.codec)."""
    return f"{PREFIX}:{{{match_id}}}:match"


def events_key(match_id: str) -> str:
    """The stream of the match's event entries (audit log and WatchMatch feed)."""
    return f"{PREFIX}:{{{match_id}}}:events"


def watch_key(match_id: str) -> str:
    """The string holding the match's watch access (service.store.codec), empty until a seat
    asks for a watch token: apart from the record, so that a commit made from a record read
    before a revocation cannot undo it. Made with the match, it expires with the match's other
    keys (each commit gives the three the match's new expiry: see service.store.redis)."""
    return f"{PREFIX}:{{{match_id}}}:watch"


def presence_key(match_id: str) -> str:
    """The sorted set of the match's connected seats: one member ``<seat>:<replica>`` per seat
    and replica that has a WatchMatch stream of the seat open, scored by the instant (epoch
    milliseconds) its mark expires unless renewed (service.store.redis, ``heartbeat``). The key
    itself expires a TTL after its last renewal."""
    return f"{PREFIX}:{{{match_id}}}:presence"


def wake_channel(match_id: str) -> str:
    """The shard channel on which each commit publishes the match's new version, and a
    revocation of its watch tokens 0 ("read again"): the wake-up of every replica's shared
    WatchMatch reader (service.store.redis_feed)."""
    return f"{PREFIX}:{{{match_id}}}:wake"


def match_of_channel(channel: bytes) -> str:
    """The match id of a ``wake_channel``."""
    return channel.decode().split("{", 1)[1].rsplit("}", 1)[0]


def private_field(seat: int) -> str:
    """The stream entry field with a seat's dealt cards."""
    return f"{PRIVATE_PREFIX}{seat}"


def stream_id(version: int) -> str:
    """A version's stream entry id: versions are the ids, so resuming is XREAD after one."""
    return f"{version}-0"
