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
//! | the engine's source clock (one replication's at a time): 24–48 bytes per flow below 32 flows, 48–65 from there on | [`source_clock_bytes`] |
//! | each tag calendar of a scheduler: one of WFQ, SCFQ, STFQ or Virtual Clock, two of WF2Q+ ([`schedlab_core::tag_calendar::DISCIPLINES`]; its bucket array is allocated on the scheduler's first packet, at a link or a hierarchy node; one replication's schedulers at a time) | [`BUCKET_ARRAY_BYTES`] |
//! | each node table of those calendars: one per scheduler (WF2Q+'s two calendars share one) | [`NODE_BYTES`] per flow (per class at a node with classes) |
//!
//! `summary.json` and the CSV tables are written a row at a time and cost nothing per flow.
//! Not estimated: packets waiting in queues (bounded by the links' buffers; a link without a
//! buffer limit can hold any number) and the number of bins of a run whose length is a packet
//! count (counted as one bin).

use schedlab_core::tag_calendar::{BUCKET_ARRAY_BYTES, NODE_BYTES};
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

/// Bytes of the engine's source clock for `flows` sources (`event_queue::SourceClock`: a
/// tournament tree below 32 sources, 24–48 bytes a source, a calendar of days from there on,
/// 48–65 bytes a source): one replication's at a time. The constants above were measured with
/// the tree inside [`FLOW_REPLICATION_BYTES`]; since session 9 the clock is counted here on
/// its own.
pub fn source_clock_bytes(flows: u64) -> u64 {
    let flows = usize::try_from(flows)
        .unwrap_or(usize::MAX / 64)
        .min(usize::MAX / 64);
    crate::event_queue::SourceClock::bytes_for(flows) as u64
}

/// Bytes of the tag calendars of the scheduler table `table` (a link's `scheduler`, or a
/// class of a hierarchy node), whose flows are `flows` ids: each calendar's bucket array and
/// each node table's node per id (the scenario's flows at a leaf, the classes at a node with
/// `classes`).
fn tag_calendar_bytes(table: &toml::Table, flows: u64) -> u64 {
    let classes = table.get("classes").and_then(toml::Value::as_array);
    let kind = table.get("kind").and_then(toml::Value::as_str);
    let calendars = kind.map_or(0, schedlab_core::tag_calendar::calendars_of);
    let node_tables = kind.map_or(0, schedlab_core::tag_calendar::node_tables_of);
    let ids = classes.map_or(flows, |classes| classes.len() as u64);
    let own = calendars
        .saturating_mul(BUCKET_ARRAY_BYTES as u64)
        .saturating_add(node_tables.saturating_mul(ids.saturating_mul(NODE_BYTES as u64)));
    let nested = classes.map_or(0, |classes| {
        classes
            .iter()
            .filter_map(toml::Value::as_table)
            .map(|class| tag_calendar_bytes(class, flows))
            .fold(0, u64::saturating_add)
    });
    own.saturating_add(nested)
}

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
    // Replications run one after the other: one set of schedulers at a time.
    let calendars = scenario
        .links
        .iter()
        .map(|link| tag_calendar_bytes(&link.scheduler, flows))
        .fold(0, u64::saturating_add);
    MemoryEstimate {
        fixed_bytes: (PROGRAM_BYTES + flows.saturating_mul(FLOW_BYTES + FLOW_READ_BYTES))
            .saturating_add(calendars)
            .saturating_add(source_clock_bytes(flows)),
        per_replication_bytes: per_replication,
        replications: u64::from(run.replications),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(flows: usize, replications: u32, duration: &str, bin: &str) -> Scenario {
        scenario_with(flows, replications, duration, bin, "")
    }

    /// A scenario whose link has the scheduler `scheduler` (TOML after `[link.scheduler]`'s
    /// place in the link table; empty for the default).
    fn scenario_with(
        flows: usize,
        replications: u32,
        duration: &str,
        bin: &str,
        scheduler: &str,
    ) -> Scenario {
        let text = format!(
            "[run]\nduration = \"{duration}\"\nbin = \"{bin}\"\nreplications = {replications}\n\
             [[link]]\nname = \"l\"\nrate = \"1Gbit\"\n{scheduler}\n\
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
            PROGRAM_BYTES + 1_000 * (FLOW_BYTES + FLOW_READ_BYTES) + source_clock_bytes(1_000)
        );
        assert_eq!(
            e.per_replication_bytes,
            1_000 * (FLOW_REPLICATION_BYTES + 10 * BIN_BYTES) + 10 * LINK_BIN_BYTES
        );
        assert_eq!(e.total_bytes(), e.fixed_bytes + 3 * e.per_replication_bytes);
        assert_eq!(e.bytes_for(1), e.fixed_bytes + e.per_replication_bytes);
    }

    #[test]
    fn each_tag_calendar_counts_its_bucket_array_and_nodes() {
        let plain = estimate(&scenario(100, 2, "10s", "1s"));
        let per_calendar = (BUCKET_ARRAY_BYTES + 100 * NODE_BYTES) as u64;
        for (kind, calendars, node_tables) in schedlab_core::tag_calendar::DISCIPLINES {
            let e = estimate(&scenario_with(
                100,
                2,
                "10s",
                "1s",
                &format!("scheduler = {{ kind = \"{kind}\" }}"),
            ));
            assert_eq!(
                e.fixed_bytes,
                plain.fixed_bytes
                    + calendars * BUCKET_ARRAY_BYTES as u64
                    + node_tables * 100 * NODE_BYTES as u64,
                "{kind}"
            );
            assert_eq!(e.per_replication_bytes, plain.per_replication_bytes, "{kind}");
        }
        // A hierarchy: an STFQ node over two classes (a calendar with two ids), one of them
        // served by Virtual Clock (a calendar for the flows), the other by DRR (none).
        let tree = "scheduler = { kind = \"stfq\", classes = [ { kind = \"virtual_clock\", \
                    packet_classes = [0] }, { kind = \"drr\", packet_classes = [1] } ] }";
        let e = estimate(&scenario_with(100, 2, "10s", "1s", tree));
        let node = (BUCKET_ARRAY_BYTES + 2 * NODE_BYTES) as u64;
        assert_eq!(e.fixed_bytes, plain.fixed_bytes + node + per_calendar);
    }

    /// The estimate of one calendar is what a calendar with that many ids holds (its bucket
    /// array, about 132 KiB, and one node per id).
    #[test]
    fn the_tag_calendar_estimate_is_its_real_size() {
        use schedlab_core::tag_calendar::TagCalendar;
        use schedlab_core::virtual_time::VirtualTime;
        let flows = 1_000u32;
        let mut calendar = TagCalendar::new();
        calendar.reserve_ids(flows as usize);
        for id in 0..flows {
            calendar.push_with(id, VirtualTime::from_integer(u64::from(id)), u64::from(id), 0);
        }
        let table: toml::Table = "kind = \"scfq\"".parse().unwrap();
        assert_eq!(
            tag_calendar_bytes(&table, u64::from(flows)),
            calendar.allocated_bytes() as u64
        );
        assert!((132 * 1024..=133 * 1024).contains(&BUCKET_ARRAY_BYTES));
    }

    /// The estimate of the source clock is what a clock of that many sources holds: below
    /// 32 sources a tree (24–48 bytes a source), from there on a calendar (a 32-byte node
    /// and two to four 8-byte days a source, a bit a day and a sentinel node).
    #[test]
    fn the_source_clock_estimate_is_its_real_size() {
        for sources in [1usize, 10, 31, 32, 33, 1_000, 1_025, 100_000] {
            let clock = crate::event_queue::SourceClock::new(sources);
            assert_eq!(source_clock_bytes(sources as u64), clock.allocated_bytes() as u64);
            let per_source = clock.allocated_bytes() as f64 / sources as f64;
            let range = if sources < 32 { 24.0..=48.0 } else { 48.0..=65.0 };
            assert!(range.contains(&per_source), "{sources}: {per_source}");
        }
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
