//! Deficit Round Robin (`drr`).
//!
//! M. Shreedhar and G. Varghese, "Efficient Fair Queueing Using Deficit Round Robin",
//! IEEE/ACM Transactions on Networking 4(3), 1996, §3 (figure 3 pseudo-code); as summarised in
//! Zhang's thesis (seed 000) §2.4.
//!
//! Paper name → code:
//! * `Quantum_i` → [`DrrFlow::quantum`] (bytes), `DeficitCounter_i` → [`DrrFlow::deficit`];
//! * `ActiveList` → `active` (flow ids, head is served next);
//! * "add Quantum_i when the flow reaches the head of the ActiveList" → `quantum_added`
//!   (false until the head flow has received its quantum for the current visit);
//! * "if queue empty: DeficitCounter_i = 0, remove from ActiveList" → done when the flow's
//!   last packet is sent.
//!
//! Invariants: a flow is on the active list iff its queue is non-empty (a flow emptied by a
//! push-out is removed lazily when it reaches the head); a flow's deficit is below its largest
//! packet while it stays backlogged and zero while idle.
//!
//! Guarantee (S–V lemma 2): over any interval in which flows i and j are backlogged,
//! |sent_i/Q_i − sent_j/Q_j|·Q ≤ Max + 2Q, with Q the smallest quantum and Max the largest
//! packet. Complexity O(1) per packet when every quantum is at least the largest packet
//! (otherwise a dequeue may rotate through several rounds).
//!
//! Choices where the paper is silent: a flow first seen at run time takes
//! `flow_defaults.quantum`, else the scheduler's `quantum`, else 1500 bytes; `peek` advances
//! the round (adds the quantum, rotates) exactly as the next dequeue would.
//!
//! Hot path: the flow table is read once per flow, on its first packet; afterwards a packet
//! costs O(1) vector accesses (flow state, queue, counters) and no allocation.

use std::collections::VecDeque;

use crate::config::{ConfigError, FlowParamTable, FlowParams, TableReader};
use crate::counters::{Counters, Dropped};
use crate::discipline::{BuildContext, Discipline, DisciplineInfo, ParamInfo};
use crate::packet::{FlowId, Packet};
use crate::queues::FlowQueues;
use crate::scheduler::Scheduler;
use crate::time::TimeNs;

/// Quantum used when neither the flow, the flow defaults nor the scheduler give one.
pub const DEFAULT_QUANTUM: u32 = 1500;

/// Parameters of [`Drr`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DrrConfig {
    /// Quantum in bytes of flows whose own parameters give none.
    pub quantum: Option<u32>,
}

/// Per-flow DRR state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DrrFlow {
    /// Quantum_i, bytes added per round.
    pub quantum: u32,
    /// DeficitCounter_i, bytes the flow may still send this round.
    pub deficit: u64,
    /// Whether the flow is on the active list.
    pub active: bool,
}

/// Deficit Round Robin scheduler.
#[derive(Clone, Debug)]
pub struct Drr {
    queues: FlowQueues,
    /// Indexed by flow id; `quantum == 0` marks a flow never seen (quanta are at least 1).
    flows: Vec<DrrFlow>,
    active: VecDeque<FlowId>,
    quantum_added: bool,
    table: FlowParamTable<DrrFlowParams>,
}

/// A DRR flow's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrrFlowParams {
    /// Quantum_i in bytes (key `quantum`).
    pub quantum: u32,
}

impl FlowParams for DrrFlowParams {
    fn read(reader: &mut TableReader<'_>, inherited: &Self) -> Result<Self, ConfigError> {
        Ok(DrrFlowParams {
            quantum: reader.positive_u32("quantum")?.unwrap_or(inherited.quantum),
        })
    }
}

impl Drr {
    /// Creates the state of `flow` on its first packet, reading its quantum from the table.
    #[cold]
    #[inline(never)]
    fn first_sight(&mut self, flow: FlowId) {
        let index = flow as usize;
        if index >= self.flows.len() {
            self.flows.resize(index + 1, DrrFlow::default());
        }
        let quantum = self.table.get(flow).quantum;
        self.flows[index] = DrrFlow {
            quantum,
            deficit: 0,
            active: false,
        };
    }

    /// The state of `flow`, if seen.
    pub fn flow(&self, flow: FlowId) -> Option<&DrrFlow> {
        self.flows.get(flow as usize).filter(|state| state.quantum > 0)
    }

    /// Advances the round until the head flow may send its head packet; returns that flow.
    #[inline]
    fn select(&mut self) -> Option<FlowId> {
        loop {
            let flow = *self.active.front()?;
            let state = &mut self.flows[flow as usize];
            let Some(head) = self.queues.head(flow) else {
                // Emptied by a push-out: leave the list as if its last packet had been sent.
                state.deficit = 0;
                state.active = false;
                self.active.pop_front();
                self.quantum_added = false;
                continue;
            };
            if !self.quantum_added {
                state.deficit += state.quantum as u64;
                self.quantum_added = true;
            }
            if head.size as u64 <= state.deficit {
                return Some(flow);
            }
            // Head packet does not fit: keep the deficit, go to the tail of the ActiveList
            // (pop + push reuses the deque's capacity; cheaper than `rotate_left(1)`).
            self.active.pop_front();
            self.active.push_back(flow);
            self.quantum_added = false;
        }
    }
}

impl Discipline for Drr {
    type Config = DrrConfig;
    const INFO: DisciplineInfo = DisciplineInfo {
        id: "drr",
        name: "Deficit Round Robin",
        citation: "Shreedhar & Varghese, IEEE/ACM ToN 1996",
        summary: "Round robin over flows; each visit adds the flow's quantum to its deficit and sends head packets while they fit. O(1), byte-fair in proportion to quanta.",
        scheduler_params: &[ParamInfo {
            name: "quantum",
            unit: "bytes",
            default: "1500",
            description: "quantum of flows that set none",
        }],
        flow_params: &[ParamInfo {
            name: "quantum",
            unit: "bytes",
            default: "scheduler quantum",
            description: "bytes added to the flow's deficit per round",
        }],
        per_flow_queues: true,
    };

    fn read_config(reader: &mut TableReader<'_>) -> Result<DrrConfig, ConfigError> {
        Ok(DrrConfig {
            quantum: reader.positive_u32("quantum")?,
        })
    }

    fn build(config: DrrConfig, context: &BuildContext<'_>) -> Result<Drr, ConfigError> {
        let base = DrrFlowParams {
            quantum: config.quantum.unwrap_or(DEFAULT_QUANTUM),
        };
        Ok(Drr {
            queues: FlowQueues::new(context.limit),
            flows: Vec::new(),
            active: VecDeque::new(),
            quantum_added: false,
            table: context.flows.parse(&Self::INFO, &base)?,
        })
    }
}

impl Scheduler for Drr {
    fn id(&self) -> &'static str {
        Self::INFO.id
    }

    #[inline]
    fn enqueue(&mut self, packet: Packet, _now: TimeNs, drops: &mut Vec<Dropped>) {
        let flow = packet.flow;
        let index = flow as usize;
        if flow <= crate::packet::MAX_FLOW_ID && self.flows.get(index).is_none_or(|s| s.quantum == 0) {
            self.first_sight(flow);
        }
        let flows = &self.flows;
        // Buffer stealing weighs queue lengths by 1/quantum (the flow's share).
        let admitted = self.queues.admit(
            packet,
            |f| flows.get(f as usize).map_or(1, |s| s.quantum as u64),
            drops,
        );
        if admitted == crate::queues::Admission::Queued {
            let state = &mut self.flows[index];
            if !state.active {
                state.active = true;
                state.deficit = 0;
                self.active.push_back(flow);
            }
        }
    }

    #[inline]
    fn dequeue(&mut self, _now: TimeNs, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        let flow = self.select()?;
        let (packet, emptied) = self
            .queues
            .pop_sent_emptied(flow)
            .expect("selected flow is backlogged");
        let state = &mut self.flows[flow as usize];
        state.deficit -= packet.size as u64;
        if emptied {
            state.deficit = 0;
            state.active = false;
            self.active.pop_front();
            self.quantum_added = false;
        }
        Some(packet)
    }

    fn peek(&mut self, _now: TimeNs) -> Option<Packet> {
        let flow = self.select()?;
        self.queues.head(flow).copied()
    }

    fn counters(&self) -> &Counters {
        &self.queues.counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{BufferLimit, DropPolicy};
    use crate::testkit;

    fn drr(quanta: &[(FlowId, u32)], limit: BufferLimit) -> Drr {
        let texts: Vec<(FlowId, String)> = quanta
            .iter()
            .map(|&(flow, quantum)| (flow, format!("quantum = {quantum}")))
            .collect();
        let flows = texts.iter().map(|(flow, text)| (*flow, text.as_str()));
        testkit::build_with(DrrConfig { quantum: Some(500) }, flows, limit)
    }

    /// Shreedhar–Varghese's example: quantum 500, flow 1 holds a 200-byte then a 750-byte
    /// packet. Round 1: deficit 500, the 200-byte packet goes (deficit 300), the 750-byte one
    /// does not fit. Round 2: deficit 800, the 750-byte packet goes, deficit 50, then the queue
    /// is empty so the deficit is reset to 0.
    #[test]
    fn shreedhar_varghese_example() {
        let mut s = drr(&[], BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        s.enqueue(Packet::new(0, 1, 200, 0), 0, &mut drops);
        s.enqueue(Packet::new(1, 1, 750, 0), 0, &mut drops);
        s.enqueue(Packet::new(2, 2, 500, 0), 0, &mut drops);
        s.enqueue(Packet::new(3, 2, 500, 0), 0, &mut drops);
        let first = s.dequeue(0, &mut drops).unwrap();
        assert_eq!(first.id, 0);
        assert_eq!(s.flow(1).unwrap().deficit, 300);
        // The 750-byte packet does not fit in 300: flow 2 is served (its 500-byte packet).
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 2);
        assert_eq!(s.flow(1).unwrap().deficit, 300);
        // Round 2: flow 1's deficit becomes 800 and the 750-byte packet goes.
        assert_eq!(s.peek(0).unwrap().id, 1);
        assert_eq!(s.flow(1).unwrap().deficit, 800);
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 1);
        assert_eq!(s.flow(1).unwrap().deficit, 0, "emptied flow's deficit is reset");
        assert!(!s.flow(1).unwrap().active);
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 3);
        assert!(s.dequeue(0, &mut drops).is_none());
    }

    #[test]
    fn quanta_set_the_byte_shares() {
        let mut s = drr(&[(0, 500), (1, 1000), (2, 1500)], BufferLimit::UNLIMITED);
        let served = testkit::backlogged_service(&mut s, &[0, 1, 2], 2000, |_, _| 250, 3000);
        // 3000 packets of 250 B = 250 rounds of 500 + 1000 + 1500 bytes exactly.
        assert_eq!(served, vec![125_000, 250_000, 375_000]);
    }

    #[test]
    fn push_out_of_a_whole_queue_keeps_the_round_consistent() {
        let limit = BufferLimit {
            packets: Some(2),
            policy: DropPolicy::LongestQueueDrop,
            ..BufferLimit::UNLIMITED
        };
        let mut s = drr(&[], limit);
        let mut drops = Vec::new();
        s.enqueue(Packet::new(0, 0, 100, 0), 0, &mut drops);
        s.enqueue(Packet::new(1, 0, 100, 0), 0, &mut drops);
        s.enqueue(Packet::new(2, 1, 100, 0), 0, &mut drops); // pushes out packet 1
        assert_eq!(drops.len(), 1);
        assert_eq!(drops[0].packet.id, 1);
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 0);
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 2);
        assert!(s.dequeue(0, &mut drops).is_none());
    }

    proptest::proptest! {
        #[test]
        fn invariants(trace in testkit::arb_trace(5, 300), lqd in proptest::bool::ANY) {
            let limit = testkit::byte_limit(8000, lqd);
            let mut s = drr(&[(1, 300), (2, 1500), (3, 4000)], limit);
            testkit::check_invariants(&mut s, &trace, true)?;
        }

        /// S–V lemma 2 on two backlogged flows with random quanta and packet sizes: after any
        /// number of packets, |sent_0/Q_0 − sent_1/Q_1| · Q ≤ Max + 2Q.
        #[test]
        fn byte_shares_follow_quanta(q0 in 100u32..3000, q1 in 100u32..3000, sizes in proptest::collection::vec(40u32..=1500, 64), n in 1usize..500) {
            let mut s = drr(&[(0, q0), (1, q1)], BufferLimit::UNLIMITED);
            let served = testkit::backlogged_service(&mut s, &[0, 1], 600, |f, k| sizes[(k + f as usize) % sizes.len()], n);
            let q = q0.min(q1) as f64;
            let gap = (served[0] as f64 / q0 as f64 - served[1] as f64 / q1 as f64).abs() * q;
            proptest::prop_assert!(gap <= 1500.0 + 2.0 * q, "gap {} > Max + 2Q = {}", gap, 1500.0 + 2.0 * q);
        }
    }
}
