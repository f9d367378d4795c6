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
//!
//! [`replay_files`] streams: it reads the trace twice (once for its flow labels, which the
//! scheduler's flow table needs before the first packet, once to replay it), drives the link
//! with [`schedlab_core::drive_link`] and writes each row as soon as it and every earlier
//! packet are sent or dropped, keeping per flow only counters and a delay histogram. Memory
//! therefore depends on the number of flows and on the packets between the oldest packet
//! still queued and the newest arrival, not on the trace's length.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::Write;
use std::path::Path;

use schedlab_core::config::TableReader;
use schedlab_core::{
    build_scheduler, drive_link, format_seconds, AnyScheduler, ConfigError, FlowId, FlowTable, Outcome, Rate,
    Scheduler,
};

use crate::error::InputError;
use crate::stats::DelayHistogram;
use crate::trace::{Trace, TraceRows};
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
    /// Packets replayed.
    pub packets: u64,
    /// One row per input packet, in input order, from [`replay`]; empty from
    /// [`replay_files`], which writes them to the departure file as they happen instead.
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
    let mut rows = Vec::with_capacity(trace.packets.len());
    let mut departures = Departures::new(trace.labels.clone(), |row: &ReplayRow| {
        rows.push(*row);
        Ok(())
    });
    let mut replay = drive(
        config,
        trace,
        trace.packets.iter().copied(),
        &mut departures,
        watch,
    )?;
    drop(departures);
    replay.rows = rows;
    Ok(replay)
}

/// Builds `config`'s scheduler for the flows of `trace` (only its labels are read), drives the
/// link with `packets` and hands each resolved row to `departures`.
fn drive<F: FnMut(&ReplayRow) -> Result<(), InputError>>(
    config: &ReplayConfig,
    trace: &Trace,
    packets: impl Iterator<Item = schedlab_core::Packet>,
    departures: &mut Departures<F>,
    watch: &mut dyn FnMut(usize) -> bool,
) -> Result<Replay, InputError> {
    // Flows configured but absent from the trace still get validated.
    let mut scheduler = config.build_scheduler(|label| trace.id_of(label), trace.labels.len() as FlowId)?;
    let departures = RefCell::new(departures);
    let arrivals = packets.inspect(|packet| departures.borrow_mut().arrive(packet));
    let totals = drive_link(
        &mut scheduler,
        config.rate,
        arrivals,
        &mut |id, outcome| departures.borrow_mut().resolve(id, outcome),
        watch,
    )
    .map_err(|e| InputError::Io {
        path: "trace".into(),
        message: e.to_string(),
    })?
    .ok_or(InputError::Interrupted)?;
    let departures = departures.into_inner();
    if let Some(error) = departures.error.take() {
        return Err(error);
    }
    if totals.stalled > 0 {
        return Err(InputError::Io {
            path: config.file.clone(),
            message: format!(
                "internal error: {} stalled with {} packets queued",
                scheduler.id(),
                totals.stalled
            ),
        });
    }
    Ok(Replay {
        packets: totals.packets,
        rows: Vec::new(),
        flows: departures.summaries(),
        discipline_counters: scheduler.discipline_counters(),
        discipline: scheduler.id(),
    })
}

/// One flow's running totals (what [`FlowSummary`] is made of).
#[derive(Clone, Debug)]
struct FlowTotals {
    label: u64,
    seq: u64,
    sent: u64,
    dropped: u64,
    bytes: u64,
    first_arrival: u64,
    last_departure: u64,
    delay_sum: u128,
    delay_max: u64,
    delays: DelayHistogram,
}

/// Rows waiting for their outcome, handed out in input order as soon as they and every
/// earlier row have one, and per-flow totals of the rows handed out.
struct Departures<F> {
    /// Rows from input index `base` on; `None` outcome while the packet is queued.
    waiting: VecDeque<(ReplayRow, FlowId, bool)>,
    base: u64,
    flows: Vec<FlowTotals>,
    emit: F,
    /// The first error of `emit` (the rest of the run is then not written).
    error: Option<InputError>,
}

impl<F: FnMut(&ReplayRow) -> Result<(), InputError>> Departures<F> {
    fn new(labels: Vec<u64>, emit: F) -> Departures<F> {
        Departures {
            waiting: VecDeque::new(),
            base: 0,
            flows: labels
                .into_iter()
                .map(|label| FlowTotals {
                    label,
                    seq: 0,
                    sent: 0,
                    dropped: 0,
                    bytes: 0,
                    first_arrival: u64::MAX,
                    last_departure: 0,
                    delay_sum: 0,
                    delay_max: 0,
                    delays: DelayHistogram::new(),
                })
                .collect(),
            emit,
            error: None,
        }
    }

    /// A packet enters the link (in input order).
    fn arrive(&mut self, packet: &schedlab_core::Packet) {
        let flow = &mut self.flows[packet.flow as usize];
        let row = ReplayRow {
            flow: flow.label,
            seq: flow.seq,
            size_bytes: packet.size,
            arrival: packet.arrival,
            outcome: Outcome::Dropped {
                at: 0,
                reason: schedlab_core::DropReason::BufferFull,
            },
        };
        flow.seq += 1;
        flow.first_arrival = flow.first_arrival.min(packet.arrival);
        self.waiting.push_back((row, packet.flow, false));
    }

    /// Input packet `id` was sent or dropped.
    fn resolve(&mut self, id: u64, outcome: Outcome) {
        let slot = &mut self.waiting[(id - self.base) as usize];
        slot.0.outcome = outcome;
        slot.2 = true;
        while self.waiting.front().is_some_and(|(_, _, done)| *done) {
            let (row, flow, _) = self.waiting.pop_front().expect("checked above");
            self.base += 1;
            self.total(&row, flow);
            if self.error.is_none() {
                if let Err(e) = (self.emit)(&row) {
                    self.error = Some(e);
                }
            }
        }
    }

    fn total(&mut self, row: &ReplayRow, flow: FlowId) {
        let flow = &mut self.flows[flow as usize];
        match row.outcome {
            Outcome::Sent { end, .. } => {
                flow.sent += 1;
                flow.bytes += row.size_bytes as u64;
                flow.delay_sum += (end - row.arrival) as u128;
                flow.delays.record(end - row.arrival);
                flow.delay_max = flow.delay_max.max(end - row.arrival);
                flow.last_departure = flow.last_departure.max(end);
            }
            Outcome::Dropped { .. } => flow.dropped += 1,
        }
    }

    /// Per-flow summaries, in order of first appearance. The 99th percentile is read from the
    /// flow's delay histogram (3 significant digits, as the simulator's; within 0.1 % of the
    /// exact nearest-rank value, and never above the largest delay).
    fn summaries(&self) -> Vec<FlowSummary> {
        let seconds = |ns: u64| ns as f64 / 1e9;
        self.flows
            .iter()
            .map(|f| {
                let mut summary = FlowSummary {
                    flow: f.label,
                    sent: f.sent,
                    dropped: f.dropped,
                    bytes: f.bytes,
                    throughput_bps: 0.0,
                    delay_mean_s: 0.0,
                    delay_p99_s: 0.0,
                    delay_max_s: 0.0,
                };
                if f.sent > 0 {
                    let p99 = f.delays.value_at_quantile(0.99);
                    summary.delay_mean_s = f.delay_sum as f64 / f.sent as f64 / 1e9;
                    summary.delay_p99_s = seconds(p99.min(f.delay_max));
                    summary.delay_max_s = seconds(f.delay_max);
                    let span = f.last_departure.saturating_sub(f.first_arrival);
                    if span > 0 {
                        summary.throughput_bps = f.bytes as f64 * 8.0 / seconds(span);
                    }
                }
                summary
            })
            .collect()
    }
}

/// The header of the departure CSV.
const DEPARTURES_HEADER: &str = "flow,seq,size_bytes,arrival_s,start_s,departure_s,outcome,drop_reason";

/// Writes one departure row.
fn write_row(out: &mut impl Write, row: &ReplayRow) -> std::io::Result<()> {
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
}

/// A departure file being written: `<path>.partial` until [`DepartureFile::finish`] renames it,
/// removed if dropped unfinished (an error or an interrupt leaves no file that looks complete).
struct DepartureFile {
    path: std::path::PathBuf,
    partial: std::path::PathBuf,
    out: Option<std::io::BufWriter<std::fs::File>>,
}

impl DepartureFile {
    fn create(path: &Path) -> Result<DepartureFile, InputError> {
        let partial = path.with_extension("csv.partial");
        let file = std::fs::File::create(&partial).map_err(|e| io_error(path, e))?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        writeln!(out, "{DEPARTURES_HEADER}").map_err(|e| io_error(path, e))?;
        Ok(DepartureFile {
            path: path.to_path_buf(),
            partial,
            out: Some(out),
        })
    }

    fn write(&mut self, row: &ReplayRow) -> Result<(), InputError> {
        let out = self.out.as_mut().expect("open until finished");
        write_row(out, row).map_err(|e| io_error(&self.path, e))
    }

    fn finish(mut self) -> Result<(), InputError> {
        let mut out = self.out.take().expect("open until finished");
        out.flush().map_err(|e| io_error(&self.path, e))?;
        drop(out);
        std::fs::rename(&self.partial, &self.path).map_err(|e| io_error(&self.path, e))
    }
}

impl Drop for DepartureFile {
    fn drop(&mut self) {
        if self.out.take().is_some() {
            let _ = std::fs::remove_file(&self.partial);
        }
    }
}

fn io_error(path: &Path, e: std::io::Error) -> InputError {
    InputError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
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
    let mut file = DepartureFile::create(path)?;
    for (index, row) in rows.iter().enumerate() {
        if index > 0 && (index as u64).is_multiple_of(crate::watch::POLL_EVERY) && !watch(index) {
            return Err(InputError::Interrupted);
        }
        file.write(row)?;
    }
    file.finish()
}

/// Reads the configuration and trace files, replays, writes the departure CSV.
pub fn replay_files(config_path: &Path, trace_path: &Path, out_path: &Path) -> Result<Replay, InputError> {
    replay_files_watched(config_path, trace_path, out_path, &mut |_| true)
}

/// [`replay_files`], streamed (see the module documentation), under a watcher: it is called
/// with the percentage done (the first reading of the trace, for its flow labels, is the
/// first 30 %, the replay the rest, both by bytes of trace read) every 256 KiB of trace; when it returns false the replay stops
/// with [`InputError::Interrupted`] and leaves no departure file.
pub fn replay_files_watched(
    config_path: &Path,
    trace_path: &Path,
    out_path: &Path,
    watch: &mut dyn FnMut(Progress) -> bool,
) -> Result<Replay, InputError> {
    const LABELS_SHARE: f64 = 0.3;
    if !watch(Progress {
        done: 0.0,
        total: 100.0,
    }) {
        return Err(InputError::Interrupted);
    }
    let text = std::fs::read_to_string(config_path).map_err(|e| io_error(config_path, e))?;
    let config = ReplayConfig::parse(&text, &config_path.display().to_string())?;
    let name = trace_path.display().to_string();
    let open = || std::fs::File::open(trace_path).map_err(|e| io_error(trace_path, e));
    let size = open()?.metadata().map(|m| m.len()).unwrap_or(0).max(1) as f64;
    let watch = RefCell::new(watch);
    let progress = |share: (f64, f64), read: u64| {
        let done = 100.0 * (share.0 + share.1 * (read as f64 / size).clamp(0.0, 0.999));
        (watch.borrow_mut())(Progress {
            done: done.min(99.9),
            total: 100.0,
        })
    };
    // First reading: every row checked, the flow labels in order of first appearance.
    let mut labels = Trace::default();
    {
        let poll = |read| progress((0.0, LABELS_SHARE), read);
        let mut reader = WatchedRead::new(open()?, &poll);
        let rows = TraceRows::new(&mut reader, &name);
        let result = rows.and_then(|rows| {
            for row in rows {
                labels.flow_id(&row?, &name)?;
            }
            Ok(())
        });
        if reader.stopped {
            return Err(InputError::Interrupted);
        }
        result?;
    }
    // Second reading: the replay, each row written once it and every earlier one are done.
    let poll = |read| progress((LABELS_SHARE, 1.0 - LABELS_SHARE), read);
    let mut reader = WatchedRead::new(open()?, &poll);
    let result = {
        let rows = TraceRows::new(&mut reader, &name)?;
        let packets = rows.enumerate().map_while(|(index, row)| match row {
            Ok(row) => Some(Ok(row.packet(index as u64, labels.id_of(row.label)?))),
            Err(e) => Some(Err(e.into())),
        });
        replay_to_file(&config, &labels, packets, out_path, &mut |_| true)
    };
    if reader.stopped {
        return Err(InputError::Interrupted);
    }
    let replay = result?;
    (watch.borrow_mut())(Progress {
        done: 100.0,
        total: 100.0,
    });
    Ok(replay)
}

/// Replays `packets` — packet ids numbered from 0 in input order, flows the ids of `labels`
/// (whose labels only are read; see [`Trace::flow_id`]) — under `config` and writes each
/// departure row to `out_path` as soon as it and every earlier packet are resolved (the file
/// is `<out_path>.partial` until complete). The first `Err` of `packets` stops the replay and
/// is returned, leaving no departure file; so does `watch(packets enqueued)` returning false
/// (every [`schedlab_core::link::WATCH_EVERY`] packets), with [`InputError::Interrupted`].
/// Memory does not depend on the number of packets (see the module documentation); used by
/// the CSV reader here and by the pcap reader of `schedlab-gateway`.
pub fn replay_to_file(
    config: &ReplayConfig,
    labels: &Trace,
    packets: impl Iterator<Item = Result<schedlab_core::Packet, InputError>>,
    out_path: &Path,
    watch: &mut dyn FnMut(usize) -> bool,
) -> Result<Replay, InputError> {
    let mut file = DepartureFile::create(out_path)?;
    let mut packet_error = None;
    let packets = packets.map_while(|packet| match packet {
        Ok(packet) => Some(packet),
        Err(e) => {
            packet_error = Some(e);
            None
        }
    });
    let result = {
        let mut departures = Departures::new(labels.labels.clone(), |row: &ReplayRow| file.write(row));
        drive(config, labels, packets, &mut departures, watch)
    };
    if let Some(e) = packet_error {
        return Err(e);
    }
    let replay = result?;
    file.finish()?;
    Ok(replay)
}

/// Bytes of trace read between two calls of the watcher.
const READ_POLL_BYTES: u64 = 1 << 18;

/// A reader that calls a watcher every [`READ_POLL_BYTES`] and fails once it says stop.
struct WatchedRead<'w, R> {
    inner: R,
    read: u64,
    next_poll: u64,
    stopped: bool,
    watch: &'w dyn Fn(u64) -> bool,
}

impl<'w, R> WatchedRead<'w, R> {
    fn new(inner: R, watch: &'w dyn Fn(u64) -> bool) -> WatchedRead<'w, R> {
        WatchedRead {
            inner,
            read: 0,
            next_poll: READ_POLL_BYTES,
            stopped: false,
            watch,
        }
    }
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
        // Stop at the first call inside each stage: reading the labels, the replay.
        for (low, high) in [(0.0, 30.0), (30.0, 100.0)] {
            let mut seen = Vec::new();
            let result = replay_files_watched(&config, &trace, &out, &mut |p| {
                seen.push(p.done);
                !(p.done > low && p.done < high)
            });
            assert_eq!(
                result.unwrap_err(),
                InputError::Interrupted,
                "stage {low}-{high} %: {seen:?}"
            );
            assert!(!out.exists() && !out.with_extension("csv.partial").exists());
        }
        let mut seen = Vec::new();
        let done = replay_files_watched(&config, &trace, &out, &mut |p| {
            seen.push(p.done);
            true
        })
        .unwrap();
        assert_eq!(done.packets, 100_000);
        assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 100_001);
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

    #[test]
    fn the_streamed_file_equals_the_in_memory_replay_with_drops_and_reordering() {
        let dir = std::env::temp_dir().join(format!("schedlab-replay-stream-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (config_path, trace_path) = (dir.join("c.toml"), dir.join("t.csv"));
        // Strict priority by class with a small buffer: class-1 packets wait behind bursts of
        // class 0 (rows resolve out of input order) and some are dropped.
        let config_text = "[link]\nrate = \"1Mbit\"\n[scheduler]\nkind = \"priority\"\nbuffer_packets = 20\n";
        std::fs::write(&config_path, config_text).unwrap();
        let mut text = String::from("time_s,flow,size_bytes,class\n");
        for k in 0..20_000u64 {
            let flow = (k * 7919) % 13;
            text.push_str(&format!(
                "{:.6},{},{},{}\n",
                k as f64 * 4e-4,
                flow * 3,
                100 + (k * 31) % 900,
                flow % 2
            ));
        }
        std::fs::write(&trace_path, &text).unwrap();
        let config = ReplayConfig::parse(config_text, "c.toml").unwrap();
        let memory = replay(&config, &trace(&text)).unwrap();
        assert!(memory
            .rows
            .iter()
            .any(|r| matches!(r.outcome, Outcome::Dropped { .. })));
        write_departures(&memory.rows, &dir.join("memory.csv")).unwrap();
        let streamed = replay_files(&config_path, &trace_path, &dir.join("streamed.csv")).unwrap();
        assert_eq!(
            std::fs::read(dir.join("streamed.csv")).unwrap(),
            std::fs::read(dir.join("memory.csv")).unwrap()
        );
        assert_eq!(streamed.flows, memory.flows);
        assert_eq!(streamed.packets, 20_000);
        // Every flow's summary against its rows: counts, bytes, exact maximum, and the 99th
        // percentile within the histogram's 0.1 % of the exact nearest rank.
        for summary in &memory.flows {
            let rows: Vec<&ReplayRow> = memory.rows.iter().filter(|r| r.flow == summary.flow).collect();
            let mut delays: Vec<u64> = rows
                .iter()
                .filter_map(|r| match r.outcome {
                    Outcome::Sent { end, .. } => Some(end - r.arrival),
                    Outcome::Dropped { .. } => None,
                })
                .collect();
            delays.sort_unstable();
            assert_eq!(summary.sent as usize, delays.len());
            assert_eq!(summary.dropped as usize, rows.len() - delays.len());
            assert_eq!(summary.delay_max_s, *delays.last().unwrap() as f64 / 1e9);
            let rank = ((0.99 * delays.len() as f64).ceil() as usize).clamp(1, delays.len());
            let exact = delays[rank - 1] as f64 / 1e9;
            assert!(
                (summary.delay_p99_s - exact).abs() <= exact * 1e-3,
                "{} vs {exact}",
                summary.delay_p99_s
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
