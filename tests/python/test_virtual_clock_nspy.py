"""Virtual Clock against ns.py's VirtualClockServer, departure for departure (issue 8).

Five configured flows with shares 1, 2, 1, 3, 1 on an 8 Mbit/s link: each reserves
share / 8 of the link (shares divide the link over the configured flows). The trace is
bench/peers/nspy/poisson_trace.py's (5 Poisson flows at 95 % load, 64..1500 B, seed 1), its
first 20,000 packets. When ns.py and SimPy import, the test runs VirtualClockServer itself
(bench/peers/nspy/vc_replay.py) and compares every departure time; otherwise it compares the
departure order with tests/python/data/virtual_clock_nspy_order.txt, which ns.py wrote (see
vc_replay.py's docstring for the command; never regenerate it from schedlab's output).
"""

from __future__ import annotations

import csv
import importlib.util
import subprocess
import sys
from pathlib import Path

import schedlab

ROOT = Path(__file__).resolve().parents[2]
NSPY = ROOT / "bench" / "peers" / "nspy"
EXPECTED_ORDER = Path(__file__).parent / "data" / "virtual_clock_nspy_order.txt"
SHARES = [1, 2, 1, 3, 1]
PACKETS = 20_000


def _trace(tmp_path):
    full = tmp_path / "full.csv"
    args = ["--flows", "5", "--load", "0.95", "--link-bps", "8e6", "--size", "64", "1500"]
    args += ["--packets", "21000", "--seed", "1", "--out", str(full)]
    subprocess.run([sys.executable, str(NSPY / "poisson_trace.py"), *args], check=True)
    lines = full.read_text().splitlines(keepends=True)
    assert len(lines) > PACKETS
    trace = tmp_path / "trace.csv"
    trace.write_text("".join(lines[: PACKETS + 1]))
    return trace


def _schedlab_departures(tmp_path, trace):
    """[(packet, flow, departure_ns)] in departure order."""
    config = tmp_path / "vc.toml"
    text = '[link]\nrate = "8Mbit"\n[scheduler]\nkind = "virtual_clock"\n'
    text += "".join(f"[[flow]]\nid = {flow}\nshare = {share}\n" for flow, share in enumerate(SHARES))
    config.write_text(text)
    out = tmp_path / "schedlab.csv"
    schedlab.replay(str(config), str(trace), str(out))
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == PACKETS and all(row["outcome"] == "sent" for row in rows)

    def ns(text):
        whole, _, fraction = text.partition(".")
        return int(whole) * 1_000_000_000 + int((fraction + "000000000")[:9])

    done = [(packet, int(row["flow"]), ns(row["departure_s"])) for packet, row in enumerate(rows)]
    return sorted(done, key=lambda d: d[2])


def _nspy_available():
    return all(importlib.util.find_spec(name) for name in ("simpy", "ns"))


def test_virtual_clock_matches_nspy_departure_for_departure(tmp_path):
    trace = _trace(tmp_path)
    ours = _schedlab_departures(tmp_path, trace)
    if _nspy_available():
        sys.path.insert(0, str(NSPY))
        import vc_replay

        times, flows, sizes = vc_replay.read_trace(trace)
        theirs = vc_replay.departures(times, flows, sizes, 8e6, SHARES)
        assert len(theirs) == PACKETS
        differing = [
            (packet, departure_ns, departure_s)
            for (packet, _, departure_ns), (their_packet, departure_s) in zip(ours, theirs, strict=True)
            if packet != their_packet or abs(departure_ns - departure_s * 1e9) > 1
        ]
        assert differing == []
    else:
        print("ns.py is not importable: comparing with the order ns.py wrote (", EXPECTED_ORDER.name, ")")
    expected = "".join(EXPECTED_ORDER.read_text().split())
    assert len(expected) == PACKETS
    order = "".join(str(flow) for _, flow, _ in ours)
    first = next((at for at, (a, b) in enumerate(zip(order, expected, strict=True)) if a != b), None)
    assert first is None, f"departure {first}: flow {order[first]}, ns.py sent flow {expected[first]}"
    # Each flow's share of the departures follows its arrivals (every flow is served in full).
    assert sorted(set(order)) == ["0", "1", "2", "3", "4"]
