//! The discrete-event engine: one replication of a scenario.
//!
//! Time is integer nanoseconds. Events are ordered by `(time, seq)`: `seq` is a counter
//! stamped when the event is scheduled, so equal-time events are handled in the order they
//! were scheduled. The top bit of `seq` marks scheduler decisions (the "decision phase"), so
//! that at any time `t` every arrival, transmission end and propagation event at `t` is
//! handled before a link asks its scheduler for a packet at `t` — the semantics of
//! `schedlab_core::link::run_link` (arrivals at time ≤ now are enqueued first). A decision is
//! taken at once, without a heap round trip, when no such event at `t` is pending.
//!
//! Each source has one pending event, its next packet's entry into the network: these sit in
//! a `SourceClock` (a tournament tree, or from 32 sources on a calendar queue of days); one
//! link's pending transmission end (the link every path ends at, else the last of the first
//! source's path: `Engine::slot_link`) sits in a slot of its own; a propagation event
//! scheduled no earlier than the last one queued there goes to the back of a FIFO
//! (`Engine::propagations`: with links of equal delays nearly all of them do); the other
//! events in an `EventQueue` (a binary heap). The loop takes the earliest of the four, which is the order a single heap of
//! all events would give (the keys are the same `(time, seq)`).
//!
//! A link asks its scheduler for a packet whenever it is free and its scheduler is
//! backlogged, and at the `next_wakeup` time a non-work-conserving discipline gives; a new
//! arrival at a free link cancels a pending wake-up and triggers a decision, as in `run_link`.
//! A sent packet occupies the link for its serialisation time (rounded up to the ns), then
//! propagates for the link's delay (packets of one link propagate in FIFO order, so one
//! pending event per link suffices) and arrives at the next link of its source's path, or is
//! delivered.
//!
//! A private hop (a FIFO first hop that only one source's packets enter, without buffer limit,
//! drops or loss; see `PrivateHop`) has neither scheduler calls nor transmission-end events:
//! a packet's departure from it follows from Lindley's recursion when the packet enters, so
//! its propagation to the next hop is scheduled then, and the hop's statistics are what the
//! scheduler's run would have given (the replication's event count includes the events the
//! hop stands for). When the network drains and every open-loop path ends at the same link
//! (see `sink_link`), a packet's delivery is recorded at its transmission end there, with
//! its delivery time a propagation delay later, instead of in a propagation event.
//!
//! Per-packet bookkeeping (network entry time, source, hop, whether it is measured) lives in a
//! slab whose slot index is the low 32 bits of the packet id; slots are reused, so the steady
//! state allocates nothing per packet.
//!
//! The loop and its event handlers are compiled once per set of features a run may meet
//! (`PathFeatures`). A run that meets none of TCP (closed-loop sources), shapers, echoes,
//! admission (conditioners, drop policies), loss, sojourn limits, lateness meters, live class
//! statistics, the packet log or out-of-order propagations (`Engine::lean_path`) takes a loop
//! without their tests: `LeanPath`, or `LeanPrefetchingPath` when the engine prefetches flow
//! state (many flows); every other run takes `AnyPath`, the loop that tests them.

use std::collections::VecDeque;

use schedlab_core::conditioning::ColourCounters;
use schedlab_core::time::CLOCK_LIMIT;
use schedlab_core::{
    overdue, AnyScheduler, Backlog, Colour, Conditioner, ConfigError, DropReason, Dropped, LinkDropPolicy,
    Marking, Packet, Rate, Scheduler, ServiceTime, TimeNs, Verdict,
};

use rand::RngExt as _;
use schedlab_core::disciplines::drr::Drr;

use crate::event_queue::{Event, EventFifo, EventQueue, SourceClock, NEVER};
use crate::lateness::{LatenessCounts, LatenessMeter};
use crate::packet_log::{Fate, PacketLog, RowIndex};
use crate::prefetch::prefetch;
use crate::scenario::{AckReturn, RunLength, Scenario, ScenarioError, ECHO_SIZE, MAX_BINS};
use crate::stats::{raise, Accumulator, DeferredDelays, Jitter};
use crate::tcp::{Ack, TcpConnection, TcpCounters};
use crate::traffic::{source_rng, stream_seed, Emission, Generator, SourceRng, TokenBucket};

const TX_END: u32 = 1;
const PROPAGATED: u32 = 2;
const DECIDE: u32 = 3;
const TICK: u32 = 4;
const MARK_WARMUP: u32 = 5;
const MARK_END: u32 = 6;
/// A TCP sender's retransmission timer.
const TCP_TIMER: u32 = 7;
/// An ACK returning over a fixed `ack_delay` reaches its sender.
const ACK_RETURN: u32 = 8;
/// A TCP receiver's delayed-ACK timer.
const DELAYED_ACK: u32 = 9;
/// A bulk TCP source starts.
const TCP_START: u32 = 10;
/// A TCP source's application stops writing (`stop`).
const TCP_STOP: u32 = 11;
/// The end of the simulated clock ([`CLOCK_LIMIT`], after every event at that time): every
/// event handled is at or before it, so adding to its time a duration, a delay or a service
/// time plus a delay (each at most the limit, checked when the scenario is read) cannot wrap;
/// an event still pending when it comes is an error. It is in the heap from the start, or, in
/// a duration run up to the limit (whose window's end comes first and guards the window), from
/// the window's end if the run drains: the window's heap is one event smaller.
const CLOCK_END: u32 = 12;

/// What a packet is: open-loop traffic, a TCP data segment, or a TCP acknowledgement.
const OPEN_LOOP: u8 = 0;
const TCP_DATA: u8 = 1;
const TCP_ACK: u8 = 2;
/// An open-loop packet's echo on its source's `ack_path` (the round-trip time).
const ECHO: u8 = 3;

/// The stream index of link `l`'s loss process (sources use 0, 1, 2…).
const LOSS_STREAM: u64 = 1 << 40;
const KIND_SHIFT: u32 = 28;
const INDEX_MASK: u32 = (1 << KIND_SHIFT) - 1;

/// The decision phase bit of `seq`.
const DECISION_PHASE: u64 = 1 << 63;
const NO_DECISION: u64 = u64::MAX;

/// Per-packet bookkeeping.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    /// Time the packet entered the network (left the shaper).
    entry: TimeNs,
    /// Source index.
    source: u32,
    /// Index in the source's path of the link the packet is at.
    hop: u32,
    /// Whether it counts in the statistics.
    measured: bool,
    /// `OPEN_LOOP`, `TCP_DATA`, `TCP_ACK` or `ECHO`.
    kind: u8,
    /// The class the packet entered the network with (the class of the end-to-end statistics,
    /// whatever a conditioner on its path made of `Packet::class`).
    class: u8,
    /// Its DSCP and colour, which conditioners read and mark.
    marking: Marking,
    /// TCP: the segment's first byte, or the ACK's cumulative acknowledgement.
    seq: u64,
    /// TCP data: payload bytes; TCP ACK: its number in `TcpState::sack_in_flight` (0: no
    /// SACK blocks).
    len: u32,
    /// Row in the packet log ([`PacketLog::NONE`]: not logged).
    log: RowIndex,
}

/// The slots of the packets in flight. A free slot's `hop` holds the next free slot
/// ([`NIL`]: none): the free list is last in, first out, and costs no vector of its own (no
/// capacity test when a packet leaves).
#[derive(Debug)]
struct Slab {
    slots: Vec<Slot>,
    /// The first free slot ([`NIL`]: none).
    free: u32,
    issued: u64,
}

impl Default for Slab {
    fn default() -> Slab {
        Slab {
            slots: Vec::new(),
            free: NIL,
            issued: 0,
        }
    }
}

impl Slab {
    #[inline]
    fn insert(&mut self, slot: Slot) -> Result<u64, ScenarioError> {
        self.insert_as(slot, true)
    }

    /// [`Slab::insert`]; unless `full`, a free slot taken again keeps its `marking`, `seq`,
    /// `len` and `log` (4 of its 10 fields, 5 stores) instead of `slot`'s. For the lean loops
    /// ([`PathFeatures::ANY`] false), which read none of them: conditioners (`marking`), TCP
    /// (`seq`, `len`) and the packet log (`log`) are features they rule out.
    #[inline(always)]
    fn insert_as(&mut self, slot: Slot, full: bool) -> Result<u64, ScenarioError> {
        let index = if self.free != NIL {
            let index = self.free;
            // (Checked: every index `insert` hands out has passed this index or the `push`
            // below, and `slots` never shrinks, so `get` cannot read out of bounds even if a
            // bug freed a slot twice; a double free itself is not detected.)
            let place = &mut self.slots[index as usize];
            let next = place.hop;
            if full {
                *place = slot;
            } else {
                *place = Slot {
                    marking: place.marking,
                    seq: place.seq,
                    len: place.len,
                    log: place.log,
                    ..slot
                };
            }
            self.free = next;
            index
        } else {
            // (Below `u32::MAX`, so no index is `NIL`.)
            if self.slots.len() >= u32::MAX as usize {
                return Err(ScenarioError::Run(
                    "more than 4 294 967 295 packets in flight at once".into(),
                ));
            }
            self.slots.push(slot);
            (self.slots.len() - 1) as u32
        };
        self.issued += 1;
        Ok((self.issued << 32) | index as u64)
    }

    /// The slot of packet `id`, without a bounds check: `id` is a packet in flight, named by
    /// [`Slab::insert`] (its low 32 bits an index of `slots`, which never shrinks; checked in
    /// debug builds). Ids also come back through the links' schedulers (a dequeued or dropped
    /// packet): this relies on the core's disciplines returning the descriptors they were
    /// given, never one they made up (the hierarchy's tokens keep the real id).
    #[inline]
    fn get(&mut self, id: u64) -> &mut Slot {
        let index = (id & 0xffff_ffff) as usize;
        debug_assert!(index < self.slots.len(), "packet {id} has no slot");
        // SAFETY: `id` was returned by `insert`, and `slots` never shrinks (above).
        unsafe { self.slots.get_unchecked_mut(index) }
    }

    /// Frees the slot of packet `id` (as [`Slab::get`]: a packet in flight) and returns it.
    #[inline]
    fn remove(&mut self, id: u64) -> Slot {
        let free = self.free;
        let place = self.get(id);
        let slot = *place;
        place.hop = free;
        self.free = (id & 0xffff_ffff) as u32;
        slot
    }
}

/// Integrals of a link's state up to a time, for window and per-bin averages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkSnapshot {
    /// The time of the snapshot, ns.
    pub time: TimeNs,
    /// Busy time so far, ns.
    pub busy: u64,
    /// ∫ backlog in packets dt, packet·ns.
    pub area_packets: u128,
    /// ∫ backlog in bytes dt, byte·ns.
    pub area_bytes: u128,
    /// Packets whose transmission ended so far.
    pub sent_packets: u64,
    /// Their bytes.
    pub sent_bytes: u64,
    /// Packets dropped so far (all reasons).
    pub dropped: [u64; DropReason::COUNT],
    /// Packets lost after transmission so far (the link's `loss`).
    pub lost: u64,
}

/// What a link did for one class (the link's packets of that class), as running totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassAtLink {
    /// Time the link spent serving the class, ns (its busy time; over a window, the paper's
    /// group CPU utilisation GCU when the link is a CPU stage).
    pub busy: u64,
    /// Packets of the class whose service ended.
    pub sent_packets: u64,
    /// Σ (service end − arrival at the link) of those packets, ns: queueing plus service at
    /// this link.
    pub delay_sum: u128,
    /// Packets of the class dropped at the link, by reason.
    pub dropped: [u64; DropReason::COUNT],
}

/// The error of a run that stops because `what` would happen at `at`, after [`CLOCK_LIMIT`].
fn past_clock_end(what: &str, at: TimeNs) -> String {
    format!(
        "{what} at {at} ns ({:.0} years), after the end of the simulated clock ({CLOCK_LIMIT} ns, \
         about 292 years); the run stops there and reports nothing",
        at as f64 / 1e9 / 31_557_600.0
    )
}

/// A link's [`ServiceTime`] prepared for the per-packet path: when its rate divides
/// 8·10⁹ bits·ns/s (a whole number of nanoseconds a byte, as for 10 Mbit/s and 1 Gbit/s),
/// a packet's transmission time is its size times that number, which is exactly
/// `Rate::transmission_time`'s rounded-up quotient, without a 64-bit division (on this
/// machine's processors tens of cycles of latency, on the path to the packet's next event; the
/// ns-2 scenario takes two a packet). Other rates divide as `ServiceTime::of` does.
#[derive(Clone, Copy, Debug)]
struct PreparedService {
    /// The fixed time per packet (`ServiceTime::per_packet`).
    per_packet: TimeNs,
    /// Nanoseconds a byte (0 without a rate) or, when `divide`, the rate in bits per second.
    per_byte: u64,
    /// Whether `per_byte` is a rate to divide by.
    divide: bool,
}

impl PreparedService {
    /// `service` prepared. A whole number of nanoseconds a byte is used up to `u32::MAX`, so
    /// that a size (`u32`) times it fits in 64 bits, and only while `per_packet` plus that
    /// product fits too (otherwise `ServiceTime::of`, which saturates, divides).
    fn new(service: ServiceTime) -> PreparedService {
        let bit_ns = 8 * schedlab_core::time::NANOS_PER_SECOND;
        match service.rate {
            None => PreparedService {
                per_packet: service.per_packet,
                per_byte: 0,
                divide: false,
            },
            Some(rate) => {
                let bits_per_second = rate.bits_per_second();
                let whole = bit_ns.is_multiple_of(bits_per_second)
                    && bit_ns / bits_per_second <= u32::MAX as u64
                    && (service.per_packet)
                        .checked_add(u32::MAX as u64 * (bit_ns / bits_per_second))
                        .is_some();
                PreparedService {
                    per_packet: service.per_packet,
                    per_byte: if whole {
                        bit_ns / bits_per_second
                    } else {
                        bits_per_second
                    },
                    divide: !whole,
                }
            }
        }
    }

    /// `ServiceTime::of`: the service time of a packet of `size` bytes.
    #[inline(always)]
    fn of(&self, size: u32) -> TimeNs {
        if self.divide {
            ServiceTime {
                per_packet: self.per_packet,
                rate: Rate::from_bits_per_second(self.per_byte),
            }
            .of(size)
        } else {
            self.per_packet + size as u64 * self.per_byte
        }
    }
}

/// A link's state. The fields every packet touches come first, in a few adjacent cache lines
/// (`repr(C)` keeps this order, from a cache-line boundary): with many links, each line of a
/// link's state that a packet touches is a cache miss. A packet entering a private hop (see
/// [`PrivateHop`]) touches none of it unless it waits there (the backlog integrals and the
/// largest backlog). The scheduler is boxed (its enum is several hundred bytes).
#[repr(C, align(64))]
struct LinkState {
    area_packets: u128,
    area_bytes: u128,
    busy_done: u64,
    sent_packets: u64,
    sent_bytes: u64,
    max_packets: u64,
    max_bytes: u64,
    delay: TimeNs,
    service: PreparedService,
    /// The scheduler's backlog, read after each enqueue and dequeue (it changes only then),
    /// so the per-packet paths do not dispatch to the scheduler to ask again.
    backlog: Backlog,
    busy: bool,
    /// Whether a conditioner or a drop policy sees each arriving packet (read on every
    /// arrival; the two fields themselves lie after the scheduler, off the per-packet lines).
    admission: bool,
    /// Whether `scheduler` is DRR ([`AnyScheduler::Drr`]; set with it, and neither changes):
    /// the per-packet calls test this flag instead of the enum's discriminant (see
    /// [`scheduler_enqueue`]).
    drr: bool,
    last_change: TimeNs,
    decision_seq: u64,
    decision_at: TimeNs,
    tx_start: TimeNs,
    /// A packet is lost when a uniform `u64` draw is below this (`loss · 2⁶⁴`).
    loss_threshold: u64,
    /// `max_sojourn`, or `TimeNs::MAX` (never overdue).
    max_sojourn: TimeNs,
    in_service: Packet,
    pipe: VecDeque<(TimeNs, Packet)>,
    /// Per class (index = class, grown on first sight; a private hop's are its totals).
    classes: Vec<ClassAtLink>,
    scheduler: Box<AnyScheduler>,
    drop_policy: Option<LinkDropPolicy>,
    conditioner: Option<Conditioner>,
    dropped: [u64; DropReason::COUNT],
    classes_at_warmup: Vec<ClassAtLink>,
    classes_at_end: Vec<ClassAtLink>,
    /// The conditioner's counters per meter at the start and at the end of the window.
    meters_at_warmup: Vec<ColourCounters>,
    meters_at_end: Vec<ColourCounters>,
    /// Per bin boundary: each class's busy time so far, ns.
    class_busy_series: Vec<Vec<u64>>,
    idle_while_backlogged: u64,
    series: Vec<LinkSnapshot>,
    at_warmup: LinkSnapshot,
    at_end: Option<LinkSnapshot>,
    loss_rng: SourceRng,
    lost: u64,
}

impl LinkState {
    /// Accumulates the backlog integral up to `now` (call before the backlog changes).
    #[inline(always)]
    fn touch(&mut self, now: TimeNs) {
        let dt = now - self.last_change;
        if dt > 0 {
            let backlog = self.backlog;
            self.area_packets += backlog.packets as u128 * dt as u128;
            self.area_bytes += backlog.bytes as u128 * dt as u128;
            self.last_change = now;
        }
    }

    /// The link's totals at `now` (`hop`: its line in the engine's private hops, `pool` their
    /// entries).
    fn snapshot(&mut self, now: TimeNs, hop: &PrivateHop, pool: &TransitPool) -> LinkSnapshot {
        self.touch(now);
        let mut snapshot = LinkSnapshot {
            time: now,
            busy: self.busy_done + if self.busy { now - self.tx_start } else { 0 },
            area_packets: self.area_packets,
            area_bytes: self.area_bytes,
            sent_packets: self.sent_packets,
            sent_bytes: self.sent_bytes,
            dropped: self.dropped,
            lost: self.lost,
        };
        if hop.private {
            hop.add_totals(&mut snapshot);
            hop.take_back(now, pool, &mut snapshot);
        }
        snapshot
    }

    /// The scheduler's backlog at `now` (a private hop's: its packets not yet in service).
    fn backlog_at(&self, now: TimeNs, hop: &PrivateHop, pool: &TransitPool) -> Backlog {
        if hop.private {
            hop.waiting(now, pool)
        } else {
            self.backlog
        }
    }

    /// The running totals of `class`, growing the table on first sight.
    #[inline(always)]
    fn class_mut(&mut self, class: u8) -> &mut ClassAtLink {
        let index = class as usize;
        if index >= self.classes.len() {
            self.classes.resize(index + 1, ClassAtLink::default());
        }
        match self.classes.get_mut(index) {
            Some(totals) => totals,
            None => unreachable!("the table was grown to the class"),
        }
    }

    /// The conditioner's counters per meter (none without a conditioner).
    fn meter_snapshot(&self) -> Vec<ColourCounters> {
        self.conditioner
            .as_ref()
            .map_or_else(Vec::new, Conditioner::counters)
    }

    /// The per-class totals at `now`, counting the packet in service up to `now`.
    fn class_snapshot(&self, now: TimeNs, hop: &PrivateHop, pool: &TransitPool) -> Vec<ClassAtLink> {
        if hop.private {
            return hop.class_snapshot(now, pool, self.area_packets);
        }
        let mut classes = self.classes.clone();
        if self.busy {
            let class = self.in_service.class as usize;
            if class >= classes.len() {
                classes.resize(class + 1, ClassAtLink::default());
            }
            classes[class].busy += now - self.tx_start;
        }
        classes
    }
}

/// A private FIFO hop: a link that only one source's packets enter, as the first hop of its
/// path, with a FIFO scheduler without buffer limit, no conditioner, drop policy, sojourn
/// limit or loss (the access links of `bench/scenarios/ns2_bottleneck.py`). Its packets leave
/// in arrival order and none is dropped, so each one's transmission end is known when it
/// arrives (Lindley's recursion): the engine schedules its arrival at the next hop then, and
/// the hop's transmission-end events, its scheduler and its decisions are not needed. The
/// link's statistics are those the scheduler's run would give: totals are added at arrival,
/// and snapshots (bin ticks, the window's start and end) take back the part of the packets
/// here whose transmission had not ended at the snapshot's time (a transmission ending at the
/// snapshot's very time counts as not ended, as the engine handles the marks and ticks of a
/// time before the transmission ends scheduled later).
///
/// Its packets propagate in the order they arrived, so one queue holds them until they reach
/// their next hop (the entries before `forward` have, and stay while a snapshot may still need
/// them). The queue's entries are [`TransitEntry`] nodes of the engine's [`TransitPool`],
/// shared by all private hops: a circular list through `next`, `tail` its last entry (whose
/// `next` is the first). All its packets are of its source's one class (a trace source, whose
/// classes vary per packet, has no private hop), so its per-class totals are its link totals.
///
/// One cache line (`align(64)`) holds what a packet entering the hop and its propagation read
/// and write, in a compact array of the engine (one per link; `private` is false for the
/// others), so that with many flows a packet touches this line (and a pool entry most likely
/// in the cache) instead of the link's whole state. Totals that only a queueing packet
/// changes (the backlog integrals) and the largest backlog while packets wait are in the
/// [`LinkState`]; those are touched only when the packet waits. Invariants: `delay_sum = area_packets + busy_done` of
/// the running totals (a packet's delay here is its wait plus its service), so it is not kept.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct PrivateHop {
    /// The link's fixed time per packet (its [`PreparedService`]'s `per_packet`; the
    /// prepared service's three fields are kept here apart, so that the hop's hot fields
    /// share one cache line, and put together again by `service`).
    per_packet: TimeNs,
    /// The link's nanoseconds a byte, or its rate when `divide` ([`PreparedService`]'s
    /// `per_byte`).
    per_byte: u64,
    /// The link's propagation delay.
    delay: TimeNs,
    /// Busy time, sent packets and bytes of every packet that entered (the link's running
    /// totals; a snapshot takes back what lies after its time).
    busy_done: u64,
    sent_packets: u64,
    sent_bytes: u64,
    /// The queue's last entry ([`NIL`]: empty: before the first packet, or once every entry was
    /// forwarded and its transmission ended before a later `now`, see `drop_ended`).
    tail: u32,
    /// The first entry not yet at its next hop ([`NIL`]: none).
    forward: u32,
    /// The largest packet that entered an idle hop in the window (the largest backlog then is
    /// one packet of this size; see [`Engine::max_backlog`]).
    alone_max_bytes: u32,
    /// Whether a packet entered an idle hop in the window.
    alone: bool,
    /// Its [`PreparedService`]'s `divide`.
    divide: bool,
    /// Whether the link is a private hop.
    private: bool,
    /// The class of its packets (its source's one class).
    class: u8,
}

const _: () = assert!(std::mem::size_of::<PrivateHop>() == 64);

/// `TransitPool`'s "no entry".
const NIL: u32 = u32::MAX;

/// A packet at a private hop: the packet (its `arrival` the time it entered the hop), its
/// service start and end, and the next entry of the hop's queue. One cache line.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct TransitEntry {
    id: u64,
    arrival: TimeNs,
    start: TimeNs,
    end: TimeNs,
    deadline: Option<TimeNs>,
    size: u32,
    flow: u32,
    next: u32,
    class: u8,
}

const _: () = assert!(std::mem::size_of::<TransitEntry>() == 64);

impl TransitEntry {
    #[inline(always)]
    fn packet(&self) -> Packet {
        Packet {
            id: self.id,
            flow: self.flow,
            class: self.class,
            size: self.size,
            arrival: self.arrival,
            deadline: self.deadline,
        }
    }
}

/// The entries of every private hop's queue, with a last-in first-out free list through
/// `next`. An entry is given back when its packet reaches the next hop after its
/// transmission ended (or, failing that, when a later packet enters the hop and finds it so),
/// and the next packet to enter any private hop takes the entry given back last, a line just
/// read: with many flows a packet's entry is then no cache miss, where a ring of its own per
/// hop was one or two.
#[derive(Debug, Default)]
struct TransitPool {
    entries: Vec<TransitEntry>,
    /// The first free entry ([`NIL`]: none).
    free: u32,
}

impl TransitPool {
    fn new() -> TransitPool {
        TransitPool {
            entries: Vec::new(),
            free: NIL,
        }
    }

    /// Entry `index`, without a bounds check; `index` must not be [`NIL`] (the callers test
    /// `tail` and the free list against it; `forward` is not [`NIL`] while its propagation
    /// event is pending, the one event a private hop has then). Every index a private hop
    /// holds (`tail`, `forward`, an entry's `next`) and the free list's are [`NIL`] or were
    /// returned by [`TransitPool::take`], and `entries` never shrinks, so an index that is
    /// not [`NIL`] is in range (checked in debug builds). A packet reads about eight entries on its way
    /// through a private hop; their bounds checks were a compare and a branch each.
    #[inline(always)]
    fn entry(&self, index: u32) -> &TransitEntry {
        debug_assert!(
            (index as usize) < self.entries.len(),
            "entry {index} was never taken"
        );
        // SAFETY: `index` was returned by `take` and `entries` never shrinks (above).
        unsafe { self.entries.get_unchecked(index as usize) }
    }

    /// [`TransitPool::entry`], mutable.
    #[inline(always)]
    fn entry_mut(&mut self, index: u32) -> &mut TransitEntry {
        debug_assert!(
            (index as usize) < self.entries.len(),
            "entry {index} was never taken"
        );
        // SAFETY: as in `entry`.
        unsafe { self.entries.get_unchecked_mut(index as usize) }
    }

    /// A free entry holding `entry`.
    #[inline(always)]
    fn take(&mut self, entry: TransitEntry) -> u32 {
        if self.free != NIL {
            let index = self.free;
            let slot = self.entry_mut(index);
            let next = slot.next;
            *slot = entry;
            self.free = next;
            index
        } else {
            self.entries.push(entry);
            (self.entries.len() - 1) as u32
        }
    }

    /// Returns entry `index` to the free list.
    #[inline(always)]
    fn give_back(&mut self, index: u32) {
        let free = self.free;
        self.entry_mut(index).next = free;
        self.free = index;
    }
}

impl PrivateHop {
    /// The line of a link that is not a private hop.
    fn not_private() -> PrivateHop {
        PrivateHop {
            per_packet: 0,
            per_byte: 0,
            delay: 0,
            busy_done: 0,
            sent_packets: 0,
            sent_bytes: 0,
            tail: NIL,
            forward: NIL,
            alone_max_bytes: 0,
            alone: false,
            divide: false,
            private: false,
            class: 0,
        }
    }

    /// The line of private hop `link`.
    fn new(link: &LinkState) -> PrivateHop {
        PrivateHop {
            per_packet: link.service.per_packet,
            per_byte: link.service.per_byte,
            divide: link.service.divide,
            delay: link.delay,
            private: true,
            ..PrivateHop::not_private()
        }
    }

    /// `ServiceTime::of` of the link.
    #[inline(always)]
    fn service(&self, size: u32) -> TimeNs {
        PreparedService {
            per_packet: self.per_packet,
            per_byte: self.per_byte,
            divide: self.divide,
        }
        .of(size)
    }

    /// The entries in arrival order.
    fn entries<'p>(&self, pool: &'p TransitPool) -> impl Iterator<Item = &'p TransitEntry> + 'p {
        let tail = self.tail;
        let mut at = if tail == NIL { NIL } else { pool.entry(tail).next };
        std::iter::from_fn(move || {
            if at == NIL {
                return None;
            }
            let entry = pool.entry(at);
            at = if at == tail { NIL } else { entry.next };
            Some(entry)
        })
    }

    /// The end of the last transmission (the link is free from then on; 0 when the queue is
    /// empty).
    #[inline(always)]
    fn free_at(&self, pool: &TransitPool) -> TimeNs {
        if self.tail == NIL {
            0
        } else {
            pool.entry(self.tail).end
        }
    }

    /// Whether no packet is in service or queued at `now` (before an arrival at `now`).
    #[inline(always)]
    fn is_idle(&self, now: TimeNs, pool: &TransitPool) -> bool {
        self.tail == NIL || pool.entry(self.tail).end < now
    }

    /// The packets queued and not in service at `now` (a service starting at `now` has not
    /// started: arrivals and marks at a time come before the decisions at that time). Starts
    /// do not decrease along the queue, so these are its last entries.
    fn waiting(&self, now: TimeNs, pool: &TransitPool) -> Backlog {
        let mut backlog = Backlog::default();
        if self.free_at(pool) < now {
            // Every service started before `now` (each starts by the end of the last).
            return backlog;
        }
        for e in self.entries(pool).filter(|e| e.start >= now) {
            backlog.packets += 1;
            backlog.bytes += e.size as u64;
        }
        backlog
    }

    /// The link's snapshot totals with every packet here fully sent.
    fn add_totals(&self, snapshot: &mut LinkSnapshot) {
        snapshot.busy = self.busy_done;
        snapshot.sent_packets = self.sent_packets;
        snapshot.sent_bytes = self.sent_bytes;
    }

    /// Takes back from `snapshot` (totals with every packet here fully sent) what lies after
    /// its time (the last entries: ends do not decrease along the queue).
    fn take_back(&self, now: TimeNs, pool: &TransitPool, snapshot: &mut LinkSnapshot) {
        for e in self.entries(pool).filter(|e| e.end >= now) {
            snapshot.busy -= e.end - e.start.max(now);
            snapshot.sent_packets -= 1;
            snapshot.sent_bytes -= e.size as u64;
            if e.start > now {
                let queued = (e.start - e.arrival.max(now)) as u128;
                snapshot.area_packets -= queued;
                snapshot.area_bytes -= queued * e.size as u128;
            }
        }
    }

    /// The per-class totals of this hop (its link's running backlog integral
    /// `area_packets`) at `now`: none before its first packet, then its class's (the link's
    /// totals, and the sum of delays `area_packets + busy_done`), less what lies after `now`
    /// (as [`PrivateHop::take_back`]), at the class's index.
    fn class_snapshot(&self, now: TimeNs, pool: &TransitPool, area_packets: u128) -> Vec<ClassAtLink> {
        if self.sent_packets == 0 {
            return Vec::new();
        }
        let class_index = self.class as usize;
        let mut classes = vec![ClassAtLink::default(); class_index + 1];
        let class = &mut classes[class_index];
        class.busy = self.busy_done;
        class.sent_packets = self.sent_packets;
        class.delay_sum = area_packets + self.busy_done as u128;
        for e in self.entries(pool).filter(|e| e.end >= now) {
            class.busy -= e.end - e.start.max(now);
            class.sent_packets -= 1;
            class.delay_sum -= (e.end - e.arrival) as u128;
        }
        classes
    }

    /// A packet enters at `now` (`measuring`: within the window; `link`: the hop's link,
    /// touched only when the packet waits): its service start and end follow from Lindley's
    /// recursion (start = max(arrival, previous end), end = start + service), and everything
    /// its transmission end would add to the link's totals is added now;
    /// [`Engine::link_snapshot`] and [`PrivateHop::class_snapshot`] take back what lies after
    /// the snapshot's time. Returns the packet's transmission end and whether it is the only
    /// packet not yet forwarded (then its propagation is to be scheduled).
    #[inline(always)]
    fn pass(
        &mut self,
        packet: Packet,
        now: TimeNs,
        measuring: bool,
        pool: &mut TransitPool,
        link: &mut LinkState,
    ) -> (TimeNs, bool) {
        // (Read before `drop_ended`, which may empty the queue when it ended before now.)
        let free_at = self.free_at(pool);
        self.drop_ended(now, pool);
        if measuring {
            // The backlog right after the enqueue, as the scheduler would have had it.
            if free_at < now {
                self.alone = true;
                raise(&mut self.alone_max_bytes, packet.size);
            } else {
                let waiting = self.waiting(now, pool);
                link.max_packets = link.max_packets.max(waiting.packets + 1);
                link.max_bytes = link.max_bytes.max(waiting.bytes + packet.size as u64);
            }
        }
        let start = now.max(free_at);
        let mut service = self.service(packet.size);
        if start > now {
            if start > CLOCK_LIMIT {
                // Queued behind a transmission ending after the clock's end, whose
                // propagation (an event after the clock's end, see `CLOCK_END`) stops the run
                // with an error: this one takes no time, so that no end grows further. (A
                // start up to the limit plus a service time and a delay, their sum checked
                // when the scenario is read to be at most the limit, fits in 64 bits.)
                service = 0;
            }
            let queued = (start - now) as u128;
            link.area_packets += queued;
            link.area_bytes += queued * packet.size as u128;
        }
        let end = start + service;
        self.busy_done += service;
        self.sent_packets += 1;
        self.sent_bytes += packet.size as u64;
        self.class = packet.class;
        let index = pool.take(TransitEntry {
            id: packet.id,
            arrival: packet.arrival,
            start,
            end,
            deadline: packet.deadline,
            size: packet.size,
            flow: packet.flow,
            next: NIL,
            class: packet.class,
        });
        if self.tail == NIL {
            pool.entry_mut(index).next = index;
        } else {
            pool.entry_mut(index).next = pool.entry(self.tail).next;
            pool.entry_mut(self.tail).next = index;
        }
        self.tail = index;
        let only = self.forward == NIL;
        if only {
            self.forward = index;
        }
        (end, only)
    }

    /// The next packet to reach the next hop (the first one not yet forwarded) at `now`, and
    /// when the one after it will, if any. Entries forwarded whose transmission ended before
    /// `now` are given back to the pool now (no later snapshot needs them), while their lines
    /// are in the cache: the next packet to enter any private hop takes one of them.
    #[inline(always)]
    fn forward_next(&mut self, now: TimeNs, pool: &mut TransitPool) -> (Packet, Option<TimeNs>) {
        debug_assert!(self.forward != NIL, "a propagation event has a packet");
        let entry = pool.entry(self.forward);
        let packet = entry.packet();
        let next = if self.forward == self.tail {
            self.forward = NIL;
            None
        } else {
            self.forward = entry.next;
            Some(pool.entry(self.forward).end + self.delay)
        };
        self.drop_ended(now, pool);
        (packet, next)
    }

    /// Gives back the first entries while they are forwarded and their transmission ended
    /// before `now` (they matter to no later snapshot).
    #[inline(always)]
    fn drop_ended(&mut self, now: TimeNs, pool: &mut TransitPool) {
        while self.tail != NIL {
            let head = pool.entry(self.tail).next;
            if head == self.forward || pool.entry(head).end >= now {
                break;
            }
            if head == self.tail {
                self.tail = NIL;
            } else {
                pool.entry_mut(self.tail).next = pool.entry(head).next;
            }
            pool.give_back(head);
        }
    }

    /// Transmissions ending at or after `now` (not yet ended when a run halts at `now`).
    fn unfinished(&self, now: TimeNs, pool: &TransitPool) -> u64 {
        self.entries(pool).filter(|e| e.end >= now).count() as u64
    }
}

/// The links of a source's path, in place when there are at most [`LinkPath::INLINE`] (no
/// pointer to follow when a packet moves on to its next hop), boxed otherwise. The first
/// [`LinkPath::INLINE`] links are in place in either case, so that a hop among them is read
/// without asking where the path is ([`LinkPath::first`], [`LinkPath::hop`]).
struct LinkPath {
    len: u32,
    inline: [u32; LinkPath::INLINE],
    spilled: Box<[u32]>,
}

impl LinkPath {
    const INLINE: usize = 5;

    fn new(links: &[usize]) -> LinkPath {
        let mut path = LinkPath {
            len: links.len() as u32,
            inline: [0; LinkPath::INLINE],
            spilled: Box::default(),
        };
        for (slot, &l) in path.inline.iter_mut().zip(links) {
            *slot = l as u32;
        }
        if links.len() > LinkPath::INLINE {
            path.spilled = links.iter().map(|&l| l as u32).collect();
        }
        path
    }

    /// The number of links.
    #[inline(always)]
    fn len(&self) -> usize {
        self.len as usize
    }

    /// The first link (a path has at least one).
    #[inline(always)]
    fn first(&self) -> usize {
        debug_assert!(self.len > 0, "a source's path has a link");
        self.inline[0] as usize
    }

    /// The link at position `hop`, if the path has one there.
    #[inline(always)]
    fn hop(&self, hop: usize) -> Option<usize> {
        if hop >= self.len as usize {
            None
        } else if hop < LinkPath::INLINE {
            Some(self.inline[hop] as usize)
        } else {
            Some(self.spilled[hop] as usize)
        }
    }
}

impl std::ops::Deref for LinkPath {
    type Target = [u32];

    #[inline(always)]
    fn deref(&self) -> &[u32] {
        if self.len as usize <= LinkPath::INLINE {
            &self.inline[..self.len as usize]
        } else {
            &self.spilled
        }
    }
}

/// A source's state. What a packet reads comes first (`repr(C)`, from a line boundary): `path`,
/// `flow`, whether it is a TCP source or shaped, and its packets received in the current bin
/// in the first cache line (a packet moving on to its next hop or delivered reads only that
/// line), the pending packet in the second, the generator's per-packet fields in the next
/// two for a Poisson source (256 bytes in all); the fields of TCP, the
/// shaper, lateness and echoes follow.
#[repr(C, align(64))]
struct SourceState {
    path: LinkPath,
    flow: u32,
    class: u8,
    dscp: u8,
    /// Whether `tcp` is set (read per packet here, off the box's line).
    closed_loop: bool,
    /// Whether `shaper` is set.
    shaped: bool,
    /// Packets and bytes received in the current bin, added to the flow's series when the bin
    /// ends (see [`Engine::close_bin`]): in the line a delivery reads anyway, where an array
    /// of its own cost a cache miss per packet with many flows.
    bin_packets: u64,
    bin_bytes: u64,
    /// When the pending packet was generated (before shaping).
    generated: TimeNs,
    /// No packet generated at or after this time.
    stop: TimeNs,
    /// The next packet, its `time` the release time (entry into the network).
    pending: Emission,
    deadline: Option<TimeNs>,
    generator: Generator,
    tcp: Option<Box<TcpState>>,
    /// The source's (σ, ρ) shaper.
    shaper: Option<Box<TokenBucket>>,
    /// The lateness measure of the source's `lateness` table, applied on its first link.
    lateness: Option<Box<LatenessMeter>>,
    /// Open-loop echoes: the links they cross back (empty: none, or a fixed delay).
    echo_path: Box<[u32]>,
    /// Open-loop echoes over a fixed return delay instead of links.
    echo_delay: Option<TimeNs>,
}

// The layout the comment above describes.
const _: () = {
    assert!(std::mem::offset_of!(SourceState, bin_bytes) + 8 <= 64);
    assert!(std::mem::offset_of!(SourceState, deadline) + 16 <= 128);
    assert!(std::mem::offset_of!(SourceState, generator) == 128);
};

/// A TCP source's connection and the engine's bookkeeping around it.
struct TcpState {
    connection: TcpConnection,
    header: u32,
    /// Links the ACKs cross (empty with a fixed `ack_delay`).
    ack_path: Box<[u32]>,
    ack_delay: TimeNs,
    /// ACKs travelling over the fixed delay: (arrival time, acknowledgement).
    ack_pipe: VecDeque<(TimeNs, Ack)>,
    /// ACKs with SACK blocks on `ack_path`, oldest first, by number (the ACK packet's slot
    /// carries the number in `len`; an ACK without blocks has number 0 and no entry). ACKs of
    /// one source cross the links in order, so an arriving number pops every older entry
    /// (those ACKs were dropped).
    sack_in_flight: VecDeque<(u32, Ack)>,
    /// Number of the last ACK with SACK blocks sent on `ack_path`.
    sack_numbered: u32,
    /// Time of the earliest pending retransmission-timer event.
    timer_event: Option<TimeNs>,
    /// Time of the earliest pending delayed-ACK event.
    delayed_ack_event: Option<TimeNs>,
    at_warmup: TcpCounters,
    at_end: Option<TcpCounters>,
    /// Completion times recorded before the window opened are not kept (see `write`).
    series: Vec<TcpSample>,
    /// ACK packets dropped on the return path.
    acks_dropped: u64,
}

/// A TCP sender's state at a bin boundary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpSample {
    /// Time, ns.
    pub time: TimeNs,
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Slow-start threshold, bytes (`u64::MAX` before the first loss).
    pub ssthresh: u64,
    /// Smoothed RTT, ns (0 before the first sample).
    pub srtt: u64,
    /// Retransmission timeout, ns.
    pub rto: u64,
    /// Bytes in flight.
    pub flight: u64,
    /// Bytes delivered in order to the receiver so far.
    pub delivered: u64,
}

/// The raw TCP outcome of one source in one replication.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TcpRaw {
    /// Counters at the start of the measurement window.
    pub at_warmup: TcpCounters,
    /// Counters at its end.
    pub at_end: TcpCounters,
    /// Completion times of the transfers written in the window, ns.
    pub completion_times: Vec<u64>,
    /// Transfers written in the window and not completed by the end of the run.
    pub unfinished: u64,
    /// ACK packets dropped on the return path (whole run).
    pub acks_dropped: u64,
    /// Samples at every bin boundary.
    pub series: Vec<TcpSample>,
}

/// Per-flow time series: received packets and bytes per bin (all packets, including warm-up).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowSeries {
    /// Packets received per bin.
    pub packets: Vec<u64>,
    /// Bytes received per bin.
    pub bytes: Vec<u64>,
}

/// Raw outcome of one replication, before reduction to results.
pub struct RawReplication {
    /// Replication index.
    pub replication: u32,
    /// Stream seed of each source.
    pub stream_seeds: Vec<u64>,
    /// Per source.
    pub flows: Vec<Accumulator>,
    /// Per source: measured packets still in the network at the end.
    pub in_flight: Vec<u64>,
    /// Per source.
    pub flow_series: Vec<FlowSeries>,
    /// Per class present: (class, accumulator), by class.
    pub classes: Vec<(u8, Accumulator)>,
    /// Per link: snapshot at the start and at the end of the window.
    pub link_window: Vec<(LinkSnapshot, LinkSnapshot)>,
    /// Per link: largest backlog in the window (packets, bytes).
    pub link_max_backlog: Vec<(u64, u64)>,
    /// Per link: snapshots at every bin boundary.
    pub link_series: Vec<Vec<LinkSnapshot>>,
    /// Per link: per-class totals at the start and at the end of the window (index = class).
    pub link_class_window: Vec<(Vec<ClassAtLink>, Vec<ClassAtLink>)>,
    /// Per link: its conditioner's counters per meter at the start and at the end of the
    /// window (empty without a conditioner).
    pub link_meter_window: Vec<(Vec<ColourCounters>, Vec<ColourCounters>)>,
    /// Per link: each class's busy time at every bin boundary, ns.
    pub link_class_busy_series: Vec<Vec<Vec<u64>>>,
    /// Per link: times the scheduler returned nothing while backlogged and the link was free.
    pub link_idle_while_backlogged: Vec<u64>,
    /// Per link: packets left queued at the end.
    pub link_left_queued: Vec<u64>,
    /// Per link: the discipline's own counters at the end.
    pub discipline_counters: Vec<Vec<(&'static str, u64)>>,
    /// Per source: its TCP outcome (`None` for open-loop sources).
    pub tcp: Vec<Option<TcpRaw>>,
    /// Per source: the lateness counts of its `lateness` table (`None` without one).
    pub lateness: Vec<Option<LatenessCounts>>,
    /// Per source: the discipline's own per-flow counters at the first link of its path that
    /// keeps any (DWCS's per-stream counts; empty where none does).
    pub flow_discipline_counters: Vec<Vec<(&'static str, u64)>>,
    /// Start of the measurement window (the warm-up), ns.
    pub window_start: TimeNs,
    /// End of the window, ns.
    pub window_end: TimeNs,
    /// Time of the last event, ns.
    pub end_time: TimeNs,
    /// Events processed.
    pub events: u64,
    /// Packets that entered the network (measured or not).
    pub packets: u64,
}

struct Engine<'s> {
    scenario: &'s Scenario,
    heap: EventQueue,
    /// Each source's next packet.
    arrivals: SourceClock,
    seq: u64,
    links: Vec<LinkState>,
    /// Per link: what a packet entering it and its propagation touch when it is a private hop
    /// (see [`PrivateHop`]; `private` is false for the other links), one line each.
    hops: Vec<PrivateHop>,
    /// The entries of the private hops' queues.
    transit: TransitPool,
    sources: Vec<SourceState>,
    slab: Slab,
    /// The packets a scheduler or a link's admission dropped in the event being handled;
    /// empty between events (`handle_drops` empties it after each use).
    drops: Vec<Dropped>,
    flows: Vec<Accumulator>,
    flow_series: Vec<FlowSeries>,
    /// The sources with packets received in the current bin (`SourceState::bin_packets`).
    bin_touched: Vec<u32>,
    class_index: [u16; 256],
    /// Whether packet classes can differ within a source (trace replay): then per-class
    /// statistics are accumulated live; otherwise they are merged from the flows' at the end
    /// and only the per-class jitter (which depends on reception order) is kept live.
    live_classes: bool,
    /// Whether any open-loop source has a return path (`ack_path`, `ack_delay`): only then
    /// does a delivery look for an echo to send.
    echoes: bool,
    classes: Vec<(u8, Accumulator)>,
    class_jitter: Vec<(u8, Jitter)>,
    /// The event being handled is still at the top of the heap (see `push_event`).
    top_pending: bool,
    bin_index: usize,
    bin_end: TimeNs,
    warmup: TimeNs,
    measuring: bool,
    window_end: Option<TimeNs>,
    /// Packets after which the window closes (`u64::MAX`: a duration run).
    packet_budget: u64,
    generation_over: bool,
    halt: bool,
    /// Whether the clock's end ([`CLOCK_END`]) is in the heap.
    clock_end_queued: bool,
    /// Time-series bins begun after the window closed (the drain's; at most [`MAX_BINS`]).
    drain_bins: u64,
    bin: TimeNs,
    packets: u64,
    events: u64,
    now: TimeNs,
    /// Per-packet rows for `schedlab run --packets` (`None`: not kept).
    packet_log: Option<PacketLog>,
    /// Whether any source has a lateness meter (the service-start hook is skipped otherwise).
    metering: bool,
    /// Whether to prefetch per-flow state ahead of the packets (see [`PREFETCH_ABOVE`]).
    prefetching: bool,
    /// While prefetching: delays delivered and not yet in their flow's histogram (by source;
    /// see [`Engine::defer_delay`]).
    deferred_delays: DeferredDelays,
    /// Transmission-end events of private hops that were not needed (see [`PrivateHop`]),
    /// counted in [`RawReplication::events`] as the events they stand for.
    elided_events: u64,
    /// The link every packet's path ends at, when its packets are delivered at their
    /// transmission end (`u32::MAX`: none; see [`sink_link`]).
    sink: u32,
    /// The latest delivery time of a packet delivered at its transmission end.
    last_delivery: TimeNs,
    /// The link whose pending transmission end is kept in `slot_tx_end` instead of the heap
    /// (`u32::MAX`: none): the link every path ends at, or the last link of the first
    /// source's path. Most events of a packet then meet a heap one event smaller, and the
    /// link's transmission ends neither sift down nor up.
    slot_link: u32,
    /// The key (`time << 64 | seq`, as an [`Event`]'s) of `slot_link`'s pending transmission
    /// end ([`NEVER`]: none, or it is the event being handled).
    slot_tx_end: u128,
    /// Propagation events in increasing `(time, seq)` order: one whose key is larger than the
    /// back's joins the back, the others go to the heap (see `push_propagated`). A packet's
    /// propagation then costs a push and a pop at the ends of a queue instead of a sift up
    /// and a sift down in the heap. It starts small and grows to the most events in flight,
    /// so that its ring stays in the cache (a ring of room for every link's events would be
    /// written all over, a line after another).
    propagations: EventFifo,
    /// Whether `propagations` is used (off in tests that compare it with the heap alone).
    ordered_propagations: bool,
    /// Tests: each link's last arrival time, and how many packets reached a link at the same
    /// nanosecond as the one before them (see `shortcuts_change_no_statistic`).
    #[cfg(test)]
    arrival_ties: (Vec<TimeNs>, u64),
}

const NO_CLASS: u16 = u16::MAX;

/// What the per-packet path of a run may meet, as constants: the engine's loop
/// ([`Engine::run_as`] and the event handlers it calls) is compiled once per implementation,
/// and a feature that a constant rules out costs its loop nothing (no test of its flag, and
/// less code for the compiler to keep registers for). [`Engine::run`] chooses the
/// implementation from the run's options, once; the handlers are the same code in each.
pub(crate) trait PathFeatures {
    /// Whether a packet may meet any of: a closed-loop (TCP) source, a shaper, an echo, a
    /// conditioner or drop policy, a link's loss or sojourn limit, a lateness meter, per-class
    /// statistics kept live (trace classes), the packet log, and propagation events kept out of
    /// the FIFO (a test switch). When false, none of them is tested per packet.
    const ANY: bool;
    /// Whether the run may prefetch per-flow state (see [`PREFETCH_ABOVE`]; then tested per
    /// packet).
    const PREFETCH: bool;
}

/// Whether a run with the engine's `prefetching` flag prefetches on the loop of `F`: on the
/// lean loops known from `F` alone ([`Engine::run`] takes [`LeanPrefetchingPath`] only when
/// `prefetching` is set), tested on the others.
#[inline(always)]
fn prefetches<F: PathFeatures>(prefetching: bool) -> bool {
    F::PREFETCH && (!F::ANY || prefetching)
}

/// Every feature, each tested per packet: closed-loop, shaped, conditioned… runs.
pub(crate) enum AnyPath {}

impl PathFeatures for AnyPath {
    const ANY: bool = true;
    const PREFETCH: bool = true;
}

/// Open-loop sources over plain links without prefetching (few flows): the ns-2 scenario
/// with 10 flows, the simulator benchmark.
pub(crate) enum LeanPath {}

impl PathFeatures for LeanPath {
    const ANY: bool = false;
    const PREFETCH: bool = false;
}

/// [`LeanPath`] with prefetching (many flows): the ns-2 scenario with 1,000 flows.
pub(crate) enum LeanPrefetchingPath {}

impl PathFeatures for LeanPrefetchingPath {
    const ANY: bool = false;
    const PREFETCH: bool = true;
}

/// The scheduler calls of the per-packet path (`arrive`, `decide`): a direct call for DRR (the
/// thesis's discipline, the most used one in `experiments/` after EWRR and VD, and the
/// bottleneck of the ns-2 scenario the simulator is benchmarked on), the registry's match over
/// every discipline for the others. A test of one variant and a direct call replace the match's jump table and its
/// argument shuffling: on the ns-2 scenario with 10 flows, 23 instructions a packet fewer of
/// the 66 on the match's lines. The same calls as through [`AnyScheduler`]. (With FIFO too,
/// whose calls LLVM then inlined into the engine's loop, 14 more instructions a packet on the
/// ns-2 scenario than without this function.) The variant is known from the link's `drr` flag
/// (one byte in the link's first lines) rather than from the enum's discriminant, which the
/// compiler encodes in a niche of the variants' fields: a 16-byte compare at each of the four
/// calls of a packet.
///
/// # Safety
/// `drr` is true only if `scheduler` is [`AnyScheduler::Drr`] (a link's `drr` and `scheduler`).
#[inline(always)]
unsafe fn scheduler_enqueue(
    drr: bool,
    scheduler: &mut AnyScheduler,
    packet: Packet,
    now: TimeNs,
    drops: &mut Vec<Dropped>,
) {
    if drr {
        // SAFETY: the caller's contract.
        unsafe { as_drr(scheduler) }.enqueue(packet, now, drops)
    } else {
        scheduler.enqueue(packet, now, drops)
    }
}

/// [`scheduler_enqueue`]'s counterpart for `dequeue`.
///
/// # Safety
/// As for [`scheduler_enqueue`].
#[inline(always)]
unsafe fn scheduler_dequeue(
    drr: bool,
    scheduler: &mut AnyScheduler,
    now: TimeNs,
    drops: &mut Vec<Dropped>,
) -> Option<Packet> {
    if drr {
        // SAFETY: the caller's contract.
        unsafe { as_drr(scheduler) }.dequeue(now, drops)
    } else {
        scheduler.dequeue(now, drops)
    }
}

/// [`scheduler_enqueue`]'s counterpart for `backlog`.
///
/// # Safety
/// As for [`scheduler_enqueue`].
#[inline(always)]
unsafe fn scheduler_backlog(drr: bool, scheduler: &mut AnyScheduler) -> Backlog {
    if drr {
        // SAFETY: the caller's contract.
        unsafe { as_drr(scheduler) }.backlog()
    } else {
        scheduler.backlog()
    }
}

/// The DRR scheduler in `scheduler`, without testing the variant.
///
/// # Safety
/// `scheduler` is [`AnyScheduler::Drr`].
#[inline(always)]
unsafe fn as_drr(scheduler: &mut AnyScheduler) -> &mut Drr {
    match scheduler {
        AnyScheduler::Drr(s) => s,
        // SAFETY: the caller's contract.
        _ => unsafe { std::hint::unreachable_unchecked() },
    }
}

/// Every source has a path, and every link a source's path, echo path or ACK path names is
/// one of the scenario's: the engine reads links by these indices without bounds checks
/// ([`element`]). A scenario loaded from a file has passed this already (the loader rejects an
/// empty path and an unknown link by name); a [`Scenario`] built in code is checked here, once
/// a replication.
fn check_link_indices(scenario: &Scenario) -> Result<(), ScenarioError> {
    let links = scenario.links.len();
    for (index, source) in scenario.sources.iter().enumerate() {
        let named = |key: &str| format!("sources[{index}] ({}).{key}", source.name);
        if source.path.is_empty() {
            return Err(ConfigError::new(named("path"), "[]", "must name at least one link").into());
        }
        let ack_path = match source.transport.as_ref().map(|transport| &transport.ack_return) {
            Some(AckReturn::Path(path)) => Some(("ack_path", path)),
            _ => None,
        };
        let echo_path = match &source.echo {
            Some(AckReturn::Path(path)) => Some(("ack_path", path)),
            _ => None,
        };
        for (key, path) in [("path", &source.path)]
            .into_iter()
            .chain(ack_path)
            .chain(echo_path)
        {
            if let Some(&unknown) = path.iter().find(|&&l| l >= links) {
                return Err(ConfigError::new(
                    named(key),
                    format!("{path:?}"),
                    format!("link index {unknown} is not one of the scenario's {links} links"),
                )
                .into());
            }
        }
    }
    Ok(())
}

/// `items[index]` without a bounds check, for the indices a packet carries through the
/// engine's per-packet path: a source's index (the source clock's, or a slot's `source`) in
/// `sources` and `flows` (both one entry a source), a link's (from a source's path, an event's
/// tag, `slot_link` or `sink`) in `links` and `hops` (both one entry a link). Paths name links
/// that exist ([`check_link_indices`], run by [`Engine::new`]) and the tables never shrink, so
/// these are in range; a packet's handlers read each table several times, and each bounds
/// check was a compare and a branch (checked in debug builds).
///
/// # Safety
/// `index < items.len()`.
#[inline(always)]
unsafe fn element<T>(items: &[T], index: usize) -> &T {
    debug_assert!(index < items.len(), "index {index} of {}", items.len());
    // SAFETY: the caller's contract.
    unsafe { items.get_unchecked(index) }
}

/// [`element`], mutable.
///
/// # Safety
/// `index < items.len()`.
#[inline(always)]
unsafe fn element_mut<T>(items: &mut [T], index: usize) -> &mut T {
    debug_assert!(index < items.len(), "index {index} of {}", items.len());
    // SAFETY: the caller's contract.
    unsafe { items.get_unchecked_mut(index) }
}

/// Per-source state (the source, a link, the flow's statistics) above which the engine
/// prefetches a flow's state ahead of its packets: about a second-level cache. Below it the
/// state stays in the caches and the prefetch instructions would only add work (about 7 % more
/// instructions per packet with 10 flows on the ns-2 scenario).
const PREFETCH_ABOVE: usize = 512 * 1024;

impl<'s> Engine<'s> {
    fn new(scenario: &'s Scenario, replication: u32) -> Result<(Engine<'s>, Vec<u64>), ScenarioError> {
        check_link_indices(scenario)?;
        crate::scenario::check_clock(scenario)?;
        let run = &scenario.run;
        let mut links = Vec::with_capacity(scenario.links.len());
        for (index, link) in scenario.links.iter().enumerate() {
            let scheduler = Box::new(link.build_scheduler(index)?);
            let drr = matches!(*scheduler, AnyScheduler::Drr(_));
            links.push(LinkState {
                service: PreparedService::new(link.service),
                max_sojourn: link.max_sojourn.unwrap_or(TimeNs::MAX),
                admission: link.conditioner.is_some() || link.drop_policy.is_some(),
                drop_policy: link.build_drop_policy(),
                conditioner: link.conditioner.clone(),
                delay: link.delay,
                scheduler,
                drr,
                backlog: Backlog::default(),
                busy: false,
                in_service: Packet::new(0, 0, 0, 0),
                tx_start: 0,
                decision_seq: NO_DECISION,
                decision_at: 0,
                pipe: VecDeque::new(),
                busy_done: 0,
                last_change: 0,
                area_packets: 0,
                area_bytes: 0,
                sent_packets: 0,
                sent_bytes: 0,
                dropped: [0; DropReason::COUNT],
                classes: Vec::new(),
                classes_at_warmup: Vec::new(),
                classes_at_end: Vec::new(),
                meters_at_warmup: Vec::new(),
                meters_at_end: Vec::new(),
                class_busy_series: Vec::new(),
                max_packets: 0,
                max_bytes: 0,
                idle_while_backlogged: 0,
                series: Vec::new(),
                at_warmup: LinkSnapshot::default(),
                at_end: None,
                loss_threshold: (link.loss * 2f64.powi(64)) as u64,
                loss_rng: source_rng(run.seed, replication as u64, LOSS_STREAM + index as u64),
                lost: 0,
            });
        }
        let generation_end = match run.length {
            RunLength::Duration(d) => d,
            RunLength::Packets(_) => u64::MAX,
        };
        let mut seeds = Vec::with_capacity(scenario.sources.len());
        let mut sources = Vec::with_capacity(scenario.sources.len());
        for (index, source) in scenario.sources.iter().enumerate() {
            seeds.push(stream_seed(run.seed, replication as u64, index as u64));
            let rng = source_rng(run.seed, replication as u64, index as u64);
            sources.push(SourceState {
                generator: Generator::new(&source.arrivals, source.size.clone(), source.start, rng)
                    .with_fragmentation(source.fragmentation),
                shaper: source.shaper.map(|s| Box::new(TokenBucket::new(s.sigma, s.rho))),
                shaped: source.shaper.is_some(),
                closed_loop: source.transport.is_some(),
                bin_packets: 0,
                bin_bytes: 0,
                pending: Emission {
                    time: 0,
                    size: 0,
                    class: None,
                    deadline: None,
                },
                generated: 0,
                stop: source.stop.unwrap_or(u64::MAX).min(generation_end),
                flow: source.flow,
                class: source.class,
                dscp: source.dscp,
                deadline: source.deadline,
                path: LinkPath::new(&source.path),
                lateness: source.lateness.map(|spec| Box::new(LatenessMeter::new(spec))),
                echo_path: match &source.echo {
                    Some(AckReturn::Path(links)) => links.iter().map(|&l| l as u32).collect(),
                    _ => Box::default(),
                },
                echo_delay: match source.echo {
                    Some(AckReturn::Delay(delay)) => Some(delay),
                    _ => None,
                },
                tcp: source.transport.as_ref().map(|transport| {
                    let bulk = matches!(source.arrivals, crate::traffic::ArrivalModel::Bulk);
                    let (ack_path, ack_delay) = match &transport.ack_return {
                        AckReturn::Path(links) => (links.iter().map(|&l| l as u32).collect(), 0),
                        AckReturn::Delay(delay) => (Box::default(), *delay),
                    };
                    Box::new(TcpState {
                        connection: TcpConnection::new(transport.tcp, bulk),
                        header: transport.tcp.header,
                        ack_path,
                        ack_delay,
                        ack_pipe: VecDeque::new(),
                        sack_in_flight: VecDeque::new(),
                        sack_numbered: 0,
                        timer_event: None,
                        delayed_ack_event: None,
                        at_warmup: TcpCounters::default(),
                        at_end: None,
                        series: Vec::new(),
                        acks_dropped: 0,
                    })
                }),
            });
        }
        let n = sources.len();
        let mut engine = Engine {
            scenario,
            heap: EventQueue::with_capacity(4 * links.len() + 8),
            arrivals: SourceClock::new(n),
            seq: 0,
            links,
            hops: Vec::new(),
            transit: TransitPool::new(),
            sources,
            slab: Slab::default(),
            drops: Vec::with_capacity(64),
            flows: (0..n).map(|_| Accumulator::default()).collect(),
            flow_series: vec![FlowSeries::default(); n],
            bin_touched: Vec::new(),
            class_index: [NO_CLASS; 256],
            live_classes: scenario
                .sources
                .iter()
                .any(|s| matches!(s.arrivals, crate::traffic::ArrivalModel::Trace { .. })),
            echoes: scenario.sources.iter().any(|s| s.echo.is_some()),
            classes: Vec::new(),
            class_jitter: Vec::new(),
            top_pending: false,
            bin_index: 0,
            bin_end: run.bin,
            warmup: run.warmup,
            measuring: run.warmup == 0,
            window_end: None,
            packet_budget: match run.length {
                RunLength::Packets(p) => p,
                RunLength::Duration(_) => u64::MAX,
            },
            generation_over: false,
            halt: false,
            clock_end_queued: false,
            drain_bins: 0,
            bin: run.bin,
            packets: 0,
            events: 0,
            now: 0,
            packet_log: None,
            metering: scenario.sources.iter().any(|s| s.lateness.is_some()),
            prefetching: false,
            deferred_delays: DeferredDelays::default(),
            elided_events: 0,
            sink: sink_link(scenario).map_or(u32::MAX, |l| l as u32),
            last_delivery: 0,
            slot_link: sink_link(scenario)
                .or_else(|| scenario.sources.first().and_then(|s| s.path.last().copied()))
                .map_or(u32::MAX, |l| l as u32),
            slot_tx_end: NEVER,
            propagations: EventFifo::with_capacity(16),
            ordered_propagations: true,
            #[cfg(test)]
            arrival_ties: (vec![TimeNs::MAX; scenario.links.len()], 0),
        };
        engine.hops = engine
            .links
            .iter()
            .zip(private_hops(scenario))
            .map(|(link, private)| {
                if private {
                    PrivateHop::new(link)
                } else {
                    PrivateHop::not_private()
                }
            })
            .collect();
        let per_source = std::mem::size_of::<SourceState>()
            + std::mem::size_of::<LinkState>()
            + std::mem::size_of::<Accumulator>();
        engine.prefetching = n.saturating_mul(per_source) > PREFETCH_ABOVE;
        if run.warmup > 0 {
            engine.push(run.warmup, MARK_WARMUP, 0);
        }
        if let RunLength::Duration(d) = run.length {
            engine.push(d, MARK_END, 0);
        }
        engine.push(run.bin, TICK, 0);
        if !matches!(run.length, RunLength::Duration(d) if d <= CLOCK_LIMIT) {
            engine.queue_clock_end();
        }
        for index in 0..n {
            engine.schedule_source::<AnyPath>(index);
            if engine.sources[index]
                .tcp
                .as_ref()
                .is_some_and(|t| t.connection.bulk)
            {
                let start = scenario.sources[index].start;
                engine.push(start, TCP_START, index);
            }
            if let Some(stop) = scenario.sources[index].stop {
                if engine.sources[index].tcp.is_some() {
                    engine.push(stop, TCP_STOP, index);
                }
            }
        }
        Ok((engine, seeds))
    }

    #[inline(always)]
    fn push(&mut self, time: TimeNs, kind: u32, index: usize) {
        let seq = self.seq;
        self.seq += 1;
        self.push_event(Event::new(time, seq, (kind << KIND_SHIFT) | index as u32));
    }

    /// Schedules link `l`'s next propagation event at `time`: at the back of `propagations`
    /// if it comes after every event there, else in the heap.
    #[inline(always)]
    fn push_propagated<F: PathFeatures>(&mut self, time: TimeNs, l: usize) {
        let seq = self.seq;
        self.seq += 1;
        let event = Event::new(time, seq, (PROPAGATED << KIND_SHIFT) | l as u32);
        if (!F::ANY || self.ordered_propagations) && self.propagations.back_key() < event.key() {
            self.propagations.push_back(event);
        } else {
            self.push_event(event);
        }
    }

    /// Pushes a decision for link `l` at `time`.
    #[inline]
    fn push_decision(&mut self, time: TimeNs, l: usize) {
        let seq = self.seq | DECISION_PHASE;
        self.seq += 1;
        self.push_event(Event::new(time, seq, (DECIDE << KIND_SHIFT) | l as u32));
        let link = &mut self.links[l];
        link.decision_seq = seq;
        link.decision_at = time;
    }

    /// Pushes `event`. While the event being handled is still at the top of the heap, the new
    /// one replaces it (one sift-down instead of a pop and a push).
    #[inline]
    fn push_event(&mut self, event: Event) {
        if self.top_pending {
            self.top_pending = false;
            self.heap.replace_top(event);
        } else {
            self.heap.push(event);
        }
    }

    /// Removes the event being handled if no push replaced it.
    #[inline]
    fn settle(&mut self) {
        if self.top_pending {
            self.top_pending = false;
            self.heap.pop();
        }
    }

    /// Whether an arrival-phase event at a time ≤ `now` is pending (besides the one being
    /// handled). Arrival-phase events sort before decisions at the same time, so only the
    /// smallest remaining event of each queue matters: the sources' clock, the slot link's
    /// transmission end, the front of `propagations`, and the heap's root (or one of its
    /// children while the root is the event being handled).
    #[inline]
    fn arrival_pending(&self, now: TimeNs) -> bool {
        // (A NEVER key's time is `u64::MAX`, after every event's.)
        let (_, next_packet) = self.arrivals.earliest();
        if SourceClock::time_of(next_packet) <= now || SourceClock::time_of(self.slot_tx_end) <= now {
            return true;
        }
        // (Propagations are arrival-phase events.)
        if SourceClock::time_of(self.propagations.front_key()) <= now {
            return true;
        }
        let heap = self.heap.as_slice();
        let blocks = |e: &Event| e.time() <= now && e.seq() & DECISION_PHASE == 0;
        if self.top_pending {
            heap.get(1).is_some_and(blocks) || heap.get(2).is_some_and(blocks)
        } else {
            heap.first().is_some_and(blocks)
        }
    }

    /// Draws the next packet of `index` and schedules its entry into the network (or records
    /// that the source has no more).
    #[inline(always)]
    fn schedule_source<F: PathFeatures>(&mut self, index: usize) {
        if self.generation_over {
            self.arrivals.clear(index);
            return;
        }
        // SAFETY: `index` is a source's index (see `element`).
        let source = unsafe { element_mut(&mut self.sources, index) };
        let Some(emission) = source.generator.next_packet() else {
            self.arrivals.clear(index);
            return;
        };
        if emission.time >= source.stop {
            self.arrivals.clear(index);
            return;
        }
        source.generated = emission.time;
        // (`shaped` first: an unshaped source's packets do not read the shaper's line.)
        let release = if F::ANY && source.shaped {
            match &mut source.shaper {
                Some(shaper) => shaper.release(emission.time, emission.size),
                None => emission.time,
            }
        } else {
            emission.time
        };
        source.pending = Emission {
            time: release,
            ..emission
        };
        let seq = self.seq;
        self.seq += 1;
        self.arrivals.set(index, release, seq);
        // The clock's earliest source changes only here (or when a source ends): the next
        // packet's statistics line is asked for once, as soon as its source is known.
        if prefetches::<F>(self.prefetching) {
            let (next, key) = self.arrivals.earliest();
            if key != NEVER {
                self.prefetch_source(next);
            }
        }
    }

    /// The fraction of this replication done: simulated time over the duration, or packets
    /// generated over the packet budget (the drain after the window is not counted).
    fn fraction_done(&self) -> f64 {
        match self.scenario.run.length {
            RunLength::Duration(d) if d > 0 => (self.now as f64 / d as f64).min(1.0),
            RunLength::Packets(p) if p > 0 => (self.packets as f64 / p as f64).min(1.0),
            _ => 1.0,
        }
    }

    /// Runs the replication with the loop of the features it uses (see [`PathFeatures`]).
    fn run(&mut self, watch: &mut dyn FnMut(f64) -> bool) -> Result<(), ScenarioError> {
        match (self.lean_path(), self.prefetching) {
            (true, false) => self.run_as::<LeanPath>(watch),
            (true, true) => self.run_as::<LeanPrefetchingPath>(watch),
            (false, _) => self.run_as::<AnyPath>(watch),
        }
    }

    /// The clock's end event comes (see [`CLOCK_END`]): it is taken off the heap, and the run
    /// goes on (to stop at once) if no event is left but a source's stale arrival after its
    /// generation ended; otherwise the earliest event left would pass the clock's end, and the
    /// run stops with an error that names it (what it measured is not reported: the run did
    /// not finish).
    #[cold]
    #[inline(never)]
    fn clock_end(&mut self) -> Result<(), ScenarioError> {
        self.heap.pop();
        self.clock_end_queued = false;
        let (source, next_packet) = self.arrivals.earliest();
        let arrival = if self.generation_over { NEVER } else { next_packet };
        // (Bins go on only while something else is pending: that is what to name.)
        let first = self
            .heap
            .as_slice()
            .iter()
            .filter(|e| e.tag >> KIND_SHIFT != TICK)
            .min_by_key(|e| e.key())
            .copied();
        let heap = first.map_or(NEVER, |e| e.key());
        let earliest = arrival
            .min(self.slot_tx_end)
            .min(self.propagations.front_key())
            .min(heap);
        if earliest == NEVER {
            return match self.heap.peek() {
                None => Ok(()),
                Some(tick) => Err(ScenarioError::Run(past_clock_end(
                    &self.describe_event(TICK, 0),
                    tick.time(),
                ))),
            };
        }
        let what = if earliest == self.slot_tx_end {
            self.describe_event(TX_END, self.slot_link as usize)
        } else if earliest == arrival {
            let config = &self.scenario.sources[source];
            format!(
                "source {:?} (flow {}): its next packet would enter the network",
                config.name, config.flow
            )
        } else if earliest == heap {
            let tag = first.expect("the heap's earliest").tag;
            self.describe_event(tag >> KIND_SHIFT, (tag & INDEX_MASK) as usize)
        } else {
            let tag = self
                .propagations
                .pop_front()
                .expect("the earliest propagation")
                .tag;
            self.describe_event(PROPAGATED, (tag & INDEX_MASK) as usize)
        };
        Err(ScenarioError::Run(past_clock_end(
            &what,
            SourceClock::time_of(earliest),
        )))
    }

    /// Queues the clock's end ([`CLOCK_END`]).
    fn queue_clock_end(&mut self) {
        self.push_event(Event::new(CLOCK_LIMIT, u64::MAX, CLOCK_END << KIND_SHIFT));
        self.clock_end_queued = true;
    }

    /// The error of a drain that would need more than [`MAX_BINS`] time-series bins (its
    /// memory guard, as `run.bin` has for the window), at `now`.
    #[cold]
    #[inline(never)]
    fn drain_too_long(&self, now: TimeNs) -> ScenarioError {
        let in_flight: u64 = self
            .links
            .iter()
            .map(|l| l.backlog.packets + u64::from(l.busy))
            .sum();
        ScenarioError::Run(format!(
            "the drain after the run's window would need more than {MAX_BINS} time-series bins of \
             run.bin = {} s (at {} s, {in_flight} packets still wait at or are sent by the links); \
             use a wider run.bin or drain = false; the run stops there and reports nothing",
            self.bin as f64 / 1e9,
            now as f64 / 1e9,
        ))
    }

    /// What an event of `kind` (on link or source `index`) would do, for an error message.
    fn describe_event(&self, kind: u32, index: usize) -> String {
        let link = || &self.scenario.links[index].name;
        let source = || {
            let config = &self.scenario.sources[index];
            format!("source {:?} (flow {})", config.name, config.flow)
        };
        match kind {
            TX_END => format!("link {:?}: a packet's transmission would end", link()),
            PROPAGATED => format!("link {:?}: a packet's propagation would end", link()),
            DECIDE => format!("link {:?}: its scheduler would be asked again", link()),
            TICK => "a statistics bin would end".to_string(),
            MARK_WARMUP => "the warm-up would end".to_string(),
            MARK_END => "the run's duration would end".to_string(),
            _ => format!("{}: a TCP timer or acknowledgement would fire", source()),
        }
    }

    /// Whether no packet of this run meets a feature that [`PathFeatures::ANY`] stands for.
    fn lean_path(&self) -> bool {
        self.packet_log.is_none()
            && !self.metering
            && !self.live_classes
            && !self.echoes
            && self.ordered_propagations
            && self.sources.iter().all(|s| !s.closed_loop && !s.shaped)
            && self
                .links
                .iter()
                .all(|l| !l.admission && l.loss_threshold == 0 && l.max_sojourn == TimeNs::MAX)
    }

    /// The event loop, for the features `F` (see [`Engine::run`]).
    fn run_as<F: PathFeatures>(&mut self, watch: &mut dyn FnMut(f64) -> bool) -> Result<(), ScenarioError> {
        // Every pass of the loop handles one event (`events` grows by one), so `watch` is
        // called whenever `events` reaches a multiple of `POLL_EVERY`.
        let mut next_poll = self.events + crate::watch::POLL_EVERY - self.events % crate::watch::POLL_EVERY;
        loop {
            if self.events == next_poll {
                next_poll += crate::watch::POLL_EVERY;
                if !watch(self.fraction_done()) {
                    return Err(ScenarioError::Interrupted);
                }
            }
            let (source, next_packet) = self.arrivals.earliest();
            let slot_tx_end = self.slot_tx_end;
            let propagation = self.propagations.front_key();
            if slot_tx_end < next_packet
                && slot_tx_end < propagation
                && self.heap.peek().is_none_or(|e| slot_tx_end < e.key())
            {
                // The slot link's transmission end (see `slot_link`).
                self.slot_tx_end = NEVER;
                self.now = SourceClock::time_of(slot_tx_end);
                self.events += 1;
                self.transmission_end::<F>(self.slot_link as usize);
                if self.halt {
                    break;
                }
                continue;
            }
            if propagation < next_packet && self.heap.peek().is_none_or(|e| propagation < e.key()) {
                // The earliest of `propagations` (the event being handled leaves it at once:
                // `top_pending` is for the heap's top).
                let event = self.propagations.pop_front().expect("a propagation is queued");
                self.now = event.time();
                self.events += 1;
                self.propagated::<F>((event.tag & INDEX_MASK) as usize);
                if self.halt {
                    break;
                }
                continue;
            }
            let event = match self.heap.peek() {
                Some(&event) if event.key() < next_packet => event,
                _ if next_packet == NEVER => break,
                _ => {
                    self.now = SourceClock::time_of(next_packet);
                    self.events += 1;
                    self.emit::<F>(source)?;
                    if self.halt {
                        break;
                    }
                    continue;
                }
            };
            self.heap_event::<F>(event)?;
            if self.halt {
                break;
            }
        }
        Ok(())
    }

    /// Handles `event`, the heap's earliest (and the run's): out of line, as every event of
    /// the heap is rare on the paths the lean loops are for (its own copies of the
    /// transmission end and decision, inlined here, keep the loop smaller).
    #[inline(never)]
    fn heap_event<F: PathFeatures>(&mut self, event: Event) -> Result<(), ScenarioError> {
        if event.tag >> KIND_SHIFT == CLOCK_END {
            return self.clock_end();
        }
        self.top_pending = true;
        let time = event.time();
        self.now = time;
        self.events += 1;
        let index = (event.tag & INDEX_MASK) as usize;
        match event.tag >> KIND_SHIFT {
            TX_END => self.transmission_end::<F>(index),
            PROPAGATED => self.propagated_from_heap::<F>(index),
            DECIDE => {
                if self.links[index].decision_seq == event.seq() {
                    self.decide::<F>(index, time);
                }
            }
            TICK => {
                let pool = &self.transit;
                for (link, hop) in self.links.iter_mut().zip(&self.hops) {
                    let s = link.snapshot(time, hop, pool);
                    link.series.push(s);
                    let busy = link
                        .class_snapshot(time, hop, pool)
                        .iter()
                        .map(|c| c.busy)
                        .collect();
                    link.class_busy_series.push(busy);
                }
                for source in &mut self.sources {
                    if let Some(tcp) = source.tcp.as_mut() {
                        let sender = &tcp.connection.sender;
                        tcp.series.push(TcpSample {
                            time,
                            cwnd: sender.cwnd(),
                            ssthresh: sender.ssthresh(),
                            srtt: sender.srtt().unwrap_or(0),
                            rto: sender.rto(),
                            flight: sender.flight_size(),
                            delivered: tcp.connection.receiver.rcv_nxt(),
                        });
                    }
                }
                // (Less the clock's end.)
                let others =
                    self.heap.len() - usize::from(self.clock_end_queued) - usize::from(self.top_pending)
                        + usize::from(self.slot_tx_end != NEVER)
                        + self.propagations.len();
                // A delivery at or after this time is an event still to come.
                let delivering = self.last_delivery >= time;
                if (others > 0 || delivering || self.arrivals.earliest().1 != NEVER) && !self.halt {
                    if self.generation_over {
                        self.drain_bins += 1;
                        if self.drain_bins > MAX_BINS {
                            return Err(self.drain_too_long(time));
                        }
                    }
                    self.push(time + self.bin, TICK, 0);
                }
            }
            MARK_WARMUP => {
                self.measuring = true;
                for source in &mut self.sources {
                    if let Some(tcp) = source.tcp.as_mut() {
                        tcp.at_warmup = tcp.connection.counters();
                    }
                }
                let pool = &self.transit;
                for (link, hop) in self.links.iter_mut().zip(&mut self.hops) {
                    link.at_warmup = link.snapshot(time, hop, pool);
                    link.classes_at_warmup = link.class_snapshot(time, hop, pool);
                    link.meters_at_warmup = link.meter_snapshot();
                    let backlog = link.backlog_at(time, hop, pool);
                    link.max_packets = backlog.packets;
                    link.max_bytes = backlog.bytes;
                    hop.alone = false;
                    hop.alone_max_bytes = 0;
                }
            }
            MARK_END => self.end_window(time),
            TCP_TIMER | DELAYED_ACK | ACK_RETURN | TCP_START | TCP_STOP => {
                self.tcp_event(event.tag >> KIND_SHIFT, index)?
            }
            _ => unreachable!("unknown event kind"),
        }
        self.settle();
        Ok(())
    }

    /// Starts loading into the cache the line of source `s`'s statistics that its next packet
    /// will touch (the source clock knows this packet several events ahead). Its state, its
    /// first link's line and the clock's nodes are not asked for: on the ns-2 scenario with
    /// 1,000 flows those prefetches cost more instructions than the misses they hid (session
    /// 12 in `docs/performance.md`). Changes nothing but timing.
    #[inline(always)]
    fn prefetch_source(&self, s: usize) {
        if let Some(flow) = self.flows.get(s) {
            // The line of the fields a sent packet touches.
            schedlab_core::pool::prefetch(&flow.sent);
        }
    }

    fn end_window(&mut self, now: TimeNs) {
        if self.window_end.is_some() {
            return;
        }
        self.window_end = Some(now);
        self.generation_over = true;
        let pool = &self.transit;
        for (link, hop) in self.links.iter_mut().zip(&self.hops) {
            link.at_end = Some(link.snapshot(now, hop, pool));
            link.classes_at_end = link.class_snapshot(now, hop, pool);
            link.meters_at_end = link.meter_snapshot();
        }
        for source in &mut self.sources {
            if let Some(tcp) = source.tcp.as_mut() {
                tcp.at_end = Some(tcp.connection.counters());
            }
        }
        self.measuring = false;
        if !self.scenario.run.drain {
            self.halt = true;
        } else if !self.clock_end_queued {
            self.queue_clock_end();
        }
    }

    /// The index of `class` in `classes` (live mode) or `class_jitter`.
    #[inline(always)]
    fn class_slot(&mut self, class: u8) -> usize {
        let slot = self.class_index[class as usize];
        if slot != NO_CLASS {
            return slot as usize;
        }
        self.new_class_slot(class)
    }

    /// The reception jitter of `class` (when classes are not kept live), made at its first
    /// packet. A class without a slot has `NO_CLASS`, beyond `class_jitter`'s end (at most
    /// 256 classes), so one range test stands for both "has a slot" and the bounds check.
    #[inline(always)]
    fn class_jitter_mut(&mut self, class: u8) -> &mut Jitter {
        let slot = self.class_index[class as usize] as usize;
        if slot < self.class_jitter.len() {
            return &mut self.class_jitter[slot].1;
        }
        let slot = self.new_class_slot(class);
        &mut self.class_jitter[slot].1
    }

    /// A class's first packet: its accumulator.
    #[cold]
    fn new_class_slot(&mut self, class: u8) -> usize {
        let index = if self.live_classes {
            self.classes.push((class, Accumulator::default()));
            self.classes.len() - 1
        } else {
            self.class_jitter.push((class, Jitter::default()));
            self.class_jitter.len() - 1
        };
        self.class_index[class as usize] = index as u16;
        index
    }

    /// A source's pending packet enters the network (the source's next packet is drawn
    /// before the packet reaches its first link, so the clock is up to date when the link
    /// looks for same-time arrivals).
    #[inline(always)]
    fn emit<F: PathFeatures>(&mut self, index: usize) -> Result<(), ScenarioError> {
        if self.generation_over {
            self.arrivals.clear(index);
            return Ok(());
        }
        let now = self.now;
        if F::ANY && self.sources[index].closed_loop {
            let emission = self.sources[index].pending;
            let measured = self.measuring;
            self.schedule_source::<F>(index);
            if let Some(tcp) = self.sources[index].tcp.as_mut() {
                tcp.connection.write(emission.size as u64, now, measured);
            }
            return self.tcp_send(index);
        }
        // SAFETY: `index` is a source's index (see `element`).
        let source = unsafe { element(&self.sources, index) };
        let emission = source.pending;
        let generated = source.generated;
        debug_assert!(
            F::ANY || generated == now,
            "an unshaped packet enters when generated"
        );
        let class = emission.class.unwrap_or(source.class);
        let deadline = emission
            .deadline
            .or(source.deadline)
            .map(|d| now.saturating_add(d));
        let first_link = source.path.first();
        let packet = self.new_packet::<F>(
            index,
            emission.size,
            class,
            deadline,
            (OPEN_LOOP, 0, 0),
            // (Without a shaper, which the lean loops rule out, a packet enters the network
            // when it is generated.)
            if F::ANY { now - generated } else { 0 },
        )?;
        if self.packets == self.packet_budget {
            self.arrivals.clear(index);
            self.end_window(now);
        } else {
            self.schedule_source::<F>(index);
        }
        // SAFETY: `first_link` is a link's index (see `element`).
        if unsafe { element(&self.hops, first_link) }.private {
            self.pass_private::<F>(first_link, packet);
        } else {
            self.arrive::<F>(first_link, packet);
        }
        Ok(())
    }

    /// `packet` enters private hop `l` now (see [`PrivateHop`]): its arrival at the next hop
    /// (or its delivery) is scheduled at once, its transmission end's event is not needed.
    #[inline(always)]
    fn pass_private<F: PathFeatures>(&mut self, l: usize, packet: Packet) {
        let now = self.now;
        // The scheduler's link, free, would have put its decision after other arrivals
        // pending at this time (an event of its own; the hop holds no packet in service).
        // SAFETY: `l` is a link's index (see `element`).
        if unsafe { element(&self.hops, l) }.is_idle(now, &self.transit) && self.arrival_pending(now) {
            self.elided_events += 1;
        }
        // SAFETY: `l` is a link's index (see `element`).
        let hop = unsafe { element_mut(&mut self.hops, l) };
        // SAFETY: `l` is a link's index (see `element`).
        let (end, only) = hop.pass(packet, now, self.measuring, &mut self.transit, unsafe {
            element_mut(&mut self.links, l)
        });
        // Without propagation delay, the propagation event stands for the transmission end
        // (which forwarded the packet at once).
        self.elided_events += u64::from(hop.delay > 0);
        if only {
            let at = end + hop.delay;
            self.push_propagated::<F>(at, l);
        }
    }

    /// A packet of source `index` enters the network now: its slot (`kind`, `seq`, `len` for
    /// TCP), the packet count and the sent statistics (`shaping`: time spent in the shaper).
    #[inline(always)]
    fn new_packet<F: PathFeatures>(
        &mut self,
        index: usize,
        size: u32,
        class: u8,
        deadline: Option<TimeNs>,
        (kind, seq, len): (u8, u64, u32),
        shaping: TimeNs,
    ) -> Result<Packet, ScenarioError> {
        let now = self.now;
        let measured = self.measuring;
        let log = match &mut self.packet_log {
            Some(packet_log) if F::ANY && measured && kind != TCP_ACK => {
                packet_log.enter(self.sources[index].flow, size, now)
            }
            _ => PacketLog::NONE,
        };
        let id = self.slab.insert_as(
            Slot {
                entry: now,
                source: index as u32,
                hop: 0,
                measured,
                kind,
                class,
                marking: Marking {
                    // SAFETY: `index` is a source's index (see `element`).
                    dscp: unsafe { element(&self.sources, index) }.dscp,
                    colour: Colour::Green,
                },
                seq,
                len,
                log,
            },
            F::ANY,
        )?;
        self.packets += 1;
        if measured {
            // SAFETY: `index` is a source's index (see `element`).
            unsafe { element_mut(&mut self.flows, index) }.on_sent(size, shaping);
            if F::ANY && self.live_classes {
                let c = self.class_slot(class);
                self.classes[c].1.on_sent(size, shaping);
            }
        }
        Ok(Packet {
            id,
            // SAFETY: `index` is a source's index (see `element`).
            flow: unsafe { element(&self.sources, index) }.flow,
            class,
            size,
            arrival: now,
            deadline,
        })
    }

    /// `packet` reaches link `l` at `now`.
    #[inline(always)]
    fn arrive<F: PathFeatures>(&mut self, l: usize, mut packet: Packet) {
        let now = self.now;
        packet.arrival = now;
        #[cfg(test)]
        {
            let (last, ties) = &mut self.arrival_ties;
            *ties += (last[l] == now) as u64;
            last[l] = now;
        }
        if F::ANY && self.links[l].admission && !self.admit(l, &mut packet) {
            return;
        }
        // SAFETY: `l` is a link's index (see `element`).
        let link = unsafe { element_mut(&mut self.links, l) };
        link.touch(now);
        debug_assert!(self.drops.is_empty(), "`handle_drops` empties it");
        // SAFETY: a link's `drr` is its scheduler's variant.
        unsafe { scheduler_enqueue(link.drr, &mut link.scheduler, packet, now, &mut self.drops) };
        // SAFETY: as above.
        let backlog = unsafe { scheduler_backlog(link.drr, &mut link.scheduler) };
        link.backlog = backlog;
        if self.measuring {
            raise(&mut link.max_packets, backlog.packets);
            raise(&mut link.max_bytes, backlog.bytes);
        }
        if !self.drops.is_empty() {
            self.handle_drops(l);
        }
        self.maybe_decide::<F>(l);
    }

    /// Link `l`'s conditioner and drop policy see `packet`, arriving now: whether it goes on
    /// to the scheduler (if not, it was dropped and counted).
    #[inline(never)]
    fn admit(&mut self, l: usize, packet: &mut Packet) -> bool {
        let now = self.now;
        let link = &mut self.links[l];
        if let Some(conditioner) = &mut link.conditioner {
            let slot = self.slab.get(packet.id);
            if conditioner.condition(packet, &mut slot.marking, None, now) == Verdict::Drop {
                self.drops.clear();
                self.drops.push(Dropped {
                    packet: *packet,
                    reason: DropReason::OutOfProfile,
                });
                self.handle_drops(l);
                return false;
            }
        }
        if let Some(policy) = &mut link.drop_policy {
            if !policy.admit(packet, now) {
                self.drops.clear();
                self.drops.push(Dropped {
                    packet: *packet,
                    reason: DropReason::NoBandwidth,
                });
                self.handle_drops(l);
                return false;
            }
        }
        true
    }

    /// Asks link `l`'s scheduler for a packet now if the link is free and backlogged, or
    /// queues the decision behind pending same-time arrivals.
    #[inline(always)]
    fn maybe_decide<F: PathFeatures>(&mut self, l: usize) {
        let now = self.now;
        // SAFETY: `l` is a link's index (see `element`).
        let link = unsafe { element(&self.links, l) };
        if link.busy || link.backlog.packets == 0 {
            return;
        }
        if link.decision_seq != NO_DECISION && link.decision_at == now {
            return;
        }
        if self.arrival_pending(now) {
            self.push_decision(now, l);
        } else {
            self.decide::<F>(l, now);
        }
    }

    #[inline(always)]
    fn decide<F: PathFeatures>(&mut self, l: usize, now: TimeNs) {
        // SAFETY: `l` is a link's index (see `element`).
        let link = unsafe { element_mut(&mut self.links, l) };
        link.decision_seq = NO_DECISION;
        link.touch(now);
        debug_assert!(self.drops.is_empty(), "`handle_drops` empties it");
        // The packet sent goes to `in_service`. Without a sojourn limit (the lean loops), DRR
        // writes it there itself, copied once from its node (see `Drr::dequeue_into`).
        let served = if !F::ANY && link.drr {
            // SAFETY: a link's `drr` is its scheduler's variant.
            unsafe { as_drr(&mut link.scheduler) }.dequeue_into(&mut link.in_service)
        } else {
            // SAFETY: as above.
            let mut next = unsafe { scheduler_dequeue(link.drr, &mut link.scheduler, now, &mut self.drops) };
            // The sojourn limit: a head that waited too long is dropped and the next one taken.
            while let Some(packet) = next {
                if !F::ANY || !overdue(&packet, now, link.max_sojourn) {
                    break;
                }
                link.scheduler.not_served(&packet);
                self.drops.push(Dropped {
                    packet,
                    reason: DropReason::Sojourn,
                });
                // SAFETY: as above.
                next = unsafe { scheduler_dequeue(link.drr, &mut link.scheduler, now, &mut self.drops) };
            }
            if let Some(packet) = next {
                link.in_service = packet;
            }
            next.is_some()
        };
        // SAFETY: as above.
        link.backlog = unsafe { scheduler_backlog(link.drr, &mut link.scheduler) };
        if served {
            let packet = link.in_service;
            if prefetches::<F>(self.prefetching) && l == self.sink as usize {
                // Its transmission end delivers it: start loading its source's path and
                // statistics.
                let s = self.slab.get(packet.id).source as usize;
                prefetch(&self.sources, s, 64);
                prefetch(&self.flows, s, Accumulator::RECEIVED_BYTES);
            }
            link.busy = true;
            link.tx_start = now;
            let end = now + link.service.of(packet.size);
            if l == self.slot_link as usize {
                let seq = self.seq;
                self.seq += 1;
                self.slot_tx_end = Event::new(end, seq, 0).key();
            } else {
                self.push(end, TX_END, l);
            }
            if let Some(packet_log) = self.packet_log.as_mut().filter(|_| F::ANY) {
                packet_log.start(self.slab.get(packet.id).log, now);
            }
            if F::ANY && self.metering {
                let slot = *self.slab.get(packet.id);
                if slot.hop == 0 && slot.kind <= TCP_DATA {
                    if let Some(meter) = self.sources[slot.source as usize].lateness.as_mut() {
                        meter.record(packet.arrival, now, slot.measured);
                    }
                }
            }
        } else if link.backlog.packets > 0 {
            link.idle_while_backlogged += 1;
            if let Some(wakeup) = link.scheduler.next_wakeup(now).filter(|&w| w > now) {
                self.push_decision(wakeup, l);
            }
        }
        if !self.drops.is_empty() {
            self.handle_drops(l);
        }
    }

    fn handle_drops(&mut self, l: usize) {
        for i in 0..self.drops.len() {
            let Dropped { packet, reason } = self.drops[i];
            let link = &mut self.links[l];
            link.dropped[reason as usize] += 1;
            link.class_mut(packet.class).dropped[reason as usize] += 1;
            let slot = self.slab.remove(packet.id);
            if let Some(packet_log) = &mut self.packet_log {
                packet_log.end(slot.log, Fate::Dropped { at: self.now });
            }
            if slot.kind == TCP_ACK {
                if let Some(tcp) = self.sources[slot.source as usize].tcp.as_mut() {
                    tcp.acks_dropped += 1;
                }
            } else if slot.measured {
                let s = slot.source as usize;
                self.flows[s].on_dropped(packet.size, reason);
                if self.live_classes {
                    let c = self.class_slot(slot.class);
                    self.classes[c].1.on_dropped(packet.size, reason);
                }
            }
        }
        self.drops.clear();
    }

    #[inline(always)]
    fn transmission_end<F: PathFeatures>(&mut self, l: usize) {
        let now = self.now;
        // SAFETY: `l` is a link's index (see `element`).
        let link = unsafe { element_mut(&mut self.links, l) };
        // (The packet's fields, not a copy of it: a delivery here needs two of them; the
        // other paths copy it.)
        let (id, size, class, arrival) = {
            let p = &link.in_service;
            (p.id, p.size, p.class, p.arrival)
        };
        link.busy = false;
        let served = now - link.tx_start;
        link.busy_done += served;
        let class = link.class_mut(class);
        class.busy += served;
        class.sent_packets += 1;
        class.delay_sum += (now - arrival) as u128;
        link.sent_packets += 1;
        link.sent_bytes += size as u64;
        if F::ANY && link.loss_threshold > 0 && link.loss_rng.random::<u64>() < link.loss_threshold {
            link.lost += 1;
            let slot = self.slab.remove(id);
            if let Some(packet_log) = &mut self.packet_log {
                packet_log.end(slot.log, Fate::Lost { at: now });
            }
            if slot.kind == TCP_ACK {
                if let Some(tcp) = self.sources[slot.source as usize].tcp.as_mut() {
                    tcp.acks_dropped += 1;
                }
            } else if slot.measured {
                self.flows[slot.source as usize].on_lost();
            }
            self.maybe_decide::<F>(l);
            return;
        }
        let delay = link.delay;
        if delay == 0 {
            let packet = link.in_service;
            self.forward::<F>(packet);
        } else if l == self.sink as usize {
            // Delivered a propagation delay from now: every delivery comes from this link, in
            // the order of its transmission ends, so recording it now changes no order. (Its
            // slot goes at once: its hop is not moved on.) Every packet here is at its last hop
            // (see `sink_link`).
            debug_assert!(
                self.is_last_hop::<F>(id),
                "the sink is the last hop of every path"
            );
            let at = now + delay;
            self.last_delivery = at;
            self.elided_events += 1;
            self.deliver::<F>(id, size, at);
        } else {
            if prefetches::<F>(self.prefetching) {
                // The packet is forwarded or delivered when its propagation ends, several
                // events from now: start loading its source's path and statistics.
                let s = self.slab.get(id).source as usize;
                prefetch(&self.sources, s, 64);
                prefetch(&self.flows, s, Accumulator::RECEIVED_BYTES);
            }
            let link = &mut self.links[l];
            let at = now + link.delay;
            let packet = link.in_service;
            link.pipe.push_back((at, packet));
            if link.pipe.len() == 1 {
                self.push_propagated::<F>(at, l);
            }
        }
        self.maybe_decide::<F>(l);
    }

    /// [`Engine::propagated`] for a propagation event from the heap (out of order with those
    /// in `propagations`: rare), out of line.
    #[inline(never)]
    fn propagated_from_heap<F: PathFeatures>(&mut self, l: usize) {
        self.propagated::<F>(l);
    }

    /// Link `l`'s next propagation ends now: its packet moves on.
    #[inline(always)]
    fn propagated<F: PathFeatures>(&mut self, l: usize) {
        // SAFETY: `l` is a link's index (see `element`).
        let packet = if unsafe { element(&self.hops, l) }.private {
            // SAFETY: `l` is a link's index (see `element`).
            let (packet, next) =
                unsafe { element_mut(&mut self.hops, l) }.forward_next(self.now, &mut self.transit);
            if let Some(next) = next {
                self.push_propagated::<F>(next, l);
            }
            packet
        } else {
            let link = &mut self.links[l];
            let (_, packet) = link.pipe.pop_front().expect("a propagation event has a packet");
            if let Some(&(next, _)) = link.pipe.front() {
                self.push_propagated::<F>(next, l);
            }
            packet
        };
        self.forward::<F>(packet);
    }

    /// Whether the link packet `id` is at is the last of its path.
    #[inline(always)]
    fn is_last_hop<F: PathFeatures>(&mut self, id: u64) -> bool {
        let slot = self.slab.get(id);
        (!F::ANY || slot.kind <= TCP_DATA)
            // SAFETY: `slot.source as usize` is a source's index (see `element`).
            && slot.hop as usize + 1 == unsafe { element(&self.sources, slot.source as usize) }.path.len()
    }

    /// `packet` has crossed its current link: on to the next one, or delivered.
    #[inline(always)]
    fn forward<F: PathFeatures>(&mut self, packet: Packet) {
        let slot = self.slab.get(packet.id);
        slot.hop += 1;
        let hop = slot.hop as usize;
        // SAFETY: `slot.source as usize` is a source's index (see `element`).
        let source = unsafe { element(&self.sources, slot.source as usize) };
        // Data first: one comparison on the common path.
        let next = if !F::ANY || slot.kind <= TCP_DATA {
            source.path.hop(hop)
        } else {
            let path = if slot.kind == ECHO {
                &source.echo_path
            } else {
                match &source.tcp {
                    Some(tcp) => &tcp.ack_path,
                    None => &source.path[..],
                }
            };
            path.get(hop).map(|&l| l as usize)
        };
        if let Some(next) = next {
            self.arrive::<F>(next, packet);
        } else {
            self.deliver::<F>(packet.id, packet.size, self.now);
        }
    }

    /// Packet `id` (`size` bytes) reaches its destination at `now` (the current time, or a
    /// time after it when delivered at its last transmission end, see [`Engine::sink`]). It
    /// takes the packet's two fields it reads, not the packet: at the sink's transmission end
    /// the packet is then never copied out of the link.
    #[inline(always)]
    fn deliver<F: PathFeatures>(&mut self, id: u64, size: u32, now: TimeNs) {
        let slot = self.slab.remove(id);
        let s = slot.source as usize;
        if F::ANY && slot.kind == TCP_ACK {
            let ack = self.sources[s]
                .tcp
                .as_mut()
                .and_then(|tcp| {
                    if slot.len == 0 {
                        return None;
                    }
                    while let Some((number, ack)) = tcp.sack_in_flight.pop_front() {
                        if number == slot.len {
                            return Some(ack);
                        }
                    }
                    None
                })
                .unwrap_or_else(|| Ack::cumulative(slot.seq));
            self.ack_arrives(s, ack);
            return;
        }
        if F::ANY && slot.kind == ECHO {
            // `entry` is the echoed packet's entry into the network.
            self.round_trip(s, slot.class, now - slot.entry);
            return;
        }
        if let Some(packet_log) = self.packet_log.as_mut().filter(|_| F::ANY) {
            packet_log.delivered(slot.log, now);
        }
        if now >= self.bin_end {
            self.next_bin(now);
        }
        // SAFETY: `s` is a source's index (see `element`).
        let source = unsafe { element_mut(&mut self.sources, s) };
        if source.bin_packets == 0 {
            self.bin_touched.push(s as u32);
        }
        source.bin_packets += 1;
        source.bin_bytes += size as u64;
        if slot.measured {
            let delay = now - slot.entry;
            if prefetches::<F>(self.prefetching) {
                // SAFETY: `s` is a source's index (see `element`).
                unsafe { element_mut(&mut self.flows, s) }.on_received_except_histogram(size, now, delay);
                self.defer_delay(s, delay);
            } else {
                // SAFETY: `s` is a source's index (see `element`).
                unsafe { element_mut(&mut self.flows, s) }.on_received(size, now, delay);
            }
            if F::ANY && self.live_classes {
                let c = self.class_slot(slot.class);
                self.classes[c].1.on_received(size, now, delay);
            } else {
                self.class_jitter_mut(slot.class).on_received(now, delay);
            }
            if F::ANY && self.echoes && slot.kind == OPEN_LOOP {
                self.echo(s, &slot);
            }
        }
        if F::ANY && slot.kind == TCP_DATA {
            self.segment_arrives(s, slot.seq, slot.len);
        }
    }

    /// Records `delay` in source `s`'s delay histogram [`DEFERRED_DELAYS`](crate::stats::DEFERRED_DELAYS) deliveries from
    /// now (all deliveries, of any flow), after starting to load the count it adds to: with
    /// many flows that count is a cache miss, which the deliveries in between hide. The
    /// flow's values reach its histogram in their order; `finish` records those still
    /// waiting.
    #[inline(always)]
    fn defer_delay(&mut self, s: usize, delay: u64) {
        // SAFETY: `s` is a source's index (see `element`).
        let bucket = unsafe { element_mut(&mut self.flows, s) }.delay.note(delay);
        let (oldest, bucket) = self.deferred_delays.replace_oldest(s as u32, bucket);
        if oldest != DeferredDelays::NO_FLOW {
            // SAFETY: `oldest` is a source's index (see `element`).
            unsafe { element_mut(&mut self.flows, oldest as usize) }
                .delay
                .count(bucket);
        }
    }

    /// A measured open-loop packet of source `s` (its `slot`) was delivered: with a return
    /// path, its echo goes back (a fixed delay: its round trip is known at once).
    #[inline(never)]
    fn echo(&mut self, s: usize, slot: &Slot) {
        let source = &self.sources[s];
        if let Some(delay) = source.echo_delay {
            self.round_trip(s, slot.class, self.now - slot.entry + delay);
            return;
        }
        let Some(&first) = source.echo_path.first() else {
            return;
        };
        let (flow, class) = (source.flow, slot.class);
        let Ok(id) = self.slab.insert(Slot {
            hop: 0,
            measured: false,
            kind: ECHO,
            log: PacketLog::NONE,
            ..*slot
        }) else {
            // More than 2³² packets in flight: the echo is lost (no sample).
            return;
        };
        self.arrive::<AnyPath>(
            first as usize,
            Packet {
                id,
                flow,
                class,
                size: ECHO_SIZE,
                arrival: self.now,
                deadline: None,
            },
        );
    }

    /// A round trip of `rtt` ns of a measured packet of source `s` and class `class` ended.
    fn round_trip(&mut self, s: usize, class: u8, rtt: TimeNs) {
        self.flows[s].on_round_trip(rtt);
        if self.live_classes {
            let c = self.class_slot(class);
            self.classes[c].1.on_round_trip(rtt);
        }
    }

    /// Adds the current bin's counts to the flows' series.
    fn close_bin(&mut self) {
        let bin = self.bin_index;
        for &s in &self.bin_touched {
            let source = &mut self.sources[s as usize];
            let (packets, bytes) = (
                std::mem::take(&mut source.bin_packets),
                std::mem::take(&mut source.bin_bytes),
            );
            let series = &mut self.flow_series[s as usize];
            if bin >= series.bytes.len() {
                series.bytes.resize(bin + 1, 0);
                series.packets.resize(bin + 1, 0);
            }
            series.bytes[bin] += bytes;
            series.packets[bin] += packets;
        }
        self.bin_touched.clear();
    }

    /// A reception at `now` falls after the current bin: close it and move to `now`'s bin.
    #[cold]
    fn next_bin(&mut self, now: TimeNs) {
        self.close_bin();
        while now >= self.bin_end {
            self.bin_index += 1;
            self.bin_end = self.bin_end.saturating_add(self.bin);
        }
    }

    /// Sends every segment TCP source `s` may send now, then re-arms its timer.
    fn tcp_send(&mut self, s: usize) -> Result<(), ScenarioError> {
        if self.generation_over {
            return Ok(());
        }
        let now = self.now;
        let first_link = self.sources[s].path[0] as usize;
        loop {
            let source = &mut self.sources[s];
            let Some(tcp) = source.tcp.as_mut() else {
                return Ok(());
            };
            let Some(segment) = tcp.connection.sender.next_segment(now) else {
                break;
            };
            let size = segment.len + tcp.header;
            let class = source.class;
            let deadline = source.deadline.map(|d| now.saturating_add(d));
            let packet = self.new_packet::<AnyPath>(
                s,
                size,
                class,
                deadline,
                (TCP_DATA, segment.seq, segment.len),
                0,
            )?;
            self.arrive::<AnyPath>(first_link, packet);
            if self.packets == self.packet_budget {
                self.end_window(now);
                break;
            }
        }
        self.arm_tcp_timers(s);
        Ok(())
    }

    /// Pushes timer events for source `s`'s retransmission and delayed-ACK deadlines earlier
    /// than the events already pending (a stale event re-arms when it fires).
    fn arm_tcp_timers(&mut self, s: usize) {
        let now = self.now;
        let sending = !self.generation_over;
        let Some(tcp) = self.sources[s].tcp.as_mut() else {
            return;
        };
        let mut pushes = [None, None];
        // Once the window has closed the senders are silent: their timers stay unarmed.
        if let Some(deadline) = tcp.connection.sender.rto_deadline().filter(|_| sending) {
            let deadline = deadline.max(now);
            if tcp.timer_event.is_none_or(|t| deadline < t) {
                tcp.timer_event = Some(deadline);
                pushes[0] = Some(deadline);
            }
        }
        if let Some(deadline) = tcp.connection.receiver.ack_deadline() {
            let deadline = deadline.max(now);
            if tcp.delayed_ack_event.is_none_or(|t| deadline < t) {
                tcp.delayed_ack_event = Some(deadline);
                pushes[1] = Some(deadline);
            }
        }
        if let Some(t) = pushes[0] {
            self.push(t, TCP_TIMER, s);
        }
        if let Some(t) = pushes[1] {
            self.push(t, DELAYED_ACK, s);
        }
    }

    /// A data segment of source `s` reaches its receiver.
    fn segment_arrives(&mut self, s: usize, seq: u64, len: u32) {
        let now = self.now;
        let Some(tcp) = self.sources[s].tcp.as_mut() else {
            return;
        };
        match tcp.connection.receiver.on_segment(seq, len, now) {
            Some(ack) => self.send_ack(s, ack),
            None => self.arm_tcp_timers(s),
        }
    }

    /// Source `s`'s receiver sends an ACK for `ack`.
    fn send_ack(&mut self, s: usize, ack: Ack) {
        let now = self.now;
        let source = &mut self.sources[s];
        let Some(tcp) = source.tcp.as_mut() else {
            return;
        };
        tcp.connection.sender.counters.acks_sent += 1;
        if tcp.ack_path.is_empty() {
            let at = now + tcp.ack_delay;
            tcp.ack_pipe.push_back((at, ack));
            if tcp.ack_pipe.len() == 1 {
                self.push(at, ACK_RETURN, s);
            }
            return;
        }
        let first = tcp.ack_path[0] as usize;
        let size = tcp.header;
        let number = if ack.blocks().is_empty() {
            0
        } else {
            tcp.sack_numbered = tcp.sack_numbered.checked_add(1).unwrap_or(1);
            tcp.sack_in_flight.push_back((tcp.sack_numbered, ack));
            tcp.sack_numbered
        };
        let (flow, class, dscp) = (source.flow, source.class, source.dscp);
        let Ok(id) = self.slab.insert(Slot {
            entry: now,
            source: s as u32,
            hop: 0,
            measured: false,
            kind: TCP_ACK,
            class,
            marking: Marking {
                dscp,
                colour: Colour::Green,
            },
            seq: ack.cumulative,
            len: number,
            log: PacketLog::NONE,
        }) else {
            // More than 2³² packets in flight: the ACK is lost (the data path reports the
            // error when it next sends).
            return;
        };
        self.arrive::<AnyPath>(
            first,
            Packet {
                id,
                flow,
                class,
                size,
                arrival: now,
                deadline: None,
            },
        );
    }

    /// An ACK for `ack` reaches source `s`'s sender.
    fn ack_arrives(&mut self, s: usize, ack: Ack) {
        let now = self.now;
        if let Some(tcp) = self.sources[s].tcp.as_mut() {
            tcp.connection.on_ack(&ack, now);
        }
        // Only the slab's capacity can fail, and it just freed a slot.
        let _ = self.tcp_send(s);
    }

    /// A TCP event (`kind`) for source `s` at the current time.
    fn tcp_event(&mut self, kind: u32, s: usize) -> Result<(), ScenarioError> {
        let now = self.now;
        let Some(tcp) = self.sources[s].tcp.as_mut() else {
            return Ok(());
        };
        match kind {
            TCP_TIMER => {
                if tcp.timer_event == Some(now) {
                    tcp.timer_event = None;
                }
                if !self.generation_over {
                    tcp.connection.sender.on_timer(now);
                }
                self.tcp_send(s)?;
                self.arm_tcp_timers(s);
            }
            DELAYED_ACK => {
                if tcp.delayed_ack_event == Some(now) {
                    tcp.delayed_ack_event = None;
                }
                if let Some(ack) = tcp.connection.receiver.on_timer(now) {
                    self.send_ack(s, ack);
                }
                self.arm_tcp_timers(s);
            }
            ACK_RETURN => {
                let (_, ack) = tcp.ack_pipe.pop_front().expect("an ACK event has an ACK");
                if let Some(&(next, _)) = tcp.ack_pipe.front() {
                    self.push(next, ACK_RETURN, s);
                }
                self.ack_arrives(s, ack);
            }
            TCP_START => self.tcp_send(s)?,
            TCP_STOP => tcp.connection.sender.close(),
            _ => unreachable!("not a TCP event"),
        }
        Ok(())
    }

    fn finish(mut self, replication: u32, stream_seeds: Vec<u64>) -> Result<RawReplication, ScenarioError> {
        // The last event: deliveries recorded at their transmission end happen later.
        let end_time = self.now.max(self.last_delivery);
        // A run that halted at the window's end did not reach the transmission ends after it.
        let unfinished: u64 = if self.halt {
            self.links
                .iter()
                .zip(&self.hops)
                .filter(|(l, hop)| l.delay > 0 && hop.private)
                .map(|(_, hop)| hop.unfinished(end_time, &self.transit))
                .sum()
        } else {
            0
        };
        let events = self.events + self.elided_events - unfinished;
        for (s, bucket) in self.deferred_delays.drain() {
            self.flows[s as usize].delay.count(bucket);
        }
        self.close_bin();
        let window_end = match self.window_end {
            Some(t) => t,
            None => {
                // Packet budget not reached (the sources ran dry) or duration run drained
                // before its end mark: close the window at the last event.
                self.end_window(end_time);
                end_time
            }
        };
        if window_end <= self.warmup {
            return Err(ScenarioError::Run(format!(
                "the run ended at {} s, before the warm-up of {} s was over; lengthen run.duration \
                 or run.packets, or shorten run.warmup",
                window_end as f64 / 1e9,
                self.warmup as f64 / 1e9
            )));
        }
        let mut classes = if self.live_classes {
            self.classes
        } else {
            let mut present: Vec<u8> = self.scenario.sources.iter().map(|s| s.class).collect();
            present.sort_unstable();
            present.dedup();
            present
                .into_iter()
                .map(|class| {
                    let mut acc = Accumulator::default();
                    for (source, flow) in self.scenario.sources.iter().zip(&self.flows) {
                        if source.class == class {
                            acc.merge_counts(flow);
                        }
                    }
                    if let Some((_, jitter)) = self.class_jitter.iter().find(|(c, _)| *c == class) {
                        acc.jitter = *jitter;
                    }
                    (class, acc)
                })
                .collect()
        };
        classes.sort_by_key(|(c, _)| *c);
        // Measured packets neither received nor dropped (the packets `sent` counts).
        let in_flight = self
            .flows
            .iter()
            .map(|f| f.sent - f.received - f.dropped_total() - f.lost)
            .collect();
        let tcp = self
            .sources
            .iter_mut()
            .map(|source| {
                source.tcp.as_mut().map(|tcp| TcpRaw {
                    at_warmup: tcp.at_warmup,
                    at_end: tcp.at_end.unwrap_or_else(|| tcp.connection.counters()),
                    completion_times: std::mem::take(&mut tcp.connection.completion_times),
                    unfinished: tcp.connection.unfinished_measured(),
                    acks_dropped: tcp.acks_dropped,
                    series: std::mem::take(&mut tcp.series),
                })
            })
            .collect();
        Ok(RawReplication {
            replication,
            stream_seeds,
            flows: self.flows,
            in_flight,
            flow_series: self.flow_series,
            classes,
            link_window: self
                .links
                .iter()
                .map(|l| (l.at_warmup, l.at_end.expect("window closed")))
                .collect(),
            link_max_backlog: self
                .links
                .iter()
                .zip(&self.hops)
                .map(|(l, hop)| {
                    // A private hop keeps its packets that entered it idle apart.
                    let (alone_packets, alone_bytes) = (u64::from(hop.alone), u64::from(hop.alone_max_bytes));
                    (l.max_packets.max(alone_packets), l.max_bytes.max(alone_bytes))
                })
                .collect(),
            link_series: self
                .links
                .iter_mut()
                .map(|l| std::mem::take(&mut l.series))
                .collect(),
            link_class_window: self
                .links
                .iter_mut()
                .map(|l| {
                    (
                        std::mem::take(&mut l.classes_at_warmup),
                        std::mem::take(&mut l.classes_at_end),
                    )
                })
                .collect(),
            link_meter_window: self
                .links
                .iter_mut()
                .map(|l| {
                    (
                        std::mem::take(&mut l.meters_at_warmup),
                        std::mem::take(&mut l.meters_at_end),
                    )
                })
                .collect(),
            link_class_busy_series: self
                .links
                .iter_mut()
                .map(|l| std::mem::take(&mut l.class_busy_series))
                .collect(),
            link_idle_while_backlogged: self.links.iter().map(|l| l.idle_while_backlogged).collect(),
            link_left_queued: self
                .links
                .iter()
                .zip(&self.hops)
                .map(|(l, hop)| {
                    if hop.private {
                        l.backlog_at(end_time, hop, &self.transit).packets
                    } else {
                        l.scheduler.backlog().packets
                    }
                })
                .collect(),
            discipline_counters: self
                .links
                .iter()
                .map(|l| l.scheduler.discipline_counters())
                .collect(),
            tcp,
            lateness: self
                .sources
                .iter()
                .map(|s| s.lateness.as_ref().map(|m| m.counts()))
                .collect(),
            flow_discipline_counters: self
                .sources
                .iter()
                .map(|s| {
                    s.path
                        .iter()
                        .map(|&l| self.links[l as usize].scheduler.flow_discipline_counters(s.flow))
                        .find(|counters| !counters.is_empty())
                        .unwrap_or_default()
                })
                .collect(),
            window_start: self.warmup,
            window_end,
            end_time,
            events,
            packets: self.packets,
        })
    }
}

/// Per link of `scenario`: whether it is a private hop (see [`PrivateHop`]): the first hop of
/// one open-loop source's path (not a trace, whose classes vary per packet, nor one with a
/// `lateness` table, which reads service starts) and on no other path, echo or ACK path,
/// whose scheduler is a FIFO without buffer limit, without conditioner, drop policy, sojourn
/// limit or loss.
fn private_hops(scenario: &Scenario) -> Vec<bool> {
    let mut uses = vec![0u32; scenario.links.len()];
    for source in &scenario.sources {
        let returns = [
            source.echo.as_ref(),
            source.transport.as_ref().map(|t| &t.ack_return),
        ];
        let return_links = returns.into_iter().flatten().flat_map(|r| match r {
            AckReturn::Path(links) => &links[..],
            AckReturn::Delay(_) => &[],
        });
        for &l in source.path.iter().chain(return_links) {
            uses[l] += 1;
        }
    }
    let mut private = vec![false; scenario.links.len()];
    for source in &scenario.sources {
        let Some(&first) = source.path.first() else {
            continue;
        };
        let link = &scenario.links[first];
        let fifo = link.scheduler.len() == 1
            && link.scheduler.get("kind").and_then(toml::Value::as_str) == Some("fifo");
        private[first] = uses[first] == 1
            && source.transport.is_none()
            && source.lateness.is_none()
            && source.flow <= schedlab_core::MAX_FLOW_ID
            && !matches!(source.arrivals, crate::traffic::ArrivalModel::Trace { .. })
            && fifo
            && link.buffer.is_none()
            && link.conditioner.is_none()
            && link.drop_policy.is_none()
            && link.max_sojourn.is_none()
            && link.loss == 0.0;
    }
    private
}

/// The link where packets are delivered at their transmission end, if `scenario` has one: the
/// link every source's path ends at, when every source is open loop without echoes and the
/// network drains (every packet in flight is delivered, so none is counted that a halted run
/// would not have delivered). All deliveries then come from this link, in the order of its
/// transmission ends, a propagation delay later: each is recorded at its transmission end, with
/// its delivery time, instead of in a propagation event of its own. A path that crosses that
/// link before its end rules it out too: every packet at the sink is then at its last hop, and
/// a transmission end there delivers without looking the packet's hop up.
fn sink_link(scenario: &Scenario) -> Option<usize> {
    if !scenario.run.drain {
        return None;
    }
    let mut sink = None;
    for source in &scenario.sources {
        if source.transport.is_some() || source.echo.is_some() {
            return None;
        }
        let (&last, before) = source.path.split_last()?;
        if sink.is_some_and(|l| l != last) || before.contains(&last) {
            return None;
        }
        sink = Some(last);
    }
    sink
}

/// Runs replication `replication` of `scenario` keeping a row per measured packet of the
/// flows `log` selects (`schedlab run --packets`): the same random streams, and so the same
/// packets, as that replication in a run without the log.
pub fn run_replication_logged(
    scenario: &Scenario,
    replication: u32,
    log: PacketLog,
    watch: &mut dyn FnMut(f64) -> bool,
) -> Result<(RawReplication, PacketLog), ScenarioError> {
    let (mut engine, seeds) = Engine::new(scenario, replication)?;
    // The log records each packet's service start at every hop and its delivery when it
    // happens: no private hops, no deliveries at transmission ends.
    engine.hops.fill(PrivateHop::not_private());
    engine.sink = u32::MAX;
    engine.packet_log = Some(log);
    engine.run(watch)?;
    let log = engine.packet_log.take().unwrap_or_default();
    Ok((engine.finish(replication, seeds)?, log))
}

/// Runs replication `replication` of `scenario`.
pub fn run_replication(scenario: &Scenario, replication: u32) -> Result<RawReplication, ScenarioError> {
    run_replication_watched(scenario, replication, &mut |_| true)
}

/// Runs replication `replication` of `scenario`, calling `watch(fraction done)` every
/// [`crate::watch::POLL_EVERY`] events; when it returns false the run stops with
/// [`ScenarioError::Interrupted`].
pub fn run_replication_watched(
    scenario: &Scenario,
    replication: u32,
    watch: &mut dyn FnMut(f64) -> bool,
) -> Result<RawReplication, ScenarioError> {
    let (mut engine, seeds) = Engine::new(scenario, replication)?;
    engine.run(watch)?;
    engine.finish(replication, seeds)
}

/// [`run_replication`] with prefetching (and the deferred delay histograms that go with it)
/// forced on or off, whatever the number of flows.
#[cfg(test)]
fn run_replication_prefetching(
    scenario: &Scenario,
    replication: u32,
    prefetching: bool,
) -> Result<RawReplication, ScenarioError> {
    let (mut engine, seeds) = Engine::new(scenario, replication)?;
    engine.prefetching = prefetching;
    engine.run(&mut |_| true)?;
    engine.finish(replication, seeds)
}

/// [`run_replication`] with the sources' next packets in a calendar (`calendar`) or a tree,
/// whatever the number of sources.
#[cfg(test)]
fn run_replication_clock(
    scenario: &Scenario,
    replication: u32,
    calendar: bool,
) -> Result<RawReplication, ScenarioError> {
    let (mut engine, seeds) = Engine::new(scenario, replication)?;
    engine.arrivals = engine.arrivals.rebuilt(calendar);
    engine.run(&mut |_| true)?;
    engine.finish(replication, seeds)
}

/// [`run_replication`] with the private hops (see [`PrivateHop`]) and the deliveries at
/// transmission ends (see [`sink_link`]) used or not; with the number of packets that reached
/// a link at the same nanosecond as the packet before them.
#[cfg(test)]
fn run_replication_shortcuts(
    scenario: &Scenario,
    replication: u32,
    shortcuts: bool,
) -> Result<(RawReplication, u64), ScenarioError> {
    let (mut engine, seeds) = Engine::new(scenario, replication)?;
    if !shortcuts {
        engine.hops.fill(PrivateHop::not_private());
        engine.sink = u32::MAX;
        engine.slot_link = u32::MAX;
        engine.ordered_propagations = false;
    }
    engine.run(&mut |_| true)?;
    let ties = engine.arrival_ties.1;
    Ok((engine.finish(replication, seeds)?, ties))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// A [`Scenario`](crate::scenario::Scenario) built or changed in code, whose paths the
    /// loader has not seen, is refused with an error naming the source and the key when a
    /// path is empty or names a link that does not exist (the engine reads links by these
    /// indices without bounds checks), and runs when they are right.
    #[test]
    fn a_scenario_built_in_code_with_a_bad_path_is_refused() {
        let text = "[run]\nduration = \"10ms\"\nseed = 1\nbin = \"5ms\"\n\
                    [[link]]\nname = \"l0\"\nrate = \"10Mbit\"\nscheduler = { kind = \"fifo\" }\n\
                    [[source]]\nname = \"a\"\nflow = 0\npath = [\"l0\"]\n\
                    arrivals = { model = \"poisson\", rate_pps = 1000 }\n\
                    size = { dist = \"constant\", size = 500 }\n";
        let loaded = crate::validate_scenario_text(text, Path::new(".")).unwrap();
        assert!(super::run_replication(&loaded, 0).unwrap().packets > 0);
        let refused = |change: &dyn Fn(&mut crate::scenario::Scenario)| {
            let mut scenario = loaded.clone();
            change(&mut scenario);
            match super::run_replication(&scenario, 0) {
                Ok(_) => panic!("the changed scenario ran"),
                Err(error) => error.to_string(),
            }
        };
        let empty = refused(&|scenario| scenario.sources[0].path.clear());
        assert!(
            empty.contains("sources[0] (a).path") && empty.contains("at least one link"),
            "{empty}"
        );
        let no_links = refused(&|scenario| scenario.links.clear());
        assert!(
            no_links.contains("sources[0] (a).path") && no_links.contains("link index 0"),
            "{no_links}"
        );
        let unknown = refused(&|scenario| scenario.sources[0].path.push(7));
        assert!(
            unknown.contains("[0, 7]") && unknown.contains("not one of the scenario's 1 links"),
            "{unknown}"
        );
        let echo = refused(&|scenario| {
            scenario.sources[0].echo = Some(crate::scenario::AckReturn::Path(vec![3]));
        });
        assert!(echo.contains("sources[0] (a).ack_path"), "{echo}");
    }

    /// One `[[source]]` of the random test networks: flow `flow` over `path` (quoted link
    /// names, comma-separated), arrivals by `model` (0 Poisson, 1 CBR, otherwise on-off at
    /// three times the rate while on) at `rate_pps`, sizes uniform from 40 to `max_size` bytes.
    fn source_toml(flow: usize, path: &str, model: u8, rate_pps: u32, max_size: u32) -> String {
        let arrivals = match model % 3 {
            0 => format!("{{ model = \"poisson\", rate_pps = {rate_pps} }}"),
            1 => format!("{{ model = \"cbr\", rate_pps = {rate_pps} }}"),
            _ => format!(
                "{{ model = \"on_off\", mean_on = \"20ms\", mean_off = \"30ms\", rate_pps = {} }}",
                rate_pps * 3
            ),
        };
        format!(
            "[[source]]\nflow = {flow}\npath = [{path}]\narrivals = {arrivals}\n\
             size = {{ dist = \"uniform\", min = 40, max = {max_size} }}\n"
        )
    }

    /// Asserts that two runs of one scenario (with and without some shortcut) give the same
    /// statistics: packets, the window and the end, every flow's counts, sums, delay and
    /// jitter histograms, and every per-bin, per-link and per-class table. The number of
    /// events is left to the caller (a shortcut may handle fewer).
    fn assert_same_run(a: &super::RawReplication, b: &super::RawReplication) {
        assert_eq!(a.packets, b.packets);
        assert_eq!((a.window_end, a.end_time), (b.window_end, b.end_time));
        assert_eq!(a.flows.len(), b.flows.len());
        for (x, y) in a.flows.iter().zip(&b.flows) {
            assert_eq!(
                (x.sent, x.sent_bytes, x.received, x.received_bytes),
                (y.sent, y.sent_bytes, y.received, y.received_bytes)
            );
            assert_eq!(
                (x.dropped, x.delay_sum, x.delay_max),
                (y.dropped, y.delay_sum, y.delay_max)
            );
            assert_eq!(x.delay, y.delay);
            assert_eq!(x.jitter, y.jitter);
        }
        assert_eq!(a.in_flight, b.in_flight);
        assert_eq!(a.flow_series, b.flow_series);
        assert_eq!(a.link_window, b.link_window);
        assert_eq!(a.link_max_backlog, b.link_max_backlog);
        assert_eq!(a.link_series, b.link_series);
        assert_eq!(a.link_class_window, b.link_class_window);
        assert_eq!(a.link_class_busy_series, b.link_class_busy_series);
        assert_eq!(a.link_left_queued, b.link_left_queued);
        assert_eq!(a.link_idle_while_backlogged, b.link_idle_while_backlogged);
    }

    /// One FIFO access link `access_{index}` of the random test networks.
    fn access_link_toml(index: usize, rate_kbit: u32, delay_us: u32) -> String {
        format!(
            "[[link]]\nname = \"access_{index}\"\nrate = \"{rate_kbit}kbit\"\ndelay = \"{delay_us}us\"\n\
             scheduler = {{ kind = \"fifo\" }}\n"
        )
    }

    use proptest::prelude::*;

    prop_compose! {
        /// The random access networks of `shortcuts_change_no_statistic` and
        /// `lean_loops_change_no_statistic`: a source per entry of `access` (access link rate
        /// and delay — none on every third —, model, rate, largest size) over its own access
        /// link into one link `bottleneck` whose scheduler is one of `kinds`, 1.5 s long with
        /// 100 ms bins, random warm-up and drain.
        fn access_networks(kinds: Vec<&'static str>)(
            access in prop::collection::vec((100u32..3000, 0u32..3000, 0u8..3, 5u32..150, 40u32..1500), 1..12),
            bottleneck_kbit in 500u32..5000,
            bottleneck_delay_us in 0u32..2000,
            warmup_ms in prop::sample::select(vec![0u32, 300]),
            drain in any::<bool>(),
            kind in prop::sample::select(kinds),
        ) -> crate::scenario::Scenario {
            let mut text = format!(
                "[run]\nduration = \"1500ms\"\nwarmup = \"{warmup_ms}ms\"\nseed = 4\nbin = \"100ms\"\ndrain = {drain}\n\
                 [[link]]\nname = \"bottleneck\"\nrate = \"{bottleneck_kbit}kbit\"\ndelay = \"{bottleneck_delay_us}us\"\n\
                 scheduler = {{ kind = \"{kind}\" }}\n"
            );
            for (i, (rate_kbit, delay_us, _, _, _)) in access.iter().enumerate() {
                text += &access_link_toml(i, *rate_kbit, if i % 3 == 0 { 0 } else { *delay_us });
            }
            for (i, (_, _, model, rate, size)) in access.iter().enumerate() {
                text += &source_toml(
                    i,
                    &format!("\"access_{i}\", \"bottleneck\""),
                    *model,
                    *rate,
                    *size,
                );
            }
            crate::scenario::parse_scenario(&text, Path::new(".")).unwrap()
        }
    }

    /// A random network: `links` links in a chain with random rates, delays and buffers, and
    /// sources over random sub-paths with random models.
    fn scenario(links: &[(u32, u32, u32)], sources: &[(usize, usize, u8, u32, u32)], kind: &str) -> String {
        let mut text =
            String::from("[run]\nduration = \"2s\"\nwarmup = \"200ms\"\nseed = 3\nbin = \"100ms\"\n");
        for (i, (rate_kbit, delay_us, buffer)) in links.iter().enumerate() {
            text += &format!(
                "[[link]]\nname = \"l{i}\"\nrate = \"{rate_kbit}kbit\"\ndelay = \"{delay_us}us\"\n\
                 buffer = {buffer}\nscheduler = {{ kind = \"{kind}\"{} }}\n",
                required_parameters(kind)
            );
        }
        for (i, (from, hops, model, rate, size)) in sources.iter().enumerate() {
            let from = from % links.len();
            let to = (from + 1 + hops % (links.len() - from)).min(links.len());
            let path: Vec<String> = (from..to).map(|l| format!("\"l{l}\"")).collect();
            text += &source_toml(i, &path.join(", "), *model, *rate, *size);
        }
        text
    }

    /// A link that every path ends at but that a path also crosses before its end is no sink
    /// (a packet there may not be at its last hop, and the sink's transmission end delivers
    /// without asking): such a run delivers through propagation events, with the same
    /// statistics as without the shortcuts.
    #[test]
    fn a_sink_crossed_before_the_end_of_a_path_is_no_sink() {
        let mut text = String::from(
            "[run]\nduration = \"2s\"\nwarmup = \"200ms\"\nseed = 5\nbin = \"100ms\"\ndrain = true\n",
        );
        for l in 0..2 {
            text += &format!(
                "[[link]]\nname = \"l{l}\"\nrate = \"2Mbit\"\ndelay = \"1ms\"\nscheduler = {{ kind = \"drr\", quantum = 1500 }}\n"
            );
        }
        text += &source_toml(0, "\"l1\"", 0, 200, 1000);
        text += &source_toml(1, "\"l0\", \"l1\"", 0, 200, 1000);
        let once = crate::scenario::parse_scenario(&text, Path::new(".")).unwrap();
        assert_eq!(super::sink_link(&once), Some(1));
        // (The loader refuses a path that crosses a link twice; a scenario built in code may.)
        let mut twice = once.clone();
        twice.sources[1].path = vec![1, 0, 1];
        assert_eq!(
            super::sink_link(&twice),
            None,
            "l1 is crossed before the end of a path"
        );
        let (with, _) = super::run_replication_shortcuts(&twice, 0, true).unwrap();
        let (without, _) = super::run_replication_shortcuts(&twice, 0, false).unwrap();
        assert!(with.packets > 500, "{} packets", with.packets);
        assert_same_run(&with, &without);
        assert_eq!(with.events, without.events);
    }

    /// Prefetching and deferring each delay's histogram count by a few deliveries change no
    /// statistic: the same network with and without them (many flows over their own access
    /// links into one DRR link, as `bench/scenarios/ns2_bottleneck.py` writes, plus a few
    /// that share a second link, random sizes) gives every flow the same counts, delays,
    /// jitter and delay histogram, and every link the same totals.
    #[test]
    fn prefetching_changes_no_statistic() {
        let mut text =
            String::from("[run]\nduration = \"3s\"\nwarmup = \"300ms\"\nseed = 5\nbin = \"500ms\"\n");
        text += "[[link]]\nname = \"bottleneck\"\nrate = \"10Mbit\"\ndelay = \"1ms\"\nbuffer = 60000\n\
                 scheduler = { kind = \"drr\", quantum = 1500 }\n";
        text += "[[link]]\nname = \"shared\"\nrate = \"2Mbit\"\ndelay = \"0ms\"\nscheduler = { kind = \"fifo\" }\n";
        let flows = 300;
        for flow in 0..flows {
            text += &format!(
                "[[link]]\nname = \"access_{flow}\"\nrate = \"1Gbit\"\ndelay = \"1ms\"\nscheduler = {{ kind = \"fifo\" }}\n"
            );
        }
        for flow in 0..flows {
            let path = if flow % 50 == 0 {
                format!("[\"access_{flow}\", \"shared\", \"bottleneck\"]")
            } else {
                format!("[\"access_{flow}\", \"bottleneck\"]")
            };
            text += &format!(
                "[[source]]\nflow = {flow}\npath = {path}\narrivals = {{ model = \"poisson\", rate_pps = 6 }}\n\
                 size = {{ dist = \"uniform\", min = 40, max = 1500 }}\n"
            );
        }
        let scenario = crate::scenario::parse_scenario(&text, Path::new(".")).unwrap();
        let with = super::run_replication_prefetching(&scenario, 0, true).unwrap();
        let without = super::run_replication_prefetching(&scenario, 0, false).unwrap();
        assert!(with.packets > 3000, "{} packets", with.packets);
        assert_same_run(&with, &without);
        assert_eq!(with.events, without.events);
        let dropped: u64 = with.flows.iter().map(|f| f.dropped.iter().sum::<u64>()).sum();
        assert!(dropped > 0, "the bottleneck's buffer should drop some packets");
        for flow in &with.flows {
            assert!(flow.received > 0);
            assert_eq!(flow.delay.to_hdr().len(), flow.received);
        }
        assert_eq!(with.flow_series, without.flow_series);
    }

    /// Private FIFO hops (Lindley's recursion instead of the hop's scheduler and events) and
    /// deliveries recorded at their last transmission end change no statistic and no event
    /// count: flows over their own slow access links (queues form there; half without
    /// propagation delay), some shaped, some on-off, into a DRR link, with a warm-up, bins of
    /// 100 ms, with and without drain (deliveries at transmission ends only with drain), give
    /// every flow, link and bin the same values with and without them. (The bottleneck's
    /// delay is no multiple of its time per byte, so no delivery falls on the nanosecond of
    /// one of its transmission ends: such a tie may change the event count, see
    /// `docs/performance.md`.)
    #[test]
    fn private_hops_and_deliveries_at_transmission_end_change_no_statistic() {
        for drain in [false, true] {
            let mut text = format!(
                "[run]\nduration = \"4s\"\nwarmup = \"700ms\"\nseed = 9\nbin = \"100ms\"\ndrain = {drain}\n"
            );
            text += "[[link]]\nname = \"bottleneck\"\nrate = \"5Mbit\"\ndelay = \"1000300ns\"\n\
                     scheduler = { kind = \"drr\", quantum = 1500 }\n";
            let flows = 40;
            for flow in 0..flows {
                let delay = if flow % 2 == 0 { "0ms" } else { "3ms" };
                text += &format!(
                    "[[link]]\nname = \"access_{flow}\"\nrate = \"250kbit\"\ndelay = \"{delay}\"\nscheduler = {{ kind = \"fifo\" }}\n"
                );
            }
            for flow in 0..flows {
                let arrivals = if flow % 3 == 0 {
                    "{ model = \"on_off\", mean_on = \"50ms\", mean_off = \"80ms\", rate_pps = 60 }"
                } else {
                    "{ model = \"poisson\", rate_pps = 14 }"
                };
                let shaper = if flow % 5 == 0 {
                    "shaper = { sigma = \"3KB\", rho = \"200kbit\" }\n"
                } else {
                    ""
                };
                text += &format!(
                    "[[source]]\nflow = {flow}\nclass = {}\npath = [\"access_{flow}\", \"bottleneck\"]\narrivals = {arrivals}\n\
                     size = {{ dist = \"uniform\", min = 40, max = 1500 }}\n{shaper}",
                    flow % 3
                );
            }
            let scenario = crate::scenario::parse_scenario(&text, Path::new(".")).unwrap();
            assert_eq!(
                super::private_hops(&scenario).iter().filter(|&&p| p).count(),
                flows,
                "every access link is a private hop"
            );
            assert_eq!(super::sink_link(&scenario), drain.then_some(0));
            let (with, _) = super::run_replication_shortcuts(&scenario, 0, true).unwrap();
            let (without, _) = super::run_replication_shortcuts(&scenario, 0, false).unwrap();
            assert!(with.packets > 2000, "{} packets", with.packets);
            assert_same_run(&with, &without);
            assert_eq!(with.events, without.events);
            // The access links queued packets (Lindley's recursion had work to do).
            assert!(with.link_max_backlog[1..].iter().any(|&(packets, _)| packets > 2));
            if !drain {
                assert!(
                    with.link_left_queued[1..].iter().any(|&q| q > 0),
                    "halted with packets queued"
                );
            }
        }
    }

    /// The scheduler keys a discipline cannot do without (the CPU-share policies' `share` and
    /// `interval`), as `, key = value` text.
    fn required_parameters(kind: &str) -> &'static str {
        match kind {
            "dynamic_priority" | "adaptive" => ", share = [0.4, 0.3, 0.3], interval = \"10ms\"",
            _ => "",
        }
    }

    proptest! {
        /// A prepared service time is `ServiceTime::of`'s, for rates that divide 8·10⁹ (a whole
        /// number of nanoseconds a byte, up to and beyond `u32::MAX`) and rates that do not.
        #[test]
        fn prepared_service_is_service_time(
            per_packet in prop_oneof![Just(0u64), 0u64..1_000_000],
            rate in prop_oneof![
                (0usize..12).prop_map(|i| [1u64, 2, 8, 10, 1_000, 8_000, 10_000_000, 1_000_000_000, 8_000_000_000, 16_000_000_000, 125, 3][i]),
                1u64..20_000_000_000,
            ],
            size in prop_oneof![0u32..3000, any::<u32>()],
            rated in any::<bool>(),
        ) {
            let service = schedlab_core::ServiceTime {
                per_packet,
                rate: rated.then(|| schedlab_core::Rate::from_bits_per_second(rate).unwrap()),
            };
            prop_assert_eq!(super::PreparedService::new(service).of(size), service.of(size));
        }

        /// For any fixed time, rate and size, a prepared service time is `ServiceTime::of`'s,
        /// and both are the exact sum saturated at `TimeNs::MAX` (neither wraps nor panics).
        #[test]
        fn service_times_saturate(
            per_packet in prop_oneof![any::<u64>(), (u64::MAX - 1_000_000)..=u64::MAX, 0u64..1_000_000],
            rate in prop_oneof![1u64..=16, any::<u64>().prop_map(|r| r.max(1)), Just(8_000_000_000u64)],
            size in prop_oneof![any::<u32>(), Just(u32::MAX)],
        ) {
            let rate = schedlab_core::Rate::from_bits_per_second(rate).unwrap();
            let service = schedlab_core::ServiceTime { per_packet, rate: Some(rate) };
            let exact = per_packet as u128 + (size as u128 * 8_000_000_000).div_ceil(rate.bits_per_second() as u128);
            let saturated = exact.min(u64::MAX as u128) as u64;
            prop_assert_eq!(service.of(size), saturated);
            prop_assert_eq!(super::PreparedService::new(service).of(size), saturated);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Private hops and deliveries at transmission ends change no statistic on random
        /// networks: flows over their own access links (random rates and delays, some without
        /// delay) into one DRR or FIFO link, random models (CBR included, whose times can fall
        /// on bin boundaries), sizes, warm-up and drain. Runs in which two packets reach a
        /// link at the same nanosecond are left out: the two paths order such packets
        /// differently (a private hop by the packets' emissions, the general path by when each
        /// packet's last event before the link was scheduled; see "Same-nanosecond arrivals
        /// from private hops" in docs/performance.md), and the order changes which is served
        /// first. Such runs are rare (CBR sources whose emissions and access links line up).
        #[test]
        fn shortcuts_change_no_statistic(scenario in access_networks(vec!["drr", "fifo"])) {
            let (without, ties) = super::run_replication_shortcuts(&scenario, 0, false).unwrap();
            prop_assume!(ties == 0);
            let (with, ties) = super::run_replication_shortcuts(&scenario, 0, true).unwrap();
            prop_assert_eq!(ties, 0);
            assert_same_run(&with, &without);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        /// The lean loops ([`super::LeanPath`], and [`super::LeanPrefetchingPath`] with
        /// prefetching forced on) give the run the loop of every feature gives, event count
        /// included: random networks as in `shortcuts_change_no_statistic`, whose open-loop
        /// sources over plain links take a lean loop.
        #[test]
        fn lean_loops_change_no_statistic(
            scenario in access_networks(vec!["drr", "fifo", "wf2q_plus"]),
            prefetching in any::<bool>(),
        ) {
            let (mut engine, _) = super::Engine::new(&scenario, 0).unwrap();
            prop_assert!(engine.lean_path());
            engine.prefetching = prefetching;
            let (mut any, seeds) = super::Engine::new(&scenario, 0).unwrap();
            any.prefetching = prefetching;
            engine.run(&mut |_| true).unwrap();
            any.run_as::<super::AnyPath>(&mut |_| true).unwrap();
            prop_assert_eq!(engine.events, any.events);
            let lean = engine.finish(0, seeds.clone()).unwrap();
            let any = any.finish(0, seeds).unwrap();
            prop_assert_eq!(lean.events, any.events);
            assert_same_run(&lean, &any);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// The sources' clock as a tree and as a calendar give the same run (the clock is
        /// a tree below `CALENDAR_FROM_SOURCES` sources, a calendar from there on): random
        /// networks of Poisson, CBR (same-time ties) and on-off sources, some starting late or
        /// stopping early, over access links into a DRR or FIFO link.
        #[test]
        fn source_clock_kind_changes_no_statistic(
            access in prop::collection::vec((100u32..3000, 0u32..3000, 0u8..3, 5u32..150, 0u32..1500), 1..40),
            bottleneck_kbit in 500u32..5000,
            kind in prop::sample::select(vec!["drr", "fifo"]),
        ) {
            let mut text = format!(
                "[run]\nduration = \"1500ms\"\nwarmup = \"200ms\"\nseed = 9\nbin = \"100ms\"\n\
                 [[link]]\nname = \"bottleneck\"\nrate = \"{bottleneck_kbit}kbit\"\ndelay = \"1ms\"\n\
                 scheduler = {{ kind = \"{kind}\" }}\n"
            );
            for (i, (rate_kbit, delay_us, _, _, _)) in access.iter().enumerate() {
                text += &access_link_toml(i, *rate_kbit, *delay_us);
            }
            for (i, (_, _, model, rate, start_ms)) in access.iter().enumerate() {
                text += &source_toml(i, &format!("\"access_{i}\", \"bottleneck\""), *model, *rate, 1500);
                if i % 4 == 1 {
                    text += &format!("start = \"{start_ms}ms\"\n");
                }
                if i % 4 == 2 {
                    text += &format!("stop = \"{}ms\"\n", start_ms + 1);
                }
            }
            let scenario = crate::scenario::parse_scenario(&text, Path::new(".")).unwrap();
            let tree = super::run_replication_clock(&scenario, 0, false).unwrap();
            let calendar = super::run_replication_clock(&scenario, 0, true).unwrap();
            assert_same_run(&tree, &calendar);
            prop_assert_eq!(tree.events, calendar.events);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Under every registered discipline, every measured packet is received or dropped
        /// exactly once (the network drains),
        /// nothing is left queued, and the median delay is at least the path's transmission
        /// and propagation time of the smallest packet.
        #[test]
        fn every_measured_packet_is_accounted_for(
            links in prop::collection::vec((100u32..5000, 0u32..2000, 1500u32..20_000), 1..4),
            sources in prop::collection::vec((0usize..3, 0usize..3, 0u8..3, 10u32..400, 40u32..1500), 1..6),
            kind in prop::sample::select(schedlab_core::DISCIPLINES.iter().map(|d| d.id).collect::<Vec<_>>()),
        ) {
            let text = scenario(&links, &sources, kind);
            let results = crate::run_scenario_text(&text, Path::new(".")).unwrap();
            let replication = &results.replications[0];
            for row in &replication.flows {
                let get = |name: &str| match crate::results::cell(row, name) {
                    Some(crate::results::Cell::Count(v)) => *v,
                    other => panic!("{name}: {other:?}"),
                };
                prop_assert_eq!(get("sent"), get("received") + get("dropped"), "{}", text);
                prop_assert_eq!(get("in_flight"), 0);
            }
            for row in &replication.links {
                prop_assert_eq!(crate::results::cell(row, "left_queued"), Some(&crate::results::Cell::Count(0)));
            }
            let scenario = &results.scenario;
            for (source, row) in scenario.sources.iter().zip(&replication.flows) {
                if let Some(crate::results::Cell::Real(Some(min_delay))) = crate::results::cell(row, "delay_p50_s") {
                    let floor: f64 = source
                        .path
                        .iter()
                        .map(|&l| {
                            let link = &scenario.links[l];
                            (link.service.of(40) + link.delay) as f64 / 1e9
                        })
                        .sum();
                    prop_assert!(*min_delay >= floor * 0.999, "median {} below floor {}", min_delay, floor);
                }
            }
        }
    }

    proptest! {
        /// A private hop's queue in the shared pool against a `VecDeque` of (packet, start,
        /// end) with a count of forwarded entries (the queue it replaced): the same entries
        /// in the same order, the same forwarded packets and next propagation times, the same
        /// waiting backlog and take-backs, and a pool no larger than the most entries held.
        #[test]
        fn private_hop_queue_matches_a_deque(
            steps in proptest::collection::vec((0u64..3_000, 1u32..1_500, 0usize..3), 1..200),
        ) {
            use super::{Engine, LinkState, Packet, PrivateHop, TransitPool};
            let text = "[run]\nduration = \"1s\"\n[[link]]\nname = \"a\"\nrate = \"1Mbit\"\ndelay = \"1ms\"\n\
                        scheduler = { kind = \"fifo\" }\n[[source]]\npath = [\"a\"]\n\
                        arrivals = { model = \"poisson\", rate_pps = 1 }\nsize = { dist = \"constant\", size = 100 }\n";
            let scenario = crate::validate_scenario_text(text, Path::new(".")).unwrap();
            let (engine, _) = Engine::new(&scenario, 0).unwrap();
            let link: &LinkState = &engine.links[0];
            let mut hop = PrivateHop::new(link);
            let mut pool = TransitPool::new();
            let mut cold = Engine::new(&scenario, 0).unwrap().0.links.remove(0);
            let mut model: std::collections::VecDeque<(Packet, u64, u64)> = Default::default();
            let mut forwarded = 0usize;
            let mut free_at = 0u64;
            let mut now = 0u64;
            let mut most = 0usize;
            for (id, &(gap, size, forwards)) in steps.iter().enumerate() {
                now += gap * 1_000;
                for _ in 0..forwards {
                    if forwarded < model.len() {
                        let (packet, next) = hop.forward_next(now, &mut pool);
                        prop_assert_eq!(packet, model[forwarded].0);
                        prop_assert_eq!(next, model.get(forwarded + 1).map(|e| e.2 + hop.delay));
                        forwarded += 1;
                        while forwarded > 0 && model.front().is_some_and(|e| e.2 < now) {
                            model.pop_front();
                            forwarded -= 1;
                        }
                    }
                }
                while forwarded > 0 && model.front().is_some_and(|e| e.2 < now) {
                    model.pop_front();
                    forwarded -= 1;
                }
                let none_unforwarded = forwarded == model.len();
                let packet = Packet::new(id as u64, 0, size, now);
                let (end, only) = hop.pass(packet, now, true, &mut pool, &mut cold);
                let start = now.max(free_at);
                free_at = start + link.service.of(size);
                prop_assert_eq!(end, free_at);
                prop_assert_eq!(only, none_unforwarded);
                model.push_back((packet, start, free_at));
                most = most.max(model.len());
                let entries: Vec<(u64, u64, u64)> = hop.entries(&pool).map(|e| (e.id, e.start, e.end)).collect();
                let expected: Vec<(u64, u64, u64)> = model.iter().map(|e| (e.0.id, e.1, e.2)).collect();
                prop_assert_eq!(entries, expected);
                let probe = now + gap * 500;
                let waiting = model.iter().rev().take_while(|e| e.1 >= probe).count() as u64;
                let waiting = if free_at < probe { 0 } else { waiting };
                prop_assert_eq!(hop.waiting(probe, &pool).packets, waiting);
                let unfinished = model.iter().rev().take_while(|e| e.2 >= probe).count() as u64;
                prop_assert_eq!(hop.unfinished(probe, &pool), unfinished);
            }
            prop_assert!(pool.entries.len() <= most);
        }
    }
}
