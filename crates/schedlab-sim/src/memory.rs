//! The memory a run will need, estimated before it starts (`schedlab run` and `sweep` refuse a
//! run that will not fit, with this estimate; `docs/performance.md`, "Many flows").
//!
//! The model is linear in what a scenario declares; its constants were measured (peak RSS of
//! `schedlab run`, `/usr/bin/time -v`, `bench/many_flows.sh`) with 20,000 to 1,000,000 light
//! flows and 1 to 3 replications, and the estimate is within 0.89–1.07 of those peaks (the
//! per-flow cost grows a little with the number of flows, as vectors double and the allocator
//! fragments); `tests/python/test_scale.py` checks 0.5–2× on a moderate run:
//!
//! | part | bytes |
//! |---|---|
//! | the program (Python, its libraries, this extension) | [`PROGRAM_BYTES`] |
//! | the scenario: each declared flow (its source, its entry in each link's flow table) | [`FLOW_BYTES`] per flow |
//! | each replication's per-flow statistics and result row (kept for the reduction) | [`FLOW_REPLICATION_BYTES`] per flow and replication |
//! | each flow's time series | [`BIN_BYTES`] per flow, bin and replication |
//! | each link's time series | [`LINK_BIN_BYTES`] per link, bin and replication |
//! | reading the summary back (terminal table, report) | [`FLOW_READ_BYTES`] per flow |
//!
//! `summary.json` and the CSV tables are written a row at a time and cost nothing per flow.
//! Not estimated: packets waiting in queues (bounded by the links' buffers; a link without a
//! buffer limit can hold any number) and the number of bins of a run whose length is a packet
//! count (counted as one bin).

use serde_json::{json, Value};

use crate::scenario::{RunLength, Scenario};

/// The program itself: the Python interpreter with its libraries and the Rust extension.
pub const PROGRAM_BYTES: u64 = 160_000_000;
/// Each declared flow: its source configuration and its entries in the links' flow tables.
pub const FLOW_BYTES: u64 = 1_500;
/// Each flow in each replication: its accumulator, delay histogram and result row.
pub const FLOW_REPLICATION_BYTES: u64 = 1_550;
/// Each flow, time bin and replication: received packets and bytes.
pub const BIN_BYTES: u64 = 16;
/// Each link, time bin and replication: its time-series row.
pub const LINK_BIN_BYTES: u64 = 400;
/// Each flow, when its summary row is read back (a few columns) for the terminal or report.
pub const FLOW_READ_BYTES: u64 = 300;

/// The estimate of one run, by part (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryEstimate {
    /// Bytes that do not depend on the number of replications (the program, the scenario,
    /// reading back).
    pub fixed_bytes: u64,
    /// Bytes per replication run.
    pub per_replication_bytes: u64,
    /// Replications of a full run.
    pub replications: u64,
}

impl MemoryEstimate {
    /// Peak bytes of a run of `replications` replications (saturating).
    pub fn bytes_for(&self, replications: u64) -> u64 {
        self.fixed_bytes
            .saturating_add(self.per_replication_bytes.saturating_mul(replications))
    }

    /// Peak bytes of the full run.
    pub fn total_bytes(&self) -> u64 {
        self.bytes_for(self.replications)
    }

    /// As JSON: `{"total_bytes", "fixed_bytes", "per_replication_bytes", "replications"}`.
    pub fn to_json(&self) -> Value {
        json!({
            "total_bytes": self.total_bytes(),
            "fixed_bytes": self.fixed_bytes,
            "per_replication_bytes": self.per_replication_bytes,
            "replications": self.replications,
        })
    }
}

/// The estimate for `scenario` (see the module documentation).
pub fn estimate(scenario: &Scenario) -> MemoryEstimate {
    let flows = scenario.sources.len() as u64;
    let links = scenario.links.len() as u64;
    let run = &scenario.run;
    let bins = match run.length {
        RunLength::Duration(duration) if run.bin > 0 => duration.div_ceil(run.bin).max(1),
        _ => 1,
    };
    let per_replication = flows
        .saturating_mul(FLOW_REPLICATION_BYTES.saturating_add(bins.saturating_mul(BIN_BYTES)))
        .saturating_add(links.saturating_mul(bins).saturating_mul(LINK_BIN_BYTES));
    MemoryEstimate {
        fixed_bytes: PROGRAM_BYTES + flows.saturating_mul(FLOW_BYTES + FLOW_READ_BYTES),
        per_replication_bytes: per_replication,
        replications: u64::from(run.replications),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(flows: usize, replications: u32, duration: &str, bin: &str) -> Scenario {
        let text = format!(
            "[run]\nduration = \"{duration}\"\nbin = \"{bin}\"\nreplications = {replications}\n\
             [[link]]\nname = \"l\"\nrate = \"1Gbit\"\n\
             [[source]]\ncount = {flows}\npath = [\"l\"]\narrivals = {{ model = \"poisson\", rate_pps = 1 }}\n\
             size = {{ dist = \"constant\", size = 500 }}\n"
        );
        crate::validate_scenario_text(&text, std::path::Path::new(".")).unwrap()
    }

    #[test]
    fn the_estimate_adds_its_parts() {
        let e = estimate(&scenario(1_000, 3, "10s", "1s"));
        assert_eq!(
            e.fixed_bytes,
            PROGRAM_BYTES + 1_000 * (FLOW_BYTES + FLOW_READ_BYTES)
        );
        assert_eq!(
            e.per_replication_bytes,
            1_000 * (FLOW_REPLICATION_BYTES + 10 * BIN_BYTES) + 10 * LINK_BIN_BYTES
        );
        assert_eq!(e.total_bytes(), e.fixed_bytes + 3 * e.per_replication_bytes);
        assert_eq!(e.bytes_for(1), e.fixed_bytes + e.per_replication_bytes);
    }

    #[test]
    fn a_partial_last_bin_counts_and_huge_runs_saturate() {
        let e = estimate(&scenario(10, 1, "2500ms", "1s"));
        assert_eq!(
            e.per_replication_bytes,
            10 * (FLOW_REPLICATION_BYTES + 3 * BIN_BYTES) + 3 * LINK_BIN_BYTES
        );
        let huge = MemoryEstimate {
            fixed_bytes: 1,
            per_replication_bytes: u64::MAX / 2,
            replications: 4,
        };
        assert_eq!(huge.total_bytes(), u64::MAX);
    }
}
