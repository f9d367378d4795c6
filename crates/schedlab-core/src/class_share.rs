//! Class queues served in a changing priority order, with the CPU-usage bookkeeping of paper
//! 001's share-based CPU policies: the shared building block of
//! [`crate::disciplines::dynamic_priority`] and [`crate::disciplines::adaptive`].
//!
//! Wang, Lung and Majumdar (§3.2.2) keep one FIFO queue per packet group (class 0 = Gold,
//! 1 = Silver, 2 = Bronze, …) and a periodic scheduler that re-assigns the queues' priorities
//! from their CPU usage relative to `Share[i]`. This module holds what both policies share:
//!
//! * the class FIFOs (in one [`PooledLists`] node pool: no allocation once grown) under a
//!   shared buffer limit with tail drop, and the [`Counters`];
//! * `order`, the priority order of the classes (index 0 = highest), served strictly: a
//!   dequeue takes the head of the first non-empty class in `order`;
//! * CPU usage per class: packets served since the start (`usage`) and during the current
//!   scheduling period (`period_usage`) — with the paper's fixed processing time per packet
//!   (`Ptime`), packets served are exactly proportional to CPU time;
//! * the `Share` vector as integer parts per million, so that ratios `usage / Share` are
//!   compared exactly by cross-multiplication (no float decides an order);
//! * the periodic clock: the scheduler "wakes up" at the first decision (dequeue or peek) at
//!   or after its due time, as a scheduler thread on a single non-preemptive CPU runs once the
//!   packet in service is done; it then sleeps its interval from that moment.
//!
//! Invariants: `order` is a permutation of the classes; a class's list is non-empty iff its
//! backlog counter is; `Σ period_usage ≤ Σ usage`; each class is a FIFO.
//! Complexity: O(1) enqueue; dequeue O(classes) to find the first non-empty class in `order`;
//! a wake-up O(classes²) (three classes in the paper).

use crate::config::{BufferLimit, ConfigError, TableReader};
use crate::counters::{Counters, DropReason, Dropped};
use crate::packet::{Packet, MAX_FLOW_ID};
use crate::pool::{ListEnds, PooledLists};
use crate::time::TimeNs;

/// Parts per million of a share.
const PPM: f64 = 1_000_000.0;

/// Reads `share = [0.4, 0.3, 0.3]`: one fraction in (0, 1] per class, summing to 1; returns
/// the shares in parts per million.
pub fn read_share(reader: &mut TableReader<'_>) -> Result<Vec<u64>, ConfigError> {
    let rule = "must be an array of fractions in (0, 1], one per class (0 = highest), summing to 1, e.g. [0.4, 0.3, 0.3]";
    let Some(value) = reader.value("share") else {
        return Err(reader.error("share", format!("is required: {rule}")));
    };
    let toml::Value::Array(items) = value else {
        return Err(reader.error("share", rule));
    };
    let mut shares = Vec::with_capacity(items.len());
    for item in items {
        let share = match item {
            toml::Value::Float(f) => *f,
            toml::Value::Integer(i) => *i as f64,
            _ => f64::NAN,
        };
        if !(share > 0.0 && share <= 1.0) {
            return Err(reader.error("share", rule));
        }
        shares.push(share);
    }
    let sum: f64 = shares.iter().sum();
    if shares.is_empty() || shares.len() > 256 || (sum - 1.0).abs() > 1e-6 {
        return Err(reader.error("share", rule));
    }
    Ok(shares.iter().map(|s| ((s * PPM).round() as u64).max(1)).collect())
}

/// Reads the scheduling interval keys: `interval` (required) and its bounds `min_interval`
/// (default `interval / 64`, at least 1 ns) and `max_interval` (default `interval · 64`).
pub fn read_intervals(reader: &mut TableReader<'_>) -> Result<(TimeNs, TimeNs, TimeNs), ConfigError> {
    let Some(interval) = reader.duration("interval")? else {
        return Err(reader.error(
            "interval",
            "is required: the scheduler's initial period, e.g. \"100ms\"",
        ));
    };
    if interval == 0 {
        return Err(reader.error("interval", "must be longer than zero"));
    }
    let min = reader.duration("min_interval")?.unwrap_or((interval / 64).max(1));
    let max = reader
        .duration("max_interval")?
        .unwrap_or(interval.saturating_mul(64));
    if min == 0 || min > interval {
        return Err(reader.error("min_interval", "must be longer than zero and at most interval"));
    }
    if max < interval {
        return Err(reader.error("max_interval", "must be at least interval"));
    }
    Ok((interval, min, max))
}

/// Class FIFOs served in `order`, with usage counters and a periodic clock.
#[derive(Clone, Debug)]
pub struct ClassShare {
    lists: PooledLists<Packet>,
    ends: Vec<ListEnds>,
    /// Priority order of the classes, index 0 highest.
    pub order: Vec<u8>,
    /// `Share[i]`, parts per million.
    pub share: Vec<u64>,
    /// Packets served per class since the start.
    pub usage: Vec<u64>,
    /// Packets served per class since the last wake-up.
    pub period_usage: Vec<u64>,
    /// Current scheduling interval, ns.
    pub interval: TimeNs,
    /// Bounds of the interval, ns.
    pub interval_bounds: (TimeNs, TimeNs),
    /// Time of the next wake-up.
    pub wake_at: TimeNs,
    /// Wake-ups so far.
    pub wakeups: u64,
    counters: Counters,
    limit: BufferLimit,
}

impl ClassShare {
    /// Queues for `share.len()` classes in fixed-priority order (class 0 first), the first
    /// wake-up one `interval` after time 0.
    pub fn new(share: Vec<u64>, intervals: (TimeNs, TimeNs, TimeNs), limit: BufferLimit) -> ClassShare {
        let classes = share.len();
        ClassShare {
            lists: PooledLists::default(),
            ends: vec![ListEnds::default(); classes],
            order: (0..classes as u8).collect(),
            share,
            usage: vec![0; classes],
            period_usage: vec![0; classes],
            interval: intervals.0,
            interval_bounds: (intervals.1, intervals.2),
            wake_at: intervals.0,
            wakeups: 0,
            counters: Counters::default(),
            limit,
        }
    }

    /// Number of classes.
    pub fn classes(&self) -> usize {
        self.share.len()
    }

    /// The queue of `packet`: its class, or the last class for a class beyond the vector.
    #[inline]
    fn class_of(&self, packet: &Packet) -> usize {
        (packet.class as usize).min(self.share.len() - 1)
    }

    /// Whether class `a`'s usage / Share is below class `b`'s (`Less`), compared exactly;
    /// equal ratios order by class number (lower first).
    pub fn compare_ratio(&self, a: usize, b: usize) -> std::cmp::Ordering {
        let left = self.usage[a] as u128 * self.share[b] as u128;
        let right = self.usage[b] as u128 * self.share[a] as u128;
        left.cmp(&right).then(a.cmp(&b))
    }

    /// The class with the smallest usage / Share among `candidates` (ties: lower class).
    pub fn smallest_ratio(&self, candidates: impl Iterator<Item = usize>) -> Option<usize> {
        candidates.min_by(|&a, &b| self.compare_ratio(a, b))
    }

    /// Whether class `class` has used more than its Share of all CPU used so far.
    pub fn over_share(&self, class: usize) -> bool {
        let total: u64 = self.usage.iter().sum();
        // usage / total > share / 10⁶
        self.usage[class] as u128 * PPM as u128 > self.share[class] as u128 * total as u128
    }

    /// Sets the order: `first`, then `second` (if any), then the other classes in class order.
    pub fn raise(&mut self, first: usize, second: Option<usize>) {
        self.order.clear();
        self.order.push(first as u8);
        if let Some(second) = second {
            self.order.push(second as u8);
        }
        for class in 0..self.share.len() {
            if class != first && Some(class) != second {
                self.order.push(class as u8);
            }
        }
    }

    /// Whether a wake-up is due at `now`.
    #[inline]
    pub fn due(&self, now: TimeNs) -> bool {
        now >= self.wake_at
    }

    /// Ends a period at `now`: clears the period usage and schedules the next wake-up one
    /// (possibly changed) interval later. Call after the policy has decided.
    pub fn sleep(&mut self, now: TimeNs) {
        self.period_usage.iter_mut().for_each(|u| *u = 0);
        self.wakeups += 1;
        self.wake_at = now.saturating_add(self.interval);
    }

    /// Doubles (`factor` 2) or halves the interval within its bounds.
    pub fn scale_interval(&mut self, double: bool) {
        let (min, max) = self.interval_bounds;
        self.interval = if double {
            self.interval.saturating_mul(2).min(max)
        } else {
            (self.interval / 2).max(min)
        };
    }

    /// Offers a packet: tail drop on the shared buffer.
    #[inline]
    pub fn enqueue(&mut self, packet: Packet, drops: &mut Vec<Dropped>) {
        if packet.flow > MAX_FLOW_ID {
            self.counters.refuse_invalid_flow(packet, drops);
            return;
        }
        let backlog = self.counters.backlog();
        if !self
            .limit
            .fits(backlog.packets + 1, backlog.bytes + packet.size as u64)
        {
            self.counters.record_arrival(&packet);
            self.counters.record_drop(&packet, DropReason::BufferFull, false);
            drops.push(Dropped {
                packet,
                reason: DropReason::BufferFull,
            });
            return;
        }
        let class = self.class_of(&packet);
        self.counters.record_arrival_queued(&packet);
        self.lists.push_back(&mut self.ends[class], packet);
    }

    /// The first non-empty class in `order`.
    #[inline]
    fn first_backlogged(&self) -> Option<usize> {
        self.order
            .iter()
            .map(|&c| c as usize)
            .find(|&c| !self.ends[c].is_empty())
    }

    /// Serves the head of the first non-empty class in `order`, counting its usage.
    #[inline]
    pub fn dequeue(&mut self) -> Option<Packet> {
        let class = self.first_backlogged()?;
        let packet = self
            .lists
            .pop_front(&mut self.ends[class])
            .expect("non-empty class");
        self.usage[class] += 1;
        self.period_usage[class] += 1;
        self.counters.record_sent(&packet);
        Some(packet)
    }

    /// The packet [`ClassShare::dequeue`] would return.
    #[inline]
    pub fn peek(&self) -> Option<Packet> {
        let class = self.first_backlogged()?;
        self.lists.front(&self.ends[class]).copied()
    }

    /// Whether class `class` holds a packet.
    pub fn is_backlogged(&self, class: usize) -> bool {
        !self.ends[class].is_empty()
    }

    /// Per-flow counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share(text: &str) -> Result<Vec<u64>, ConfigError> {
        let table: toml::Table = text.parse().unwrap();
        let mut reader = TableReader::new(&table, "scheduler");
        read_share(&mut reader)
    }

    #[test]
    fn share_vectors_are_checked() {
        assert_eq!(
            share("share = [0.4, 0.3, 0.3]").unwrap(),
            vec![400_000, 300_000, 300_000]
        );
        assert_eq!(share("share = [1]").unwrap(), vec![1_000_000]);
        for bad in [
            "share = [0.5, 0.6]",
            "share = []",
            "share = [0, 1]",
            "share = \"0.4\"",
            "",
        ] {
            let e = share(bad).unwrap_err();
            assert_eq!(e.path, "scheduler.share", "{bad}");
        }
    }

    #[test]
    fn ratios_compare_exactly_and_ties_go_to_the_lower_class() {
        let mut s = ClassShare::new(
            vec![500_000, 250_000, 250_000],
            (10, 1, 100),
            BufferLimit::UNLIMITED,
        );
        s.usage = vec![2, 1, 1]; // ratios 4, 4, 4 (per million): all equal
        assert_eq!(s.smallest_ratio(0..3), Some(0));
        s.usage = vec![3, 1, 1]; // 6, 4, 4
        assert_eq!(s.smallest_ratio(0..3), Some(1));
        assert!(s.over_share(0)); // 3/5 > 0.5
        assert!(!s.over_share(1)); // 1/5 < 0.25
        s.raise(2, Some(0));
        assert_eq!(s.order, vec![2, 0, 1]);
        s.raise(1, None);
        assert_eq!(s.order, vec![1, 0, 2]);
        s.scale_interval(true);
        assert_eq!(s.interval, 20);
        for _ in 0..10 {
            s.scale_interval(true);
        }
        assert_eq!(s.interval, 100);
        for _ in 0..10 {
            s.scale_interval(false);
        }
        assert_eq!(s.interval, 1);
    }
}
