"""The gateway's resident set under a flood at ten times its bottleneck rate (issue 9).

``schedlab gateway`` (DRR, 10 Mbit/s emulated link, no buffer configured: the 1 MiB default)
on the namespace testbed; ``schedlab gen`` offers four CBR flows of 1,500-byte packets at ten
times the link rate (100 Mbit/s, 8,333 packets/s) for ``FLOOD_SECONDS`` (30 by default). The
gateway's VmRSS is sampled every 0.25 s from ``/proc/PID/status``. Memory must stay bounded:
the growth over the resident set just before the flood must be at most the buffer (1 MiB of
IP bytes, held in 2,048-byte-or-smaller frame buffers) plus the fixed overhead that the
flood first touches (the receive rings: 16 MiB ingress, 4 MiB egress). Prints one JSON document with the samples,
the gateway's final stats (drops by reason, accounting) and the machine's load average.

usage: .venv/bin/python bench/gateway_flood.py     (root; FLOOD_SECONDS=30 by default)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from schedlab import testbed
from schedlab.measure import run_traffic

FLOOD_SECONDS = float(os.environ.get("FLOOD_SECONDS", "30"))
LINK_RATE_BPS = 10_000_000
BUFFER_BYTES = 1 << 20  # the gateway's default buffer when none is configured
RINGS_BYTES = (16 + 4) << 20  # the receive rings: ingress 16 MiB, egress 4 MiB
SIZE = 1500
FLOWS = 4


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def main() -> None:
    if os.geteuid() != 0:
        print("error: bench/gateway_flood.py needs root (it creates network namespaces)", file=sys.stderr)
        raise SystemExit(2)
    pps = 10 * LINK_RATE_BPS / (SIZE * 8)
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    with tempfile.TemporaryDirectory(prefix="schedlab-flood-") as tmp, testbed.Testbed() as bed:
        work = Path(tmp)
        config = work / "gateway.toml"
        config.write_text(f'[link]\nrate = "{LINK_RATE_BPS}"\n[scheduler]\nkind = "drr"\nquantum = 1500\n')
        scenario = work / "flood.toml"
        scenario.write_text(
            f'[run]\nduration = "{FLOOD_SECONDS}s"\nseed = 1\n[[link]]\nname = "l"\nrate = "{LINK_RATE_BPS}"\n'
            + "".join(
                f'[[source]]\nflow = {i}\npath = ["l"]\narrivals = {{ model = "cbr", rate_pps = {pps / FLOWS} }}\n'
                f'size = {{ dist = "constant", size = {SIZE} }}\n'
                for i in range(FLOWS)
            )
        )
        stats = work / "stats.json"
        gateway = bed.spawn(
            bed.gateway,
            [sys.executable, "-m", "schedlab", "gateway", "-c", str(config), "-i", "gwin", "-e", "gwout"]
            + ["--stats", str(stats)],
            stderr=subprocess.PIPE,
            text=True,
        )
        while not stats.exists():
            if gateway.poll() is not None:
                raise RuntimeError(gateway.stderr.read())
            time.sleep(0.05)
        time.sleep(0.5)
        before = rss_bytes(gateway.pid)
        samples: list[tuple[float, int]] = []
        done = threading.Event()

        def sample() -> None:
            start = time.monotonic()
            while not done.is_set():
                samples.append((round(time.monotonic() - start, 2), rss_bytes(gateway.pid)))
                time.sleep(0.25)

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            run_traffic(bed, scenario, work, FLOOD_SECONDS)
        finally:
            done.set()
            sampler.join()
        gateway.send_signal(signal.SIGINT)
        gateway.wait(timeout=5)
        final = json.loads(stats.read_text())
    peak = max(rss for _, rss in samples)
    bound = BUFFER_BYTES + RINGS_BYTES
    print(
        json.dumps(
            {
                "flood_seconds": FLOOD_SECONDS,
                "offered_pps": pps,
                "link_rate_bps": LINK_RATE_BPS,
                "rss_before_flood_bytes": before,
                "rss_peak_bytes": peak,
                "rss_growth_bytes": peak - before,
                "bound_growth_bytes": bound,
                "within_bound": peak - before <= bound,
                "rss_last_10_s_bytes": sorted({rss for t, rss in samples if t >= FLOOD_SECONDS - 10}),
                "gateway": {
                    "in_packets": final["total"]["in_packets"],
                    "sent_packets": final["total"]["sent_packets"],
                    "dropped": {k: v for k, v in final["total"]["dropped"].items() if v},
                    "queue": final.get("queue"),
                    "accounting_ok": final["accounting_ok"],
                },
                "load_average_before": load_before,
                "load_average_after": Path("/proc/loadavg").read_text().split()[:3],
                "samples": samples,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
