#!/usr/bin/env python3
"""Writes a Poisson packet trace for the ns.py harness and the cross-check (schedlab's own).

usage: poisson_trace.py --flows N --load RHO --link-bps R --size LO HI --packets P --seed S
                        --out FILE

Every flow is a Poisson process of the same rate, together offering RHO x R bits/s with sizes
uniform in LO..HI bytes (integers); the trace lasts until about P packets are expected. Times
are whole nanoseconds written with 9 decimals (`time_s,flow,size_bytes`, sorted by time, ties
by flow), so that schedlab (integer nanoseconds) and ns.py (float seconds) read the same
instants. Standard library only; one random stream per flow (seed x 1,000,003 + flow).
"""

import argparse
import heapq
import os
import random
import sys


def arrivals(flow, rate_pps, end_ns, lo, hi, seed):
    """(time_ns, flow, size) of one flow's packets before end_ns, in time order."""
    rng = random.Random(seed * 1_000_003 + flow)
    t = 0.0
    while True:
        t += rng.expovariate(rate_pps)
        time_ns = round(t * 1e9)
        if time_ns >= end_ns:
            return
        yield time_ns, flow, rng.randint(lo, hi)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flows", type=int, required=True)
    parser.add_argument("--load", type=float, required=True)
    parser.add_argument("--link-bps", type=float, required=True)
    parser.add_argument("--size", type=int, nargs=2, metavar=("LO", "HI"), required=True)
    parser.add_argument("--packets", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    lo, hi = args.size
    for name, ok in (
        ("--flows", args.flows >= 1),
        ("--load", 0 < args.load),
        ("--link-bps", args.link_bps > 0),
        ("--size", 1 <= lo <= hi),
        ("--packets", args.packets >= 1),
    ):
        if not ok:
            sys.exit(f"poisson_trace.py: {name} is out of range")
    mean_bits = 8 * (lo + hi) / 2
    total_pps = args.load * args.link_bps / mean_bits
    end_ns = round(args.packets / total_pps * 1e9)
    per_flow = total_pps / args.flows
    streams = [arrivals(f, per_flow, end_ns, lo, hi, args.seed) for f in range(args.flows)]
    with open(args.out + ".partial", "w") as out:
        out.write("time_s,flow,size_bytes\n")
        for time_ns, flow, size in heapq.merge(*streams):
            out.write(f"{time_ns // 1_000_000_000}.{time_ns % 1_000_000_000:09d},{flow},{size}\n")

    os.replace(args.out + ".partial", args.out)


if __name__ == "__main__":
    main()
