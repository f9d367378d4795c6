"""The runs of Yokota, Kato, Tominaga (seed 003) §5.2, figure 17 and table 1: class 1's
jitter with the competing classes and with class 1 alone, whose difference is the paper's
"jitter increase" (the claims subtract them with a selection's ``minus``).

Both functions start from ``experiments/yokota2002/fig17_tab1_jitter.toml`` (the router and the traffic, read there)
and return ``(values, scenario)`` pairs for ``schedlab reproduce``; ``values`` become columns of
the result tables:

* ``traffic = "competing"``: the file as it is, classes 2-4 and best effort on the router;
* ``traffic = "alone"``: the same router and class 1's same packets, with classes 2-4 and best
  effort sent over another link (``elsewhere``), so that "only the target traffic is injected"
  while every sweep key of the file still applies;
* ``scheduler = "drr"`` (table 1): DRR instead of EWRR among the four priority classes, with
  quantum L = 512 bytes for every class (the paper's W_i = L).

Class 1 alone sees a constant delay (its packets arrive at the line rate, one every
transmission time), so its delay variation alone is 0 and the jitter increase is the run with
the competing classes' ``ipdv_mean_s``: the mean |D_k − D_{k−1}| over class 1's consecutive
packets, which, since both runs send the same packets at the same times, is the mean absolute
change of the gaps between consecutive arrivals at the receiver (the paper's jitter).
"""

from __future__ import annotations

from pathlib import Path

from schedlab.scenario import Scenario

SCENARIO = Path(__file__).resolve().parents[1] / "yokota2002" / "fig17_tab1_jitter.toml"
#: Packet length L (bytes) of every class.
PACKET_BYTES = 512
#: The EWRR node among the priority classes and its four FIFO classes.
NODE = "link[0].scheduler.classes[0]"


def _alone(scenario: Scenario) -> Scenario:
    """Class 1 alone on the router: every other source moves to a separate FIFO link."""
    scenario = scenario.copy()
    scenario.add_link("elsewhere", "10Mbit", {"kind": "fifo"})
    for index in range(1, len(scenario.data["source"])):
        scenario = scenario.set(f"source[{index}].path", ["elsewhere"])
    return scenario


def _both(scenario: Scenario, values: dict) -> list[tuple[dict, Scenario]]:
    return [({**values, "traffic": "competing"}, scenario), ({**values, "traffic": "alone"}, _alone(scenario))]


def figure17(quick: bool) -> list[tuple[dict, Scenario]]:
    """Figure 17: W_1^max / L = 1 … 100 for burst types 1-3 (the file's sweep), with and
    without the competing classes (``--quick`` shortens the run through ``reproduce.toml``)."""
    return _both(Scenario.from_toml(SCENARIO), {"scheduler": "ewrr"})


def table1(quick: bool) -> list[tuple[dict, Scenario]]:
    """Table 1: DRR and EWRR with W_1^max = L (W^max/L = 1) for burst types 1-3, with and
    without the competing classes."""
    base = Scenario.from_toml(SCENARIO)
    sweep = dict(base.data["sweep"])
    sweep.pop("grid")
    sweep["x"] = "source[0].arrivals.on_packets"
    sweep.pop("series")
    base.data["sweep"] = sweep
    ewrr = base.set(f"{NODE}.classes[0].params.max_weight_bytes", PACKET_BYTES)
    drr = base.set(f"{NODE}.kind", "drr")
    for index in range(4):
        drr = drr.set(f"{NODE}.classes[{index}].params", {"quantum": PACKET_BYTES})
    return _both(drr, {"scheduler": "drr"}) + _both(ewrr, {"scheduler": "ewrr"})
