//! Start-time Fair Queueing (`stfq`).
//!
//! P. Goyal, H. M. Vin and H. Cheng, "Start-time Fair Queuing: A Scheduling Algorithm for
//! Integrated Services Packet Switching Networks", Proc. ACM SIGCOMM '96, pp. 157–168, 1996
//! (§2, the three-step definition of SFQ, and Theorem 1); extended in IEEE/ACM Transactions on
//! Networking 5(5), 1997.
//!
//! Paper name → code (flow f, its j-th packet p_f^j of length l_f^j):
//! * `S(p_f^j) = max{v(A(p_f^j)), F(p_f^{j−1})}` → [`PacketTag::key`] (the start tag),
//!   computed in [`Stfq::enqueue`];
//! * `F(p_f^j) = S(p_f^j) + l_f^j / r_f`, `F(p_f^0) = 0` → [`PacketTag::finish`]; the
//!   previous finish tag is [`StfqFlow::last_finish`]; `r_f` → the flow's `weight`;
//! * step 2, "v(t) is the start tag of the packet in service at time t" →
//!   [`Stfq::virtual_time`], set at each dequeue; "at the end of a busy period, v is set to the
//!   maximum finish tag of the packets serviced" → `max_finish_served`, applied when a packet
//!   arrives to an empty scheduler after the link has gone idle;
//! * step 3, "packets are serviced in the increasing order of the start tags; ties are broken
//!   arbitrarily" → [`TaggedQueues::pop_min`] on the start tag, ties in arrival order.
//!
//! Units: tags in bytes per unit weight, fixed point ([`VirtualTime`], 2^-32 resolution,
//! `l/w` rounded up).
//!
//! Invariants: a flow's start tags increase packet by packet; `virtual_time` never decreases;
//! only head-of-line tags are in the priority structure, and they lie in
//! `[v, v + l_max/w_min]`: a packet that becomes a head while its flow is backlogged gets
//! `S = F_prev = S_prev + l/w` with `S_prev` just served (at most `v`), and one arriving to an
//! empty flow gets `S = max(v, F_prev)` with `F_prev` at most `v + l/w` for the same reason.
//!
//! Guarantee (Theorem 1): over any interval in which flows f and m are both backlogged,
//! `|W_f/w_f − W_m/w_m| ≤ l_f^max/w_f + l_m^max/w_m`.
//!
//! Complexity: the heads are kept in a [`TagCalendar`] (buckets of half a byte per unit weight
//! from `v` on at first, then a quarter to an eighth of the heads' mean spacing, each sorted
//! by (tag, arrival), a bitmap to find the first): O(1) per packet
//! while the heads per bucket stay few, exact order in every case (tags outside its window go
//! to a 4-ary heap beside it).
//!
//! Choices where the paper is silent:
//! * The end of a busy period is when the link finishes the last packet with nothing queued.
//!   The scheduler does not see the link, so it computes that moment from the build-time link
//!   rate: a dequeue at `now` of `L` bytes keeps the link busy until
//!   `now + link_rate.transmission_time(L)`. An arrival at exactly that instant starts a new
//!   busy period; an arrival while the last packet is still being sent sees `v` = its start tag.
//! * Longest-queue drop weighs queue lengths by 1/weight; a pushed-out tail returns its flow's
//!   `last_finish` to the finish tag of the flow's previous packet (queued or sent).

use crate::config::{ConfigError, FlowParamTable, TableReader};
use crate::counters::{Counters, Dropped};
use crate::discipline::{BuildContext, Discipline, DisciplineInfo};
use crate::packet::{FlowId, Packet, MAX_FLOW_ID};
use crate::queues::Admission;
use crate::scheduler::Scheduler;
use crate::tag_calendar::TagCalendar;
use crate::tagged_queues::{share_param, PacketTag, ShareParams, TaggedQueues};
use crate::time::{Rate, TimeNs};
use crate::virtual_time::VirtualTime;

/// Parameters of [`Stfq`] (none besides the buffer; weights are per flow).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StfqConfig;

/// Per-flow STFQ state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StfqFlow {
    /// The flow's weight `r_f`.
    pub weight: u32,
    /// `F(p_f^{j−1})`: finish tag of the flow's most recently admitted packet.
    pub last_finish: VirtualTime,
}

/// Start-time Fair Queueing scheduler.
#[derive(Clone, Debug)]
pub struct Stfq {
    queues: TaggedQueues<StfqFlow, TagCalendar>,
    table: FlowParamTable<ShareParams>,
    virtual_time: VirtualTime,
    max_finish_served: VirtualTime,
    link_rate: Rate,
    /// When the last dequeued packet went on the link, and its size: the link is busy until
    /// `last_dequeue_at + link_rate.transmission_time(last_dequeue_size)`.
    last_dequeue_at: TimeNs,
    last_dequeue_size: u64,
}

impl Stfq {
    /// `v`: the start tag of the packet most recently dequeued (in service), or, after a busy
    /// period, the largest finish tag served.
    pub fn virtual_time(&self) -> VirtualTime {
        self.virtual_time
    }

    /// The state of `flow`, if seen.
    pub fn flow(&self, flow: FlowId) -> Option<&StfqFlow> {
        self.queues.state(flow).filter(|state| state.weight > 0)
    }

    /// The tags of the packets queued for `flow`, head first (`key` is the start tag).
    pub fn queued_tags(&self, flow: FlowId) -> Vec<PacketTag> {
        self.queues.tags(flow).collect()
    }

    /// When the link finishes the last dequeued packet (computed from the build-time rate).
    fn link_free_at(&self) -> TimeNs {
        self.last_dequeue_at
            .saturating_add(self.link_rate.transmission_time(self.last_dequeue_size))
    }

    fn ensure_flow(&mut self, flow: FlowId) {
        let state = self.queues.state_mut(flow);
        if state.weight == 0 {
            state.weight = self.table.get(flow).share;
        }
    }
}

impl Discipline for Stfq {
    type Config = StfqConfig;
    const INFO: DisciplineInfo = DisciplineInfo {
        id: "stfq",
        name: "Start-time Fair Queueing",
        citation: "Goyal, Vin & Cheng, ACM SIGCOMM 1996",
        summary: "Serves the least start tag S = max(v, F_prev), where v is the start tag of the packet in service. Heads in a calendar queue (O(1) per packet for tags within its window, a heap beside it for others); byte shares in proportion to weights within l_f/w_f + l_m/w_m.",
        scheduler_params: &[],
        flow_params: &[share_param("share of the link, in proportion to the shares of the backlogged flows")],
        per_flow_queues: true,
    };

    fn read_config(_reader: &mut TableReader<'_>) -> Result<StfqConfig, ConfigError> {
        Ok(StfqConfig)
    }

    fn build(_config: StfqConfig, context: &BuildContext<'_>) -> Result<Stfq, ConfigError> {
        Ok(Stfq {
            queues: TaggedQueues::new(context.limit),
            table: context.flows.parse(&Self::INFO, &ShareParams::default())?,
            virtual_time: VirtualTime::ZERO,
            max_finish_served: VirtualTime::ZERO,
            link_rate: context.link_rate,
            last_dequeue_at: 0,
            last_dequeue_size: 0,
        })
    }
}

impl Scheduler for Stfq {
    fn id(&self) -> &'static str {
        Self::INFO.id
    }

    fn enqueue(&mut self, packet: Packet, now: TimeNs, drops: &mut Vec<Dropped>) {
        if self.queues.is_empty() && now >= self.link_free_at() {
            // End of a busy period: v = the largest finish tag served.
            self.virtual_time = self.virtual_time.max(self.max_finish_served);
        }
        let flow = packet.flow;
        let size = packet.size as u64;
        if flow <= MAX_FLOW_ID {
            self.ensure_flow(flow);
        }
        let admission = self.queues.admit_restoring(
            packet,
            |state| state.weight as u64,
            |state, previous_finish| state.last_finish = previous_finish,
            drops,
        );
        if admission == Admission::Queued {
            let virtual_time = self.virtual_time;
            self.queues.push_tag_with(flow, |state| {
                // S = max{v(A), F_prev};  F = S + l/r
                let start = state.last_finish.max(virtual_time);
                let finish = start.saturating_add(VirtualTime::ratio_ceil(size, state.weight as u64));
                state.last_finish = finish;
                PacketTag { key: start, finish }
            });
        }
    }

    fn dequeue(&mut self, now: TimeNs, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        let (packet, tag) = self.queues.pop_min()?;
        // v = the start tag of the packet in service.
        self.virtual_time = tag.key;
        self.max_finish_served = self.max_finish_served.max(tag.finish);
        self.last_dequeue_at = now;
        self.last_dequeue_size = packet.size as u64;
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
    use crate::config::{BufferLimit, DropPolicy};
    use crate::testkit;

    fn stfq(weights: &[(FlowId, u32)], limit: BufferLimit) -> Stfq {
        testkit::build_weighted(StfqConfig, weights, limit)
    }

    fn tag(start: u64, finish: u64) -> PacketTag {
        PacketTag {
            key: VirtualTime::from_integer(start),
            finish: VirtualTime::from_integer(finish),
        }
    }

    const US: TimeNs = 1000;

    /// Hand-derived on the 1 byte/µs test link; flows 0 and 1 have weight 1, flow 2 weight 2.
    /// * t = 0: A (flow 0, 1000 B) and B (flow 1, 500 B), both S = 0: the tie goes to A
    ///   (arrival order), sent in [0, 1000 µs) with v = 0.
    /// * 200 µs: C (flow 0, 400 B): S = F_prev = 1000, F = 1400. 300 µs: H (flow 1, 300 B):
    ///   S = 500, F = 800 — later than C but served before it.
    /// * 1000 µs: B (S = 0). 1500 µs: H (S = 500), v = 500. 1600 µs: G (flow 2, 100 B):
    ///   S = v = 500, F = 550, so it also passes C. 1800 µs: G; 1900 µs: C (v = 1000), which
    ///   ends at 2300 µs: the busy period is over.
    /// * 3000 µs: D (flow 1, 100 B) and E (flow 2, 200 B): v = max finish served = 1400, so
    ///   D gets (1400, 1500) and E (1400, 1400 + 200/2 = 1500); D goes first (arrival order).
    #[test]
    fn start_tags_and_the_end_of_a_busy_period() {
        let packets = [
            Packet::new(0, 0, 1000, 0),
            Packet::new(1, 1, 500, 0),
            Packet::new(2, 0, 400, 200 * US),
            Packet::new(3, 1, 300, 300 * US),
            Packet::new(4, 2, 100, 1600 * US),
            Packet::new(5, 1, 100, 3000 * US),
            Packet::new(6, 2, 200, 3000 * US),
        ];
        let mut s = stfq(&[(2, 2)], BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        s.enqueue(packets[0], 0, &mut drops);
        s.enqueue(packets[1], 0, &mut drops);
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 0);
        s.enqueue(packets[2], 200 * US, &mut drops);
        s.enqueue(packets[3], 300 * US, &mut drops);
        assert_eq!(s.queued_tags(0), vec![tag(1000, 1400)]);
        assert_eq!(s.queued_tags(1), vec![tag(0, 500), tag(500, 800)]);
        assert_eq!(s.dequeue(1000 * US, &mut drops).unwrap().id, 1);
        assert_eq!(s.dequeue(1500 * US, &mut drops).unwrap().id, 3);
        assert_eq!(s.virtual_time(), VirtualTime::from_integer(500));
        s.enqueue(packets[4], 1600 * US, &mut drops);
        assert_eq!(s.queued_tags(2), vec![tag(500, 550)]);
        assert_eq!(s.dequeue(1800 * US, &mut drops).unwrap().id, 4);
        assert_eq!(s.dequeue(1900 * US, &mut drops).unwrap().id, 2);
        assert_eq!(s.virtual_time(), VirtualTime::from_integer(1000));
        s.enqueue(packets[5], 3000 * US, &mut drops);
        s.enqueue(packets[6], 3000 * US, &mut drops);
        assert_eq!(s.virtual_time(), VirtualTime::from_integer(1400));
        assert_eq!(s.queued_tags(1), vec![tag(1400, 1500)]);
        assert_eq!(s.queued_tags(2), vec![tag(1400, 1500)]);

        let mut s = stfq(&[(2, 2)], BufferLimit::UNLIMITED);
        let run = crate::link::run_link(&mut s, testkit::link(), &packets).unwrap();
        let order: Vec<usize> = run.send_order.iter().map(|(i, _)| *i).collect();
        assert_eq!(order, vec![0, 1, 3, 4, 2, 5, 6]);
    }

    /// An arrival to an empty scheduler while the last packet is still on the link is in the
    /// same busy period: v stays the start tag of that packet.
    #[test]
    fn arrival_during_the_last_transmission_keeps_v() {
        let mut s = stfq(&[], BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        s.enqueue(Packet::new(0, 0, 1000, 0), 0, &mut drops);
        s.dequeue(0, &mut drops); // on the link until 1000 µs; v = 0, max finish 1000
        s.enqueue(Packet::new(1, 1, 100, 999 * US), 999 * US, &mut drops);
        assert_eq!(s.queued_tags(1), vec![tag(0, 100)]);
        s.dequeue(1000 * US, &mut drops); // v = 0; ends at 1100 µs
        s.enqueue(Packet::new(2, 2, 100, 1100 * US), 1100 * US, &mut drops);
        assert_eq!(
            s.queued_tags(2),
            vec![tag(1000, 1100)],
            "new busy period: v = 1000"
        );
    }

    #[test]
    fn push_out_rolls_back_the_last_finish_tag() {
        let limit = BufferLimit {
            packets: Some(3),
            policy: DropPolicy::LongestQueueDrop,
            ..BufferLimit::UNLIMITED
        };
        let mut s = stfq(&[], limit);
        let mut drops = Vec::new();
        s.enqueue(Packet::new(0, 0, 100, 0), 0, &mut drops);
        s.enqueue(Packet::new(1, 0, 300, 0), 0, &mut drops);
        s.enqueue(Packet::new(2, 1, 100, 0), 0, &mut drops);
        s.enqueue(Packet::new(3, 2, 100, 0), 0, &mut drops); // pushes out id 1
        assert_eq!(drops[0].packet.id, 1);
        assert_eq!(s.flow(0).unwrap().last_finish, VirtualTime::from_integer(100));
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 0);
        // Without the roll-back the next packet would start at 400, not 100.
        s.enqueue(Packet::new(4, 0, 50, 0), 0, &mut drops);
        assert_eq!(s.queued_tags(0), vec![tag(100, 150)]);
    }

    proptest::proptest! {
        #[test]
        fn invariants(trace in testkit::arb_trace(5, 300), lqd in proptest::bool::ANY) {
            let limit = testkit::byte_limit(8000, lqd);
            let mut s = stfq(&[(1, 2), (2, 3), (3, 8)], limit);
            testkit::check_invariants(&mut s, &trace, true)?;
        }

        /// Theorem 1 on three backlogged flows with random weights and sizes: after any number
        /// of packets, |W_f/w_f − W_m/w_m| ≤ l_f^max/w_f + l_m^max/w_m for every pair.
        #[test]
        fn byte_shares_follow_weights(
            weights in proptest::collection::vec(1u32..=8, 3),
            sizes in proptest::collection::vec(40u32..=1500, 64),
            n in 1usize..600,
        ) {
            let mut s = stfq(&[(0, weights[0]), (1, weights[1]), (2, weights[2])], BufferLimit::UNLIMITED);
            let (served, largest) = testkit::three_backlogged_flows(&mut s, &sizes, n);
            let share: Vec<f64> = weights.iter().map(|&w| w as f64).collect();
            testkit::check_pairwise_fairness(&served, &share, &largest, testkit::PairBound::Sum, 1e-9)?;
        }
    }
}
