"""``make bench``: engine and service figures, human-readable, then one JSON line.

Bounded in time (several minutes on two cores: 30 s of it the idle WatchMatch streams, and the
bots' matches, strong against greedy); loopback only.
"""

from __future__ import annotations

import json
import time

from tests.bench.abuse_bench import abuse_figures
from tests.bench.bot_bench import bot_figures
from tests.bench.bots_service_bench import bots_service_figures
from tests.bench.client_bench import client_figures
from tests.bench.engine_bench import engine_figures
from tests.bench.hardening_bench import hardening_figures
from tests.bench.profile_play import profile_plays, summary
from tests.bench.service_bench import service_figures
from tests.bench.silent_bench import silent_figures
from tests.bench.watch_bench import watch_figures


def main() -> None:
    started = time.monotonic()
    figures = engine_figures()
    print()
    figures.update(bot_figures())
    print()
    figures.update(service_figures())
    print()
    figures.update(bots_service_figures())
    print()
    figures.update(hardening_figures())
    print()
    figures.update(abuse_figures())
    print()
    figures.update(silent_figures())
    print()
    figures.update(client_figures())
    print()
    print("\n".join(summary(*profile_plays())))
    print()
    # The plays after the idle streams come at half the replica's Play capacity just measured
    # (at most 1,000/s, which was half of it on the machine the target was set on): the figure
    # is the push path's, not the queue of a replica driven past what it can serve.
    plays_per_s = min(1000.0, round(figures["play_rps"] / 2, -1))
    figures["watch_plays_per_s"] = plays_per_s
    figures.update(watch_figures(plays_per_s=plays_per_s))
    print(f"\n(benchmark took {time.monotonic() - started:.0f} s)")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
