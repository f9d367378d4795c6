"""The thesis scenario (figures 5.1/5.2) through the kernel's HTB and through `schedlab gateway`.

Usage (root; about 6 minutes): ``.venv/bin/python bench/gateway_thesis_htb.py``
env: ``SECONDS_PER_RUN`` (default 20), ``LAMBDAS`` (default "5 10 15 20"),
``OUT`` (default docs/performance.md), ``RAW=FILE`` (the per-run figures as JSON).

One LC and three BE Poisson flows (``experiments/thesis/measure_fig5_1_5_2.toml``, its sweep
points at each λ_BE, replication 0) are sent by ``schedlab gen`` to ``schedlab sink`` through
the same namespace testbed (:mod:`schedlab.testbed`) three ways:

* ``htb``: the kernel forwards (a bridge in the gateway namespace) and HTB shapes ``gwout`` at
  the bottleneck's 250 kbit/s. The kernel of this machine has htb, tbf, pfifo, bfifo,
  pfifo_fast and u32 but no drr qdisc, so the closest kernel setup to DRR++ is HTB with one
  leaf class per flow (u32 on the source port ``schedlab gen`` uses): guaranteed rate = the
  link rate × the flow's DRR quantum / the sum of the quanta, ceil = the link rate, HTB's own
  ``quantum`` = the DRR quantum, the LC class at ``prio 0`` and the BE classes at ``prio 1``
  (HTB lends spare rate to the lower prio number first: the LC flow's "latency-critical"
  preference), a pfifo of the scenario's buffer per class. HTB counts the 14-byte Ethernet
  header in every packet's length and the gateway does not, so HTB's rate is raised by
  (mean IP length + 14)/(mean IP length) for the thesis's size distribution (mean 410 bytes:
  ×1.034) so that both carry the same IP bytes per second on average.
* ``drr_plusplus`` and ``drr_plus``: ``schedlab gateway`` with the scenario's bottleneck (as
  ``schedlab measure`` runs it).

Per flow and run: packets sent and received and the one-way delay (mean, median, p99) of the
datagrams received, from gen's and sink's logs (shared monotonic clock). Writes the
"Thesis scenario through HTB and the gateway" section of ``OUT`` (between its markers).
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from schedlab import _core, testbed
from schedlab.measure import PORT_BASE, _finish, _wait_for, run_traffic
from schedlab.scenario import Scenario
from schedlab.sweep import _measured_point_files

sys.path.insert(0, str(Path(__file__).resolve().parent))
from doc_section import replace_section  # noqa: E402

TOP = Path(__file__).resolve().parents[1]
SCENARIO = TOP / "experiments" / "thesis" / "measure_fig5_1_5_2.toml"
SECONDS = float(os.environ.get("SECONDS_PER_RUN", "20"))
LAMBDAS = [float(x) for x in os.environ.get("LAMBDAS", "5 10 15 20").split()]
OUT = Path(os.environ.get("OUT", TOP / "docs" / "performance.md"))
BEGIN, END = "<!-- thesis-htb:begin -->", "<!-- thesis-htb:end -->"
ETHERNET_HEADER = 14
MEAN_IP_LENGTH = 410  # the thesis's best-effort size distribution (thesis_best_effort)
PYTHON = [sys.executable, "-m", "schedlab"]
# HTB's token buckets hold one full-size frame: a packet leaves when the bucket has its bytes,
# so HTB cannot send faster than its rate for longer than one frame (the closest it comes to
# a link; a larger burst would let queued packets through back to back).
BURST = "1514"


def tc(bed: testbed.Testbed, *args: str) -> None:
    subprocess.run(["ip", "netns", "exec", bed.gateway, "tc", *args], check=True, capture_output=True, text=True)


def htb_classes(point: Scenario) -> tuple[int, list[dict]]:
    """The bottleneck's rate (bit/s) and one HTB class per source: quantum, rate, prio."""
    data = point.data
    link = data["link"][-1]
    rate = int(_core.parse_rate(str(link["rate"])))
    default_quantum = int(link["scheduler"].get("quantum", 1500))
    sources = []
    for source in data["source"]:
        params = source.get("params", {})
        sources.append(
            {
                "flow": int(source["flow"]),
                "name": source.get("name", f"flow {source['flow']}"),
                "quantum": int(params.get("quantum", default_quantum)),
                "prio": 0 if params.get("latency_critical") else 1,
            }
        )
    total = sum(s["quantum"] for s in sources)
    for s in sources:
        s["rate_bps"] = rate * s["quantum"] // total
    return rate, sources


def set_up_htb(bed: testbed.Testbed, point: Scenario) -> dict:
    rate, classes = htb_classes(point)
    scale = (MEAN_IP_LENGTH + ETHERNET_HEADER) / MEAN_IP_LENGTH
    link_bps = int(rate * scale)
    buffer = int(point.data["link"][-1]["scheduler"].get("buffer_packets", 1000))
    tc(bed, "qdisc", "replace", "dev", "gwout", "root", "handle", "1:", "htb")
    tc(
        bed,
        *("class", "add", "dev", "gwout", "parent", "1:", "classid", "1:1", "htb"),
        *("rate", f"{link_bps}bit", "ceil", f"{link_bps}bit", "burst", BURST, "cburst", BURST),
    )
    for index, c in enumerate(classes):
        classid = f"1:{10 + index}"
        tc(
            bed,
            *("class", "add", "dev", "gwout", "parent", "1:1", "classid", classid, "htb"),
            *("rate", f"{int(c['rate_bps'] * scale)}bit", "ceil", f"{link_bps}bit"),
            *("prio", str(c["prio"]), "quantum", str(c["quantum"]), "burst", BURST, "cburst", BURST),
        )
        tc(bed, "qdisc", "add", "dev", "gwout", "parent", classid, "pfifo", "limit", str(buffer))
        tc(
            bed,
            *("filter", "add", "dev", "gwout", "parent", "1:", "protocol", "ip", "prio", "1", "u32"),
            *("match", "ip", "sport", str(PORT_BASE + c["flow"]), "0xffff", "flowid", classid),
        )
    return {"link_bps": link_bps, "classes": classes, "scale": scale}


def delays(folder: Path, rate_bps: int) -> dict:
    """Per source: sent, received, one-way delay mean / median / p99 (ms), and the mean
    transmission time of its packets at ``rate_bps`` (ms)."""
    sent: dict[int, int] = {}
    for line in (folder / "sent.csv").read_text().splitlines()[1:]:
        source = int(line.split(",")[0])
        sent[source] = sent.get(source, 0) + 1
    seen: set = set()
    per: dict[int, list[int]] = {}
    transmission: dict[int, list[float]] = {}
    for line in (folder / "received.csv").read_text().splitlines()[1:]:
        source, sequence, sent_ns, received_ns, size = (int(v) for v in line.split(","))
        if (source, sequence) in seen:
            continue
        seen.add((source, sequence))
        per.setdefault(source, []).append(received_ns - sent_ns)
        transmission.setdefault(source, []).append(size * 8 / rate_bps * 1e3)
    out = {}
    for source in sorted(sent):
        values = sorted(per.get(source, []))
        out[source] = {
            "sent": sent[source],
            "received": len(values),
            "mean_ms": statistics.fmean(values) / 1e6 if values else None,
            "median_ms": statistics.median(values) / 1e6 if values else None,
            "p99_ms": values[min(len(values) - 1, int(0.99 * len(values)))] / 1e6 if values else None,
            "transmission_ms": statistics.fmean(transmission[source]) if values else None,
        }
    return out


def run_htb(point_file: Path, point: Scenario, folder: Path) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    with testbed.Testbed(mode="bridge") as bed:
        setup = set_up_htb(bed, point)
        run_traffic(bed, point_file, folder, SECONDS)
    rate, _ = htb_classes(point)
    return {"htb": {k: v for k, v in setup.items() if k != "classes"}, "flows": delays(folder, rate)}


def run_gateway(point_file: Path, point: Scenario, folder: Path) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    stats = folder / "gateway.json"
    with testbed.Testbed() as bed:
        gateway = bed.spawn(
            bed.gateway,
            [*PYTHON, "gateway", "--scenario", str(point_file), "--port-base", str(PORT_BASE)]
            + ["-i", "gwin", "-e", "gwout", "--stats", str(stats)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        _wait_for(stats, gateway, "the gateway")
        run_traffic(bed, point_file, folder, SECONDS)
        gateway.send_signal(signal.SIGINT)
        _finish(gateway, "the gateway", 5)
    pacing = json.loads(stats.read_text())["pacing_error"]
    rate, _ = htb_classes(point)
    return {"pacing_error_p50_ms": pacing["p50_s"] * 1e3, "flows": delays(folder, rate)}


def main() -> None:
    if not testbed.can_admin_network():
        sys.exit("error: bench/gateway_thesis_htb.py needs root (it creates network namespaces)")
    scenario = Scenario.from_toml(SCENARIO).set("run.duration", f"{SECONDS:g}s")
    load_before = os.getloadavg()
    runs = []
    with tempfile.TemporaryDirectory(prefix="schedlab-thesis-htb-") as tmp:
        work = Path(tmp)
        points = scenario.points()
        files = _measured_point_files(points, work)
        for lam in LAMBDAS:
            chosen = [p for p in points if p.values["source[1].arrivals.rate_pps"] == lam]
            if not chosen:
                sys.exit(f"LAMBDAS: {lam:g} is not a λ_BE of {SCENARIO.name}")
            row = {"lambda_be": lam}
            for point in chosen:
                kind = point.values["link[2].scheduler.kind"]
                print(f"# λ_BE = {lam:g}: gateway {kind}", file=sys.stderr)
                row[kind] = run_gateway(files[point.index], point.scenario, work / f"{lam:g}-{kind}")
            # HTB's classes follow the DRR quanta of the point (the same for both kinds).
            print(f"# λ_BE = {lam:g}: kernel HTB", file=sys.stderr)
            row["htb"] = run_htb(files[chosen[0].index], chosen[0].scenario, work / f"{lam:g}-htb")
            runs.append(row)
            print(f"#   {json.dumps(row)}", file=sys.stderr)
    load_after = os.getloadavg()
    if os.environ.get("RAW"):
        Path(os.environ["RAW"]).write_text(json.dumps(runs, indent=1))
    write_section(runs, load_before, load_after)


def write_section(runs: list[dict], load_before, load_after) -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=TOP).stdout
    names = {0: "LC", 1: "BE1", 2: "BE2", 3: "BE3"}
    fmt = lambda v: "–" if v is None else f"{v:.1f}"  # noqa: E731
    lines = [
        BEGIN,
        "## Thesis scenario through the kernel's HTB and through the gateway",
        "",
        "Written by `bench/gateway_thesis_htb.py` (do not edit by hand; rerun it as root). The "
        "thesis's figures 5.1/5.2 scenario (`experiments/thesis/measure_fig5_1_5_2.toml`: one LC "
        "Poisson flow of 15 packets/s and three BE Poisson flows at λ_BE each, 250 kbit/s "
        f"bottleneck), replication 0, {SECONDS:g} s per run, sent by `schedlab gen` to `schedlab sink` "
        "on the namespace testbed through (a) the kernel's HTB on the bridge's egress — one class per "
        "flow, guaranteed rate ∝ the flow's DRR quantum, ceil = the link, HTB quantum = the DRR "
        "quantum, LC at prio 0 and BE at prio 1, pfifo per class (the kernel here has no drr qdisc), "
        "the rate raised by 424/410 because HTB counts the Ethernet header — and (b) `schedlab "
        "gateway` with DRR++ and with DRR+. One-way delays of the received datagrams, in ms "
        "(mean / p99); lost = sent − received. The two are not the same kind of element: HTB is a "
        "shaper — a packet leaves as soon as its class's and the parent's token buckets (one frame "
        "deep here) hold its bytes, so at low load it passes in a fraction of a millisecond — while "
        "the gateway emulates a 250 kbit/s link, on which every packet also takes its own "
        "transmission time (its size·8/250 kbit/s, the `tx` column, about 13 ms for 410 bytes) before "
        "it arrives, as on the thesis's bottleneck; compare HTB with the gateway's delay minus `tx`.",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M')} UTC on 2 CPUs, commit {commit.strip()}; load "
        f"average before/after: {load_before[0]:.1f} / {load_after[0]:.1f}."
        + (
            " **The machine was shared with other builds: indicative only.**"
            if max(load_before[0], load_after[0]) > 2
            else ""
        ),
        "",
        "| λ_BE | flow | tx (mean) | HTB mean / p99 | gateway DRR++ mean / p99 | gateway DRR+ mean / p99 | lost HTB / DRR++ / DRR+ |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for row in runs:
        for source in sorted(row["htb"]["flows"], key=int):
            cells = []
            lost = []
            for path in ("htb", "drr_plusplus", "drr_plus"):
                flow = row[path]["flows"].get(source) if path in row else None
                if flow is None:
                    cells.append("–")
                    lost.append("–")
                    continue
                cells.append(f"{fmt(flow['mean_ms'])} / {fmt(flow['p99_ms'])}")
                lost.append(str(flow["sent"] - flow["received"]))
            lines.append(
                f"| {row['lambda_be']:g} | {names.get(int(source), source)} | "
                + f"{fmt(row['htb']['flows'][source]['transmission_ms'])} | "
                + " | ".join(cells)
                + f" | {' / '.join(lost)} |"
            )
    pacing = "; ".join(
        f"λ_BE {row['lambda_be']:g}: "
        + ", ".join(
            f"{kind} {row[kind]['pacing_error_p50_ms']:.2f}" for kind in ("drr_plusplus", "drr_plus") if kind in row
        )
        for row in runs
    )
    lines += ["", f"Gateway pacing error, median (ms): {pacing}.", "", END]
    replace_section(OUT, BEGIN, END, "\n".join(lines) + "\n", "bench/gateway_thesis_htb.py")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
