//! Strict priority (`priority`): one FIFO per priority level, level 0 served first.
//!
//! The classic static-priority multiplexer (e.g. Linux `sch_prio`, dummynet `dn_sched_prio`;
//! the "priority classes" of a DiffServ router's scheduler, Yokota et al. §5.2, where
//! best-effort traffic "is served only when there is no priority traffic").
//!
//! Names → code:
//! * priority level (0 = highest, 255 = lowest) → the index into `levels`;
//! * "the highest non-empty level" → the lowest set bit of `non_empty`, a 256-bit bitmap
//!   (four `u64` words) with bit `l` set iff `levels[l]` is non-empty.
//!
//! Invariants: bit `l` of `non_empty` is set iff `levels[l]` holds a packet; `counters` holds
//! exactly the packets in `levels`; each level is a FIFO. A dequeue always returns the head
//! of the highest non-empty level, so a lower level is starved while a higher one is
//! backlogged. Work conserving. O(1) enqueue and dequeue (one look-up of the flow's level,
//! at most four word scans of the bitmap).
//!
//! Choices (strict priority has no paper to be silent; these are schedlab's):
//! * The level of a packet is its flow's `priority` (the flow's own override, else
//!   `flow_defaults.priority`); when neither sets one, the packet's own `class` field
//!   (a DiffServ class / priority hint set by the source). Since `class` defaults to 0, a
//!   configuration with no priorities at all behaves as one FIFO. A flow's configured level is
//!   looked up once, when the flow is first seen.
//! * FIFO within a flow holds whenever a flow's packets share a level: always for flows with
//!   a configured `priority`; for the `class` fallback, packets of one flow carrying
//!   different classes are ordered per (flow, class), as in any class-based router.
//! * `buffer` / `buffer_packets` bound the total backlog, shared by all levels; an arrival
//!   that does not fit is dropped ([`DropReason::BufferFull`]) whatever its level — so a full
//!   buffer of low-priority packets refuses high-priority arrivals until it drains. Only
//!   `drop_policy = "tail_drop"` is accepted (the queues are per level, not per flow).
//! * A flow id above [`MAX_FLOW_ID`] is dropped as [`DropReason::InvalidPacket`] without
//!   entering the per-flow counters (which are indexed by flow id).

use std::collections::VecDeque;

use crate::config::{BufferLimit, ConfigError, FlowParamTable, FlowParams, TableReader};
use crate::counters::{Counters, DropReason, Dropped};
use crate::discipline::{require_tail_drop, BuildContext, Discipline, DisciplineInfo, ParamInfo};
use crate::packet::{Packet, MAX_FLOW_ID};
use crate::scheduler::Scheduler;
use crate::time::TimeNs;

/// Number of priority levels (a `u8` level, 0..=255).
pub const LEVELS: usize = 256;

/// `level_of` entry of a flow not yet seen.
const UNRESOLVED: u16 = u16::MAX;
/// `level_of` entry of a flow with no configured priority: use the packet's class.
const FROM_CLASS: u16 = LEVELS as u16;

/// Parameters of [`Priority`] (none besides the buffer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PriorityConfig;

/// Strict-priority scheduler with a FIFO per level.
#[derive(Clone, Debug)]
pub struct Priority {
    /// One FIFO per level; index 0 is the highest priority.
    levels: Vec<VecDeque<Packet>>,
    /// Bit `l` set iff `levels[l]` is non-empty.
    non_empty: [u64; LEVELS / 64],
    /// Per flow: its configured level, [`FROM_CLASS`], or [`UNRESOLVED`].
    level_of: Vec<u16>,
    counters: Counters,
    limit: BufferLimit,
    table: FlowParamTable<PriorityFlowParams>,
}

/// A flow's strict-priority parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PriorityFlowParams {
    /// Level 0..=255, 0 = highest (key `priority`); `None`: the packet's class.
    pub priority: Option<u8>,
}

impl FlowParams for PriorityFlowParams {
    fn read(reader: &mut TableReader<'_>, inherited: &Self) -> Result<Self, ConfigError> {
        let priority = reader.integer("priority", 0, 255)?.map(|p| p as u8);
        Ok(PriorityFlowParams {
            priority: priority.or(inherited.priority),
        })
    }
}

impl Priority {
    /// The level `packet` is queued at.
    #[inline]
    fn level(&mut self, packet: &Packet) -> usize {
        let index = packet.flow as usize;
        if index >= self.level_of.len() {
            self.level_of.resize(index + 1, UNRESOLVED);
        }
        let mut level = self.level_of[index];
        if level == UNRESOLVED {
            level = self.table.get(packet.flow).priority.map_or(FROM_CLASS, u16::from);
            self.level_of[index] = level;
        }
        if level == FROM_CLASS {
            packet.class as usize
        } else {
            level as usize
        }
    }

    /// The highest (numerically lowest) non-empty level.
    #[inline]
    fn highest(&self) -> Option<usize> {
        self.non_empty
            .iter()
            .enumerate()
            .find(|(_, word)| **word != 0)
            .map(|(index, word)| index * 64 + word.trailing_zeros() as usize)
    }

    /// Packets queued at `level`.
    pub fn level_len(&self, level: u8) -> usize {
        self.levels[level as usize].len()
    }
}

impl Discipline for Priority {
    type Config = PriorityConfig;
    const INFO: DisciplineInfo = DisciplineInfo {
        id: "priority",
        name: "Strict Priority",
        citation: "(classic; cf. Linux sch_prio, dummynet prio)",
        summary: "One FIFO per level 0..=255; always serves the highest non-empty level (0 first). O(1); lower levels starve while a higher one is backlogged.",
        scheduler_params: &[],
        flow_params: &[ParamInfo {
            name: "priority",
            unit: "integer 0..=255",
            default: "the packet's class",
            description: "level of the flow's packets, 0 = highest",
        }],
        per_flow_queues: false,
    };

    fn read_config(_reader: &mut TableReader<'_>) -> Result<PriorityConfig, ConfigError> {
        Ok(PriorityConfig)
    }

    fn build(_config: PriorityConfig, context: &BuildContext<'_>) -> Result<Priority, ConfigError> {
        require_tail_drop(&Self::INFO, &context.limit)?;
        // PriorityFlowParams::read bounds `priority` to 0..=255, so every level is valid.
        Ok(Priority {
            levels: (0..LEVELS).map(|_| VecDeque::new()).collect(),
            non_empty: [0; LEVELS / 64],
            level_of: Vec::new(),
            counters: Counters::default(),
            limit: context.limit,
            table: context.flows.parse(&Self::INFO, &PriorityFlowParams::default())?,
        })
    }
}

impl Scheduler for Priority {
    fn id(&self) -> &'static str {
        Self::INFO.id
    }

    fn enqueue(&mut self, packet: Packet, _now: TimeNs, drops: &mut Vec<Dropped>) {
        if packet.flow > MAX_FLOW_ID {
            self.counters.refuse_invalid_flow(packet, drops);
            return;
        }
        self.counters.record_arrival(&packet);
        let backlog = self.counters.backlog();
        if !self
            .limit
            .fits(backlog.packets + 1, backlog.bytes + packet.size as u64)
        {
            self.counters.record_drop(&packet, DropReason::BufferFull, false);
            drops.push(Dropped {
                packet,
                reason: DropReason::BufferFull,
            });
            return;
        }
        let level = self.level(&packet);
        self.counters.record_queued(&packet);
        self.levels[level].push_back(packet);
        self.non_empty[level / 64] |= 1 << (level % 64);
    }

    fn dequeue(&mut self, _now: TimeNs, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        let level = self.highest()?;
        let queue = &mut self.levels[level];
        let packet = queue.pop_front().expect("bitmap marks a non-empty level");
        if queue.is_empty() {
            self.non_empty[level / 64] &= !(1 << (level % 64));
        }
        self.counters.record_sent(&packet);
        Some(packet)
    }

    fn peek(&mut self, _now: TimeNs) -> Option<Packet> {
        let level = self.highest()?;
        self.levels[level].front().copied()
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{DropPolicy, FlowTable};
    use crate::packet::FlowId;
    use crate::testkit;

    /// The documented fallback, written out independently of `Priority::level`.
    fn level_for(table: &FlowParamTable<PriorityFlowParams>, flow: FlowId, class: u8) -> u8 {
        table.get(flow).priority.unwrap_or(class)
    }

    fn priority(levels: &[(FlowId, u8)], limit: BufferLimit) -> Priority {
        let levels: Vec<(FlowId, u32)> = levels.iter().map(|&(f, level)| (f, level as u32)).collect();
        testkit::build_weighted(PriorityConfig, &levels, limit)
    }

    /// Flows 0, 1, 2 at levels 2, 0, 1; all packets queued at time 0 in the order
    /// 0a 1a 2a 0b 1b 2b 0c. Strict order: level 0 (1a 1b), level 1 (2a 2b), level 2
    /// (0a 0b 0c), FIFO within each level.
    #[test]
    fn strict_order_and_fifo_per_level() {
        let mut s = priority(&[(0, 2), (1, 0), (2, 1)], BufferLimit::UNLIMITED);
        let flows = [0, 1, 2, 0, 1, 2, 0];
        let packets: Vec<Packet> = flows
            .iter()
            .enumerate()
            .map(|(id, &flow)| Packet::new(id as u64, flow, 100, 0))
            .collect();
        assert_eq!(testkit::send_order(&mut s, &packets), vec![1, 4, 2, 5, 0, 3, 6]);
    }

    /// A lower level is starved while a higher one stays backlogged: flow 1 (level 0) sends
    /// 1000-byte packets every 1000 µs on a link that needs exactly 1000 µs per packet, so
    /// level 0 is never empty at a decision and flow 0 (level 5) waits until it stops.
    #[test]
    fn lower_level_starves_while_higher_is_backlogged() {
        let mut s = priority(&[(0, 5), (1, 0)], BufferLimit::UNLIMITED);
        let mut packets = vec![Packet::new(0, 0, 1000, 0)];
        for k in 0..20u64 {
            packets.push(Packet::new(k + 1, 1, 1000, k * 1_000_000));
        }
        // Arrivals at time t are enqueued before the decision at t, so the 1000-byte flow 1
        // packet that arrives when the link frees is always chosen over flow 0's packet.
        let order = testkit::send_order(&mut s, &packets);
        let expected: Vec<u64> = (1..=20).chain(std::iter::once(0)).collect();
        assert_eq!(order, expected);
        assert_eq!(s.counters().flow(0).unwrap().sent_packets, 1);
    }

    /// Without a configured priority a packet's class is its level; a configured
    /// `flow_defaults.priority` wins over the class.
    #[test]
    fn class_is_the_fallback_and_flow_defaults_win() {
        let mut s = priority(&[(9, 3)], BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        let p = |id, flow, class| Packet {
            class,
            ..Packet::new(id, flow, 100, 0)
        };
        s.enqueue(p(0, 1, 7), 0, &mut drops); // class 7
        s.enqueue(p(1, 9, 0), 0, &mut drops); // flow 9: level 3 whatever its class
        s.enqueue(p(2, 2, 4), 0, &mut drops); // class 4
        assert_eq!((s.level_len(7), s.level_len(3), s.level_len(4)), (1, 1, 1));
        let ids: Vec<u64> = (0..3).map(|_| s.dequeue(0, &mut drops).unwrap().id).collect();
        assert_eq!(ids, vec![1, 2, 0]);
        assert_eq!(level_for(&s.table, 9, 0), 3);

        let table = FlowTable::uniform(testkit::params("priority = 6"));
        let context = testkit::context(BufferLimit::UNLIMITED, &table);
        let mut s = Priority::build(PriorityConfig, &context).unwrap();
        s.enqueue(p(0, 1, 200), 0, &mut drops);
        assert_eq!(s.level_len(6), 1);
        assert!(drops.is_empty());
    }

    /// Levels 63, 64, 127, 128, 255 sit in different bitmap words; they come out in order.
    #[test]
    fn bitmap_words_are_scanned_in_order() {
        let levels = [(0, 255), (1, 128), (2, 64), (3, 127), (4, 63)];
        let mut s = priority(&levels, BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        for (flow, _) in levels {
            s.enqueue(Packet::new(flow as u64, flow, 10, 0), 0, &mut drops);
        }
        let ids: Vec<u64> = (0..5).map(|_| s.dequeue(0, &mut drops).unwrap().id).collect();
        assert_eq!(ids, vec![4, 2, 3, 1, 0]);
        assert!(s.dequeue(0, &mut drops).is_none());
        assert_eq!(s.non_empty, [0; 4]);
    }

    #[test]
    fn shared_buffer_tail_drops_any_level() {
        let limit = BufferLimit {
            bytes: Some(250),
            ..BufferLimit::UNLIMITED
        };
        let mut s = priority(&[(0, 9), (1, 0)], limit);
        let mut drops = Vec::new();
        s.enqueue(Packet::new(0, 0, 200, 0), 0, &mut drops);
        s.enqueue(Packet::new(1, 1, 100, 0), 0, &mut drops); // level 0 arrival does not fit
        s.enqueue(Packet::new(2, 1, 50, 0), 0, &mut drops); // fits exactly
        assert_eq!(drops.len(), 1);
        assert_eq!((drops[0].packet.id, drops[0].reason), (1, DropReason::BufferFull));
        assert_eq!(s.backlog().bytes, 250);
        let bad = Packet::new(3, MAX_FLOW_ID + 1, 10, 0);
        s.enqueue(bad, 0, &mut drops);
        assert_eq!(drops[1].reason, DropReason::InvalidPacket);
    }

    #[test]
    fn longest_queue_drop_is_refused() {
        let limit = BufferLimit {
            policy: DropPolicy::LongestQueueDrop,
            ..BufferLimit::UNLIMITED
        };
        let e = Priority::build(PriorityConfig, &testkit::context(limit, &FlowTable::default())).unwrap_err();
        assert_eq!(e.path, "scheduler.drop_policy");
    }

    proptest::proptest! {
        /// Exactly once, FIFO per flow (each flow has one level: configured for flows 0 and 2,
        /// its class `flow % 4` otherwise), work conservation; and every packet sent while a
        /// higher level held a packet would break strict priority, so check that too.
        #[test]
        fn invariants(trace in testkit::arb_trace(6, 300), bytes in 1500u64..20_000) {
            let limit = BufferLimit { bytes: Some(bytes), ..BufferLimit::UNLIMITED };
            let mut s = priority(&[(0, 3), (2, 0)], limit);
            let run = testkit::check_invariants(&mut s, &trace, true)?;
            // Strict priority: when a packet starts, no packet of a higher level that arrived
            // no later than that start is still waiting (unless dropped on arrival).
            let level = |i: usize| level_for(&s.table, trace[i].flow, trace[i].class);
            for (k, &(index, start)) in run.send_order.iter().enumerate() {
                for &(other, _) in &run.send_order[k + 1..] {
                    let waiting = trace[other].arrival <= start;
                    proptest::prop_assert!(
                        !(waiting && level(other) < level(index)),
                        "packet {} (level {}) sent at {} while {} (level {}) waited",
                        index, level(index), start, other, level(other)
                    );
                }
            }
        }
    }
}
