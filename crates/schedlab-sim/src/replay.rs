//! `schedlab replay`: a packet trace through one scheduler on one link.
//!
//! Configuration (TOML):
//! ```toml
//! [link]
//! rate = "8Mbit"            # integer bit/s or a number with bit, kbit, Mbit, Gbit
//! [scheduler]
//! kind = "drr"              # any registry id; plus the discipline's parameters
//! quantum = 1500
//! buffer = "64KB"           # optional: buffer, buffer_packets, drop_policy
//! [flow_defaults]           # optional: flow keys of the discipline, for every flow
//! quantum = 1500
//! [[flow]]                  # optional: per-flow overrides; id = the trace's flow label
//! id = 3
//! quantum = 3000
//! [gateway]                 # optional: read by `schedlab gateway` only (rules, delay)
//! ```
//! Link semantics are those of [`schedlab_core::run_link`]. The output CSV has one row per
//! input packet, in input order: `flow,seq,size_bytes,arrival_s,start_s,departure_s,outcome,drop_reason`.

use std::io::Write;
use std::path::Path;

use schedlab_core::config::TableReader;
use schedlab_core::{
    build_scheduler, format_seconds, run_link_watched, AnyScheduler, ConfigError, FlowId, FlowTable, Outcome,
    Rate, Scheduler,
};

use crate::error::InputError;
use crate::trace::Trace;
use crate::watch::Progress;

/// A parsed replay configuration.
#[derive(Clone, Debug)]
pub struct ReplayConfig {
    /// Link rate.
    pub rate: Rate,
    /// The `[scheduler]` table, built once the trace's flows are known.
    pub scheduler: toml::Table,
    /// `[flow_defaults]`.
    pub defaults: toml::Table,
    /// `[[flow]]` tables without their `id`: (label, parameters, index in the file).
    pub flows: Vec<(u64, toml::Table, usize)>,
    /// The `[gateway]` table, if any: read by `schedlab gateway` (classification rules,
    /// propagation delay); replay ignores it so that one file configures both.
    pub gateway: Option<toml::Table>,
    text: String,
    file: String,
}

impl ReplayConfig {
    /// Parses configuration `text` read from `file` (used in messages).
    pub fn parse(text: &str, file: &str) -> Result<ReplayConfig, InputError> {
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| InputError::Syntax {
            file: file.into(),
            message: e.to_string(),
        })?;
        Self::from_table(&table)
            .map_err(|e| InputError::config(file, text, e))
            .map(|mut c| {
                c.text = text.to_string();
                c.file = file.to_string();
                c
            })
    }

    fn from_table(table: &toml::Table) -> Result<ReplayConfig, ConfigError> {
        let mut top = TableReader::new(table, "");
        let link = top
            .table("link")?
            .ok_or_else(|| ConfigError::new("link", "(missing)", "a [link] table with a rate is required"))?;
        let mut link_reader = TableReader::new(link, "link");
        let rate = link_reader.rate("rate")?.ok_or_else(|| {
            ConfigError::new("link.rate", "(missing)", "the link needs a rate, e.g. \"8Mbit\"")
        })?;
        link_reader.finish_with(&["rate"])?;
        let scheduler = top
            .table("scheduler")?
            .ok_or_else(|| {
                ConfigError::new(
                    "scheduler",
                    "(missing)",
                    "a [scheduler] table with a kind is required",
                )
            })?
            .clone();
        let defaults = top.table("flow_defaults")?.cloned().unwrap_or_default();
        let mut flows = Vec::new();
        match top.value("flow") {
            None => {}
            Some(toml::Value::Array(items)) => {
                let mut seen = std::collections::BTreeSet::new();
                for (index, item) in items.iter().enumerate() {
                    let path = format!("flow[{index}]");
                    let toml::Value::Table(t) = item else {
                        return Err(ConfigError::new(
                            path,
                            item.to_string(),
                            "must be a table ([[flow]])",
                        ));
                    };
                    let mut reader = TableReader::new(t, path.clone());
                    let id = reader.non_negative("id")?.ok_or_else(|| {
                        ConfigError::new(
                            format!("{path}.id"),
                            "(missing)",
                            "every [[flow]] needs the id (flow label) it configures",
                        )
                    })?;
                    if !seen.insert(id) {
                        return Err(reader.error("id", "configured twice"));
                    }
                    let mut params = t.clone();
                    params.remove("id");
                    flows.push((id, params, index));
                }
            }
            Some(other) => {
                return Err(ConfigError::new(
                    "flow",
                    other.to_string(),
                    "must be an array of tables ([[flow]])",
                ))
            }
        }
        let gateway = top.table("gateway")?.cloned();
        top.finish_with(&["link", "scheduler", "flow_defaults", "flow", "gateway"])?;
        let config = ReplayConfig {
            rate,
            scheduler,
            defaults,
            flows,
            gateway,
            text: String::new(),
            file: String::new(),
        };
        // Check the scheduler and every flow table now, before a trace is read: the flows get
        // stand-in ids (the trace assigns the real ones).
        build_scheduler(
            &config.scheduler,
            "scheduler",
            &config.flow_table(|_| None, 0),
            rate,
        )?;
        Ok(config)
    }

    /// The flow table: `[flow_defaults]` and each `[[flow]]` under `id_of(label)`, or under an
    /// unused id from `first_unused` on for a label the driver has not seen.
    fn flow_table(&self, id_of: impl Fn(u64) -> Option<FlowId>, first_unused: FlowId) -> FlowTable {
        let mut table = FlowTable::uniform(self.defaults.clone());
        let mut extra = first_unused;
        for (label, params, index) in &self.flows {
            let id = id_of(*label).unwrap_or_else(|| {
                extra += 1;
                extra - 1
            });
            table.set(id, params.clone(), format!("flow[{index}]"));
        }
        table
    }

    /// A configuration error located in this configuration's file (file and line).
    pub fn error(&self, error: ConfigError) -> InputError {
        InputError::config(&self.file, &self.text, error)
    }

    /// Builds the `[scheduler]` with the `[flow_defaults]` and `[[flow]]` parameters;
    /// `id_of(label)` maps a `[[flow]]` id (label) to the scheduler's flow id, or `None` for
    /// a label the driver has not seen (its parameters are still validated, under an unused
    /// id after `first_unused`).
    pub fn build_scheduler(
        &self,
        id_of: impl Fn(u64) -> Option<FlowId>,
        first_unused: FlowId,
    ) -> Result<AnyScheduler, InputError> {
        let table = self.flow_table(id_of, first_unused);
        build_scheduler(&self.scheduler, "scheduler", &table, self.rate).map_err(|e| self.error(e))
    }
}

/// What happened to one packet in a replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayRow {
    /// Flow label as in the trace.
    pub flow: u64,
    /// 0-based index of the packet within its flow.
    pub seq: u64,
    /// Size in bytes.
    pub size_bytes: u32,
    /// Arrival time, ns.
    pub arrival: u64,
    /// The outcome.
    pub outcome: Outcome,
}

/// Per-flow summary of a replay.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowSummary {
    /// Flow label.
    pub flow: u64,
    /// Packets sent.
    pub sent: u64,
    /// Packets dropped.
    pub dropped: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// Bytes sent × 8 / (last departure − first arrival of the flow), bit/s (0 if undefined).
    pub throughput_bps: f64,
    /// Mean of departure − arrival over sent packets, seconds.
    pub delay_mean_s: f64,
    /// 99th percentile (nearest rank) of the delay, seconds.
    pub delay_p99_s: f64,
    /// Largest delay, seconds.
    pub delay_max_s: f64,
}

/// The result of a replay.
#[derive(Clone, Debug)]
pub struct Replay {
    /// One row per input packet, in input order.
    pub rows: Vec<ReplayRow>,
    /// Per-flow summaries in order of first appearance in the trace.
    pub flows: Vec<FlowSummary>,
    /// The discipline's own counters.
    pub discipline_counters: Vec<(&'static str, u64)>,
    /// The discipline id.
    pub discipline: &'static str,
}

/// Replays `trace` under `config`.
pub fn replay(config: &ReplayConfig, trace: &Trace) -> Result<Replay, InputError> {
    replay_watched(config, trace, &mut |_| true)
}

/// [`replay`] that calls `watch(packets enqueued)` every [`schedlab_core::link::WATCH_EVERY`]
/// packets and stops with [`InputError::Interrupted`] when it returns false.
pub fn replay_watched(
    config: &ReplayConfig,
    trace: &Trace,
    watch: &mut dyn FnMut(usize) -> bool,
) -> Result<Replay, InputError> {
    // Flows configured but absent from the trace still get validated.
    let mut scheduler = config.build_scheduler(|label| trace.id_of(label), trace.labels.len() as FlowId)?;
    let run = run_link_watched(&mut scheduler, config.rate, &trace.packets, watch)
        .map_err(|e| InputError::Io {
            path: "trace".into(),
            message: e.to_string(),
        })?
        .ok_or(InputError::Interrupted)?;
    if run.stalled > 0 {
        return Err(InputError::Io {
            path: config.file.clone(),
            message: format!(
                "internal error: {} stalled with {} packets queued",
                scheduler.id(),
                run.stalled
            ),
        });
    }
    let mut seq = vec![0u64; trace.labels.len()];
    let mut rows = Vec::with_capacity(trace.packets.len());
    for (packet, outcome) in trace.packets.iter().zip(&run.outcomes) {
        let flow = packet.flow as usize;
        rows.push(ReplayRow {
            flow: trace.labels[flow],
            seq: seq[flow],
            size_bytes: packet.size,
            arrival: packet.arrival,
            outcome: outcome.expect("run_link reports every packet of a run that did not stall"),
        });
        seq[flow] += 1;
    }
    let flows = summarise(trace, &rows);
    Ok(Replay {
        rows,
        flows,
        discipline_counters: scheduler.discipline_counters(),
        discipline: scheduler.id(),
    })
}

fn summarise(trace: &Trace, rows: &[ReplayRow]) -> Vec<FlowSummary> {
    let mut delays: Vec<Vec<u64>> = vec![Vec::new(); trace.labels.len()];
    let mut first_arrival = vec![u64::MAX; trace.labels.len()];
    let mut last_departure = vec![0u64; trace.labels.len()];
    let mut summaries: Vec<FlowSummary> = trace
        .labels
        .iter()
        .map(|&flow| FlowSummary {
            flow,
            sent: 0,
            dropped: 0,
            bytes: 0,
            throughput_bps: 0.0,
            delay_mean_s: 0.0,
            delay_p99_s: 0.0,
            delay_max_s: 0.0,
        })
        .collect();
    for (packet, row) in trace.packets.iter().zip(rows) {
        let f = packet.flow as usize;
        first_arrival[f] = first_arrival[f].min(row.arrival);
        match row.outcome {
            Outcome::Sent { end, .. } => {
                summaries[f].sent += 1;
                summaries[f].bytes += row.size_bytes as u64;
                delays[f].push(end - row.arrival);
                last_departure[f] = last_departure[f].max(end);
            }
            Outcome::Dropped { .. } => summaries[f].dropped += 1,
        }
    }
    for (f, summary) in summaries.iter_mut().enumerate() {
        let d = &mut delays[f];
        if d.is_empty() {
            continue;
        }
        d.sort_unstable();
        let seconds = |ns: u64| ns as f64 / 1e9;
        summary.delay_mean_s = d.iter().map(|&x| x as f64).sum::<f64>() / d.len() as f64 / 1e9;
        let rank = ((0.99 * d.len() as f64).ceil() as usize).clamp(1, d.len());
        summary.delay_p99_s = seconds(d[rank - 1]);
        summary.delay_max_s = seconds(*d.last().unwrap());
        let span = last_departure[f].saturating_sub(first_arrival[f]);
        if span > 0 {
            summary.throughput_bps = summary.bytes as f64 * 8.0 / seconds(span);
        }
    }
    summaries
}

/// Writes the departure CSV to `path` atomically: a failure leaves no file that looks complete.
pub fn write_departures(rows: &[ReplayRow], path: &Path) -> Result<(), InputError> {
    write_departures_watched(rows, path, &mut |_| true)
}

/// [`write_departures`] that calls `watch(rows written)` every [`crate::watch::POLL_EVERY`]
/// rows; when it returns false the partial file is removed and the result is
/// [`InputError::Interrupted`].
pub fn write_departures_watched(
    rows: &[ReplayRow],
    path: &Path,
    watch: &mut dyn FnMut(usize) -> bool,
) -> Result<(), InputError> {
    let io = |e: std::io::Error| InputError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let partial = path.with_extension("csv.partial");
    {
        let file = std::fs::File::create(&partial).map_err(io)?;
        let mut out = std::io::BufWriter::new(file);
        writeln!(
            out,
            "flow,seq,size_bytes,arrival_s,start_s,departure_s,outcome,drop_reason"
        )
        .map_err(io)?;
        for (index, row) in rows.iter().enumerate() {
            if index > 0 && (index as u64).is_multiple_of(crate::watch::POLL_EVERY) && !watch(index) {
                drop(out);
                let _ = std::fs::remove_file(&partial);
                return Err(InputError::Interrupted);
            }
            let arrival = format_seconds(row.arrival);
            match row.outcome {
                Outcome::Sent { start, end } => writeln!(
                    out,
                    "{},{},{},{},{},{},sent,",
                    row.flow,
                    row.seq,
                    row.size_bytes,
                    arrival,
                    format_seconds(start),
                    format_seconds(end)
                ),
                Outcome::Dropped { at, reason } => writeln!(
                    out,
                    "{},{},{},{},,{},dropped,{}",
                    row.flow,
                    row.seq,
                    row.size_bytes,
                    arrival,
                    format_seconds(at),
                    reason.name()
                ),
            }
            .map_err(io)?;
        }
        out.flush().map_err(io)?;
    }
    std::fs::rename(&partial, path).map_err(io)
}

/// Reads the configuration and trace files, replays, writes the departure CSV.
pub fn replay_files(config_path: &Path, trace_path: &Path, out_path: &Path) -> Result<Replay, InputError> {
    replay_files_watched(config_path, trace_path, out_path, &mut |_| true)
}

/// [`replay_files`] under a watcher: it is called with the percentage done (reading the trace
/// is the first third, the link the second, writing the departures the last) every
/// [`crate::watch::POLL_EVERY`] packets or 1 MiB of trace; when it returns false the replay
/// stops with [`InputError::Interrupted`] and leaves no departure file.
pub fn replay_files_watched(
    config_path: &Path,
    trace_path: &Path,
    out_path: &Path,
    watch: &mut dyn FnMut(Progress) -> bool,
) -> Result<Replay, InputError> {
    let percent = |stage: f64, fraction: f64| Progress {
        done: (100.0 * (stage + fraction.clamp(0.0, 0.999)) / 3.0).min(99.9),
        total: 100.0,
    };
    if !watch(Progress {
        done: 0.0,
        total: 100.0,
    }) {
        return Err(InputError::Interrupted);
    }
    let text = std::fs::read_to_string(config_path).map_err(|e| InputError::Io {
        path: config_path.display().to_string(),
        message: e.to_string(),
    })?;
    let config = ReplayConfig::parse(&text, &config_path.display().to_string())?;
    let file = std::fs::File::open(trace_path).map_err(|e| InputError::Io {
        path: trace_path.display().to_string(),
        message: e.to_string(),
    })?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0).max(1);
    let mut reader = WatchedRead {
        inner: file,
        read: 0,
        next_poll: READ_POLL_BYTES,
        stopped: false,
        watch: &mut |read: u64| watch(percent(0.0, read as f64 / size as f64)),
    };
    let trace = Trace::from_reader(&mut reader, &trace_path.display().to_string());
    if reader.stopped {
        return Err(InputError::Interrupted);
    }
    let trace = trace?;
    let packets = trace.packets.len().max(1) as f64;
    let result = replay_watched(&config, &trace, &mut |done| {
        watch(percent(1.0, done as f64 / packets))
    })?;
    write_departures_watched(&result.rows, out_path, &mut |done| {
        watch(percent(2.0, done as f64 / packets))
    })?;
    watch(Progress {
        done: 100.0,
        total: 100.0,
    });
    Ok(result)
}

/// Bytes of trace read between two calls of the watcher.
const READ_POLL_BYTES: u64 = 1 << 20;

/// A reader that calls a watcher every [`READ_POLL_BYTES`] and fails once it says stop.
struct WatchedRead<'w, R> {
    inner: R,
    read: u64,
    next_poll: u64,
    stopped: bool,
    watch: &'w mut dyn FnMut(u64) -> bool,
}

impl<R: std::io::Read> std::io::Read for WatchedRead<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.read >= self.next_poll {
            self.next_poll = self.read + READ_POLL_BYTES;
            if !(self.watch)(self.read) {
                self.stopped = true;
            }
        }
        if self.stopped {
            return Err(std::io::Error::other("interrupted"));
        }
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = "[link]\nrate = \"8Mbit\"\n[scheduler]\nkind = \"drr\"\nquantum = 500\n[[flow]]\nid = 9\nquantum = 1000\n";

    fn trace(text: &str) -> Trace {
        Trace::from_reader(text.as_bytes(), "t.csv").unwrap()
    }

    #[test]
    fn replays_with_per_flow_quantum_by_label() {
        let config = ReplayConfig::parse(CONFIG, "c.toml").unwrap();
        // Flow 9 (quantum 1000) and flow 4 (quantum 500), all 500-byte packets at t = 0:
        // DRR sends two of flow 9's per round for each one of flow 4's.
        let t = trace("time_s,flow,size_bytes\n0,9,500\n0,9,500\n0,9,500\n0,9,500\n0,4,500\n0,4,500\n");
        let r = replay(&config, &t).unwrap();
        let starts: Vec<(u64, u64)> = r
            .rows
            .iter()
            .map(|row| match row.outcome {
                Outcome::Sent { start, .. } => (row.flow, start),
                _ => panic!("no drops expected"),
            })
            .collect();
        // 500 B at 8 Mbit/s = 500 us per packet; order 9, 9, 4, 9, 9, 4.
        assert_eq!(
            starts,
            vec![
                (9, 0),
                (9, 500_000),
                (9, 1_500_000),
                (9, 2_000_000),
                (4, 1_000_000),
                (4, 2_500_000)
            ]
        );
        assert_eq!(r.flows[0].flow, 9);
        assert_eq!(r.flows[0].bytes, 2000);
        // Flow 4: delays 1.5 ms and 3 ms.
        assert!((r.flows[1].delay_mean_s - 0.00225).abs() < 1e-12);
        assert!((r.flows[1].delay_max_s - 0.003).abs() < 1e-12);
        assert!((r.flows[1].throughput_bps - 1000.0 * 8.0 / 0.003).abs() < 1e-6);
    }

    #[test]
    fn a_watcher_stops_the_replay_at_every_stage_and_no_file_is_left() {
        let dir = std::env::temp_dir().join(format!("schedlab-replay-watch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (config, trace, out) = (dir.join("c.toml"), dir.join("t.csv"), dir.join("d.csv"));
        std::fs::write(&config, CONFIG).unwrap();
        let mut text = String::from("time_s,flow,size_bytes\n");
        for k in 0..100_000 {
            text.push_str(&format!("{:.6},{},500\n", k as f64 * 1e-4, k % 5));
        }
        std::fs::write(&trace, text).unwrap();
        // Stop at the first call inside each third: reading, the link, writing.
        for stage in 0..3 {
            let mut seen = Vec::new();
            let result = replay_files_watched(&config, &trace, &out, &mut |p| {
                seen.push(p.done);
                !(p.done > 100.0 * stage as f64 / 3.0 && p.done < 100.0 * (stage + 1) as f64 / 3.0)
            });
            assert_eq!(
                result.unwrap_err(),
                InputError::Interrupted,
                "stage {stage}: {seen:?}"
            );
            assert!(!out.exists() && !out.with_extension("csv.partial").exists());
        }
        let mut seen = Vec::new();
        let done = replay_files_watched(&config, &trace, &out, &mut |p| {
            seen.push(p.done);
            true
        })
        .unwrap();
        assert_eq!(done.rows.len(), 100_000);
        assert!(out.exists());
        assert_eq!((seen[0], *seen.last().unwrap()), (0.0, 100.0));
        assert!(
            seen.windows(2).all(|w| w[0] <= w[1]) && seen.len() > 10,
            "{seen:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn config_errors_name_file_line_key_and_value() {
        let bad = CONFIG.replace("quantum = 1000", "quantum = 0");
        let e = ReplayConfig::parse(&bad, "c.toml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.toml:8: flow[0].quantum = 0: must be an integer from 1 to 4294967295"
        );
        let bad = CONFIG.replace("rate = \"8Mbit\"", "rate = \"8 furlongs\"");
        let e = ReplayConfig::parse(&bad, "c.toml").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("c.toml:2: link.rate = \"8 furlongs\": unknown unit"),
            "{e}"
        );
        // The scheduler and the flow tables are checked before any trace is read.
        let bad = CONFIG.replace("kind = \"drr\"", "kind = \"nope\"");
        let e = ReplayConfig::parse(&bad, "c.toml").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("c.toml:4: scheduler.kind = \"nope\": unknown discipline"),
            "{e}"
        );
        let bad = CONFIG.replace("quantum = 1000", "share = 2");
        let e = ReplayConfig::parse(&bad, "c.toml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.toml:8: flow[0].share = 2: not a flow key of drr, which reads only quantum (another discipline's keys go in a sub-table named after it)"
        );
        let e = ReplayConfig::parse(
            "[link]\nrate = 1\n[scheduler]\nkind = \"fifo\"\n[extra]\n",
            "c.toml",
        )
        .unwrap_err();
        assert!(e.to_string().contains("extra"), "{e}");
        let e = ReplayConfig::parse("[link\n", "c.toml").unwrap_err();
        assert!(matches!(e, InputError::Syntax { .. }));
    }

    #[test]
    fn departures_csv_has_the_documented_format() {
        let config = ReplayConfig::parse(
            "[link]\nrate = \"8Mbit\"\n[scheduler]\nkind = \"fifo\"\nbuffer_packets = 1\n",
            "c",
        )
        .unwrap();
        let t = trace("time_s,flow,size_bytes\n0,1,1000\n0,2,1000\n0.0015,1,500\n");
        let r = replay(&config, &t).unwrap();
        let dir = std::env::temp_dir().join(format!("schedlab-replay-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("d.csv");
        write_departures(&r.rows, &path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "flow,seq,size_bytes,arrival_s,start_s,departure_s,outcome,drop_reason\n\
             1,0,1000,0.000000000,0.000000000,0.001000000,sent,\n\
             2,0,1000,0.000000000,,0.000000000,dropped,buffer_full\n\
             1,1,500,0.001500000,0.001500000,0.002000000,sent,\n"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
