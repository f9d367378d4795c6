//! Watching a long run: progress reports and cancellation through one callback.
//!
//! The simulator ([`crate::run_scenario_watched`]) and the replay tool
//! ([`crate::replay::replay_files_watched`]) call a watcher `FnMut(Progress) -> bool` before they
//! start, at the end of each unit of work, and every [`POLL_EVERY`] events or packets in
//! between; when it returns false they stop within those events, return
//! `Interrupted` and write nothing that looks complete. The check in the hot loop is one
//! modulo and compare per event, so a watcher that always returns true costs nothing
//! measurable; what the watcher does (read a flag set by a signal handler, draw a progress
//! bar) is up to the caller and is rate-limited by it.

/// Events (simulator) or packets (replay) between two calls of the watcher: at tens of
/// millions of events per second, a few hundred calls per second, so a stop request is
/// honoured within milliseconds.
pub const POLL_EVERY: u64 = 1 << 14;

/// How far a run has got, in its own units: replications for the simulator (fractional
/// inside a replication, by simulated time or packets generated), packets for a replay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Units done so far.
    pub done: f64,
    /// Units in the whole run.
    pub total: f64,
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::ScenarioError;

    const SCENARIO: &str = r#"
[run]
duration = "20s"
seed = 1
replications = 2
[[link]]
name = "l"
rate = "10Mbit"
scheduler = { kind = "fifo" }
[[source]]
flow = 0
path = ["l"]
arrivals = { model = "poisson", rate_pps = 2000 }
size = { dist = "constant", size = 500 }
"#;

    #[test]
    fn progress_rises_through_each_replication_and_a_false_stops_the_run() {
        let scenario = crate::validate_scenario_text(SCENARIO, Path::new(".")).unwrap();
        let mut seen = Vec::new();
        crate::run_scenario_watched(&scenario, None, &mut |p| {
            seen.push(p.done);
            true
        })
        .unwrap();
        // 2 × 40,000 packets, about 3 events each: several polls inside each replication.
        assert_eq!(seen.first(), Some(&0.0));
        assert_eq!(seen.last(), Some(&2.0));
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
        assert!(seen.iter().filter(|d| d.fract() != 0.0 && **d < 1.0).count() >= 3);
        assert!(seen.iter().any(|d| *d > 1.0 && *d < 2.0));

        let mut polls = 0;
        let stopped = crate::run_scenario_watched(&scenario, None, &mut |p| {
            polls += 1;
            p.done < 0.5
        });
        assert_eq!(stopped.unwrap_err(), ScenarioError::Interrupted);
        assert!(polls > 2, "stopped at the first poll past half of replication 0");
    }
}
