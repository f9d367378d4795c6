//! The lateness measure (`[[source]] lateness = { … }`, `schedlab_sim::lateness`) against
//! DWCS's own deadline bookkeeping, and applied to FIFO, which has no deadlines of its own.

use std::path::Path;

use schedlab_sim::results::{cell, Cell};
use schedlab_sim::{run_scenario_text, SimResults};

/// Twelve overloaded streams (demand 1.2 packets per unit), one unit = one 125-byte packet at
/// 1 Gbit/s = 1 µs; deadlines 10 units apart; non-droppable, so every packet is served.
fn scenario(kind: &str, check_every: u32) -> String {
    let mut text = format!(
        "[run]\nduration = \"3ms\"\n\n[[link]]\nname = \"server\"\nrate = \"1Gbit\"\n\
         scheduler = {{ kind = \"{kind}\"{} }}\n",
        if kind == "dwcs" {
            format!(", check_every = {check_every}")
        } else {
            String::new()
        }
    );
    for flow in 0..12u32 {
        let tolerance = format!("{}/{}", 1 + flow % 3, 4 + flow % 5);
        text += &format!(
            "\n[[source]]\nflow = {flow}\nclass = {}\npath = [\"server\"]\n\
             arrivals = {{ model = \"cbr\", rate_pps = 100000 }}\nsize = {{ dist = \"constant\", size = 125 }}\n\
             start = \"{}ns\"\n\
             params = {{ dwcs = {{ loss_tolerance = \"{tolerance}\", deadline_gap = \"10us\", droppable = false }} }}\n\
             lateness = {{ loss_tolerance = \"{tolerance}\", deadline_gap = \"10us\" }}\n",
            flow % 4,
            flow * 300,
        );
    }
    text
}

fn run(text: &str) -> SimResults {
    run_scenario_text(text, Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
}

fn column(rows: &[Vec<(&'static str, Cell)>], name: &str) -> Vec<f64> {
    rows.iter()
        .map(|row| match cell(row, name) {
            Some(Cell::Real(Some(v))) => *v,
            other => panic!("{name}: {other:?}"),
        })
        .collect()
}

fn link_counter(results: &SimResults, name: &str) -> u64 {
    results.replications[0].discipline_counters[0]
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
        .unwrap()
}

#[test]
fn deadlines_missed_equal_dwcs_own_count_for_non_droppable_streams() {
    // With check_every > 1 DWCS sends late heads it has not noticed without moving their
    // stream's deadlines on, so its own count follows another chain (the paper's approximation);
    // the measure stays the exact one.
    let check_every = 1;
    let results = run(&scenario("dwcs", check_every));
    let flows = &results.replications[0].flows;
    let missed: f64 = column(flows, "deadlines_missed").iter().sum();
    let late: f64 = column(flows, "late_packets").iter().sum();
    assert!(missed > 100.0, "an overloaded link misses deadlines: {missed}");
    assert_eq!(
        missed as u64,
        link_counter(&results, "deadlines_missed"),
        "check_every {check_every}"
    );
    assert_eq!(
        late as u64,
        link_counter(&results, "late_packets"),
        "check_every {check_every}"
    );
    // Per stream, the measure equals DWCS's own counters (the discipline_* columns), sliding
    // and fixed windows included.
    for name in [
        "deadlines_missed",
        "late_packets",
        "loss_tolerance_violations",
        "fixed_window_violations",
        "longest_late_run",
    ] {
        assert_eq!(
            column(flows, name),
            column(flows, &format!("discipline_{name}")),
            "{name}"
        );
    }
    // Every packet is served (non-droppable, drained) and metered.
    let received: u64 = flows
        .iter()
        .map(|r| match cell(r, "received") {
            Some(Cell::Count(n)) => *n,
            _ => 0,
        })
        .sum();
    assert_eq!(received, 12 * 300);
    // Class rows add up their flows.
    let classes = &results.replications[0].classes;
    let by_class: f64 = column(classes, "deadlines_missed").iter().sum();
    assert_eq!(by_class, missed);
}

#[test]
fn fifo_is_measured_against_the_same_deadlines() {
    let results = run(&scenario("fifo", 1));
    let flows = &results.replications[0].flows;
    let missed = column(flows, "deadlines_missed");
    let violations = column(flows, "loss_tolerance_violations");
    let late = column(flows, "late_packets");
    // FIFO at 1.2 packets per unit: every flow falls behind, each late packet misses at least
    // once, and no flow misses more deadlines than packets × (lateness in gaps) allows.
    for i in 0..12 {
        assert!(
            late[i] > 0.0 && missed[i] >= late[i],
            "flow {i}: {} {}",
            late[i],
            missed[i]
        );
        assert!(violations[i] <= 300.0);
    }
    // A flow without a lateness table leaves the columns empty.
    let text = scenario("fifo", 1).replacen(
        "lateness = { loss_tolerance = \"1/4\", deadline_gap = \"10us\" }\n",
        "",
        1,
    );
    let results = run(&text);
    let row = &results.replications[0].flows[0];
    assert_eq!(cell(row, "deadlines_missed"), Some(&Cell::Real(None)));
}

#[test]
fn a_bad_lateness_table_names_the_key() {
    let text = scenario("fifo", 1).replacen("deadline_gap = \"10us\" }\n", "deadline_gap = \"-1us\" }\n", 1);
    let error = schedlab_sim::validate_scenario_text(&text, Path::new("."))
        .unwrap_err()
        .to_string();
    assert!(error.contains("source[0].lateness.deadline_gap"), "{error}");
}
