//! Deficit Round Robin (`drr`).
//!
//! M. Shreedhar and G. Varghese, "Efficient Fair Queueing Using Deficit Round Robin",
//! IEEE/ACM Transactions on Networking 4(3), 1996, §3 (figure 3 pseudo-code); as summarised in
//! Zhang's thesis (seed 000) §2.4.
//!
//! Paper name → code:
//! * `Quantum_i` → [`DeficitFlow::quantum`] (bytes), `DeficitCounter_i` → [`DeficitFlow::deficit`];
//! * `ActiveList` → `active` ([`ActiveList`], head is served next);
//! * the dequeue loop → [`DeficitFlows::select_send`] (one pass: select the flow whose head
//!   packet fits, send it; [`Drr::dequeue_into`] is the same dequeue, the packet copied from
//!   its node straight into the caller's place for it, through
//!   [`DeficitFlows::select_send_with`]); "add Quantum_i when the flow reaches the head of the ActiveList"
//!   → its visit step (as in [`DeficitFlows::step`], which `peek` uses through
//!   [`DeficitFlows::select`]); "if queue empty: DeficitCounter_i = 0, remove from
//!   ActiveList" → its send (as [`DeficitFlows::send_from`]).
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
//! the round (adds the quantum, rotates) exactly as the next dequeue would. A flow whose
//! queue a push-out emptied stays on the ActiveList until the selection reaches it (it then
//! leaves with deficit 0); if a packet of it arrives first, it keeps its place, its deficit
//! and a visit under way (the paper, which does not push packets out, would append it at the
//! tail with deficit 0).

use crate::config::{ConfigError, FlowParams, TableReader};
use crate::counters::{Counters, Dropped};
use crate::discipline::{BuildContext, Discipline, DisciplineInfo, ParamInfo};
use crate::packet::{FlowId, Packet};
use crate::queues::Admission;
use crate::round_robin::{ActiveList, DeficitFlow, DeficitFlows, DEFAULT_QUANTUM};
use crate::scheduler::Scheduler;
use crate::time::TimeNs;

/// Parameters of [`Drr`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DrrConfig {
    /// Quantum in bytes of flows whose own parameters give none.
    pub quantum: Option<u32>,
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

/// Deficit Round Robin scheduler.
#[derive(Clone, Debug)]
pub struct Drr {
    flows: DeficitFlows<DrrFlowParams, ()>,
    active: ActiveList,
}

impl Drr {
    /// The state of `flow`, if seen.
    pub fn flow(&self, flow: FlowId) -> Option<&DeficitFlow<()>> {
        self.flows.get(flow)
    }

    /// [`Scheduler::dequeue`], the packet written into `into` instead of returned; whether
    /// there was one (`into` is left as it was otherwise). The packet is copied once, from its
    /// node to `into`: returned, it goes through the stack (and an `Option` whose
    /// discriminant is a niche of one of its fields) on its way to the caller's place for it,
    /// and a later load of it there may wait for the stores of that copy.
    #[inline]
    pub fn dequeue_into(&mut self, into: &mut Packet) -> bool {
        self.flows
            .select_send_with(&mut self.active, |_, _| {}, |_, _| {}, |packet| *into = *packet)
            .is_some()
    }

    #[inline]
    fn select(&mut self) -> Option<FlowId> {
        self.flows.select(&mut self.active, |_, _| {}, |_, _| {})
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
        let quantum = reader.positive_u32("quantum")?;
        Ok(DrrConfig { quantum })
    }

    fn build(config: DrrConfig, context: &BuildContext<'_>) -> Result<Drr, ConfigError> {
        let base = DrrFlowParams {
            quantum: config.quantum.unwrap_or(DEFAULT_QUANTUM),
        };
        Ok(Drr {
            flows: DeficitFlows::new(context.limit, context.flows.parse(&Self::INFO, &base)?),
            active: ActiveList::default(),
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
        // Buffer stealing weighs queue lengths by 1/quantum (the flow's share).
        let first = |p: &DrrFlowParams| DeficitFlow::new(p.quantum as u64, ());
        if self.flows.admit(packet, drops, |s| s.quantum, first) == Admission::Queued {
            self.flows.activate(flow, &mut self.active);
        }
    }

    #[inline]
    fn dequeue(&mut self, _now: TimeNs, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        let (_, packet, _) = self.flows.select_send(&mut self.active, |_, _| {}, |_, _| {})?;
        Some(packet)
    }

    fn peek(&mut self, _now: TimeNs) -> Option<Packet> {
        let flow = self.select()?;
        self.flows.queues.head(flow).copied()
    }

    fn counters(&self) -> &Counters {
        &self.flows.queues.counters
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

        /// DRR's dequeue (`DeficitFlows::select_send`, one pass) against `select` then
        /// `send_from`: two schedulers fed the same arrivals, with 0–2 dequeues after each,
        /// under a small buffer (longest-queue drop pushes whole queues out, so flows also
        /// leave lazily): the same packets, drops, deficits and list membership throughout.
        #[test]
        fn one_pass_dequeue_as_select_then_send(trace in testkit::arb_trace(5, 300), pattern in proptest::collection::vec(0usize..4, 1..50), lqd in proptest::bool::ANY) {
            let limit = testkit::byte_limit(4000, lqd);
            let mut one_pass = drr(&[(1, 300), (2, 1500), (3, 4000)], limit);
            let mut reference = one_pass.clone();
            let (mut one_pass_drops, mut reference_drops) = (Vec::new(), Vec::new());
            let reference_dequeue = |s: &mut Drr| {
                let flow = s.select()?;
                Some(s.flows.send_from(flow, &mut s.active).0)
            };
            for (k, packet) in trace.iter().enumerate() {
                one_pass.enqueue(*packet, 0, &mut one_pass_drops);
                reference.enqueue(*packet, 0, &mut reference_drops);
                let step = pattern[k % pattern.len()];
                if step == 3 {
                    // A peek begins the head's visit (its quantum is credited); the dequeue
                    // after it must not credit it again.
                    proptest::prop_assert_eq!(one_pass.peek(0), reference.peek(0));
                    let sent = one_pass.dequeue(0, &mut one_pass_drops);
                    proptest::prop_assert_eq!(sent, reference_dequeue(&mut reference));
                } else {
                    for _ in 0..step {
                        let sent = one_pass.dequeue(0, &mut one_pass_drops);
                        proptest::prop_assert_eq!(sent, reference_dequeue(&mut reference));
                    }
                }
                proptest::prop_assert_eq!(&one_pass_drops, &reference_drops);
                for flow in 0..5 {
                    proptest::prop_assert_eq!(one_pass.flow(flow), reference.flow(flow));
                }
                proptest::prop_assert_eq!(one_pass.active.front(), reference.active.front());
                proptest::prop_assert_eq!(one_pass.active.len(), reference.active.len());
                proptest::prop_assert_eq!(one_pass.active.visiting(), reference.active.visiting());
            }
            loop {
                let sent = one_pass.dequeue(0, &mut one_pass_drops);
                proptest::prop_assert_eq!(sent, reference_dequeue(&mut reference));
                if sent.is_none() {
                    break;
                }
            }
        }

        /// `dequeue_into` is `dequeue`: two schedulers fed the same arrivals, with 0–2 dequeues
        /// after each and a small buffer (so flows are also pushed out and leave lazily), one
        /// dequeuing with each: the same packets (a scheduler with nothing to send leaves the
        /// place as it was), drops and flow states throughout.
        #[test]
        fn dequeue_into_as_dequeue(trace in testkit::arb_trace(5, 300), pattern in proptest::collection::vec(0usize..3, 1..50), lqd in proptest::bool::ANY) {
            let limit = testkit::byte_limit(4000, lqd);
            let mut by_value = drr(&[(1, 300), (2, 1500), (3, 4000)], limit);
            let mut into = by_value.clone();
            let (mut value_drops, mut into_drops) = (Vec::new(), Vec::new());
            let mut place = Packet::new(u64::MAX, 9, 1, 0);
            let mut dequeue_both = |by_value: &mut Drr, into: &mut Drr, drops: &mut Vec<Dropped>| {
                let before = place;
                let sent = by_value.dequeue(0, drops);
                let wrote = into.dequeue_into(&mut place);
                (sent, wrote.then_some(place), wrote || place == before)
            };
            for (k, packet) in trace.iter().enumerate() {
                by_value.enqueue(*packet, 0, &mut value_drops);
                into.enqueue(*packet, 0, &mut into_drops);
                for _ in 0..pattern[k % pattern.len()] {
                    let (sent, written, kept) = dequeue_both(&mut by_value, &mut into, &mut value_drops);
                    proptest::prop_assert_eq!(sent, written);
                    proptest::prop_assert!(kept, "an empty dequeue_into changed its place");
                }
                proptest::prop_assert_eq!(&value_drops, &into_drops);
                for flow in 0..5 {
                    proptest::prop_assert_eq!(by_value.flow(flow), into.flow(flow));
                }
                proptest::prop_assert_eq!(by_value.active.front(), into.active.front());
                proptest::prop_assert_eq!(by_value.backlog(), into.backlog());
            }
            loop {
                let (sent, written, kept) = dequeue_both(&mut by_value, &mut into, &mut value_drops);
                proptest::prop_assert_eq!(sent, written);
                proptest::prop_assert!(kept);
                if sent.is_none() {
                    break;
                }
            }
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
