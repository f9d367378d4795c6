"""``make demo``: the headline experiment on the built-in default.

Zhang's thesis, figures 5.1 and 5.2: one exponential latency-critical flow and three
best-effort flows on one bottleneck, under DRR++ and DRR+, with the best-effort rate swept
from 5 to 20 packets/s, five replications each. Writes ``OUT/report.html`` (figures, tables,
the scenario, run metadata) and prints the latency-critical flow's mean delay per point.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from schedlab.report import write_report
from schedlab.scenario import Scenario
from schedlab.sweep import progress_printer, run_sweep

#: The scenario of the demo, shipped in the repository's experiments folder.
EXPERIMENT = Path("experiments/thesis/fig5_1_5_2_exponential.toml")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="out/demo", help="output folder, cleared first (default out/demo)")
    parser.add_argument("--scenario", default=None, help=f"scenario to sweep (default {EXPERIMENT})")
    args = parser.parse_args()
    console = Console()
    path = Path(args.scenario) if args.scenario else EXPERIMENT
    if not path.exists():
        parser.error(f"{path} not found: run the demo from the repository root (make demo)")
    scenario = Scenario.from_toml(path)
    points = scenario.points()
    console.print(
        f"[bold]{scenario.data['description']}[/]\n{len(points)} points x {scenario.replications} replications"
        f" -> {args.out}",
        highlight=False,
    )
    started = time.time()
    result = run_sweep(scenario, args.out, progress=progress_printer(), force=True)
    report = write_report(args.out)
    sweep = scenario.sweep
    table = Table(title="LC flow (flow 0) mean delay, ms (± 95% CI half-width)")
    table.add_column("λ_BE (pkt/s)", justify="right")
    kinds = list(dict.fromkeys(result.table[sweep.series]))
    for kind in kinds:
        table.add_column(kind, justify="right")
    lc = result.table[result.table["flow"] == 0]
    for x in sorted(set(lc[sweep.x])):
        cells = []
        for kind in kinds:
            row = lc[(lc[sweep.x] == x) & (lc[sweep.series] == kind)]
            if row.empty:
                cells.append("failed")
            else:
                r = row.iloc[0]
                cells.append(f"{r['delay_mean_s'] * 1e3:.1f} ± {r['delay_mean_s_ci95'] * 1e3:.1f}")
        table.add_row(str(x), *cells)
    console.print(table)
    console.print(f"report: {report.resolve()}  ({time.time() - started:.1f} s)", highlight=False)


if __name__ == "__main__":
    main()
