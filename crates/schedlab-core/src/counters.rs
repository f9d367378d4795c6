//! Counters kept by every discipline: per flow enqueued, sent, dropped by reason, backlog and
//! peak backlog. They are part of the [`crate::Scheduler`] contract.

use crate::packet::{FlowId, Packet};

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DropReason {
    /// The arriving packet found the buffer full (tail drop).
    BufferFull,
    /// A queued packet was pushed out to make room for an arrival (longest-queue drop,
    /// "buffer stealing").
    PushedOut,
    /// The packet's deadline passed before it could be sent (DWCS droppable streams).
    Late,
    /// The packet is not acceptable to the discipline (flow id out of range, larger than the
    /// discipline's maximum packet size).
    InvalidPacket,
    /// The packet waited in the queue longer than the queue's `max_sojourn` (Wang, Lung and
    /// Majumdar's 20 ms limit on the wait for the CPU).
    Sojourn,
    /// A link-dropping policy found no bandwidth left for the packet's class (Wang, Lung and
    /// Majumdar §3.2.1: Default-Link, Fixed-Link, Dynamic-Link).
    NoBandwidth,
    /// A traffic conditioner's absolute dropper discarded the packet: its meter found it out
    /// of profile (Yokota et al. §4; RFC 2475 §2.3.3.4).
    OutOfProfile,
    /// A class queue's threshold dropper refused the arriving packet: the queue would have
    /// exceeded its threshold (Yokota et al. §4, figures 10-11; [`crate::hierarchy`]).
    Threshold,
}

#[inline]
fn add_backlog(backlog: &mut Backlog, size: u64) {
    backlog.packets += 1;
    backlog.bytes += size;
}

/// Raises the peak `peak` to `value` if `value` is above it. A branch, not a `max`: in a
/// steady state the peak stays, so the usual path is a load, a compare and a not-taken jump,
/// without the store (one instruction and one store fewer per peak).
#[inline(always)]
fn raise_peak(peak: &mut u64, value: u64) {
    if value > *peak {
        *peak = value;
    }
}

impl DropReason {
    /// Number of reasons (the length of every per-reason counter array).
    pub const COUNT: usize = 8;

    /// Every reason, in counter order.
    pub const ALL: [DropReason; DropReason::COUNT] = [
        DropReason::BufferFull,
        DropReason::PushedOut,
        DropReason::Late,
        DropReason::InvalidPacket,
        DropReason::Sojourn,
        DropReason::NoBandwidth,
        DropReason::OutOfProfile,
        DropReason::Threshold,
    ];

    /// The name used in output files (`buffer_full`, `pushed_out`, `late`, `invalid_packet`,
    /// `sojourn`, `no_bandwidth`, `out_of_profile`, `threshold`).
    pub fn name(self) -> &'static str {
        match self {
            DropReason::BufferFull => "buffer_full",
            DropReason::PushedOut => "pushed_out",
            DropReason::Late => "late",
            DropReason::InvalidPacket => "invalid_packet",
            DropReason::Sojourn => "sojourn",
            DropReason::NoBandwidth => "no_bandwidth",
            DropReason::OutOfProfile => "out_of_profile",
            DropReason::Threshold => "threshold",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// A packet a scheduler dropped, with the reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dropped {
    /// The dropped packet.
    pub packet: Packet,
    /// Why it was dropped.
    pub reason: DropReason,
}

/// Packets and bytes held by a scheduler, or by one of its flows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backlog {
    /// Packets queued.
    pub packets: u64,
    /// Bytes queued.
    pub bytes: u64,
}

/// Counters of one flow.
///
/// The fields touched by every enqueue and dequeue (offered, sent, backlog and its peaks) come
/// first and fill exactly one 64-byte cache line; the drop counters follow in a second line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct FlowCounters {
    /// Packets offered to the scheduler (including those dropped on arrival).
    pub enqueued_packets: u64,
    /// Bytes offered to the scheduler.
    pub enqueued_bytes: u64,
    /// Current backlog.
    pub backlog: Backlog,
    /// Largest backlog in packets seen.
    pub peak_backlog_packets: u64,
    /// Largest backlog in bytes seen.
    pub peak_backlog_bytes: u64,
    /// Packets handed to the link.
    pub sent_packets: u64,
    /// Bytes handed to the link.
    pub sent_bytes: u64,
    /// Packets dropped, by [`DropReason`] (index = reason order in [`DropReason::ALL`]).
    pub dropped_packets: [u64; DropReason::COUNT],
    /// Bytes dropped, all reasons.
    pub dropped_bytes: u64,
}

impl FlowCounters {
    /// Packets dropped for `reason`.
    pub fn dropped(&self, reason: DropReason) -> u64 {
        self.dropped_packets[reason.index()]
    }

    /// Packets dropped for any reason.
    pub fn dropped_total(&self) -> u64 {
        self.dropped_packets.iter().sum()
    }
}

/// Per-flow counters plus the scheduler's total backlog. Disciplines call the `record_*`
/// methods at the moment a packet enters, leaves or is dropped; `backlog` is derived from them.
#[derive(Clone, Debug, Default)]
pub struct Counters {
    /// The counters of flow ids `first ..= first + flows.len() - 1`: from the smallest id seen
    /// to the largest, so that a scheduler that sees one flow of a large id (a per-flow access
    /// link in a simulation of many flows) holds one entry, not one per smaller id.
    flows: Vec<FlowCounters>,
    first: FlowId,
    total: Backlog,
    peak_total: Backlog,
    invalid_flow: u64,
}

impl Counters {
    /// The counters of `flow`, growing the table on first sight of a larger flow id.
    #[inline(always)]
    fn flow_mut(&mut self, flow: FlowId) -> &mut FlowCounters {
        // Below `first` the subtraction wraps to a large index: grown like one above the end.
        let index = (flow as usize).wrapping_sub(self.first as usize);
        if index < self.flows.len() {
            // Checked just above: no second bounds check on the usual path.
            return &mut self.flows[index];
        }
        let index = self.grow(flow);
        &mut self.flows[index]
    }

    /// Extends the table to cover `flow`; returns its index.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, flow: FlowId) -> usize {
        if self.flows.is_empty() {
            self.first = flow;
        } else if flow < self.first {
            let added = (self.first - flow) as usize;
            self.flows
                .splice(0..0, std::iter::repeat_n(FlowCounters::default(), added));
            self.first = flow;
        }
        let index = (flow - self.first) as usize;
        if index >= self.flows.len() {
            self.flows.resize(index + 1, FlowCounters::default());
        }
        index
    }

    /// The index of a flow that has been seen.
    #[inline]
    fn index(&self, flow: FlowId) -> usize {
        (flow as usize).wrapping_sub(self.first as usize)
    }

    /// Records an arriving packet offered to the scheduler (before any drop decision).
    #[inline]
    pub fn record_arrival(&mut self, packet: &Packet) {
        let flow = self.flow_mut(packet.flow);
        flow.enqueued_packets += 1;
        flow.enqueued_bytes += packet.size as u64;
    }

    /// Records that `packet` now sits in the scheduler's buffer.
    #[inline]
    pub fn record_queued(&mut self, packet: &Packet) {
        let size = packet.size as u64;
        let flow = self.flow_mut(packet.flow);
        add_backlog(&mut flow.backlog, size);
        raise_peak(&mut flow.peak_backlog_packets, flow.backlog.packets);
        raise_peak(&mut flow.peak_backlog_bytes, flow.backlog.bytes);
        add_backlog(&mut self.total, size);
        raise_peak(&mut self.peak_total.packets, self.total.packets);
        raise_peak(&mut self.peak_total.bytes, self.total.bytes);
    }

    /// Records an arrival that is queued at once: [`Counters::record_arrival`] followed by
    /// [`Counters::record_queued`], with one look-up of the flow.
    #[inline(always)]
    pub fn record_arrival_queued(&mut self, packet: &Packet) {
        let size = packet.size as u64;
        // The totals first: the admission test just read them, and no store through the
        // flows' table (which the compiler cannot tell apart from them) comes between.
        add_backlog(&mut self.total, size);
        raise_peak(&mut self.peak_total.packets, self.total.packets);
        raise_peak(&mut self.peak_total.bytes, self.total.bytes);
        let flow = self.flow_mut(packet.flow);
        flow.enqueued_packets += 1;
        flow.enqueued_bytes += size;
        add_backlog(&mut flow.backlog, size);
        raise_peak(&mut flow.peak_backlog_packets, flow.backlog.packets);
        raise_peak(&mut flow.peak_backlog_bytes, flow.backlog.bytes);
    }

    /// Removes a queued packet from its flow's backlog and the total; returns its flow's
    /// counters.
    #[inline(always)]
    fn remove_backlog(&mut self, packet: &Packet) -> &mut FlowCounters {
        let size = packet.size as u64;
        self.total.packets -= 1;
        self.total.bytes -= size;
        let index = self.index(packet.flow);
        let flow = &mut self.flows[index];
        flow.backlog.packets -= 1;
        flow.backlog.bytes -= size;
        flow
    }

    /// Records that a queued packet left for the link.
    #[inline(always)]
    pub fn record_sent(&mut self, packet: &Packet) {
        let flow = self.remove_backlog(packet);
        flow.sent_packets += 1;
        flow.sent_bytes += packet.size as u64;
    }

    /// Records a drop. `was_queued` tells whether the packet had been counted in the backlog
    /// (a push-out or a late head) or was refused on arrival.
    pub fn record_drop(&mut self, packet: &Packet, reason: DropReason, was_queued: bool) {
        let flow = if was_queued {
            self.remove_backlog(packet)
        } else {
            self.flow_mut(packet.flow)
        };
        flow.dropped_packets[reason.index()] += 1;
        flow.dropped_bytes += packet.size as u64;
    }

    /// Refuses a packet whose flow id is above [`crate::MAX_FLOW_ID`]: counts it here, not
    /// per flow (so that a bad id cannot grow the per-flow table), and reports it in `drops`
    /// as [`DropReason::InvalidPacket`].
    pub fn refuse_invalid_flow(&mut self, packet: Packet, drops: &mut Vec<Dropped>) {
        self.invalid_flow += 1;
        drops.push(Dropped {
            packet,
            reason: DropReason::InvalidPacket,
        });
    }

    /// Refuses a packet of a valid flow that the discipline cannot take (larger than its
    /// maximum packet size): counts its arrival and its drop for the flow, and reports it in
    /// `drops` as [`DropReason::InvalidPacket`].
    pub fn refuse_invalid_packet(&mut self, packet: Packet, drops: &mut Vec<Dropped>) {
        self.record_arrival(&packet);
        self.record_drop(&packet, DropReason::InvalidPacket, false);
        drops.push(Dropped {
            packet,
            reason: DropReason::InvalidPacket,
        });
    }

    /// Packets refused because their flow id was above [`crate::MAX_FLOW_ID`].
    pub fn invalid_flow_packets(&self) -> u64 {
        self.invalid_flow
    }

    /// Total backlog.
    #[inline]
    pub fn backlog(&self) -> Backlog {
        self.total
    }

    /// Largest total backlog seen (packets and bytes, each its own maximum).
    pub fn peak_backlog(&self) -> Backlog {
        self.peak_total
    }

    /// Backlog of one flow (zero for a flow never seen).
    pub fn flow_backlog(&self, flow: FlowId) -> Backlog {
        self.flow(flow).map(|f| f.backlog).unwrap_or_default()
    }

    /// Counters of one flow, if a flow of that id or of ids on both sides of it has been seen
    /// (then all zeros if that id itself was not).
    pub fn flow(&self, flow: FlowId) -> Option<&FlowCounters> {
        self.flows.get(self.index(flow))
    }

    /// Prefetches (see [`crate::pool::prefetch_at`]) the first line of the counters of
    /// `flow`, which holds what a dequeue updates; a flow never seen prefetches an address
    /// that is not read (harmless).
    #[inline(always)]
    pub fn prefetch_flow(&self, flow: FlowId) {
        crate::pool::prefetch_bytes_at(&self.flows, self.index(flow), 64);
    }

    /// Counters of every flow id from the smallest seen ([`Counters::first_flow`]) to the
    /// largest (ids between them not seen have zeros).
    pub fn flows(&self) -> &[FlowCounters] {
        &self.flows
    }

    /// The flow id of `flows()[0]` (0 before any flow is seen).
    pub fn first_flow(&self) -> FlowId {
        self.first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_spans_the_flow_ids_seen_in_any_order() {
        let mut counters = Counters::default();
        // One flow of a large id: one entry.
        counters.record_arrival_queued(&Packet::new(1, 1_000_000, 100, 0));
        assert_eq!((counters.first_flow(), counters.flows().len()), (1_000_000, 1));
        let mut counters = Counters::default();
        for (id, flow) in [(1, 5), (2, 2), (3, 9), (4, 5)] {
            counters.record_arrival_queued(&Packet::new(id, flow, 100 * flow, 0));
        }
        assert_eq!((counters.first_flow(), counters.flows().len()), (2, 8));
        counters.record_sent(&Packet::new(1, 5, 500, 0));
        let five = counters.flow(5).unwrap();
        assert_eq!((five.enqueued_packets, five.sent_packets), (2, 1));
        assert_eq!(
            counters.flow_backlog(5),
            Backlog {
                packets: 1,
                bytes: 500
            }
        );
        assert_eq!(
            counters.flow_backlog(2),
            Backlog {
                packets: 1,
                bytes: 200
            }
        );
        assert_eq!(counters.flow_backlog(9).bytes, 900);
        assert_eq!(counters.flow(3).unwrap().enqueued_packets, 0);
        assert!(counters.flow(1).is_none() && counters.flow(10).is_none());
        assert_eq!(counters.flow_backlog(1), Backlog::default());
        assert_eq!(
            counters.backlog(),
            Backlog {
                packets: 3,
                bytes: 1_600
            }
        );
    }
}
