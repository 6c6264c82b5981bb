"""``make bench``: engine and service figures, human-readable, then one JSON line.

Bounded in time (about four and a half minutes on two cores before the service and bare servers
were measured turn about, which adds about a minute of loads; 30 s of it the idle WatchMatch
streams); loopback only.
"""

from __future__ import annotations

import json
import time

from tests.bench.client_bench import client_figures
from tests.bench.engine_bench import engine_figures
from tests.bench.hardening_bench import hardening_figures
from tests.bench.profile_play import profile_plays, summary
from tests.bench.service_bench import service_figures
from tests.bench.watch_bench import watch_figures


def main() -> None:
    started = time.monotonic()
    figures = engine_figures()
    print()
    figures.update(service_figures())
    print()
    figures.update(hardening_figures())
    print()
    figures.update(client_figures())
    print()
    print("\n".join(summary(*profile_plays())))
    print()
    figures.update(watch_figures())
    print(f"\n(benchmark took {time.monotonic() - started:.0f} s)")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
