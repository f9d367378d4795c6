//! Self-Clocked Fair Queueing (`scfq`).
//!
//! S. J. Golestani, "A Self-Clocked Fair Queueing Scheme for Broadband Applications",
//! Proc. IEEE INFOCOM '94, pp. 636–646, 1994 (the SCFQ algorithm and its fairness theorem);
//! as summarised in Zhang's thesis (seed 000) §2.3.3.
//!
//! Paper name → code (session k, its i-th packet):
//! * `F̂_k^i = L_k^i / r_k + max(F̂_k^{i−1}, v̂(a_k^i))` → the arrival's
//!   [`PacketTag::finish`], computed in [`Scfq::enqueue`] as
//!   `max(last_finish, virtual_time) + L/weight`;
//! * `F̂_k^{i−1}` → `ScfqFlow::last_finish`; `r_k` → the flow's `weight` (rates
//!   `r_k = w_k·C/Σw` scale every tag by the same constant, so the order is the same);
//! * `v̂(t)`, "the service tag of the packet receiving service at time t" →
//!   [`Scfq::virtual_time`], set to the finish tag of each packet as it is dequeued;
//! * "packets are serviced in increasing order of F̂" → [`TaggedQueues::pop_min`], ties in
//!   arrival order.
//!
//! Units: tags in bytes per unit weight, fixed point ([`VirtualTime`], 2^-32 resolution,
//! `L/w` rounded up).
//!
//! Invariants: a flow's tags increase packet by packet; `virtual_time` never decreases (a
//! packet dequeued later has a tag at least that of the one in service: every arrival's tag
//! exceeds `virtual_time`); only head-of-line tags are in the priority structure, and they lie
//! in `[v̂, v̂ + L_max/w_min]`: a packet that becomes a head gets `F̂ = v̂ + L/w` (its flow's
//! previous tag was just served, or was served before and so is at most `v̂`). A push-out never
//! lowers a head (a pushed-out head leaves; a pushed-out tail only lowers `last_finish`, which
//! the next arrival raises to at least `v̂` again).
//!
//! Guarantee (Golestani's fairness theorem): over any interval in which flows i and j are both
//! backlogged, `|W_i/w_i − W_j/w_j| ≤ L_i^max/w_i + L_j^max/w_j` (W in bytes).
//!
//! Complexity: the heads are kept in a [`TagCalendar`] (buckets of half a byte per unit weight
//! from `v̂` on at first, then a quarter to an eighth of the heads' mean spacing, each sorted
//! by (tag, arrival), a bitmap to find the first): O(1) per packet
//! while the heads per bucket stay few, exact order in every case (tags outside its window go
//! to a 4-ary heap beside it).
//!
//! Choices where the paper is silent:
//! * The paper resets `v̂` to zero (and every tag) at the end of a busy period. Here `v̂` is
//!   never reset: at the end of a busy period every flow's last finish tag is at most `v̂`, so
//!   the next arrivals all get `v̂ + L/w` — the same order as after a reset, with no need to
//!   know when the link goes idle.
//! * Longest-queue drop weighs queue lengths by 1/weight; when a tail is pushed out, its
//!   flow's `last_finish` returns to the finish tag of the flow's previous packet (queued or
//!   sent), as if the packet had never arrived.

use crate::config::{ConfigError, FlowParamTable, TableReader};
use crate::counters::{Counters, Dropped};
use crate::discipline::{BuildContext, Discipline, DisciplineInfo};
use crate::packet::{FlowId, Packet, MAX_FLOW_ID};
use crate::queues::Admission;
use crate::scheduler::Scheduler;
use crate::tag_calendar::TagCalendar;
use crate::tagged_queues::{share_param, PacketTag, ShareParams, TaggedQueues};
use crate::time::TimeNs;
use crate::virtual_time::VirtualTime;

/// Parameters of [`Scfq`] (none besides the buffer; weights are per flow).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScfqConfig;

/// Per-flow SCFQ state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScfqFlow {
    /// The flow's weight (share of the link in proportion to it).
    pub weight: u32,
    /// `F̂_k^{i−1}`: finish tag of the flow's most recently admitted packet.
    pub last_finish: VirtualTime,
}

/// Self-Clocked Fair Queueing scheduler.
#[derive(Clone, Debug)]
pub struct Scfq {
    queues: TaggedQueues<ScfqFlow, TagCalendar>,
    table: FlowParamTable<ShareParams>,
    virtual_time: VirtualTime,
}

impl Scfq {
    /// `v̂`: the finish tag of the packet most recently dequeued (in service).
    pub fn virtual_time(&self) -> VirtualTime {
        self.virtual_time
    }

    /// The state of `flow`, if seen.
    pub fn flow(&self, flow: FlowId) -> Option<&ScfqFlow> {
        self.queues.state(flow).filter(|state| state.weight > 0)
    }

    /// The finish tags of the packets queued for `flow`, head first.
    pub fn queued_tags(&self, flow: FlowId) -> Vec<VirtualTime> {
        self.queues.tags(flow).map(|tag| tag.finish).collect()
    }

    fn ensure_flow(&mut self, flow: FlowId) {
        let state = self.queues.state_mut(flow);
        if state.weight == 0 {
            state.weight = self.table.get(flow).share;
        }
    }
}

impl Discipline for Scfq {
    type Config = ScfqConfig;
    const INFO: DisciplineInfo = DisciplineInfo {
        id: "scfq",
        name: "Self-Clocked Fair Queueing",
        citation: "Golestani, IEEE INFOCOM 1994",
        summary: "Serves the least finish tag F = max(F_prev, v) + L/w, where v is the finish tag of the packet in service. Heads in a calendar queue (O(1) per packet for tags within its window, a heap beside it for others); byte shares in proportion to weights within L_i/w_i + L_j/w_j.",
        scheduler_params: &[],
        flow_params: &[share_param("share of the link, in proportion to the shares of the backlogged flows")],
        per_flow_queues: true,
    };

    fn read_config(_reader: &mut TableReader<'_>) -> Result<ScfqConfig, ConfigError> {
        Ok(ScfqConfig)
    }

    fn build(_config: ScfqConfig, context: &BuildContext<'_>) -> Result<Scfq, ConfigError> {
        Ok(Scfq {
            queues: TaggedQueues::new(context.limit),
            table: context.flows.parse(&Self::INFO, &ShareParams::default())?,
            virtual_time: VirtualTime::ZERO,
        })
    }
}

impl Scheduler for Scfq {
    fn id(&self) -> &'static str {
        Self::INFO.id
    }

    fn enqueue(&mut self, packet: Packet, _now: TimeNs, drops: &mut Vec<Dropped>) {
        let flow = packet.flow;
        let size = packet.size as u64;
        if flow <= MAX_FLOW_ID {
            self.ensure_flow(flow);
        }
        let admission = self.queues.admit_restoring(
            packet,
            |state| state.weight as u64,
            // A flow that lost its tail takes back the finish tag it had before that arrival.
            |state, previous_finish| state.last_finish = previous_finish,
            drops,
        );
        if admission == Admission::Queued {
            let virtual_time = self.virtual_time;
            self.queues.push_tag_with(flow, |state| {
                // F̂ = L/r + max(F̂_prev, v̂)
                let finish = state
                    .last_finish
                    .max(virtual_time)
                    .saturating_add(VirtualTime::ratio_ceil(size, state.weight as u64));
                state.last_finish = finish;
                PacketTag { key: finish, finish }
            });
        }
    }

    fn dequeue(&mut self, _now: TimeNs, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        let (packet, tag) = self.queues.pop_min()?;
        // v̂ = the service tag of the packet now in service.
        self.virtual_time = tag.finish;
        Some(packet)
    }

    fn peek(&mut self, _now: TimeNs) -> Option<Packet> {
        self.queues.peek_min().map(|(packet, _)| packet)
    }

    fn counters(&self) -> &Counters {
        self.queues.counters()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{BufferLimit, DropPolicy, FlowTable};
    use crate::testkit;

    pub(crate) fn scfq(weights: &[(FlowId, u32)], limit: BufferLimit) -> Scfq {
        testkit::build_weighted(ScfqConfig, weights, limit)
    }

    fn v(value: u64) -> VirtualTime {
        VirtualTime::from_integer(value)
    }

    /// Hand-derived on the 1 byte/µs test link. At t = 0: flow 0 (weight 1) queues two
    /// 1000-byte packets (ids 0, 1), flow 1 (weight 2) two 1000-byte packets (ids 2, 3).
    /// v̂ = 0, so F = 1000, 2000 for flow 0 and 500, 1000 for flow 1. Service: id 2 (500) in
    /// [0, 1 ms), then the tie at 1000 goes to the earlier arrival, id 0, in [1, 2 ms).
    /// At 1.5 ms flow 2 (weight 1) sends 500 bytes: v̂ is the tag of the packet in service,
    /// 1000, so F = 1500, which beats id 1 (2000) but not id 3 (1000).
    #[test]
    fn tags_follow_the_packet_in_service() {
        let mut s = scfq(&[(1, 2)], BufferLimit::UNLIMITED);
        let packets = [
            Packet::new(0, 0, 1000, 0),
            Packet::new(1, 0, 1000, 0),
            Packet::new(2, 1, 1000, 0),
            Packet::new(3, 1, 1000, 0),
            Packet::new(4, 2, 500, 1_500_000),
        ];
        let mut drops = Vec::new();
        for p in &packets[..4] {
            s.enqueue(*p, 0, &mut drops);
        }
        assert_eq!(s.queued_tags(0), vec![v(1000), v(2000)]);
        assert_eq!(s.queued_tags(1), vec![v(500), v(1000)]);
        let mut s = scfq(&[(1, 2)], BufferLimit::UNLIMITED);
        let run = crate::link::run_link(&mut s, testkit::link(), &packets).unwrap();
        let order: Vec<usize> = run.send_order.iter().map(|(i, _)| *i).collect();
        assert_eq!(order, vec![2, 0, 3, 4, 1]);
        assert_eq!(s.flow(2).unwrap().last_finish, v(1500));
        assert_eq!(s.virtual_time(), v(2000), "the last packet served has tag 2000");
    }

    #[test]
    fn push_out_rolls_back_the_last_finish_tag() {
        let limit = BufferLimit {
            packets: Some(3),
            policy: DropPolicy::LongestQueueDrop,
            ..BufferLimit::UNLIMITED
        };
        let mut s = scfq(&[], limit);
        let mut drops = Vec::new();
        s.enqueue(Packet::new(0, 0, 100, 0), 0, &mut drops);
        s.enqueue(Packet::new(1, 0, 300, 0), 0, &mut drops);
        s.enqueue(Packet::new(2, 1, 100, 0), 0, &mut drops);
        assert_eq!(s.flow(0).unwrap().last_finish, v(400));
        // Flow 0 (400 B) is the longest: its 300-byte tail is pushed out, and its last finish
        // returns to 100, so its next packet is tagged 100 + 50 = 150.
        s.enqueue(Packet::new(3, 2, 100, 0), 0, &mut drops);
        assert_eq!(drops.len(), 1);
        assert_eq!(drops[0].packet.id, 1);
        assert_eq!(s.flow(0).unwrap().last_finish, v(100));
        s.dequeue(0, &mut drops); // id 0 (tag 100)
        s.enqueue(Packet::new(4, 0, 50, 0), 0, &mut drops);
        assert_eq!(s.queued_tags(0), vec![v(150)]);
    }

    #[test]
    fn zero_share_is_a_config_error() {
        let mut table = FlowTable::default();
        table.set(3, testkit::params("share = 0"), "flow[0]");
        let context = BuildContext {
            limit: BufferLimit::UNLIMITED,
            flows: &table,
            link_rate: testkit::link(),
        };
        let e = Scfq::build(ScfqConfig, &context).unwrap_err();
        assert_eq!(
            e.to_string(),
            "flow[0].share = 0: must be an integer from 1 to 4294967295"
        );
    }

    proptest::proptest! {
        #[test]
        fn invariants(trace in testkit::arb_trace(5, 300), lqd in proptest::bool::ANY) {
            let limit = testkit::byte_limit(8000, lqd);
            let mut s = scfq(&[(1, 2), (2, 3), (3, 8)], limit);
            testkit::check_invariants(&mut s, &trace, true)?;
        }

        /// Golestani's fairness theorem on three backlogged flows with random weights and
        /// sizes: after any number of packets, every pair satisfies
        /// |W_i/w_i − W_j/w_j| ≤ L_i^max/w_i + L_j^max/w_j.
        #[test]
        fn byte_shares_follow_weights(
            weights in proptest::collection::vec(1u32..=8, 3),
            sizes in proptest::collection::vec(40u32..=1500, 64),
            n in 1usize..600,
        ) {
            let mut s = scfq(&[(0, weights[0]), (1, weights[1]), (2, weights[2])], BufferLimit::UNLIMITED);
            let (served, largest) = testkit::three_backlogged_flows(&mut s, &sizes, n);
            let share: Vec<f64> = weights.iter().map(|&w| w as f64).collect();
            testkit::check_pairwise_fairness(&served, &share, &largest, testkit::PairBound::Sum, 1e-9)?;
        }
    }
}
