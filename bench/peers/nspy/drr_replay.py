#!/usr/bin/env python3
"""Replays a packet trace through ns.py's DRRServer (schedlab's own ns.py harness).

usage: drr_replay.py --trace TRACE --rate-bps R --quanta Q0,Q1,... [--out DEPARTURES]

* TRACE: `time_s,flow,size_bytes` (poisson_trace.py), flows numbered 0..N-1.
* --quanta: bytes per DRR visit, one per flow, or a single value for every flow.
* DEPARTURES (optional): `flow,seq,arrival_s,departure_s,size_bytes`, one row per packet in
  departure order (seq numbers packets within a flow from 0).
* stdout: one JSON object: delivered packets, trace load time, simulation time (`t_sim_s`,
  the SimPy run alone, wall and CPU `cpu_sim_s`) and the quanta ns.py used.

ns.py derives a flow's quantum as max(MIN_QUANTUM = 1500, mtu_bytes) x weight / min(weight).
Passing the wanted quanta as weights and their minimum as mtu_bytes gives exactly the wanted
quanta when that minimum is at least 1500 B; below that a subclass lowers MIN_QUANTUM to 1 (the
algorithm is untouched). The feeder puts every packet into the server at its trace time.
"""

import argparse
import csv
import json
import sys
import time

import simpy
from ns.packet.packet import Packet
from ns.scheduler.drr import DRRServer


class Recorder:
    """The server's downstream element: notes each packet's departure time."""

    def __init__(self, env):
        self.env = env
        self.departures = []  # (packet id, time)

    def put(self, packet):
        self.departures.append((packet.packet_id, self.env.now))


def feed(env, server, times, flows, sizes):
    for packet_id, (t, flow, size) in enumerate(zip(times, flows, sizes, strict=False)):
        if t > env.now:
            yield env.timeout(t - env.now)
        server.put(Packet(env.now, size, packet_id, flow_id=flow))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", required=True)
    parser.add_argument("--rate-bps", type=float, required=True)
    parser.add_argument("--quanta", required=True)
    parser.add_argument("--out")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    times, flows, sizes = [], [], []
    with open(args.trace, newline="") as fh:
        rows = csv.reader(fh)
        if next(rows) != ["time_s", "flow", "size_bytes"]:
            sys.exit(f"drr_replay.py: {args.trace}: header must be time_s,flow,size_bytes")
        for t, f, s in rows:
            times.append(float(t))
            flows.append(int(f))
            sizes.append(int(s))
    n_flows = max(flows) + 1 if flows else 0
    quanta = [float(q) for q in args.quanta.split(",")]
    if len(quanta) == 1:
        quanta *= n_flows
    if len(quanta) < n_flows or min(quanta) <= 0:
        sys.exit(f"drr_replay.py: --quanta needs {n_flows} positive values")
    loaded = time.perf_counter()
    loaded_cpu = time.process_time()

    cls = DRRServer
    if min(quanta) < DRRServer.MIN_QUANTUM:
        cls = type("SmallQuantumDRRServer", (DRRServer,), {"MIN_QUANTUM": 1})
    env = simpy.Environment()
    server = cls(env, args.rate_bps, {f: q for f, q in enumerate(quanta)}, mtu_bytes=min(quanta))
    used = [server.quantum[f] for f in range(len(quanta))]
    if any(abs(a - b) > 1e-9 * b for a, b in zip(used, quanta, strict=False)):
        sys.exit(f"drr_replay.py: ns.py chose quanta {used}, not {quanta}")
    recorder = Recorder(env)
    server.out = recorder
    env.process(feed(env, server, times, flows, sizes))
    env.run()
    simulated = time.perf_counter()
    simulated_cpu = time.process_time()

    if args.out:
        seq_of = [0] * len(times)
        next_seq = [0] * n_flows
        for packet_id, flow in enumerate(flows):
            seq_of[packet_id] = next_seq[flow]
            next_seq[flow] += 1
        with open(args.out, "w") as out:
            out.write("flow,seq,arrival_s,departure_s,size_bytes\n")
            for packet_id, departure in recorder.departures:
                out.write(
                    f"{flows[packet_id]},{seq_of[packet_id]},{times[packet_id]!r},{departure!r},{sizes[packet_id]}\n"
                )
    summary = {
        "delivered": len(recorder.departures),
        "t_load_s": loaded - started,
        "t_sim_s": simulated - loaded,
        "cpu_sim_s": simulated_cpu - loaded_cpu,
        "quanta_bytes": used,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
