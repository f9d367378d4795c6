//! Weighted Fair Queueing (`wfq`): packet-by-packet GPS with the exact GPS virtual time.
//!
//! A. K. Parekh and R. G. Gallager, "A Generalized Processor Sharing Approach to Flow Control
//! in Integrated Services Networks: The Single-Node Case", IEEE/ACM Transactions on Networking
//! 1(3), 1993, §II–III (GPS, PGPS, the virtual time V(t) and the finish tags); A. Demers,
//! S. Keshav and S. Shenker, "Analysis and Simulation of a Fair Queueing Algorithm", Proc. ACM
//! SIGCOMM '89 (the same tags as bit-by-bit round numbers R(t)); Zhang's thesis (seed 000)
//! §2.2.
//!
//! Paper name → code (session i, its k-th packet of length L_i^k, arriving at a_i^k):
//! * `φ_i` → the flow's `weight`; `C` → the link rate given at build;
//! * `B(t)`, the sessions backlogged in the fluid GPS system → flows with
//!   [`WfqFlow::gps_backlogged`]: a flow is in B while its last finish tag exceeds V;
//! * `V(t)`, with `∂V/∂t = C / Σ_{i∈B(t)} φ_i` → [`Wfq::virtual_time_at`]; between events
//!   V is advanced through every GPS departure (a flow leaves B when V reaches its last
//!   finish tag), taken in finish-tag order from a heap keyed by lower bounds of the flows'
//!   last finish tags (an entry is brought up to date only when V reaches its key; a heap
//!   without a position index, ordered by the key alone, whose entries leave at the top or,
//!   after a push-out, by lazy deletion);
//! * `S_i^k = max(F_i^{k−1}, V(a_i^k))`, `F_i^k = S_i^k + L_i^k/φ_i` → computed in
//!   [`Wfq::enqueue`]; `F_i^{k−1}` → [`WfqFlow::last_finish`];
//! * PGPS, "when the server becomes free, pick the first packet that would complete service
//!   in the GPS simulation if no additional packets were to arrive" → [`TaggedQueues::pop_min`]
//!   on F; ties by arrival order. The head-of-line tags are kept in a [`TagCalendar`] (buckets
//!   of half a byte per unit weight above the tag last served at first, then adapted to the
//!   heads' spacing, as SCFQ's): while the flows are
//!   backlogged in GPS their head tags lie within a few packets' `L/φ` of it; tags outside its
//!   window go to the 4-ary heap beside it, so the order is exact in every case.
//!
//! Units and rounding: V and the tags are bytes per unit weight in fixed point
//! ([`VirtualTime`]: a `u128` counting 2^-32). The GPS simulation counts the link's work in
//! units of 2^-32 byte: `Δt` ns carry `Δt·C·2^29/10^9` units, the remainder of that division is
//! carried to the next event (no drift), and V advances by `work/Σφ` units rounded down with the
//! remainder of *that* division carried too; reaching a departure at `F` consumes exactly
//! `(F − V)·Σφ` units. So V is exact to within one unit (2^-32 byte/weight) and `L/φ` is
//! rounded up to a unit. Two tags that are equal in exact arithmetic but reached through
//! different roundings (e.g. V sampled at different times with Σφ = 3) may differ by a few
//! units and are then served in tag order rather than arrival order.
//!
//! Invariants: `gps_backlogged ⇔ last_finish > V` (after advancing V to the current time);
//! `backlogged_weight = Σ φ over B`; V never decreases and never moves while B is empty (so
//! tags of successive GPS busy periods stay ordered, and no reset is needed); a flow's finish
//! tags increase packet by packet; only head-of-line tags are in the PGPS order.
//!
//! Guarantees (Parekh–Gallager Theorem 1 and its corollary): every packet leaves no later than
//! its GPS finish time plus `L_max/C`, and every flow has received, at any time, at least its
//! GPS service minus `L_max`. Complexity: O(log active flows) per packet amortised, O(1) for
//! the PGPS order while few heads share a calendar bucket (each GPS
//! departure is paid for by the arrival that put the flow in B; an arrival to a flow already in
//! B does not touch the departure heap, whose entry is re-keyed at most once each time V
//! reaches it).
//!
//! Choices where the paper is silent:
//! * V is advanced at arrivals only (tags need it there); dequeues only compare tags. An
//!   arrival whose flow is in B needs only `F_i^{k−1}` (it exceeds V), so the link work is
//!   carried and divided into V only when V is needed (an arrival to a flow out of B, a
//!   push-out, a reader of V). The work to reach the departure heap's least key, kept as one
//!   number, tells with one comparison when V reaches it; the departures and re-keyings are
//!   then taken from the unsettled V too (a departure sets V to the key). The carried division
//!   gives the same V as dividing at every arrival.
//! * Longest-queue drop weighs queue lengths by 1/weight. A pushed-out tail is taken out of the
//!   fluid system from now on: its flow's last finish tag returns to that of the flow's
//!   previous packet (queued or sent), and the flow leaves B at once if V has already passed
//!   it. V's past progress (the service GPS gave the packet so far) is not re-simulated.

use crate::config::{ConfigError, FlowParamTable, TableReader};
use crate::counters::{Counters, Dropped};
use crate::discipline::{BuildContext, Discipline, DisciplineInfo};
use crate::indexed_heap::{Entry, KeyOnly, LazyVirtualTimeHeap};
use crate::packet::{FlowId, Packet, MAX_FLOW_ID};
use crate::queues::Admission;
use crate::scheduler::Scheduler;
use crate::tag_calendar::TagCalendar;
use crate::tagged_queues::{share_param, PacketTag, ShareParams, TaggedQueues};
use crate::time::{Rate, TimeNs};
use crate::virtual_time::VirtualTime;

/// Parameters of [`Wfq`] (none besides the buffer; weights are per flow).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WfqConfig;

/// Per-flow WFQ state (real queue and fluid GPS system).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WfqFlow {
    /// `φ_i` (0 until the flow is first seen).
    pub weight: u32,
    /// `F_i^{k−1}`: finish tag of the flow's most recently admitted packet, i.e. the virtual
    /// time at which the flow's GPS backlog runs out.
    pub last_finish: VirtualTime,
    /// Whether the flow is in B(t), backlogged in the fluid GPS system.
    pub gps_backlogged: bool,
    /// The seq of the flow's live entry in the departure heap (counted up each time the flow
    /// gets a new entry; its older entries are stale).
    pub departure_seq: u64,
}

/// Time to link work: either an exact integer number of work units per ns, or the general
/// `Δt·C·2^29/10^9` with a carried remainder.
#[derive(Clone, Copy, Debug)]
enum WorkRate {
    /// `C·2^29/10^9` is an integer (C a multiple of 5^9 bit/s, e.g. 1 or 10 Gbit/s).
    Exact(u128),
    /// `C` in bit/s.
    General(u128),
}

/// 10^9, the ns per second in the work conversion.
const GIGA: u128 = 1_000_000_000;

/// Weighted Fair Queueing (PGPS) scheduler.
#[derive(Clone, Debug)]
pub struct Wfq {
    queues: TaggedQueues<WfqFlow, TagCalendar>,
    table: FlowParamTable<ShareParams>,
    /// V, as of `clock`.
    virtual_time: VirtualTime,
    /// The time V refers to.
    clock: TimeNs,
    /// Σ φ_i over B.
    backlogged_weight: u64,
    /// The flows in B, each keyed by a lower bound of its last finish tag: its `last_finish`
    /// when the entry was made (equal keys in no particular order: every flow V reaches is
    /// handled before V moves on, so the order among them changes nothing). An entry whose key
    /// is below the flow's current `last_finish` (it received packets since) is re-keyed only
    /// when V reaches the key, so the flows' arrivals do not touch the heap and GPS departures
    /// still come in finish-tag order. Entries leave at the top, except after a push-out,
    /// whose flow's entry goes stale (lazy deletion: live iff the flow is in B and the entry's
    /// seq is its `departure_seq`), so no sift writes a position index.
    departures: LazyVirtualTimeHeap<KeyOnly>,
    /// Link work (units of 2^-32 byte) done in GPS since `virtual_time` but not yet turned
    /// into V: V is `virtual_time + residual_work/Σφ` (rounded down; the remainder carried), so
    /// arrivals that do not need V (their flow is in B) do not divide. Turned into V by
    /// [`Wfq::settle`] when V is read or Σφ changes.
    residual_work: u128,
    /// The work that takes V from `virtual_time` to the departure heap's least key,
    /// `(key − virtual_time)·Σφ`, or 0 when not known exactly (then the next arrival takes the
    /// full path). While `residual_work` stays below it no departure or re-keying is due, and
    /// an arrival adds its work to `residual_work` and nothing else.
    horizon_work: u128,
    /// Remainder of the time-to-work division (units of 2^-32 byte / 10^9).
    work_remainder: u128,
    work_rate: WorkRate,
}

impl Wfq {
    /// V(now): advances the GPS simulation to `now` (not before the last event) and returns V.
    pub fn virtual_time_at(&mut self, now: TimeNs) -> VirtualTime {
        self.advance(now);
        self.settle();
        self.virtual_time
    }

    /// V as of the last arrival.
    pub fn virtual_time(&self) -> VirtualTime {
        match self.backlogged_weight {
            0 => self.virtual_time,
            sum => VirtualTime::from_raw(self.virtual_time.raw() + self.residual_work / sum as u128),
        }
    }

    /// Σ φ_i over the flows backlogged in GPS, as of the last arrival.
    pub fn backlogged_weight(&self) -> u64 {
        self.backlogged_weight
    }

    /// The state of `flow`, if seen.
    pub fn flow(&self, flow: FlowId) -> Option<&WfqFlow> {
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
            // Room for every flow seen in the departure heap, so packets never grow it.
            self.departures.reserve_ids(flow as usize + 1);
            self.queues.reserve_heads(flow as usize + 1);
        }
    }

    /// Link work in `elapsed` ns, in units of 2^-32 byte; `None` if it exceeds 2^64 bytes
    /// (enough to empty any GPS backlog).
    fn work_in(&mut self, elapsed: TimeNs) -> Option<u128> {
        match self.work_rate {
            WorkRate::Exact(per_ns) => {
                let work = elapsed as u128 * per_ns;
                (work >> 96 == 0).then_some(work)
            }
            WorkRate::General(bits_per_second) => {
                let bits = elapsed as u128 * bits_per_second; // bit·ns/s, < 2^128
                if bits >> 98 != 0 {
                    return None;
                }
                let scaled = (bits << 29) + self.work_remainder;
                self.work_remainder = scaled % GIGA;
                Some(scaled / GIGA)
            }
        }
    }

    /// Turns the work carried in `residual_work` into V (rounded down, the remainder carried):
    /// the V of the step-by-step simulation, which divides at every event.
    #[inline]
    fn settle(&mut self) {
        let sum = self.backlogged_weight as u128;
        if sum == 0 || self.residual_work < sum {
            return;
        }
        let reached = match (u64::try_from(self.residual_work), u64::try_from(sum)) {
            (Ok(work), Ok(sum)) => (work / sum) as u128, // the common case
            _ => self.residual_work / sum,
        };
        let used = reached * sum;
        self.virtual_time = VirtualTime::from_raw(self.virtual_time.raw() + reached);
        self.residual_work -= used;
        self.horizon_work = self.horizon_work.saturating_sub(used);
    }

    /// The departure heap's least live entry (stale entries above it are dropped).
    #[inline(always)]
    fn next_departure(&mut self) -> Option<Entry<VirtualTime>> {
        let queues = &self.queues;
        self.departures
            .peek_live(|entry| is_live_departure(queues, entry))
    }

    /// The flow's departure entry has gone stale (its state already says so).
    fn forget_departure(&mut self) {
        let queues = &self.queues;
        self.departures.forget(|entry| is_live_departure(queues, entry));
    }

    /// The work from V (settled) to the departure heap's least key at the current Σφ, or 0 if
    /// it does not fit in 128 bits or B is empty.
    #[inline]
    fn work_to_next_departure(&mut self) -> u128 {
        match self.next_departure() {
            Some(top) => work_to(self.virtual_time, top.key, self.backlogged_weight),
            None => 0,
        }
    }

    /// Advances V from `clock` to `now` through every GPS departure in between.
    #[inline(always)]
    fn advance(&mut self, now: TimeNs) {
        if now <= self.clock {
            return;
        }
        let elapsed = now - self.clock;
        self.clock = now;
        if self.backlogged_weight == 0 {
            return; // GPS idle: V stands still.
        }
        let work = self.work_in(elapsed);
        if let Some(work) = work {
            // No overflow: `residual_work` is below `horizon_work` (a u128) and `work` below
            // 2^96; the sum is compared exactly.
            if let Some(total) = self.residual_work.checked_add(work) {
                if total < self.horizon_work {
                    // V stays below the least key: no departure and no re-keying is due, and
                    // V is not needed until some arrival's flow is out of B.
                    self.residual_work = total;
                    return;
                }
            }
        }
        self.advance_through_departures(work);
    }

    /// [`Wfq::advance`] once V reaches the departure heap's least key with the link work
    /// `work` (`None`: more than enough to empty B): departures and re-keyings in key order.
    #[inline(never)]
    fn advance_through_departures(&mut self, work: Option<u128>) {
        // V need not be settled: the work still to do after reaching a key,
        // `residual_work + work − (key − virtual_time)·Σφ`, is the same from `virtual_time`
        // with the carried work as from the settled V with its remainder, so the comparisons
        // and what is left over are those of the settled loop. A sum that does not fit (or no
        // `work`: more than enough to empty B) settles first, as the loop did before.
        let mut available = match work.and_then(|work| work.checked_add(self.residual_work)) {
            Some(available) => available,
            None => {
                self.settle();
                match work {
                    Some(work) => work.saturating_add(self.residual_work),
                    None => u128::MAX,
                }
            }
        };
        // The heap's keys are lower bounds of the flows' last finish tags (see `departures`):
        // V cannot pass a flow's departure before it reaches the flow's key, so an entry is
        // re-keyed only when V would reach it, not on every arrival of its flow.
        while let Some(top) = self.next_departure() {
            let sum = self.backlogged_weight as u128;
            let gap = top.key.raw().saturating_sub(self.virtual_time.raw());
            let need = match u64::try_from(gap) {
                // Σφ < 2^64 and a gap below 2^64 units (the common case): one 64-bit product.
                Ok(gap) => gap as u128 * sum,
                Err(_) => gap.saturating_mul(sum),
            };
            // A need beyond 128 bits exceeds any sum of work (unless there is no `work`).
            if available < need || (need == u128::MAX && work.is_some()) {
                // V moves up by available/Σφ, left in `residual_work` until V is needed.
                self.residual_work = available;
                self.horizon_work = if need == u128::MAX { 0 } else { need };
                return;
            }
            let state = self.queues.state_mut(top.id);
            if state.last_finish != top.key {
                // The flow received packets since this entry was made: its GPS backlog runs
                // out later. V does not move (the work is still available).
                let last_finish = state.last_finish;
                self.departures.replace_top_with(top.id, last_finish, top.seq, 0);
                continue;
            }
            // V reaches the flow's last finish tag: it leaves B.
            available -= need;
            self.virtual_time = top.key;
            self.departures.remove_top();
            state.gps_backlogged = false;
            self.backlogged_weight -= state.weight as u64;
            if self.backlogged_weight == 0 {
                break;
            }
        }
        // B is empty: the rest of the interval is GPS idle time.
        self.residual_work = 0;
        self.work_remainder = 0;
        self.horizon_work = 0;
    }

    /// Puts `flow` into B with its current last finish tag (a flow already in B gets a new
    /// departure entry, its old one goes stale). V must be settled.
    fn join_gps(&mut self, flow: FlowId) {
        debug_assert!(self.residual_work < (self.backlogged_weight as u128).max(1));
        let state = self.queues.state_mut(flow);
        let was_in_b = state.gps_backlogged;
        if !was_in_b {
            state.gps_backlogged = true;
            self.backlogged_weight += state.weight as u64;
        }
        state.departure_seq += 1;
        let (key, seq) = (state.last_finish, state.departure_seq);
        if was_in_b {
            self.forget_departure();
        }
        self.departures.push_with(flow, key, seq, 0);
        self.horizon_work = self.work_to_next_departure();
    }

    /// A pushed-out tail leaves the fluid system: the flow's last finish tag returns to
    /// `previous_finish`.
    fn roll_back(&mut self, flow: FlowId, previous_finish: VirtualTime) {
        self.settle();
        let state = self.queues.state_mut(flow);
        state.last_finish = previous_finish;
        if !state.gps_backlogged {
            return; // GPS had already served the packet entirely.
        }
        if previous_finish > self.virtual_time {
            self.join_gps(flow); // same B, earlier departure
        } else {
            state.gps_backlogged = false;
            self.backlogged_weight -= state.weight as u64;
            self.forget_departure();
            if self.backlogged_weight == 0 {
                self.residual_work = 0;
                self.work_remainder = 0;
            }
            self.horizon_work = self.work_to_next_departure();
        }
    }
}

impl Discipline for Wfq {
    type Config = WfqConfig;
    const INFO: DisciplineInfo = DisciplineInfo {
        id: "wfq",
        name: "Weighted Fair Queueing (PGPS)",
        citation: "Parekh & Gallager, IEEE/ACM ToN 1993; Demers, Keshav & Shenker, ACM SIGCOMM 1989",
        summary: "Simulates fluid GPS exactly (virtual time V advancing at C/Σφ over the GPS-backlogged flows) and sends the packet with the least GPS finish tag: each packet leaves within L_max/C of its GPS finish time. O(log flows) amortised.",
        scheduler_params: &[],
        flow_params: &[share_param("GPS share φ_i: the link rate is divided in proportion to the shares of the backlogged flows")],
        per_flow_queues: true,
    };

    fn read_config(_reader: &mut TableReader<'_>) -> Result<WfqConfig, ConfigError> {
        Ok(WfqConfig)
    }

    fn build(_config: WfqConfig, context: &BuildContext<'_>) -> Result<Wfq, ConfigError> {
        Ok(Wfq {
            queues: TaggedQueues::new(context.limit),
            table: context.flows.parse(&Self::INFO, &ShareParams::default())?,
            virtual_time: VirtualTime::ZERO,
            clock: 0,
            backlogged_weight: 0,
            departures: LazyVirtualTimeHeap::new(),
            residual_work: 0,
            horizon_work: 0,
            work_remainder: 0,
            work_rate: work_rate(context.link_rate),
        })
    }
}

/// The work `(to − from)·Σφ` that takes V from `from` to `to`, or 0 if it does not fit in
/// 128 bits (0 sends the next arrival through [`Wfq::advance`]'s full path).
#[inline]
fn work_to(from: VirtualTime, to: VirtualTime, sum: u64) -> u128 {
    let gap = to.raw().saturating_sub(from.raw());
    match u64::try_from(gap) {
        Ok(gap) => gap as u128 * sum as u128,
        Err(_) => gap.checked_mul(sum as u128).unwrap_or(0),
    }
}

/// Whether `entry` of the departure heap is its flow's live entry.
#[inline(always)]
fn is_live_departure(queues: &TaggedQueues<WfqFlow, TagCalendar>, entry: &Entry<VirtualTime>) -> bool {
    queues
        .state(entry.id)
        .is_some_and(|state| state.gps_backlogged && state.departure_seq == entry.seq)
}

/// 5^9: C·2^29/10^9 = (C/5^9)·2^20 is an integer iff 5^9 divides C.
const FIVE_TO_THE_NINTH: u64 = 1_953_125;

fn work_rate(link_rate: Rate) -> WorkRate {
    let bits_per_second = link_rate.bits_per_second();
    if bits_per_second.is_multiple_of(FIVE_TO_THE_NINTH) {
        WorkRate::Exact(((bits_per_second / FIVE_TO_THE_NINTH) as u128) << 20)
    } else {
        WorkRate::General(bits_per_second as u128)
    }
}

impl Scheduler for Wfq {
    fn id(&self) -> &'static str {
        Self::INFO.id
    }

    fn enqueue(&mut self, packet: Packet, now: TimeNs, drops: &mut Vec<Dropped>) {
        self.advance(now);
        let flow = packet.flow;
        let size = packet.size as u64;
        if flow <= MAX_FLOW_ID {
            self.ensure_flow(flow);
        }
        let admission = self.queues.admit(packet, |state| state.weight as u64, drops);
        for index in 0..self.queues.pushed_out().len() {
            let (f, previous_finish) = self.queues.pushed_out()[index];
            self.roll_back(f, previous_finish);
        }
        if admission == Admission::Queued {
            let state = self.queues.state_mut(flow);
            // S = max(F_prev, V(a));  F = S + L/φ. A flow in B has F_prev > V: V is not needed.
            let start = if state.gps_backlogged {
                state.last_finish
            } else {
                self.settle();
                let virtual_time = self.virtual_time;
                let state = self.queues.state_mut(flow);
                state.last_finish.max(virtual_time)
            };
            let state = self.queues.state_mut(flow);
            let finish = start.saturating_add(VirtualTime::ratio_ceil(size, state.weight as u64));
            state.last_finish = finish;
            if !state.gps_backlogged {
                self.join_gps(flow);
            }
            self.queues.push_tag(flow, PacketTag { key: finish, finish });
        }
    }

    fn dequeue(&mut self, _now: TimeNs, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        self.queues.pop_min().map(|(packet, _)| packet)
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
    use crate::link::{run_link, Outcome};
    use crate::testkit;
    use std::cmp::Ordering;

    fn wfq(weights: &[(FlowId, u32)], limit: BufferLimit) -> Wfq {
        testkit::build_weighted(WfqConfig, weights, limit)
    }

    fn v(value: u64) -> VirtualTime {
        VirtualTime::from_integer(value)
    }

    const US: TimeNs = 1000;

    /// Hand-derived, Parekh–Gallager style, on the 1 byte/µs test link (V in bytes/weight;
    /// with Σφ backlogged, V grows by 1/Σφ per µs). Flows 0 and 1 weight 1, flow 2 weight 2.
    /// * t = 0: A (flow 0) and B (flow 1), 1000 B each: F = 1000 both. B = {0, 1}, Σφ = 2.
    ///   PGPS sends A (the tie goes to the earlier arrival) in [0, 1000 µs).
    /// * 500 µs: V = 250. C (flow 2, 1000 B): F = 250 + 1000/2 = 750; Σφ = 4.
    /// * 1000 µs: C (750) beats B (1000): C in [1000, 2000 µs), B in [2000, 3000 µs).
    /// * GPS: V reaches 750 at 500 + 500·4 = 2500 µs, when flow 2 leaves B (Σφ = 2).
    /// * 2800 µs: V = 750 + 300/2 = 900. D (flow 2, 500 B): S = 900, F = 1150.
    ///   (Without flow 2's departure V would be 825 and F = 1075.)
    /// * 2900 µs: V = 900 + 100/4 = 925. E (flow 0, 100 B): S = F_prev = 1000, F = 1100.
    /// * 3000 µs: E (1100) before D (1150) — with the wrong V, D (1075) would go first.
    #[test]
    fn parekh_gallager_style_vector() {
        let packets = [
            Packet::new(0, 0, 1000, 0),
            Packet::new(1, 1, 1000, 0),
            Packet::new(2, 2, 1000, 500 * US),
            Packet::new(3, 2, 500, 2800 * US),
            Packet::new(4, 0, 100, 2900 * US),
        ];
        let mut s = wfq(&[(2, 2)], BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        s.enqueue(packets[0], 0, &mut drops);
        s.enqueue(packets[1], 0, &mut drops);
        assert_eq!(s.backlogged_weight(), 2);
        assert_eq!(s.virtual_time_at(500 * US), v(250));
        s.enqueue(packets[2], 500 * US, &mut drops);
        assert_eq!(s.queued_tags(2), vec![v(750)]);
        assert_eq!(s.backlogged_weight(), 4);
        assert_eq!(s.virtual_time_at(2499 * US), VirtualTime::ratio_ceil(2999, 4));
        assert_eq!(s.virtual_time_at(2500 * US), v(750));
        assert_eq!(s.backlogged_weight(), 2, "flow 2 left B at 2500 µs");
        s.enqueue(packets[3], 2800 * US, &mut drops);
        assert_eq!(s.virtual_time(), v(900));
        assert_eq!(s.queued_tags(2), vec![v(750), v(1150)]);
        s.enqueue(packets[4], 2900 * US, &mut drops);
        assert_eq!(s.virtual_time(), v(925));
        assert_eq!(s.queued_tags(0), vec![v(1000), v(1100)]);

        let mut s = wfq(&[(2, 2)], BufferLimit::UNLIMITED);
        let run = run_link(&mut s, testkit::link(), &packets).unwrap();
        let order: Vec<usize> = run.send_order.iter().map(|(i, _)| *i).collect();
        assert_eq!(order, vec![0, 2, 1, 4, 3]);
        // GPS after 2900 µs (Σφ = 4): flows 0 and 1 reach 1000 at 3200 µs; flow 1 leaves, then
        // flow 0 reaches 1100 at 3500 µs (Σφ = 3) and flow 2 1150 at 3600 µs (Σφ = 2).
        assert_eq!(s.virtual_time_at(3200 * US), v(1000));
        assert_eq!(s.virtual_time_at(3500 * US), v(1100));
        assert_eq!(s.virtual_time_at(3600 * US), v(1150));
        assert_eq!(s.backlogged_weight(), 0);
        assert_eq!(
            s.virtual_time_at(9000 * US),
            v(1150),
            "V stands still while GPS is idle"
        );
    }

    #[test]
    fn exact_and_general_work_rates_agree() {
        // 1 Gbit/s is a multiple of 5^9 bit/s (exact path); 8 Mbit/s is not.
        assert!(matches!(
            work_rate(Rate::from_bits_per_second(1_000_000_000).unwrap()),
            WorkRate::Exact(_)
        ));
        assert!(matches!(work_rate(testkit::link()), WorkRate::General(_)));
        // At 1 Gbit/s one 1000-byte packet takes 8 µs; two equal flows: V = 500 after 8 µs.
        let table = FlowTable::default();
        let context = BuildContext {
            limit: BufferLimit::UNLIMITED,
            flows: &table,
            link_rate: Rate::from_bits_per_second(1_000_000_000).unwrap(),
        };
        let mut s = Wfq::build(WfqConfig, &context).unwrap();
        let mut drops = Vec::new();
        s.enqueue(Packet::new(0, 0, 2000, 0), 0, &mut drops);
        s.enqueue(Packet::new(1, 1, 2000, 0), 0, &mut drops);
        assert_eq!(s.virtual_time_at(8000), v(500));
        // 1 ns carries 1/8 byte, 1/16 byte/weight: exact in fixed point.
        assert_eq!(s.virtual_time_at(8001).raw(), v(500).raw() + (1 << 28));
    }

    /// Arrivals to a flow already in B leave its departure entry behind (a lower bound); V
    /// reaching that stale key re-keys it without a departure. Test link: 1 byte per µs.
    /// * t = 0: flow 0 100 B (F = 100), flow 1 1000 B (F = 1000); Σφ = 2.
    /// * 50 µs (V = 25) and 150 µs (V = 75): flow 0 100 B each, F = 200 and 300.
    /// * 200 µs: V = 100, flow 0's entry (100) is stale: no departure, Σφ stays 2.
    /// * 600 µs: V = 300, flow 0 leaves; flow 1 alone reaches 1000 at 1300 µs.
    #[test]
    fn a_stale_departure_is_re_keyed_when_v_reaches_it() {
        let mut s = wfq(&[], BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        s.enqueue(Packet::new(0, 0, 100, 0), 0, &mut drops);
        s.enqueue(Packet::new(1, 1, 1000, 0), 0, &mut drops);
        s.enqueue(Packet::new(2, 0, 100, 50 * US), 50 * US, &mut drops);
        s.enqueue(Packet::new(3, 0, 100, 150 * US), 150 * US, &mut drops);
        assert_eq!(s.flow(0).unwrap().last_finish, v(300));
        assert_eq!(s.virtual_time_at(250 * US), v(125));
        assert_eq!(s.backlogged_weight(), 2);
        assert_eq!(s.virtual_time_at(599 * US), VirtualTime::ratio_ceil(599, 2));
        assert_eq!(s.backlogged_weight(), 2);
        assert_eq!(s.virtual_time_at(600 * US), v(300));
        assert_eq!(s.backlogged_weight(), 1);
        assert_eq!(s.virtual_time_at(1300 * US), v(1000));
        assert_eq!(s.backlogged_weight(), 0);
    }

    #[test]
    fn push_out_takes_the_packet_out_of_gps() {
        let limit = BufferLimit {
            packets: Some(3),
            policy: DropPolicy::LongestQueueDrop,
            ..BufferLimit::UNLIMITED
        };
        let mut s = wfq(&[], limit);
        let mut drops = Vec::new();
        s.enqueue(Packet::new(0, 0, 100, 0), 0, &mut drops);
        s.enqueue(Packet::new(1, 0, 300, 0), 0, &mut drops);
        s.enqueue(Packet::new(2, 1, 100, 0), 0, &mut drops);
        assert_eq!(s.flow(0).unwrap().last_finish, v(400));
        // 100 µs later (Σφ = 2): V = 50. Flow 2's arrival pushes out flow 0's 300-byte tail:
        // flow 0's GPS backlog now ends at 100 and Σφ = 3 with flow 2.
        s.enqueue(Packet::new(3, 2, 100, 100 * US), 100 * US, &mut drops);
        assert_eq!(drops[0].packet.id, 1);
        assert_eq!(s.flow(0).unwrap().last_finish, v(100));
        assert_eq!(s.queued_tags(2), vec![v(150)]);
        assert_eq!(s.backlogged_weight(), 3);
        // Flows 0 and 1 leave B together at V = 100, 150 µs later; flow 2 at V = 150.
        assert_eq!(s.virtual_time_at(250 * US), v(100));
        assert_eq!(s.backlogged_weight(), 1);
        assert_eq!(s.virtual_time_at(300 * US), v(150));
        assert_eq!(s.backlogged_weight(), 0);
    }

    /// An exact rational (for the test's fluid GPS model only).
    #[derive(Clone, Copy, Debug)]
    struct Q {
        n: i128,
        d: i128,
    }

    fn gcd(a: i128, b: i128) -> i128 {
        if b == 0 {
            a.abs()
        } else {
            gcd(b, a % b)
        }
    }

    impl Q {
        fn new(n: i128, d: i128) -> Q {
            let g = gcd(n, d).max(1) * d.signum();
            Q { n: n / g, d: d / g }
        }
        fn int(n: i128) -> Q {
            Q { n, d: 1 }
        }
        // Checked arithmetic with cross-reduction: an overflow panics instead of wrapping
        // (release builds wrap silently, which once produced a GPS finish before arrival).
        fn add(self, o: Q) -> Q {
            let g = gcd(self.d, o.d);
            let (a, b) = (o.d / g, self.d / g);
            let n = self
                .n
                .checked_mul(a)
                .and_then(|x| o.n.checked_mul(b).and_then(|y| x.checked_add(y)));
            let d = self.d.checked_mul(a);
            Q::new(n.expect("rational overflow"), d.expect("rational overflow"))
        }
        fn sub(self, o: Q) -> Q {
            self.add(Q { n: -o.n, d: o.d })
        }
        fn mul(self, o: Q) -> Q {
            let (g1, g2) = (gcd(self.n, o.d).max(1), gcd(o.n, self.d).max(1));
            let n = (self.n / g1).checked_mul(o.n / g2).expect("rational overflow");
            let d = (self.d / g2).checked_mul(o.d / g1).expect("rational overflow");
            Q::new(n, d)
        }
        fn div(self, o: Q) -> Q {
            self.mul(Q::new(o.d, o.n))
        }
        fn max(self, o: Q) -> Q {
            if self >= o {
                self
            } else {
                o
            }
        }
        fn to_f64(self) -> f64 {
            self.n as f64 / self.d as f64
        }
    }

    impl PartialEq for Q {
        fn eq(&self, o: &Q) -> bool {
            self.n * o.d == o.n * self.d
        }
    }

    impl PartialOrd for Q {
        fn partial_cmp(&self, o: &Q) -> Option<Ordering> {
            Some((self.n * o.d).cmp(&(o.n * self.d)))
        }
    }

    /// The fluid GPS system of the trace on the test link (1 byte per 1000 ns), written from
    /// the definitions: V grows at 1/(1000·Σφ_B) per ns, B = flows whose last finish tag
    /// exceeds V. Returns each packet's finish tag and its GPS finish time (ns).
    fn gps_model(trace: &[Packet], weight: impl Fn(FlowId) -> i128) -> (Vec<Q>, Vec<Q>) {
        let mut last_finish: std::collections::BTreeMap<FlowId, Q> = Default::default();
        let mut v = Q::int(0);
        let mut t = Q::int(0);
        let mut breakpoints = vec![(t, v)];
        let mut advance =
            |to: Option<Q>, v: &mut Q, t: &mut Q, last: &std::collections::BTreeMap<FlowId, Q>| loop {
                let backlogged: Vec<(FlowId, Q)> = last
                    .iter()
                    .filter(|(_, f)| **f > *v)
                    .map(|(k, f)| (*k, *f))
                    .collect();
                if backlogged.is_empty() {
                    // Idle: V stays where it is until `to`. Record the end of the idle period
                    // too, so that a later tag is interpolated from it and not from the start
                    // of the idle period (which would put GPS finishes before arrivals).
                    if let Some(to) = to {
                        *t = to;
                        breakpoints.push((*t, *v));
                    }
                    return;
                }
                let sum: i128 = backlogged.iter().map(|(f, _)| weight(*f)).sum();
                let f_min =
                    backlogged
                        .iter()
                        .map(|(_, f)| *f)
                        .fold(backlogged[0].1, |a, b| if b < a { b } else { a });
                let reach = t.add(f_min.sub(*v).mul(Q::int(1000 * sum)));
                match to {
                    Some(to) if reach > to => {
                        *v = v.add(to.sub(*t).div(Q::int(1000 * sum)));
                        *t = to;
                        breakpoints.push((*t, *v));
                        return;
                    }
                    _ => {
                        *v = f_min;
                        *t = reach;
                        breakpoints.push((*t, *v));
                    }
                }
            };
        let mut tags = Vec::new();
        for p in trace {
            advance(Some(Q::int(p.arrival as i128)), &mut v, &mut t, &last_finish);
            let previous = last_finish.get(&p.flow).copied().unwrap_or(Q::int(0));
            let finish = previous.max(v).add(Q::new(p.size as i128, weight(p.flow)));
            last_finish.insert(p.flow, finish);
            tags.push(finish);
        }
        advance(None, &mut v, &mut t, &last_finish);
        let times = tags
            .iter()
            .map(|tag| {
                let k = breakpoints
                    .iter()
                    .position(|(_, bv)| bv >= tag)
                    .expect("V reaches every tag");
                let (t1, v1) = breakpoints[k];
                let (t0, v0) = breakpoints[k - 1];
                // The slope (t1 − t0)/(v1 − v0) is 1000·Σφ: divide first to keep numbers small.
                t0.add(tag.sub(v0).mul(t1.sub(t0).div(v1.sub(v0))))
            })
            .collect();
        (tags, times)
    }

    /// Weights of the random-trace tests: 3 makes L/φ and V inexact in binary.
    const WEIGHTS: [(FlowId, u32); 4] = [(0, 1), (1, 2), (2, 3), (3, 4)];

    fn model_weight(flow: FlowId) -> i128 {
        WEIGHTS
            .iter()
            .find(|(f, _)| *f == flow)
            .map_or(1, |(_, w)| *w as i128)
    }

    #[test]
    fn model_agrees_with_the_hand_vector() {
        let packets = [
            Packet::new(0, 0, 1000, 0),
            Packet::new(1, 1, 1000, 0),
            Packet::new(2, 2, 1000, 500 * US),
            Packet::new(3, 2, 500, 2800 * US),
            Packet::new(4, 0, 100, 2900 * US),
        ];
        let (tags, times) = gps_model(&packets, |f| if f == 2 { 2 } else { 1 });
        let ints = |qs: &[Q]| qs.iter().map(|q| q.to_f64()).collect::<Vec<_>>();
        assert_eq!(ints(&tags), vec![1000.0, 1000.0, 750.0, 1150.0, 1100.0]);
        assert_eq!(ints(&times), vec![3.2e6, 3.2e6, 2.5e6, 3.6e6, 3.5e6]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 128, ..Default::default() })]

        /// Each time the link frees, WFQ picks a waiting packet whose GPS finish tag (from the
        /// exact model) is the least of the waiting packets' — up to 10^-6 byte/weight, far
        /// above the fixed-point error and far below any real difference — and every packet
        /// leaves by its GPS finish time + L_max/C (Parekh–Gallager Theorem 1).
        #[test]
        fn picks_the_least_gps_finish_tag(trace in testkit::arb_trace(5, 120)) {
            let (tags, gps_finish) = gps_model(&trace, model_weight);
            let mut s = wfq(&WEIGHTS, BufferLimit::UNLIMITED);
            let run = run_link(&mut s, testkit::link(), &trace).unwrap();
            proptest::prop_assert_eq!(run.send_order.len(), trace.len());
            let mut sent = vec![false; trace.len()];
            let tolerance = Q::new(1, 1_000_000);
            for &(chosen, start) in &run.send_order {
                let least = (0..trace.len())
                    .filter(|&i| !sent[i] && trace[i].arrival <= start)
                    .map(|i| tags[i])
                    .fold(tags[chosen], |a, b| if b < a { b } else { a });
                proptest::prop_assert!(
                    tags[chosen] <= least.add(tolerance),
                    "at {} ns sent packet {} with tag {} while a waiting packet had {}",
                    start, chosen, tags[chosen].to_f64(), least.to_f64()
                );
                sent[chosen] = true;
            }
            let l_max = trace.iter().map(|p| p.size).max().unwrap() as i128;
            for (i, outcome) in run.outcomes.iter().enumerate() {
                let Some(Outcome::Sent { end, .. }) = outcome else { unreachable!() };
                let bound = gps_finish[i].add(Q::int(l_max * 1000));
                proptest::prop_assert!(
                    Q::int(*end as i128) <= bound,
                    "packet {} ({:?}) tag {} left at {} ns, GPS finish {} + L_max/C", i, trace[i], tags[i].to_f64(), end, gps_finish[i].to_f64()
                );
            }
        }

        /// V is settled (divided out of the carried work) only when an arrival needs it; a
        /// scheduler whose V is settled at every arrival, as a step-by-step simulation does,
        /// computes the same tags, V and B after every event (push-outs and dequeues included).
        #[test]
        fn settling_v_lazily_changes_nothing(trace in testkit::arb_trace(5, 200), lqd in proptest::bool::ANY) {
            let limit = testkit::byte_limit(6000, lqd);
            let (mut lazy, mut eager) = (wfq(&WEIGHTS, limit), wfq(&WEIGHTS, limit));
            let (mut lazy_drops, mut eager_drops) = (Vec::new(), Vec::new());
            for (i, packet) in trace.iter().enumerate() {
                eager.virtual_time_at(packet.arrival);
                eager.enqueue(*packet, packet.arrival, &mut eager_drops);
                lazy.enqueue(*packet, packet.arrival, &mut lazy_drops);
                if i % 3 == 2 {
                    let sent = lazy.dequeue(packet.arrival, &mut lazy_drops).map(|p| p.id);
                    proptest::prop_assert_eq!(sent, eager.dequeue(packet.arrival, &mut eager_drops).map(|p| p.id));
                }
                proptest::prop_assert_eq!(lazy.virtual_time(), eager.virtual_time());
                proptest::prop_assert_eq!(lazy.backlogged_weight(), eager.backlogged_weight());
                for flow in 0..5 {
                    proptest::prop_assert_eq!(lazy.flow(flow), eager.flow(flow));
                    proptest::prop_assert_eq!(lazy.queued_tags(flow), eager.queued_tags(flow));
                }
            }
            let end = trace.last().map_or(0, |p| p.arrival) + 10_000_000_000;
            proptest::prop_assert_eq!(lazy.virtual_time_at(end), eager.virtual_time_at(end));
        }

        #[test]
        fn invariants(trace in testkit::arb_trace(5, 300), lqd in proptest::bool::ANY) {
            let limit = testkit::byte_limit(8000, lqd);
            let mut s = wfq(&WEIGHTS, limit);
            testkit::check_invariants(&mut s, &trace, true)?;
        }

        /// Backlogged from t = 0 every tag is Σ L/φ and PGPS serves a prefix of the tag order,
        /// so after any number of packets |W_i/φ_i − W_j/φ_j| ≤ max(L_i^max/φ_i, L_j^max/φ_j).
        #[test]
        fn byte_shares_follow_weights(
            weights in proptest::collection::vec(1u32..=8, 3),
            sizes in proptest::collection::vec(40u32..=1500, 64),
            n in 1usize..600,
        ) {
            let mut s = wfq(&[(0, weights[0]), (1, weights[1]), (2, weights[2])], BufferLimit::UNLIMITED);
            let (served, largest) = testkit::three_backlogged_flows(&mut s, &sizes, n);
            let share: Vec<f64> = weights.iter().map(|&w| w as f64).collect();
            testkit::check_pairwise_fairness(&served, &share, &largest, testkit::PairBound::Max, 1e-6)?;
        }
    }
}
