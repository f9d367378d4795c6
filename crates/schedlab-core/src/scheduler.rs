//! The one `Scheduler` trait that the simulator, the replay tool and the gateway drive.

use crate::counters::{Backlog, Counters, Dropped};
use crate::packet::{FlowId, Packet};
use crate::time::TimeNs;

/// A packet scheduling discipline.
///
/// The driver (a simulated or real link) calls [`Scheduler::enqueue`] for every arrival, in
/// time order, and [`Scheduler::dequeue`] whenever the link is free and
/// [`Scheduler::backlog`] is non-zero. All arrivals with a time `<= now` are enqueued before a
/// dequeue at `now`. `now` never decreases between calls.
///
/// Drops are reported through the caller's `drops` vector (cleared by the caller, never by
/// the scheduler), so that steady-state operation allocates nothing: an arrival may be refused
/// ([`crate::DropReason::BufferFull`]), may push out other packets
/// ([`crate::DropReason::PushedOut`]), and a dequeue may discard late packets
/// ([`crate::DropReason::Late`]). Every packet given to `enqueue` comes back exactly once:
/// from `dequeue` or in a `drops` vector.
pub trait Scheduler {
    /// The registry id of the discipline (`"drr"`, `"wfq"`, …).
    fn id(&self) -> &'static str;

    /// Offers an arriving packet at time `now`.
    fn enqueue(&mut self, packet: Packet, now: TimeNs, drops: &mut Vec<Dropped>);

    /// The next packet to put on the link at time `now`, or `None` when nothing is queued or
    /// the discipline holds its packets back (see [`Scheduler::next_wakeup`]).
    fn dequeue(&mut self, now: TimeNs, drops: &mut Vec<Dropped>) -> Option<Packet>;

    /// The packet that a dequeue at `now` would return, without removing it. A discipline may
    /// advance internal round state exactly as that dequeue would (as Linux's qdisc peek
    /// does); a dequeue at the same `now` then returns this packet. `peek` has no `drops`
    /// vector: a discipline whose peek discards packets (DWCS dropping late heads) records
    /// them in its counters at once and reports them, first, in the `drops` vector of the
    /// next `enqueue` or `dequeue`.
    fn peek(&mut self, now: TimeNs) -> Option<Packet>;

    /// Per-flow and total counters.
    fn counters(&self) -> &Counters;

    /// Total backlog.
    fn backlog(&self) -> Backlog {
        self.counters().backlog()
    }

    /// Backlog of one flow.
    fn flow_backlog(&self, flow: FlowId) -> Backlog {
        self.counters().flow_backlog(flow)
    }

    /// For disciplines that may hold packets back while backlogged (non-work-conserving):
    /// the earliest time after `now` at which a dequeue may return a packet. `None` when the
    /// discipline never holds packets back, or is empty.
    fn next_wakeup(&self, now: TimeNs) -> Option<TimeNs> {
        let _ = now;
        None
    }

    /// Whether the discipline always sends when it holds packets (never idles a free link).
    fn is_work_conserving(&self) -> bool {
        true
    }

    /// The driver did not serve `packet`, which this scheduler's last dequeue returned (it
    /// dropped it instead, e.g. for the link's sojourn limit). Disciplines that account for
    /// service given (the CPU-share policies' usage) take it back; the default does nothing.
    fn not_served(&mut self, packet: &Packet) {
        let _ = packet;
    }

    /// The discipline's own counters by name (e.g. DRR++ `lc_service`), for reports.
    fn discipline_counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// The discipline's own counters of one flow by name (DWCS: the stream's
    /// `deadlines_missed`, `loss_tolerance_violations`, …), for per-flow results. A discipline
    /// that keeps such counters returns the same names for every flow (zeros for a flow it has
    /// not seen); the default, none.
    fn flow_discipline_counters(&self, flow: FlowId) -> Vec<(&'static str, u64)> {
        let _ = flow;
        Vec::new()
    }
}
