"""Reads criterion's estimates of one saved baseline (used by core_vs_dpdk.sh and
flow_scaling.sh): {(benchmark group, flows): (median ns, 95 % interval low, high)}."""

import json
import pathlib


def load(criterion_dir, baseline):
    """Every `<group>/<flows>/<baseline>/estimates.json` under `criterion_dir`."""
    estimates = {}
    for path in sorted(pathlib.Path(criterion_dir).glob(f"*/*/{baseline}/estimates.json")):
        group, flows = path.parts[-4], path.parts[-3]
        if not flows.isdigit():
            continue
        median = json.loads(path.read_text())["median"]
        interval = median["confidence_interval"]
        estimates[(group, int(flows))] = (
            median["point_estimate"],
            interval["lower_bound"],
            interval["upper_bound"],
        )
    return estimates
