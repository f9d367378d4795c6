//! Per-flow FIFO queues with a shared buffer limit, used by every discipline that keeps a
//! queue per flow (WRR, DRR and its family, the fair-queueing family).
//!
//! Storage: every queued packet sits in one node of a shared pool ([`PooledLists`]); a
//! flow's queue is one list of that pool, so nothing allocates once the pool has grown to the
//! largest backlog, however the backlog moves between flows.
//!
//! Invariants: `counters` holds exactly the packets in the queues (a flow's length is its
//! counted backlog); a flow's queue is a FIFO.

use crate::config::{BufferLimit, DropPolicy};
use crate::counters::{Counters, DropReason, Dropped};
use crate::packet::{FlowId, Packet, MAX_FLOW_ID};
use crate::pool::{ListEnds, ListIter, PooledLists};

/// Per-flow FIFO queues, their counters and the buffer limit.
#[derive(Clone, Debug)]
pub struct FlowQueues {
    /// Each flow's list in the pool, indexed by flow id. Private and changed only by `pool`'s
    /// methods: every list here is a list of `pool` (the contract of its `_own` methods).
    ends: Vec<ListEnds>,
    /// The node pool shared by all flows.
    pool: PooledLists<Packet>,
    /// Counters of every flow, kept in step with the queues.
    pub counters: Counters,
    limit: BufferLimit,
    /// `limit.packets` and `limit.bytes` with `u64::MAX` for "none", so that the admission
    /// test is two comparisons.
    max_packets: u64,
    max_bytes: u64,
}

impl Default for FlowQueues {
    fn default() -> Self {
        FlowQueues::new(BufferLimit::UNLIMITED)
    }
}

/// What [`FlowQueues::admit`] decided for an arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// The arrival was queued.
    Queued,
    /// The arrival was dropped (and reported).
    Dropped,
}

/// The packets queued for one flow, head first: a read-only view into [`FlowQueues`].
#[derive(Clone, Copy, Debug)]
pub struct FlowQueue<'a> {
    pool: &'a PooledLists<Packet>,
    ends: ListEnds,
    len: usize,
}

impl<'a> FlowQueue<'a> {
    /// Number of packets queued.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The head packet (next to leave).
    pub fn front(&self) -> Option<&'a Packet> {
        self.pool.front(&self.ends)
    }

    /// The tail packet (last arrived).
    pub fn back(&self) -> Option<&'a Packet> {
        self.pool.back(&self.ends)
    }

    /// The packets, head first.
    pub fn iter(&self) -> FlowQueueIter<'a> {
        FlowQueueIter {
            list: self.pool.iter(self.ends),
            remaining: self.len,
        }
    }
}

impl<'a> IntoIterator for FlowQueue<'a> {
    type Item = &'a Packet;
    type IntoIter = FlowQueueIter<'a>;
    fn into_iter(self) -> FlowQueueIter<'a> {
        self.iter()
    }
}

/// Iterator over one flow's queued packets, head first.
#[derive(Clone, Debug)]
pub struct FlowQueueIter<'a> {
    list: ListIter<'a, Packet>,
    remaining: usize,
}

impl<'a> Iterator for FlowQueueIter<'a> {
    type Item = &'a Packet;
    fn next(&mut self) -> Option<&'a Packet> {
        let packet = self.list.next()?;
        self.remaining -= 1;
        Some(packet)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for FlowQueueIter<'_> {}

impl FlowQueues {
    /// Empty queues with `limit`.
    pub fn new(limit: BufferLimit) -> FlowQueues {
        FlowQueues {
            ends: Vec::new(),
            pool: PooledLists::default(),
            counters: Counters::default(),
            limit,
            max_packets: limit.packets.unwrap_or(u64::MAX),
            max_bytes: limit.bytes.unwrap_or(u64::MAX),
        }
    }

    /// The buffer limit.
    pub fn limit(&self) -> BufferLimit {
        self.limit
    }

    /// Number of flow slots allocated (largest flow id seen + 1).
    pub fn flow_slots(&self) -> usize {
        self.ends.len()
    }

    #[inline]
    fn ensure(&mut self, flow: FlowId) {
        let index = flow as usize;
        if index >= self.ends.len() {
            self.grow(index);
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, index: usize) {
        self.ends.resize(index + 1, ListEnds::default());
    }

    /// Whether one more packet of `size` bytes fits in the buffer.
    #[inline]
    fn fits(&self, size: u64) -> bool {
        let backlog = self.counters.backlog();
        backlog.packets < self.max_packets && backlog.bytes + size <= self.max_bytes
    }

    /// Links `packet` at the tail of `flow` (whose slot exists); returns whether the queue was
    /// empty.
    #[inline(always)]
    fn push_back(&mut self, flow: FlowId, packet: Packet) -> bool {
        // SAFETY: `ends` holds lists of `pool` only (see the field).
        unsafe { self.pool.push_back_own(&mut self.ends[flow as usize], packet) }
    }

    /// Unlinks and returns the head packet of `flow`, with whether the queue is now empty.
    #[inline(always)]
    fn pop_front(&mut self, flow: FlowId) -> Option<(Packet, bool)> {
        let ends = self.ends.get_mut(flow as usize)?;
        // SAFETY: `ends` holds lists of `pool` only (see the field).
        let packet = unsafe { self.pool.pop_front_own(ends) }?;
        Some((packet, ends.is_empty()))
    }

    /// Unlinks and returns the tail packet of `flow`.
    fn pop_back(&mut self, flow: FlowId) -> Option<Packet> {
        self.pool.pop_back(self.ends.get_mut(flow as usize)?)
    }

    /// Admits `packet`: records the arrival, enforces the buffer limit and queues the packet
    /// at the tail of its flow. With [`DropPolicy::LongestQueueDrop`], tails of the flow whose
    /// byte backlog divided by `weight(flow)` is largest are pushed out until the arrival fits,
    /// unless the arrival's own flow is that flow (then the arrival is dropped). Pushed-out
    /// packets are reported as [`DropReason::PushedOut`]; callers that keep per-packet state
    /// (tags) must look at `drops` for them. O(1) for tail drop; O(flows) per push-out.
    #[inline]
    pub fn admit(
        &mut self,
        packet: Packet,
        weight: impl Fn(FlowId) -> u64,
        drops: &mut Vec<Dropped>,
    ) -> Admission {
        self.admit_noting_head(packet, weight, drops).0
    }

    /// [`FlowQueues::admit`], with whether the packet, if queued, is its flow's only one (the
    /// head of its queue): known on the usual path from the list it joined, without reading
    /// the counters again.
    #[inline(always)]
    pub fn admit_noting_head(
        &mut self,
        packet: Packet,
        weight: impl Fn(FlowId) -> u64,
        drops: &mut Vec<Dropped>,
    ) -> (Admission, bool) {
        if packet.flow <= MAX_FLOW_ID && self.fits(packet.size as u64) {
            // The common case: a valid packet that fits.
            self.counters.record_arrival_queued(&packet);
            let index = packet.flow as usize;
            let is_head = if let Some(ends) = self.ends.get_mut(index) {
                // One bounds check, not a growth check and then an indexing check.
                // SAFETY: `ends` holds lists of `pool` only (see the field).
                unsafe { self.pool.push_back_own(ends, packet) }
            } else {
                self.grow(index);
                self.push_back(packet.flow, packet)
            };
            debug_assert_eq!(is_head, self.len(packet.flow) == 1);
            return (Admission::Queued, is_head);
        }
        let admission = self.admit_slow(packet, weight, drops);
        let is_head = admission == Admission::Queued && self.len(packet.flow) == 1;
        (admission, is_head)
    }

    /// [`FlowQueues::admit`] for an invalid packet or a full buffer.
    #[cold]
    fn admit_slow(
        &mut self,
        packet: Packet,
        weight: impl Fn(FlowId) -> u64,
        drops: &mut Vec<Dropped>,
    ) -> Admission {
        if packet.flow > MAX_FLOW_ID {
            // Counted apart from the per-flow table, which a bad id must not grow.
            self.counters.refuse_invalid_flow(packet, drops);
            return Admission::Dropped;
        }
        self.counters.record_arrival(&packet);
        self.ensure(packet.flow);
        let size = packet.size as u64;
        loop {
            if self.fits(size) {
                break;
            }
            let victim = match self.limit.policy {
                DropPolicy::TailDrop => None,
                DropPolicy::LongestQueueDrop => self.longest_weighted(&packet, &weight),
            };
            match victim {
                Some(flow) => {
                    let pushed = self.pop_back(flow).expect("longest queue is non-empty");
                    self.counters.record_drop(&pushed, DropReason::PushedOut, true);
                    drops.push(Dropped {
                        packet: pushed,
                        reason: DropReason::PushedOut,
                    });
                }
                None => {
                    self.counters.record_drop(&packet, DropReason::BufferFull, false);
                    drops.push(Dropped {
                        packet,
                        reason: DropReason::BufferFull,
                    });
                    return Admission::Dropped;
                }
            }
        }
        self.counters.record_queued(&packet);
        self.push_back(packet.flow, packet);
        Admission::Queued
    }

    /// The flow to push out for `arrival`, or `None` if the arrival itself should be dropped.
    /// Lengths count the arrival in its own flow; ties go to the lower flow id, and the
    /// arrival's flow wins ties against others (so a flow never steals on equal terms).
    fn longest_weighted(&self, arrival: &Packet, weight: &impl Fn(FlowId) -> u64) -> Option<FlowId> {
        let own_bytes = self.counters.flow_backlog(arrival.flow).bytes + arrival.size as u64;
        let own_weight = weight(arrival.flow).max(1);
        let mut best: Option<(FlowId, u64, u64)> = None;
        for (index, ends) in self.ends.iter().enumerate() {
            let flow = index as FlowId;
            if ends.is_empty() || flow == arrival.flow {
                continue;
            }
            let bytes = self.counters.flow_backlog(flow).bytes;
            let w = weight(flow).max(1);
            // bytes / w > best_bytes / best_w  <=>  bytes * best_w > best_bytes * w
            let better = match best {
                None => true,
                Some((_, best_bytes, best_w)) => {
                    (bytes as u128) * (best_w as u128) > (best_bytes as u128) * (w as u128)
                }
            };
            if better {
                best = Some((flow, bytes, w));
            }
        }
        let (flow, bytes, w) = best?;
        ((bytes as u128) * (own_weight as u128) > (own_bytes as u128) * (w as u128)).then_some(flow)
    }

    /// Removes and returns the head packet of `flow`, recording it as sent.
    #[inline(always)]
    pub fn pop_sent(&mut self, flow: FlowId) -> Option<Packet> {
        let (packet, _) = self.pop_front(flow)?;
        self.counters.record_sent(&packet);
        Some(packet)
    }

    /// Removes and returns the head packet of `flow`, recording it as sent, together with
    /// whether that emptied the flow's queue (saves a second look-up in round-robin loops).
    #[inline(always)]
    pub fn pop_sent_emptied(&mut self, flow: FlowId) -> Option<(Packet, bool)> {
        let (packet, emptied) = self.pop_front(flow)?;
        self.counters.record_sent(&packet);
        Some((packet, emptied))
    }

    /// [`FlowQueues::pop_sent_emptied`] of a flow known to be backlogged (a scheduler's
    /// selected flow; panics if it has nothing queued): the packet itself rather than an
    /// `Option`, which the caller would test again (see [`PooledLists::pop_front_filled_own`]).
    #[inline(always)]
    pub fn pop_sent_backlogged(&mut self, flow: FlowId) -> (Packet, bool) {
        let (packet, _, emptied) = Self::take_sent(
            &mut self.pool,
            &mut self.counters,
            &mut self.ends[flow as usize],
            |p| *p,
        );
        (packet, emptied)
    }

    /// Removes the head packet of the non-empty list `ends` (a flow's, in `pool`), records it
    /// as sent and returns what `take` took from it (shown the packet in its node), its size
    /// and whether that emptied the list (panics if it is empty).
    #[inline(always)]
    fn take_sent<R>(
        pool: &mut PooledLists<Packet>,
        counters: &mut Counters,
        ends: &mut ListEnds,
        take: impl FnOnce(&Packet) -> R,
    ) -> (R, u32, bool) {
        // SAFETY: the callers pass a list of the `ends` field with the `pool` field it belongs
        // to (that field's contract: every list there is a list of `pool`).
        let packet = unsafe { pool.front_filled_own(ends) };
        counters.record_sent(packet);
        let size = packet.size;
        let taken = take(packet);
        // SAFETY: as above; the list is not empty (it had `packet`).
        unsafe { pool.remove_front_own(ends) };
        (taken, size, ends.is_empty())
    }

    /// Offers the head packet of `flow` (`None` if it has nothing queued) to `send`; if it is
    /// there and `send` says so, removes it, records it as sent and returns it with whether
    /// that emptied the queue. One look-up of the flow's list for the peek and the pop.
    #[inline(always)]
    pub fn pop_sent_if(
        &mut self,
        flow: FlowId,
        send: impl FnOnce(Option<&Packet>) -> bool,
    ) -> Option<(Packet, bool)> {
        let (packet, _, emptied) = self.pop_sent_if_with(flow, send, |p| *p)?;
        Some((packet, emptied))
    }

    /// [`FlowQueues::pop_sent_if`], the sent packet shown to `take` in its node instead of
    /// returned (so that a caller that copies it somewhere copies it once, from the node);
    /// returns what `take` returned, the packet's size and whether its queue is now empty.
    #[inline(always)]
    pub fn pop_sent_if_with<R>(
        &mut self,
        flow: FlowId,
        send: impl FnOnce(Option<&Packet>) -> bool,
        take: impl FnOnce(&Packet) -> R,
    ) -> Option<(R, u32, bool)> {
        let Some(ends) = self.ends.get_mut(flow as usize) else {
            send(None);
            return None;
        };
        // SAFETY: `ends` holds lists of `pool` only (see the field).
        if !send(unsafe { self.pool.front_own(ends) }) || ends.is_empty() {
            return None;
        }
        Some(Self::take_sent(&mut self.pool, &mut self.counters, ends, take))
    }

    /// Removes and returns the head packet of `flow`, recording it as dropped for `reason`.
    pub fn pop_dropped(
        &mut self,
        flow: FlowId,
        reason: DropReason,
        drops: &mut Vec<Dropped>,
    ) -> Option<Packet> {
        let (packet, _) = self.pop_front(flow)?;
        self.counters.record_drop(&packet, reason, true);
        drops.push(Dropped { packet, reason });
        Some(packet)
    }

    /// The head packet of `flow`.
    #[inline(always)]
    pub fn head(&self, flow: FlowId) -> Option<&Packet> {
        self.pool.front(self.ends.get(flow as usize)?)
    }

    /// Prefetches (see [`crate::pool::prefetch`]) what serving `flow` reads first: its list
    /// ends and its counters.
    #[inline(always)]
    pub fn prefetch_flow(&self, flow: FlowId) {
        crate::pool::prefetch_at(&self.ends, flow as usize);
        self.counters.prefetch_flow(flow);
    }

    /// The pool index of the node of the head packet of `flow` (`u32::MAX` if it has none), for
    /// [`FlowQueues::prefetch_node`] without reading the flow's list ends again.
    #[inline(always)]
    pub fn head_node(&self, flow: FlowId) -> u32 {
        self.ends.get(flow as usize).map_or(u32::MAX, ListEnds::head_node)
    }

    /// Prefetches the packet node `node` (from [`FlowQueues::head_node`]; none if out of range).
    #[inline(always)]
    pub fn prefetch_node(&self, node: u32) {
        self.pool.prefetch_node(node);
    }

    /// Prefetches the node of the head packet of `flow` (reads its list ends).
    #[inline(always)]
    pub fn prefetch_head(&self, flow: FlowId) {
        if let Some(ends) = self.ends.get(flow as usize) {
            self.pool.prefetch_node(ends.head_node());
        }
    }

    /// The packets queued for `flow`, head first (`None` for a flow never seen).
    pub fn queue(&self, flow: FlowId) -> Option<FlowQueue<'_>> {
        let ends = *self.ends.get(flow as usize)?;
        Some(FlowQueue {
            pool: &self.pool,
            ends,
            len: self.len(flow),
        })
    }

    /// Whether `flow` has nothing queued.
    #[inline]
    pub fn is_empty(&self, flow: FlowId) -> bool {
        self.ends.get(flow as usize).is_none_or(|ends| ends.is_empty())
    }

    /// Number of packets queued for `flow`.
    pub fn len(&self, flow: FlowId) -> usize {
        self.counters.flow_backlog(flow).packets as usize
    }

    /// Pool nodes allocated (the largest total backlog seen, rounded up by `Vec` growth).
    pub fn pool_capacity(&self) -> usize {
        self.pool.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(id: u64, flow: FlowId, size: u32) -> Packet {
        Packet::new(id, flow, size, 0)
    }

    #[test]
    fn out_of_range_flow_is_refused_without_growing_the_tables() {
        let mut q = FlowQueues::new(BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        assert_eq!(
            q.admit(packet(0, u32::MAX, 100), |_| 1, &mut drops),
            Admission::Dropped
        );
        assert_eq!(drops[0].reason, DropReason::InvalidPacket);
        assert_eq!(q.counters.invalid_flow_packets(), 1);
        assert!(q.counters.flows().is_empty());
        assert_eq!(q.flow_slots(), 0);
    }

    #[test]
    fn tail_drop_refuses_the_arrival() {
        let mut q = FlowQueues::new(BufferLimit {
            packets: Some(2),
            ..BufferLimit::UNLIMITED
        });
        let mut drops = Vec::new();
        assert_eq!(q.admit(packet(0, 0, 100), |_| 1, &mut drops), Admission::Queued);
        assert_eq!(q.admit(packet(1, 1, 100), |_| 1, &mut drops), Admission::Queued);
        assert_eq!(q.admit(packet(2, 1, 100), |_| 1, &mut drops), Admission::Dropped);
        assert_eq!(
            drops,
            vec![Dropped {
                packet: packet(2, 1, 100),
                reason: DropReason::BufferFull
            }]
        );
        assert_eq!(q.counters.backlog().packets, 2);
    }

    #[test]
    fn longest_queue_drop_pushes_out_the_longest_weighted_tail() {
        let limit = BufferLimit {
            bytes: Some(1000),
            policy: DropPolicy::LongestQueueDrop,
            ..BufferLimit::UNLIMITED
        };
        let mut q = FlowQueues::new(limit);
        let mut drops = Vec::new();
        // flow 0 (weight 1): 600 B; flow 1 (weight 4): 400 B -> weighted lengths 600 and 100.
        q.admit(packet(0, 0, 300), |_| 1, &mut drops);
        q.admit(packet(1, 0, 300), |_| 1, &mut drops);
        q.admit(packet(2, 1, 400), |_| 1, &mut drops);
        let weight = |f: FlowId| if f == 1 { 4 } else { 1 };
        assert_eq!(q.admit(packet(3, 1, 200), weight, &mut drops), Admission::Queued);
        assert_eq!(
            drops,
            vec![Dropped {
                packet: packet(1, 0, 300),
                reason: DropReason::PushedOut
            }]
        );
        drops.clear();
        // Flow 0 arrival while flow 0 is the longest weighted: the arrival goes.
        assert_eq!(q.admit(packet(4, 0, 500), weight, &mut drops), Admission::Dropped);
        assert_eq!(drops[0].reason, DropReason::BufferFull);
        assert_eq!(q.counters.backlog().bytes, 900);
    }

    #[test]
    fn pop_back_and_pop_front_meet_in_the_middle() {
        let mut q = FlowQueues::new(BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        for id in 0..3 {
            q.admit(packet(id, 2, 100), |_| 1, &mut drops);
        }
        let push_out = |q: &mut FlowQueues| {
            let tail = q.pop_back(2).unwrap();
            q.counters.record_drop(&tail, DropReason::PushedOut, true);
            tail.id
        };
        assert_eq!(push_out(&mut q), 2);
        assert_eq!(q.pop_sent(2).unwrap().id, 0);
        assert_eq!(push_out(&mut q), 1);
        assert!(q.is_empty(2));
        assert_eq!(q.pop_back(2), None);
        // The three nodes are reused, most recently freed first.
        q.admit(packet(3, 0, 100), |_| 1, &mut drops);
        q.admit(packet(4, 1, 100), |_| 1, &mut drops);
        assert_eq!(q.pool.node_count(), 3);
        let ids: Vec<u64> = q.queue(1).unwrap().iter().map(|p| p.id).collect();
        assert_eq!(ids, vec![4]);
        assert!(q.queue(3).is_none(), "flow never seen");
        assert!(q.queue(2).unwrap().is_empty());
    }

    #[derive(Clone, Debug)]
    enum Op {
        Admit(FlowId, u32),
        PopSent(FlowId),
        PopDropped(FlowId),
    }

    fn arb_op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            3 => (0..6u32, 40u32..1500).prop_map(|(f, s)| Op::Admit(f, s)),
            2 => (0..7u32).prop_map(Op::PopSent),
            1 => (0..7u32).prop_map(Op::PopDropped),
        ]
    }

    proptest::proptest! {
        /// The pooled lists behave exactly like one `VecDeque` per flow: arrivals go to the
        /// tail, sends and late drops leave from the head, push-outs leave from the tail of
        /// the flow they name; every pool node is in one list or the free list, and the pool
        /// never holds more nodes than the largest backlog.
        #[test]
        fn lists_match_a_vecdeque_model(
            ops in proptest::collection::vec(arb_op(), 1..400),
            lqd in proptest::bool::ANY,
        ) {
            use proptest::{prop_assert, prop_assert_eq};
            let policy = if lqd { DropPolicy::LongestQueueDrop } else { DropPolicy::TailDrop };
            let limit = BufferLimit { bytes: Some(6000), policy, ..BufferLimit::UNLIMITED };
            let mut q = FlowQueues::new(limit);
            let mut model: Vec<std::collections::VecDeque<Packet>> = vec![Default::default(); 7];
            let mut drops = Vec::new();
            for (id, op) in ops.into_iter().enumerate() {
                drops.clear();
                match op {
                    Op::Admit(flow, size) => {
                        let p = packet(id as u64, flow, size);
                        let admission = q.admit(p, |f| 1 + f as u64 % 3, &mut drops);
                        for dropped in &drops {
                            if dropped.reason == DropReason::PushedOut {
                                let tail = model[dropped.packet.flow as usize].pop_back();
                                prop_assert_eq!(tail, Some(dropped.packet));
                            }
                        }
                        if admission == Admission::Queued {
                            model[flow as usize].push_back(p);
                        } else {
                            prop_assert_eq!(drops.last().map(|d| d.packet), Some(p));
                        }
                    }
                    Op::PopSent(flow) => {
                        let expected = model[flow as usize].pop_front();
                        prop_assert_eq!(q.pop_sent(flow), expected);
                    }
                    Op::PopDropped(flow) => {
                        let expected = model[flow as usize].pop_front();
                        prop_assert_eq!(q.pop_dropped(flow, DropReason::Late, &mut drops), expected);
                    }
                }
                let mut queued = 0;
                for (flow, expected) in model.iter().enumerate() {
                    let flow = flow as FlowId;
                    let got: Vec<Packet> = q.queue(flow).map(|v| v.iter().copied().collect()).unwrap_or_default();
                    prop_assert_eq!(&got, &expected.iter().copied().collect::<Vec<_>>());
                    prop_assert_eq!(q.len(flow), expected.len());
                    prop_assert_eq!(q.is_empty(flow), expected.is_empty());
                    prop_assert_eq!(q.head(flow), expected.front());
                    if let Some(view) = q.queue(flow) {
                        prop_assert_eq!(view.back(), expected.back());
                    }
                    queued += expected.len();
                }
                prop_assert_eq!(queued + q.pool.free_count(), q.pool.node_count());
                prop_assert!(q.pool.node_count() as u64 <= q.counters.peak_backlog().packets);
            }
        }
    }
}
