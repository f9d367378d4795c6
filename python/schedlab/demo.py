"""``make demo``: the headline experiment on the built-in default.

Until the simulator is wired in, the demo replays a built-in trace (three Poisson flows, one
of them heavy, offered 110% of a 2 Mbit/s link) through several disciplines and prints the
per-flow summary, so the effect of each discipline on the light flows is visible.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

import schedlab
from schedlab.traces import poisson_trace

CONFIG = """
[link]
rate = "2Mbit"

[scheduler]
kind = "{kind}"
buffer = "64KB"
{extra}
[flow_defaults]
weight = 1
quantum = 1500
"""

DISCIPLINES = {"fifo": "", "drr": 'drop_policy = "longest_queue_drop"\n'}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="out/demo", help="output directory")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    trace = out / "trace.csv"
    # Mean size 782 B: 40 + 40 + 272 pkt/s ~ 2.2 Mbit/s offered to 2 Mbit/s.
    n = poisson_trace(trace, [40, 40, 272], duration_s=20.0, seed=7)
    console = Console()
    console.print(f"built-in trace: {n} packets, 3 Poisson flows, 110% of 2 Mbit/s -> {trace}")
    known = {d["id"] for d in schedlab.disciplines()}
    table = Table(title="per-flow mean delay (ms) / dropped packets")
    table.add_column("discipline")
    for flow in range(3):
        table.add_column(f"flow {flow}", justify="right")
    for kind, extra in DISCIPLINES.items():
        if kind not in known:
            continue
        config = out / f"{kind}.toml"
        config.write_text(CONFIG.format(kind=kind, extra=extra))
        result = schedlab.replay(config, trace, out / f"departures_{kind}.csv")
        flows = sorted(result["flows"], key=lambda f: f["flow"])
        cells = [f"{f['delay_mean_s'] * 1e3:.1f} / {f['dropped']}" for f in flows]
        table.add_row(kind, *cells)
    console.print(table)
    console.print(f"departure files in {out}/")


if __name__ == "__main__":
    main()
