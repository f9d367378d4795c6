//! Per-flow and per-class accumulators updated as packets are delivered or dropped.
//!
//! Delays go into an HDR histogram (3 significant digits, 1 ns to 1 hour; larger values are
//! clamped in the histogram but the exact maximum is kept), besides an exact sum and maximum.
//!
//! Jitter follows Yokota, Kato and Tominaga (paper 003, §5.2): "the difference in arrival
//! times between two consecutive packets within the same class", i.e. the gaps between
//! consecutive receptions of the same flow (or class). We report their mean, standard
//! deviation and maximum; the paper's "jitter increase" is the difference of these between a
//! run with competing traffic and one without. Because a long lossless run has a mean receive
//! gap equal to the mean send gap, we also report the mean instantaneous delay variation
//! |D_k − D_{k−1}| (RFC 3393 IPDV) as `ipdv_mean_s`.

use hdrhistogram::Histogram;
use schedlab_core::{DropReason, TimeNs};

/// Highest delay the histograms resolve (1 hour in ns).
pub const HISTOGRAM_MAX_NS: u64 = 3_600_000_000_000;

/// A fresh delay histogram.
pub fn delay_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HISTOGRAM_MAX_NS, 3).expect("valid histogram bounds")
}

/// Receive-gap (jitter) and delay-variation statistics of one flow or class. Updated in
/// reception order, so it cannot be merged after the fact.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Jitter {
    /// Time of the previous reception.
    last_receive: Option<TimeNs>,
    /// Delay of the previous reception.
    last_delay: Option<u64>,
    /// Number of receive gaps.
    pub gap_count: u64,
    /// Sum of receive gaps, ns.
    pub gap_sum: u128,
    /// Sum of squared receive gaps, ns².
    pub gap_square_sum: u128,
    /// Largest receive gap, ns.
    pub gap_max: u64,
    /// Sum of |D_k − D_{k−1}|, ns.
    pub ipdv_sum: u128,
}

impl Jitter {
    /// A packet was received at `now` after `delay` ns.
    #[inline]
    pub fn on_received(&mut self, now: TimeNs, delay: u64) {
        if let Some(last) = self.last_receive {
            let gap = now - last;
            self.gap_count += 1;
            self.gap_sum += gap as u128;
            self.gap_square_sum += gap as u128 * gap as u128;
            self.gap_max = self.gap_max.max(gap);
        }
        if let Some(last) = self.last_delay {
            self.ipdv_sum += last.abs_diff(delay) as u128;
        }
        self.last_receive = Some(now);
        self.last_delay = Some(delay);
    }
}

/// Accumulated statistics of one flow or one class over the measurement window.
#[derive(Clone, Debug)]
pub struct Accumulator {
    /// Packets that entered the network in the window.
    pub sent: u64,
    /// Their bytes.
    pub sent_bytes: u64,
    /// Of those, packets delivered.
    pub received: u64,
    /// Their bytes.
    pub received_bytes: u64,
    /// Of those, packets dropped, by [`DropReason`] order.
    pub dropped: [u64; 4],
    /// Bytes dropped.
    pub dropped_bytes: u64,
    /// Sum of one-way delays, ns.
    pub delay_sum: u128,
    /// Largest one-way delay, ns.
    pub delay_max: u64,
    /// Delay histogram, ns.
    pub delay: Histogram<u64>,
    /// Receive gaps and delay variation.
    pub jitter: Jitter,
    /// Sum of shaping delays of the packets sent, ns.
    pub shaper_delay_sum: u128,
}

impl Default for Accumulator {
    fn default() -> Self {
        Accumulator {
            sent: 0,
            sent_bytes: 0,
            received: 0,
            received_bytes: 0,
            dropped: [0; 4],
            dropped_bytes: 0,
            delay_sum: 0,
            delay_max: 0,
            delay: delay_histogram(),
            jitter: Jitter::default(),
            shaper_delay_sum: 0,
        }
    }
}

impl Accumulator {
    /// A measured packet entered the network after `shaping` ns in the shaper.
    #[inline]
    pub fn on_sent(&mut self, size: u32, shaping: TimeNs) {
        self.sent += 1;
        self.sent_bytes += size as u64;
        self.shaper_delay_sum += shaping as u128;
    }

    /// A measured packet was delivered at `now` after `delay` ns.
    #[inline]
    pub fn on_received(&mut self, size: u32, now: TimeNs, delay: u64) {
        self.received += 1;
        self.received_bytes += size as u64;
        self.delay_sum += delay as u128;
        self.delay_max = self.delay_max.max(delay);
        self.delay.saturating_record(delay.max(1));
        self.jitter.on_received(now, delay);
    }

    /// A measured packet was dropped.
    #[inline]
    pub fn on_dropped(&mut self, size: u32, reason: DropReason) {
        self.dropped[reason as usize] += 1;
        self.dropped_bytes += size as u64;
    }

    /// Packets dropped for any reason.
    pub fn dropped_total(&self) -> u64 {
        self.dropped.iter().sum()
    }

    /// Adds `other`'s counts, sums, maxima and histogram (not its jitter, which depends on
    /// the interleaving of receptions).
    pub fn merge_counts(&mut self, other: &Accumulator) {
        self.sent += other.sent;
        self.sent_bytes += other.sent_bytes;
        self.received += other.received;
        self.received_bytes += other.received_bytes;
        for (mine, theirs) in self.dropped.iter_mut().zip(other.dropped) {
            *mine += theirs;
        }
        self.dropped_bytes += other.dropped_bytes;
        self.delay_sum += other.delay_sum;
        self.delay_max = self.delay_max.max(other.delay_max);
        self.delay
            .add(&other.delay)
            .expect("histograms with the same bounds merge");
        self.shaper_delay_sum += other.shaper_delay_sum;
    }
}
