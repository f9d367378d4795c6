//! Class queues served in a changing priority order (and [`ShareScheduler`], the scheduler
//! both policies are), with the CPU-usage bookkeeping of paper
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

use std::marker::PhantomData;

use crate::config::{BufferLimit, ConfigError, TableReader};
use crate::counters::{Counters, DropReason, Dropped};
use crate::discipline::{require_tail_drop, BuildContext, Discipline, DisciplineInfo, ParamInfo};
use crate::packet::{Packet, MAX_FLOW_ID};
use crate::pool::{ListEnds, PooledLists};
use crate::scheduler::Scheduler;
use crate::time::TimeNs;

/// Parts per million of a share.
const PPM: f64 = 1_000_000.0;

/// Reads `key` as an array of fractions in (0, 1], one per class (class 0 first, at most 256),
/// summing to 1 (within 10⁻⁶), e.g. `share = [0.4, 0.3, 0.3]`, `link_share = [0.5, 0.3, 0.2]`.
pub fn read_fractions<'a>(
    reader: &mut TableReader<'a>,
    key: &'a str,
    example: &str,
) -> Result<Vec<f64>, ConfigError> {
    let rule = format!(
        "must be an array of fractions in (0, 1], one per class (0 = highest), summing to 1, e.g. {example}"
    );
    let Some(value) = reader.value(key) else {
        return Err(reader.error(key, format!("is required: {rule}")));
    };
    let toml::Value::Array(items) = value else {
        return Err(reader.error(key, rule));
    };
    let mut fractions = Vec::with_capacity(items.len());
    for item in items {
        let fraction = match item {
            toml::Value::Float(f) => *f,
            toml::Value::Integer(i) => *i as f64,
            _ => f64::NAN,
        };
        if !(fraction > 0.0 && fraction <= 1.0) {
            return Err(reader.error(key, rule));
        }
        fractions.push(fraction);
    }
    let sum: f64 = fractions.iter().sum();
    if fractions.is_empty() || fractions.len() > 256 || (sum - 1.0).abs() > 1e-6 {
        return Err(reader.error(key, rule));
    }
    Ok(fractions)
}

/// Reads `share = [0.4, 0.3, 0.3]` ([`read_fractions`]); returns the shares in parts per
/// million.
pub fn read_share(reader: &mut TableReader<'_>) -> Result<Vec<u64>, ConfigError> {
    let shares = read_fractions(reader, "share", "[0.4, 0.3, 0.3]")?;
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

    /// Takes back the usage of a dequeued packet that was not served.
    pub fn not_served(&mut self, packet: &Packet) {
        let class = self.class_of(packet);
        self.usage[class] = self.usage[class].saturating_sub(1);
        self.period_usage[class] = self.period_usage[class].saturating_sub(1);
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

/// A share-based CPU policy: what its periodic scheduler does at a wake-up.
pub trait SharePolicy: Clone + std::fmt::Debug {
    /// The discipline's self-description.
    const INFO: DisciplineInfo;
    /// The wake-up at `now`: re-order `queues`, maybe change the interval, then
    /// [`ClassShare::sleep`].
    fn wake_up(queues: &mut ClassShare, now: TimeNs);
}

/// The scheduler keys of every share-based policy.
pub const SHARE_PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "share",
        unit: "fractions, one per class",
        default: "required",
        description: "Share[i]: the proportion of CPU time for class i (0 = Gold), summing to 1",
    },
    ParamInfo {
        name: "interval",
        unit: "duration",
        default: "required",
        description: "the periodic scheduler's initial interval",
    },
    ParamInfo {
        name: "min_interval",
        unit: "duration",
        default: "interval / 64",
        description: "lower bound when the interval is halved",
    },
    ParamInfo {
        name: "max_interval",
        unit: "duration",
        default: "interval * 64",
        description: "upper bound when the interval is doubled",
    },
];

/// Parameters of a share-based policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShareConfig {
    /// `Share[i]`, parts per million, one per class.
    pub share: Vec<u64>,
    /// Initial, minimum and maximum scheduling interval, ns.
    pub intervals: (TimeNs, TimeNs, TimeNs),
}

/// A share-based CPU scheduler: [`ClassShare`] driven by policy `P` at every wake-up.
#[derive(Clone, Debug)]
pub struct ShareScheduler<P> {
    pub(crate) queues: ClassShare,
    policy: PhantomData<P>,
}

impl<P: SharePolicy> ShareScheduler<P> {
    /// The current priority order of the classes (index 0 = highest).
    pub fn order(&self) -> &[u8] {
        &self.queues.order
    }

    /// The current scheduling interval, ns.
    pub fn interval(&self) -> TimeNs {
        self.queues.interval
    }

    /// The queues and usage counters.
    pub fn queues(&self) -> &ClassShare {
        &self.queues
    }
}

impl<P: SharePolicy> Discipline for ShareScheduler<P> {
    type Config = ShareConfig;
    const INFO: DisciplineInfo = P::INFO;

    fn read_config(reader: &mut TableReader<'_>) -> Result<ShareConfig, ConfigError> {
        Ok(ShareConfig {
            share: read_share(reader)?,
            intervals: read_intervals(reader)?,
        })
    }

    fn build(config: ShareConfig, context: &BuildContext<'_>) -> Result<Self, ConfigError> {
        require_tail_drop(&Self::INFO, &context.limit)?;
        // Classes come from the packets: no flow key is read, any in a flow table is an error.
        context.flows.parse(&Self::INFO, &())?;
        Ok(ShareScheduler {
            queues: ClassShare::new(config.share, config.intervals, context.limit),
            policy: PhantomData,
        })
    }
}

impl<P: SharePolicy> Scheduler for ShareScheduler<P> {
    fn id(&self) -> &'static str {
        P::INFO.id
    }

    fn enqueue(&mut self, packet: Packet, _now: TimeNs, drops: &mut Vec<Dropped>) {
        self.queues.enqueue(packet, drops);
    }

    fn dequeue(&mut self, now: TimeNs, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        if self.queues.due(now) {
            P::wake_up(&mut self.queues, now);
        }
        self.queues.dequeue()
    }

    fn peek(&mut self, now: TimeNs) -> Option<Packet> {
        if self.queues.due(now) {
            P::wake_up(&mut self.queues, now);
        }
        self.queues.peek()
    }

    fn counters(&self) -> &Counters {
        self.queues.counters()
    }

    fn not_served(&mut self, packet: &Packet) {
        self.queues.not_served(packet);
    }

    fn discipline_counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("wakeups", self.queues.wakeups),
            ("interval_ns", self.queues.interval),
        ]
    }
}

/// Test helpers shared by the share-based policies' tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use crate::testkit;

    /// Policy `P` on the test link with `share` (parts per million), `intervals` and `limit`.
    pub fn build<P: SharePolicy>(
        share: &[u64],
        intervals: (TimeNs, TimeNs, TimeNs),
        limit: BufferLimit,
    ) -> ShareScheduler<P> {
        testkit::build_with::<ShareScheduler<P>>(
            ShareConfig {
                share: share.to_vec(),
                intervals,
            },
            [],
            limit,
        )
    }

    /// A 100-byte packet of `class` (its flow = its class) at time 0.
    pub fn packet(id: u64, class: u8) -> Packet {
        Packet {
            class,
            ..Packet::new(id, class as u32, 100, 0)
        }
    }

    /// Ten packets of each of classes 0, 1, 2 at time 0, interleaved; returns the classes of
    /// the send order on the test link.
    pub fn ten_of_each_class_order<P: SharePolicy>(s: &mut ShareScheduler<P>) -> Vec<u8> {
        let mut packets = Vec::new();
        for k in 0..10u64 {
            for class in 0..3u8 {
                packets.push(packet(k * 3 + class as u64, class));
            }
        }
        let order = testkit::send_order(s, &packets);
        order.iter().map(|&id| (id % 3) as u8).collect()
    }

    /// The invariants of every discipline, and `order` stays a permutation, for Share
    /// 40/30/30 % and the given interval bounds and byte buffer.
    pub fn check_invariants<P: SharePolicy>(
        trace: &[Packet],
        intervals: (TimeNs, TimeNs, TimeNs),
        bytes: u64,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let limit = BufferLimit {
            bytes: Some(bytes),
            ..BufferLimit::UNLIMITED
        };
        let mut s = build::<P>(&[400_000, 300_000, 300_000], intervals, limit);
        testkit::check_invariants(&mut s, trace, true)?;
        let mut order = s.order().to_vec();
        order.sort_unstable();
        proptest::prop_assert_eq!(order, vec![0, 1, 2]);
        Ok(())
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

    /// A packet the driver did not serve (dropped for its sojourn) is not CPU usage.
    #[test]
    fn not_served_takes_the_usage_back() {
        let mut s = ClassShare::new(vec![500_000, 500_000], (10, 1, 100), BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        s.enqueue(testing::packet(0, 1), &mut drops);
        s.enqueue(testing::packet(1, 1), &mut drops);
        let first = s.dequeue().unwrap();
        s.not_served(&first);
        s.dequeue().unwrap();
        assert_eq!(
            (s.usage.clone(), s.period_usage.clone()),
            (vec![0, 1], vec![0, 1])
        );
        assert_eq!(s.counters().flow(1).unwrap().sent_packets, 2);
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
