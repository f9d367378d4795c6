"""The gateway beside the kernel on the same namespace testbed (run by bench/gateway_vs_kernel.sh).

Paths, all ``src —veth— gw —veth— dst`` from :mod:`schedlab.testbed`:

* ``kernel``: the kernel forwards (a Linux bridge in the gateway namespace), no qdisc;
* ``htb``: the same, with HTB (one class at the gateway's link rate, pfifo 1000) on ``gwout``;
* ``gateway-<kind>``: ``schedlab gateway`` with discipline ``kind`` on an emulated link of
  ``LINK_RATE`` (10 Gbit/s: far above what the path forwards, so pacing never limits).

Traffic: ``schedlab gen`` sends four CBR flows (UDP ports 20000–20003) of IP length 64 or
1500 bytes to ``schedlab sink``. The highest loss-free rate is found by doubling the offered
rate from ``START_PPS`` until a run loses a packet, then bisecting (``STEPS`` times); each run
lasts ``SECONDS``. Loss-free: the sink received every datagram gen handed to the kernel.
Latency at low load: 1,000 packets/s of 64 bytes for ``SECONDS``; one-way delay = receive −
send time on the shared monotonic clock. Prints one JSON document.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from schedlab import testbed
from schedlab.measure import run_traffic

SECONDS = float(os.environ.get("SECONDS_PER_RUN", "1"))
START_PPS = int(os.environ.get("START_PPS", "20000"))
MAX_PPS = int(os.environ.get("MAX_PPS", "1280000"))
STEPS = int(os.environ.get("STEPS", "4"))
LINK_RATE = "10Gbit"
FLOWS = 4
PYTHON = [sys.executable, "-m", "schedlab"]


def scenario(path: Path, kind: str, pps: float, size: int) -> Path:
    """A scenario of FLOWS CBR sources offering ``pps`` in all (gen reads only the sources)."""
    sources = "".join(
        f'[[source]]\nflow = {i}\npath = ["l"]\narrivals = {{ model = "cbr", rate_pps = {pps / FLOWS} }}\n'
        f'size = {{ dist = "constant", size = {size} }}\n'
        for i in range(FLOWS)
    )
    path.write_text(
        f'[run]\nduration = "{SECONDS}s"\nseed = 1\n[[link]]\nname = "l"\nrate = "{LINK_RATE}"\n'
        f'scheduler = {{ kind = "{kind}", buffer_packets = 1000 }}\n{sources}'
    )
    return path


def run_point(bed: testbed.Testbed, work: Path, pps: float, size: int) -> tuple[int, int, list[int]]:
    """Sent, received and the one-way delays (ns) of one run."""
    spec = scenario(work / "point.toml", "fifo", pps, size)
    run_traffic(bed, spec, work, SECONDS)
    sent = {tuple(line.split(",")[:2]) for line in (work / "sent.csv").read_text().splitlines()[1:]}
    delays = []
    received = set()
    for line in (work / "received.csv").read_text().splitlines()[1:]:
        source, sequence, sent_ns, received_ns, _ = line.split(",")
        if (source, sequence) in sent and (source, sequence) not in received:
            received.add((source, sequence))
            delays.append(int(received_ns) - int(sent_ns))
    return len(sent), len(received), delays


def start_path(path: str, work: Path) -> testbed.Testbed:
    bed = testbed.Testbed(mode="gateway" if path.startswith("gateway") else "bridge").create()
    if path == "htb":
        gw = ["ip", "netns", "exec", bed.gateway]
        subprocess.run(
            [*gw, "tc", "qdisc", "replace", "dev", "gwout", "root", "handle", "1:", "htb", "default", "1"], check=True
        )
        subprocess.run(
            [*gw, "tc", "class", "add", "dev", "gwout", "parent", "1:", "classid", "1:1", "htb"]
            + ["rate", LINK_RATE.lower(), "ceil", LINK_RATE.lower()],
            check=True,
        )
        subprocess.run(
            [*gw, "tc", "qdisc", "add", "dev", "gwout", "parent", "1:1", "pfifo", "limit", "1000"], check=True
        )
    if path.startswith("gateway-"):
        kind = path.removeprefix("gateway-")
        config = work / "gateway.toml"
        config.write_text(f'[link]\nrate = "{LINK_RATE}"\n[scheduler]\nkind = "{kind}"\nbuffer_packets = 1000\n')
        stats = work / "stats.json"
        stats.unlink(missing_ok=True)
        process = bed.spawn(
            bed.gateway,
            [*PYTHON, "gateway", "-c", str(config), "-i", "gwin", "-e", "gwout", "--stats", str(stats)],
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 15
        while not stats.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                bed.destroy()
                raise RuntimeError(f"gateway did not start: {process.stderr.read() if process.poll() else ''}")
            time.sleep(0.05)
    # Let ARP settle before measuring.
    subprocess.run(
        [
            "ip",
            "netns",
            "exec",
            bed.source,
            sys.executable,
            "-c",
            f"import socket,time\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
            f"for _ in range(5): s.sendto(b'warm', ('{testbed.SINK_ADDRESS}', 9999)); time.sleep(0.05)",
        ],
        check=True,
    )
    return bed


def loss_free_rate(bed: testbed.Testbed, work: Path, size: int) -> tuple[int, list]:
    trials = []
    good, bad = 0, None
    pps = START_PPS
    while pps <= MAX_PPS:
        sent, received, _ = run_point(bed, work, pps, size)
        trials.append({"offered_pps": pps, "sent": sent, "received": received})
        # The generator may fall behind its schedule: count what it achieved.
        achieved = sent / SECONDS
        if received == sent:
            good = max(good, int(achieved))
            pps *= 2
        else:
            bad = pps
            break
    if bad is not None:
        low, high = good, bad
        for _ in range(STEPS):
            middle = (low + high) // 2
            sent, received, _ = run_point(bed, work, middle, size)
            trials.append({"offered_pps": middle, "sent": sent, "received": received})
            if received == sent:
                good = max(good, int(sent / SECONDS))
                low = middle
            else:
                high = middle
    return good, trials


def main() -> None:
    paths = os.environ.get("PATHS", "kernel htb gateway-fifo gateway-drr gateway-wf2q_plus").split()
    results = []
    with tempfile.TemporaryDirectory(prefix="schedlab-bench-") as tmp:
        work = Path(tmp)
        for path in paths:
            print(f"# {path}", file=sys.stderr)
            bed = start_path(path, work)
            try:
                row = {"path": path}
                for size in (64, 1500):
                    rate, trials = loss_free_rate(bed, work, size)
                    row[f"loss_free_pps_{size}"] = rate
                    row[f"trials_{size}"] = trials
                    print(f"#   {size} B: {rate} pps loss-free", file=sys.stderr)
                sent, received, delays = run_point(bed, work, 1000, 64)
                delays.sort()
                row["low_load"] = {
                    "sent": sent,
                    "received": received,
                    "delay_median_us": statistics.median(delays) / 1e3 if delays else None,
                    "delay_p99_us": delays[min(len(delays) - 1, int(0.99 * len(delays)))] / 1e3 if delays else None,
                }
                results.append(row)
            finally:
                bed.destroy()
    print(json.dumps({"seconds_per_run": SECONDS, "link_rate": LINK_RATE, "flows": FLOWS, "paths": results}, indent=1))


if __name__ == "__main__":
    main()
