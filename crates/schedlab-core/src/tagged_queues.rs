//! Per-flow FIFO queues whose packets carry virtual-time tags, with an order over the
//! head-of-line tags: the machinery shared by the sorted-priority disciplines `wfq`, `scfq`,
//! `stfq` and `virtual_clock` (each computes its own tags; this module stores and orders them
//! in the discipline's [`HeadOrder`], a [`crate::tag_calendar::TagCalendar`] for all four).
//!
//! Invariants:
//! * a flow is in the order iff its queue is non-empty, keyed `(key, seq)` of its head packet;
//!   the head's finish tag is that key plus its slot's `head_finish_offset`, and the tags of
//!   the flow's other packets form its tag list, in queue order (one shorter than its packet
//!   queue in [`FlowQueues`]);
//! * within a flow keys never decrease (every discipline here computes
//!   `S = max(F_prev, V)`, `F = S + L/w` with `F_prev` the flow's previous finish tag), so the
//!   least head key is the least key of any queued packet. Cost: the order's per packet (the
//!   calendar's O(1) within its window); no allocation in steady state (the pool and the
//!   order keep their capacity).
//!
//! Layout: the tags behind the heads live in one shared node pool ([`PooledLists`], as the
//! packets in [`FlowQueues`] do), so no flow's storage grows on its own; a flow's list ends,
//! its head's finish offset, its last sent finish tag and the discipline's per-flow state `S`
//! share one slot. The heap entry of a flow keeps (in [`crate::indexed_heap::Entry::aux`]) the
//! pool index of the flow's second tag, the one that becomes its head when it is served; so
//! once a packet is served and the next flow to serve is on top of the heap, everything the
//! next service reads from tables of many flows (the slot, that tag, the packet queue's ends,
//! the counters) is prefetched, and a service reads no third tag: at 16,384 flows these
//! tables exceed the caches and each dependent read would wait for memory.
//!
//! Tie rule: equal keys are served in arrival order (`seq` is a global arrival counter).
//!
//! Order structure ([`HeadOrder`]): each discipline chooses it as the second type parameter.
//! The default is the 4-ary [`VirtualTimeHeap`]. [`TagCalendar`] is exact for any keys
//! too, and cheaper when the heads mostly lie within a bounded window above the key last
//! served (WFQ, SCFQ, STFQ, and Virtual Clock with a day chosen for its stamps; see their headers):
//! keys below the window (a newly backlogged Virtual Clock flow's) go to its heap.

use crate::config::{BufferLimit, ConfigError, FlowParams, TableReader};
use crate::counters::{Counters, DropReason, Dropped};
use crate::discipline::ParamInfo;
use crate::indexed_heap::{Entry, VirtualTimeHeap};
use crate::packet::{FlowId, Packet, MAX_FLOW_ID};
use crate::pool::{prefetch_at, ListEnds, PooledLists};
use crate::queues::{Admission, FlowQueues};
use crate::tag_calendar::TagCalendar;
use crate::virtual_time::VirtualTime;

/// The tags of one queued packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PacketTag {
    /// The tag that orders service: the finish tag (WFQ, SCFQ), the start tag (STFQ) or the
    /// stamp `auxVC` (Virtual Clock).
    pub key: VirtualTime,
    /// The packet's finish tag (equal to `key` except for STFQ); a flow's next packet starts
    /// from it. `finish − key` must fit in 64 raw bits (one `L/w` always does).
    pub finish: VirtualTime,
}

/// A stored tag: 32 bytes (the finish tag as an offset from the key).
#[derive(Clone, Copy, Debug)]
struct Tagged {
    key: VirtualTime,
    seq: u64,
    /// `finish − key` in raw units (an `L/w` fits in 64 bits).
    finish_offset: u64,
}

impl Tagged {
    #[inline]
    fn tag(&self) -> PacketTag {
        tag_of(self.key, self.finish_offset)
    }
}

/// The tags of a packet whose key is `key` and whose finish tag lies `finish_offset` raw units
/// above it (stored tags and heads alike).
#[inline(always)]
fn tag_of(key: VirtualTime, finish_offset: u64) -> PacketTag {
    PacketTag {
        key,
        finish: VirtualTime::from_raw(key.raw() + finish_offset as u128),
    }
}

/// One flow's slot: the ends of its tag list (the packets behind the head), the head's
/// `finish − key` (raw units), the finish tag of its last sent packet and the discipline's
/// per-flow state.
/// Aligned to a cache line: with a state of up to 32 bytes (SCFQ, STFQ, Virtual Clock) a slot
/// is one line, so a service misses it once, not on two lines (−1 to −2 first-level misses
/// per packet at 1,024 flows with the calendar's nodes aligned too).
#[derive(Clone, Debug, Default)]
#[repr(align(64))]
struct FlowSlot<S> {
    tags: ListEnds,
    head_finish_offset: u64,
    last_sent_finish: VirtualTime,
    state: S,
}

/// The order of the head-of-line tags: one entry per backlogged flow, keyed `(key, seq)`, with
/// the owner's [`Entry::aux`] (the pool index of the flow's second tag).
pub trait HeadOrder: Clone + std::fmt::Debug + Default {
    /// Number of entries.
    fn len(&self) -> usize;
    /// Whether there is no entry.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Whether `id` has an entry.
    fn contains(&self, id: u32) -> bool;
    /// The entry of `id`, if any.
    fn get(&self, id: u32) -> Option<Entry<VirtualTime>>;
    /// The least entry.
    fn peek(&self) -> Option<Entry<VirtualTime>>;
    /// Adds `id` (which has no entry).
    fn push_with(&mut self, id: u32, key: VirtualTime, seq: u64, aux: u32);
    /// Sets the [`Entry::aux`] of `id` (which has an entry).
    fn set_aux(&mut self, id: u32, aux: u32);
    /// Removes the entry of `id`, if any.
    fn remove(&mut self, id: u32) -> Option<Entry<VirtualTime>>;
    /// Takes the least entry out, then files its id again with the `(key, seq, aux)` that
    /// `next` returns for it (if any); returns the entry taken out.
    fn pop_then(
        &mut self,
        next: impl FnOnce(&Entry<VirtualTime>) -> Option<(VirtualTime, u64, u32)>,
    ) -> Option<Entry<VirtualTime>>;
    /// The ids and [`Entry::aux`] worth prefetching for before the next pops: none below
    /// [`crate::indexed_heap::PREFETCH_ENTRIES`] entries, else the least, and from [`crate::indexed_heap::PREFETCH_AHEAD_ENTRIES`]
    /// entries on also the one after it.
    fn upcoming(&self) -> [Option<(u32, u32)>; 2];
    /// Makes room for ids below `ids`, so that later pushes of such ids do not allocate.
    fn reserve_ids(&mut self, ids: usize);
}

impl HeadOrder for VirtualTimeHeap {
    #[inline(always)]
    fn len(&self) -> usize {
        VirtualTimeHeap::len(self)
    }
    #[inline(always)]
    fn contains(&self, id: u32) -> bool {
        VirtualTimeHeap::contains(self, id)
    }
    #[inline(always)]
    fn get(&self, id: u32) -> Option<Entry<VirtualTime>> {
        VirtualTimeHeap::get(self, id)
    }
    #[inline(always)]
    fn peek(&self) -> Option<Entry<VirtualTime>> {
        VirtualTimeHeap::peek(self)
    }
    #[inline(always)]
    fn push_with(&mut self, id: u32, key: VirtualTime, seq: u64, aux: u32) {
        VirtualTimeHeap::push_with(self, id, key, seq, aux)
    }
    #[inline(always)]
    fn set_aux(&mut self, id: u32, aux: u32) {
        VirtualTimeHeap::set_aux(self, id, aux)
    }
    #[inline(always)]
    fn remove(&mut self, id: u32) -> Option<Entry<VirtualTime>> {
        VirtualTimeHeap::remove(self, id)
    }
    #[inline(always)]
    fn pop_then(
        &mut self,
        next: impl FnOnce(&Entry<VirtualTime>) -> Option<(VirtualTime, u64, u32)>,
    ) -> Option<Entry<VirtualTime>> {
        // The top's key changes in place: one sift-down instead of a removal and a push.
        let top = VirtualTimeHeap::peek(self)?;
        match next(&top) {
            // Within a flow keys never decrease, and the next tag arrived later.
            Some((key, seq, aux)) => self.replace_top_with(top.id, key, seq, aux),
            None => {
                self.pop();
            }
        }
        Some(top)
    }
    #[inline(always)]
    fn upcoming(&self) -> [Option<(u32, u32)>; 2] {
        VirtualTimeHeap::upcoming(self)
    }
    fn reserve_ids(&mut self, ids: usize) {
        VirtualTimeHeap::reserve_ids(self, ids)
    }
}

impl HeadOrder for TagCalendar {
    #[inline(always)]
    fn len(&self) -> usize {
        TagCalendar::len(self)
    }
    #[inline(always)]
    fn contains(&self, id: u32) -> bool {
        TagCalendar::contains(self, id)
    }
    #[inline(always)]
    fn get(&self, id: u32) -> Option<Entry<VirtualTime>> {
        TagCalendar::get(self, id)
    }
    #[inline(always)]
    fn peek(&self) -> Option<Entry<VirtualTime>> {
        TagCalendar::peek(self)
    }
    #[inline(always)]
    fn push_with(&mut self, id: u32, key: VirtualTime, seq: u64, aux: u32) {
        TagCalendar::push_with(self, id, key, seq, aux)
    }
    #[inline(always)]
    fn set_aux(&mut self, id: u32, aux: u32) {
        TagCalendar::set_aux(self, id, aux)
    }
    #[inline(always)]
    fn remove(&mut self, id: u32) -> Option<Entry<VirtualTime>> {
        TagCalendar::remove(self, id)
    }
    #[inline(always)]
    fn pop_then(
        &mut self,
        next: impl FnOnce(&Entry<VirtualTime>) -> Option<(VirtualTime, u64, u32)>,
    ) -> Option<Entry<VirtualTime>> {
        TagCalendar::pop_then(self, next)
    }
    #[inline(always)]
    fn upcoming(&self) -> [Option<(u32, u32)>; 2] {
        TagCalendar::upcoming(self)
    }
    fn reserve_ids(&mut self, ids: usize) {
        TagCalendar::reserve_ids(self, ids)
    }
}

/// Per-flow queues of tagged packets, per-flow discipline state `S`, and the order `H` of the
/// head-of-line keys.
#[derive(Clone, Debug)]
pub struct TaggedQueues<S, H = VirtualTimeHeap> {
    queues: FlowQueues,
    slots: Vec<FlowSlot<S>>,
    /// Every flow's tag list. The slots' `tags` are private and changed only by this pool's
    /// methods: each is a list of this pool (the contract of its `_own` methods).
    pool: PooledLists<Tagged>,
    /// Head-of-line keys by flow: entry `seq` is the head packet's arrival sequence.
    heads: H,
    next_seq: u64,
    /// Push-outs of the last admission (capacity kept, so no allocation in steady state).
    pushed_out: Vec<(FlowId, VirtualTime)>,
    /// Whether the packet of the last admission, if queued, is its flow's only one (read by
    /// the [`TaggedQueues::push_tag_with`] that follows it).
    admitted_head: bool,
}

impl<S: Default + Clone, H: HeadOrder> TaggedQueues<S, H> {
    /// Empty queues with `limit`.
    pub fn new(limit: BufferLimit) -> TaggedQueues<S, H> {
        TaggedQueues::with_heads(limit, H::default())
    }

    /// Empty queues with `limit`, ordering the heads in `heads` (empty; for instance a
    /// [`TagCalendar`] with a day width chosen for the discipline's keys).
    pub fn with_heads(limit: BufferLimit, heads: H) -> TaggedQueues<S, H> {
        debug_assert!(heads.is_empty());
        TaggedQueues {
            queues: FlowQueues::new(limit),
            slots: Vec::new(),
            pool: PooledLists::default(),
            heads,
            next_seq: 0,
            pushed_out: Vec::new(),
            admitted_head: false,
        }
    }

    /// Per-flow and total counters.
    #[inline]
    pub fn counters(&self) -> &Counters {
        &self.queues.counters
    }

    /// Whether no packet is queued.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.queues.counters.backlog().packets == 0
    }

    /// Whether `flow` has nothing queued.
    #[inline]
    pub fn flow_is_empty(&self, flow: FlowId) -> bool {
        self.queues.is_empty(flow)
    }

    /// The discipline's state of `flow` (the default value for a flow never touched).
    #[inline]
    pub fn state(&self, flow: FlowId) -> Option<&S> {
        self.slots.get(flow as usize).map(|slot| &slot.state)
    }

    /// The discipline's state of `flow`, created with the default value if needed. `flow` must
    /// not exceed [`MAX_FLOW_ID`].
    #[inline]
    pub fn state_mut(&mut self, flow: FlowId) -> &mut S {
        debug_assert!(flow <= MAX_FLOW_ID);
        let index = flow as usize;
        if index < self.slots.len() {
            // Checked just above: no second bounds check on the usual path.
            return &mut self.slots[index].state;
        }
        self.grow_slots(index);
        &mut self.slots[index].state
    }

    /// Slots up to `index` (a flow id seen for the first time).
    #[cold]
    #[inline(never)]
    fn grow_slots(&mut self, index: usize) {
        self.slots.resize_with(index + 1, FlowSlot::default);
    }

    /// The slot of `flow`, without a bounds check. Invariant: a flow that has a packet or an
    /// entry in the head order has a slot ([`TaggedQueues::push_tag_with`] creates it before
    /// filing the flow's first tag, and slots are never removed).
    #[inline(always)]
    fn slot_mut(slots: &mut [FlowSlot<S>], flow: FlowId) -> &mut FlowSlot<S> {
        debug_assert!((flow as usize) < slots.len(), "flow {flow} has no slot");
        // SAFETY: `flow` has a slot (the invariant above, checked in debug builds).
        unsafe { slots.get_unchecked_mut(flow as usize) }
    }

    /// Makes room in the order of the heads for flows below `flows`, so that no later packet
    /// of theirs makes it allocate (owners call it when they first see a flow).
    pub fn reserve_heads(&mut self, flows: usize) {
        self.heads.reserve_ids(flows);
    }

    /// Admits `packet` through [`FlowQueues::admit`] (buffer limit, drop policy, counters),
    /// with longest-queue drop weighing each flow by `weight(state)`. Each packet pushed out of
    /// another flow's tail loses its tag and is listed by [`TaggedQueues::pushed_out`] with the
    /// finish tag its flow had before that packet arrived. If the result is
    /// [`Admission::Queued`] the caller must give the packet its tags with
    /// [`TaggedQueues::push_tag`] before any other call.
    #[inline]
    pub fn admit(
        &mut self,
        packet: Packet,
        weight: impl Fn(&S) -> u64,
        drops: &mut Vec<Dropped>,
    ) -> Admission {
        self.pushed_out.clear();
        self.admit_restoring(packet, weight, |_, _| {}, drops)
    }

    /// [`TaggedQueues::admit`] for a discipline whose roll-back of a push-out touches only the
    /// flow's state: `restore(state, previous_finish)` is called for each flow listed in
    /// [`TaggedQueues::pushed_out`], right after the admission. On the usual path (nothing
    /// pushed out) neither the list nor the callback is touched, so the list is then the one
    /// of the last admission that pushed something out.
    #[inline(always)]
    pub fn admit_restoring(
        &mut self,
        packet: Packet,
        weight: impl Fn(&S) -> u64,
        mut restore: impl FnMut(&mut S, VirtualTime),
        drops: &mut Vec<Dropped>,
    ) -> Admission {
        let first_new_drop = drops.len();
        let slots = &self.slots;
        let (admission, is_head) = self.queues.admit_noting_head(
            packet,
            |f| slots.get(f as usize).map_or(1, |slot| weight(&slot.state)),
            drops,
        );
        self.admitted_head = is_head;
        if drops.len() > first_new_drop {
            self.roll_back_push_outs(&drops[first_new_drop..]);
            for &(flow, previous_finish) in &self.pushed_out {
                restore(&mut self.slots[flow as usize].state, previous_finish);
            }
        }
        admission
    }

    /// Takes the tags of the packets pushed out among `drops` and lists each such flow in
    /// `pushed_out` (cleared first) with its finish tag before that packet arrived.
    #[cold]
    #[inline(never)]
    fn roll_back_push_outs(&mut self, drops: &[Dropped]) {
        self.pushed_out.clear();
        for dropped in drops {
            if dropped.reason == DropReason::PushedOut {
                let flow = dropped.packet.flow;
                let slot = &mut self.slots[flow as usize];
                let previous_finish = if self.pool.pop_back(&mut slot.tags).is_none() {
                    // The head itself went.
                    self.heads.remove(flow);
                    slot.last_sent_finish
                } else if let Some(tail) = self.pool.back(&slot.tags) {
                    tail.tag().finish
                } else {
                    // Only the head is left.
                    self.heads.set_aux(flow, slot.tags.head_node());
                    let head = self.heads.get(flow).expect("a flow with packets has a head").key;
                    tag_of(head, slot.head_finish_offset).finish
                };
                self.pushed_out.push((flow, previous_finish));
            }
        }
    }

    /// The flows whose tail the last [`TaggedQueues::admit`] pushed out, in push-out order,
    /// each with the finish tag it had before the pushed-out packet arrived: the finish tag of
    /// its new tail, or of its last sent packet if its queue is now empty.
    pub fn pushed_out(&self) -> &[(FlowId, VirtualTime)] {
        &self.pushed_out
    }

    /// Tags the packet just admitted for `flow` (the tail of its queue); `tag.key` must not be
    /// below the key of the flow's previous packet, and `tag.finish − tag.key` must fit in 64
    /// bits (it is saturated otherwise).
    #[inline]
    pub fn push_tag(&mut self, flow: FlowId, tag: PacketTag) {
        self.push_tag_with(flow, |_| tag);
    }

    /// [`TaggedQueues::push_tag`] with the tags that `tag` computes from the flow's state,
    /// which it may update (the flow's slot is looked up once for both).
    #[inline]
    pub fn push_tag_with(&mut self, flow: FlowId, tag: impl FnOnce(&mut S) -> PacketTag) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.state_mut(flow);
        let slot = Self::slot_mut(&mut self.slots, flow);
        let tag = tag(&mut slot.state);
        let finish_offset = u64::try_from(tag.finish.raw().saturating_sub(tag.key.raw())).unwrap_or(u64::MAX);
        // The packet is queued already: it is the head iff it is the flow's only packet, which
        // admission noted (instead of reading the counters or the order's entry again).
        let is_head = self.admitted_head;
        debug_assert_eq!(is_head, self.queues.len(flow) == 1);
        debug_assert_eq!(is_head, !self.heads.contains(flow));
        if is_head {
            slot.head_finish_offset = finish_offset;
            self.heads.push_with(flow, tag.key, seq, slot.tags.head_node());
            return;
        }
        let second = slot.tags.is_empty();
        let tagged = Tagged {
            key: tag.key,
            seq,
            finish_offset,
        };
        // SAFETY: a slot's `tags` is a list of `pool` (see the field).
        unsafe { self.pool.push_back_own(&mut slot.tags, tagged) };
        if second {
            self.heads.set_aux(flow, slot.tags.head_node());
        }
    }

    /// Removes and returns the queued packet with the least (key, arrival sequence), with its
    /// tags, recording it as sent. O(log active flows).
    #[inline]
    pub fn pop_min(&mut self) -> Option<(Packet, PacketTag)> {
        let (slots, pool) = (&mut self.slots, &mut self.pool);
        let mut tag = PacketTag::default();
        // The served flow's packet node was prefetched one service ago (below), as the next.
        let top = self.heads.pop_then(|top| {
            let slot = Self::slot_mut(slots, top.id);
            tag = tag_of(top.key, slot.head_finish_offset);
            slot.last_sent_finish = tag.finish;
            // SAFETY: a slot's `tags` is a list of `pool` (see the field).
            let next = unsafe { pool.pop_front_own(&mut slot.tags) }?;
            slot.head_finish_offset = next.finish_offset;
            Some((next.key, next.seq, slot.tags.head_node()))
        })?;
        // The next flow to serve is known now, and (see `VirtualTimeHeap::upcoming`) the one
        // after it is one of its children in the heap: start loading what the next calls read
        // from tables too large for the cache (slot, second tag, list ends and counters).
        // Issued before the packet is taken, so that the packet goes straight to the caller
        // instead of waiting on the stack.
        let [next, after_next] = self.heads.upcoming();
        if let Some((next, second)) = next {
            self.prefetch_flow(next, second);
            // Its list ends were (usually) prefetched one call ago: its packet's node next.
            // Not when it is the flow being served, whose head is the packet taken below.
            if next != top.id {
                self.queues.prefetch_head(next);
            }
        }
        if let Some((after_next, second)) = after_next {
            self.prefetch_flow(after_next, second);
        }
        let packet = self
            .queues
            .pop_sent(top.id)
            .expect("tags run parallel to packets");
        Some((packet, tag))
    }

    /// Prefetches what serving `flow`, whose second tag is the pool node `second`, reads.
    #[inline(always)]
    fn prefetch_flow(&self, flow: FlowId, second: u32) {
        prefetch_at(&self.slots, flow as usize);
        self.pool.prefetch_node(second);
        self.queues.prefetch_flow(flow);
    }

    /// The packet [`TaggedQueues::pop_min`] would return, with its tags.
    pub fn peek_min(&self) -> Option<(Packet, PacketTag)> {
        let top = self.heads.peek()?;
        let packet = *self.queues.head(top.id).expect("tags run parallel to packets");
        Some((packet, self.head_tag(top.id, top.key)))
    }

    /// The tags of the head of `flow`, whose key is `key`.
    fn head_tag(&self, flow: FlowId, key: VirtualTime) -> PacketTag {
        tag_of(key, self.slots[flow as usize].head_finish_offset)
    }

    /// The tags of the packets queued for `flow`, head first.
    pub fn tags(&self, flow: FlowId) -> impl Iterator<Item = PacketTag> + '_ {
        let head = self.heads.get(flow).map(|top| self.head_tag(flow, top.key));
        let rest = head.and_then(|_| self.slots.get(flow as usize));
        head.into_iter().chain(
            rest.into_iter()
                .flat_map(|slot| self.pool.iter(slot.tags).map(Tagged::tag)),
        )
    }

    /// The finish tag of the packet most recently sent from `flow` (zero if none).
    pub fn last_sent_finish(&self, flow: FlowId) -> VirtualTime {
        self.slots
            .get(flow as usize)
            .map_or(VirtualTime::ZERO, |slot| slot.last_sent_finish)
    }
}

/// Share used when neither the flow nor the flow defaults give one.
pub const DEFAULT_SHARE: u32 = 1;

/// The flow key of the fair-queueing family: `share`, the flow's relative share φ_i of the
/// link (unitless; the link is divided in proportion to the shares of the backlogged flows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShareParams {
    /// φ_i, an integer of at least 1.
    pub share: u32,
}

impl Default for ShareParams {
    fn default() -> ShareParams {
        ShareParams { share: DEFAULT_SHARE }
    }
}

impl FlowParams for ShareParams {
    fn read(reader: &mut TableReader<'_>, inherited: &Self) -> Result<Self, ConfigError> {
        Ok(ShareParams {
            share: reader.positive_u32("share")?.unwrap_or(inherited.share),
        })
    }
}

/// The description of `share` for a discipline's [`crate::DisciplineInfo::flow_params`].
pub const fn share_param(description: &'static str) -> ParamInfo {
    ParamInfo {
        name: "share",
        unit: "integer ≥ 1 (relative)",
        default: "1",
        description,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DropPolicy;

    fn tag(key: u64) -> PacketTag {
        PacketTag {
            key: VirtualTime::from_integer(key),
            finish: VirtualTime::from_integer(key),
        }
    }

    /// Queues whose per-flow state is the flow's weight (1 unless set).
    type Weighted = TaggedQueues<u64>;

    /// Queues that hold at most `packets` packets and push out the longest weighted queue's tail.
    fn longest_queue_drop(packets: u64) -> Weighted {
        Weighted::new(BufferLimit {
            packets: Some(packets),
            policy: DropPolicy::LongestQueueDrop,
            ..BufferLimit::UNLIMITED
        })
    }

    fn push(q: &mut Weighted, id: u64, flow: FlowId, key: u64, drops: &mut Vec<Dropped>) {
        if *q.state_mut(flow) == 0 {
            *q.state_mut(flow) = 1;
        }
        let admitted = q.admit(Packet::new(id, flow, 100, 0), |w| *w, drops);
        assert_eq!(admitted, Admission::Queued);
        q.push_tag(flow, tag(key));
    }

    #[test]
    fn serves_least_key_then_arrival_order() {
        let mut q = Weighted::new(BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        push(&mut q, 0, 0, 10, &mut drops);
        push(&mut q, 1, 0, 30, &mut drops);
        push(&mut q, 2, 1, 20, &mut drops);
        push(&mut q, 3, 2, 10, &mut drops);
        let order: Vec<u64> = std::iter::from_fn(|| q.pop_min().map(|(p, _)| p.id)).collect();
        // keys 10 (id 0), 10 (id 3, later arrival), 20, 30
        assert_eq!(order, vec![0, 3, 2, 1]);
        assert_eq!(q.last_sent_finish(0), VirtualTime::from_integer(30));
        assert!(q.is_empty());
    }

    #[test]
    fn start_and_finish_tags_round_trip() {
        let mut q = Weighted::new(BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        *q.state_mut(0) = 1;
        q.admit(Packet::new(0, 0, 100, 0), |w| *w, &mut drops);
        let tag = PacketTag {
            key: VirtualTime::from_integer(5),
            finish: VirtualTime::ratio_ceil(1003, 3),
        };
        q.push_tag(0, tag);
        assert_eq!(q.tags(0).collect::<Vec<_>>(), vec![tag]);
        assert_eq!(q.pop_min().unwrap().1, tag);
        assert_eq!(q.last_sent_finish(0), tag.finish);
    }

    #[test]
    fn push_out_reports_the_previous_finish_and_leaves_no_stale_head() {
        let mut q = longest_queue_drop(3);
        let mut drops = Vec::new();
        push(&mut q, 0, 0, 10, &mut drops);
        push(&mut q, 1, 0, 20, &mut drops);
        push(&mut q, 2, 1, 5, &mut drops);
        assert_eq!(q.pop_min().unwrap().0.id, 2); // flow 1 sent its packet (finish 5)
        push(&mut q, 3, 1, 15, &mut drops);
        // Buffer full (3 packets): with flow 1 at weight 2, flow 0 is the longest weighted
        // queue; its tail (finish 20) goes.
        *q.state_mut(1) = 2;
        let admitted = q.admit(Packet::new(4, 1, 100, 0), |w| *w, &mut drops);
        assert_eq!(admitted, Admission::Queued);
        assert_eq!(q.pushed_out(), &[(0, VirtualTime::from_integer(10))]);
        q.push_tag(1, tag(25));
        // Flow 1 now holds two packets (finish 15, 25) and flow 0 one: with equal weights the
        // next arrival (flow 2) pushes out flow 1's tail, whose predecessor has finish 15.
        *q.state_mut(1) = 1;
        *q.state_mut(2) = 1;
        let admitted = q.admit(Packet::new(5, 2, 100, 0), |w| *w, &mut drops);
        assert_eq!(admitted, Admission::Queued);
        assert_eq!(q.pushed_out(), &[(1, VirtualTime::from_integer(15))]);
        q.push_tag(2, tag(1));
        let order: Vec<u64> = std::iter::from_fn(|| q.pop_min().map(|(p, _)| p.id)).collect();
        assert_eq!(order, vec![5, 0, 3]);
    }

    #[test]
    fn admit_restoring_hands_each_push_out_to_its_flow_state() {
        let mut q = longest_queue_drop(4);
        let mut drops = Vec::new();
        push(&mut q, 0, 0, 10, &mut drops);
        push(&mut q, 1, 0, 20, &mut drops);
        push(&mut q, 2, 1, 5, &mut drops);
        let mut restored = Vec::new();
        // Room left: queued, the callback is not called, and the arrival is its flow's head.
        let admitted = q.admit_restoring(
            Packet::new(3, 2, 100, 0),
            |w| *w,
            |w, f| restored.push((*w, f)),
            &mut drops,
        );
        assert_eq!(admitted, Admission::Queued);
        assert!(restored.is_empty());
        q.push_tag(2, tag(7));
        // Full: flow 0 (two packets, weight 1) loses its tail (finish 20); its state is handed
        // over with the finish tag of its new tail (10).
        *q.state_mut(3) = 1;
        let admitted = q.admit_restoring(
            Packet::new(4, 3, 100, 0),
            |w| *w,
            |w, f| restored.push((*w, f)),
            &mut drops,
        );
        assert_eq!(admitted, Admission::Queued);
        assert_eq!(restored, vec![(1, VirtualTime::from_integer(10))]);
        q.push_tag(3, tag(8));
        let order: Vec<u64> = std::iter::from_fn(|| q.pop_min().map(|(p, _)| p.id)).collect();
        assert_eq!(order, vec![2, 3, 4, 0]);
    }

    #[test]
    fn a_pushed_out_head_leaves_the_heap() {
        let mut q = longest_queue_drop(2);
        let mut drops = Vec::new();
        push(&mut q, 0, 0, 1, &mut drops);
        push(&mut q, 1, 1, 50, &mut drops);
        // With flow 1 at weight 1000, flow 0 (100 B at weight 1) is the longest weighted
        // queue: its only packet, the head with key 1, is pushed out.
        *q.state_mut(1) = 1000;
        let admitted = q.admit(Packet::new(2, 1, 100, 0), |w| *w, &mut drops);
        assert_eq!(admitted, Admission::Queued);
        assert_eq!(q.pushed_out(), &[(0, VirtualTime::ZERO)]);
        q.push_tag(1, tag(60));
        assert_eq!(q.peek_min().unwrap().0.id, 1);
        let order: Vec<u64> = std::iter::from_fn(|| q.pop_min().map(|(p, _)| p.id)).collect();
        assert_eq!(order, vec![1, 2]);
    }
}
