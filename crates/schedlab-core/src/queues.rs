//! Per-flow FIFO queues with a shared buffer limit, used by every discipline that keeps a
//! queue per flow (WRR, DRR and its family, the fair-queueing family).
//!
//! Invariant: `counters` holds exactly the packets in the queues; a flow's queue is a FIFO.

use std::collections::VecDeque;

use crate::config::{BufferLimit, DropPolicy};
use crate::counters::{Counters, DropReason, Dropped};
use crate::packet::{FlowId, Packet, MAX_FLOW_ID};

/// Per-flow FIFO queues, their counters and the buffer limit.
#[derive(Clone, Debug, Default)]
pub struct FlowQueues {
    queues: Vec<VecDeque<Packet>>,
    /// Counters of every flow, kept in step with the queues.
    pub counters: Counters,
    limit: BufferLimit,
    /// `limit.packets` and `limit.bytes` with `u64::MAX` for "none", so that the admission
    /// test is two comparisons.
    max_packets: u64,
    max_bytes: u64,
}

/// What [`FlowQueues::admit`] decided for an arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// The arrival was queued.
    Queued,
    /// The arrival was dropped (and reported).
    Dropped,
}

impl FlowQueues {
    /// Empty queues with `limit`.
    pub fn new(limit: BufferLimit) -> FlowQueues {
        FlowQueues {
            queues: Vec::new(),
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
        self.queues.len()
    }

    #[inline]
    fn ensure(&mut self, flow: FlowId) {
        let index = flow as usize;
        if index >= self.queues.len() {
            self.grow(index);
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, index: usize) {
        self.queues.resize_with(index + 1, VecDeque::new);
    }

    /// Whether one more packet of `size` bytes fits in the buffer.
    #[inline]
    fn fits(&self, size: u64) -> bool {
        let backlog = self.counters.backlog();
        backlog.packets < self.max_packets && backlog.bytes + size <= self.max_bytes
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
        if packet.flow <= MAX_FLOW_ID && self.fits(packet.size as u64) {
            // The common case: a valid packet that fits.
            self.ensure(packet.flow);
            self.counters.record_arrival_queued(&packet);
            self.queues[packet.flow as usize].push_back(packet);
            return Admission::Queued;
        }
        self.admit_slow(packet, weight, drops)
    }

    /// [`FlowQueues::admit`] for an invalid packet or a full buffer.
    #[cold]
    fn admit_slow(
        &mut self,
        packet: Packet,
        weight: impl Fn(FlowId) -> u64,
        drops: &mut Vec<Dropped>,
    ) -> Admission {
        self.counters.record_arrival(&packet);
        if packet.flow > MAX_FLOW_ID {
            self.counters
                .record_drop(&packet, DropReason::InvalidPacket, false);
            drops.push(Dropped {
                packet,
                reason: DropReason::InvalidPacket,
            });
            return Admission::Dropped;
        }
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
                    let pushed = self.queues[flow as usize]
                        .pop_back()
                        .expect("longest queue is non-empty");
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
        self.queues[packet.flow as usize].push_back(packet);
        Admission::Queued
    }

    /// The flow to push out for `arrival`, or `None` if the arrival itself should be dropped.
    /// Lengths count the arrival in its own flow; ties go to the lower flow id, and the
    /// arrival's flow wins ties against others (so a flow never steals on equal terms).
    fn longest_weighted(&self, arrival: &Packet, weight: &impl Fn(FlowId) -> u64) -> Option<FlowId> {
        let own_bytes = self.counters.flow_backlog(arrival.flow).bytes + arrival.size as u64;
        let own_weight = weight(arrival.flow).max(1);
        let mut best: Option<(FlowId, u64, u64)> = None;
        for (index, queue) in self.queues.iter().enumerate() {
            let flow = index as FlowId;
            if queue.is_empty() || flow == arrival.flow {
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
    #[inline]
    pub fn pop_sent(&mut self, flow: FlowId) -> Option<Packet> {
        let packet = self.queues.get_mut(flow as usize)?.pop_front()?;
        self.counters.record_sent(&packet);
        Some(packet)
    }

    /// Removes and returns the head packet of `flow`, recording it as sent, together with
    /// whether that emptied the flow's queue (saves a second look-up in round-robin loops).
    #[inline]
    pub fn pop_sent_emptied(&mut self, flow: FlowId) -> Option<(Packet, bool)> {
        let queue = self.queues.get_mut(flow as usize)?;
        let packet = queue.pop_front()?;
        let emptied = queue.is_empty();
        self.counters.record_sent(&packet);
        Some((packet, emptied))
    }

    /// Removes and returns the head packet of `flow`, recording it as dropped for `reason`.
    pub fn pop_dropped(
        &mut self,
        flow: FlowId,
        reason: DropReason,
        drops: &mut Vec<Dropped>,
    ) -> Option<Packet> {
        let packet = self.queues.get_mut(flow as usize)?.pop_front()?;
        self.counters.record_drop(&packet, reason, true);
        drops.push(Dropped { packet, reason });
        Some(packet)
    }

    /// The head packet of `flow`.
    #[inline]
    pub fn head(&self, flow: FlowId) -> Option<&Packet> {
        self.queues.get(flow as usize)?.front()
    }

    /// The packets queued for `flow`, head first.
    pub fn queue(&self, flow: FlowId) -> Option<&VecDeque<Packet>> {
        self.queues.get(flow as usize)
    }

    /// Whether `flow` has nothing queued.
    #[inline]
    pub fn is_empty(&self, flow: FlowId) -> bool {
        self.queues.get(flow as usize).is_none_or(|q| q.is_empty())
    }

    /// Number of packets queued for `flow`.
    pub fn len(&self, flow: FlowId) -> usize {
        self.queues.get(flow as usize).map_or(0, |q| q.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(id: u64, flow: FlowId, size: u32) -> Packet {
        Packet::new(id, flow, size, 0)
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
}
