"""Packet traces in the replay CSV format (``time_s,flow,size_bytes``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def poisson_trace(
    path: str | Path,
    rates_pps: list[float],
    duration_s: float,
    size_min: int = 64,
    size_max: int = 1500,
    seed: int = 1,
) -> int:
    """Write a trace of independent Poisson flows (flow ``i`` at ``rates_pps[i]`` packets/s,
    sizes uniform in ``[size_min, size_max]`` bytes) lasting ``duration_s`` seconds, sorted by
    time. Returns the number of packets written."""
    if duration_s <= 0 or any(r <= 0 for r in rates_pps) or not 0 < size_min <= size_max:
        raise ValueError("rates, duration and sizes must be positive, size_min <= size_max")
    rng = np.random.default_rng(seed)
    times, flows = [], []
    for flow, rate in enumerate(rates_pps):
        n = rng.poisson(rate * duration_s)
        times.append(np.sort(rng.uniform(0.0, duration_s, n)))
        flows.append(np.full(n, flow))
    time = np.concatenate(times)
    flow = np.concatenate(flows)
    order = np.argsort(time, kind="stable")
    time, flow = time[order], flow[order]
    sizes = rng.integers(size_min, size_max + 1, len(time))
    with open(path, "w") as f:
        f.write("time_s,flow,size_bytes\n")
        for t, fl, s in zip(time, flow, sizes, strict=True):
            f.write(f"{t:.9f},{fl},{s}\n")
    return len(time)
