"""The scenarios of West, Schwan, Poellabauer (RTAS 1999, seed 002) §5, figures 4 and 9-10,
generated through the Python Scenario API (hundreds of streams; not hand-written TOML).

The paper's setup (§5, p. 8-9): 8 traffic classes with equal numbers of streams, loss-tolerances
1/80 … 1/150 (here 1/80, 1/90, …, 1/150, one class each), consecutive deadlines of a stream 500
(figures 9b, 10b, 4) or 200 (figures 9a, 10a) time units apart, every packet served in one time
unit, "always backlogged packets in each stream", bursts of 20 packets per stream arriving
together, 5 million packets serviced, every packet ultimately serviced (no drops).

Readings where the paper is silent (also in ``experiments/dwcs/README.md``):

* one time unit = one 125-byte packet on a 1 Gbit/s link = 1 µs, so the gaps are 500 µs and
  200 µs; the first deadline is one gap after the stream's first arrival (DWCS's default
  ``deadline_offset``);
* each stream sends a burst of 20 packets at once (a 1,940-byte unit fragmented at ``mtu`` =
  125 bytes), every stream at the same instants, at a burst rate that offers 1.25 packets per
  unit in total, so that every stream stays backlogged from the start (the paper's 100 µs
  between bursts is real time on its 170 MHz host and has no meaning on the logical clock).
  The fragments of bursts released at the same instant enter in source order, one fragment of
  each source at a time, so FIFO serves the streams in turn, one packet each — the paper's
  "bursts from each stream … arriving close together", for which FIFO does not "service whole
  bursts of arrivals from one stream";
* DWCS streams are not droppable (late packets are sent late and miss again); the lateness
  of both disciplines is measured against the same per-stream deadlines (the source's
  ``lateness`` table, ``schedlab_sim::lateness``), at service start;
* the run stops generating after ``run.packets`` packets entered and then drains, so exactly
  that many are served (5,000,000; ``--quick`` uses fewer, see ``reproduce.toml``).
"""

from __future__ import annotations

from schedlab.scenario import Scenario

#: Loss-tolerance denominators of the eight classes (numerator 1).
DENOMINATORS = (80, 90, 100, 110, 120, 130, 140, 150)
#: Packets per burst and the payload that fragments into exactly that many 125-byte packets.
BURST_PACKETS = 20
PACKET_BYTES = 125
FRAGMENT_HEADER = 28
#: Total offered load, packets per service time (above 1: every stream stays backlogged).
OFFERED = 1.25
#: Packets served in each of the paper's runs ("the effects of servicing a total of 5 million
#: packets", §5); ``--quick`` sets ``run.packets`` lower (``reproduce.toml``).
PAPER_PACKETS = 5_000_000


def scenario(streams: int, gap_us: int, packets: int, disciplines=("dwcs", "fifo"), check_every=None) -> Scenario:
    """``streams`` streams (a multiple of 8) with deadlines ``gap_us`` units apart, run until
    ``packets`` have been served, swept over ``disciplines`` (the link's scheduler kind) and,
    when given, over DWCS's ``check_every`` values."""
    if streams <= 0 or streams % len(DENOMINATORS):
        raise ValueError(f"streams = {streams}: must be a positive multiple of {len(DENOMINATORS)} (equal classes)")
    s = Scenario.new(f"dwcs_{streams}_streams_gap{gap_us}", packets=packets, seed=1, replications=1)
    s.data["description"] = (
        f"West et al. (RTAS 1999) §5: {streams} always-backlogged streams in 8 classes (1/80 … 1/150),"
        f" deadlines {gap_us} units apart, unit service time (125 B at 1 Gbit/s = 1 µs)"
    )
    s.data["classes"] = {f"x1_y{y}": c for c, y in enumerate(DENOMINATORS)}
    s.add_link("server", "1Gbit", {"kind": disciplines[0]})
    burst_rate = OFFERED * 1e6 / (BURST_PACKETS * streams)
    gap = f"{gap_us}us"
    for flow in range(streams):
        klass = flow % len(DENOMINATORS)
        tolerance = f"1/{DENOMINATORS[klass]}"
        s.add_source(
            flow,
            ["server"],
            {"model": "cbr", "rate_pps": burst_rate},
            {"dist": "constant", "size": BURST_PACKETS * (PACKET_BYTES - FRAGMENT_HEADER)},
            name=f"s{flow}",
            **{"class": klass},
            mtu=PACKET_BYTES,
            fragment_header=FRAGMENT_HEADER,
            params={"dwcs": {"loss_tolerance": tolerance, "deadline_gap": gap, "droppable": False}},
            lateness={"loss_tolerance": tolerance, "deadline_gap": gap},
        )
    grid = {}
    if len(disciplines) > 1:
        grid["link[0].scheduler.kind"] = list(disciplines)
    if check_every is not None:
        grid["link[0].scheduler.check_every"] = list(check_every)
    if grid:
        s.data["sweep"] = {"grid": grid}
    return s


def figure4(quick: bool) -> list[tuple[dict, Scenario]]:
    """Figures 4(a)/(b): 80 … 760 streams (the figure's range), gap 500, DWCS and FIFO
    (``--quick``: five of the stream counts)."""
    counts = range(80, 761, 80) if not quick else (80, 240, 400, 560, 720)
    return [({"streams": n}, scenario(n, 500, PAPER_PACKETS)) for n in counts]


def figure9(quick: bool) -> list[tuple[dict, Scenario]]:
    """Figures 9 and 10: DWCS checking missed deadlines every 1, 2, 4, …, 12 cycles (the
    paper's axis runs 1-12; seven of its values keep the full run near ten minutes; ``--quick``:
    1 and 12), gaps 200 and 500, for 160, 320, 560 and 840 streams."""
    counts = (160, 320, 560, 840)
    checks = (1, 2, 4, 6, 8, 10, 12) if not quick else (1, 12)
    return [
        ({"gap": gap, "streams": n}, scenario(n, gap, PAPER_PACKETS, ("dwcs",), check_every=checks))
        for gap in (200, 500)
        for n in counts
    ]
