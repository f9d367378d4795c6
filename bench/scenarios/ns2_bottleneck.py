#!/usr/bin/env python3
"""Writes the scenario of bench/peers/ns2/bottleneck.tcl as a schedlab scenario (TOML, stdout).

usage: ns2_bottleneck.py FLOWS DURATION_S [SEED] [LOAD] [QUANTUM]

The same network as the ns-2 harness: flow i enters its own access link `access_i`
(1 Gbit/s, 1 ms, FIFO) and then the bottleneck (10 Mbit/s, 1 ms, DRR with one quantum of
QUANTUM bytes for every flow); every flow sends Poisson arrivals of 1000-byte packets, the
flows together offering LOAD (default 0.95) of the bottleneck. No buffer limits (nothing is
dropped, as in the ns-2 run), no warm-up, one replication; the network drains after the
sources stop, as ns-2's run continues for a second after its sources stop.
"""

import sys


def scenario(flows, duration_s, seed=1, load=0.95, quantum=1500):
    rate_pps = load * 10e6 / (8 * 1000) / flows
    out = [
        "# The ns-2 harness's scenario (bench/peers/ns2/bottleneck.tcl), written by",
        f"# bench/scenarios/ns2_bottleneck.py {flows} {duration_s} {seed} {load} {quantum}",
        "[run]",
        f'duration = "{duration_s}s"',
        f"seed = {seed}",
        f'bin = "{max(duration_s, 1)}s"',
        "",
        "[[link]]",
        'name = "bottleneck"',
        'rate = "10Mbit"',
        'delay = "1ms"',
        f'scheduler = {{ kind = "drr", quantum = {quantum} }}',
    ]
    for flow in range(flows):
        out += [
            "",
            "[[link]]",
            f'name = "access_{flow}"',
            'rate = "1Gbit"',
            'delay = "1ms"',
            'scheduler = { kind = "fifo" }',
        ]
    for flow in range(flows):
        out += [
            "",
            "[[source]]",
            f"flow = {flow}",
            f'path = ["access_{flow}", "bottleneck"]',
            f'arrivals = {{ model = "poisson", rate_pps = {rate_pps!r} }}',
            'size = { dist = "constant", size = 1000 }',
        ]
    return "\n".join(out) + "\n"


def main(argv):
    if not 3 <= len(argv) <= 6:
        sys.exit(__doc__.split("\n\n")[1])
    flows, duration = int(argv[1]), float(argv[2])
    seed = int(argv[3]) if len(argv) > 3 else 1
    load = float(argv[4]) if len(argv) > 4 else 0.95
    quantum = int(argv[5]) if len(argv) > 5 else 1500
    if flows < 1 or duration <= 0 or not 0 < load or quantum < 1:
        sys.exit("ns2_bottleneck.py: FLOWS >= 1, DURATION_S > 0, LOAD > 0, QUANTUM >= 1")
    sys.stdout.write(scenario(flows, duration, seed, load, quantum))


if __name__ == "__main__":
    main(sys.argv)
