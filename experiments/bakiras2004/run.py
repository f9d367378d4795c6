"""Bakiras, Wang, Papadias, Hamdi, "Vertical Dimensioning" (seed 004), §IV, figures 4 and 5:
VD against DRR, SRR and Aliquem on the topology of figure 3.

    python experiments/bakiras2004/run.py [--quick] [--out DIR]

writes ``DIR/fig4.csv`` (mean, 99th-percentile and maximum delay of the 10 CBR reference
flows per scheduler), ``DIR/fig5.csv`` (goodput of the 10 TCP reference flows per scheduler
and buffer size, beside the ideal weighted share) and ``DIR/report.md`` (the paper's claims
beside the results). ``--quick`` runs 3 s instead of the defaults (a smoke test).

Topology (figure 3; the text gives only the delays, 1 ms per link, so the capacities are our
reading): the reference path n0→n1→n2→n3→n4 is a chain of four 50 Mbit/s links, each
scheduled by the discipline under test; the 10 flows n5→n6 join at n1 and leave at n2 (they
cross n1→n2), the 10 flows n7→n8 cross n2→n3; their access and exit links are 100 Mbit/s FIFO.
50 Mbit/s is the capacity that makes the paper's statement "12,500 bytes (approximately equal
to 25% of the BDP)" hold: RTT = 8 × 1 ms, BDP = 50 Mbit/s × 8 ms = 50,000 B.

That reading loads figure 4's chain to about 20 %, where every scheduler sends in arrival order.
The loaded variant (``fig4_loaded``; reproduce registry id ``fig4loaded``) runs the same traffic over
LOADED_CHAIN_RATE chain links: about 92 % mean load on n1→n2 and n2→n3, above 100 % while many
Pareto sources are on, so queues build and the schedulers differ.
"""

from __future__ import annotations

import argparse
import copy
import csv
import math
import sys
from pathlib import Path

from schedlab.api import run_summary
from schedlab.scenario import Scenario

HERE = Path(__file__).resolve().parent
L_M = 1000  # the paper's basic quantum, bytes
# Figure 5's TCP segments: 960 payload bytes + 40 header bytes = 1000 B on the wire = L_M, the
# largest packet the paper's experiments send ("uniformly distributed between 200 and 1000
# bytes"; L_M is "the maximum packet size"). ns-2's default (packetSize_ 1000 plus 40 header
# bytes, 1040 B) would exceed L_M; `--tcp-mss 1000` runs that reading.
TCP_MSS = 960
TCP_HEADER = 40
SCHEDULERS = ["vd", "drr", "srr", "aliquem"]
CHAIN = ["n0-n1", "n1-n2", "n2-n3", "n3-n4"]
# Figure 4's traffic offers n1→n2 and n2→n3 10 Mbit/s on average (reference flows 6.875 Mbit/s,
# 25 Pareto sources at half of 250 kbit/s = 3.125 Mbit/s): 11 Mbit/s chain
# links load them to about 92 % (measured utilisation 0.92).
LOADED_CHAIN_RATE = "11Mbit"


def scheduler_table(kind: str, buffer: int) -> dict:
    """The scheduler of a chain link: every per-flow-queue scheduler steals buffer from the
    longest queue weighted by 1/w (McKenney, as the paper ran them)."""
    if kind == "vd":
        return {"kind": "vd", "mtu": L_M, "buffer": buffer}
    table = {"kind": kind, "quantum": L_M, "buffer": buffer, "drop_policy": "longest_queue_drop"}
    if kind == "aliquem":
        table["scaling"] = 5
    return table


def flow_params(kind: str, weight: int) -> dict:
    """Weight w_i in each discipline's own flow key (DRR: quantum w_i·L_M bytes)."""
    keys = {"vd": "quantum_mtus", "srr": "visits_per_pass", "aliquem": "quantum_units"}
    return {"quantum": weight * L_M} if kind == "drr" else {keys[kind]: weight}


def topology(kind: str, buffer: int, duration: str, replications: int, chain_rate: str = "50Mbit") -> dict:
    links = [
        {"name": name, "rate": chain_rate, "delay": "1ms", "scheduler": scheduler_table(kind, buffer)} for name in CHAIN
    ]
    for name in ["n5-n1", "n2-n6", "n7-n2", "n3-n8"]:
        links.append({"name": name, "rate": "100Mbit", "delay": "1ms"})
    sources = []
    size = {"dist": "uniform", "min": 200, "max": 1000}
    pareto = {
        "model": "pareto_on_off",
        "shape": 1.5,
        "mean_on": "500ms",
        "mean_off": "500ms",
        "rate": "250kbit",
    }
    groups = [
        (15, CHAIN, "bg_n0_n4"),
        (10, ["n5-n1", "n1-n2", "n2-n6"], "bg_n5_n6"),
        (10, ["n7-n2", "n2-n3", "n3-n8"], "bg_n7_n8"),
    ]
    flow = 100
    for count, path, label in groups:
        for k in range(count):
            sources.append(
                {
                    "flow": flow,
                    "name": f"{label}_{k}",
                    "path": path,
                    "arrivals": pareto,
                    "size": size,
                    "params": flow_params(kind, 1),
                }
            )
            flow += 1
    return {
        "run": {"duration": duration, "warmup": "2s", "seed": 1, "replications": replications, "bin": "1s"},
        "link": links,
        "source": sources,
    }


def figure4(kind: str, duration: str, replications: int, chain_rate: str = "50Mbit") -> dict:
    data = topology(kind, 50_000, duration, replications, chain_rate)
    for i in range(1, 11):
        data["source"].append(
            {
                "flow": i,
                "name": f"ref{i}",
                "path": CHAIN,
                "arrivals": {"model": "cbr", "rate": f"{125 * i}kbit"},
                "size": {"dist": "uniform", "min": 200, "max": 1000},
                "params": flow_params(kind, i),
            }
        )
    return data


def figure5(kind: str, buffer: int, duration: str, replications: int, mss: int = TCP_MSS) -> dict:
    data = topology(kind, buffer, duration, replications)
    data["run"]["warmup"] = "5s"
    for name in ["n4-n3", "n3-n2", "n2-n1", "n1-n0"]:
        data["link"].append({"name": name, "rate": "50Mbit", "delay": "1ms"})
    for i in range(1, 11):
        data["source"].append(
            {
                "flow": i,
                "name": f"ref{i}",
                "path": CHAIN,
                # ns-2's defaults: initial window 2, minimum RTO 200 ms.
                "transport": {
                    "kind": "tcp",
                    "mss": mss,
                    "header": TCP_HEADER,
                    "initial_window": 2,
                    "min_rto": "200ms",
                },
                "arrivals": {"model": "bulk"},
                "ack_path": ["n4-n3", "n3-n2", "n2-n1", "n1-n0"],
                "params": flow_params(kind, i),
            }
        )
    return data


def reproduce_scenario(figure: str) -> dict:
    """Figure 4, its loaded variant or figure 5 as one scenario whose ``[sweep]`` runs the four
    schedulers (x =
    ``link[0].scheduler.kind``), for ``schedlab reproduce vd fig4 fig5``: every chain link's
    scheduler table and every source's parameters are swept together, because each discipline
    takes its own keys (DRR a quantum w_i·L_M, the others a weight w_i)."""
    if figure == "fig4":
        data = figure4(SCHEDULERS[0], "30s", 3)
        buffer = 50_000
    elif figure == "fig4_loaded":
        data = figure4(SCHEDULERS[0], "30s", 3, LOADED_CHAIN_RATE)
        buffer = 50_000
    else:
        data = figure5(SCHEDULERS[0], 12_500, "40s", 5)
        buffer = 12_500
    zipped: dict[str, list] = {}
    for index in range(len(CHAIN)):
        zipped[f"link[{index}].scheduler"] = [scheduler_table(kind, buffer) for kind in SCHEDULERS]
    for index, source in enumerate(data["source"]):
        weight = source["flow"] if source["flow"] <= 10 else 1
        zipped[f"source[{index}].params"] = [flow_params(kind, weight) for kind in SCHEDULERS]
    zipped["link[0].scheduler.kind"] = list(SCHEDULERS)
    data["sweep"] = {"x": "link[0].scheduler.kind", "zip": zipped}
    return data


REPRODUCE_SCENARIOS = {
    "fig4": ("fig4_delay.toml", "figure 4 (CBR reference flows, delay)"),
    "fig4_loaded": (
        "fig4_loaded_delay.toml",
        f"figure 4 (CBR reference flows, delay) with {LOADED_CHAIN_RATE} chain links (about 92 % load)",
    ),
    "fig5": ("fig5_tcp_small_buffers.toml", "figure 5 (TCP reference flows, 12,500 B buffers)"),
}


def write_reproduce_scenarios(folder: Path) -> None:
    """Write the reproduce registry's scenarios of figure 4, its loaded variant and figure 5
    (REPRODUCE_SCENARIOS) into ``folder``."""
    import tomli_w

    for figure, (name, what) in REPRODUCE_SCENARIOS.items():
        header = (
            f"# Generated by `python experiments/bakiras2004/run.py --write-scenarios {folder}`: paper 004's\n"
            f"# {what} on our reading of figure 3's topology (experiments/bakiras2004/README.md).\n"
            "# Flows 1-10 are the reference flows (w_i = i); flows 100-134 the Pareto on/off background.\n"
            "# The sweep runs VD, DRR, SRR and Aliquem: every chain link's scheduler and every source's\n"
            "# parameters change together (each discipline takes its own keys).\n"
        )
        text = header + tomli_w.dumps(reproduce_scenario(figure))
        partial = folder / (name + ".partial")
        partial.write_text(text)
        partial.replace(folder / name)


def run(data: dict) -> dict:
    return run_summary(Scenario(copy.deepcopy(data), base_dir=HERE))


def by_flow(rows: list[dict]) -> dict[int, dict]:
    return {row["flow"]: row for row in rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("out/bakiras2004"))
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--quick", action="store_true", help="3 s / 8 s runs, one replication (a smoke test)")
    length.add_argument(
        "--full", action="store_true", help="the paper's length: 60 s runs, 10 replications (figures 4 and 5)"
    )
    parser.add_argument(
        "--tcp-mss",
        type=int,
        default=TCP_MSS,
        help=f"figure 5's TCP payload per segment, bytes (default {TCP_MSS}: {TCP_MSS + TCP_HEADER} B packets = L_M)",
    )
    parser.add_argument(
        "--figures",
        default="4,5",
        help="which figures to run, comma-separated (4, 5); the report covers those run (default 4,5)",
    )
    parser.add_argument(
        "--write-scenarios",
        type=Path,
        metavar="DIR",
        help="write the scenario files of `schedlab reproduce vd fig4 fig4loaded fig5` into DIR and stop",
    )
    parser.add_argument("--length-note", help="with --from-csv: the run length to state in the report")
    parser.add_argument(
        "--from-csv",
        type=Path,
        metavar="DIR",
        help="write OUT/report.md from DIR/fig4.csv and DIR/fig5.csv (those present) without running",
    )
    args = parser.parse_args(argv)
    if args.write_scenarios is not None:
        write_reproduce_scenarios(args.write_scenarios)
        return 0
    if args.from_csv is not None:
        fig4_rows, fig5_rows = (read_csv(args.from_csv / name) for name in ("fig4.csv", "fig5.csv"))
        if not fig4_rows and not fig5_rows:
            parser.error(f"--from-csv {args.from_csv}: neither fig4.csv nor fig5.csv is there")
        args.out.mkdir(parents=True, exist_ok=True)
        partial = args.out / "report.md.partial"
        partial.write_text(report(fig4_rows, fig5_rows, False, args.length_note or ""))
        partial.replace(args.out / "report.md")
        return 0
    figures = set(args.figures.split(","))
    if not figures or not figures <= {"4", "5"}:
        parser.error(f"--figures {args.figures!r}: give 4, 5 or 4,5")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.quick:
        (fig4_duration, fig4_reps), (fig5_duration, fig5_reps) = ("3s", 1), ("8s", 1)
    elif args.full:
        (fig4_duration, fig4_reps), (fig5_duration, fig5_reps) = ("60s", 10), ("60s", 10)
    else:
        (fig4_duration, fig4_reps), (fig5_duration, fig5_reps) = ("30s", 3), ("40s", 2)
    buffers = [12_500, 50_000]

    fig4_rows = []
    for kind in SCHEDULERS if "4" in figures else []:
        print(f"figure 4: {kind}", file=sys.stderr, flush=True)
        flows = by_flow(run(figure4(kind, fig4_duration, fig4_reps))["flows"])
        for i in range(1, 11):
            row = flows[i]
            fig4_rows.append(
                {
                    "scheduler": kind,
                    "weight": i,
                    "delay_mean_ms": row["delay_mean_s"] * 1e3,
                    "delay_p99_ms": row["delay_p99_s"] * 1e3,
                    "delay_max_ms": row["delay_max_s"] * 1e3,
                    "loss_ratio": row["loss_ratio"],
                }
            )
    if fig4_rows:
        write_csv(args.out / "fig4.csv", fig4_rows)

    fig5_rows = []
    for buffer in buffers if "5" in figures else []:
        for kind in SCHEDULERS:
            print(f"figure 5: {kind}, buffer {buffer} B", file=sys.stderr, flush=True)
            summary = run(figure5(kind, buffer, fig5_duration, fig5_reps, args.tcp_mss))
            tcp = by_flow(summary["tcp_flows"])
            # Capacity left to the reference flows on the busiest link (n1→n2): 50 Mbit/s minus
            # the UDP background crossing it (its measured throughput).
            udp = sum(row["throughput_bps"] for row in summary["flows"] if row["flow"] >= 100 and row["flow"] < 125)
            spare = 50e6 - udp
            for i in range(1, 11):
                ideal = spare * i / 55 * args.tcp_mss / (args.tcp_mss + TCP_HEADER)
                goodput = tcp[i]["goodput_bps"]
                fig5_rows.append(
                    {
                        "buffer_bytes": buffer,
                        "scheduler": kind,
                        "weight": i,
                        "goodput_mbps": goodput / 1e6,
                        "ideal_mbps": ideal / 1e6,
                        "ratio_to_ideal": goodput / ideal,
                        "retransmissions": tcp[i]["retransmissions"],
                        "timeouts": tcp[i]["timeouts"],
                    }
                )
    if fig5_rows:
        write_csv(args.out / "fig5.csv", fig5_rows)
    length = []
    if fig4_rows:
        length.append(f"figure 4 {fig4_duration} × {fig4_reps} replications per scheduler")
    if fig5_rows:
        length.append(
            f"figure 5 {fig5_duration} × {fig5_reps} replications per scheduler and buffer, "
            f"TCP segments of {args.tcp_mss} + {TCP_HEADER} B"
        )
    (args.out / "report.md").write_text(report(fig4_rows, fig5_rows, args.quick, "; ".join(length)))
    written = [name for name, rows in [("fig4.csv", fig4_rows), ("fig5.csv", fig5_rows)] if rows]
    print(f"wrote {args.out}: {', '.join(written)}, report.md", file=sys.stderr)
    return 0


def read_csv(path: Path) -> list[dict]:
    """The rows of a fig4.csv or fig5.csv written by ``write_csv`` (numbers as numbers); empty
    when the file is absent."""
    if not path.exists():
        return []
    rows = []
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            rows.append({key: value if key == "scheduler" else float(value) for key, value in row.items()})
    for row in rows:
        for key in ("weight", "buffer_bytes", "retransmissions", "timeouts"):
            if key in row:
                row[key] = int(row[key])
    return rows


def write_csv(path: Path, rows: list[dict]) -> None:
    partial = path.with_suffix(".csv.partial")
    with partial.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    partial.replace(path)


def cells(rows: list[dict], key: str, digits: int) -> str:
    return " ".join(f"{row[key]:.{digits}f}" for row in rows)


def report(fig4: list[dict], fig5: list[dict], quick: bool, length: str = "") -> str:
    """The paper's claims beside the results of the figures run (``fig4`` or ``fig5`` may be
    empty); ``length`` says how long each figure ran."""
    lines = ["# Bakiras et al. (seed 004), figures 4 and 5 — paper's claims beside our results", ""]
    if quick:
        lines += ["**Quick run (3 s / 8 s, one replication): a smoke test, not a result.**", ""]
    if length:
        lines += [f"Run length: {length}.", ""]
    if fig4:
        lines += figure4_report(fig4)
    if fig5:
        lines += figure5_report(fig5)
    return "\n".join(lines)


def mean(rows: list[dict], key: str) -> float:
    return sum(r[key] for r in rows) / len(rows)


def figure4_report(fig4: list[dict]) -> list[str]:
    lines = ["## Figure 4: delay of the CBR reference flows", ""]
    lines += ["| scheduler | mean delay (ms), w=1…10 | p99 (ms) | max (ms) |", "|---|---|---|---|"]
    per = {k: [r for r in fig4 if r["scheduler"] == k] for k in SCHEDULERS}
    for kind, rows in per.items():
        means, p99s, maxima = (
            cells(rows, key, digits) for key, digits in [("delay_mean_ms", 3), ("delay_p99_ms", 2), ("delay_max_ms", 2)]
        )
        lines.append(f"| {kind} | {means} | {p99s} | {maxima} |")
    lines.append("")
    for other, paper in [("aliquem", "8%–54%"), ("srr", "18%–58%"), ("drr", "46%–57%")]:
        reductions = [1 - v["delay_mean_ms"] / o["delay_mean_ms"] for v, o in zip(per["vd"], per[other], strict=True)]
        lines.append(
            f"* Paper: VD's average delay is {paper} lower than {other.upper()}'s. "
            f"Ours: {min(reductions) * 100:.0f}% to {max(reductions) * 100:.0f}% "
            f"— {'**match**' if min(reductions) > 0 else '**mismatch** (not lower for every weight)'}."
        )
    spread = max(r["delay_mean_ms"] for r in per["vd"]) / min(r["delay_mean_ms"] for r in per["vd"])
    lines.append(
        f"* Paper: VD's delay does not vary considerably with the weight. Ours: largest/smallest "
        f"mean delay over w = 1…10 is {spread:.2f} — {'**match**' if spread < 1.25 else '**mismatch**'} "
        "(within 25 %)."
    )
    lines.append("")
    return lines


def figure5_report(fig5: list[dict]) -> list[str]:
    lines = ["## Figure 5: goodput of the TCP reference flows", ""]
    for buffer in sorted({r["buffer_bytes"] for r in fig5}):
        lines += [f"### Buffer {buffer} B per link", "", "| scheduler | goodput / ideal, w = 1…10 |", "|---|---|"]
        for kind in SCHEDULERS:
            rows = [r for r in fig5 if r["buffer_bytes"] == buffer and r["scheduler"] == kind]
            lines.append(f"| {kind} | {cells(rows, 'ratio_to_ideal', 2)} |")
        lines.append("")
    small = [r for r in fig5 if r["buffer_bytes"] == 12_500]
    low, high = {}, {}
    for kind in SCHEDULERS:
        rows = [r for r in small if r["scheduler"] == kind]
        if not rows:
            continue
        low[kind] = mean([r for r in rows if r["weight"] <= 2], "ratio_to_ideal")
        high[kind] = mean([r for r in rows if r["weight"] > 4], "ratio_to_ideal")
        error = math.sqrt(mean([{"e": (r["ratio_to_ideal"] - 1) ** 2} for r in rows], "e"))
        lines.append(
            f"* {kind} at 12,500 B: weights 1–2 get {low[kind]:.2f} of their ideal share, weights > 4 "
            f"get {high[kind]:.2f}; RMS deviation from ideal {error:.2f}."
        )
    lines += ["", "Paper's claims (§IV, fig. 5) and verdicts:", ""]
    if "vd" in low:
        for kind in ("srr", "drr", "aliquem"):
            if kind in low:
                holds = high[kind] > 1 and low[kind] < low["vd"]
                lines.append(
                    f"* With 12,500 B buffers {kind.upper()} gives weights > 4 an excessive share at the "
                    f"expense of weights 1 and 2: weights > 4 get {high[kind]:.2f} of ideal, weights 1–2 "
                    f"{low[kind]:.2f} (VD: {low['vd']:.2f}) — {'**match**' if holds else '**mismatch**'}."
                )
    for buffer in sorted({r["buffer_bytes"] for r in fig5}):
        rows = [r for r in fig5 if r["buffer_bytes"] == buffer and r["scheduler"] == "vd"]
        if rows:
            worst = max(rows, key=lambda r: abs(r["ratio_to_ideal"] - 1))
            close = abs(worst["ratio_to_ideal"] - 1) <= 0.25
            lines.append(
                f"* VD stays close to the ideal weighted share regardless of the buffer size — at "
                f"{buffer:,} B every weight within 25 % of ideal? worst is w = {worst['weight']} at "
                f"{worst['ratio_to_ideal']:.2f} — {'**match**' if close else '**mismatch**'}."
            )
    large = {
        kind: mean([r for r in small if r["scheduler"] == kind and r["weight"] > 7], "ratio_to_ideal")
        for kind in ("drr", "srr", "aliquem")
        if any(r["scheduler"] == kind for r in small)
    }
    if len(large) == 3:
        better = abs(large["drr"] - 1) < min(abs(large["srr"] - 1), abs(large["aliquem"] - 1))
        lines.append(
            "* With 12,500 B DRR performs better than SRR and Aliquem for weights greater than 7: mean "
            f"goodput / ideal over w = 8…10 is DRR {large['drr']:.2f}, SRR {large['srr']:.2f}, Aliquem "
            f"{large['aliquem']:.2f} — {'**match**' if better else '**mismatch**'}."
        )
    lines.append("")
    return lines


if __name__ == "__main__":
    sys.exit(main())
