"""The benches' writers of docs/performance.md: a section is replaced in place, the text around it
kept, and the TCP bench marks a wall-time rate that its CPU-time rate shows to be noise."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def bench_modules():
    sys.path.insert(0, str(BENCH))
    sys.path.insert(0, str(BENCH / "peers" / "ns2"))
    try:
        yield importlib.import_module("doc_section"), importlib.import_module("tcp_vs_ns2")
    finally:
        sys.path.remove(str(BENCH))
        sys.path.remove(str(BENCH / "peers" / "ns2"))


def test_a_section_is_replaced_in_place_with_one_blank_line_after_it(bench_modules, tmp_path):
    doc_section, _ = bench_modules
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\nintro\n\n<!-- x:begin -->\nold\n<!-- x:end -->\n\n\n## After\n")
    doc_section.replace_section(
        doc, "<!-- x:begin -->", "<!-- x:end -->", "<!-- x:begin -->\nnew\n<!-- x:end -->\n", "t"
    )
    assert doc.read_text() == "# Performance\n\nintro\n\n<!-- x:begin -->\nnew\n<!-- x:end -->\n\n## After\n"
    # A block without its own newline, at the end of the file.
    doc.write_text("# P\n\n<!-- x:begin -->\nold\n<!-- x:end -->\n")
    doc_section.replace_section(doc, "<!-- x:begin -->", "<!-- x:end -->", "<!-- x:begin -->\nnew\n<!-- x:end -->", "t")
    assert doc.read_text() == "# P\n\n<!-- x:begin -->\nnew\n<!-- x:end -->\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["performance.md"]


def test_a_missing_section_is_appended_and_a_lone_marker_is_refused(bench_modules, tmp_path):
    doc_section, _ = bench_modules
    doc = tmp_path / "performance.md"
    doc.write_text("# P\n\ntext\n")
    doc_section.replace_section(doc, "<!-- y:begin -->", "<!-- y:end -->", "<!-- y:begin -->\nz\n<!-- y:end -->\n", "t")
    assert doc.read_text() == "# P\n\ntext\n\n<!-- y:begin -->\nz\n<!-- y:end -->\n"
    doc.write_text("# P\n\n<!-- y:begin -->\nno end\n")
    with pytest.raises(SystemExit, match="only one of the markers"):
        doc_section.replace_section(doc, "<!-- y:begin -->", "<!-- y:end -->", "<!-- y:begin -->\n<!-- y:end -->", "t")
    assert doc.read_text() == "# P\n\n<!-- y:begin -->\nno end\n"


def row(simulator: str, flows: int, wall_rate: float, cpu_rate: float) -> dict:
    return {
        "simulator": simulator,
        "flows": flows,
        "packets": 1000,
        "packets_per_s": wall_rate,
        "packets_per_cpu_s": cpu_rate,
    }


def test_the_tcp_table_marks_a_wall_rate_above_the_cpu_rate(bench_modules):
    _, tcp_vs_ns2 = bench_modules
    args = argparse.Namespace(variant="newreno", rate=100.0, duration=120.0)
    rows = [row("ns2", 4, 900.0, 1000.0), row("schedlab", 4, 1800.0, 2000.0)]
    text = tcp_vs_ns2.section(rows, args, "0.50 0.40 0.30", "0.60 0.40 0.30")
    assert "| 4 | 1,000 / 1,000 | 900 | 1,800 | 1,000 | 2,000 | 2.0× |" in text
    assert "¹" not in text and "above the" not in text
    rows = [row("ns2", 256, 3_560_875.0, 693_628.0), row("schedlab", 256, 1_075_698.0, 1_100_227.0)]
    text = tcp_vs_ns2.section(rows, args, "5.52 2.18 1.55", "4.94 2.38 1.64")
    assert "| 256 | 1,000 / 1,000 | 3,560,875 ¹ | 1,075,698 | 693,628 | 1,100,227 | 1.6× |" in text
    assert "¹ Above the CPU-time rate" in text
    # The load warning depends on this machine's cores.
    assert ("The load average (5.5) was above the" in text) == ((os.cpu_count() or 1) < 5.52)
