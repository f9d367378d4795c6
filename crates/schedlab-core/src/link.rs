//! A single output link driven by a scheduler: the semantics of `schedlab replay`, shared by
//! the simulator's trace sources and by every discipline's property tests.
//!
//! The link sends one packet at a time at a fixed [`Rate`]. Events are processed in time
//! order; at equal times arrivals come first, so all arrivals with a time `<= now` are
//! enqueued before the scheduler is asked for the next packet. The scheduler is asked whenever
//! the link is free and something is queued, or at the wake-up time it gave.

use crate::counters::{DropReason, Dropped};
use crate::packet::Packet;
use crate::scheduler::Scheduler;
use crate::time::{Rate, TimeNs};

/// What happened to one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The packet was sent: first bit on the link at `start`, last bit at `end`.
    Sent {
        /// Time the first bit went on the link.
        start: TimeNs,
        /// Time the last bit left (`start` + serialisation time).
        end: TimeNs,
    },
    /// The packet was dropped at time `at`.
    Dropped {
        /// Time of the drop.
        at: TimeNs,
        /// Why.
        reason: DropReason,
    },
}

/// The result of driving a link over a list of packets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkRun {
    /// One outcome per input packet, in input order (`None` only if the run stalled).
    pub outcomes: Vec<Option<Outcome>>,
    /// Packets in the order they were sent, with their start times.
    pub send_order: Vec<(usize, TimeNs)>,
    /// How many times the scheduler returned nothing while it held packets and the link was
    /// free (zero for a work-conserving discipline).
    pub idle_while_backlogged: u64,
    /// Packets still queued when the input ended and the scheduler neither sent them nor gave
    /// a wake-up time (a discipline bug; zero in every correct run).
    pub stalled: u64,
}

/// Input to [`run_link`] must be sorted by arrival; this names the first offending index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("packet {index} arrives at {arrival} ns, before the previous packet ({previous} ns)")]
pub struct UnsortedInput {
    /// Index of the packet that goes back in time.
    pub index: usize,
    /// Its arrival time.
    pub arrival: TimeNs,
    /// The previous packet's arrival time.
    pub previous: TimeNs,
}

/// Drives `scheduler` on a link of `rate` with `packets` (sorted by arrival time). Packet ids
/// are replaced by the input index so that outcomes can be matched.
pub fn run_link<S: Scheduler + ?Sized>(
    scheduler: &mut S,
    rate: Rate,
    packets: &[Packet],
) -> Result<LinkRun, UnsortedInput> {
    run_link_watched(scheduler, rate, packets, &mut |_| true)
        .map(|run| run.expect("a watcher that never stops"))
}

/// Packets enqueued between two calls of a [`run_link_watched`] watcher.
pub const WATCH_EVERY: usize = 1 << 14;

/// [`run_link`] that calls `watch(packets enqueued so far)` every [`WATCH_EVERY`] arrivals
/// and stops, returning `Ok(None)`, when it returns false (Ctrl-C in the replay tool).
pub fn run_link_watched<S: Scheduler + ?Sized>(
    scheduler: &mut S,
    rate: Rate,
    packets: &[Packet],
    watch: &mut dyn FnMut(usize) -> bool,
) -> Result<Option<LinkRun>, UnsortedInput> {
    for index in 1..packets.len() {
        if packets[index].arrival < packets[index - 1].arrival {
            return Err(UnsortedInput {
                index,
                arrival: packets[index].arrival,
                previous: packets[index - 1].arrival,
            });
        }
    }
    let mut outcomes: Vec<Option<Outcome>> = vec![None; packets.len()];
    let mut send_order = Vec::with_capacity(packets.len());
    let totals = drive_link(
        scheduler,
        rate,
        packets.iter().copied(),
        &mut |id, outcome| {
            outcomes[id as usize] = Some(outcome);
            if let Outcome::Sent { start, .. } = outcome {
                send_order.push((id as usize, start));
            }
        },
        watch,
    )?;
    Ok(totals.map(|totals| LinkRun {
        outcomes,
        send_order,
        idle_while_backlogged: totals.idle_while_backlogged,
        stalled: totals.stalled,
    }))
}

/// What [`drive_link`] counts besides the outcomes (the fields of [`LinkRun`] with the same
/// names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkTotals {
    /// Packets taken from the input.
    pub packets: u64,
    /// Decisions where the scheduler returned nothing while it held packets.
    pub idle_while_backlogged: u64,
    /// Packets still queued when the input ended with no wake-up time (a discipline bug).
    pub stalled: u64,
}

/// The link of [`run_link`] over packets that arrive from an iterator (sorted by arrival:
/// a packet earlier than its predecessor is [`UnsortedInput`]), holding nothing per packet
/// beyond what the scheduler queues: `outcome(input index, outcome)` is called as each packet
/// is sent (in send order) or dropped, so a caller can stream the results out. Packet ids
/// are replaced by the input index. `watch(packets enqueued so far)` is called every
/// [`WATCH_EVERY`] arrivals; when it returns false the run stops with `Ok(None)`.
pub fn drive_link<S: Scheduler + ?Sized, I: Iterator<Item = Packet>>(
    scheduler: &mut S,
    rate: Rate,
    packets: I,
    outcome: &mut dyn FnMut(u64, Outcome),
    watch: &mut dyn FnMut(usize) -> bool,
) -> Result<Option<LinkTotals>, UnsortedInput> {
    let mut packets = packets.peekable();
    let mut totals = LinkTotals::default();
    let mut drops: Vec<Dropped> = Vec::new();
    let mut next = 0usize; // input index of the next arrival
    let mut previous_arrival: TimeNs = 0;
    let mut link_free_at: TimeNs = 0;
    let mut clock: TimeNs = 0; // time of the last event
    let mut wakeup: Option<TimeNs> = None;

    let record_drops = |drops: &mut Vec<Dropped>, at: TimeNs, outcome: &mut dyn FnMut(u64, Outcome)| {
        for dropped in drops.drain(..) {
            outcome(
                dropped.packet.id,
                Outcome::Dropped {
                    at,
                    reason: dropped.reason,
                },
            );
        }
    };

    loop {
        let backlogged = scheduler.backlog().packets > 0;
        // The next time the scheduler should be asked for a packet.
        let decision: Option<TimeNs> = if !backlogged {
            None
        } else {
            match wakeup {
                Some(w) => Some(w.max(link_free_at).max(clock)),
                None => Some(link_free_at.max(clock)),
            }
        };
        let arrival = packets.peek().map(|p| p.arrival);
        match (arrival, decision) {
            (None, None) => break,
            (Some(t), d) if d.is_none_or(|d| t <= d) => {
                let mut packet = packets.next().expect("peeked above");
                if t < previous_arrival {
                    return Err(UnsortedInput {
                        index: next,
                        arrival: t,
                        previous: previous_arrival,
                    });
                }
                previous_arrival = t;
                packet.id = next as u64;
                clock = t;
                scheduler.enqueue(packet, t, &mut drops);
                record_drops(&mut drops, t, outcome);
                next += 1;
                totals.packets += 1;
                if next.is_multiple_of(WATCH_EVERY) && !watch(next) {
                    return Ok(None);
                }
                // A new arrival may make a held-back discipline ready earlier.
                wakeup = None;
            }
            (_, Some(now)) => {
                clock = now;
                match scheduler.dequeue(now, &mut drops) {
                    Some(packet) => {
                        record_drops(&mut drops, now, outcome);
                        let end = now + rate.transmission_time(packet.size as u64);
                        outcome(packet.id, Outcome::Sent { start: now, end });
                        link_free_at = end;
                        wakeup = None;
                    }
                    None => {
                        record_drops(&mut drops, now, outcome);
                        if scheduler.backlog().packets == 0 {
                            wakeup = None;
                            continue;
                        }
                        totals.idle_while_backlogged += 1;
                        match scheduler.next_wakeup(now) {
                            Some(w) if w > now => wakeup = Some(w),
                            _ => {
                                // Nothing will change before the next arrival.
                                match packets.peek() {
                                    Some(p) => wakeup = Some(p.arrival.max(now + 1)),
                                    None => {
                                        totals.stalled = scheduler.backlog().packets;
                                        break;
                                    }
                                }
                            }
                        }
                    }
                }
            }
            (Some(_), None) => unreachable!("an arrival with no decision pending is enqueued above"),
        }
    }
    Ok(Some(totals))
}
