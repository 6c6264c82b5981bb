"""Silent connections on the HTTP port at the shipped settings (HTTP/1.1 alone): 8,000 held, each
opened again as soon as the server closes it, from 200 loopback addresses, while an honest
client plays over Connect (HTTP/1.1) and gRPC and polls /healthz. Printed: the honest calls'
p50, p99 and max, the readiness checks answered ready, the server's RSS before, at the peak and
30 s after the flood, and how many silent connections the server closed."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any, Final

from tests.h2attacks import Honest, PeakRss, serving
from tests.halfopen import rss_bytes
from tests.silent import HELD, holding

SECONDS: Final = 25.0
"""How long the honest client plays under the flood: past two read timeouts (10 s each)."""
SETTLE_S: Final = 30.0
"""How long after the flood the RSS is read again."""
MIB: Final = 2**20


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def silent_figures() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, serving(Path(tmp), http2=False) as served:
        pid = served.process.pid
        before = rss_bytes(pid)
        peak = PeakRss(pid)
        times: list[float] = []
        ready = checks = failed = 0
        with holding(served.http_port, 200) as held:
            honest = Honest(served, http2=False)
            try:
                ends = time.monotonic() + SECONDS
                while time.monotonic() < ends:
                    started = time.monotonic()
                    try:
                        honest.play()
                        checks += 1
                        ready += honest.ready()
                    except Exception:  # a failed call is counted, not raised
                        failed += 1
                    times.append(time.monotonic() - started)
            finally:
                honest.close()
            closed = held.reopened
        top = peak.stop()
        time.sleep(SETTLE_S)
        after = rss_bytes(pid)
    rss = [round(before / MIB), round(top / MIB), round(after / MIB)]
    figures: dict[str, Any] = {
        "silent_held": HELD,
        "silent_closed_by_server": closed,
        "silent_honest_p50_s": round(_percentile(times, 0.5), 3),
        "silent_honest_p99_s": round(_percentile(times, 0.99), 3),
        "silent_honest_max_s": round(max(times), 3),
        "silent_honest_failed": failed,
        "silent_ready_share": round(ready / max(1, checks), 3),
        "silent_rss_mib": rss,
    }
    print(
        f"silent connections, {HELD} held from 200 addresses for {SECONDS:g} s (HTTP/1.1, "
        f"read timeout 10 s): {closed} closed by the server and opened again"
    )
    print(
        f"  honest play + /healthz: p50 {figures['silent_honest_p50_s']} s, p99 "
        f"{figures['silent_honest_p99_s']} s, max {figures['silent_honest_max_s']} s, "
        f"{failed} failed; ready {ready} of {checks}"
    )
    print(
        f"  server RSS {rss[0]} MiB before, {rss[1]} MiB at the peak, {rss[2]} MiB "
        f"{SETTLE_S:g} s after"
    )
    return figures


if __name__ == "__main__":
    silent_figures()
