//! FIFO (`fifo`): first come, first served, one shared queue with tail drop.
//!
//! Invariant: packets leave in arrival order; the discipline is work conserving.
//! Complexity: O(1) enqueue and dequeue.
//!
//! Choices: FIFO has one queue, so `drop_policy = "longest_queue_drop"` is a configuration
//! error rather than silently ignored.

use std::collections::VecDeque;

use crate::config::{BufferLimit, ConfigError, TableReader};
use crate::counters::{Counters, DropReason, Dropped};
use crate::discipline::{require_tail_drop, BuildContext, Discipline, DisciplineInfo};
use crate::packet::{Packet, MAX_FLOW_ID};
use crate::scheduler::Scheduler;
use crate::time::TimeNs;

/// Configuration of [`Fifo`] (no parameters besides the buffer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FifoConfig;

/// First-in first-out scheduler.
#[derive(Clone, Debug)]
pub struct Fifo {
    queue: VecDeque<Packet>,
    counters: Counters,
    /// `limit.packets` and `limit.bytes`, `u64::MAX` for none.
    max_packets: u64,
    max_bytes: u64,
}

impl Fifo {
    /// A FIFO with `limit` (tail drop only).
    pub fn new(limit: BufferLimit) -> Result<Fifo, ConfigError> {
        require_tail_drop(&Self::INFO, &limit)?;
        Ok(Fifo {
            queue: VecDeque::new(),
            counters: Counters::default(),
            max_packets: limit.packets.unwrap_or(u64::MAX),
            max_bytes: limit.bytes.unwrap_or(u64::MAX),
        })
    }
}

impl Discipline for Fifo {
    type Config = FifoConfig;
    const INFO: DisciplineInfo = DisciplineInfo {
        id: "fifo",
        name: "First In, First Out",
        citation: "classic first-come first-served queue",
        summary: "One shared queue served in arrival order; tail drop.",
        scheduler_params: &[],
        flow_params: &[],
        per_flow_queues: false,
    };

    fn read_config(_reader: &mut TableReader<'_>) -> Result<FifoConfig, ConfigError> {
        Ok(FifoConfig)
    }

    fn build(_config: FifoConfig, context: &BuildContext<'_>) -> Result<Fifo, ConfigError> {
        // FIFO reads no flow key: any key in a flow table is an error.
        context.flows.parse(&Self::INFO, &())?;
        Fifo::new(context.limit)
    }
}

impl Scheduler for Fifo {
    fn id(&self) -> &'static str {
        Self::INFO.id
    }

    #[inline]
    fn enqueue(&mut self, packet: Packet, _now: TimeNs, drops: &mut Vec<Dropped>) {
        let backlog = self.counters.backlog();
        let valid = packet.flow <= MAX_FLOW_ID;
        if valid && backlog.packets < self.max_packets && backlog.bytes + packet.size as u64 <= self.max_bytes
        {
            self.counters.record_arrival_queued(&packet);
            self.queue.push_back(packet);
            return;
        }
        if !valid {
            // Per-flow counters are indexed by flow id: a bad id must not grow them.
            self.counters.refuse_invalid_flow(packet, drops);
            return;
        }
        self.counters.record_arrival(&packet);
        self.counters.record_drop(&packet, DropReason::BufferFull, false);
        drops.push(Dropped {
            packet,
            reason: DropReason::BufferFull,
        });
    }

    #[inline]
    fn dequeue(&mut self, _now: TimeNs, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        let packet = self.queue.pop_front()?;
        self.counters.record_sent(&packet);
        Some(packet)
    }

    fn peek(&mut self, _now: TimeNs) -> Option<Packet> {
        self.queue.front().copied()
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DropPolicy;
    use crate::testkit;

    #[test]
    fn serves_in_arrival_order_across_flows() {
        let mut fifo = Fifo::new(BufferLimit::UNLIMITED).unwrap();
        let packets = [
            Packet::new(0, 2, 100, 0),
            Packet::new(1, 1, 100, 0),
            Packet::new(2, 2, 100, 5),
        ];
        let order = testkit::send_order(&mut fifo, &packets);
        assert_eq!(order, vec![0, 1, 2]);
    }

    #[test]
    fn tail_drop_at_the_packet_limit() {
        let limit = BufferLimit {
            packets: Some(1),
            ..BufferLimit::UNLIMITED
        };
        let mut fifo = Fifo::new(limit).unwrap();
        let mut drops = Vec::new();
        fifo.enqueue(Packet::new(0, 0, 10, 0), 0, &mut drops);
        fifo.enqueue(Packet::new(1, 0, 10, 0), 0, &mut drops);
        assert_eq!(drops.len(), 1);
        assert_eq!(drops[0].packet.id, 1);
        assert_eq!(
            fifo.counters().flow(0).unwrap().dropped(DropReason::BufferFull),
            1
        );
    }

    #[test]
    fn out_of_range_flow_is_refused_without_growing_the_counters() {
        let mut fifo = Fifo::new(BufferLimit::UNLIMITED).unwrap();
        let mut drops = Vec::new();
        fifo.enqueue(Packet::new(0, u32::MAX, 10, 0), 0, &mut drops);
        assert_eq!(drops[0].reason, DropReason::InvalidPacket);
        assert_eq!(fifo.counters().invalid_flow_packets(), 1);
        assert!(fifo.counters().flows().is_empty());
    }

    #[test]
    fn longest_queue_drop_is_refused() {
        let limit = BufferLimit {
            policy: DropPolicy::LongestQueueDrop,
            ..BufferLimit::UNLIMITED
        };
        assert_eq!(Fifo::new(limit).unwrap_err().path, "scheduler.drop_policy");
    }

    proptest::proptest! {
        #[test]
        fn invariants(trace in testkit::arb_trace(4, 200)) {
            let limit = BufferLimit { bytes: Some(6000), ..BufferLimit::UNLIMITED };
            let mut fifo = Fifo::new(limit).unwrap();
            testkit::check_invariants(&mut fifo, &trace, true)?;
        }
    }
}
