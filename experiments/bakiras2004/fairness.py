"""Measured fairness of VD, DRR, SRR and Aliquem against Bakiras et al.'s bounds (seed 004,
§III-B): theorem 1 (Golestani fairness), theorem 2 (worst-case fair index, WFI) and theorem 3
(largest inter-departure time of a flow).

    python experiments/bakiras2004/fairness.py [--out DIR] [--duration 5s]

One 10 Mbit/s link, N = 10 flows with w_i = i, each sending CBR at twice its guaranteed rate
r_i = w_i·C/Σw (so every flow stays backlogged; unlimited buffer), packet sizes uniform
200–1000 B, L_M = 1000 B. Each scheduler runs once with `schedlab run --packets`; from the
per-packet log (arrival and departure of every packet):

* Golestani: for each pair (i, j), max − min over departure instants of
  S_i(0,t)/r_i − S_j(0,t)/r_j, i.e. the largest |S_i(t1,t2)/r_i − S_j(t1,t2)/r_j| over
  intervals in which both are backlogged, against 2L_M/r_min + L_M(1/r_i + 1/r_j);
* WFI: for each packet of flow i, the time from its arrival (backlog q_i including it) to its
  departure, against q_i/r_i + 2L_M/r_min + (N−1)L_M/C + L_M/r_i;
* inter-departure: the largest gap between consecutive departures of flow i, against
  2L_M/r_min + (N−1)L_M/C.

Writes ``DIR/fairness.csv`` (per scheduler and flow or pair: measured, bound, ratio) and
``DIR/fairness.svg`` (the three measures per flow or pair under each scheduler, with the
theorems' bounds drawn over them), and prints the worst ratio per scheduler and measure (a ratio
above 1 breaks the theorem). ``--from-csv FILE`` redraws the figure from a ``fairness.csv``
without running anything.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

C = 10e6 / 8  # bytes per second
L_M = 1000
N = 10
WEIGHTS = list(range(1, N + 1))
R_MIN = C / sum(WEIGHTS)


def scenario(kind: str, duration: str) -> str:
    if kind == "vd":
        scheduler = f'{{ kind = "vd", mtu = {L_M}, rounds = 100000 }}'
    elif kind == "aliquem":
        scheduler = f'{{ kind = "aliquem", quantum = {L_M}, scaling = 5 }}'
    else:
        scheduler = f'{{ kind = "{kind}", quantum = {L_M} }}'
    lines = [
        f'[run]\nduration = "{duration}"\nwarmup = "0s"\nseed = 1\ndrain = false\n',
        f'[[link]]\nname = "out"\nrate = "10Mbit"\nscheduler = {scheduler}\n',
    ]
    for i, w in enumerate(WEIGHTS, start=1):
        rate = 2 * w * R_MIN * 8
        key = {"vd": "quantum_mtus", "srr": "visits_per_pass", "aliquem": "quantum_units"}.get(kind)
        params = f"quantum = {w * L_M}" if kind == "drr" else f"{key} = {w}"
        lines.append(
            f'[[source]]\nflow = {i}\npath = ["out"]\narrivals = {{ model = "cbr", rate = {rate:.0f} }}\n'
            f'size = {{ dist = "uniform", min = 200, max = 1000 }}\nparams = {{ {params} }}\n'
        )
    return "".join(lines)


def measure(kind: str, duration: str, work: Path) -> list[dict]:
    path = work / f"{kind}.toml"
    path.write_text(scenario(kind, duration))
    log = work / f"{kind}_packets.csv"
    subprocess.run(
        ["schedlab", "run", str(path), "--out", str(work / kind), "--packets", str(log), "--force"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    packets = defaultdict(list)  # flow -> [(arrival, departure, size)]
    with log.open() as f:
        for row in csv.DictReader(f):
            if row["outcome"] == "sent":
                packets[int(row["flow"])].append(
                    (float(row["arrival_s"]), float(row["departure_s"]), int(row["size_bytes"]))
                )
    rate = {i: w * R_MIN for i, w in zip(range(1, N + 1), WEIGHTS, strict=True)}
    rows = []
    # Theorem 1: cumulative normalised service at every departure instant.
    events = sorted((dep, flow, size) for flow, ps in packets.items() for _, dep, size in ps)
    served = dict.fromkeys(packets, 0.0)
    extremes: dict[tuple[int, int], list[float]] = {}
    for _, flow, size in events:
        served[flow] += size
        for other in packets:
            if other == flow:
                continue
            i, j = min(flow, other), max(flow, other)
            d = served[i] / rate[i] - served[j] / rate[j]
            lo_hi = extremes.setdefault((i, j), [d, d])
            lo_hi[0] = min(lo_hi[0], d)
            lo_hi[1] = max(lo_hi[1], d)
    for (i, j), (lo, hi) in sorted(extremes.items()):
        bound = 2 * L_M / R_MIN + L_M * (1 / rate[i] + 1 / rate[j])
        rows.append(
            {"scheduler": kind, "measure": "golestani", "flows": f"{i}-{j}", "measured_s": hi - lo, "bound_s": bound}
        )
    for flow, ps in sorted(packets.items()):
        worst_wfi = (0.0, 1.0)
        gap = 0.0
        start = 0
        for k, (arrival, departure, _) in enumerate(ps):
            while ps[start][1] <= arrival:
                start += 1
            backlog = sum(size for _, _, size in ps[start : k + 1])
            bound = backlog / rate[flow] + 2 * L_M / R_MIN + (N - 1) * L_M / C + L_M / rate[flow]
            tau = departure - arrival
            if tau / bound > worst_wfi[0] / worst_wfi[1]:
                worst_wfi = (tau, bound)
            if k:
                gap = max(gap, departure - ps[k - 1][1])
        rows.append(
            {
                "scheduler": kind,
                "measure": "wfi",
                "flows": str(flow),
                "measured_s": worst_wfi[0],
                "bound_s": worst_wfi[1],
            }
        )
        rows.append(
            {
                "scheduler": kind,
                "measure": "inter_departure",
                "flows": str(flow),
                "measured_s": gap,
                "bound_s": 2 * L_M / R_MIN + (N - 1) * L_M / C,
            }
        )
    for row in rows:
        row["ratio"] = row["measured_s"] / row["bound_s"]
    return rows


SCHEDULERS = ["vd", "drr", "srr", "aliquem"]
MARKERS = {"vd": "o", "drr": "s", "srr": "^", "aliquem": "D"}


def plot(rows: list[dict], path: Path) -> None:
    """The measures as markers per scheduler, each theorem's bound as a line: Golestani per pair
    (i, j) against theorem 1, the worst WFI packet of each flow against theorem 2 evaluated at
    that packet (its backlog differs per scheduler: a dashed line per scheduler), the largest
    inter-departure gap per flow against theorem 3."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "schedlab"
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(9, 10))
    panels = [
        ("golestani", "Golestani fairness per pair (i, j) — theorem 1"),
        ("wfi", "worst-case fair index: delay of each flow's worst packet — theorem 2"),
        ("inter_departure", "largest inter-departure time per flow — theorem 3"),
    ]
    for ax, (measure_name, title) in zip(axes, panels, strict=True):
        for kind in SCHEDULERS:
            selected = [r for r in rows if r["scheduler"] == kind and r["measure"] == measure_name]
            labels = [r["flows"] for r in selected]
            x = range(len(labels))
            (line,) = ax.plot(
                x, [float(r["measured_s"]) * 1e3 for r in selected], MARKERS[kind], label=kind, markersize=4
            )
            if measure_name == "wfi":
                ax.plot(x, [float(r["bound_s"]) * 1e3 for r in selected], "--", color=line.get_color(), linewidth=1)
        bound = [float(r["bound_s"]) * 1e3 for r in rows if r["scheduler"] == "vd" and r["measure"] == measure_name]
        if measure_name != "wfi":
            ax.plot(range(len(bound)), bound, "-", color="black", linewidth=1.2, label="bound")
        else:
            ax.plot([], [], "--", color="grey", label="bound (per scheduler)")
        ax.set_xticks(range(len(labels)), labels, rotation=90 if len(labels) > 12 else 0, fontsize=7)
        ax.set_title(title, fontsize=10)
        ax.set_ylabel("ms")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8, ncol=5)
    axes[0].set_xlabel("pair (i, j), w_i = i")
    axes[1].set_xlabel("flow i")
    axes[2].set_xlabel("flow i")
    fig.tight_layout()
    partial = path.with_suffix(".svg.partial")
    fig.savefig(partial, format="svg", metadata={"Date": None})
    plt.close(fig)
    partial.replace(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("out/bakiras2004"))
    parser.add_argument("--duration", default="5s")
    parser.add_argument("--from-csv", type=Path, metavar="FILE", help="redraw DIR/fairness.svg from FILE and stop")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.from_csv is not None:
        with args.from_csv.open() as f:
            plot(list(csv.DictReader(f)), args.out / "fairness.svg")
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ["vd", "drr", "srr", "aliquem"]:
            print(f"fairness: {kind}", file=sys.stderr, flush=True)
            rows += measure(kind, args.duration, Path(tmp))
    with (args.out / "fairness.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    plot(rows, args.out / "fairness.svg")
    print("scheduler,measure,worst_ratio_to_bound,at")
    for kind in ["vd", "drr", "srr", "aliquem"]:
        for measure_name in ["golestani", "wfi", "inter_departure"]:
            worst = max(
                (r for r in rows if r["scheduler"] == kind and r["measure"] == measure_name), key=lambda r: r["ratio"]
            )
            print(f"{kind},{measure_name},{worst['ratio']:.3f},{worst['flows']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
