//! Weighted Round Robin (`wrr`): per-flow queues visited in turn; a visit sends up to the
//! flow's weight w_i (flow key `packets_per_round`) in packets.
//!
//! As described in Zhang's thesis (seed 000), §2.4.1, citing \[BB94\]: "Each queue has an
//! associated weight. In every round of service, the number of packets served from a queue
//! is proportional to its associated weight." Sizes are ignored, so a backlogged flow with
//! mean packet size s̄_i receives the share r_i = w_i·s̄_i / Σ_j w_j·s̄_j of the link (sum over
//! the backlogged flows), not w_i/Σw (the thesis: "WRR is only good for the networks with
//! fixed packet size"); DRR (`drr`) and EWRR (`ewrr`) count bytes instead.
//!
//! Names → code:
//! * weight w_i (packets per round) → [`DeficitFlow::quantum`];
//! * packets the flow may still send in its current visit → [`DeficitFlow::deficit`] (a
//!   deficit counted in packets);
//! * the round-robin list of backlogged flows → `active` ([`ActiveList`], head served next).
//!
//! Invariants: a flow is on `active` iff its queue is non-empty (a flow emptied by a
//! push-out is removed lazily when it reaches the head); only the head flow's deficit
//! differs from its weight, and it is at least 1 there. A flow that stays backlogged sends
//! exactly w_i packets per visit. Work conserving; O(1) enqueue and dequeue.
//!
//! Choices where the descriptions are silent:
//! * A visit's packets go back to back (as in DRR), not interleaved with other flows.
//! * A "round" is one pass over `active`. A flow that becomes backlogged while a round is in
//!   progress joins the tail of `active`: it is visited after every flow already on the
//!   list — in the current pass if those flows are still ahead of the tail, never before a
//!   flow that was waiting. A flow that empties leaves the list and forfeits the rest of its
//!   visit; when it comes back it joins the tail with a full w_i.
//! * A flow with no `packets_per_round` (neither its own nor `flow_defaults`) has w_i = 1.
//! * `drop_policy = "longest_queue_drop"` pushes out the tail of the flow whose byte backlog
//!   divided by its weight is largest ([`crate::queues::FlowQueues::admit`]).
//! * A flow id above [`crate::MAX_FLOW_ID`] is dropped as invalid, outside the per-flow counters.

use crate::config::{ConfigError, FlowParams, TableReader};
use crate::counters::{Counters, Dropped};
use crate::discipline::{BuildContext, Discipline, DisciplineInfo, ParamInfo};
use crate::packet::{FlowId, Packet};
use crate::queues::Admission;
use crate::round_robin::{ActiveList, DeficitFlow, DeficitFlows};
use crate::scheduler::Scheduler;
use crate::time::TimeNs;

/// Weight of a flow that sets none.
pub const DEFAULT_WEIGHT: u32 = 1;

/// Parameters of [`Wrr`] (none besides the buffer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WrrConfig;

/// Weighted Round Robin scheduler.
#[derive(Clone, Debug)]
pub struct Wrr {
    flows: DeficitFlows<WrrFlowParams, ()>,
    active: ActiveList,
}

/// A WRR flow's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WrrFlowParams {
    /// w_i, packets sent per visit (key `packets_per_round`).
    pub packets_per_round: u32,
}

impl FlowParams for WrrFlowParams {
    fn read(reader: &mut TableReader<'_>, inherited: &Self) -> Result<Self, ConfigError> {
        Ok(WrrFlowParams {
            packets_per_round: reader
                .positive_u32("packets_per_round")?
                .unwrap_or(inherited.packets_per_round),
        })
    }
}

impl Wrr {
    /// The state of `flow`, if seen: w_i is its quantum, the packets it may still send in its
    /// visit its deficit.
    pub fn flow(&self, flow: FlowId) -> Option<&DeficitFlow<()>> {
        self.flows.get(flow)
    }

    /// A flow leaves the list (emptied) or goes to its tail (visit over) with a fresh weight.
    fn end_visit(&mut self, flow: FlowId, emptied: bool) {
        let state = self.flows.state(flow);
        state.deficit = state.quantum as i64;
        if emptied {
            state.active = false;
            self.active.remove_head();
        } else {
            self.active.rotate();
        }
    }

    /// The head flow of the active list once flows emptied by push-outs are removed.
    #[inline]
    fn head(&mut self) -> Option<FlowId> {
        loop {
            let flow = self.active.front()?;
            if !self.flows.is_empty(flow) {
                return Some(flow);
            }
            self.end_visit(flow, true);
        }
    }
}

impl Discipline for Wrr {
    type Config = WrrConfig;
    const INFO: DisciplineInfo = DisciplineInfo {
        id: "wrr",
        name: "Weighted Round Robin",
        citation: "(classic; as described in Zhang, MSc thesis 2001, §2.4.1)",
        summary: "Round robin over flows; each visit sends up to the flow's weight in packets, whatever their sizes. O(1).",
        scheduler_params: &[],
        flow_params: &[ParamInfo {
            name: "packets_per_round",
            unit: "packets (integer ≥ 1)",
            default: "1",
            description: "packets the flow sends per visit",
        }],
        per_flow_queues: true,
    };

    fn read_config(_reader: &mut TableReader<'_>) -> Result<WrrConfig, ConfigError> {
        Ok(WrrConfig)
    }

    fn build(_config: WrrConfig, context: &BuildContext<'_>) -> Result<Wrr, ConfigError> {
        let base = WrrFlowParams {
            packets_per_round: DEFAULT_WEIGHT,
        };
        Ok(Wrr {
            flows: DeficitFlows::new(context.limit, context.flows.parse(&Self::INFO, &base)?),
            active: ActiveList::default(),
        })
    }
}

impl Scheduler for Wrr {
    fn id(&self) -> &'static str {
        Self::INFO.id
    }

    fn enqueue(&mut self, packet: Packet, _now: TimeNs, drops: &mut Vec<Dropped>) {
        let flow = packet.flow;
        let first = |p: &WrrFlowParams| {
            let weight = p.packets_per_round as u64;
            DeficitFlow {
                deficit: weight as i64,
                ..DeficitFlow::new(weight, ())
            }
        };
        if self.flows.admit(packet, drops, |s| s.quantum, first) == Admission::Queued {
            let state = self.flows.state(flow);
            if !state.active {
                state.active = true;
                self.active.push(flow);
            }
        }
    }

    fn dequeue(&mut self, _now: TimeNs, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        let flow = self.head()?;
        let (packet, emptied) = self.flows.queues.pop_sent_emptied(flow)?;
        let state = self.flows.state(flow);
        state.deficit -= 1;
        if emptied || state.deficit == 0 {
            self.end_visit(flow, emptied);
        }
        Some(packet)
    }

    fn peek(&mut self, _now: TimeNs) -> Option<Packet> {
        let flow = self.head()?;
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

    fn wrr(weights: &[(FlowId, u32)], limit: BufferLimit) -> Wrr {
        testkit::build_weighted(WrrConfig, weights, limit)
    }

    /// Weights 3, 1, 2 (flows 0, 1, 2), five packets each of mixed sizes queued at time 0
    /// (ids 0..5 flow 0, 5..10 flow 1, 10..15 flow 2). Rounds, by hand:
    /// 1: 0 1 2 | 5 | 10 11;  2: 3 4 (flow 0 empties) | 6 | 12 13;  3: 7 | 14;  4: 8;  5: 9.
    #[test]
    fn packets_per_round_equal_the_weight() {
        let mut s = wrr(&[(0, 3), (1, 1), (2, 2)], BufferLimit::UNLIMITED);
        let sizes = [40, 1500, 700, 64, 1000];
        let mut packets = Vec::new();
        for flow in 0..3u32 {
            for k in 0..5 {
                let id = (flow * 5 + k) as u64;
                packets.push(Packet::new(id, flow, sizes[(k as usize + flow as usize) % 5], 0));
            }
        }
        let order = testkit::send_order(&mut s, &packets);
        assert_eq!(order, vec![0, 1, 2, 5, 10, 11, 3, 4, 6, 12, 13, 7, 14, 8, 9]);
    }

    /// A flow that arrives mid-round joins the tail: flows 0 and 1 (weight 2) are backlogged;
    /// flow 2 arrives while flow 0 is being served and is visited after flow 1.
    #[test]
    fn a_flow_arriving_mid_round_joins_the_tail() {
        let mut s = wrr(&[(0, 2), (1, 2), (2, 2)], BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        for id in 0..3 {
            s.enqueue(Packet::new(id, 0, 100, 0), 0, &mut drops);
            s.enqueue(Packet::new(10 + id, 1, 100, 0), 0, &mut drops);
        }
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 0);
        s.enqueue(Packet::new(20, 2, 100, 0), 0, &mut drops);
        let rest: Vec<u64> = (0..6).map(|_| s.dequeue(0, &mut drops).unwrap().id).collect();
        assert_eq!(rest, vec![1, 10, 11, 20, 2, 12]);
        assert_eq!(s.flow(2).unwrap().deficit, 2, "flow 2 left with a fresh weight");
        assert!(!s.flow(2).unwrap().active);
    }

    /// Backlogged packet shares are exactly the weights (whatever the sizes).
    #[test]
    fn backlogged_packet_counts_follow_weights() {
        let mut s = wrr(&[(0, 1), (1, 2), (2, 5)], BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        let mut id = 0;
        for k in 0..200u32 {
            for flow in 0..3 {
                s.enqueue(Packet::new(id, flow, 40 + 97 * k % 1400, 0), 0, &mut drops);
                id += 1;
            }
        }
        let mut sent = [0u32; 3];
        for _ in 0..8 * 20 {
            sent[s.dequeue(0, &mut drops).unwrap().flow as usize] += 1;
        }
        assert_eq!(sent, [20, 40, 100]);
    }

    /// Flow 0's only packet is pushed out while flow 0 heads the active list; the next
    /// dequeue drops it from the list and serves flow 1.
    #[test]
    fn push_out_of_a_whole_queue_keeps_the_round_consistent() {
        let limit = BufferLimit {
            packets: Some(2),
            policy: DropPolicy::LongestQueueDrop,
            ..BufferLimit::UNLIMITED
        };
        let mut s = wrr(&[], limit);
        let mut drops = Vec::new();
        s.enqueue(Packet::new(0, 0, 500, 0), 0, &mut drops);
        s.enqueue(Packet::new(1, 1, 100, 0), 0, &mut drops);
        s.enqueue(Packet::new(2, 1, 100, 0), 0, &mut drops); // 500 B > 200 B: pushes out 0
        assert_eq!(drops.len(), 1);
        assert_eq!(drops[0].packet.id, 0);
        assert_eq!(s.active.front(), Some(0), "flow 0 leaves the list lazily");
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 1);
        assert!(!s.flow(0).unwrap().active);
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 2);
        assert!(s.dequeue(0, &mut drops).is_none());
    }

    /// A flow id beyond MAX_FLOW_ID is refused without touching the per-flow counters.
    #[test]
    fn invalid_flow_id_is_refused() {
        let mut s = wrr(&[], BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        s.enqueue(Packet::new(0, u32::MAX, 100, 0), 0, &mut drops);
        assert_eq!(drops[0].reason, crate::counters::DropReason::InvalidPacket);
        assert!(s.counters().flows().is_empty());
        assert!(s.dequeue(0, &mut drops).is_none());
    }

    proptest::proptest! {
        #[test]
        fn invariants(trace in testkit::arb_trace(5, 300), lqd in proptest::bool::ANY, packets in 2u64..40) {
            let policy = if lqd { DropPolicy::LongestQueueDrop } else { DropPolicy::TailDrop };
            let limit = BufferLimit { packets: Some(packets), bytes: Some(12_000), policy };
            let mut s = wrr(&[(1, 3), (2, 1), (3, 7)], limit);
            testkit::check_invariants(&mut s, &trace, true)?;
        }

        /// Over any prefix of a backlogged run, each flow's packet count is within one visit
        /// of its weight times the number of completed rounds: |sent_i − k·w_i| ≤ w_i where k
        /// is the number of full rounds so far.
        #[test]
        fn packet_shares_follow_weights(w in proptest::collection::vec(1u32..6, 2..5), n in 1usize..400) {
            let weights: Vec<(FlowId, u32)> = w.iter().enumerate().map(|(f, &w)| (f as FlowId, w)).collect();
            let mut s = wrr(&weights, BufferLimit::UNLIMITED);
            let flows: Vec<FlowId> = (0..w.len() as FlowId).collect();
            testkit::backlogged_service(&mut s, &flows, 500, |f, k| 40 + (f * 131 + k as u32 * 17) % 1400, n);
            let round: u32 = w.iter().sum();
            let k = n as u32 / round;
            for (f, &weight) in w.iter().enumerate() {
                let sent = s.counters().flow(f as FlowId).unwrap().sent_packets as u32;
                proptest::prop_assert!(sent >= k * weight && sent <= (k + 1) * weight,
                    "flow {} sent {} packets after {} full rounds of weight {}", f, sent, k, weight);
            }
        }
    }
}
