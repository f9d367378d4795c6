//! WF2Q+ (`wf2q_plus`): worst-case fair weighted fair queueing with a self-contained virtual
//! time.
//!
//! J. C. R. Bennett and H. Zhang, "Hierarchical Packet Fair Queueing Algorithms", IEEE/ACM
//! Transactions on Networking 5(5), pp. 675–689, 1997 (the WF2Q+ algorithm: its system virtual
//! time and per-session tags); the eligibility rule is that of WF2Q (Bennett & Zhang, "WF2Q:
//! Worst-case Fair Weighted Fair Queueing", IEEE INFOCOM '96). FreeBSD dummynet's
//! `dn_sched_wf2q.c` is the reference implementation (its two heaps are the two sets here, held
//! in tag calendars below 4,096 flows, and in heaps from there on until a set is down to 2,048).
//!
//! Paper name → code (session i with guaranteed rate r_i, head packet of length L_i):
//! * `r_i` → `weight_i / Σweight` (see below); tags are in bytes per unit weight;
//! * `S_i = F_i` if the session was backlogged (a new head after a departure), else
//!   `S_i = max(F_i, V(a))` (arrival to an empty session) → [`Wf2qPlusFlow::start`];
//!   `F_i = S_i + L_i/r_i` → [`Wf2qPlusFlow::finish`]. Tags are kept per session for the
//!   head packet only;
//! * `V(t+τ) = max(V(t) + W(t, t+τ), min_{i∈B̂} S_i)` → [`Wf2qPlus::virtual_time`]: each
//!   dequeue adds `L/Σweight` for the packet it sends (W counted when the packet starts), and
//!   when no backlogged session is eligible V jumps to the least start tag;
//! * "serve, among the sessions with `S_i ≤ V` (eligible), the one with the least `F_i`" →
//!   set `eligible` keyed (F, head arrival sequence); ineligible sessions wait in
//!   `ineligible` keyed by S (flows of equal S may leave it in any order: V reaches them
//!   together, and each goes to `eligible` before the next choice) and move over as V passes
//!   their S (`Wf2qPlus::promote_reached`). A served flow whose new `L/w` is at least
//!   `S − V` goes back to `eligible` at once (V mostly reaches its S before it comes to the
//!   top; if not, the choice moves it to `ineligible` first, `Wf2qPlus::defer`), so every flow
//!   with S ≤ V is in `eligible` and the least there with S ≤ V is the one served. Each set is
//!   a `FlowSet`: a tag calendar while it holds fewer than 4,096 flows, a lazy heap from there
//!   until it is down to 2,048. The two calendars share one node per flow
//!   (`Wf2qPlus::calendar_nodes`; a flow is in one set at a time).
//!
//! Units and rounding: [`VirtualTime`] fixed point (2^-32 byte/weight); `L/w` and `L/Σw`
//! rounded up.
//!
//! Invariants: every backlogged flow has exactly one live entry, in `eligible` (S ≤ V, or a
//! served flow filed back before V reached its S) or `ineligible` (S > V), and every
//! lingering flow one in `lingering`, each in the set its `place` names and with the flow's
//! `entry_seq` (the heaps delete lazily: other entries of a flow are stale and skipped, see
//! [`crate::indexed_heap::LazyVirtualTimeHeap`]; the calendars hold live entries only);
//! whenever a flow is backlogged some flow has S ≤ V after the V update of `Wf2qPlus::select`
//! (V = max(V, min S) when no flow has);
//! `weight_sum` = Σ weight over the backlogged flows and the *lingering* ones (idle, F > V).
//!
//! Guarantee (Bennett–Zhang): the same delay bound as WFQ and a worst-case fair index of one
//! packet — a backlogged flow is never more than one packet ahead of its GPS service. Checked
//! in the tests: the WF2Q paper's example (one session at half the link against ten small
//! ones) and, for backlogged flows, `|W_i/w_i − W_j/w_j| ≤ L_i^max/w_i + L_j^max/w_j`.
//! Complexity O(1) per packet while few flows share a calendar bucket (see
//! [`crate::tag_calendar`]), O(log active flows) amortised in the heaps.
//!
//! Choices where the paper is silent:
//! * **Σweight.** The paper normalises rates so that Σr_i ≤ 1 over a fixed set of sessions. Flows
//!   here appear at run time, so the sum runs over the flows that are backlogged or that went
//!   idle with a finish tag still ahead of V (as dummynet does): a flow that has just sent its
//!   last packet keeps its share of V's growth until V reaches its finish tag, which is what
//!   the fluid system would do. Without that, V would run ahead whenever small flows empty
//!   and the paper's example would not come out.
//! * **Busy periods.** When a packet arrives to an empty scheduler after the link has finished
//!   the last packet (computed from the build-time link rate), V is set to the largest finish
//!   tag served, so all flows restart level (dummynet resets V to 0 and forgets every tag; the
//!   order is the same).
//! * Longest-queue drop weighs queue lengths by 1/weight. Tags belong to the head packet, so
//!   pushing out a tail changes nothing unless the tail was the only packet: then the flow's
//!   finish tag returns to its value before that packet arrived and the flow leaves its set.

use crate::config::{ConfigError, FlowParamTable, TableReader};
use crate::counters::{Counters, DropReason, Dropped};
use crate::discipline::{BuildContext, Discipline, DisciplineInfo};
use crate::indexed_heap::{Entry, KeyOnly, LazyVirtualTimeHeap, OffsetKey};
use crate::packet::{FlowId, Packet, MAX_FLOW_ID};
use crate::pool::{prefetch_at, ListEnds, PooledLists};
use crate::queues::{Admission, FlowQueues};
use crate::scheduler::Scheduler;
use crate::tag_calendar::{CalendarNodes, SharedTagCalendar, CALENDAR_MAX_ENTRIES};
use crate::tagged_queues::{share_param, ShareParams};
use crate::time::{Rate, TimeNs};
use crate::virtual_time::VirtualTime;

/// Parameters of [`Wf2qPlus`] (none besides the buffer; weights are per flow).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wf2qPlusConfig;

/// Where a flow is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Place {
    /// No packets and not counted in Σweight.
    #[default]
    Idle,
    /// No packets, still counted in Σweight until V reaches its finish tag.
    Lingering,
    /// Backlogged, in the eligible set: S ≤ V, or a flow filed back there when served, before
    /// V reached its new S (the choice moves it to [`Place::Ineligible`] if it comes to the
    /// top of the set first).
    Eligible,
    /// Backlogged, waiting for V to reach S.
    Ineligible,
}

impl Place {
    /// Whether a flow at this place has packets queued.
    #[inline]
    fn is_backlogged(self) -> bool {
        matches!(self, Place::Eligible | Place::Ineligible)
    }
}

/// A packet queued behind its flow's head: what filing the flow again needs once the packet
/// before it is sent, kept apart from the packet itself so that a service reads one small
/// node instead of the packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Behind {
    /// Arrival sequence number (the tie-breaker among equal tags).
    seq: u64,
    /// Size in bytes: `L_i` once the packet is the head.
    size: u32,
}

/// Per-flow WF2Q+ state: one cache line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[repr(align(64))]
pub struct Wf2qPlusFlow {
    /// The flow's weight (0 until first seen).
    pub weight: u32,
    /// `S_i`: start tag of the head packet (of the last packet sent while idle).
    pub start: VirtualTime,
    /// `F_i`: finish tag of the head packet (of the last packet sent while idle).
    pub finish: VirtualTime,
    /// Where the flow is.
    pub place: Place,
    /// The seq of the flow's one live entry (in the set its `place` names): its head's
    /// arrival sequence, or a number drawn from the same counter while it lingers. Entries of
    /// the flow with another seq, or in another set's heap, are stale.
    entry_seq: u64,
    /// The packets behind the head (in `Wf2qPlus::behind`), in queue order: the packet queue
    /// without its head.
    behind: ListEnds,
    /// The head was tagged when the flow's previous packet was sent (S = that packet's F),
    /// not on arrival at an empty queue (S = max(F, V), the F before it kept in
    /// `Wf2qPlus::finish_before_head`): a push-out of the head restores F = S.
    head_tagged_at_service: bool,
}

// The hot per-flow state fills exactly one cache line.
const _: () = assert!(std::mem::size_of::<Wf2qPlusFlow>() == 64);

/// From this many entries on, a [`FlowSet`] moves them from its calendar to its heap: the
/// tag calendar's own limit, beyond which its pushes would go to its overflow heap, which keeps
/// a position index (a write per level); the lazy heap keeps none and prefetches the deep
/// levels of its sift-downs (WF2Q+ at 16,384 flows: 1.4 times the time with the calendars'
/// overflow heaps, issue 14, session 10).
const HEAP_FROM_ENTRIES: usize = CALENDAR_MAX_ENTRIES;
/// At most this many live entries, a [`FlowSet`] in its heap moves them back to its calendar
/// (half of [`HEAP_FROM_ENTRIES`], so that a set near the limit does not move back and forth).
const CALENDAR_UP_TO_ENTRIES: usize = HEAP_FROM_ENTRIES / 2;

/// One of WF2Q+'s two sets of backlogged flows (`eligible` by (F, sequence), `ineligible` by
/// S): a [`SharedTagCalendar`] while it holds fewer than `heap_from` flows, a
/// [`LazyVirtualTimeHeap`] (its entries live if their flow is at `place` with their seq, see
/// [`is_live`]) from there until it is down to `calendar_up_to`. The calendar pops and pushes
/// without a sift-down, whose comparisons the processor cannot predict (WF2Q+ at 1,024 flows:
/// about three quarters of the heaps' time, issue 14, session 10); beyond a few thousand
/// flows the heap does better. The order is the
/// same in both: `(key, seq)`, and in `ineligible` ([`KeyOnly`] heap) ties in any order.
#[derive(Clone, Debug)]
struct FlowSet<N, const MEMBER: u32> {
    /// Its nodes in the scheduler's [`CalendarNodes`], shared by the two sets (a flow is in
    /// one at a time), which every operation takes.
    calendar: SharedTagCalendar<MEMBER>,
    heap: LazyVirtualTimeHeap<N>,
    /// Whether the flows are in `heap` (`calendar` is then empty), else in `calendar` (`heap`
    /// is then empty).
    in_heap: bool,
    /// The place of the flows in the set (their entries' liveness in `heap`).
    place: Place,
    heap_from: usize,
    calendar_up_to: usize,
}

impl<N: OffsetKey, const MEMBER: u32> FlowSet<N, MEMBER> {
    /// An empty set of the flows at `place`, in its calendar.
    fn new(place: Place) -> FlowSet<N, MEMBER> {
        FlowSet {
            calendar: SharedTagCalendar::new(),
            heap: LazyVirtualTimeHeap::new(),
            in_heap: false,
            place,
            heap_from: HEAP_FROM_ENTRIES,
            calendar_up_to: CALENDAR_UP_TO_ENTRIES,
        }
    }

    /// Room for ids below `ids` in both structures.
    fn reserve_ids(&mut self, ids: usize) {
        self.calendar.reserve_ids(ids);
        self.heap.reserve_ids(ids);
    }

    /// Number of flows (tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        if self.in_heap {
            self.heap.live_len()
        } else {
            self.calendar.len()
        }
    }

    /// Adds `id` (made the flow's one live entry by the caller) with `key`, `seq` and `aux`.
    #[inline(always)]
    fn push_with(&mut self, nodes: &mut CalendarNodes, id: FlowId, key: VirtualTime, seq: u64, aux: u32) {
        if self.in_heap {
            self.heap.push_with(id, key, seq, aux);
            return;
        }
        self.calendar.push_with(nodes, id, key, seq, aux);
        if self.calendar.len() >= self.heap_from {
            self.move_to_heap(nodes);
        }
    }

    /// The least flow's key.
    #[inline(always)]
    fn peek_key(&mut self, nodes: &CalendarNodes, flows: &[Wf2qPlusFlow]) -> Option<VirtualTime> {
        if self.in_heap {
            live_top(&mut self.heap, flows, self.place).map(|top| top.key)
        } else {
            self.calendar.peek_key(nodes)
        }
    }

    /// The least flow.
    #[inline(always)]
    fn peek_id(&mut self, nodes: &CalendarNodes, flows: &[Wf2qPlusFlow]) -> Option<FlowId> {
        if self.in_heap {
            live_top(&mut self.heap, flows, self.place).map(|top| top.id)
        } else {
            self.calendar.peek_id(nodes)
        }
    }

    /// Removes the least flow, which [`FlowSet::peek_key`], [`FlowSet::peek_id`] or the test
    /// of [`FlowSet::pop_at_most`] has read since the last change, and returns its entry. In
    /// the calendar, later keys are expected from `floor` on ([`SharedTagCalendar::pop_with_floor`]).
    #[inline(always)]
    fn pop(
        &mut self,
        nodes: &mut CalendarNodes,
        flows: &[Wf2qPlusFlow],
        floor: VirtualTime,
    ) -> Option<Entry<VirtualTime>> {
        if !self.in_heap {
            return self.calendar.pop_with_floor(nodes, floor);
        }
        let top = self.heap.pop();
        if self.heap.live_len() <= self.calendar_up_to {
            self.move_to_calendar(nodes, flows);
        }
        top
    }

    /// Removes and returns the least flow's entry if its key is at most `limit`.
    #[inline(always)]
    fn pop_at_most(
        &mut self,
        nodes: &mut CalendarNodes,
        flows: &[Wf2qPlusFlow],
        limit: VirtualTime,
    ) -> Option<Entry<VirtualTime>> {
        if !self.in_heap {
            return self.calendar.pop_at_most(nodes, limit);
        }
        if live_top(&mut self.heap, flows, self.place)?.key > limit {
            return None;
        }
        self.pop(nodes, flows, limit)
    }

    /// `id`'s entry has gone stale (its flow's state already says so): the calendar removes
    /// it, the heap counts it.
    fn remove(&mut self, nodes: &mut CalendarNodes, flows: &[Wf2qPlusFlow], id: FlowId) {
        if self.in_heap {
            let place = self.place;
            self.heap.forget(|entry| is_live(flows, place, entry));
        } else {
            let removed = self.calendar.remove(nodes, id);
            debug_assert!(removed.is_some(), "a live entry of the calendar");
        }
    }

    /// The flows worth prefetching for (see [`SharedTagCalendar::upcoming`]).
    #[inline(always)]
    fn upcoming(&self, nodes: &CalendarNodes) -> [Option<(u32, u32)>; 2] {
        if self.in_heap {
            self.heap.upcoming()
        } else {
            self.calendar.upcoming(nodes)
        }
    }

    /// Every flow from the calendar to the heap. O(n).
    #[cold]
    #[inline(never)]
    fn move_to_heap(&mut self, nodes: &mut CalendarNodes) {
        while let Some(entry) = self.calendar.pop(nodes) {
            self.heap.push_with(entry.id, entry.key, entry.seq, entry.aux);
        }
        self.in_heap = true;
    }

    /// Every live flow from the heap to the calendar (the stale entries are dropped). O(n log n).
    #[cold]
    #[inline(never)]
    fn move_to_calendar(&mut self, nodes: &mut CalendarNodes, flows: &[Wf2qPlusFlow]) {
        while let Some(entry) = live_top(&mut self.heap, flows, self.place) {
            self.heap.remove_top();
            self.calendar
                .push_with(nodes, entry.id, entry.key, entry.seq, entry.aux);
        }
        debug_assert!(self.heap.is_empty());
        self.in_heap = false;
    }

    /// The live entries of `id` (tests).
    #[cfg(test)]
    fn entries_of(
        &self,
        nodes: &CalendarNodes,
        flows: &[Wf2qPlusFlow],
        id: FlowId,
    ) -> Vec<Entry<VirtualTime>> {
        if self.in_heap {
            self.heap
                .iter()
                .filter(|entry| entry.id == id && is_live(flows, self.place, entry))
                .collect()
        } else {
            self.calendar.get(nodes, id).into_iter().collect()
        }
    }
}

/// WF2Q+ scheduler.
#[derive(Clone, Debug)]
pub struct Wf2qPlus {
    queues: FlowQueues,
    flows: Vec<Wf2qPlusFlow>,
    /// Every flow's list of the packets behind its head.
    behind: PooledLists<Behind>,
    table: FlowParamTable<ShareParams>,
    /// `F_i` of each flow before its current head arrived to an empty queue (restored if that
    /// head is pushed out); apart from the per-flow line, as only such arrivals and push-outs
    /// use it.
    finish_before_head: Vec<VirtualTime>,
    /// Eligible flows by (F, head arrival sequence). In `eligible` and `ineligible` an entry's
    /// [`Entry::aux`] is the pool index of the flow's head packet, so that the packets of the
    /// next flows to serve can be prefetched from the entries alone. The heaps (`lingering`,
    /// and the sets' while they hold many flows) delete lazily ([`is_live`]): a flow leaves a
    /// heap at its top, except when longest-queue drop pushes out its only packet or a
    /// lingering flow gets a packet; then its entry stays behind, stale, until it reaches the
    /// top or the heap drops its stale entries.
    eligible: FlowSet<u64, 0>,
    /// Backlogged flows with S > V, by S ([`KeyOnly`] in the heap: flows of equal start tags
    /// leave in any order, as each goes to `eligible`, which orders them by (F, sequence),
    /// before the next choice).
    ineligible: FlowSet<KeyOnly, 1>,
    /// The nodes of both sets' calendars, one per flow.
    calendar_nodes: CalendarNodes,
    /// Lingering flows by (F, a sequence number drawn when they start lingering).
    lingering: LazyVirtualTimeHeap,
    virtual_time: VirtualTime,
    weight_sum: u64,
    max_finish_served: VirtualTime,
    next_sequence: u64,
    link_rate: Rate,
    /// When the last dequeued packet went on the link, and its size: the link is busy until
    /// `last_dequeue_at + link_rate.transmission_time(last_dequeue_size)`.
    last_dequeue_at: TimeNs,
    last_dequeue_size: u64,
}

impl Wf2qPlus {
    /// V, the system virtual time.
    pub fn virtual_time(&self) -> VirtualTime {
        self.virtual_time
    }

    /// Σ weight over the backlogged and lingering flows.
    pub fn weight_sum(&self) -> u64 {
        self.weight_sum
    }

    /// The state of `flow`, if seen.
    pub fn flow(&self, flow: FlowId) -> Option<&Wf2qPlusFlow> {
        self.flows.get(flow as usize).filter(|state| state.weight > 0)
    }

    /// When the link finishes the last dequeued packet (computed from the build-time rate).
    fn link_free_at(&self) -> TimeNs {
        self.last_dequeue_at
            .saturating_add(self.link_rate.transmission_time(self.last_dequeue_size))
    }

    /// Makes `flow` known: its state and weight, and room for it in the sets.
    #[inline(always)]
    fn ensure_flow(&mut self, flow: FlowId) {
        if self
            .flows
            .get(flow as usize)
            .is_none_or(|state| state.weight == 0)
        {
            self.add_flow(flow);
        }
    }

    /// [`Wf2qPlus::ensure_flow`] for a flow not seen before.
    #[cold]
    #[inline(never)]
    fn add_flow(&mut self, flow: FlowId) {
        let index = flow as usize;
        if index >= self.flows.len() {
            self.flows.resize_with(index + 1, Wf2qPlusFlow::default);
            self.finish_before_head.resize(index + 1, VirtualTime::ZERO);
        }
        if self.flows[index].weight == 0 {
            self.flows[index].weight = self.table.get(flow).share;
            // Room for every flow seen in each heap, so packets never grow them.
            self.lingering.reserve_ids(index + 1);
            self.eligible.reserve_ids(index + 1);
            self.ineligible.reserve_ids(index + 1);
            self.calendar_nodes.reserve_ids(index + 1);
        }
    }

    /// The entry of `flow` at `place` has gone stale (its state already says so): a calendar
    /// removes it, a heap counts it (and may drop its stale entries).
    fn forget(&mut self, flow: FlowId, place: Place) {
        let flows = &self.flows;
        let live = |entry: &Entry<VirtualTime>| is_live(flows, place, entry);
        match place {
            Place::Idle => {}
            Place::Lingering => self.lingering.forget(live),
            Place::Eligible => self.eligible.remove(&mut self.calendar_nodes, flows, flow),
            Place::Ineligible => self.ineligible.remove(&mut self.calendar_nodes, flows, flow),
        }
    }

    /// Files `flow`, idle or lingering until its packet just arrived (tags set, `seq` the
    /// packet's arrival sequence, `head` its node in the packet pool), under `eligible` or
    /// `ineligible`; a lingering flow's entry in `lingering` goes stale.
    #[inline]
    fn file_arrival(&mut self, flow: FlowId, seq: u64, head: u32) {
        let state = &mut self.flows[flow as usize];
        let (place, key) = if state.start <= self.virtual_time {
            (Place::Eligible, state.finish)
        } else {
            (Place::Ineligible, state.start)
        };
        let previous = std::mem::replace(&mut state.place, place);
        state.entry_seq = seq;
        if previous == Place::Lingering {
            self.forget(flow, previous);
        }
        if place == Place::Eligible {
            self.eligible
                .push_with(&mut self.calendar_nodes, flow, key, seq, head);
        } else {
            self.ineligible
                .push_with(&mut self.calendar_nodes, flow, key, seq, head);
        }
    }

    /// Takes `flow`, just served, out of `eligible`, whose least entry it is (`select` chose it).
    #[inline(always)]
    fn take_served(&mut self, flow: FlowId) {
        let top = self
            .eligible
            .pop(&mut self.calendar_nodes, &self.flows, self.virtual_time);
        debug_assert_eq!(
            top.map(|entry| entry.id),
            Some(flow),
            "the served flow is eligible's least"
        );
    }

    /// Files `flow`, the top of `eligible` that was just served, with its next head's tags set
    /// (`seq` that head's arrival sequence, `head` its node): it leaves `eligible` and goes
    /// back in by its finish tag if its `L/w` is at least `S − V` (even if V has not reached
    /// S yet), else to `ineligible` by its start tag.
    #[inline]
    fn file_served(&mut self, flow: FlowId, seq: u64, head: u32) {
        self.take_served(flow);
        // SAFETY: `flow` was on top of `eligible`.
        let state = unsafe { flow_state(&mut self.flows, flow) };
        state.entry_seq = seq;
        let (start, finish) = (state.start, state.finish);
        // Back in `eligible` by its finish tag even if V has not reached its start tag yet,
        // when V is likely to reach it before the flow comes to the top (`select` moves it to
        // `ineligible` if not): when its tag increment L/w is at least S − V, the distance
        // still to go (the tags served run about as far ahead of V as S, the finish tag just
        // served, does now).
        if start.saturating_sub(self.virtual_time) <= finish.saturating_sub(start) {
            self.eligible
                .push_with(&mut self.calendar_nodes, flow, finish, seq, head);
        } else {
            state.place = Place::Ineligible;
            self.ineligible
                .push_with(&mut self.calendar_nodes, flow, start, seq, head);
        }
    }

    /// Starts loading the state of `flow`, its packet queue's ends and counters, and its head
    /// packet (`head`, the node its entry's aux names).
    #[inline(always)]
    fn prefetch_flow(&self, flow: FlowId, head: u32) {
        self.queues.prefetch_flow(flow);
        self.queues.prefetch_node(head);
        prefetch_at(&self.flows, flow as usize);
    }

    /// `flow` has no packets left and has been taken out of its set (or its entry in the set's
    /// heap is about to be forgotten): it lingers while F > V, else leaves Σweight.
    fn retire(&mut self, flow: FlowId) {
        let state = &mut self.flows[flow as usize];
        if state.finish > self.virtual_time {
            state.place = Place::Lingering;
            state.entry_seq = self.next_sequence;
            self.next_sequence += 1;
            self.lingering.push_with(flow, state.finish, state.entry_seq, 0);
        } else {
            state.place = Place::Idle;
            self.weight_sum -= state.weight as u64;
        }
    }

    /// Lingering flows whose finish tag V has reached leave Σweight.
    #[inline]
    fn drain_lingering(&mut self) {
        if !self.lingering.is_empty() {
            self.drain_lingering_entries();
        }
    }

    /// [`Wf2qPlus::drain_lingering`] once some flow (or a stale entry) is in `lingering`.
    #[inline(never)]
    fn drain_lingering_entries(&mut self) {
        while let Some(top) = live_top(&mut self.lingering, &self.flows, Place::Lingering) {
            if top.key > self.virtual_time {
                break;
            }
            self.lingering.remove_top();
            let state = &mut self.flows[top.id as usize];
            state.place = Place::Idle;
            self.weight_sum -= state.weight as u64;
        }
    }

    /// Moves the flows V has reached to `eligible`; V = max(V, min S) when nothing is
    /// eligible then; returns the eligible flow with the least (F, sequence). Inlined into
    /// `dequeue` (a call saved and restored registers on every packet).
    #[inline(always)]
    fn select(&mut self) -> Option<FlowId> {
        self.promote_reached();
        loop {
            let Some(least) = self.eligible.peek_id(&self.calendar_nodes, &self.flows) else {
                // No flow is eligible: V = max(V, min S).
                let least_start = self.ineligible.peek_key(&self.calendar_nodes, &self.flows)?;
                self.virtual_time = self.virtual_time.max(least_start);
                self.promote_reached();
                continue;
            };
            // SAFETY: `least` is an entry of `eligible`.
            let state = unsafe { flow_state(&mut self.flows, least) };
            if state.start <= self.virtual_time {
                #[cfg(test)]
                self.check_selection(least);
                return Some(least);
            }
            self.defer(least);
        }
    }

    /// The rule itself, by a scan of every flow (tests): `flow` has the least (F, sequence)
    /// among the backlogged flows with S ≤ V, and no such flow waits in `ineligible`.
    #[cfg(test)]
    fn check_selection(&self, flow: FlowId) {
        let eligible = self
            .flows
            .iter()
            .enumerate()
            .filter(|(_, state)| state.place.is_backlogged() && state.start <= self.virtual_time);
        let least = eligible
            .clone()
            .min_by_key(|(_, state)| (state.finish, state.entry_seq))
            .map(|(id, _)| id as FlowId);
        assert_eq!(least, Some(flow), "the least finish tag among the eligible flows");
        assert!(eligible.clone().all(|(_, state)| state.place == Place::Eligible));
    }

    /// Moves `flow`, `eligible`'s least, whose start tag V has not reached (a served flow filed
    /// back in `eligible` by [`Wf2qPlus::file_served`]), to `ineligible`.
    #[cold]
    #[inline(never)]
    fn defer(&mut self, flow: FlowId) {
        let top = self
            .eligible
            .pop(&mut self.calendar_nodes, &self.flows, self.virtual_time)
            .expect("the flow is eligible's least");
        debug_assert_eq!(top.id, flow);
        let state = &mut self.flows[flow as usize];
        state.place = Place::Ineligible;
        let start = state.start;
        self.ineligible
            .push_with(&mut self.calendar_nodes, flow, start, top.seq, top.aux);
    }

    /// Moves every flow of `ineligible` whose start tag V has reached to `eligible`, keyed by
    /// its finish tag.
    #[inline(always)]
    fn promote_reached(&mut self) {
        while let Some(top) =
            self.ineligible
                .pop_at_most(&mut self.calendar_nodes, &self.flows, self.virtual_time)
        {
            // SAFETY: `top` is an entry of `ineligible`.
            let state = unsafe { flow_state(&mut self.flows, top.id) };
            debug_assert_eq!((state.place, state.start), (Place::Ineligible, top.key));
            state.place = Place::Eligible;
            let finish = state.finish;
            self.eligible
                .push_with(&mut self.calendar_nodes, top.id, finish, top.seq, top.aux);
        }
    }

    /// The packets pushed out among `drops` (an admission's): each flow forgets its tail.
    #[cold]
    #[inline(never)]
    fn roll_back_push_outs(&mut self, drops: &[Dropped]) {
        for dropped in drops {
            if dropped.reason == DropReason::PushedOut {
                self.roll_back(dropped.packet.flow);
            }
        }
    }

    /// A pushed-out packet of `flow` (its tail): forget it; if it was the head, restore the
    /// flow's finish tag and take the flow out of its set (a calendar removes its entry, a
    /// heap's entry goes stale).
    fn roll_back(&mut self, flow: FlowId) {
        let state = &mut self.flows[flow as usize];
        if self.behind.pop_back(&mut state.behind).is_some() {
            return; // the head stays
        }
        // F before the head: the last sent packet's (S of a head tagged at its service), or
        // the one kept when the head arrived at an empty queue.
        if state.head_tagged_at_service {
            state.finish = state.start;
        } else {
            state.finish = self.finish_before_head[flow as usize];
        }
        state.start = state.finish;
        let previous = state.place;
        self.retire(flow);
        self.forget(flow, previous);
    }
}

/// The least live entry of `heap`, the heap of the flows at `place` (its stale entries above it
/// popped on the way: see [`LazyVirtualTimeHeap::peek_live`]).
#[inline(always)]
fn live_top<N: OffsetKey>(
    heap: &mut LazyVirtualTimeHeap<N>,
    flows: &[Wf2qPlusFlow],
    place: Place,
) -> Option<Entry<VirtualTime>> {
    heap.peek_live(|entry| is_live(flows, place, entry))
}

/// The state of `flow`, without a bounds check.
///
/// # Safety
/// `flow` must be a flow this scheduler has seen (`Wf2qPlus::ensure_flow` grows `flows` to
/// it before its first packet is queued): a flow named by a heap entry or just admitted.
#[inline(always)]
unsafe fn flow_state(flows: &mut [Wf2qPlusFlow], flow: FlowId) -> &mut Wf2qPlusFlow {
    debug_assert!((flow as usize) < flows.len(), "flow {flow} was never seen");
    // SAFETY: the caller's contract (above).
    unsafe { flows.get_unchecked_mut(flow as usize) }
}

/// Whether `entry`, in the heap of flows at `place`, is its flow's live entry.
#[inline(always)]
fn is_live(flows: &[Wf2qPlusFlow], place: Place, entry: &Entry<VirtualTime>) -> bool {
    let state = &flows[entry.id as usize];
    state.place == place && state.entry_seq == entry.seq
}

impl Discipline for Wf2qPlus {
    type Config = Wf2qPlusConfig;
    const INFO: DisciplineInfo = DisciplineInfo {
        id: "wf2q_plus",
        name: "WF2Q+",
        citation: "Bennett & Zhang, IEEE/ACM ToN 1997",
        summary: "Serves, among the flows whose start tag has been reached by the virtual time V = max(V + L/Σw, min S), the least finish tag: WFQ's delay bound without running ahead of GPS by more than a packet. O(1) per packet in tag calendars while a set holds fewer than 4,096 flows, O(log flows) in heaps above.",
        scheduler_params: &[],
        flow_params: &[share_param("guaranteed share r_i = share/Σshare of the backlogged flows")],
        per_flow_queues: true,
    };

    fn read_config(_reader: &mut TableReader<'_>) -> Result<Wf2qPlusConfig, ConfigError> {
        Ok(Wf2qPlusConfig)
    }

    fn build(_config: Wf2qPlusConfig, context: &BuildContext<'_>) -> Result<Wf2qPlus, ConfigError> {
        Ok(Wf2qPlus {
            queues: FlowQueues::new(context.limit),
            flows: Vec::new(),
            behind: PooledLists::default(),
            table: context.flows.parse(&Self::INFO, &ShareParams::default())?,
            finish_before_head: Vec::new(),
            eligible: FlowSet::new(Place::Eligible),
            ineligible: FlowSet::new(Place::Ineligible),
            calendar_nodes: CalendarNodes::new(),
            lingering: LazyVirtualTimeHeap::new(),
            virtual_time: VirtualTime::ZERO,
            weight_sum: 0,
            max_finish_served: VirtualTime::ZERO,
            next_sequence: 0,
            link_rate: context.link_rate,
            last_dequeue_at: 0,
            last_dequeue_size: 0,
        })
    }
}

impl Scheduler for Wf2qPlus {
    fn id(&self) -> &'static str {
        Self::INFO.id
    }

    fn enqueue(&mut self, packet: Packet, now: TimeNs, drops: &mut Vec<Dropped>) {
        if self.queues.counters.backlog().packets == 0 && now >= self.link_free_at() {
            // A new busy period: every flow restarts from the largest finish tag served.
            self.virtual_time = self.virtual_time.max(self.max_finish_served);
            self.drain_lingering();
        }
        let flow = packet.flow;
        let size = packet.size as u64;
        if flow <= MAX_FLOW_ID {
            self.ensure_flow(flow);
        }
        let flows = &self.flows;
        let first_new_drop = drops.len();
        let admission = self.queues.admit(
            packet,
            |f| flows.get(f as usize).map_or(1, |state| state.weight as u64),
            drops,
        );
        if drops.len() > first_new_drop {
            self.roll_back_push_outs(&drops[first_new_drop..]);
        }
        if admission != Admission::Queued {
            return;
        }
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        let nothing_else_backlogged = self.queues.counters.backlog().packets == 1;
        // SAFETY: the packet was queued, so its flow is at most `MAX_FLOW_ID` (admission
        // refuses the others) and `ensure_flow` has seen it.
        let state = unsafe { flow_state(&mut self.flows, flow) };
        if state.place.is_backlogged() {
            // Not the head: tags are computed when it reaches the head.
            let behind = Behind {
                seq: sequence,
                size: size as u32,
            };
            self.behind.push_back(&mut state.behind, behind);
            return;
        }
        match state.place {
            Place::Idle => self.weight_sum += state.weight as u64,
            Place::Lingering => {} // still counted
            Place::Eligible | Place::Ineligible => unreachable!("an empty flow is not filed"),
        }
        // S = max(F, V);  F = S + L/w
        self.finish_before_head[flow as usize] = state.finish;
        state.head_tagged_at_service = false;
        state.start = state.finish.max(self.virtual_time);
        state.finish = state
            .start
            .saturating_add(VirtualTime::ratio_ceil(size, state.weight as u64));
        if nothing_else_backlogged {
            // V = max(V, min S): the only backlogged flow is eligible at once.
            self.virtual_time = self.virtual_time.max(state.start);
        }
        self.file_arrival(flow, sequence, self.queues.head_node(flow));
    }

    fn dequeue(&mut self, now: TimeNs, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        self.drain_lingering();
        let flow = self.select()?;
        let packet = self.queues.pop_sent(flow).expect("eligible flows are backlogged");
        let size = packet.size as u64;
        // V += W: the packet's length over the weights sharing the link.
        self.virtual_time = self
            .virtual_time
            .saturating_add(VirtualTime::ratio_ceil(size, self.weight_sum.max(1)));
        self.last_dequeue_at = now;
        self.last_dequeue_size = size;
        // SAFETY: `select` took `flow` from the top of `eligible`.
        let state = unsafe { flow_state(&mut self.flows, flow) };
        self.max_finish_served = self.max_finish_served.max(state.finish);
        state.start = state.finish;
        match self.behind.pop_front(&mut state.behind) {
            Some(head) => {
                // New head of a backlogged flow: S = F;  F = S + L/w
                state.head_tagged_at_service = true;
                state.finish = state
                    .start
                    .saturating_add(VirtualTime::ratio_ceil(head.size as u64, state.weight as u64));
                self.file_served(flow, head.seq, self.queues.head_node(flow));
            }
            None => {
                self.take_served(flow);
                self.retire(flow);
            }
        }
        // Start loading what the next calls read from tables of every flow: the state, the
        // packet queue's ends and counters, and the packet behind the head (the entry's aux).
        let [next, after_next] = self.eligible.upcoming(&self.calendar_nodes);
        if let Some((next, head)) = next {
            self.prefetch_flow(next, head);
            // Its state was (usually) prefetched one call ago: the packet behind its head.
            let second = self
                .flows
                .get(next as usize)
                .map_or(u32::MAX, |state| state.behind.head_node());
            self.behind.prefetch_node(second);
        }
        if let Some((after_next, head)) = after_next {
            self.prefetch_flow(after_next, head);
        }
        Some(packet)
    }

    fn peek(&mut self, _now: TimeNs) -> Option<Packet> {
        self.drain_lingering();
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
    use crate::config::{BufferLimit, DropPolicy, FlowTable};
    use crate::disciplines::wfq::{Wfq, WfqConfig};
    use crate::testkit;
    use proptest::test_runner::TestCaseError;

    fn table(weights: &[(FlowId, u32)]) -> FlowTable {
        let mut table = FlowTable::default();
        for &(flow, weight) in weights {
            table.set(
                flow,
                testkit::params(&format!("share = {weight}")),
                format!("flow {flow}"),
            );
        }
        table
    }

    fn wf2q_plus(weights: &[(FlowId, u32)], limit: BufferLimit) -> Wf2qPlus {
        testkit::build_weighted(Wf2qPlusConfig, weights, limit)
    }

    /// [`wf2q_plus`] whose two sets move to their heaps from 3 flows on and back to their
    /// calendars at 1, so that random traffic crosses between the two often.
    fn wf2q_plus_switching(weights: &[(FlowId, u32)], limit: BufferLimit) -> Wf2qPlus {
        let mut s = wf2q_plus(weights, limit);
        (s.eligible.heap_from, s.eligible.calendar_up_to) = (3, 1);
        (s.ineligible.heap_from, s.ineligible.calendar_up_to) = (3, 1);
        s
    }

    /// [`wf2q_plus`] whose two calendars choose their day every `pops` pops instead of every
    /// [`crate::tag_calendar::ADAPT_PERIOD`] (see `SharedTagCalendar::set_adapt_period`).
    fn adapting(mut s: Wf2qPlus, pops: u32) -> Wf2qPlus {
        s.eligible.calendar.set_adapt_period(pops);
        s.ineligible.calendar.set_adapt_period(pops);
        s
    }

    /// Calls of `rebucket` that found calendar entries, in `eligible` and in `ineligible`.
    fn rebuckets(s: &Wf2qPlus) -> [u64; 2] {
        [
            s.eligible.calendar.probe().rebuckets_with_entries,
            s.ineligible.calendar.probe().rebuckets_with_entries,
        ]
    }

    /// Random arrivals (`true`) and services, with longest-queue drop on a 4,000-byte buffer:
    /// the ids of the packets sent, in order, each call followed by [`check_heaps`].
    fn run_calls(
        s: &mut Wf2qPlus,
        calls: &[(FlowId, u32, bool)],
    ) -> Result<Vec<u64>, proptest::test_runner::TestCaseError> {
        let mut drops = Vec::new();
        let mut sent = Vec::new();
        for (id, &(flow, size, arrival)) in calls.iter().enumerate() {
            if arrival {
                s.enqueue(Packet::new(id as u64, flow, size, 0), 0, &mut drops);
            } else if let Some(packet) = s.dequeue(0, &mut drops) {
                sent.push(packet.id);
            }
            check_heaps(s)?;
        }
        Ok(sent)
    }

    const SIX_WEIGHTS: [(FlowId, u32); 6] = [(0, 1), (1, 2), (2, 3), (3, 8), (4, 1), (5, 5)];

    fn v(value: u64) -> VirtualTime {
        VirtualTime::from_integer(value)
    }

    /// The example of the WF2Q paper (Bennett & Zhang, INFOCOM '96): session 1 has half the
    /// link (weight 10), sessions 2–11 a twentieth each (weight 1); all packets 1000 B; at
    /// t = 0 session 1 queues 11 packets and every other session one. GPS finishes session
    /// 1's k-th packet at 2k packet times and every other packet at 20, so WFQ sends session
    /// 1's first ten packets back to back (tags 100…1000; the tie at 1000 goes to the earlier
    /// arrival). WF2Q+ alternates: session 1's next packet is not eligible until V (growing by
    /// 1000/20 = 50 per packet) reaches its start tag, so the order is 1, 2, 1, 3, …, 1, 11, 1.
    #[test]
    fn wf2q_paper_example() {
        let (weights, packets) = testkit::wf2q_example();
        let mut s = wf2q_plus(&weights, BufferLimit::UNLIMITED);
        let order = testkit::flows_in_send_order(&mut s, &packets);
        let mut expected = Vec::new();
        for other in 2..=11 {
            expected.extend([1, other]);
        }
        expected.push(1);
        assert_eq!(order, expected);
        // 20 packets at Σw = 20 (the small sessions linger until V = 1000), the last at 10.
        assert_eq!(s.virtual_time(), v(1100));

        let table = table(&weights);
        let context = BuildContext {
            limit: BufferLimit::UNLIMITED,
            flows: &table,
            link_rate: testkit::link(),
        };
        let mut wfq = Wfq::build(WfqConfig, &context).unwrap();
        let order = testkit::flows_in_send_order(&mut wfq, &packets);
        let mut expected = vec![1; 10];
        expected.extend(2..=11);
        expected.push(1);
        assert_eq!(order, expected);
    }

    /// Tags and V by hand: flows 0 (weight 1) and 1 (weight 3).
    /// * Flow 0 queues 300 B and 300 B, flow 1 600 B, at t = 0: S = 0 for both; F_0 = 300,
    ///   F_1 = 200. Σw = 4.
    /// * Dequeue 1: both eligible, least F: flow 1 (200). V = 600/4 = 150. Flow 1 is empty but
    ///   lingers (F = 200 > V).
    /// * Dequeue 2: flow 0 (F = 300). V = 150 + 300/4 = 225 (flow 1 still counted). Flow 0's
    ///   next packet: S = 300, F = 600; S > V, but its L/w (300) is at least S − V (75), so
    ///   it is filed back in `eligible` by F.
    /// * Dequeue 3: flow 1 stopped lingering at V = 225 ≥ 200: Σw = 1. The choice moves flow 0
    ///   (S > V) to `ineligible`; nothing is eligible, so V = max(225, 300) = 300 and flow 0
    ///   goes; V = 300 + 300 = 600.
    #[test]
    fn tags_eligibility_and_lingering_by_hand() {
        let mut s = wf2q_plus(&[(0, 1), (1, 3)], BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        s.enqueue(Packet::new(0, 0, 300, 0), 0, &mut drops);
        s.enqueue(Packet::new(1, 0, 300, 0), 0, &mut drops);
        s.enqueue(Packet::new(2, 1, 600, 0), 0, &mut drops);
        assert_eq!(
            (s.flow(0).unwrap().start, s.flow(0).unwrap().finish),
            (v(0), v(300))
        );
        assert_eq!(s.flow(1).unwrap().finish, v(200));
        assert_eq!(s.weight_sum(), 4);
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 2);
        assert_eq!(s.virtual_time(), v(150));
        assert_eq!(s.flow(1).unwrap().place, Place::Lingering);
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 0);
        assert_eq!(s.virtual_time(), v(225));
        assert_eq!(
            (s.flow(0).unwrap().start, s.flow(0).unwrap().finish),
            (v(300), v(600))
        );
        // Not eligible (S = 300 > V = 225): filed back by its finish tag all the same, as its
        // L/w (300) is at least S − V (75); the next choice moves it to `ineligible`, finds
        // nothing eligible, sets V = S = 300 and serves this flow's next packet.
        assert!(s.flow(0).unwrap().start > s.virtual_time());
        assert_eq!(s.flow(0).unwrap().place, Place::Eligible);
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 1);
        assert_eq!(s.weight_sum(), 0);
        assert_eq!(s.virtual_time(), v(600));
        assert_eq!(s.flow(1).unwrap().place, Place::Idle);
    }

    #[test]
    fn a_new_busy_period_restarts_every_flow_level() {
        let mut s = wf2q_plus(&[], BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        s.enqueue(Packet::new(0, 0, 1000, 0), 0, &mut drops);
        s.enqueue(Packet::new(1, 1, 100, 0), 0, &mut drops);
        s.dequeue(0, &mut drops); // flow 1 (F = 100); V = 50
        s.dequeue(100_000, &mut drops); // flow 0 (F = 1000); V = 50 + 1000/2 = 550; ends at 1.1 ms
        assert_eq!(s.virtual_time(), v(550));
        // During the last transmission: same busy period, S = max(F = 100, V = 550).
        s.enqueue(Packet::new(2, 1, 100, 1_000_000), 1_000_000, &mut drops);
        assert_eq!(s.flow(1).unwrap().start, v(550));
        s.dequeue(1_100_000, &mut drops); // ends at 1.2 ms
                                          // After the link went idle: V = largest finish tag served (1000), flow 0 starts there.
        s.enqueue(Packet::new(3, 0, 100, 5_000_000), 5_000_000, &mut drops);
        assert_eq!(s.flow(0).unwrap().start, v(1000));
    }

    /// Flows 0 (weight 1) and 1 (weight 1,000) sharing a buffer of two packets, longest
    /// weighted queue dropped: with packets of one size, flow 0's queue is the longest one
    /// whenever it holds a packet.
    fn weights_1_and_1000_two_packets_longest_queue_drop() -> Wf2qPlus {
        let limit = BufferLimit {
            packets: Some(2),
            policy: DropPolicy::LongestQueueDrop,
            ..BufferLimit::UNLIMITED
        };
        wf2q_plus(&[(0, 1), (1, 1000)], limit)
    }

    #[test]
    fn push_out_of_a_head_restores_the_finish_tag() {
        let mut s = weights_1_and_1000_two_packets_longest_queue_drop();
        let mut drops = Vec::new();
        s.enqueue(Packet::new(0, 0, 100, 0), 0, &mut drops); // S = 0, F = 100
        s.enqueue(Packet::new(1, 1, 100, 0), 0, &mut drops);
        // Flow 0 is the longest weighted queue: its only packet (the head) is pushed out.
        s.enqueue(Packet::new(2, 1, 100, 0), 0, &mut drops);
        assert_eq!(drops[0].packet.id, 0);
        let state = s.flow(0).unwrap();
        assert_eq!((state.finish, state.place), (v(0), Place::Idle));
        assert_eq!(s.weight_sum(), 1000);
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 1);
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 2);
        assert!(s.dequeue(0, &mut drops).is_none());
    }

    /// The memory estimate's count of WF2Q+'s calendars and node tables
    /// ([`crate::tag_calendar::DISCIPLINES`]) is what a scheduler holds: with flows in both
    /// sets, two bucket arrays and one node table of a node per id.
    #[test]
    fn calendars_and_node_tables_are_what_the_estimate_counts() {
        use crate::tag_calendar::{calendars_of, node_tables_of, BUCKET_ARRAY_BYTES, NODE_BYTES};
        let weights: Vec<(FlowId, u32)> = (0..100).map(|flow| (flow, 1 + flow % 7)).collect();
        let mut s = wf2q_plus(&weights, BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        let mut id = 0;
        for round in 0..3 {
            for &(flow, _) in &weights {
                s.enqueue(
                    Packet::new(id, flow, 100 + 13 * ((flow + round) % 90), 0),
                    0,
                    &mut drops,
                );
                id += 1;
            }
        }
        for _ in 0..150 {
            s.dequeue(0, &mut drops).unwrap();
        }
        let in_sets = |place| s.flows.iter().filter(|state| state.place == place).count();
        assert!(in_sets(Place::Eligible) > 0 && in_sets(Place::Ineligible) > 0);
        let buckets = s.eligible.calendar.allocated_bytes() + s.ineligible.calendar.allocated_bytes();
        assert_eq!(
            buckets as u64,
            calendars_of("wf2q_plus") * BUCKET_ARRAY_BYTES as u64
        );
        // The one node table both sets use holds a node per flow (its capacity rounded up to
        // below twice the 100 flows): whole nodes per flow, as many as the estimate's tables.
        let nodes = s.calendar_nodes.allocated_bytes();
        assert!(nodes < 200 * NODE_BYTES, "{nodes} bytes of nodes");
        assert_eq!((nodes / (100 * NODE_BYTES)) as u64, node_tables_of("wf2q_plus"));
    }

    /// A pushed-out head that was tagged when the flow's previous packet was sent restores
    /// that packet's finish tag (not the one from before the backlog's first head): the flow
    /// lingers in Σweight until V reaches it, and its next packet starts there.
    #[test]
    fn push_out_of_a_head_tagged_at_a_service_restores_the_sent_packets_finish_tag() {
        let mut s = weights_1_and_1000_two_packets_longest_queue_drop();
        let mut drops = Vec::new();
        s.enqueue(Packet::new(0, 1, 100, 0), 0, &mut drops); // S = 0, F = 0.1
        s.enqueue(Packet::new(1, 0, 100, 0), 0, &mut drops); // S = 0, F = 100
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 0); // V = 100/1001
        s.enqueue(Packet::new(2, 0, 100, 0), 0, &mut drops); // behind flow 0's head
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 1); // F = 100 sent; head 2: S = 100, F = 200
        s.enqueue(Packet::new(3, 1, 100, 0), 0, &mut drops);
        // The buffer is full: flow 0's queue is the longest weighted one, its head (2) goes.
        s.enqueue(Packet::new(4, 1, 100, 0), 0, &mut drops);
        assert_eq!(drops.iter().map(|d| d.packet.id).collect::<Vec<_>>(), vec![2]);
        let state = s.flow(0).unwrap();
        assert_eq!(
            (state.start, state.finish, state.place),
            (v(100), v(100), Place::Lingering)
        );
        assert_eq!(s.weight_sum(), 1001);
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 3);
        s.enqueue(Packet::new(5, 0, 100, 0), 0, &mut drops);
        let state = s.flow(0).unwrap();
        assert_eq!((state.start, state.finish), (v(100), v(200)));
    }

    /// The bookkeeping the lazy heaps rely on: every flow that is not idle has exactly one live
    /// entry, in the heap its place names, keyed by its start tag (`ineligible`) or finish tag
    /// (`eligible`, `lingering`); Σweight is the weight of those flows; no heap holds more
    /// than two entries per flow.
    fn check_heaps(s: &Wf2qPlus) -> Result<(), proptest::test_runner::TestCaseError> {
        let mut weight_sum = 0;
        for (id, state) in s.flows.iter().enumerate() {
            let entries: Vec<Entry<VirtualTime>> = match state.place {
                Place::Idle => continue,
                Place::Lingering => s.lingering.iter().collect(),
                Place::Eligible => s.eligible.entries_of(&s.calendar_nodes, &s.flows, id as u32),
                Place::Ineligible => s.ineligible.entries_of(&s.calendar_nodes, &s.flows, id as u32),
            };
            weight_sum += state.weight as u64;
            let key = if state.place == Place::Ineligible {
                state.start
            } else {
                state.finish
            };
            let live: Vec<_> = entries
                .iter()
                .filter(|entry| entry.id == id as u32 && is_live(&s.flows, state.place, entry))
                .collect();
            proptest::prop_assert_eq!(live.len(), 1, "flow {} at {:?}", id, state.place);
            proptest::prop_assert_eq!(live[0].key, key);
        }
        proptest::prop_assert_eq!(s.weight_sum, weight_sum);
        // Each set holds exactly its flows' live entries: none left for a flow that moved on.
        let at = |place: Place| s.flows.iter().filter(|state| state.place == place).count();
        proptest::prop_assert_eq!(s.eligible.len(), at(Place::Eligible));
        proptest::prop_assert_eq!(s.ineligible.len(), at(Place::Ineligible));
        for len in [s.eligible.len(), s.ineligible.len(), s.lingering.len()] {
            proptest::prop_assert!(len <= 2 * s.flows.len());
        }
        Ok(())
    }

    /// Flows 0 to 11 (weights 1 to 8) backlogged from t = 0 with 3,000 packets each of 40 to
    /// 1,500 bytes, and 6,000 packets served (the calendars choosing their day every `pops`
    /// pops if `Some`, see [`adapting`]), each choice checked by `check_selection`
    /// (a scan of every flow), the bookkeeping by [`check_heaps`] and, after every packet,
    /// every pair of flows against |W_i/w_i − W_j/w_j| ≤ L_i^max/w_i + L_j^max/w_j. Returns
    /// the flows in send order and the calendars' re-bucketings with entries ([`rebuckets`]).
    fn twelve_backlogged_flows(pops: Option<u32>) -> Result<(Vec<FlowId>, [u64; 2]), TestCaseError> {
        const FLOWS: u32 = 12;
        const PER_FLOW: usize = 3000;
        let weights: Vec<(FlowId, u32)> = (0..FLOWS).map(|flow| (flow, 1 + flow * 7 % 8)).collect();
        let mut s = wf2q_plus(&weights, BufferLimit::UNLIMITED);
        if let Some(pops) = pops {
            s = adapting(s, pops);
        }
        let size = |flow: FlowId, k: usize| 40 + ((flow as usize * 7919 + k * 104_729) % 1461) as u32;
        let mut drops = Vec::new();
        let mut id = 0;
        for k in 0..PER_FLOW {
            for flow in 0..FLOWS {
                s.enqueue(Packet::new(id, flow, size(flow, k), 0), 0, &mut drops);
                id += 1;
            }
        }
        let share: Vec<f64> = weights.iter().map(|&(_, weight)| weight as f64).collect();
        let largest: Vec<f64> = (0..FLOWS)
            .map(|flow| (0..PER_FLOW).map(|k| size(flow, k)).max().unwrap_or(0) as f64)
            .collect();
        let mut served = vec![0u64; FLOWS as usize];
        let mut order = Vec::new();
        for _ in 0..6000 {
            let packet = s.dequeue(0, &mut drops).expect("backlogged");
            served[packet.flow as usize] += packet.size as u64;
            order.push(packet.flow);
            check_heaps(&s)?;
            testkit::check_pairwise_fairness(&served, &share, &largest, testkit::PairBound::Sum, 1e-6)?;
        }
        Ok((order, rebuckets(&s)))
    }

    /// Both calendars choose new days (every [`crate::tag_calendar::ADAPT_PERIOD`] pops) and
    /// file their entries again in a long run whose tags are several bytes per unit weight
    /// apart (the first day, half a byte, is too narrow for them), with the choices and the
    /// fairness bound checked throughout. (The proptests below reach these paths only when
    /// they lower the period: they have at most 600 packets.)
    #[test]
    fn the_calendars_change_their_days_in_a_long_run() {
        let (_, rebuckets) = twelve_backlogged_flows(None).unwrap();
        assert!(
            rebuckets.iter().all(|&count| count > 0),
            "re-bucketings {rebuckets:?}"
        );
    }

    /// The same run with days chosen every 1 to 8 pops (hundreds of re-bucketings in each
    /// set): the same order, choice by choice.
    #[test]
    fn calendars_changing_their_days_often_keep_the_order() {
        let (order, _) = twelve_backlogged_flows(None).unwrap();
        for pops in [1, 2, 3, 5, 8] {
            let (adapting_order, rebuckets) = twelve_backlogged_flows(Some(pops)).unwrap();
            assert!(
                rebuckets.iter().all(|&count| count > 10),
                "every {pops} pops: {rebuckets:?}"
            );
            assert_eq!(adapting_order, order, "every {pops} pops");
        }
    }

    /// A day chosen every 1 to 8 pops, or every [`crate::tag_calendar::ADAPT_PERIOD`]
    /// (`None`), for the proptests below: about half their cases lower the period, and of
    /// those (one run of 256 cases each) 85 to 98 % re-bucket `eligible` with entries and 61 to
    /// 77 % `ineligible`; with the full period none can (at most 600 packets).
    fn arb_adapt_period() -> impl proptest::strategy::Strategy<Value = Option<u32>> {
        use proptest::prelude::*;
        prop_oneof![Just(None), (1u32..=8).prop_map(Some)]
    }

    /// `s`, adapting its calendars' days every `pops` pops if `Some`.
    fn maybe_adapting(s: Wf2qPlus, pops: Option<u32>) -> Wf2qPlus {
        match pops {
            Some(pops) => adapting(s, pops),
            None => s,
        }
    }

    proptest::proptest! {
        /// Arrivals and services in random order, with longest-queue drop on a small buffer
        /// (pushed-out heads and lingering flows that get packets leave stale entries): the heap
        /// bookkeeping holds after every call.
        #[test]
        fn lazy_heaps_stay_consistent(
            calls in proptest::collection::vec((0u32..6, 40u32..=1500, proptest::bool::weighted(0.6)), 1..400),
            pops in arb_adapt_period(),
        ) {
            let limit = testkit::byte_limit(4000, true);
            run_calls(&mut maybe_adapting(wf2q_plus(&SIX_WEIGHTS, limit), pops), &calls)?;
        }

        /// The sets' two structures give the same order: the same calls with sets that move
        /// between their calendars and heaps all the time send the same packets in the same
        /// order, and the bookkeeping holds after every call.
        #[test]
        fn calendars_and_heaps_send_the_same_order(
            calls in proptest::collection::vec((0u32..6, 40u32..=1500, proptest::bool::weighted(0.6)), 1..400),
            pops in arb_adapt_period(),
        ) {
            let limit = testkit::byte_limit(4000, true);
            let calendars = run_calls(&mut maybe_adapting(wf2q_plus(&SIX_WEIGHTS, limit), pops), &calls)?;
            let switching = run_calls(&mut wf2q_plus_switching(&SIX_WEIGHTS, limit), &calls)?;
            proptest::prop_assert_eq!(calendars, switching);
        }

        #[test]
        fn invariants(
            trace in testkit::arb_trace(5, 300),
            lqd in proptest::bool::ANY,
            switching in proptest::bool::ANY,
            pops in arb_adapt_period(),
        ) {
            let limit = testkit::byte_limit(8000, lqd);
            let weights = [(1, 2), (2, 3), (3, 8)];
            let s = if switching { wf2q_plus_switching(&weights, limit) } else { wf2q_plus(&weights, limit) };
            let mut s = maybe_adapting(s, pops);
            testkit::check_invariants(&mut s, &trace, true)?;
        }

        /// Three backlogged flows with random weights and sizes: after any number of packets,
        /// |W_i/w_i − W_j/w_j| ≤ L_i^max/w_i + L_j^max/w_j for every pair.
        #[test]
        fn byte_shares_follow_weights(
            weights in proptest::collection::vec(1u32..=8, 3),
            sizes in proptest::collection::vec(40u32..=1500, 64),
            n in 1usize..600,
            pops in arb_adapt_period(),
        ) {
            let s = wf2q_plus(&[(0, weights[0]), (1, weights[1]), (2, weights[2])], BufferLimit::UNLIMITED);
            let mut s = maybe_adapting(s, pops);
            let (served, largest) = testkit::three_backlogged_flows(&mut s, &sizes, n);
            let share: Vec<f64> = weights.iter().map(|&w| w as f64).collect();
            testkit::check_pairwise_fairness(&served, &share, &largest, testkit::PairBound::Sum, 1e-6)?;
        }
    }
}
