"""Draws ns per packet against flows for every discipline (log-log) and writes the section
"Cost against the number of flows" of docs/performance.md (called by bench/flow_scaling.sh).

usage: flow_scaling.py CRITERION_DIR BASELINE PERFORMANCE_MD IMG_DIR LOAD_BEFORE LOAD_AFTER COMMIT
"""

import datetime
import os
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from criterion_estimates import load  # noqa: E402
from doc_section import replace_section  # noqa: E402

BEGIN, END = "<!-- flow-scaling:begin -->", "<!-- flow-scaling:end -->"


def main(argv):
    criterion_dir, baseline, doc_path, img_dir, load_before, load_after, commit = argv[1:8]
    estimates = load(criterion_dir, baseline)
    if not estimates:
        sys.exit("flow_scaling.py: no criterion estimates for this baseline")
    disciplines = sorted({d for d, _ in estimates})
    counts = sorted({f for _, f in estimates})
    img = pathlib.Path(img_dir)
    img.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(9, 6), dpi=110)
    markers = "os^vD<>phX*"
    for k, discipline in enumerate(disciplines):
        points = sorted((f, estimates[(discipline, f)][0]) for f in counts if (discipline, f) in estimates)
        ax.plot(
            [f for f, _ in points],
            [ns for _, ns in points],
            marker=markers[k % len(markers)],
            linestyle="-" if k < 10 else "--",
            label=discipline,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("backlogged flows (4 packets each)")
    ax.set_ylabel("ns per packet (enqueue + dequeue), criterion median")
    ax.set_title("schedlab core: cost per packet against the number of flows")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    for suffix in ("svg", "png"):
        fig.savefig(img / f"flow_scaling.{suffix}", metadata={"Date": None} if suffix == "svg" else None)
    plt.close(fig)

    header = "| discipline | " + " | ".join(f"{f:,}" for f in counts) + " |"
    rule = "|---|" + "---:|" * len(counts)
    rows = []
    for discipline in disciplines:
        cells = [f"{estimates[(discipline, f)][0]:.0f}" if (discipline, f) in estimates else "–" for f in counts]
        rows.append(f"| `{discipline}` | " + " | ".join(cells) + " |")
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    busiest = max(float(load_before.split()[0]), float(load_after.split()[0]))
    warning = (
        f" **The load average ({busiest:.1f}) was above the {os.cpu_count()} cores: other jobs "
        "shared the CPUs and their caches, so these figures are dominated by them (lines cross "
        "and bend for no reason in the code); rerun on a quiet machine.**"
        if busiest > (os.cpu_count() or 1)
        else ""
    )
    block = "\n".join(
        [
            BEGIN,
            "## Cost against the number of flows",
            "",
            "Written by `bench/flow_scaling.sh` (rerun it; do not edit by hand): the core bench of "
            "every discipline (enqueue + dequeue in steady state, 4 packets per backlogged flow, "
            f"sizes 64–1,500 B) at {', '.join(f'{f:,}' for f in counts)} flows. Measured {when} on "
            f"{os.cpu_count()} CPUs, commit `{commit}`; load average before / after: {load_before} / "
            f"{load_after} (a shared machine: compare lines with each other, not with another run). "
            "`dwcs_list` scans every stream per packet and stops at 16,384 flows." + warning,
            "",
            "![ns per packet against flows, log-log](img/flow_scaling.svg)",
            "",
            "ns per packet (criterion median):",
            "",
            header,
            rule,
            *rows,
            END,
            "",
        ]
    )
    doc = pathlib.Path(doc_path)
    replace_section(doc, BEGIN, END, block, "flow_scaling.py")
    print(f"flow_scaling.py: wrote {doc} and {img}/flow_scaling.svg, .png", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
