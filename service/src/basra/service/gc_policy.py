"""Keep CPython's full garbage collections off the hot path, and show operators every pause.

CPython 3.11 collects the whole heap (generation 2) whenever the objects that survived its young
collections since the last full one exceed a quarter of those that survived it. Each such
collection walks every tracked object of the process and pauses the event loop for as long: a
replica holding thousands of idle WatchMatch streams tracks some 20 objects per stream (gRPC's
call state and ours), so its full collections grow with the streams and can fall inside the
plays that the streams are waiting for.

``GcPolicy`` moves what lives long out of the collector's sight. Once a second it counts the
objects in the oldest generation; past ``young_limit`` it collects (a full collection, but of
those objects only: the frozen ones are not walked, and the garbage among them is not frozen)
and freezes the survivors (``gc.freeze``: they move to the permanent generation, which no
collection walks). A full collection then walks about ``young_limit`` objects plus a second's
growth at the most, whatever the number of open streams.

Frozen objects are never collected: one that becomes garbage inside a reference cycle stays
until it is unfrozen. A call's objects, a WatchMatch stream's included, are freed by reference
counting when the call ends (``tests/service/test_gc_policy.py`` proves it for streams that end
every way), so nothing is expected there; as a bound on whatever does leak, once the frozen
objects number twice what they did after the last thaw (and at least ``2 * young_limit``),
``GcPolicy`` thaws: it unfreezes them, collects everything once (a pause CPython would have taken
at a quarter's growth, not a doubling) and freezes the survivors again, counting the garbage the
freezing had held (``basra_gc_frozen_garbage_total``). That pause walks every object: about half
a second at 10,000 open streams, which the plays of a whole bench run's matches once waited for.
So a thaw that is due waits for a quiet second (no call finished since the last check), up to
twice the doubling, where it comes at once. Frozen garbage thus never exceeds three times the
live frozen objects of the last thaw.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from typing import Any, Final

from basra.service.metrics import Metrics

log = logging.getLogger("basra.gc")
YOUNG_LIMIT: Final = 10_000
"""Objects in the oldest generation past which they are collected and frozen."""
INTERVAL_S: Final = 1.0


class GcPolicy:
    """Freezes the long-lived objects of the process on a timer of the event loop (``run``)."""

    def __init__(
        self, metrics: Metrics, young_limit: int = YOUNG_LIMIT, interval_s: float = INTERVAL_S
    ) -> None:
        self._metrics = metrics
        self._young_limit = young_limit
        self._interval_s = interval_s
        self._thawed = gc.get_freeze_count()
        """Frozen objects after the last thaw (or when the policy started)."""
        self._counted = self._thawed
        """Frozen objects when they were last counted."""
        self._added = 0
        """Objects frozen since they were last counted (some may have died since)."""
        self._due = False
        """The frozen objects have doubled: thaw at the first quiet check."""
        self._finished = metrics.calls_finished()
        """Calls finished by the last check."""
        # Scraped from this bookkeeping: counting them at a scrape would walk every frozen
        # object with the interpreter lock held, the server's event loop waiting meanwhile.
        metrics.gc_frozen.set_function(self.frozen_objects)

    def frozen_objects(self) -> int:
        """The frozen objects as last counted, plus those frozen since: exact after a count or
        a thaw, otherwise an upper bound (a frozen object freed since is still in it)."""
        return self._counted + self._added

    async def run(self) -> None:
        """Look once per interval, until cancelled."""
        while True:
            await asyncio.sleep(self._interval_s)
            self.check()

    def check(self) -> None:
        """Freeze the old generation once it holds ``young_limit`` objects; thaw once the
        frozen objects have doubled since the last thaw, at the first check with no call
        finished since the one before, or at once past twice the doubling."""
        finished = self._metrics.calls_finished()
        quiet, self._finished = finished == self._finished, finished
        if self._due and quiet:
            self.thaw()
            return
        if len(gc.get_objects(generation=2)) >= self._young_limit:
            gc.collect()
            self._added += len(gc.get_objects(generation=2))  # a full collection's survivors
            gc.freeze()
            self._metrics.gc_freezes.inc()
        # Counting the frozen objects walks every one of them (CPython keeps no count), which
        # once a second would pause the loop, plays included, for as long as the walk.
        # Counted and added is never fewer than there are, so they are counted only once that
        # bound passes the doubling (twice that while a thaw is due), and a thaw comes at the
        # same check as when every freeze counted them.
        limit = 2 * max(self._thawed, self._young_limit) * (2 if self._due else 1)
        if self._counted + self._added <= limit:
            return
        self._counted, self._added = gc.get_freeze_count(), 0
        if self._counted <= limit:
            return
        if quiet or self._due:
            self.thaw()
        else:
            self._due = True

    def thaw(self) -> int:
        """Unfreeze, collect everything, freeze the survivors; return the garbage found among
        the objects that had been frozen."""
        gc.collect()  # the unfrozen garbage first: not the freezing's doing
        gc.unfreeze()
        found = gc.collect()
        gc.freeze()
        self._thawed = self._counted = gc.get_freeze_count()
        self._added = 0
        self._due = False
        self._metrics.gc_thaws.inc()
        self._metrics.gc_frozen_garbage.inc(found)
        if found:
            log.info("frozen garbage collected", extra={"objects": found})
        return found


class PauseTimer:
    """Times every garbage collection of the process into ``basra_gc_pause_seconds`` (a
    ``gc.callbacks`` entry while installed: ``install``, ``remove``)."""

    def __init__(self, metrics: Metrics) -> None:
        self._pauses = tuple(metrics.gc_pauses.labels(str(g)) for g in range(3))
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self._pauses[info["generation"]].observe(time.perf_counter() - self._start)

    def install(self) -> None:
        gc.callbacks.append(self)

    def remove(self) -> None:
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self)
