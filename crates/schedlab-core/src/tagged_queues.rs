//! Per-flow FIFO queues whose packets carry virtual-time tags, with a min-heap over the
//! head-of-line tags: the machinery shared by the sorted-priority disciplines `wfq`, `scfq`,
//! `stfq` and `virtual_clock` (each computes its own tags; this module stores and orders them).
//!
//! Invariants:
//! * `tags[f]` runs parallel to flow `f`'s packet queue in [`FlowQueues`]: same length, same
//!   order, the tag of the head packet at the front;
//! * every non-empty flow has exactly one *valid* entry `(key, seq, f)` in the heap, where
//!   `key` and `seq` are its head packet's; entries whose `seq` is no longer the head's
//!   (the head was pushed out) are stale and skipped when they reach the top;
//! * within a flow keys never decrease (every discipline here computes
//!   `S = max(F_prev, V)`, `F = S + L/w` with `F_prev` the flow's previous finish tag), so the
//!   least head key is the least key of any queued packet. Cost: O(log active flows) per
//!   packet; no allocation in steady state (deques and the heap keep their capacity).
//!
//! Tie rule: equal keys are served in arrival order (`seq` is a global arrival counter).

use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, VecDeque};

use crate::config::{BufferLimit, ConfigError, FlowTable};
use crate::counters::{Counters, DropReason, Dropped};
use crate::packet::{FlowId, Packet};
use crate::queues::{Admission, FlowQueues};
use crate::virtual_time::VirtualTime;

/// The tags of one queued packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PacketTag {
    /// The tag that orders service: the finish tag (WFQ, SCFQ), the start tag (STFQ) or the
    /// stamp `auxVC` (Virtual Clock).
    pub key: VirtualTime,
    /// The packet's finish tag (equal to `key` except for STFQ); a flow's next packet starts
    /// from it.
    pub finish: VirtualTime,
}

#[derive(Clone, Copy, Debug)]
struct Tagged {
    tag: PacketTag,
    seq: u64,
}

/// Per-flow queues of tagged packets and a heap over the head-of-line keys.
#[derive(Clone, Debug, Default)]
pub struct TaggedQueues {
    queues: FlowQueues,
    tags: Vec<VecDeque<Tagged>>,
    /// Finish tag of each flow's most recently sent packet (zero before the first).
    last_sent_finish: Vec<VirtualTime>,
    /// `Reverse((key, seq, flow))`: a min-heap on (key, arrival sequence).
    heads: BinaryHeap<Reverse<(VirtualTime, u64, FlowId)>>,
    next_seq: u64,
    /// Push-outs of the last admission (capacity kept, so no allocation in steady state).
    pushed_out: Vec<(FlowId, VirtualTime)>,
}

impl TaggedQueues {
    /// Empty queues with `limit`.
    pub fn new(limit: BufferLimit) -> TaggedQueues {
        TaggedQueues {
            queues: FlowQueues::new(limit),
            ..TaggedQueues::default()
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

    /// Admits `packet` through [`FlowQueues::admit`] (buffer limit, drop policy, counters).
    /// Each packet pushed out of another flow's tail loses its tag and is listed by
    /// [`TaggedQueues::pushed_out`] with the finish tag its flow had before that packet
    /// arrived. If the result is [`Admission::Queued`] the caller must give the packet its
    /// tags with [`TaggedQueues::push_tag`] before any other call.
    pub fn admit(
        &mut self,
        packet: Packet,
        weight: impl Fn(FlowId) -> u64,
        drops: &mut Vec<Dropped>,
    ) -> Admission {
        self.pushed_out.clear();
        let first_new_drop = drops.len();
        let admission = self.queues.admit(packet, weight, drops);
        for dropped in &drops[first_new_drop..] {
            if dropped.reason == DropReason::PushedOut {
                let flow = dropped.packet.flow;
                let queue = &mut self.tags[flow as usize];
                // A pushed-out head leaves a stale heap entry, skipped when it surfaces.
                queue.pop_back();
                let previous_finish = match queue.back() {
                    Some(tail) => tail.tag.finish,
                    None => self.last_sent_finish[flow as usize],
                };
                self.pushed_out.push((flow, previous_finish));
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
    /// below the key of the flow's previous packet.
    pub fn push_tag(&mut self, flow: FlowId, tag: PacketTag) {
        let index = flow as usize;
        if index >= self.tags.len() {
            self.tags.resize_with(index + 1, VecDeque::new);
            self.last_sent_finish.resize(index + 1, VirtualTime::ZERO);
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let queue = &mut self.tags[index];
        if queue.is_empty() {
            self.heads.push(Reverse((tag.key, seq, flow)));
        }
        queue.push_back(Tagged { tag, seq });
        debug_assert_eq!(queue.len(), self.queues.len(flow));
    }

    /// Drops stale entries from the top of the heap; returns the flow whose head has the least
    /// (key, seq).
    #[inline]
    fn clean_top(&mut self) -> Option<FlowId> {
        loop {
            let Reverse((_, seq, flow)) = *self.heads.peek()?;
            match self.tags[flow as usize].front() {
                Some(head) if head.seq == seq => return Some(flow),
                _ => {
                    self.heads.pop();
                }
            }
        }
    }

    /// Removes and returns the queued packet with the least (key, arrival sequence), with its
    /// tags, recording it as sent. O(log active flows).
    pub fn pop_min(&mut self) -> Option<(Packet, PacketTag)> {
        self.clean_top()?;
        let mut top = self.heads.peek_mut().expect("clean_top found a valid entry");
        let Reverse((_, _, flow)) = *top;
        let queue = &mut self.tags[flow as usize];
        let head = queue.pop_front().expect("valid entries have a head");
        match queue.front() {
            // Same flow, next packet: replace the entry in place (one sift-down).
            Some(next) => *top = Reverse((next.tag.key, next.seq, flow)),
            None => {
                PeekMut::pop(top);
            }
        }
        self.last_sent_finish[flow as usize] = head.tag.finish;
        let packet = self.queues.pop_sent(flow).expect("tags run parallel to packets");
        Some((packet, head.tag))
    }

    /// The packet [`TaggedQueues::pop_min`] would return, with its tags.
    pub fn peek_min(&mut self) -> Option<(Packet, PacketTag)> {
        let flow = self.clean_top()?;
        let head = self.tags[flow as usize]
            .front()
            .expect("valid entries have a head");
        let packet = *self.queues.head(flow).expect("tags run parallel to packets");
        Some((packet, head.tag))
    }

    /// The tags of the packets queued for `flow`, head first.
    pub fn tags(&self, flow: FlowId) -> impl Iterator<Item = PacketTag> + '_ {
        self.tags
            .get(flow as usize)
            .into_iter()
            .flat_map(|queue| queue.iter().map(|tagged| tagged.tag))
    }

    /// The finish tag of the packet most recently sent from `flow` (zero if none).
    pub fn last_sent_finish(&self, flow: FlowId) -> VirtualTime {
        self.last_sent_finish
            .get(flow as usize)
            .copied()
            .unwrap_or(VirtualTime::ZERO)
    }
}

/// Weight used when neither the flow nor the flow defaults give one.
pub const DEFAULT_WEIGHT: u32 = 1;

/// The weight of `flow`: its own `weight`, else the flow defaults', else [`DEFAULT_WEIGHT`].
pub fn flow_weight(flows: &FlowTable, flow: FlowId) -> u32 {
    flows.get(flow).weight.unwrap_or(DEFAULT_WEIGHT)
}

/// Checks that the flow defaults and every override have a weight of at least 1 (the TOML
/// reader already refuses 0; this catches tables built in code).
pub fn validate_weights(flows: &FlowTable) -> Result<(), ConfigError> {
    flows.validate(|params| match params.weight {
        Some(0) => Err(("weight", "0".into(), "must be at least 1".into())),
        _ => Ok(()),
    })
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

    fn push(q: &mut TaggedQueues, id: u64, flow: FlowId, key: u64, drops: &mut Vec<Dropped>) {
        let admitted = q.admit(Packet::new(id, flow, 100, 0), |_| 1, drops);
        assert_eq!(admitted, Admission::Queued);
        q.push_tag(flow, tag(key));
    }

    #[test]
    fn serves_least_key_then_arrival_order() {
        let mut q = TaggedQueues::new(BufferLimit::UNLIMITED);
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
    fn push_out_reports_the_previous_finish_and_leaves_no_stale_head() {
        let limit = BufferLimit {
            packets: Some(3),
            policy: DropPolicy::LongestQueueDrop,
            ..BufferLimit::UNLIMITED
        };
        let mut q = TaggedQueues::new(limit);
        let mut drops = Vec::new();
        push(&mut q, 0, 0, 10, &mut drops);
        push(&mut q, 1, 0, 20, &mut drops);
        push(&mut q, 2, 1, 5, &mut drops);
        assert_eq!(q.pop_min().unwrap().0.id, 2); // flow 1 sent its packet (finish 5)
        push(&mut q, 3, 1, 15, &mut drops);
        // Buffer full (3 packets): with flow 1 at weight 2, flow 0 is the longest weighted
        // queue; its tail (finish 20) goes.
        let weight = |f: FlowId| if f == 0 { 1 } else { 2 };
        let admitted = q.admit(Packet::new(4, 1, 100, 0), weight, &mut drops);
        assert_eq!(admitted, Admission::Queued);
        assert_eq!(q.pushed_out(), &[(0, VirtualTime::from_integer(10))]);
        q.push_tag(1, tag(25));
        // Flow 1 now holds two packets (finish 15, 25) and flow 0 one: the next arrival of
        // flow 2 pushes out flow 1's tail, whose predecessor has finish 15.
        let admitted = q.admit(Packet::new(5, 2, 100, 0), |_| 1, &mut drops);
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
        let mut q = TaggedQueues::new(limit);
        let mut drops = Vec::new();
        push(&mut q, 0, 0, 1, &mut drops);
        push(&mut q, 1, 1, 50, &mut drops);
        // With flow 1 at weight 1000, flow 0 (100 B at weight 1) is the longest weighted
        // queue: its only packet, the head with key 1, is pushed out.
        let admitted = q.admit(
            Packet::new(2, 1, 100, 0),
            |f| if f == 0 { 1 } else { 1000 },
            &mut drops,
        );
        assert_eq!(admitted, Admission::Queued);
        assert_eq!(q.pushed_out(), &[(0, VirtualTime::ZERO)]);
        q.push_tag(1, tag(60));
        assert_eq!(q.peek_min().unwrap().0.id, 1);
        let order: Vec<u64> = std::iter::from_fn(|| q.pop_min().map(|(p, _)| p.id)).collect();
        assert_eq!(order, vec![1, 2]);
    }
}
