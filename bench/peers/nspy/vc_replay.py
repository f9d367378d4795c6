#!/usr/bin/env python3
"""Replays a packet trace through ns.py's VirtualClockServer (schedlab's own ns.py harness).

usage: vc_replay.py --trace TRACE --rate-bps R --shares S0,S1,... [--packets N]
                    [--out DEPARTURES] [--flow-order ORDER]

* TRACE: `time_s,flow,size_bytes` (poisson_trace.py), flows numbered 0..N-1; only its first
  N rows are replayed with --packets N.
* --shares: flow i reserves shares[i] / sum(shares) of the link (schedlab's `share` flow key
  of `virtual_clock` when every flow is configured); ns.py takes the inverse, seconds per bit.
* DEPARTURES (optional): `packet,flow,departure_s` in departure order (packet = trace row).
* ORDER (optional): the flow of every departure, in departure order, 100 digits per line: with
  FIFO order within a flow this fixes the whole departure order. It is the checked-in
  expected output of tests/python/test_virtual_clock_nspy.py, regenerated with
  `bench/peers/nspy/vc_replay.py --trace T --rate-bps 8e6 --shares 1,2,1,3,1 --packets 20000
  --flow-order tests/python/data/virtual_clock_nspy_order.txt` on the trace that test writes
  (poisson_trace.py --flows 5 --load 0.95 --link-bps 8e6 --size 64 1500 --packets 21000
  --seed 1), in a virtualenv with ns.py (bench/peers/lib.sh, nspy_python).
"""

import argparse
import csv
import sys

import simpy
from ns.packet.packet import Packet
from ns.scheduler.virtual_clock import VirtualClockServer


def read_trace(path, limit=None):
    times, flows, sizes = [], [], []
    with open(path, newline="") as fh:
        rows = csv.reader(fh)
        if next(rows) != ["time_s", "flow", "size_bytes"]:
            sys.exit(f"vc_replay.py: {path}: header must be time_s,flow,size_bytes")
        for t, f, s in rows:
            if limit is not None and len(times) == limit:
                break
            times.append(float(t))
            flows.append(int(f))
            sizes.append(int(s))
    return times, flows, sizes


def departures(times, flows, sizes, rate_bps, shares):
    """[(packet, departure_s)] in departure order through VirtualClockServer."""
    env = simpy.Environment()
    total = sum(shares)
    vticks = [total / (share * rate_bps) for share in shares]
    server = VirtualClockServer(env, rate_bps, vticks)
    done = []

    class Recorder:
        def put(self, packet):
            done.append((packet.packet_id, env.now))

    server.out = Recorder()

    def feed():
        for packet_id, (t, flow, size) in enumerate(zip(times, flows, sizes, strict=True)):
            if t > env.now:
                yield env.timeout(t - env.now)
            server.put(Packet(env.now, size, packet_id, flow_id=flow))

    env.process(feed())
    env.run()
    return done


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", required=True)
    parser.add_argument("--rate-bps", type=float, required=True)
    parser.add_argument("--shares", required=True)
    parser.add_argument("--packets", type=int)
    parser.add_argument("--out")
    parser.add_argument("--flow-order")
    args = parser.parse_args(argv)
    times, flows, sizes = read_trace(args.trace, args.packets)
    shares = [int(s) for s in args.shares.split(",")]
    if len(shares) <= max(flows) or min(shares) <= 0:
        sys.exit(f"vc_replay.py: --shares needs {max(flows) + 1} positive integers")
    done = departures(times, flows, sizes, args.rate_bps, shares)
    if args.out:
        with open(args.out, "w") as out:
            out.write("packet,flow,departure_s\n")
            for packet_id, departure in done:
                out.write(f"{packet_id},{flows[packet_id]},{departure!r}\n")
    if args.flow_order:
        order = "".join(str(flows[packet_id]) for packet_id, _ in done)
        with open(args.flow_order, "w") as out:
            for at in range(0, len(order), 100):
                out.write(order[at : at + 100] + "\n")
    print(f"{len(done)} departures", file=sys.stderr)


if __name__ == "__main__":
    main()
