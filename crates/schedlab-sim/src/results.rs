//! Results: per-replication tables, their reduction over replications (mean and 95%
//! confidence interval), `summary.json` and the tidy CSV tables. Every key and column is
//! documented in `docs/results.md`.
//!
//! Reduction rules over replications, by column kind ([`Cell`]):
//! * identifiers ([`Cell::Id`], [`Cell::Text`]) are copied;
//! * counts ([`Cell::Count`]) are summed over replications (exact integers);
//! * real-valued metrics ([`Cell::Real`]) are averaged over the replications where they are
//!   defined, with a 95% confidence-interval half-width in a sibling key whose name inserts
//!   `_ci95` before the unit suffix (`delay_mean_s` → `delay_mean_ci95_s`,
//!   `throughput_bps` → `throughput_ci95_bps`);
//! * maxima ([`Cell::Max`]) take the largest value over replications.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use schedlab_core::conditioning::{ColourCounters, MeterKind, Profile, Selector};
use schedlab_core::DropReason;
use serde_json::{json, Map, Value};
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::engine::{ClassAtLink, FlowSeries, LinkSnapshot, RawReplication, TcpRaw, TcpSample};
use crate::lateness::LatenessCounts;
use crate::scenario::{CiMethod, RunLength, Scenario};
use crate::stats::{Accumulator, DelayHistogram};

/// One cell of a result table.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// An identifier (flow id, class, link index): copied, never summed.
    Id(u64),
    /// A label.
    Text(String),
    /// A count: summed over replications.
    Count(u64),
    /// A real-valued metric (`None` when undefined, e.g. no packet received): averaged over
    /// replications, with a confidence interval.
    Real(Option<f64>),
    /// A maximum: the largest over replications.
    Max(Option<f64>),
}

impl Cell {
    fn csv(&self) -> String {
        match self {
            Cell::Id(v) | Cell::Count(v) => v.to_string(),
            Cell::Text(s) => csv_text(s),
            Cell::Real(v) | Cell::Max(v) => v.map(|x| x.to_string()).unwrap_or_default(),
        }
    }

    fn real(&self) -> Option<f64> {
        match self {
            Cell::Id(v) | Cell::Count(v) => Some(*v as f64),
            Cell::Real(v) | Cell::Max(v) => *v,
            Cell::Text(_) => None,
        }
    }
}

fn csv_text(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A result row: named cells in column order.
pub type Row = Vec<(&'static str, Cell)>;

/// Looks up a cell of a row by column name.
pub fn cell<'r>(row: &'r Row, name: &str) -> Option<&'r Cell> {
    row.iter().find(|(n, _)| *n == name).map(|(_, c)| c)
}

/// The key of the confidence interval of `name`: `_ci95` inserted before the unit suffix.
pub fn ci_key(name: &str) -> String {
    for suffix in ["_s", "_bps", "_bytes", "_packets"] {
        if let Some(stem) = name.strip_suffix(suffix) {
            return format!("{stem}_ci95{suffix}");
        }
    }
    format!("{name}_ci95")
}

/// Mean and 95% CI half-width of `values` (`None` for an empty list; the half-width is `None`
/// with fewer than two values).
pub fn mean_ci(values: &[f64], method: CiMethod) -> (Option<f64>, Option<f64>) {
    let n = values.len();
    if n == 0 {
        return (None, None);
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (Some(mean), None);
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let quantile = match method {
        CiMethod::Normal => 1.96,
        CiMethod::StudentT => StudentsT::new(0.0, 1.0, (n - 1) as f64)
            .map(|t| t.inverse_cdf(0.975))
            .unwrap_or(f64::NAN),
    };
    (Some(mean), Some(quantile * var.sqrt() / (n as f64).sqrt()))
}

/// Jain's fairness index (Σx)²/(n·Σx²) of `values`; `None` if all are zero or there are none.
pub fn jain_index(values: &[f64]) -> Option<f64> {
    let sum: f64 = values.iter().sum();
    let squares: f64 = values.iter().map(|x| x * x).sum();
    (squares > 0.0).then(|| sum * sum / (values.len() as f64 * squares))
}

/// Results of one replication.
#[derive(Clone, Debug)]
pub struct ReplicationResult {
    /// Replication index (0-based).
    pub replication: u32,
    /// Stream seed of each source (see [`crate::traffic::stream_seed`]).
    pub stream_seeds: Vec<u64>,
    /// One row per source (flow), in scenario order.
    pub flows: Vec<Row>,
    /// One row per traffic class seen, by class.
    pub classes: Vec<Row>,
    /// One row per link, in scenario order.
    pub links: Vec<Row>,
    /// One row per (link, class) the link saw: the class's share of the link's time (GCU),
    /// drops by reason and delay at that link.
    pub link_classes: Vec<Row>,
    /// One row per meter of every link's conditioner (link order, then meter order): packets
    /// and bytes by colour and the packets its actions dropped, over the window.
    pub meters: Vec<Row>,
    /// Per link, per bin: each class's share of the bin's time, by class.
    pub link_class_series: Vec<Vec<Vec<f64>>>,
    /// Per link, the discipline's own counters at the end of the run.
    pub discipline_counters: Vec<Vec<(&'static str, u64)>>,
    /// Per flow, received packets and bytes per time bin (all packets, warm-up included).
    pub flow_series: Vec<FlowSeries>,
    /// Per link, one row per time bin.
    pub link_series: Vec<Vec<Row>>,
    /// One row per TCP source, in scenario order (empty without TCP sources).
    pub tcp_flows: Vec<Row>,
    /// Per TCP source (same order): its sender's state at every bin boundary.
    pub tcp_series: Vec<Vec<TcpSample>>,
    /// Jain's fairness index over the flows' throughputs.
    pub jain_index: Option<f64>,
    /// Events processed.
    pub events: u64,
    /// Packets that entered the network.
    pub packets: u64,
    /// Wall-clock time of the replication, seconds.
    pub wall_time_s: f64,
    /// Measurement window, ns.
    pub window: (u64, u64),
    /// Time of the last event (the network drained), ns.
    pub end_time: u64,
}

fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// Appends `format!("{}", seconds(ns))` to `out`, from the integer: below 10¹⁵ ns the decimal
/// `ns`·10⁻⁹ has at most 15 significant digits, so it is the shortest decimal that rounds to
/// the `f64` nearest it (distinct decimals of at most 15 digits are distinct `f64`s), which is
/// what `Display` prints, without an exponent and without trailing zeros.
fn push_seconds(out: &mut Vec<u8>, ns: u64) {
    if ns >= 1_000_000_000_000_000 {
        push_display(out, seconds(ns));
        return;
    }
    out.extend_from_slice(itoa_u64(ns / 1_000_000_000).text());
    let fraction = ns % 1_000_000_000;
    if fraction > 0 {
        // The point and the nine digits (one, then two groups of four written a pair of
        // digits at a time), less the trailing zeros.
        let mut text = [b'.'; 10];
        text[1] = b'0' + (fraction / 100_000_000) as u8;
        let below = fraction % 100_000_000;
        write_four_digits(&mut text[2..6], below / 10_000);
        write_four_digits(&mut text[6..10], below % 10_000);
        let mut len = text.len();
        let mut rest = fraction;
        while rest.is_multiple_of(10) {
            rest /= 10;
            len -= 1;
        }
        out.extend_from_slice(&text[..len]);
    }
}

/// The two-digit decimals `00` to `99`, one after the other.
const DIGIT_PAIRS: [u8; 200] = {
    let mut pairs = [0u8; 200];
    let mut n = 0;
    while n < 100 {
        pairs[2 * n] = b'0' + (n / 10) as u8;
        pairs[2 * n + 1] = b'0' + (n % 10) as u8;
        n += 1;
    }
    pairs
};

/// Writes the four decimal digits of `value` (below 10,000, with leading zeros) into `to`.
fn write_four_digits(to: &mut [u8], value: u64) {
    let (high, low) = ((value / 100) as usize, (value % 100) as usize);
    to[..2].copy_from_slice(&DIGIT_PAIRS[2 * high..2 * high + 2]);
    to[2..4].copy_from_slice(&DIGIT_PAIRS[2 * low..2 * low + 2]);
}

/// Appends `format!("{}", x)` to `out`: the shortest decimal that rounds to `x`, from Ryū,
/// laid out as `Display` lays it out (no exponent, no `.0`). Ryū and `Display` find the same
/// shortest digits except on a tie (two shortest decimals equally close to `x`; Ryū then takes
/// the even one, `Display` not always): a tie needs the exact decimal of `x` to have at most
/// 18 significant digits, one more than the 17 that always suffice, and `x = m·2⁻ⁿ` (`m` odd)
/// has `m·5ⁿ`, at least 19 digits, once `n ≥ 27`. So values with fewer than 27 fractional bits
/// (integers, halves, a count over a power of two up to 2²⁶), those that Ryū would write with an
/// exponent (below 10⁻⁵ or from 10¹⁶ on) and non-finite ones go through `Display` itself.
fn push_display(out: &mut Vec<u8>, x: f64) {
    if x.is_finite() && fraction_bits(x) >= 27 {
        let mut buffer = ryu::Buffer::new();
        // Ryū writes an exponent exactly when its shortest decimal is below 10⁻⁵ (from 10¹⁶
        // on too, but with 27 fractional bits `x` is below 2²⁶): the decimal is 10⁻⁵ or more
        // exactly when `x` is at least the `f64` nearest 10⁻⁵ (whose shortest decimal it is).
        if x.abs() >= 1e-5 {
            out.extend_from_slice(buffer.format_finite(x).as_bytes());
            return;
        }
    }
    write!(out, "{x}").expect("writing to a Vec does not fail");
}

/// `n` where the finite, non-zero `x` is `m·2⁻ⁿ` with `m` odd (≤ 0 for integers; 0 for zero).
fn fraction_bits(x: f64) -> i32 {
    let bits = x.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    let (mantissa, power) = if exponent == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1 << 52), exponent - 1075)
    };
    if mantissa == 0 {
        return 0;
    }
    -(power + mantissa.trailing_zeros() as i32)
}

/// The decimal digits of a `u64` (at most 20), in place.
struct Digits {
    bytes: [u8; 20],
    start: usize,
}

impl Digits {
    fn text(&self) -> &[u8] {
        &self.bytes[self.start..]
    }
}

fn itoa_u64(mut value: u64) -> Digits {
    let mut digits = Digits {
        bytes: [b'0'; 20],
        start: 20,
    };
    loop {
        digits.start -= 1;
        digits.bytes[digits.start] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            return digits;
        }
    }
}

fn ratio(numerator: u128, denominator: u64) -> Option<f64> {
    (denominator > 0).then(|| numerator as f64 / denominator as f64)
}

fn traffic_row(acc: &Accumulator, in_flight: Option<u64>, window_ns: u64) -> Row {
    let delay = &acc.delay;
    let window = seconds(window_ns);
    let [p50, p95, p99, p999] = delay.values_at_quantiles([0.5, 0.95, 0.99, 0.999]);
    let quantile = |value: u64| (acc.received > 0).then(|| seconds(value));
    let mut row: Row = vec![
        ("sent", Cell::Count(acc.sent)),
        ("sent_bytes", Cell::Count(acc.sent_bytes)),
        ("received", Cell::Count(acc.received)),
        ("received_bytes", Cell::Count(acc.received_bytes)),
        ("dropped", Cell::Count(acc.dropped_total())),
    ];
    for reason in DropReason::ALL {
        row.push((drop_column(reason), Cell::Count(acc.dropped[reason as usize])));
    }
    row.push(("lost", Cell::Count(acc.lost)));
    if let Some(n) = in_flight {
        row.push(("in_flight", Cell::Count(n)));
    }
    let jitter = &acc.jitter;
    let gap_mean = ratio(jitter.gap_sum as u128, jitter.gap_count());
    let gap_std = gap_mean.map(|m| {
        let mean_square = jitter.gap_square_sum as f64 / jitter.gap_count() as f64;
        (mean_square - m * m).max(0.0).sqrt()
    });
    row.extend([
        (
            "loss_ratio",
            Cell::Real((acc.sent > 0).then(|| (acc.dropped_total() + acc.lost) as f64 / acc.sent as f64)),
        ),
        (
            "offered_bps",
            Cell::Real(Some(acc.sent_bytes as f64 * 8.0 / window)),
        ),
        (
            "throughput_bps",
            Cell::Real(Some(acc.received_bytes as f64 * 8.0 / window)),
        ),
        (
            "delay_mean_s",
            Cell::Real(ratio(acc.delay_sum, acc.received).map(|d| d / 1e9)),
        ),
        ("delay_p50_s", Cell::Real(quantile(p50))),
        ("delay_p95_s", Cell::Real(quantile(p95))),
        ("delay_p99_s", Cell::Real(quantile(p99))),
        ("delay_p999_s", Cell::Real(quantile(p999))),
        (
            "delay_max_s",
            Cell::Max((acc.received > 0).then(|| seconds(acc.delay_max))),
        ),
        ("jitter_mean_s", Cell::Real(gap_mean.map(|g| g / 1e9))),
        ("jitter_std_s", Cell::Real(gap_std.map(|g| g / 1e9))),
        (
            "jitter_max_s",
            Cell::Max((jitter.gap_count() > 0).then(|| seconds(jitter.gap_max))),
        ),
        (
            "ipdv_mean_s",
            Cell::Real(ratio(jitter.ipdv_sum, jitter.gap_count()).map(|d| d / 1e9)),
        ),
        (
            "shaper_delay_mean_s",
            Cell::Real(ratio(acc.shaper_delay_sum, acc.sent).map(|d| d / 1e9)),
        ),
        ("rtt_samples", Cell::Count(acc.rtt_samples)),
        (
            "rtt_mean_s",
            Cell::Real(ratio(acc.rtt_sum, acc.rtt_samples).map(|d| d / 1e9)),
        ),
    ]);
    row
}

/// `discipline_<name>`, the flow column of a discipline's per-flow counter `name` (interned:
/// disciplines report a handful of constant names).
fn discipline_column(name: &'static str) -> &'static str {
    use std::sync::{Mutex, OnceLock};
    static COLUMNS: OnceLock<Mutex<Vec<(&'static str, &'static str)>>> = OnceLock::new();
    let mut columns = COLUMNS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, column)) = columns.iter().find(|(n, _)| *n == name) {
        return column;
    }
    let column: &'static str = Box::leak(format!("discipline_{name}").into_boxed_str());
    columns.push((name, column));
    column
}

/// The lateness columns of a flow or class row (see [`crate::lateness`]): empty cells where
/// no `lateness` table applies.
fn lateness_cells(counts: Option<&LatenessCounts>) -> Row {
    let real = |f: fn(&LatenessCounts) -> u64| Cell::Real(counts.map(|c| f(c) as f64));
    vec![
        ("deadlines_missed", real(|c| c.deadlines_missed)),
        ("late_packets", real(|c| c.window.late_packets)),
        (
            "loss_tolerance_violations",
            real(|c| c.window.loss_tolerance_violations),
        ),
        (
            "fixed_window_violations",
            real(|c| c.window.fixed_window_violations),
        ),
        ("longest_late_run", real(|c| c.window.longest_late_run)),
    ]
}

fn drop_column(reason: DropReason) -> &'static str {
    match reason {
        DropReason::BufferFull => "dropped_buffer_full",
        DropReason::PushedOut => "dropped_pushed_out",
        DropReason::Late => "dropped_late",
        DropReason::InvalidPacket => "dropped_invalid_packet",
        DropReason::Sojourn => "dropped_sojourn",
        DropReason::NoBandwidth => "dropped_no_bandwidth",
        DropReason::OutOfProfile => "dropped_out_of_profile",
        DropReason::Threshold => "dropped_threshold",
    }
}

/// The window's counts of one meter of a link's conditioner.
fn meter_row(
    index: usize,
    name: &str,
    meter: usize,
    profile: &Profile,
    from: &ColourCounters,
    to: &ColourCounters,
) -> Row {
    let selector = match profile.selector {
        Selector::All => "all".to_string(),
        Selector::Class(c) => format!("class {c}"),
        Selector::Flow(f) => format!("flow {f}"),
    };
    let kind = match profile.meter.kind() {
        MeterKind::TokenBucket { .. } => "token_bucket",
        MeterKind::SingleRateThreeColour { .. } => "srtcm",
        MeterKind::TwoRateThreeColour { .. } => "trtcm",
    };
    let mut row: Row = vec![
        ("link", Cell::Id(index as u64)),
        ("link_name", Cell::Text(name.to_string())),
        ("meter", Cell::Id(meter as u64)),
        ("selects", Cell::Text(selector)),
        ("kind", Cell::Text(kind.to_string())),
    ];
    const PACKETS: [&str; 3] = ["green_packets", "yellow_packets", "red_packets"];
    const BYTES: [&str; 3] = ["green_bytes", "yellow_bytes", "red_bytes"];
    for (c, name) in PACKETS.into_iter().enumerate() {
        row.push((name, Cell::Count(to.packets[c] - from.packets[c])));
    }
    for (c, name) in BYTES.into_iter().enumerate() {
        row.push((name, Cell::Count(to.bytes[c] - from.bytes[c])));
    }
    row.push(("dropped", Cell::Count(to.dropped - from.dropped)));
    row
}

fn link_row(
    index: usize,
    name: &str,
    rate_bps: u64,
    from: &LinkSnapshot,
    to: &LinkSnapshot,
    max: Option<(u64, u64)>,
) -> Row {
    let span = to.time.saturating_sub(from.time);
    let per_time = |area: u128| (span > 0).then(|| area as f64 / span as f64);
    let sent_bytes = to.sent_bytes - from.sent_bytes;
    let mut row: Row = vec![
        ("link", Cell::Id(index as u64)),
        ("name", Cell::Text(name.to_string())),
        ("rate_bps", Cell::Id(rate_bps)),
        ("utilisation", Cell::Real(per_time((to.busy - from.busy) as u128))),
        (
            "throughput_bps",
            Cell::Real((span > 0).then(|| sent_bytes as f64 * 8.0 / seconds(span))),
        ),
        (
            "queue_mean_packets",
            Cell::Real(per_time(to.area_packets - from.area_packets)),
        ),
        (
            "queue_mean_bytes",
            Cell::Real(per_time(to.area_bytes - from.area_bytes)),
        ),
    ];
    if let Some((packets, bytes)) = max {
        row.push(("queue_max_packets", Cell::Max(Some(packets as f64))));
        row.push(("queue_max_bytes", Cell::Max(Some(bytes as f64))));
        row.push(("sent_packets", Cell::Count(to.sent_packets - from.sent_packets)));
        row.push(("sent_bytes", Cell::Count(sent_bytes)));
        let dropped: u64 = (0..DropReason::COUNT)
            .map(|i| to.dropped[i] - from.dropped[i])
            .sum();
        row.push(("dropped", Cell::Count(dropped)));
        for reason in DropReason::ALL {
            let i = reason as usize;
            row.push((drop_column(reason), Cell::Count(to.dropped[i] - from.dropped[i])));
        }
        row.push(("lost", Cell::Count(to.lost - from.lost)));
    }
    row
}

/// The row of class `class` at link `index` over a window from `from` to `to` (totals; a
/// class absent from `from` had zeros then).
fn link_class_row(
    index: usize,
    name: &str,
    class: u8,
    class_name: Option<&str>,
    from: Option<&ClassAtLink>,
    to: &ClassAtLink,
    span: u64,
) -> Row {
    let zero = ClassAtLink::default();
    let from = from.unwrap_or(&zero);
    let sent = to.sent_packets - from.sent_packets;
    let delay = to.delay_sum - from.delay_sum;
    let mut row: Row = vec![
        ("link", Cell::Id(index as u64)),
        ("name", Cell::Text(name.to_string())),
        ("class", Cell::Id(class as u64)),
        ("class_name", Cell::Text(class_name.unwrap_or("").to_string())),
        (
            "utilisation",
            Cell::Real(ratio((to.busy - from.busy) as u128, span)),
        ),
        ("sent_packets", Cell::Count(sent)),
        (
            "dropped",
            Cell::Count(
                (0..DropReason::COUNT)
                    .map(|i| to.dropped[i] - from.dropped[i])
                    .sum(),
            ),
        ),
    ];
    for reason in DropReason::ALL {
        let i = reason as usize;
        row.push((drop_column(reason), Cell::Count(to.dropped[i] - from.dropped[i])));
    }
    row.push(("delay_mean_s", Cell::Real(ratio(delay, sent).map(|d| d / 1e9))));
    row
}

/// The TCP row of a source: goodput, retransmissions, timeouts, RTT and completion times in
/// the measurement window.
fn tcp_row(flow: u64, name: &str, raw: &TcpRaw, window_ns: u64) -> Row {
    let (from, to) = (&raw.at_warmup, &raw.at_end);
    let rtt_samples = to.rtt_samples - from.rtt_samples;
    let mut times = raw.completion_times.clone();
    times.sort_unstable();
    let quantile = |q: f64| {
        (!times.is_empty()).then(|| {
            let rank = ((q * times.len() as f64).ceil() as usize).clamp(1, times.len());
            seconds(times[rank - 1])
        })
    };
    let mean = (!times.is_empty()).then(|| seconds(times.iter().sum::<u64>()) / times.len() as f64);
    vec![
        ("flow", Cell::Id(flow)),
        ("name", Cell::Text(name.to_string())),
        (
            "goodput_bps",
            Cell::Real(Some(
                (to.delivered_bytes - from.delivered_bytes) as f64 * 8.0 / seconds(window_ns),
            )),
        ),
        (
            "delivered_bytes",
            Cell::Count(to.delivered_bytes - from.delivered_bytes),
        ),
        (
            "segments_sent",
            Cell::Count(to.segments_sent - from.segments_sent),
        ),
        (
            "retransmissions",
            Cell::Count(to.retransmissions - from.retransmissions),
        ),
        (
            "fast_retransmits",
            Cell::Count(to.fast_retransmits - from.fast_retransmits),
        ),
        ("timeouts", Cell::Count(to.timeouts - from.timeouts)),
        ("acks_sent", Cell::Count(to.acks_sent - from.acks_sent)),
        ("acks_dropped", Cell::Count(raw.acks_dropped)),
        ("rtt_samples", Cell::Count(rtt_samples)),
        (
            "rtt_mean_s",
            Cell::Real((rtt_samples > 0).then(|| seconds(to.rtt_sum - from.rtt_sum) / rtt_samples as f64)),
        ),
        ("transfers_completed", Cell::Count(times.len() as u64)),
        ("transfers_unfinished", Cell::Count(raw.unfinished)),
        ("fct_mean_s", Cell::Real(mean)),
        ("fct_p50_s", Cell::Real(quantile(0.5))),
        ("fct_p99_s", Cell::Real(quantile(0.99))),
        ("fct_max_s", Cell::Max(times.last().map(|&t| seconds(t)))),
    ]
}

/// Reduces a raw replication to result tables, merging its delay histograms into
/// `histograms` (one per flow). Used by the simulator and by `schedlab measure`, which builds
/// the raw replication from packets measured on a real network.
pub fn reduce(
    scenario: &Scenario,
    mut raw: RawReplication,
    wall_time_s: f64,
    histograms: &mut [DelayHistogram],
) -> ReplicationResult {
    let window = raw.window_end - raw.window_start;
    // The lateness columns appear on every flow and class row when any source has a
    // `lateness` table (empty where a flow has none), so that the tables stay rectangular.
    let metered = raw.lateness.iter().any(Option::is_some);
    // The discipline's own per-flow counters (DWCS's per stream), as `discipline_<name>`
    // columns on every flow row when any flow has them.
    let discipline_names: Vec<&'static str> = raw
        .flow_discipline_counters
        .iter()
        .find(|c| !c.is_empty())
        .map(|c| c.iter().map(|(name, _)| *name).collect())
        .unwrap_or_default();
    let mut flows = Vec::with_capacity(raw.flows.len());
    let mut throughputs = Vec::with_capacity(raw.flows.len());
    for (i, (source, acc)) in scenario.sources.iter().zip(&mut raw.flows).enumerate() {
        let mut row: Row = vec![
            ("flow", Cell::Id(source.flow as u64)),
            ("name", Cell::Text(source.name.clone())),
            ("class", Cell::Id(source.class as u64)),
        ];
        row.extend(traffic_row(acc, Some(raw.in_flight[i]), window));
        if metered {
            row.extend(lateness_cells(raw.lateness[i].as_ref()));
        }
        for &name in &discipline_names {
            let value = raw.flow_discipline_counters[i].iter().find(|(n, _)| *n == name);
            row.push((discipline_column(name), Cell::Real(value.map(|(_, v)| *v as f64))));
        }
        throughputs.push(acc.received_bytes as f64 * 8.0 / seconds(window));
        flows.push(row);
        // Not read again: moved, not copied, into the histogram merged over replications.
        histograms[i].merge_owned(std::mem::take(&mut acc.delay));
    }
    let classes = raw
        .classes
        .iter()
        .map(|(class, acc)| {
            let mut row: Row = vec![
                ("class", Cell::Id(*class as u64)),
                (
                    "class_name",
                    Cell::Text(scenario.class_name(*class).unwrap_or("").to_string()),
                ),
            ];
            row.extend(traffic_row(acc, None, window));
            if metered {
                let mut sum: Option<LatenessCounts> = None;
                for (source, counts) in scenario.sources.iter().zip(&raw.lateness) {
                    if let (true, Some(c)) = (source.class == *class, counts) {
                        sum.get_or_insert_with(LatenessCounts::default).merge(c);
                    }
                }
                row.extend(lateness_cells(sum.as_ref()));
            }
            row
        })
        .collect();
    let mut links = Vec::with_capacity(scenario.links.len());
    let mut link_series = Vec::with_capacity(scenario.links.len());
    let mut link_classes = Vec::new();
    let mut link_class_series = Vec::with_capacity(scenario.links.len());
    let mut meters = Vec::new();
    for (index, link) in scenario.links.iter().enumerate() {
        if let Some(conditioner) = &link.conditioner {
            let (meters_from, meters_to) = &raw.link_meter_window[index];
            for (m, profile) in conditioner.profiles.iter().enumerate() {
                let from = meters_from.get(m).copied().unwrap_or_default();
                let to = meters_to.get(m).copied().unwrap_or_default();
                meters.push(meter_row(index, &link.name, m, profile, &from, &to));
            }
        }
        let (from, to) = &raw.link_window[index];
        // A processing stage without a rate reports 0 bit/s (its time is per packet).
        let rate_bps = link.rate.map_or(0, |r| r.bits_per_second());
        let (class_from, class_to) = &raw.link_class_window[index];
        for (class, totals) in class_to.iter().enumerate() {
            let seen = totals.sent_packets + totals.dropped.iter().sum::<u64>() > 0;
            if seen {
                link_classes.push(link_class_row(
                    index,
                    &link.name,
                    class as u8,
                    scenario.class_name(class as u8),
                    class_from.get(class),
                    totals,
                    window,
                ));
            }
        }
        let mut previous_busy: &[u64] = &[];
        let mut previous_time = 0;
        let mut class_bins = Vec::with_capacity(raw.link_class_busy_series[index].len());
        for (busy, snapshot) in raw.link_class_busy_series[index]
            .iter()
            .zip(&raw.link_series[index])
        {
            let span = snapshot.time - previous_time;
            class_bins.push(
                busy.iter()
                    .enumerate()
                    .map(|(c, b)| {
                        let before = previous_busy.get(c).copied().unwrap_or(0);
                        if span > 0 {
                            (b - before) as f64 / span as f64
                        } else {
                            0.0
                        }
                    })
                    .collect(),
            );
            previous_busy = busy;
            previous_time = snapshot.time;
        }
        link_class_series.push(class_bins);
        let mut row = link_row(
            index,
            &link.name,
            rate_bps,
            from,
            to,
            Some(raw.link_max_backlog[index]),
        );
        row.push((
            "idle_while_backlogged",
            Cell::Count(raw.link_idle_while_backlogged[index]),
        ));
        row.push(("left_queued", Cell::Count(raw.link_left_queued[index])));
        let crossing: Vec<f64> = scenario
            .sources
            .iter()
            .zip(&throughputs)
            .filter(|(s, _)| s.path.contains(&index))
            .map(|(_, t)| *t)
            .collect();
        row.push(("jain_index", Cell::Real(jain_index(&crossing))));
        links.push(row);
        let mut previous = LinkSnapshot::default();
        let mut bins = Vec::with_capacity(raw.link_series[index].len());
        for snapshot in &raw.link_series[index] {
            bins.push(link_row(index, &link.name, rate_bps, &previous, snapshot, None));
            previous = *snapshot;
        }
        link_series.push(bins);
    }
    let mut tcp_flows = Vec::new();
    let mut tcp_series = Vec::new();
    for (source, raw_tcp) in scenario.sources.iter().zip(raw.tcp) {
        if let Some(mut raw_tcp) = raw_tcp {
            tcp_flows.push(tcp_row(source.flow as u64, &source.name, &raw_tcp, window));
            tcp_series.push(std::mem::take(&mut raw_tcp.series));
        }
    }
    ReplicationResult {
        tcp_flows,
        tcp_series,
        replication: raw.replication,
        stream_seeds: raw.stream_seeds,
        flows,
        classes,
        links,
        link_classes,
        meters,
        link_class_series,
        discipline_counters: raw.discipline_counters,
        flow_series: raw.flow_series,
        link_series,
        jain_index: jain_index(&throughputs),
        events: raw.events,
        packets: raw.packets,
        wall_time_s,
        window: (raw.window_start, raw.window_end),
        end_time: raw.end_time,
    }
}

/// Picks one table of a replication's results.
type TableOf = fn(&ReplicationResult) -> &Vec<Row>;

/// Everything a run produced.
#[derive(Clone, Debug)]
pub struct SimResults {
    /// The scenario that was run.
    pub scenario: Scenario,
    /// One entry per replication, in order.
    pub replications: Vec<ReplicationResult>,
    /// Wall-clock time of the whole run, seconds.
    pub wall_time_s: f64,
    /// Per flow (scenario order), the delay histogram merged over replications, ns (compact:
    /// [`DelayHistogram::to_hdr`] gives the `hdrhistogram` form).
    pub delay_histograms: Vec<DelayHistogram>,
}

/// Reduces rows with the same position over replications (see the module doc).
fn reduce_rows(rows: &[&Row], method: CiMethod) -> Map<String, Value> {
    let mut out = Map::new();
    let Some(first) = rows.first() else {
        return out;
    };
    for (column, (name, template)) in first.iter().enumerate() {
        let cells = rows.iter().filter_map(|r| r.get(column).map(|(_, c)| c));
        match template {
            Cell::Id(v) => {
                out.insert((*name).into(), json!(v));
            }
            Cell::Text(s) => {
                out.insert((*name).into(), json!(s));
            }
            Cell::Count(_) => {
                let total: u64 = cells.map(|c| if let Cell::Count(v) = c { *v } else { 0 }).sum();
                out.insert((*name).into(), json!(total));
            }
            Cell::Max(_) => {
                let max = cells
                    .filter_map(Cell::real)
                    .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
                out.insert((*name).into(), json!(max));
            }
            Cell::Real(_) => {
                let values: Vec<f64> = cells.filter_map(Cell::real).collect();
                let (mean, ci) = mean_ci(&values, method);
                out.insert((*name).into(), json!(mean));
                out.insert(ci_key(name), json!(ci));
            }
        }
    }
    out
}

fn toml_to_json(value: &toml::Value) -> Value {
    match value {
        toml::Value::String(s) => json!(s),
        toml::Value::Integer(i) => json!(i),
        toml::Value::Float(f) => json!(f),
        toml::Value::Boolean(b) => json!(b),
        toml::Value::Datetime(d) => json!(d.to_string()),
        toml::Value::Array(a) => Value::Array(a.iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => Value::Object(t.iter().map(|(k, v)| (k.clone(), toml_to_json(v))).collect()),
    }
}

/// The smallest rise of `delay_cdf.csv`'s CDF between two of its points (the last bucket is
/// always written).
pub const DELAY_CDF_STEP: f64 = 0.005;

impl SimResults {
    /// The number of replications.
    pub fn replication_count(&self) -> usize {
        self.replications.len()
    }

    fn method(&self) -> CiMethod {
        self.scenario.run.ci
    }

    /// The reduced row of every flow (as in `summary.json`'s `flows` array).
    pub fn flow_summaries(&self) -> Vec<Map<String, Value>> {
        self.reduce_table(|r| &r.flows)
    }

    /// The reduced row of every class seen in any replication, in the classes' order.
    pub fn class_summaries(&self) -> Vec<Map<String, Value>> {
        // Classes can differ between replications (a class may see no packet in one): match
        // them by class number.
        self.summaries_by_key(
            |r| &r.classes,
            |row| match cell(row, "class") {
                Some(Cell::Id(c)) => Some(*c),
                _ => None,
            },
        )
    }

    /// The reduced row of every (link, class) pair seen in any replication, matched by both.
    pub fn link_class_summaries(&self) -> Vec<Map<String, Value>> {
        self.summaries_by_key(
            |r| &r.link_classes,
            |row| match (cell(row, "link"), cell(row, "class")) {
                (Some(Cell::Id(l)), Some(Cell::Id(c))) => Some((*l, *c)),
                _ => None,
            },
        )
    }

    /// The reduced row of every key of `table`'s rows seen in any replication (rows without
    /// a key are left out), in the keys' order. The rows are grouped by a stable sort, so
    /// each key's rows stay in the replications' order, instead of a scan of every row for
    /// each key (with a class per flow, 1,000 flows over 3 links were 9 million key tests).
    fn summaries_by_key<K: Ord + Copy>(
        &self,
        table: impl Fn(&ReplicationResult) -> &Vec<Row>,
        key: impl Fn(&Row) -> Option<K>,
    ) -> Vec<Map<String, Value>> {
        let mut rows: Vec<(K, &Row)> = self
            .replications
            .iter()
            .flat_map(|r| table(r).iter())
            .filter_map(|row| key(row).map(|k| (k, row)))
            .collect();
        rows.sort_by_key(|&(k, _)| k);
        rows.chunk_by(|a, b| a.0 == b.0)
            .map(|group| {
                let rows: Vec<&Row> = group.iter().map(|&(_, row)| row).collect();
                reduce_rows(&rows, self.method())
            })
            .collect()
    }

    /// The reduced row of every link, with its discipline counters summed over replications.
    pub fn link_summaries(&self) -> Vec<Map<String, Value>> {
        let mut links = self.reduce_table(|r| &r.links);
        for (index, link) in links.iter_mut().enumerate() {
            let mut counters = Map::new();
            for replication in &self.replications {
                for (name, value) in &replication.discipline_counters[index] {
                    let total = counters.get(*name).and_then(Value::as_u64).unwrap_or(0) + value;
                    counters.insert((*name).into(), json!(total));
                }
            }
            link.insert("discipline_counters".into(), Value::Object(counters));
        }
        links
    }

    fn reduce_table(&self, table: impl Fn(&ReplicationResult) -> &Vec<Row>) -> Vec<Map<String, Value>> {
        let Some(first) = self.replications.first() else {
            return Vec::new();
        };
        (0..table(first).len())
            .map(|i| {
                let rows: Vec<&Row> = self.replications.iter().filter_map(|r| table(r).get(i)).collect();
                reduce_rows(&rows, self.method())
            })
            .collect()
    }

    /// The wall-clock facts of the run (`wall_time_s`, `events_per_s`, `packets_per_s`) and
    /// each replication's `wall_time_s`: they differ from one run to the next with the same seed, so they are kept
    /// out of `summary.json` and `replications.csv` (the Python front records them in the
    /// output folder's `run-info.json`).
    pub fn timing(&self) -> Value {
        let events: u64 = self.replications.iter().map(|r| r.events).sum();
        let packets: u64 = self.replications.iter().map(|r| r.packets).sum();
        let rate = |count: u64| {
            if self.wall_time_s > 0.0 {
                json!(count as f64 / self.wall_time_s)
            } else {
                Value::Null
            }
        };
        json!({
            "wall_time_s": self.wall_time_s,
            "events_per_s": rate(events),
            "packets_per_s": rate(packets),
            "replications": self.replications.iter().map(|r| json!({
                "replication": r.replication,
                "wall_time_s": r.wall_time_s,
            })).collect::<Vec<_>>(),
        })
    }

    /// The whole `summary.json` document: only what the scenario and seed determine (the
    /// wall-clock facts are in [`SimResults::timing`]). With many flows prefer
    /// [`SimResults::write_summary`], which writes the same text without building the per-flow
    /// rows as one tree.
    pub fn summary(&self) -> Value {
        let mut summary = self.summary_head();
        for (key, table) in Self::STREAMED_TABLES {
            if let Some(slot) = summary.get_mut(key) {
                *slot = Value::Array(self.reduce_table(table).into_iter().map(Value::Object).collect());
            }
        }
        summary
    }

    /// `summary.json` without its per-flow arrays (`flows`, and `tcp_flows` with TCP sources)
    /// and with `flow_count` (the number of flows) in their place: what a caller needs when the
    /// rows themselves are in the written file.
    pub fn summary_without_flows(&self) -> Value {
        let mut summary = self.summary_head();
        if let Some(object) = summary.as_object_mut() {
            for (key, _) in Self::STREAMED_TABLES {
                object.shift_remove(key);
            }
            object.insert("flow_count".into(), json!(self.scenario.sources.len()));
        }
        summary
    }

    /// The per-flow arrays of `summary.json` (one element per flow, so up to millions): the
    /// summary's head holds a `null` in their place, and they are reduced and written a row at
    /// a time.
    const STREAMED_TABLES: [(&'static str, TableOf); 2] =
        [("flows", |r| &r.flows), ("tcp_flows", |r| &r.tcp_flows)];

    /// `summary.json` with `null` in place of the per-flow arrays (see `STREAMED_TABLES`).
    fn summary_head(&self) -> Value {
        let run = &self.scenario.run;
        let events: u64 = self.replications.iter().map(|r| r.events).sum();
        let packets: u64 = self.replications.iter().map(|r| r.packets).sum();
        let length = match run.length {
            RunLength::Duration(d) => json!({ "duration_s": seconds(d) }),
            RunLength::Packets(p) => json!({ "packets": p }),
        };
        let jain: Vec<f64> = self.replications.iter().filter_map(|r| r.jain_index).collect();
        let (jain_mean, jain_ci) = mean_ci(&jain, run.ci);
        let mut summary = json!({
            "schedlab_version": env!("CARGO_PKG_VERSION"),
            "scenario": toml_to_json(&toml::Value::Table(self.scenario.table.clone())),
            "run": {
                "name": self.scenario.name,
                "length": length,
                "warmup_s": seconds(run.warmup),
                "seed": run.seed,
                "replications": run.replications,
                "replications_run": self.replications.iter().map(|r| r.replication).collect::<Vec<_>>(),
                "bin_s": seconds(run.bin),
                "ci": match run.ci { CiMethod::StudentT => "student_t", CiMethod::Normal => "normal" },
                "drain": run.drain,
                "stream_seeds": self.replications.iter().map(|r| json!({
                    "replication": r.replication,
                    "sources": r.stream_seeds,
                })).collect::<Vec<_>>(),
                "windows": self.replications.iter().map(|r| json!({
                    "replication": r.replication,
                    "start_s": seconds(r.window.0),
                    "end_s": seconds(r.window.1),
                    "last_event_s": seconds(r.end_time),
                })).collect::<Vec<_>>(),
                "events": events,
                "packets": packets,
            },
            "flows": Value::Null,
            "classes": self.class_summaries(),
            "links": self.link_summaries(),
            "link_classes": self.link_class_summaries(),
            "fairness": {
                "jain_index": jain_mean,
                "jain_index_ci95": jain_ci,
            },
        });
        // Present only with conditioners, so other summaries keep their shape.
        if self.scenario.links.iter().any(|l| l.conditioner.is_some()) {
            summary["meters"] = Value::Array(
                self.reduce_table(|r| &r.meters)
                    .into_iter()
                    .map(Value::Object)
                    .collect(),
            );
        }
        // Present only with TCP sources, so open-loop summaries keep their shape.
        if self.scenario.sources.iter().any(|s| s.transport.is_some()) {
            summary["tcp_flows"] = Value::Null;
        }
        summary
    }

    /// Writes `summary.json` (the text of [`SimResults::summary`], pretty-printed, with a final
    /// newline) to `out`, reducing and writing the per-flow rows one at a time: its memory does
    /// not grow with the number of flows.
    pub fn write_summary(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let document = StreamedSummary {
            results: self,
            head: self.summary_head(),
        };
        let mut serializer = serde_json::Serializer::pretty(&mut *out);
        serde::Serialize::serialize(&document, &mut serializer).map_err(std::io::Error::other)?;
        out.write_all(b"\n")
    }

    /// Writes `summary.json`, `flows.csv`, `classes.csv`, `links.csv`, `link_classes.csv`,
    /// `discipline_counters.csv`, `timeseries.csv` (per flow and bin), `link_timeseries.csv`,
    /// `link_class_timeseries.csv`,
    /// `delay_cdf.csv`, `replications.csv` (and `meters.csv` with conditioners, the TCP
    /// tables with TCP sources) into `out_dir` (created if missing); returns the
    /// paths written.
    pub fn write(&self, out_dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(out_dir)?;
        let mut written = Vec::new();
        // Each table is written as it is produced (no whole-file string: with a million flows
        // `timeseries.csv` alone is hundreds of MB).
        let mut put = |name: &str, fill: &dyn Fn(&mut dyn std::io::Write) -> std::io::Result<()>| {
            let path = out_dir.join(name);
            let mut file = std::io::BufWriter::with_capacity(1 << 16, std::fs::File::create(&path)?);
            fill(&mut file)?;
            file.flush()?;
            written.push(path);
            Ok::<(), std::io::Error>(())
        };
        put("summary.json", &|out| self.write_summary(out))?;
        put("flows.csv", &|out| self.table_csv(out, |r| &r.flows))?;
        put("classes.csv", &|out| self.table_csv(out, |r| &r.classes))?;
        put("links.csv", &|out| self.table_csv(out, |r| &r.links))?;
        put("link_classes.csv", &|out| {
            self.table_csv(out, |r| &r.link_classes)
        })?;
        put("discipline_counters.csv", &|out| self.counters_csv(out))?;
        put("timeseries.csv", &|out| self.flow_series_csv(out))?;
        put("link_timeseries.csv", &|out| self.link_series_csv(out))?;
        put("link_class_timeseries.csv", &|out| {
            self.link_class_series_csv(out)
        })?;
        put("delay_cdf.csv", &|out| self.delay_cdf_csv(out))?;
        put("replications.csv", &|out| self.replications_csv(out))?;
        if self.scenario.links.iter().any(|l| l.conditioner.is_some()) {
            put("meters.csv", &|out| self.table_csv(out, |r| &r.meters))?;
        }
        if self.scenario.sources.iter().any(|s| s.transport.is_some()) {
            put("tcp_flows.csv", &|out| self.table_csv(out, |r| &r.tcp_flows))?;
            put("tcp_timeseries.csv", &|out| self.tcp_series_csv(out))?;
        }
        Ok(written)
    }

    fn table_csv(
        &self,
        out: &mut dyn std::io::Write,
        table: impl Fn(&ReplicationResult) -> &Vec<Row>,
    ) -> std::io::Result<()> {
        let header = self
            .replications
            .iter()
            .flat_map(|r| table(r).first())
            .next()
            .map(|row| row.iter().map(|(n, _)| *n).collect::<Vec<_>>());
        if let Some(columns) = header {
            writeln!(out, "replication,{}", columns.join(","))?;
        }
        for replication in &self.replications {
            for row in table(replication) {
                let cells: Vec<String> = row.iter().map(|(_, c)| c.csv()).collect();
                writeln!(out, "{},{}", replication.replication, cells.join(","))?;
            }
        }
        Ok(())
    }

    fn tcp_series_csv(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        writeln!(out, "replication,flow,name,time_s,cwnd_bytes,ssthresh_bytes,srtt_s,rto_s,flight_bytes,delivered_bytes")?;
        let tcp_sources: Vec<_> = self
            .scenario
            .sources
            .iter()
            .filter(|s| s.transport.is_some())
            .collect();
        for replication in &self.replications {
            for (source, series) in tcp_sources.iter().zip(&replication.tcp_series) {
                for sample in series {
                    let ssthresh = if sample.ssthresh == u64::MAX {
                        String::new()
                    } else {
                        sample.ssthresh.to_string()
                    };
                    let srtt = if sample.srtt == 0 {
                        String::new()
                    } else {
                        seconds(sample.srtt).to_string()
                    };
                    writeln!(
                        out,
                        "{},{},{},{},{},{},{},{},{},{}",
                        replication.replication,
                        source.flow,
                        csv_text(&source.name),
                        seconds(sample.time),
                        sample.cwnd,
                        ssthresh,
                        srtt,
                        seconds(sample.rto),
                        sample.flight,
                        sample.delivered
                    )?;
                }
            }
        }
        Ok(())
    }

    fn counters_csv(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        writeln!(out, "replication,link,name,counter,value")?;
        for replication in &self.replications {
            for (index, counters) in replication.discipline_counters.iter().enumerate() {
                for (counter, value) in counters {
                    writeln!(
                        out,
                        "{},{},{},{},{}",
                        replication.replication,
                        index,
                        csv_text(&self.scenario.links[index].name),
                        counter,
                        value
                    )?;
                }
            }
        }
        Ok(())
    }

    fn flow_series_csv(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let bin = self.scenario.run.bin;
        writeln!(
            out,
            "replication,flow,name,time_s,bin_end_s,received_packets,received_bytes,throughput_bps"
        )?;
        for replication in &self.replications {
            let bins = replication
                .flow_series
                .iter()
                .map(|s| s.bytes.len())
                .max()
                .unwrap_or(0);
            for (source, series) in self.scenario.sources.iter().zip(&replication.flow_series) {
                for k in 0..bins {
                    let bytes = series.bytes.get(k).copied().unwrap_or(0);
                    let packets = series.packets.get(k).copied().unwrap_or(0);
                    writeln!(
                        out,
                        "{},{},{},{},{},{},{},{}",
                        replication.replication,
                        source.flow,
                        csv_text(&source.name),
                        seconds(k as u64 * bin),
                        seconds((k as u64 + 1) * bin),
                        packets,
                        bytes,
                        bytes as f64 * 8.0 / seconds(bin)
                    )?;
                }
            }
        }
        Ok(())
    }

    fn link_series_csv(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let bin = self.scenario.run.bin;
        let mut header = false;
        for replication in &self.replications {
            for bins in &replication.link_series {
                for (k, row) in bins.iter().enumerate() {
                    if !header {
                        let names: Vec<&str> = row.iter().map(|(n, _)| *n).collect();
                        writeln!(out, "replication,bin_start_s,bin_end_s,{}", names.join(","))?;
                        header = true;
                    }
                    let cells: Vec<String> = row.iter().map(|(_, c)| c.csv()).collect();
                    writeln!(
                        out,
                        "{},{},{},{}",
                        replication.replication,
                        seconds(k as u64 * bin),
                        seconds((k as u64 + 1) * bin),
                        cells.join(",")
                    )?;
                }
            }
        }
        if !header {
            writeln!(out, "replication,bin_start_s,bin_end_s,link,name,rate_bps,utilisation,throughput_bps,queue_mean_packets,queue_mean_bytes")?;
        }
        Ok(())
    }

    /// `link_class_timeseries.csv`: per replication, link, bin and class, the class's share of
    /// the bin's time at the link (GCU over time); classes that never used the link are left
    /// out.
    fn link_class_series_csv(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let bin = self.scenario.run.bin;
        writeln!(
            out,
            "replication,bin_start_s,bin_end_s,link,name,class,class_name,utilisation"
        )?;
        for replication in &self.replications {
            for (index, bins) in replication.link_class_series.iter().enumerate() {
                let name = csv_text(&self.scenario.links[index].name);
                for (k, shares) in bins.iter().enumerate() {
                    for (class, share) in shares.iter().enumerate() {
                        let class_name = self
                            .scenario
                            .class_name(class as u8)
                            .map(csv_text)
                            .unwrap_or_default();
                        writeln!(
                            out,
                            "{},{},{},{index},{name},{class},{class_name},{share}",
                            replication.replication,
                            seconds(k as u64 * bin),
                            seconds((k as u64 + 1) * bin),
                        )?;
                    }
                }
            }
        }
        Ok(())
    }

    fn delay_cdf_csv(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        // Each row is formatted into `row` (integers and `f64`s by hand, with the text
        // `writeln!` would give: `flow,name,seconds(value),cdf`) and each flow's rows are
        // written at once: with many flows this file has hundreds of thousands of rows, and the
        // formatting machinery was most of the cost of writing the results.
        fn cdf_row(rows: &mut Vec<u8>, prefix: &[u8], value: u64, cdf: f64) {
            rows.extend_from_slice(prefix);
            push_seconds(rows, value);
            rows.push(b',');
            push_display(rows, cdf);
            rows.push(b'\n');
        }
        writeln!(out, "flow,name,delay_s,cdf")?;
        let mut rows = Vec::new();
        let mut prefix = Vec::new();
        for (source, compact) in self.scenario.sources.iter().zip(&self.delay_histograms) {
            if compact.is_empty() {
                continue;
            }
            prefix.clear();
            prefix.extend_from_slice(itoa_u64(source.flow as u64).text());
            prefix.push(b',');
            prefix.extend_from_slice(csv_text(&source.name).as_bytes());
            prefix.push(b',');
            rows.clear();
            // From the histogram's buckets (3 significant digits): a point at a recorded
            // bucket's upper edge whenever the CDF has risen by at least `DELAY_CDF_STEP` since
            // the last point, and at the last bucket. The values are exact at every point; a
            // flow of fewer than 1/step packets keeps every recorded bucket, any flow at most
            // ~1/step points.
            compact.for_each_cdf_step(DELAY_CDF_STEP, |value, cdf| {
                cdf_row(&mut rows, &prefix, value, cdf);
                Ok::<(), std::io::Error>(())
            })?;
            out.write_all(&rows)?;
        }
        Ok(())
    }

    fn replications_csv(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        writeln!(
            out,
            "replication,window_start_s,window_end_s,last_event_s,events,packets,jain_index"
        )?;
        for r in &self.replications {
            writeln!(
                out,
                "{},{},{},{},{},{},{}",
                r.replication,
                seconds(r.window.0),
                seconds(r.window.1),
                seconds(r.end_time),
                r.events,
                r.packets,
                r.jain_index.map(|j| j.to_string()).unwrap_or_default()
            )?;
        }
        Ok(())
    }
}

/// A `summary.json` read without holding its `flows` array: the rest of the document, with
/// `flow_count` in place of `flows`, and the chosen per-flow keys that some row has as columns
/// (one value per flow, `null` where a flow's row lacks the key), in the order the rows name
/// them.
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryColumns {
    /// Everything but `flows`, plus `flow_count`.
    pub head: Map<String, Value>,
    /// Per chosen key, its value for every flow in order.
    pub flows: Map<String, Value>,
}

/// Reads `summary.json` from `reader` row by row (see [`SummaryColumns`]), keeping only the
/// keys in `columns` (every key when `None`): with a million flows the document is gigabytes
/// of text, while ten columns are tens of MB.
pub fn read_summary_columns(
    reader: impl std::io::Read,
    columns: Option<&[String]>,
) -> serde_json::Result<SummaryColumns> {
    use serde::de::DeserializeSeed;
    let mut deserializer =
        serde_json::Deserializer::from_reader(std::io::BufReader::with_capacity(1 << 16, reader));
    let read = SummaryVisitor {
        columns: FlowColumns { columns },
    }
    .deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(read)
}

struct SummaryVisitor<'c> {
    columns: FlowColumns<'c>,
}

impl<'de> serde::de::DeserializeSeed<'de> for SummaryVisitor<'_> {
    type Value = SummaryColumns;
    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<SummaryColumns, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for SummaryVisitor<'_> {
    type Value = SummaryColumns;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a summary.json object")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<SummaryColumns, A::Error> {
        let mut head = Map::new();
        let mut flows = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == "flows" {
                let columns = map.next_value_seed(self.columns)?;
                head.insert("flow_count".into(), json!(columns.0));
                flows = columns.1;
            } else {
                let value: Value = map.next_value()?;
                head.insert(key, value);
            }
        }
        Ok(SummaryColumns { head, flows })
    }
}

/// The `flows` array read one row at a time into columns: (row count, columns).
#[derive(Clone, Copy)]
struct FlowColumns<'c> {
    columns: Option<&'c [String]>,
}

impl<'de> serde::de::DeserializeSeed<'de> for FlowColumns<'_> {
    type Value = (usize, Map<String, Value>);
    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for FlowColumns<'_> {
    type Value = (usize, Map<String, Value>);
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of flow rows")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut columns: Map<String, Value> = Map::new();
        let mut rows = 0;
        while let Some(mut row) = seq.next_element::<Map<String, Value>>()? {
            for key in row.keys() {
                let kept = self.columns.is_none_or(|wanted| wanted.contains(key));
                if kept && !columns.contains_key(key) {
                    columns.insert(key.clone(), Value::Array(vec![Value::Null; rows]));
                }
            }
            for (name, column) in columns.iter_mut() {
                if let Value::Array(values) = column {
                    values.push(row.swap_remove(name).unwrap_or(Value::Null));
                }
            }
            rows += 1;
        }
        Ok((rows, columns))
    }
}

/// `summary.json` written from its head (see `SimResults::summary_head`), with the per-flow
/// arrays reduced and serialized one row at a time where the head holds `null`.
struct StreamedSummary<'r> {
    results: &'r SimResults,
    head: Value,
}

impl serde::Serialize for StreamedSummary<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Value::Object(head) = &self.head else {
            return self.head.serialize(serializer);
        };
        let mut map = serializer.serialize_map(Some(head.len()))?;
        for (key, value) in head {
            match SimResults::STREAMED_TABLES.iter().find(|(name, _)| name == key) {
                Some((_, table)) => map.serialize_entry(
                    key,
                    &StreamedRows {
                        results: self.results,
                        table: *table,
                    },
                )?,
                None => map.serialize_entry(key, value)?,
            }
        }
        map.end()
    }
}

/// One per-flow array of `summary.json`: row `i` reduced over the replications when it is
/// written.
struct StreamedRows<'r> {
    results: &'r SimResults,
    table: TableOf,
}

impl serde::Serialize for StreamedRows<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let replications = &self.results.replications;
        let count = replications.first().map_or(0, |r| (self.table)(r).len());
        let mut seq = serializer.serialize_seq(Some(count))?;
        for i in 0..count {
            let rows: Vec<&Row> = replications
                .iter()
                .filter_map(|r| (self.table)(r).get(i))
                .collect();
            seq.serialize_element(&reduce_rows(&rows, self.results.method()))?;
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pushed(push: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut out = Vec::new();
        push(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn hand_formatted_numbers_are_display_s() {
        for ns in [
            0,
            1,
            9,
            10,
            999_999_999,
            1_000_000_000,
            1_000_000_001,
            1_100_000_000,
            1_000_000_010,
            1_010_000_000,
            12_345_678_900,
            2_809_855,
            3_600_000_000_000,
        ]
        .into_iter()
        .chain([999_999_999_999_999, 1_000_000_000_000_000, u64::MAX])
        {
            assert_eq!(
                pushed(|o| push_seconds(o, ns)),
                seconds(ns).to_string(),
                "{ns} ns"
            );
        }
        for x in [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            0.1,
            1e-5,
            -1e-5,
            f64::from_bits(1e-5f64.to_bits() - 1),
            f64::from_bits(1e-5f64.to_bits() + 1),
            9.9e-6,
            1e-7,
            0.052551020408163264,
            1.0 / 3.0,
            65537.0 / 131072.0,
            1248408187281663.2,
            1e15,
            1e16,
            1.5e16,
            1e300,
            5e-324,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            assert_eq!(pushed(|o| push_display(o, x)), x.to_string(), "{x:e}");
        }
    }

    proptest! {
        #[test]
        fn seconds_as_display_gives_them(ns in any::<u64>(), small in 0u64..10_000_000_000_000) {
            prop_assert_eq!(pushed(|o| push_seconds(o, ns)), seconds(ns).to_string());
            prop_assert_eq!(pushed(|o| push_seconds(o, small)), seconds(small).to_string());
        }

        #[test]
        fn floats_as_display_gives_them(bits in any::<u64>(), part in 0u64..5_000_000, total in 1u64..5_000_000) {
            let x = f64::from_bits(bits);
            prop_assert_eq!(pushed(|o| push_display(o, x)), x.to_string());
            let cdf = part.min(total) as f64 / total as f64;
            prop_assert_eq!(pushed(|o| push_display(o, cdf)), cdf.to_string());
            // Counts over powers of two: exact dyadic values, where ties happen.
            let dyadic = part as f64 / (1u64 << (total % 40)) as f64;
            prop_assert_eq!(pushed(|o| push_display(o, dyadic)), dyadic.to_string());
        }
    }

    #[test]
    fn ci_keys_insert_before_the_unit() {
        assert_eq!(ci_key("delay_mean_s"), "delay_mean_ci95_s");
        assert_eq!(ci_key("throughput_bps"), "throughput_ci95_bps");
        assert_eq!(ci_key("loss_ratio"), "loss_ratio_ci95");
        assert_eq!(ci_key("queue_mean_packets"), "queue_mean_ci95_packets");
    }

    #[test]
    fn confidence_intervals_match_tables() {
        // Values 1..=5: mean 3, s = sqrt(2.5). t(0.975, 4) = 2.776445.
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        let (m, ci) = mean_ci(&v, CiMethod::StudentT);
        assert_eq!(m, Some(3.0));
        let expected = 2.776_445 * 2.5f64.sqrt() / 5f64.sqrt();
        assert!((ci.unwrap() - expected).abs() < 1e-5, "{ci:?}");
        let (_, ci) = mean_ci(&v, CiMethod::Normal);
        assert!((ci.unwrap() - 1.96 * 2.5f64.sqrt() / 5f64.sqrt()).abs() < 1e-12);
        assert_eq!(mean_ci(&[2.0], CiMethod::StudentT), (Some(2.0), None));
        assert_eq!(mean_ci(&[], CiMethod::StudentT), (None, None));
    }

    #[test]
    fn jain_index_bounds() {
        assert_eq!(jain_index(&[5.0, 5.0, 5.0]), Some(1.0));
        assert_eq!(jain_index(&[1.0, 0.0, 0.0, 0.0]), Some(0.25));
        assert_eq!(jain_index(&[0.0, 0.0]), None);
    }

    /// Class and (link, class) rows are matched by key over replications, whatever their
    /// order in each and whichever are missing from some: the summaries are those of each
    /// key's rows in the replications' order, keys ascending (the scan of every row for each
    /// key that `summaries_by_key` replaced).
    #[test]
    fn summaries_match_rows_by_key_across_replications() {
        let mut text = String::from(
            "[run]\nduration = \"2s\"\nseed = 3\nreplications = 3\n\
             [[link]]\nname = \"a\"\nrate = \"2Mbit\"\nscheduler = { kind = \"fifo\" }\n\
             [[link]]\nname = \"b\"\nrate = \"2Mbit\"\nscheduler = { kind = \"fifo\" }\n",
        );
        for flow in 0..4 {
            text += &format!(
                "[[source]]\nflow = {flow}\nclass = {}\npath = [\"a\", \"b\"]\n\
                 arrivals = {{ model = \"poisson\", rate_pps = 50.0 }}\n\
                 size = {{ dist = \"constant\", size = 500 }}\n",
                3 - flow % 3
            );
        }
        let mut results = crate::run_scenario_text(&text, std::path::Path::new(".")).unwrap();
        // Replication 1 without its first class row, replication 2's rows in reverse order.
        results.replications[1].classes.remove(0);
        results.replications[1].link_classes.remove(1);
        results.replications[2].classes.reverse();
        results.replications[2].link_classes.reverse();
        let scan = |table: &dyn Fn(&ReplicationResult) -> &Vec<Row>, keys: &[&str]| {
            let key = |row: &Row| -> Vec<u64> {
                keys.iter()
                    .map(|k| match cell(row, k) {
                        Some(Cell::Id(id)) => *id,
                        other => panic!("{k} is {other:?}"),
                    })
                    .collect()
            };
            let mut all: Vec<Vec<u64>> = results
                .replications
                .iter()
                .flat_map(|r| table(r).iter().map(key))
                .collect();
            all.sort();
            all.dedup();
            all.iter()
                .map(|k| {
                    let rows: Vec<&Row> = results
                        .replications
                        .iter()
                        .flat_map(|r| table(r).iter())
                        .filter(|row| &key(row) == k)
                        .collect();
                    reduce_rows(&rows, results.method())
                })
                .collect::<Vec<_>>()
        };
        let classes = results.class_summaries();
        assert_eq!(classes.len(), 3);
        assert_eq!(classes, scan(&|r| &r.classes, &["class"]));
        let link_classes = results.link_class_summaries();
        assert_eq!(link_classes.len(), 6);
        assert_eq!(link_classes, scan(&|r| &r.link_classes, &["link", "class"]));
    }
}
