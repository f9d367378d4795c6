//! Per-flow FIFO queues whose packets carry virtual-time tags, with a min-heap over the
//! head-of-line tags: the machinery shared by the sorted-priority disciplines `wfq`, `scfq`,
//! `stfq` and `virtual_clock` (each computes its own tags; this module stores and orders them),
//! plus the 8-ary [`TagHeap`] that `wfq` and `wf2q_plus` also use for their other heaps.
//!
//! Invariants:
//! * flow `f`'s tag list runs parallel to its packet queue in [`FlowQueues`]: same length,
//!   same order, the tag of the head packet at the front;
//! * every non-empty flow has exactly one *valid* entry `(key, seq, f)` in the heap, where
//!   `key` and `seq` are its head packet's; entries whose `seq` is no longer the head's
//!   (the head was pushed out) are stale and skipped when they reach the top;
//! * within a flow keys never decrease (every discipline here computes
//!   `S = max(F_prev, V)`, `F = S + L/w` with `F_prev` the flow's previous finish tag), so the
//!   least head key is the least key of any queued packet. Cost: O(log active flows) per
//!   packet; no allocation in steady state (the pool and the heap keep their capacity).
//!
//! Layout: the tags live in one shared node pool ([`PooledLists`], as the packets in
//! [`FlowQueues`] do), so no flow's storage grows on its own; a flow's list ends, its last sent
//! finish tag and the discipline's per-flow state `S` share one slot, so serving a flow
//! touches few cache lines.
//!
//! Tie rule: equal keys are served in arrival order (`seq` is a global arrival counter).

use crate::config::{BufferLimit, ConfigError, FlowParams, TableReader};
use crate::counters::{Counters, DropReason, Dropped};
use crate::discipline::ParamInfo;
use crate::packet::{FlowId, Packet, MAX_FLOW_ID};
use crate::pool::{ListEnds, PooledLists};
use crate::queues::{Admission, FlowQueues};
use crate::virtual_time::VirtualTime;

/// One entry of a [`TagHeap`]: ordered by `(key, seq)`; `flow` and `generation` are payload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeapEntry {
    /// The tag the heap orders by.
    pub key: VirtualTime,
    /// Tie-breaker among equal keys (an arrival sequence number); smaller first.
    pub seq: u64,
    /// The flow the entry stands for.
    pub flow: FlowId,
    /// Lets the owner recognise stale entries (compared with the flow's current generation).
    pub generation: u32,
}

impl HeapEntry {
    /// Whether `self` comes out of the heap before `other`: `(key, seq)` lexicographically.
    #[inline(always)]
    pub fn before(&self, other: &HeapEntry) -> bool {
        let (a, b) = (self.key.raw(), other.key.raw());
        let (a_high, b_high) = ((a >> 64) as u64, (b >> 64) as u64);
        if a_high != b_high {
            // Rare: live keys almost always share their high 64 bits.
            return a_high < b_high;
        }
        // (low 64 bits of the key, seq) as one 128-bit number: a single compare with borrow,
        // which the heap's child selection turns into conditional moves.
        let a_rest = ((a as u64 as u128) << 64) | self.seq as u128;
        let b_rest = ((b as u64 as u128) << 64) | other.seq as u128;
        a_rest < b_rest
    }
}

/// An 8-ary min-heap of [`HeapEntry`] by `(key, seq)`. Removal of the top fills the hole
/// bottom-up (Floyd): the hole walks down to a leaf along the least children and the
/// displaced element rises from there, so an element that belongs near the bottom (the usual
/// case: a flow's next tag) costs one pass. O(log₈ n) levels; the capacity is kept.
#[derive(Clone, Debug, Default)]
pub struct TagHeap {
    entries: Vec<HeapEntry>,
}

impl TagHeap {
    /// An empty heap.
    pub fn new() -> TagHeap {
        TagHeap::default()
    }

    /// Number of entries (stale ones included).
    #[inline]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the heap is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Makes room for `flows` distinct flows: capacity for two entries per flow, so that with
    /// at most one valid entry per flow [`TagHeap::push_or_compact`] never grows the heap.
    /// Owners call it when they first see a flow (allocation happens then, not per packet).
    pub fn reserve_for_flows(&mut self, flows: usize) {
        let wanted = 2 * flows + 8;
        if self.entries.capacity() < wanted {
            self.entries.reserve(wanted - self.entries.len());
        }
    }

    /// Removes every entry (keeps the capacity).
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// The least entry.
    #[inline]
    pub fn peek(&self) -> Option<&HeapEntry> {
        self.entries.first()
    }

    /// Adds `entry`.
    #[inline]
    pub fn push(&mut self, entry: HeapEntry) {
        self.entries.push(entry);
        self.rise(self.entries.len() - 1, entry);
    }

    /// Adds `entry` to a heap whose owner leaves stale entries behind (recognised by `valid`
    /// returning false). When the heap is full, the stale entries are dropped first, so they
    /// never make it grow: it grows only when more than 3/4 of its capacity holds valid
    /// entries. O(n) for a compaction, amortised O(1): after one, at least a quarter of the
    /// capacity is free.
    #[inline]
    pub fn push_or_compact(&mut self, entry: HeapEntry, valid: impl FnMut(&HeapEntry) -> bool) {
        if self.entries.len() == self.entries.capacity() && !self.entries.is_empty() {
            self.compact(valid);
        }
        self.push(entry);
    }

    #[cold]
    #[inline(never)]
    fn compact(&mut self, valid: impl FnMut(&HeapEntry) -> bool) {
        self.entries.retain(valid);
        // Restore the heap order bottom-up.
        for index in (0..self.entries.len() / 8 + 1).rev() {
            self.sink(index);
        }
        let capacity = self.entries.capacity();
        if self.entries.len() > capacity / 4 * 3 {
            self.entries.reserve(capacity);
        }
    }

    /// Moves the entry at `index` down to its place (classic sift-down).
    fn sink(&mut self, mut index: usize) {
        let len = self.entries.len();
        if index >= len {
            return;
        }
        let entry = self.entries[index];
        loop {
            let first = 8 * index + 1;
            if first >= len {
                break;
            }
            let mut least = first;
            for child in first + 1..(first + 8).min(len) {
                if self.entries[child].before(&self.entries[least]) {
                    least = child;
                }
            }
            if !self.entries[least].before(&entry) {
                break;
            }
            self.entries[index] = self.entries[least];
            index = least;
        }
        self.entries[index] = entry;
    }

    /// Removes and returns the least entry.
    #[inline]
    pub fn pop(&mut self) -> Option<HeapEntry> {
        let last = self.entries.pop()?;
        if self.entries.is_empty() {
            return Some(last);
        }
        let top = self.entries[0];
        self.fill_from_root(last);
        Some(top)
    }

    /// Replaces the least entry by `entry` (one pass instead of a pop and a push) and returns
    /// it. Panics on an empty heap.
    #[inline]
    pub fn replace_top(&mut self, entry: HeapEntry) -> HeapEntry {
        let top = self.entries[0];
        self.fill_from_root(entry);
        top
    }

    /// Moves the element at the hole `index` up to where `entry` belongs, then writes it.
    #[inline]
    fn rise(&mut self, mut index: usize, entry: HeapEntry) {
        while index > 0 {
            let parent = (index - 1) / 8;
            if !entry.before(&self.entries[parent]) {
                break;
            }
            self.entries[index] = self.entries[parent];
            index = parent;
        }
        self.entries[index] = entry;
    }

    /// The hole is at the root: walks it down to a leaf along the least children, then lets
    /// `entry` rise from there.
    #[inline]
    fn fill_from_root(&mut self, entry: HeapEntry) {
        let entries = &mut self.entries[..];
        let len = entries.len();
        let mut hole = 0;
        loop {
            let first = 8 * hole + 1;
            let least = if first + 8 <= len {
                let c: &[HeapEntry; 8] = entries[first..first + 8].try_into().expect("eight children");
                let a = c[1].before(&c[0]) as usize;
                let b = 2 + c[3].before(&c[2]) as usize;
                let d = 4 + c[5].before(&c[4]) as usize;
                let e = 6 + c[7].before(&c[6]) as usize;
                let ab = if c[b].before(&c[a]) { b } else { a };
                let de = if c[e].before(&c[d]) { e } else { d };
                first + if c[de].before(&c[ab]) { de } else { ab }
            } else if first < len {
                let mut least = first;
                for child in first + 1..len {
                    if entries[child].before(&entries[least]) {
                        least = child;
                    }
                }
                least
            } else {
                break;
            };
            entries[hole] = entries[least];
            hole = least;
        }
        self.rise(hole, entry);
    }
}

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
        PacketTag {
            key: self.key,
            finish: VirtualTime::from_raw(self.key.raw() + self.finish_offset as u128),
        }
    }
}

/// One flow's slot: the ends of its tag list, the finish tag of its last sent packet and the
/// discipline's per-flow state.
#[derive(Clone, Debug, Default)]
struct FlowSlot<S> {
    tags: ListEnds,
    last_sent_finish: VirtualTime,
    /// Whether the flow has ever queued a packet (counted in `flows_seen`).
    seen: bool,
    state: S,
}

/// Per-flow queues of tagged packets, per-flow discipline state `S`, and a heap over the
/// head-of-line keys.
#[derive(Clone, Debug)]
pub struct TaggedQueues<S> {
    queues: FlowQueues,
    slots: Vec<FlowSlot<S>>,
    /// Every flow's tag list.
    pool: PooledLists<Tagged>,
    /// Head-of-line keys: entry `seq` is the head packet's arrival sequence.
    heads: TagHeap,
    /// Number of distinct flows that have queued a packet.
    flows_seen: usize,
    next_seq: u64,
    /// Push-outs of the last admission (capacity kept, so no allocation in steady state).
    pushed_out: Vec<(FlowId, VirtualTime)>,
}

impl<S: Default + Clone> TaggedQueues<S> {
    /// Empty queues with `limit`.
    pub fn new(limit: BufferLimit) -> TaggedQueues<S> {
        TaggedQueues {
            queues: FlowQueues::new(limit),
            slots: Vec::new(),
            pool: PooledLists::default(),
            heads: TagHeap::new(),
            flows_seen: 0,
            next_seq: 0,
            pushed_out: Vec::new(),
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
        if index >= self.slots.len() {
            self.slots.resize_with(index + 1, FlowSlot::default);
        }
        &mut self.slots[index].state
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
        let first_new_drop = drops.len();
        let slots = &self.slots;
        let admission = self.queues.admit(
            packet,
            |f| slots.get(f as usize).map_or(1, |slot| weight(&slot.state)),
            drops,
        );
        if drops.len() > first_new_drop {
            for dropped in &drops[first_new_drop..] {
                if dropped.reason == DropReason::PushedOut {
                    let flow = dropped.packet.flow;
                    let slot = &mut self.slots[flow as usize];
                    // A pushed-out head leaves a stale heap entry, skipped when it surfaces.
                    self.pool.pop_back(&mut slot.tags);
                    let previous_finish = match self.pool.back(&slot.tags) {
                        Some(tail) => tail.tag().finish,
                        None => slot.last_sent_finish,
                    };
                    self.pushed_out.push((flow, previous_finish));
                }
            }
        }
        admission
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
        let seq = self.next_seq;
        self.next_seq += 1;
        let finish_offset = u64::try_from(tag.finish.raw().saturating_sub(tag.key.raw())).unwrap_or(u64::MAX);
        self.state_mut(flow);
        if !self.slots[flow as usize].seen {
            self.slots[flow as usize].seen = true;
            self.flows_seen += 1;
            self.heads.reserve_for_flows(self.flows_seen);
        }
        if self.slots[flow as usize].tags.is_empty() {
            let (pool, slots) = (&self.pool, &self.slots);
            let entry = HeapEntry {
                key: tag.key,
                seq,
                flow,
                generation: 0,
            };
            // An entry is valid while its packet is its flow's head.
            self.heads.push_or_compact(entry, |e| {
                pool.front(&slots[e.flow as usize].tags)
                    .is_some_and(|head| head.seq == e.seq)
            });
        }
        let queue = &mut self.slots[flow as usize].tags;
        self.pool.push_back(
            queue,
            Tagged {
                key: tag.key,
                seq,
                finish_offset,
            },
        );
    }

    /// Drops stale entries from the top of the heap; returns the flow whose head has the least
    /// (key, seq).
    #[inline]
    fn clean_top(&mut self) -> Option<FlowId> {
        loop {
            let top = *self.heads.peek()?;
            match self.pool.front(&self.slots[top.flow as usize].tags) {
                Some(head) if head.seq == top.seq => return Some(top.flow),
                _ => {
                    self.heads.pop();
                }
            }
        }
    }

    /// Removes and returns the queued packet with the least (key, arrival sequence), with its
    /// tags, recording it as sent. O(log active flows).
    #[inline]
    pub fn pop_min(&mut self) -> Option<(Packet, PacketTag)> {
        let flow = self.clean_top()?;
        let slot = &mut self.slots[flow as usize];
        let head = self
            .pool
            .pop_front(&mut slot.tags)
            .expect("valid entries have a head");
        match self.pool.front(&slot.tags) {
            // Same flow, next packet: one pass through the heap.
            Some(next) => {
                self.heads.replace_top(HeapEntry {
                    key: next.key,
                    seq: next.seq,
                    flow,
                    generation: 0,
                });
            }
            None => {
                self.heads.pop();
            }
        }
        let tag = head.tag();
        slot.last_sent_finish = tag.finish;
        let packet = self.queues.pop_sent(flow).expect("tags run parallel to packets");
        Some((packet, tag))
    }

    /// The packet [`TaggedQueues::pop_min`] would return, with its tags.
    pub fn peek_min(&mut self) -> Option<(Packet, PacketTag)> {
        let flow = self.clean_top()?;
        let head = self
            .pool
            .front(&self.slots[flow as usize].tags)
            .expect("valid entries have a head");
        let packet = *self.queues.head(flow).expect("tags run parallel to packets");
        Some((packet, head.tag()))
    }

    /// The tags of the packets queued for `flow`, head first.
    pub fn tags(&self, flow: FlowId) -> impl Iterator<Item = PacketTag> + '_ {
        self.slots
            .get(flow as usize)
            .into_iter()
            .flat_map(|slot| self.pool.iter(slot.tags).map(Tagged::tag))
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

    fn push(q: &mut Weighted, id: u64, flow: FlowId, key: u64, drops: &mut Vec<Dropped>) {
        if *q.state_mut(flow) == 0 {
            *q.state_mut(flow) = 1;
        }
        let admitted = q.admit(Packet::new(id, flow, 100, 0), |w| *w, drops);
        assert_eq!(admitted, Admission::Queued);
        q.push_tag(flow, tag(key));
    }

    #[test]
    fn comparison_is_exact_across_the_64_bit_boundary() {
        let entry = |raw: u128, seq: u64| HeapEntry {
            key: VirtualTime::from_raw(raw),
            seq,
            flow: 0,
            generation: 0,
        };
        let below = entry((1 << 64) - 1, 9);
        let above = entry(1 << 64, 0);
        assert!(below.before(&above) && !above.before(&below));
        assert!(entry(5 << 64 | 7, 1).before(&entry(5 << 64 | 7, 2)));
        assert!(!entry(5 << 64 | 7, 2).before(&entry(5 << 64 | 7, 2)));
        assert!(entry(5 << 64 | 7, 9).before(&entry(5 << 64 | 8, 0)));
        assert!(entry(4 << 64 | u64::MAX as u128, 9).before(&entry(5 << 64, 0)));
    }

    #[test]
    fn heap_pops_in_key_then_seq_order() {
        let mut heap = TagHeap::new();
        let mut x: u64 = 12345;
        let mut entries = Vec::new();
        for seq in 0..500u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let entry = HeapEntry {
                // Raw keys straddling 2^64, so both halves of the comparison are exercised.
                key: VirtualTime::from_raw((1u128 << 64) - 25 + (x % 50) as u128),
                seq,
                flow: seq as FlowId,
                generation: 0,
            };
            entries.push(entry);
            heap.push(entry);
            if seq % 7 == 0 {
                // Replace the top by a larger key, as a dequeue does.
                let top = *heap.peek().unwrap();
                let replacement = HeapEntry {
                    key: VirtualTime::from_raw(top.key.raw() + (x % 30) as u128),
                    seq: 1000 + seq,
                    ..top
                };
                assert_eq!(heap.replace_top(replacement), top);
                let position = entries.iter().position(|e| *e == top).unwrap();
                entries[position] = replacement;
            }
        }
        entries.sort_by_key(|e| (e.key, e.seq));
        let popped: Vec<HeapEntry> = std::iter::from_fn(|| heap.pop()).collect();
        assert_eq!(popped, entries);
        assert!(heap.is_empty());
    }

    #[test]
    fn stale_entries_never_make_the_heap_grow() {
        let mut heap = TagHeap::new();
        let entry = |key: u64, flow: FlowId, generation: u32| HeapEntry {
            key: VirtualTime::from_integer(key),
            seq: key,
            flow,
            generation,
        };
        // Ten flows; each push makes the flow's previous entry stale (generation bump).
        let mut generation = [0u32; 10];
        for step in 0..10_000u64 {
            let flow = (step * 7 % 10) as FlowId;
            generation[flow as usize] += 1;
            let current = generation;
            heap.push_or_compact(entry(step % 97, flow, generation[flow as usize]), |e| {
                current[e.flow as usize] == e.generation
            });
            assert!(
                heap.entries.capacity() <= 64,
                "capacity {} at step {step}",
                heap.entries.capacity()
            );
        }
        let mut valid: Vec<HeapEntry> = std::iter::from_fn(|| heap.pop())
            .filter(|e| generation[e.flow as usize] == e.generation)
            .collect();
        assert_eq!(valid.len(), 10);
        let sorted = {
            let mut v = valid.clone();
            v.sort_by_key(|e| (e.key, e.seq));
            v
        };
        assert_eq!(valid, sorted, "pops stay in (key, seq) order after compactions");
        valid.clear();
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
        let limit = BufferLimit {
            packets: Some(3),
            policy: DropPolicy::LongestQueueDrop,
            ..BufferLimit::UNLIMITED
        };
        let mut q = Weighted::new(limit);
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
    fn a_pushed_out_head_leaves_a_stale_entry_that_is_skipped() {
        let limit = BufferLimit {
            packets: Some(2),
            policy: DropPolicy::LongestQueueDrop,
            ..BufferLimit::UNLIMITED
        };
        let mut q = Weighted::new(limit);
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
