//! # schedlab-sim
//!
//! Trace replay over one link ([`mod@replay`]) and a deterministic discrete-event simulator of networks of links, each driven by a
//! `schedlab_core` scheduler, fed by the traffic models of [`traffic`] and described by a TOML
//! scenario ([`scenario`]). It measures per-flow and per-class delay (mean, percentiles,
//! maximum), jitter, loss and throughput, link utilisation and queue length, Jain's fairness
//! index and each discipline's own counters, over independent replications with 95%
//! confidence intervals ([`results`]).
//!
//! ```
//! use std::path::Path;
//!
//! let scenario = r#"
//! [run]
//! duration = "10s"
//! seed = 7
//!
//! [[link]]
//! name = "bottleneck"
//! rate = "1Mbit"
//! scheduler = { kind = "drr", quantum = 1500 }
//!
//! [[source]]
//! flow = 0
//! path = ["bottleneck"]
//! arrivals = { model = "poisson", rate_pps = 100 }
//! size = { dist = "constant", size = 500 }
//! "#;
//! let results = schedlab_sim::run_scenario_text(scenario, Path::new(".")).unwrap();
//! let flows = results.flow_summaries();
//! assert_eq!(flows[0]["flow"], 0);
//! assert!(flows[0]["received"].as_u64().unwrap() > 900);
//! ```
//!
//! Determinism: the same scenario and seed give the same results, bit for bit (wall-clock
//! times are kept apart, in [`SimResults::timing`]); every (replication, source) pair draws from
//! its own random stream, so adding a source does not change the others' packets.
#![deny(missing_docs)]

use std::path::Path;
use std::time::Instant;

pub mod catalogue;
pub mod engine;
pub mod error;
mod event_queue;
pub mod lateness;
pub mod memory;
pub mod packet_log;
mod prefetch;
pub mod replay;
pub mod results;
pub mod scenario;
mod source_set;
pub mod stats;
pub mod tcp;
pub mod trace;
pub mod trace_source;
pub mod traffic;
pub mod watch;

pub use error::InputError;
pub use replay::{replay, replay_files, replay_files_watched, Replay, ReplayConfig};
pub use results::{ReplicationResult, SimResults};
pub use scenario::{Scenario, ScenarioError};
pub use trace::{Trace, TraceError};
pub use watch::Progress;

/// Parses and validates a scenario (every link's scheduler is built once with the flow
/// parameters of the flows crossing it). Relative file names are resolved against `base_dir`.
pub fn validate_scenario_text(toml_text: &str, base_dir: &Path) -> Result<Scenario, ScenarioError> {
    scenario::parse_scenario(toml_text, base_dir)
}

/// Runs every replication of a parsed scenario, one after the other.
pub fn run_scenario(scenario: &Scenario) -> Result<SimResults, ScenarioError> {
    run_replications(scenario, 0..scenario.run.replications, &mut |_| true)
}

/// Like [`run_scenario`], calling `progress(done, total)` before the first replication and
/// after each one (for progress bars).
pub fn run_scenario_with_progress(
    scenario: &Scenario,
    progress: &mut dyn FnMut(u32, u32),
) -> Result<SimResults, ScenarioError> {
    run_replications(scenario, 0..scenario.run.replications, &mut |p: Progress| {
        if p.done.fract() == 0.0 {
            progress(p.done as u32, p.total as u32);
        }
        true
    })
}

/// Runs `replication` (0-based) alone when given, else every replication, calling
/// `watch` with the replications done (a fraction within the current one) before the
/// first, after each, and every [`watch::POLL_EVERY`] events in between. When `watch`
/// returns false the run stops with [`ScenarioError::Interrupted`] and nothing is returned.
pub fn run_scenario_watched(
    scenario: &Scenario,
    replication: Option<u32>,
    watch: &mut dyn FnMut(Progress) -> bool,
) -> Result<SimResults, ScenarioError> {
    match replication {
        Some(r) => {
            check_replication(scenario, r)?;
            run_replications(scenario, r..r + 1, watch)
        }
        None => run_replications(scenario, 0..scenario.run.replications, watch),
    }
}

/// Runs only replication `replication` (0-based) of a scenario: the same random streams, and
/// so the same results, as that replication in a full run (for sweeps that spread
/// replications over processes).
pub fn run_scenario_replication(scenario: &Scenario, replication: u32) -> Result<SimResults, ScenarioError> {
    run_scenario_watched(scenario, Some(replication), &mut |_| true)
}

fn check_replication(scenario: &Scenario, replication: u32) -> Result<(), ScenarioError> {
    if replication >= scenario.run.replications {
        return Err(schedlab_core::ConfigError::new(
            "run.replications",
            scenario.run.replications.to_string(),
            format!("replication {replication} was asked for; replications are numbered from 0"),
        )
        .into());
    }
    Ok(())
}

fn run_replications(
    scenario: &Scenario,
    replications: std::ops::Range<u32>,
    watch: &mut dyn FnMut(Progress) -> bool,
) -> Result<SimResults, ScenarioError> {
    let total = replications.len() as u32;
    let progress = |done: f64| Progress {
        done,
        total: total as f64,
    };
    if !watch(progress(0.0)) {
        return Err(ScenarioError::Interrupted);
    }
    let started = Instant::now();
    let mut histograms: Vec<_> = scenario
        .sources
        .iter()
        .map(|_| stats::DelayHistogram::new())
        .collect();
    let mut done = Vec::new();
    for replication in replications {
        let t0 = Instant::now();
        let finished = done.len() as f64;
        let raw = engine::run_replication_watched(scenario, replication, &mut |fraction| {
            // A whole number means "between replications"; inside one, stay below the next.
            watch(progress(finished + fraction.clamp(1e-9, 0.999)))
        })?;
        done.push(results::reduce(
            scenario,
            raw,
            t0.elapsed().as_secs_f64(),
            &mut histograms,
        ));
        if !watch(progress(done.len() as f64)) {
            return Err(ScenarioError::Interrupted);
        }
    }
    Ok(SimResults {
        scenario: scenario.clone(),
        replications: done,
        wall_time_s: started.elapsed().as_secs_f64(),
        delay_histograms: histograms,
    })
}

/// Parses, validates and runs a scenario.
pub fn run_scenario_text(toml_text: &str, base_dir: &Path) -> Result<SimResults, ScenarioError> {
    run_scenario(&validate_scenario_text(toml_text, base_dir)?)
}
