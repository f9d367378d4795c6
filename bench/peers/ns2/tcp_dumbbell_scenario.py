"""The schedlab scenario of tcp_dumbbell.tcl's dumbbell (the ns-2 harness beside this file), for
tcp_compare.sh and bench/tcp_vs_ns2.py.

    python3 tcp_dumbbell_scenario.py DELAYS VARIANT STARTS DURATION WARMUP RATE BUFFER > s.toml

DELAYS: access delays in ms, comma-separated (one flow each); VARIANT: newreno or sack; STARTS:
start times in s, comma-separated (missing: 0); DURATION, WARMUP: s; RATE: bottleneck Mbit/s;
BUFFER: ns-2's queue-limit at the bottleneck, packets.

Flow i enters over a 100 Mbit/s access link (delay d_i) into the RATE, 10 ms bottleneck, leaves
over a 100 Mbit/s, 1 ms exit link; its ACKs return over the reverse links. Segments of 1000
payload bytes plus 40 header bytes (1040 B on the wire, as ns-2 sends them), initial window 2,
minimum RTO 200 ms, initial RTO 3 s, bulk sources.
"""

from __future__ import annotations

import sys


def scenario(
    delays: list[str], variant: str, starts: list[str], duration: str, warmup: str, rate: str, buffer: int
) -> str:
    """The scenario TOML text."""
    out = [f'[run]\nduration = "{duration}s"\nwarmup = "{warmup}s"\nseed = 1\nbin = "1s"\n']

    def link(name: str, link_rate: str, delay: str, extra: str = "") -> None:
        out.append(f'[[link]]\nname = "{name}"\nrate = "{link_rate}"\ndelay = "{delay}ms"\n{extra}')

    # ns-2's DropTail refuses a packet when the queue would reach queue-limit *counting the one
    # on the wire* (drop-tail.cc: `q_->length() + 1 >= qlim_`): at most BUFFER - 1 wait.
    # schedlab's buffer_packets counts the waiting packets only.
    link("bottleneck", f"{rate}Mbit", "10", f"buffer_packets = {buffer - 1}\n")
    link("bottleneck_back", f"{rate}Mbit", "10")
    for i, d in enumerate(delays):
        link(f"access{i}", "100Mbit", d)
        link(f"exit{i}", "100Mbit", "1")
        link(f"exit_back{i}", "100Mbit", "1")
        link(f"access_back{i}", "100Mbit", d)
    for i in range(len(delays)):
        start = float(starts[i]) if i < len(starts) and starts[i] else 0.0
        out.append(
            f'[[source]]\nflow = {i}\npath = ["access{i}", "bottleneck", "exit{i}"]\n'
            f'start = "{start * 1e3:.1f}ms"\n'
            f'transport = {{ kind = "tcp", variant = "{variant}", mss = 1000, header = 40, '
            f'initial_window = 2, min_rto = "200ms", initial_rto = "3s" }}\n'
            f'arrivals = {{ model = "bulk" }}\n'
            f'ack_path = ["exit_back{i}", "bottleneck_back", "access_back{i}"]\n'
        )
    return "".join(out)


if __name__ == "__main__":
    if len(sys.argv) != 8:
        sys.exit(__doc__)
    delays, variant, starts, duration, warmup, rate, buffer = sys.argv[1:]
    print(scenario(delays.split(","), variant, starts.split(","), duration, warmup, rate, int(buffer)))
