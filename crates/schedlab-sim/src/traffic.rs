//! Traffic models: arrival processes, packet-size distributions and the (σ,ρ) token-bucket
//! shaper that can sit in front of any source.
//!
//! Every model draws from its own random stream (one `Xoshiro256PlusPlus` per replication and
//! source, see [`stream_seed`]), so a source's packets do not depend on how its events
//! interleave with other sources' events.
//!
//! Models (the `arrivals.model` key of a scenario source):
//! * `cbr` — constant bit/packet rate: packets every `1/rate_pps` seconds, or spaced by their
//!   own serialisation time at `rate` bit/s;
//! * `poisson` — exponential inter-arrival times with mean `1/rate_pps`;
//! * `on_off` — exponential on/off (Zhang's thesis §4.4.4): during On, packets at the peak
//!   rate; On and Off durations exponential with means `mean_on`, `mean_off`. With `on_packets`
//!   and `off` instead, the periodic burst source of Yokota et al. (paper 003 §5.2, fig. 15):
//!   every On period is exactly `on_packets` packets at the peak rate, every Off period exactly
//!   `off` long, starting with an On period at the source's `start` ([`ArrivalModel::PeriodicOnOff`]);
//! * `pareto_on_off` — the same with Pareto On and Off durations of shape `shape` (ns-2's
//!   Application/Traffic/Pareto, as used by Bakiras et al. §5);
//! * `mmpp` — Markov-modulated Poisson process: n states with Poisson rates `rates_pps` and
//!   transition rates `transition_rates` (per second);
//! * `mpeg` — the GOP model of Zhang's thesis §4.4.3 (after \[SK98\]);
//! * `trace` — replay of a trace file (times, sizes, optional class and deadline).
//!
//! Fragmentation ([`Fragmentation`], a source's `mtu`): every model can send its units —
//! MPEG frames, trace rows, any drawn size — as IP fragments. A unit of S bytes of data becomes
//! ⌈S / (mtu − header)⌉ packets released at the unit's time, each carrying `header` bytes of
//! headers and at most `mtu − header` bytes of the unit (the last one the rest), so a 16 kB
//! MPEG I frame over a 1500-byte MTU is a burst of 11 packets (Zhang's thesis §4.4.1: "the
//! frames travel as IP fragments").
//!
//! Choices where the sources are silent:
//! * On/off sources send their first packet at the start of each On period and then every
//!   peak interval while the period lasts, so an On period carries `ceil(D/I)` packets (at least
//!   one, as ns-2 does). Each source starts in On with probability `mean_on/(mean_on+mean_off)`
//!   and the first period's remaining length is drawn from the equilibrium (residual-life)
//!   distribution, so the process is stationary from its start.
//! * A "truncated exponential with mean m in [a, b]" (MPEG P and B frames) is drawn as
//!   `a + Exp(mean m − a)`, redrawn while above `b`: its mean is m (up to the mass above b),
//!   which reproduces the thesis's overall MPEG rate of ≈ 615 kbit/s; conditioning an
//!   exponential of mean m on [a, b] instead would give a mean near a + m and ≈ 690 kbit/s.
//! * Times are rounded to the nearest nanosecond; CBR times are computed as
//!   `start + round(k · period)`, so they do not drift.

use std::sync::Arc;

use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, Exp1};
use rand_xoshiro::Xoshiro256PlusPlus;
use schedlab_core::{Rate, TimeNs};

/// Nanoseconds per second as a float.
const NS: f64 = 1e9;

/// The random stream type used by every source.
pub type SourceRng = Xoshiro256PlusPlus;

/// SplitMix64's finaliser: a bijective 64-bit mixer.
fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce5_e4b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The 64-bit seed of the stream of `source` in `replication` of a run with base `seed`.
/// Distinct (replication, source) pairs get unrelated streams.
pub fn stream_seed(seed: u64, replication: u64, source: u64) -> u64 {
    mix64(mix64(mix64(seed) ^ replication) ^ source.wrapping_mul(0x2545_f491_4f6c_dd1d))
}

/// The random stream of `source` in `replication`.
pub fn source_rng(seed: u64, replication: u64, source: u64) -> SourceRng {
    Xoshiro256PlusPlus::seed_from_u64(stream_seed(seed, replication, source))
}

/// A draw from Exp(1).
#[inline]
fn exp1(rng: &mut SourceRng) -> f64 {
    Exp1.sample(rng)
}

/// A uniform draw in [0, 1).
#[inline]
fn unit(rng: &mut SourceRng) -> f64 {
    rng.random::<f64>()
}

/// Fractional nanoseconds to whole nanoseconds, rounded to the nearest, saturating.
#[inline]
fn ns(nanoseconds: f64) -> TimeNs {
    // `as` truncates and saturates (negative values and NaN give 0); adding 0.5 first rounds
    // non-negative values (cheaper than `f64::round`, which is a libm call).
    let rounded = nanoseconds + 0.5;
    // The saturating `as u64` is 15 instructions on x86-64 (a second conversion for values
    // from 2⁶³ on, then the two saturations), two a packet of a Poisson source. A value in
    // [0, 2⁶³) (not a NaN) is truncated by the signed conversion alone, one instruction; every
    // other value takes `as`. (Testing the bits as an integer instead, the same instructions
    // but one, was 1.02 of this at 10 flows in alternating runs.)
    if (0.0..TWO_TO_63).contains(&rounded) {
        // SAFETY: `rounded` is finite, at least 0 and below 2⁶³, so its truncation is an `i64`.
        unsafe { rounded.to_int_unchecked::<i64>() as TimeNs }
    } else {
        saturating_ns(rounded)
    }
}

/// `rounded as TimeNs`, out of line: inlined, the compiler computes it on every call and
/// selects (the branch of [`ns`] is never taken on a run's times).
#[cold]
#[inline(never)]
fn saturating_ns(rounded: f64) -> TimeNs {
    rounded as TimeNs
}

/// 2⁶³, the first `f64` whose truncation is not an `i64`.
const TWO_TO_63: f64 = 9_223_372_036_854_775_808.0;

/// A packet-size distribution, in bytes (before the optional `header`).
#[derive(Clone, Debug, PartialEq)]
pub enum SizeShape {
    /// Every packet has this size.
    Constant(u32),
    /// Uniform integers in `min..=max`.
    Uniform {
        /// Smallest size.
        min: u32,
        /// Largest size.
        max: u32,
    },
    /// `min + Exp(mean − min)`, rounded, redrawn while above `max`.
    TruncatedExponential {
        /// Mean in bytes.
        mean: f64,
        /// Smallest size.
        min: u32,
        /// Largest size.
        max: u32,
    },
    /// Sizes drawn from a table of values with cumulative weights (normalised to 1).
    Empirical {
        /// The sizes.
        values: Vec<u32>,
        /// Cumulative probabilities, last = 1.
        cumulative: Vec<f64>,
    },
}

/// A packet-size distribution plus a constant header added to every packet
/// (Zhang's best-effort packets are "40 + U\[40,700\]" bytes).
#[derive(Clone, Debug, PartialEq)]
pub struct SizeDist {
    /// The random part.
    pub shape: SizeShape,
    /// Bytes added to every draw.
    pub header: u32,
}

impl SizeDist {
    /// A constant size.
    pub fn constant(size: u32) -> SizeDist {
        SizeDist {
            shape: SizeShape::Constant(size),
            header: 0,
        }
    }

    /// The thesis's best-effort sizes: 40 bytes of header plus U\[40,700\] bytes of data.
    pub fn thesis_best_effort() -> SizeDist {
        SizeDist {
            shape: SizeShape::Uniform { min: 40, max: 700 },
            header: 40,
        }
    }

    /// One size in bytes.
    #[inline(always)]
    pub fn sample(&self, rng: &mut SourceRng) -> u32 {
        let body = match &self.shape {
            SizeShape::Constant(size) => *size,
            SizeShape::Uniform { min, max } => rng.random_range(*min..=*max),
            SizeShape::TruncatedExponential { mean, min, max } => {
                truncated_exponential(rng, *mean, *min, *max)
            }
            SizeShape::Empirical { values, cumulative } => {
                let u = unit(rng);
                let index = cumulative.partition_point(|&c| c <= u).min(values.len() - 1);
                values[index]
            }
        };
        body.saturating_add(self.header)
    }

    /// The largest size the distribution can produce.
    pub fn max(&self) -> u64 {
        let body = match &self.shape {
            SizeShape::Constant(size) => *size,
            SizeShape::Uniform { max, .. } | SizeShape::TruncatedExponential { max, .. } => *max,
            SizeShape::Empirical { values, .. } => values.iter().copied().max().unwrap_or(0),
        };
        body as u64 + self.header as u64
    }

    /// The mean size (exact for constant, uniform and empirical; the nominal mean for the
    /// truncated exponential).
    pub fn mean(&self) -> f64 {
        let body = match &self.shape {
            SizeShape::Constant(size) => *size as f64,
            SizeShape::Uniform { min, max } => (*min as f64 + *max as f64) / 2.0,
            SizeShape::TruncatedExponential { mean, .. } => *mean,
            SizeShape::Empirical { values, cumulative } => {
                let mut previous = 0.0;
                let mut sum = 0.0;
                for (v, c) in values.iter().zip(cumulative) {
                    sum += *v as f64 * (c - previous);
                    previous = *c;
                }
                sum
            }
        };
        body + self.header as f64
    }
}

/// `min + Exp(mean − min)`, rounded to bytes, redrawn while above `max`.
#[inline(always)]
fn truncated_exponential(rng: &mut SourceRng, mean: f64, min: u32, max: u32) -> u32 {
    let scale = mean - min as f64;
    if scale <= 0.0 {
        return min;
    }
    loop {
        // floor(x + 0.5) = round(x) for x ≥ 0; round(x) ≤ max  ⇔  x + 0.5 < max + 1.
        let shifted = min as f64 + scale * exp1(rng) + 0.5;
        if shifted < max as f64 + 1.0 {
            return shifted as u32;
        }
    }
}

/// How packets are spaced during a constant-rate period (CBR, the On state of on/off).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Spacing {
    /// A fixed number of packets per second.
    PacketsPerSecond(f64),
    /// Each packet is followed by a gap equal to its own serialisation time at this rate.
    BitRate(Rate),
}

impl Spacing {
    /// The gap after a packet of `size` bytes, in (fractional) nanoseconds.
    #[inline]
    fn gap_ns(self, size: u32) -> f64 {
        match self {
            Spacing::PacketsPerSecond(pps) => NS / pps,
            Spacing::BitRate(rate) => rate.transmission_time(size as u64) as f64,
        }
    }
}

/// The distribution of On or Off period lengths.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PeriodDist {
    /// Exponential with this mean, in seconds.
    Exponential {
        /// Mean, seconds.
        mean: f64,
    },
    /// Pareto with shape α > 1 and this mean (scale x_m = mean·(α−1)/α), in seconds.
    Pareto {
        /// Shape α.
        shape: f64,
        /// Mean, seconds.
        mean: f64,
    },
}

impl PeriodDist {
    /// The mean, seconds.
    pub fn mean(self) -> f64 {
        match self {
            PeriodDist::Exponential { mean } | PeriodDist::Pareto { mean, .. } => mean,
        }
    }

    /// A fresh period length, seconds.
    #[inline]
    fn sample(self, rng: &mut SourceRng) -> f64 {
        match self {
            PeriodDist::Exponential { mean } => mean * exp1(rng),
            PeriodDist::Pareto { shape, mean } => {
                let scale = mean * (shape - 1.0) / shape;
                // Inverse CDF: x_m · U^(−1/α), with U in (0, 1].
                scale * (1.0 - unit(rng)).powf(-1.0 / shape)
            }
        }
    }

    /// A residual period length (the equilibrium distribution, density (1−F(x))/mean), for
    /// the period in progress when the source starts.
    fn sample_residual(self, rng: &mut SourceRng) -> f64 {
        match self {
            PeriodDist::Exponential { .. } => self.sample(rng),
            PeriodDist::Pareto { shape, mean } => {
                let scale = mean * (shape - 1.0) / shape;
                let u = unit(rng);
                // G(y) = y/mean for y <= x_m; above, 1 − (x_m/mean)/(α−1)·(x_m/y)^(α−1)·…
                if u * mean <= scale {
                    u * mean
                } else {
                    let base = 1.0 - (u * mean - scale) * (shape - 1.0) / scale;
                    scale * base.max(f64::MIN_POSITIVE).powf(-1.0 / (shape - 1.0))
                }
            }
        }
    }
}

/// Parameters of the MPEG group-of-pictures model (Zhang's thesis §4.4.3, after \[SK98\]).
#[derive(Clone, Debug, PartialEq)]
pub struct MpegModel {
    /// Frame types of one GOP, e.g. `IPBBPBBPBB`.
    pub gop: Vec<FrameType>,
    /// GOPs per second (3 in the thesis).
    pub gop_per_second: f64,
    /// Size of I frames.
    pub i_frame: SizeDist,
    /// Size of P frames.
    pub p_frame: SizeDist,
    /// Size of B frames.
    pub b_frame: SizeDist,
}

/// An MPEG frame type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameType {
    /// Intra-coded.
    I,
    /// Predicted.
    P,
    /// Bidirectional.
    B,
}

impl MpegModel {
    /// The thesis's model: IPBBPBBPBB at 3 GOP/s; I ~ U\[15000,17000\]; P truncated exponential
    /// mean 2100 in \[512,17000\]; B truncated exponential mean 550 in \[256,17000\].
    pub fn thesis() -> MpegModel {
        use FrameType::*;
        MpegModel {
            gop: vec![I, P, B, B, P, B, B, P, B, B],
            gop_per_second: 3.0,
            i_frame: SizeDist {
                shape: SizeShape::Uniform {
                    min: 15_000,
                    max: 17_000,
                },
                header: 0,
            },
            p_frame: SizeDist {
                shape: SizeShape::TruncatedExponential {
                    mean: 2100.0,
                    min: 512,
                    max: 17_000,
                },
                header: 0,
            },
            b_frame: SizeDist {
                shape: SizeShape::TruncatedExponential {
                    mean: 550.0,
                    min: 256,
                    max: 17_000,
                },
                header: 0,
            },
        }
    }

    /// Mean bit rate, bit/s.
    pub fn mean_rate(&self) -> f64 {
        let bytes: f64 = self.gop.iter().map(|f| self.size(*f).mean()).sum();
        bytes * 8.0 * self.gop_per_second
    }

    /// The size distribution of a frame type.
    pub fn size(&self, frame: FrameType) -> &SizeDist {
        match frame {
            FrameType::I => &self.i_frame,
            FrameType::P => &self.p_frame,
            FrameType::B => &self.b_frame,
        }
    }
}

/// One packet of a replayed trace, relative to the source's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TracePacket {
    /// Time after the source's start, ns.
    pub time: TimeNs,
    /// Size in bytes.
    pub size: u32,
    /// Traffic class.
    pub class: u8,
    /// Deadline relative to the packet's time, ns.
    pub deadline: Option<TimeNs>,
}

/// An arrival process (the `arrivals` table of a source).
#[derive(Clone, Debug, PartialEq)]
pub enum ArrivalModel {
    /// Constant rate.
    Cbr {
        /// Spacing of packets.
        spacing: Spacing,
    },
    /// Poisson arrivals.
    Poisson {
        /// Mean packets per second.
        rate_pps: f64,
    },
    /// On/off with exponential or Pareto periods.
    OnOff {
        /// On period lengths.
        on: PeriodDist,
        /// Off period lengths.
        off: PeriodDist,
        /// Packet spacing during On.
        spacing: Spacing,
    },
    /// On/off with a fixed number of packets per On period and a fixed Off period (paper 003
    /// §5.2, fig. 15): packets at `t0 + k·gap` for k < `on_packets`, the On period ends one gap
    /// after its last packet, then `off_ns` of silence, then the next On period. The source
    /// starts with an On period at its start (no random phase: shift it with the source's
    /// `start`).
    PeriodicOnOff {
        /// Packets per On period (≥ 1).
        on_packets: u32,
        /// Length of every Off period, ns.
        off_ns: TimeNs,
        /// Packet spacing during On.
        spacing: Spacing,
    },
    /// Markov-modulated Poisson process.
    Mmpp {
        /// Poisson rate in each state, packets/s.
        rates_pps: Vec<f64>,
        /// `transition_rates[i][j]`: rate of moving from state i to j, per second (diagonal 0).
        transition_rates: Vec<Vec<f64>>,
        /// Starting state; `None` draws it from the stationary distribution.
        initial_state: Option<usize>,
    },
    /// MPEG frames (one packet per frame; sizes come from the model).
    Mpeg(MpegModel),
    /// Trace replay (sizes, classes and deadlines come from the trace).
    Trace {
        /// The packets, sorted by time.
        packets: Arc<Vec<TracePacket>>,
    },
    /// A bulk application behind a transport (TCP): always has data, so it emits nothing on
    /// its own; the transport decides when segments leave.
    Bulk,
}

impl ArrivalModel {
    /// Whether the model draws sizes from the source's `size` distribution (false for MPEG and
    /// trace replay, which carry their own sizes).
    pub fn needs_size(&self) -> bool {
        !matches!(
            self,
            ArrivalModel::Mpeg(_) | ArrivalModel::Trace { .. } | ArrivalModel::Bulk
        )
    }

    /// The largest packet the model itself produces (MPEG, trace), if it sets sizes.
    pub fn own_max_size(&self) -> Option<u64> {
        match self {
            ArrivalModel::Mpeg(m) => Some(m.i_frame.max().max(m.p_frame.max()).max(m.b_frame.max())),
            ArrivalModel::Trace { packets } => Some(packets.iter().map(|p| p.size as u64).max().unwrap_or(0)),
            _ => None,
        }
    }
}

/// The stationary distribution π of a continuous-time Markov chain with off-diagonal rates
/// `q[i][j]` (πQ = 0, Σπ = 1), by Gaussian elimination with partial pivoting. `None` when the
/// chain has no unique stationary distribution.
pub fn stationary_distribution(q: &[Vec<f64>]) -> Option<Vec<f64>> {
    let n = q.len();
    if n == 0 {
        return None;
    }
    // Solve Qᵀπ = 0 with the last equation replaced by Σπ = 1.
    let mut a = vec![vec![0.0; n + 1]; n];
    for (i, row) in a.iter_mut().enumerate() {
        for (j, cell) in row.iter_mut().take(n).enumerate() {
            // (Qᵀ)[i][j] = Q[j][i]
            *cell = if i == j {
                -q[i]
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| *k != i)
                    .map(|(_, r)| r)
                    .sum::<f64>()
            } else {
                q[j][i]
            };
        }
    }
    for cell in a[n - 1].iter_mut() {
        *cell = 1.0;
    }
    for col in 0..n {
        let pivot = (col..n).max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))?;
        if a[pivot][col].abs() < 1e-12 {
            return None;
        }
        a.swap(col, pivot);
        let pivot_row = a[col].clone();
        for (row, cells) in a.iter_mut().enumerate() {
            if row != col {
                let factor = cells[col] / pivot_row[col];
                if factor != 0.0 {
                    for (cell, p) in cells.iter_mut().zip(&pivot_row).skip(col) {
                        *cell -= factor * p;
                    }
                }
            }
        }
    }
    let pi: Vec<f64> = (0..n).map(|i| a[i][n] / a[i][i]).collect();
    pi.iter().all(|p| p.is_finite() && *p >= -1e-9).then_some(pi)
}

/// One packet produced by a generator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Emission {
    /// Time the packet is produced, ns.
    pub time: TimeNs,
    /// Size in bytes.
    pub size: u32,
    /// Class from the model (trace replay), if any.
    pub class: Option<u8>,
    /// Relative deadline from the model (trace replay), if any.
    pub deadline: Option<TimeNs>,
}

#[derive(Clone, Debug)]
enum State {
    Cbr {
        spacing: Spacing,
        /// Packets sent so far (for drift-free CBR with a packet rate).
        count: u64,
        /// Time of the next packet, fractional ns since start (bit-rate spacing).
        next: f64,
    },
    Poisson {
        mean_gap_ns: f64,
        next: f64,
    },
    OnOff {
        on: PeriodDist,
        off: PeriodDist,
        spacing: Spacing,
        /// Time of the next packet (fractional ns since start).
        next: f64,
        /// End of the current On period.
        on_end: f64,
    },
    PeriodicOnOff {
        on_packets: u32,
        off_ns: f64,
        spacing: Spacing,
        /// Time of the next packet (fractional ns since start).
        next: f64,
        /// Packets of the current On period sent so far.
        sent_in_on: u32,
    },
    Mmpp {
        /// Per state: total outgoing rate + arrival rate (per ns), and cumulative transition
        /// probabilities to each state.
        total: Vec<f64>,
        jump: Vec<Vec<f64>>,
        state: usize,
        clock: f64,
    },
    Mpeg {
        model: Box<MpegModel>,
        frame_ns: f64,
        count: u64,
    },
    Trace {
        packets: Arc<Vec<TracePacket>>,
        index: usize,
    },
    /// No emissions (bulk applications).
    Silent,
}

/// Fragmentation of a source's units (frames) into MTU-sized packets, as IP fragments them.
///
/// Choices where the thesis is silent: every fragment carries the same `header` (default 28
/// bytes, IPv4 + UDP), where real IP repeats only the 20-byte IP header (8 bytes per extra
/// fragment); all fragments of a unit are released at the unit's time (the sender's access
/// link then serialises them); a unit of 0 bytes is one header-only packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fragmentation {
    /// Largest packet on the wire (bytes), headers included.
    pub mtu: u32,
    /// Header bytes carried by every fragment (< `mtu`).
    pub header: u32,
}

impl Fragmentation {
    /// Header bytes of every fragment when a source gives none: IPv4 (20) + UDP (8).
    pub const DEFAULT_HEADER: u32 = 28;

    /// Bytes of the unit one fragment carries at most.
    pub fn payload(&self) -> u32 {
        self.mtu - self.header
    }

    /// The packets (count, size of the last) a unit of `size` bytes becomes.
    pub fn packets(&self, size: u32) -> (u32, u32) {
        let count = size.div_ceil(self.payload()).max(1);
        (count, size - (count - 1) * self.payload() + self.header)
    }

    /// The largest packet a source whose units are at most `largest_unit` bytes sends.
    pub fn max_packet(&self, largest_unit: u64) -> u64 {
        (largest_unit + self.header as u64).min(self.mtu as u64)
    }
}

/// Produces a source's packets in time order (before shaping), from its own random stream.
///
/// What every packet reads comes first, in [`Generator::HOT_BYTES`] bytes (`repr(C)`; two
/// cache lines where the generator starts on a line boundary, as in the engine's source
/// state): the size distribution and the fragmentation in the first, the random stream, the
/// start and the first 24 bytes of the model's state in the second (all a Poisson source's
/// state reads; the other models' states are longer). The rest of the state and the unit
/// being fragmented follow.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct Generator {
    size: SizeDraw,
    /// The fragmentation (an `mtu` of 0: none; 8 bytes where an `Option` takes 12).
    fragmentation: Fragmentation,
    rng: SourceRng,
    start: TimeNs,
    state: State,
    unit_left: u32,
    /// The unit being fragmented (its time, class, deadline) and its bytes not yet sent.
    unit: Emission,
}

// The layout the comment above describes.
const _: () = {
    assert!(std::mem::offset_of!(Generator, rng) == 64);
    assert!(std::mem::offset_of!(Generator, state) + 24 <= Generator::HOT_BYTES);
};

/// How a [`Generator`] draws its sizes: a size known in advance (no size distribution: 1000
/// bytes; a constant distribution: its size plus its header) is read as it is, without the
/// two dispatches (on the distribution's presence and on its shape) of a draw. (It takes
/// the 56 bytes of the `Option<SizeDist>` it replaces.)
#[derive(Clone, Debug, PartialEq)]
enum SizeDraw {
    /// Every packet has this size (bytes, header included).
    Fixed(u32),
    /// Sizes drawn from this distribution.
    Random(SizeDist),
}

impl SizeDraw {
    /// `size`, or 1000 bytes if it is missing.
    fn new(size: Option<SizeDist>) -> SizeDraw {
        match size {
            None => SizeDraw::Fixed(1000),
            Some(SizeDist {
                shape: SizeShape::Constant(size),
                header,
            }) => SizeDraw::Fixed(size.saturating_add(header)),
            Some(dist) => SizeDraw::Random(dist),
        }
    }

    /// One size in bytes: [`SizeDist::sample`]'s (a constant distribution draws no random
    /// number either).
    #[inline(always)]
    fn sample(&self, rng: &mut SourceRng) -> u32 {
        match self {
            SizeDraw::Fixed(size) => *size,
            SizeDraw::Random(dist) => SizeDraw::draw(dist, rng),
        }
    }

    /// A draw from `dist` (out of line: the fixed sizes' path stays small in the engine's
    /// loop).
    #[inline(never)]
    fn draw(dist: &SizeDist, rng: &mut SourceRng) -> u32 {
        dist.sample(rng)
    }
}

const _: () = assert!(std::mem::size_of::<SizeDraw>() == std::mem::size_of::<Option<SizeDist>>());

impl Generator {
    /// Bytes from the start that drawing a Poisson source's packet reads (its size
    /// distribution, fragmentation, random stream, start and state).
    pub const HOT_BYTES: usize = 128;

    /// "No fragmentation" (`mtu` 0: a valid fragmentation has `mtu > header`).
    const WHOLE: Fragmentation = Fragmentation { mtu: 0, header: 0 };

    /// A generator of `model` starting at `start` (ns), with `size` for models that need it
    /// (a constant 1000-byte size is used if it is missing).
    pub fn new(model: &ArrivalModel, size: Option<SizeDist>, start: TimeNs, mut rng: SourceRng) -> Generator {
        let state = match model {
            ArrivalModel::Cbr { spacing } => State::Cbr {
                spacing: *spacing,
                count: 0,
                next: 0.0,
            },
            ArrivalModel::Poisson { rate_pps } => {
                let mean_gap_ns = NS / rate_pps;
                // The first arrival is one exponential gap after the start (Poisson process).
                let next = mean_gap_ns * exp1(&mut rng);
                State::Poisson { mean_gap_ns, next }
            }
            ArrivalModel::OnOff { on, off, spacing } => {
                let p_on = on.mean() / (on.mean() + off.mean());
                let (next, on_end) = if unit(&mut rng) < p_on {
                    (0.0, on.sample_residual(&mut rng) * NS)
                } else {
                    let start_on = off.sample_residual(&mut rng) * NS;
                    (start_on, start_on + on.sample(&mut rng) * NS)
                };
                State::OnOff {
                    on: *on,
                    off: *off,
                    spacing: *spacing,
                    next,
                    on_end,
                }
            }
            ArrivalModel::PeriodicOnOff {
                on_packets,
                off_ns,
                spacing,
            } => State::PeriodicOnOff {
                on_packets: *on_packets,
                off_ns: *off_ns as f64,
                spacing: *spacing,
                next: 0.0,
                sent_in_on: 0,
            },
            ArrivalModel::Mmpp {
                rates_pps,
                transition_rates,
                initial_state,
            } => {
                let n = rates_pps.len();
                let mut total = Vec::with_capacity(n);
                let mut jump = Vec::with_capacity(n);
                for i in 0..n {
                    let out: f64 = (0..n).filter(|&j| j != i).map(|j| transition_rates[i][j]).sum();
                    let all = out + rates_pps[i];
                    total.push(all / NS);
                    // Cumulative: index 0..n are "move to state j", probability mass of the
                    // arrival is the rest.
                    let mut cumulative = Vec::with_capacity(n);
                    let mut acc = 0.0;
                    for (j, rate) in transition_rates[i].iter().enumerate() {
                        if j != i && all > 0.0 {
                            acc += rate / all;
                        }
                        cumulative.push(acc);
                    }
                    jump.push(cumulative);
                }
                let state = match initial_state {
                    Some(s) => *s,
                    None => {
                        let pi = stationary_distribution(transition_rates)
                            .unwrap_or_else(|| vec![1.0 / n as f64; n]);
                        let u = unit(&mut rng);
                        let mut acc = 0.0;
                        let mut chosen = n - 1;
                        for (i, p) in pi.iter().enumerate() {
                            acc += p;
                            if u < acc {
                                chosen = i;
                                break;
                            }
                        }
                        chosen
                    }
                };
                State::Mmpp {
                    total,
                    jump,
                    state,
                    clock: 0.0,
                }
            }
            ArrivalModel::Mpeg(model) => State::Mpeg {
                frame_ns: NS / (model.gop_per_second * model.gop.len() as f64),
                model: Box::new(model.clone()),
                count: 0,
            },
            ArrivalModel::Trace { packets } => State::Trace {
                packets: packets.clone(),
                index: 0,
            },
            ArrivalModel::Bulk => State::Silent,
        };
        Generator {
            rng,
            state,
            size: SizeDraw::new(size),
            start,
            fragmentation: Generator::WHOLE,
            unit: Emission {
                time: 0,
                size: 0,
                class: None,
                deadline: None,
            },
            unit_left: 0,
        }
    }

    /// The same generator, its units cut into MTU-sized packets (`None`: sent whole).
    pub fn with_fragmentation(mut self, fragmentation: Option<Fragmentation>) -> Generator {
        debug_assert!(fragmentation.is_none_or(|f| f.header < f.mtu), "mtu > header");
        self.fragmentation = fragmentation.unwrap_or(Generator::WHOLE);
        self
    }

    /// The next packet, or `None` when the model has no more (end of a trace, an MMPP stuck in
    /// a silent absorbing state). With fragmentation, the fragments of one unit in order, all
    /// at the unit's time.
    #[inline(always)]
    pub fn next_packet(&mut self) -> Option<Emission> {
        let fragmentation = self.fragmentation;
        if fragmentation.mtu == 0 {
            return self.next_unit();
        }
        if self.unit_left == 0 {
            self.unit = self.next_unit()?;
            self.unit_left = self.unit.size;
        }
        let chunk = self.unit_left.min(fragmentation.payload());
        self.unit_left -= chunk;
        Some(Emission {
            size: chunk + fragmentation.header,
            ..self.unit
        })
    }

    /// The model's next unit (a packet, or a frame to fragment).
    #[inline(always)]
    fn next_unit(&mut self) -> Option<Emission> {
        let start = self.start;
        let at = |offset: f64| start.saturating_add(ns(offset));
        // Models that take sizes from the source's distribution draw the size first, then
        // their times (one `match` on the model for both).
        let size_draw = &self.size;
        let draw_size = |rng: &mut SourceRng| size_draw.sample(rng);
        let emission = |time: TimeNs, size: u32| Emission {
            time,
            size,
            class: None,
            deadline: None,
        };
        let rng = &mut self.rng;
        match &mut self.state {
            State::Cbr { spacing, count, next } => {
                let size = draw_size(rng);
                let time = match *spacing {
                    Spacing::PacketsPerSecond(pps) => at(*count as f64 * NS / pps),
                    Spacing::BitRate(_) => at(*next),
                };
                *count += 1;
                *next += spacing.gap_ns(size);
                Some(emission(time, size))
            }
            State::Poisson { mean_gap_ns, next } => {
                let size = draw_size(rng);
                let time = at(*next);
                *next += *mean_gap_ns * exp1(rng);
                Some(emission(time, size))
            }
            State::OnOff {
                on,
                off,
                spacing,
                next,
                on_end,
            } => {
                let size = draw_size(rng);
                let time = at(*next);
                let following = *next + spacing.gap_ns(size);
                if following < *on_end {
                    *next = following;
                } else {
                    let start_on = *on_end + off.sample(rng) * NS;
                    *on_end = start_on + on.sample(rng) * NS;
                    *next = start_on;
                }
                Some(emission(time, size))
            }
            State::PeriodicOnOff {
                on_packets,
                off_ns,
                spacing,
                next,
                sent_in_on,
            } => {
                let size = draw_size(rng);
                let time = at(*next);
                *next += spacing.gap_ns(size);
                *sent_in_on += 1;
                if *sent_in_on == *on_packets {
                    *sent_in_on = 0;
                    *next += *off_ns;
                }
                Some(emission(time, size))
            }
            State::Mmpp {
                total,
                jump,
                state,
                clock,
            } => {
                let size = draw_size(rng);
                loop {
                    let rate = total[*state];
                    if rate <= 0.0 {
                        return None;
                    }
                    *clock += exp1(rng) / rate;
                    let u = unit(rng);
                    let cumulative = &jump[*state];
                    let moves = *cumulative.last().unwrap_or(&0.0);
                    if u < moves {
                        *state = cumulative.partition_point(|&c| c <= u);
                        continue;
                    }
                    return Some(emission(at(*clock), size));
                }
            }
            State::Mpeg {
                model,
                frame_ns,
                count,
            } => {
                let frame = model.gop[(*count % model.gop.len() as u64) as usize];
                let time = at(*count as f64 * *frame_ns);
                *count += 1;
                let size = model.size(frame).sample(rng);
                Some(emission(time, size))
            }
            State::Trace { packets, index } => {
                let packet = packets.get(*index)?;
                *index += 1;
                Some(Emission {
                    time: start.saturating_add(packet.time),
                    size: packet.size,
                    class: Some(packet.class),
                    deadline: packet.deadline,
                })
            }
            State::Silent => None,
        }
    }
}

/// A (σ,ρ) token-bucket shaper: a FIFO that releases a packet as soon as the bucket (depth σ
/// bytes, filled at ρ bit/s, full at the start) holds its size. The output satisfies
/// A(τ, t) ≤ σ + ρ(t − τ) bytes for every interval. The tokens are counted by the core's exact
/// [`schedlab_core::conditioning::TokenBucket`], which the DiffServ meters also use.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    /// Depth σ in bytes.
    pub sigma: u64,
    /// Token rate ρ.
    pub rho: Rate,
    bucket: schedlab_core::conditioning::TokenBucket,
}

impl TokenBucket {
    /// A full bucket of depth `sigma` bytes filled at `rho`.
    pub fn new(sigma: u64, rho: Rate) -> TokenBucket {
        TokenBucket {
            sigma,
            rho,
            bucket: schedlab_core::conditioning::TokenBucket::new(sigma, rho),
        }
    }

    /// The release time of a packet of `size` bytes (a packet larger than σ waits for a full
    /// bucket) that reaches the shaper at `arrival` (arrivals in time order).
    pub fn release(&mut self, arrival: TimeNs, size: u32) -> TimeNs {
        // The previous packet's release is the bucket's last fill: packets leave in order.
        self.bucket.fill(arrival);
        let release = self.bucket.last_fill() + self.bucket.wait_for(size);
        self.bucket.fill(release);
        self.bucket.take(size);
        release
    }
}

#[cfg(test)]
mod tests {
    //! Fixed-seed goodness-of-fit tests of the generators. Tolerances are several standard
    //! errors of the estimate for the sample sizes used, stated next to each assertion.
    use super::*;

    fn rng(source: u64) -> SourceRng {
        source_rng(42, 0, source)
    }

    fn times(model: &ArrivalModel, size: Option<SizeDist>, n: usize, source: u64) -> Vec<Emission> {
        let mut g = Generator::new(model, size, 0, rng(source));
        (0..n).map_while(|_| g.next_packet()).collect()
    }

    /// A Poisson generator's sizes and times, whether its sizes are fixed in advance (no
    /// distribution, or a constant one: `SizeDraw::Fixed`, which draws no random number) or
    /// drawn, are those of the model: from one stream, the first gap, then for each packet
    /// its size (1000 bytes without a distribution) and the next gap.
    #[test]
    fn fixed_sizes_are_the_draws() {
        let constant = |size, header| SizeDist {
            shape: SizeShape::Constant(size),
            header,
        };
        let dists = [
            None,
            Some(constant(1000, 0)),
            Some(constant(500, 40)),
            Some(constant(u32::MAX - 3, 40)),
            Some(SizeDist::thesis_best_effort()),
            Some(SizeDist {
                shape: SizeShape::TruncatedExponential {
                    mean: 600.0,
                    min: 40,
                    max: 1500,
                },
                header: 0,
            }),
        ];
        for dist in &dists {
            let fixed = dist
                .as_ref()
                .is_none_or(|d| matches!(d.shape, SizeShape::Constant(_)));
            assert_eq!(matches!(SizeDraw::new(dist.clone()), SizeDraw::Fixed(_)), fixed);
            let model = ArrivalModel::Poisson { rate_pps: 1000.0 };
            let emissions = times(&model, dist.clone(), 500, 3);
            let mut stream = rng(3);
            let mean_gap_ns = NS / 1000.0;
            let mut next = mean_gap_ns * exp1(&mut stream);
            for e in &emissions {
                assert_eq!(e.size, dist.as_ref().map_or(1000, |d| d.sample(&mut stream)));
                assert_eq!(e.time, ns(next));
                next += mean_gap_ns * exp1(&mut stream);
            }
        }
    }

    fn rate_pps(e: &[Emission]) -> f64 {
        (e.len() - 1) as f64 / (e.last().unwrap().time - e[0].time) as f64 * NS
    }

    /// Kolmogorov–Smirnov statistic of `sample` against `cdf`.
    fn ks(mut sample: Vec<f64>, cdf: impl Fn(f64) -> f64) -> f64 {
        sample.sort_by(f64::total_cmp);
        let n = sample.len() as f64;
        sample
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let f = cdf(x);
                (f - i as f64 / n).abs().max((((i + 1) as f64) / n - f).abs())
            })
            .fold(0.0, f64::max)
    }

    #[test]
    fn fractional_times_round_to_the_nearest_ns_and_saturate() {
        assert_eq!(ns(0.0), 0);
        assert_eq!(ns(-0.0), 0);
        assert_eq!(ns(-3.7), 0);
        assert_eq!(ns(f64::NAN), 0);
        assert_eq!(ns(0.49), 0);
        assert_eq!(ns(0.5), 1);
        assert_eq!(ns(1_234_567.5), 1_234_568);
        assert_eq!(ns(2.4e9), 2_400_000_000);
        assert_eq!(ns(1e30), u64::MAX);
        assert_eq!(ns(f64::INFINITY), u64::MAX);
        assert_eq!(ns(f64::NEG_INFINITY), 0);
        assert_eq!(ns(-0.5), 0);
        assert_eq!(ns(TWO_TO_63), 1 << 63);
        let below = f64::from_bits(TWO_TO_63.to_bits() - 1);
        assert_eq!(ns(below), below as u64);
        assert_eq!(ns(f64::MIN_POSITIVE), 0);
    }

    proptest::proptest! {
        #[test]
        fn fractional_times_as_the_saturating_conversion(bits in proptest::prelude::any::<u64>(), small in 0.0..1e13f64) {
            for x in [f64::from_bits(bits), small, -small] {
                proptest::prop_assert_eq!(ns(x), (x + 0.5) as TimeNs, "{:e}", x);
            }
        }
    }

    #[test]
    fn streams_differ_by_replication_and_source() {
        let a = stream_seed(1, 0, 0);
        assert_ne!(a, stream_seed(1, 1, 0));
        assert_ne!(a, stream_seed(1, 0, 1));
        assert_ne!(a, stream_seed(2, 0, 0));
        assert_eq!(a, stream_seed(1, 0, 0));
    }

    #[test]
    fn poisson_gaps_are_exponential() {
        let e = times(&ArrivalModel::Poisson { rate_pps: 100.0 }, None, 100_001, 1);
        // Mean rate: relative standard error 1/sqrt(n) = 0.3%; allow 1%.
        let r = rate_pps(&e);
        assert!((r - 100.0).abs() < 1.0, "rate {r}");
        let gaps: Vec<f64> = e
            .windows(2)
            .map(|w| (w[1].time - w[0].time) as f64 / NS)
            .collect();
        // KS against Exp(100): critical value at the 1% level is 1.63/sqrt(n).
        let d = ks(gaps, |x| 1.0 - (-100.0 * x).exp());
        assert!(d < 1.63 / (100_000f64).sqrt(), "KS D = {d}");
    }

    #[test]
    fn cbr_is_exact_and_does_not_drift() {
        let e = times(
            &ArrivalModel::Cbr {
                spacing: Spacing::PacketsPerSecond(3.0),
            },
            None,
            301,
            0,
        );
        assert_eq!(e[1].time, 333_333_333);
        assert_eq!(e[2].time, 666_666_667);
        assert_eq!(e[300].time, 100_000_000_000);
        let bits = Rate::from_bits_per_second(8_000_000).unwrap();
        let e = times(
            &ArrivalModel::Cbr {
                spacing: Spacing::BitRate(bits),
            },
            Some(SizeDist::constant(500)),
            3,
            0,
        );
        assert_eq!(
            e.iter().map(|p| p.time).collect::<Vec<_>>(),
            vec![0, 500_000, 1_000_000]
        );
    }

    #[test]
    fn periodic_on_off_sends_fixed_bursts_at_hand_derived_times() {
        // Paper 003's class 1, burst type 1 scaled down: 3 packets of 512 bytes per On period
        // at 10 Mbit/s (gap 4096 bits / 10 Mbit/s = 409,600 ns), Off 5 x On = 6,144,000 ns.
        // On k: packets at k·(3 + 15)·409,600 + j·409,600 for j = 0, 1, 2.
        let bits = Rate::from_bits_per_second(10_000_000).unwrap();
        let model = ArrivalModel::PeriodicOnOff {
            on_packets: 3,
            off_ns: 6_144_000,
            spacing: Spacing::BitRate(bits),
        };
        let e = times(&model, Some(SizeDist::constant(512)), 7, 0);
        assert_eq!(
            e.iter().map(|p| p.time).collect::<Vec<_>>(),
            vec![0, 409_600, 819_200, 7_372_800, 7_782_400, 8_192_000, 14_745_600]
        );
        assert!(e.iter().all(|p| p.size == 512));
        // The complementary source (best effort in the Off periods): 15 packets per On
        // period, Off = 3 gaps, started one class-1 On period (1,228,800 ns) later, fills the
        // gaps exactly: together the two are one packet every 409,600 ns.
        let complement = ArrivalModel::PeriodicOnOff {
            on_packets: 15,
            off_ns: 1_228_800,
            spacing: Spacing::BitRate(bits),
        };
        let mut g = Generator::new(&complement, Some(SizeDist::constant(512)), 1_228_800, rng(1));
        let mut both: Vec<u64> = e.iter().map(|p| p.time).collect();
        both.extend((0..30).map_while(|_| g.next_packet()).map(|p| p.time));
        both.sort_unstable();
        let first_36: Vec<u64> = (0..36).map(|k| k * 409_600).collect();
        assert_eq!(&both[..36], &first_36[..]);
        // A packet rate works too: 1000 pkt/s, 2 per On, Off 10 ms → 0, 1, 12, 13 ms.
        let model = ArrivalModel::PeriodicOnOff {
            on_packets: 2,
            off_ns: 10_000_000,
            spacing: Spacing::PacketsPerSecond(1000.0),
        };
        let e = times(&model, Some(SizeDist::constant(100)), 4, 0);
        assert_eq!(
            e.iter().map(|p| p.time).collect::<Vec<_>>(),
            vec![0, 1_000_000, 12_000_000, 13_000_000]
        );
    }

    #[test]
    fn exponential_on_off_rate_matches_its_expectation() {
        // Peak 100 pkt/s (I = 10 ms), mean On 50 ms, mean Off 150 ms. Packets per On period:
        // E[ceil(D/I)] = sum_k P(D > kI) = 1/(1 − e^(−I/m)); rate = that / (mean_on + mean_off).
        let (i, m_on, m_off) = (0.01, 0.05, 0.15);
        let model = ArrivalModel::OnOff {
            on: PeriodDist::Exponential { mean: m_on },
            off: PeriodDist::Exponential { mean: m_off },
            spacing: Spacing::PacketsPerSecond(1.0 / i),
        };
        let expected = 1.0 / (1.0 - (-i / m_on).exp()) / (m_on + m_off);
        let e = times(&model, None, 200_000, 2);
        let r = rate_pps(&e);
        // ~36,000 On periods; relative standard error of the rate ≈ 0.7%; allow 2%.
        assert!((r / expected - 1.0).abs() < 0.02, "rate {r} expected {expected}");
        // Inside an On period packets are exactly I apart.
        let exact = e
            .windows(2)
            .filter(|w| w[1].time - w[0].time == 10_000_000)
            .count();
        assert!(exact > e.len() / 2);
    }

    #[test]
    fn pareto_on_off_rate_and_period_means() {
        // Shape 2.5 (finite variance), mean On 100 ms, Off 100 ms, peak 1000 pkt/s.
        let (shape, mean, i) = (2.5, 0.1, 0.001);
        let on = PeriodDist::Pareto { shape, mean };
        let mut r = rng(3);
        let n = 400_000;
        let s: f64 = (0..n).map(|_| on.sample(&mut r)).sum::<f64>() / n as f64;
        // Pareto(2.5) has sd = mean/sqrt(α(α−2)) ≈ 0.89·mean → standard error 0.14%; allow 1%.
        assert!((s / mean - 1.0).abs() < 0.01, "mean On {s}");
        // KS of the Pareto draws: F(x) = 1 − (x_m/x)^α.
        let xm = mean * (shape - 1.0) / shape;
        let draws: Vec<f64> = (0..20_000).map(|_| on.sample(&mut r)).collect();
        let d = ks(draws, |x| if x < xm { 0.0 } else { 1.0 - (xm / x).powf(shape) });
        assert!(d < 1.63 / (20_000f64).sqrt(), "KS D = {d}");
        // Rate: E[ceil(D/I)] = sum_k P(D > kI), P(D > x) = min(1, (x_m/x)^α).
        let per_period: f64 = (0..1_000_000)
            .map(|k| {
                let x = k as f64 * i;
                if x < xm {
                    1.0
                } else {
                    (xm / x).powf(shape)
                }
            })
            .sum();
        let expected = per_period / (2.0 * mean);
        let model = ArrivalModel::OnOff {
            on,
            off: PeriodDist::Pareto { shape, mean },
            spacing: Spacing::PacketsPerSecond(1.0 / i),
        };
        let e = times(&model, None, 2_000_000, 4);
        let rate = rate_pps(&e);
        // ~20,000 cycles of heavy-tailed periods; allow 3%.
        assert!(
            (rate / expected - 1.0).abs() < 0.03,
            "rate {rate} expected {expected}"
        );
    }

    #[test]
    fn pareto_residual_life_has_the_equilibrium_mean() {
        // Residual life mean = E[D²]/(2E[D]) = x_m² α/(α−2) / (2 mean).
        let (shape, mean) = (3.0, 1.0);
        let d = PeriodDist::Pareto { shape, mean };
        let xm = mean * (shape - 1.0) / shape;
        let expected = xm * xm * shape / (shape - 2.0) / (2.0 * mean);
        let mut r = rng(5);
        let n = 400_000;
        let s: f64 = (0..n).map(|_| d.sample_residual(&mut r)).sum::<f64>() / n as f64;
        assert!(
            (s / expected - 1.0).abs() < 0.03,
            "residual mean {s} expected {expected}"
        );
    }

    #[test]
    fn mmpp_rate_is_the_stationary_mixture() {
        // Two states: 10 pkt/s and 200 pkt/s; 0→1 at 1/s, 1→0 at 4/s: π = (0.8, 0.2),
        // mean rate 0.8·10 + 0.2·200 = 48 pkt/s.
        let q = vec![vec![0.0, 1.0], vec![4.0, 0.0]];
        let pi = stationary_distribution(&q).unwrap();
        assert!(
            (pi[0] - 0.8).abs() < 1e-12 && (pi[1] - 0.2).abs() < 1e-12,
            "{pi:?}"
        );
        let model = ArrivalModel::Mmpp {
            rates_pps: vec![10.0, 200.0],
            transition_rates: q,
            initial_state: None,
        };
        let e = times(&model, None, 500_000, 6);
        let r = rate_pps(&e);
        // ~10,000 s simulated, 40,000 state cycles; allow 2%.
        assert!((r / 48.0 - 1.0).abs() < 0.02, "rate {r}");
        // One state only: a Poisson process.
        let model = ArrivalModel::Mmpp {
            rates_pps: vec![50.0],
            transition_rates: vec![vec![0.0]],
            initial_state: Some(0),
        };
        let e = times(&model, None, 50_001, 7);
        let gaps: Vec<f64> = e
            .windows(2)
            .map(|w| (w[1].time - w[0].time) as f64 / NS)
            .collect();
        let d = ks(gaps, |x| 1.0 - (-50.0 * x).exp());
        assert!(d < 1.63 / (50_000f64).sqrt(), "KS D = {d}");
    }

    #[test]
    fn fragmentation_cuts_units_into_mtu_sized_packets() {
        let f = Fragmentation {
            mtu: 1500,
            header: 28,
        };
        assert_eq!(f.payload(), 1472);
        assert_eq!(f.packets(1472), (1, 1500));
        assert_eq!(f.packets(1473), (2, 29));
        assert_eq!(f.packets(16_000), (11, 16_000 - 10 * 1472 + 28));
        assert_eq!(f.packets(0), (1, 28));
        assert_eq!(f.max_packet(17_000), 1500);
        assert_eq!(f.max_packet(700), 728);
        // CBR units of 4000 bytes every 10 ms: three packets (1500, 1500, 1084) at each time.
        let model = ArrivalModel::Cbr {
            spacing: Spacing::PacketsPerSecond(100.0),
        };
        let mut g =
            Generator::new(&model, Some(SizeDist::constant(4000)), 5, rng(1)).with_fragmentation(Some(f));
        let e: Vec<Emission> = (0..7).map_while(|_| g.next_packet()).collect();
        let sizes: Vec<u32> = e.iter().map(|p| p.size).collect();
        assert_eq!(sizes, [1500, 1500, 1084, 1500, 1500, 1084, 1500]);
        let times: Vec<TimeNs> = e.iter().map(|p| p.time).collect();
        assert_eq!(times, [5, 5, 5, 10_000_005, 10_000_005, 10_000_005, 20_000_005]);
    }

    #[test]
    fn fragmented_mpeg_carries_every_frame_byte_plus_headers() {
        let model = ArrivalModel::Mpeg(MpegModel::thesis());
        let f = Fragmentation {
            mtu: 1500,
            header: 28,
        };
        let frames = times(&model, None, 3000, 8);
        let mut g = Generator::new(&model, None, 0, rng(8)).with_fragmentation(Some(f));
        let mut packets = Vec::new();
        for frame in &frames {
            let (count, last) = f.packets(frame.size);
            for k in 0..count {
                let p = g.next_packet().unwrap();
                assert_eq!(p.time, frame.time, "fragments leave at the frame's time");
                assert_eq!(p.size, if k + 1 == count { last } else { 1500 });
                assert!(p.size <= 1500);
                packets.push(p);
            }
        }
        let data: u64 = frames.iter().map(|p| p.size as u64).sum();
        let wire: u64 = packets.iter().map(|p| p.size as u64).sum();
        assert_eq!(wire, data + 28 * packets.len() as u64);
        // An I frame (15-17 kB) is a burst of 11 or 12 packets.
        let first_i = packets.iter().take_while(|p| p.time == 0).count();
        assert!((11..=12).contains(&first_i), "{first_i}");
    }

    #[test]
    fn mpeg_follows_the_thesis_model() {
        let model = MpegModel::thesis();
        // (16000 + 3·2100 + 6·550)·8·3 = 614,400 bit/s ("615 kbps" in the thesis).
        assert!((model.mean_rate() - 614_400.0).abs() < 1e-6);
        let e = times(&ArrivalModel::Mpeg(model.clone()), None, 300_000, 8);
        // 30 frames per second, exactly spaced.
        assert_eq!(e[30].time, 1_000_000_000);
        assert_eq!(e[1].time, 33_333_333);
        let mut sums = [(0.0, 0usize); 3];
        for (k, p) in e.iter().enumerate() {
            let t = model.gop[k % 10] as usize;
            sums[t].0 += p.size as f64;
            sums[t].1 += 1;
            let (lo, hi) = [(15_000, 17_000), (512, 17_000), (256, 17_000)][t];
            assert!((lo..=hi).contains(&p.size), "frame {k} size {}", p.size);
        }
        let means: Vec<f64> = sums.iter().map(|(s, n)| s / *n as f64).collect();
        // I: sd 577/sqrt(30000) ≈ 3.3 B; P: sd 1588/sqrt(90000) ≈ 5.3 B; B: 294/sqrt(180000)
        // ≈ 0.7 B. Allow 5 standard errors.
        assert!((means[0] - 16_000.0).abs() < 17.0, "I mean {}", means[0]);
        assert!((means[1] - 2100.0).abs() < 27.0, "P mean {}", means[1]);
        assert!((means[2] - 550.0).abs() < 3.5, "B mean {}", means[2]);
        let bits: f64 = e.iter().map(|p| p.size as f64 * 8.0).sum();
        let rate = bits / (e.len() as f64 / 30.0);
        assert!((rate / 614_400.0 - 1.0).abs() < 0.005, "rate {rate}");
    }

    #[test]
    fn size_distributions_have_their_moments() {
        let mut r = rng(9);
        let n = 200_000;
        let be = SizeDist::thesis_best_effort();
        let draws: Vec<u32> = (0..n).map(|_| be.sample(&mut r)).collect();
        assert_eq!(*draws.iter().min().unwrap(), 80);
        assert_eq!(*draws.iter().max().unwrap(), 740);
        let mean = draws.iter().map(|&d| d as f64).sum::<f64>() / n as f64;
        // U\[40,700\] + 40: mean 410, sd 190.8 → standard error 0.43 B.
        assert!((mean - 410.0).abs() < 2.0, "mean {mean}");
        let var = draws.iter().map(|&d| (d as f64 - 410.0).powi(2)).sum::<f64>() / n as f64;
        let expected_var = (661.0f64 * 661.0 - 1.0) / 12.0;
        assert!((var / expected_var - 1.0).abs() < 0.01, "variance {var}");

        let exp = SizeDist {
            shape: SizeShape::TruncatedExponential {
                mean: 1000.0,
                min: 1,
                max: u32::MAX,
            },
            header: 0,
        };
        let draws: Vec<f64> = (0..n).map(|_| exp.sample(&mut r) as f64).collect();
        let mean = draws.iter().sum::<f64>() / n as f64;
        assert!((mean / 1000.0 - 1.0).abs() < 0.01, "mean {mean}");
        let d = ks(draws, |x| 1.0 - (-(x + 0.5 - 1.0).max(0.0) / 999.0).exp());
        assert!(d < 1.63 / (n as f64).sqrt(), "KS D = {d}");

        let emp = SizeDist {
            shape: SizeShape::Empirical {
                values: vec![64, 576, 1500],
                cumulative: vec![0.5, 0.75, 1.0],
            },
            header: 0,
        };
        assert!((emp.mean() - (32.0 + 144.0 + 375.0)).abs() < 1e-9);
        let draws: Vec<u32> = (0..n).map(|_| emp.sample(&mut r)).collect();
        let share64 = draws.iter().filter(|&&d| d == 64).count() as f64 / n as f64;
        let share1500 = draws.iter().filter(|&&d| d == 1500).count() as f64 / n as f64;
        // Binomial standard errors ≈ 0.1%.
        assert!((share64 - 0.5).abs() < 0.005 && (share1500 - 0.25).abs() < 0.005);
    }

    #[test]
    fn token_bucket_output_obeys_sigma_rho() {
        // σ = 3000 B, ρ = 80 kbit/s (10 B/ms); a burst of 20 packets of 1000 B at time 0.
        let rho = Rate::from_bits_per_second(80_000).unwrap();
        let mut tb = TokenBucket::new(3000, rho);
        let release: Vec<TimeNs> = (0..20).map(|_| tb.release(0, 1000)).collect();
        // Three packets pass at once, then one every 1000 B / 10 B/ms = 100 ms.
        assert_eq!(&release[..4], &[0, 0, 0, 100_000_000]);
        assert_eq!(release[19], 1_700_000_000);
        // Random arrivals: check A(τ,t) ≤ σ + ρ(t−τ) over every pair of packets.
        let mut tb = TokenBucket::new(3000, rho);
        let mut r = rng(10);
        let mut t = 0u64;
        let mut out = Vec::new();
        for _ in 0..400 {
            t += (exp1(&mut r) * 40e6) as u64;
            let size = r.random_range(100..=1500u32);
            out.push((tb.release(t, size), size as u128));
        }
        for i in 0..out.len() {
            let mut bytes = 0u128;
            for j in i..out.len() {
                assert!(out[j].0 >= out[i].0);
                bytes += out[j].1;
                // bytes·8·1e9 ≤ σ·8·1e9 + ρ·Δt
                let bound = 3000u128 * 8 * 1_000_000_000 + 80_000u128 * (out[j].0 - out[i].0) as u128;
                assert!(bytes * 8 * 1_000_000_000 <= bound, "burst {i}..={j}");
            }
        }
    }
}
