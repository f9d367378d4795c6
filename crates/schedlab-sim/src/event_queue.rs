//! The engine's pending events, ordered by `(time, seq)`: the sources' next packets in a
//! [`SourceClock`] (a tree or a calendar queue, one slot per source), propagation events
//! scheduled in increasing order in an [`EventFifo`] (a ring), everything else (transmission
//! ends, propagation out of order, decisions, bin ticks, window marks) in an [`EventQueue`]
//! (a binary heap). The engine takes the smallest of the minima, so events are handled in
//! exactly the order one heap of all of them would give.
//!
//! `seq` is unique (the engine stamps a counter on every push), so no two events compare
//! equal and the order is total and deterministic. The pair is stored as one `u128` key
//! (`time` in the high half), so that every comparison is one wide integer comparison, and
//! the event being handled can be replaced in place (one sift-down instead of a pop and a
//! push). On the simulator benchmark this heap costs about as many instructions as
//! `std::collections::BinaryHeap` and, in callgrind's branch model, mispredicts less.
//!
//! The layout is the usual implicit binary heap (children of `i` at `2i + 1`, `2i + 2`), so
//! [`EventQueue::as_slice`] lets the engine look at the root's children.

use schedlab_core::TimeNs;

/// A pending event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    /// `time << 64 | seq`.
    key: u128,
    /// What to do (the engine's kind and index).
    pub tag: u32,
}

impl Event {
    /// An event at `time` with sequence number `seq`.
    #[inline(always)]
    pub fn new(time: TimeNs, seq: u64, tag: u32) -> Event {
        Event {
            key: ((time as u128) << 64) | seq as u128,
            tag,
        }
    }

    /// Its time, ns.
    #[inline(always)]
    pub fn time(&self) -> TimeNs {
        (self.key >> 64) as TimeNs
    }

    /// `(time, seq)` as one integer (`time` in the high half).
    #[inline(always)]
    pub fn key(&self) -> u128 {
        self.key
    }

    /// Its sequence number.
    #[inline(always)]
    pub fn seq(&self) -> u64 {
        self.key as u64
    }
}

/// A binary min-heap of [`Event`]s by `(time, seq)`.
#[derive(Debug, Default)]
pub(crate) struct EventQueue {
    heap: Vec<Event>,
}

impl EventQueue {
    /// An empty queue with room for `capacity` events.
    pub fn with_capacity(capacity: usize) -> EventQueue {
        EventQueue {
            heap: Vec::with_capacity(capacity),
        }
    }

    /// The number of pending events.
    #[inline]
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// The earliest event.
    #[inline(always)]
    pub fn peek(&self) -> Option<&Event> {
        self.heap.first()
    }

    /// The events in heap order (the root first, the children of `i` at `2i + 1`, `2i + 2`).
    #[inline(always)]
    pub fn as_slice(&self) -> &[Event] {
        &self.heap
    }

    /// Adds `event`.
    #[inline]
    pub fn push(&mut self, event: Event) {
        self.heap.push(event);
        let heap = self.heap.as_mut_slice();
        let mut hole = heap.len() - 1;
        while hole > 0 {
            let parent = (hole - 1) / 2;
            if heap[parent].key < event.key {
                break;
            }
            heap[hole] = heap[parent];
            hole = parent;
        }
        heap[hole] = event;
    }

    /// Replaces the earliest event by `event` (the queue must not be empty).
    #[inline(always)]
    pub fn replace_top(&mut self, event: Event) {
        self.sift_down_from_root(event);
    }

    /// Removes the earliest event.
    #[inline]
    pub fn pop(&mut self) {
        if let Some(last) = self.heap.pop() {
            if !self.heap.is_empty() {
                self.sift_down_from_root(last);
            }
        }
    }

    /// Puts `event` at the root and moves it down to its place.
    #[inline(always)]
    fn sift_down_from_root(&mut self, event: Event) {
        let heap = self.heap.as_mut_slice();
        let len = heap.len();
        let mut hole = 0;
        loop {
            let left = 2 * hole + 1;
            if left >= len {
                break;
            }
            let right = left + 1;
            let child = if right < len && heap[right].key < heap[left].key {
                right
            } else {
                left
            };
            if event.key < heap[child].key {
                break;
            }
            heap[hole] = heap[child];
            hole = child;
        }
        heap[hole] = event;
    }
}

/// Events in the order they were added (a ring buffer whose capacity is a power of two, so
/// that a position wraps with a mask; it doubles when full). The engine keeps only events in
/// increasing `(time, seq)` order here, so the front is the earliest. The keys of the front
/// and the back are kept beside the buffer, so that the engine's loop, which compares the
/// front's key with the other queues' on every event, reads one field.
#[derive(Debug)]
pub(crate) struct EventFifo {
    /// The first event's key ([`NEVER`] when empty).
    front_key: u128,
    /// The last event's key (0 when empty).
    back_key: u128,
    /// `buf.len()` is a power of two; the events are at `head`, `head + 1`, … (`& mask`).
    buf: Vec<Event>,
    head: usize,
    len: usize,
}

impl EventFifo {
    /// An empty queue with room for at least `capacity` events.
    pub fn with_capacity(capacity: usize) -> EventFifo {
        EventFifo {
            front_key: NEVER,
            back_key: 0,
            buf: vec![Event::new(0, 0, 0); capacity.max(2).next_power_of_two()],
            head: 0,
            len: 0,
        }
    }

    /// The number of events.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// The first event's key, [`NEVER`] when empty.
    #[inline(always)]
    pub fn front_key(&self) -> u128 {
        self.front_key
    }

    /// The last event's key, 0 when empty.
    #[inline(always)]
    pub fn back_key(&self) -> u128 {
        self.back_key
    }

    /// Adds `event` at the back.
    #[inline(always)]
    pub fn push_back(&mut self, event: Event) {
        if self.len == self.buf.len() {
            self.grow();
        }
        let mask = self.buf.len() - 1;
        self.buf[(self.head + self.len) & mask] = event;
        if self.len == 0 {
            self.front_key = event.key;
        }
        self.back_key = event.key;
        self.len += 1;
    }

    /// Removes and returns the first event.
    #[inline(always)]
    pub fn pop_front(&mut self) -> Option<Event> {
        if self.len == 0 {
            return None;
        }
        let mask = self.buf.len() - 1;
        let event = self.buf[self.head & mask];
        self.head = (self.head + 1) & mask;
        self.len -= 1;
        if self.len == 0 {
            self.front_key = NEVER;
            self.back_key = 0;
        } else {
            self.front_key = self.buf[self.head].key;
        }
        Some(event)
    }

    /// Doubles the capacity, the events in order from position 0.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let mask = self.buf.len() - 1;
        let mut buf = Vec::with_capacity(2 * self.buf.len());
        buf.extend((0..self.len).map(|i| self.buf[(self.head + i) & mask]));
        buf.resize(2 * self.buf.len(), Event::new(0, 0, 0));
        self.buf = buf;
        self.head = 0;
    }
}

/// The key of a source with no pending packet: larger than every event's.
pub(crate) const NEVER: u128 = u128::MAX;

/// The end of a day's list of sources.
const NO_SOURCE: u32 = u32::MAX;

/// Days of a [`SourceCalendar`] per source (rounded up to a power of two, at least 16).
const DAYS_PER_SOURCE: usize = 2;

/// Updates of the earliest source between two looks at what the clock's days cost (at least;
/// twice the number of sources if more, so that choosing the day again, which sorts the keys,
/// costs O(log n) an update).
const UPDATES_PER_CHECK: u32 = 4096;

/// Days scanned and list entries passed per update above which the clock chooses its day again.
const STEPS_PER_UPDATE_LIMIT: u32 = 4;

/// A source's key and the next source of its day's list (32 bytes: two a cache line).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(32))]
struct ClockNode {
    key: u128,
    next: u32,
}

/// The first and the last source of a day's list (when empty, `head` is [`NO_SOURCE`] and
/// `tail` the calendar's sentinel node, whose key 0 precedes every key: a new key then takes
/// the same path as one after the last of a list, without a branch on the list's emptiness,
/// which is as likely as not).
#[derive(Clone, Copy, Debug)]
struct Day {
    head: u32,
    tail: u32,
}

/// The next-packet key `(time, seq)` of every source, in a calendar queue (R. Brown,
/// "Calendar Queues: A Fast O(1) Priority Queue Implementation for the Simulation Event Set
/// Problem", CACM 31(10), 1988): a circular array of days of `2^shift` ns, each day a list of
/// the sources whose key falls on it, sorted by key, so the order is exact, ties included.
/// A key `k` is on day `time(k) >> shift`, in list `day & (days − 1)`; lists also hold keys of
/// later years (a day number larger by a multiple of the array's length), after this year's.
///
/// Nearly every update is the earliest source's (it emits and draws its next packet, later
/// than the one emitted): it leaves the head of the current day's list, joins its new day's
/// list (at the tail when it is the largest there, as it is with ties in time, or at the head,
/// or by a walk), and the earliest is then the first head, from the current day on (a bitmap
/// of the non-empty lists skips empty days), whose key is on the day scanned. The day is
/// chosen from the pending keys when the earliest source is first updated (after the engine
/// has drawn every source's first packet) so that one or two keys fall on a day, and again
/// when the scans and walks grow long. With `n` Poisson sources the next keys spread over a
/// few mean gaps of one source, about `n` days, and the array holds `2n` to `4n` days. Any
/// other update (a source that is not the earliest, a key earlier than the one it replaces, a
/// clear) goes through a general path.
///
/// The core's `schedlab_core::tag_calendar::TagCalendar` is the same idea for the schedulers'
/// tags, built for other owners: 32,768 fixed days (132 KiB), an overflow heap, 64-byte nodes
/// with a back link and the entry's payload. As the source clock it cost more than the tree
/// at 10 sources (1,725 instructions a packet against 1,599 on the ns-2 scenario) and only 5 %
/// less at 1,000 (2,290 against 2,404, with more second-level misses), where this one costs
/// 2,157 (session 9 of `docs/performance.md`).
#[derive(Debug)]
pub(crate) struct SourceCalendar {
    /// Per source: its key ([`NEVER`] if none) and its successor in its day's list; then the
    /// sentinel, the tail of every empty list (key 0, its `next` written and never read).
    nodes: Vec<ClockNode>,
    /// The sentinel's index: the number of sources.
    sentinel: u32,
    /// Per day modulo the array's length (a power of two): its list.
    days: Vec<Day>,
    /// Bit `d % 64` of word `d / 64`: list `d` is not empty (so that a scan passes 64 empty
    /// days with one test).
    occupied: Vec<u64>,
    /// A day is `2^shift` ns.
    shift: u32,
    /// The current day: no pending key is on an earlier day, and the earliest key, if any, is
    /// on this one.
    day: u64,
    /// The earliest source and its key (`(0, NEVER)` if no source has one).
    earliest: (usize, u128),
    /// Sources with a key.
    pending: usize,
    /// Updates of the earliest source left before the next look at `steps` (1 until the day
    /// has been chosen from the keys, on the first such update).
    updates_left: u32,
    /// Updates of the earliest source between two looks at `steps`.
    updates_per_check: u32,
    /// Days scanned and list entries passed since the last look.
    steps: u32,
    /// Whether the day has been chosen from the keys.
    planned: bool,
}

impl SourceCalendar {
    /// A calendar for `sources` sources, none with a pending packet.
    pub fn new(sources: usize) -> SourceCalendar {
        let days = Self::days_for(sources);
        let sentinel = u32::try_from(sources).expect("fewer than 2^32 − 1 sources");
        let mut nodes = vec![
            ClockNode {
                key: NEVER,
                next: NO_SOURCE
            };
            sources + 1
        ];
        nodes[sources].key = 0;
        SourceCalendar {
            nodes,
            sentinel,
            days: vec![
                Day {
                    head: NO_SOURCE,
                    tail: sentinel
                };
                days
            ],
            occupied: vec![0; days.div_ceil(64)],
            // About 1 ms until the keys tell.
            shift: 20,
            day: 0,
            earliest: (0, NEVER),
            pending: 0,
            updates_left: 1,
            updates_per_check: UPDATES_PER_CHECK.max(sources.saturating_mul(2).min(u32::MAX as usize) as u32),
            steps: 0,
            planned: false,
        }
    }

    /// Bytes a calendar for `sources` sources holds on the heap: a node per source and its
    /// days (choosing the day sorts a copy of the keys, freed at once).
    fn bytes_for(sources: usize) -> usize {
        let days = Self::days_for(sources);
        (sources + 1) * std::mem::size_of::<ClockNode>()
            + days * std::mem::size_of::<Day>()
            + days.div_ceil(64) * std::mem::size_of::<u64>()
    }

    /// The number of days of a clock for `sources` sources.
    fn days_for(sources: usize) -> usize {
        (DAYS_PER_SOURCE * sources).max(16).next_power_of_two()
    }

    /// The day of `key`.
    #[inline(always)]
    fn day_of(&self, key: u128) -> u64 {
        ((key >> 64) as u64) >> self.shift
    }

    /// `nodes[i]` without a bounds check.
    ///
    /// # Safety
    /// `i < nodes.len()`. For the calendar's `nodes` every index it holds is one: a source
    /// with a key or the earliest (below the sentinel), a list's head, tail or successor (a
    /// source or the sentinel; a list's head is a source when the list is not empty).
    #[inline(always)]
    unsafe fn node(nodes: &mut [ClockNode], i: usize) -> &mut ClockNode {
        debug_assert!(i < nodes.len(), "node {i} of {}", nodes.len());
        // SAFETY: the caller's contract.
        unsafe { nodes.get_unchecked_mut(i) }
    }

    /// The bitmap's word of list `index`, without a bounds check.
    ///
    /// # Safety
    /// `index / 64 < occupied.len()`. The calendar's bitmap has `days.len().div_ceil(64)`
    /// words, so every list index (at most `days.len() − 1`) is one.
    #[inline(always)]
    unsafe fn occupied_word(occupied: &mut [u64], index: usize) -> &mut u64 {
        debug_assert!(index / 64 < occupied.len(), "list {index}");
        // SAFETY: the caller's contract.
        unsafe { occupied.get_unchecked_mut(index / 64) }
    }

    /// Sets source `source`'s next packet to `time`, sequence number `seq`.
    #[inline(always)]
    pub fn set(&mut self, source: usize, time: TimeNs, seq: u64) {
        let key = Event::new(time, seq, 0).key();
        if source == self.earliest.0 && key > self.earliest.1 {
            self.advance(source, key);
        } else {
            self.set_key(source, key);
        }
    }

    /// Source `source` has no pending packet.
    #[inline(always)]
    pub fn clear(&mut self, source: usize) {
        self.set_key(source, NEVER);
    }

    /// The earliest source, `source`, takes the later key `key`.
    #[inline(always)]
    fn advance(&mut self, source: usize, key: u128) {
        let mask = self.days.len() - 1;
        // The earliest source is the head of the current day's list.
        let index = self.day as usize & mask;
        let current = &mut self.days[..mask + 1][index];
        debug_assert_eq!(current.head as usize, source);
        // SAFETY: `source`, the earliest, is a node of the calendar.
        let node = unsafe { Self::node(&mut self.nodes, source) };
        let next = node.next;
        node.key = key;
        current.head = next;
        // When the list empties, its tail is the sentinel and its bit goes.
        let emptied = next == NO_SOURCE;
        current.tail = if emptied { self.sentinel } else { current.tail };
        // SAFETY: `index` is a list's (masked by the number of days).
        *unsafe { Self::occupied_word(&mut self.occupied, index) } &= !(u64::from(emptied) << (index % 64));
        let steps = self.link(source, key) + self.find_earliest();
        self.steps = self.steps.saturating_add(steps);
        self.updates_left -= 1;
        if self.updates_left == 0 {
            self.check();
        }
    }

    /// Puts `source`, whose node holds `key` (not [`NEVER`]), into its day's list; returns the
    /// number of entries passed.
    #[inline(always)]
    fn link(&mut self, source: usize, key: u128) -> u32 {
        let mask = self.days.len() - 1;
        let index = self.day_of(key) as usize & mask;
        // SAFETY: `index` is a list's (masked by the number of days).
        *unsafe { Self::occupied_word(&mut self.occupied, index) } |= 1 << (index % 64);
        let day = &mut self.days[..mask + 1][index];
        let nodes = &mut self.nodes[..];
        let s = source as u32;
        // SAFETY (every `node` below): its index is a node of the calendar — `source`, the
        // day's tail (a source, or the sentinel of an empty list), its head once the list is
        // known not to be empty, and the successors walked from the head (sources: the tail is
        // above `key`, so the walk stops before the list's end).
        // After the last (an empty list's tail is the sentinel, before every key).
        if unsafe { Self::node(nodes, day.tail as usize) }.key <= key {
            unsafe { Self::node(nodes, day.tail as usize) }.next = s;
            day.head = if day.head == NO_SOURCE { s } else { day.head };
            day.tail = s;
            unsafe { Self::node(nodes, source) }.next = NO_SOURCE;
            return 0;
        }
        // (The list is not empty: its head is a source.)
        if key < unsafe { Self::node(nodes, day.head as usize) }.key {
            unsafe { Self::node(nodes, source) }.next = day.head;
            day.head = s;
            return 0;
        }
        // Between the head and the tail: after the last entry below it (the tail is above it,
        // so the walk stops before the list's end).
        let mut before = day.head as usize;
        let mut passed = 1;
        loop {
            let after = unsafe { Self::node(nodes, before) }.next as usize;
            if key < unsafe { Self::node(nodes, after) }.key {
                unsafe { Self::node(nodes, source) }.next = after as u32;
                unsafe { Self::node(nodes, before) }.next = s;
                return passed;
            }
            before = after;
            passed += 1;
        }
    }

    /// Finds the earliest key from the current day on: the first head whose key is on the day
    /// scanned (a head on a later day is a later year's; a head is its list's least), going
    /// from one non-empty list to the next with the bitmap. Returns the number of days passed.
    #[inline(always)]
    fn find_earliest(&mut self) -> u32 {
        let mask = self.days.len() - 1;
        // Days a bitmap word covers (fewer than 64 with fewer days).
        let span = (mask + 1).min(64);
        let days = &self.days[..mask + 1];
        let mut day = self.day;
        let mut passed = 0;
        while passed <= mask {
            let index = day as usize & mask;
            // SAFETY: `index` is a list's (masked by the number of days).
            let bits = *unsafe { Self::occupied_word(&mut self.occupied, index) } >> (index % 64);
            if bits == 0 {
                let rest = span - (index & (span - 1));
                day = day.wrapping_add(rest as u64);
                passed += rest;
                continue;
            }
            let skip = bits.trailing_zeros() as usize;
            day = day.wrapping_add(skip as u64);
            passed += skip;
            // (A set bit: the list is not empty, its head is a source.)
            let head = days[(index + skip) & mask].head;
            // SAFETY: as said, `head` is a source, a node of the calendar.
            let key = unsafe { Self::node(&mut self.nodes, head as usize) }.key;
            if self.day_of(key) == day {
                self.day = day;
                self.earliest = (head as usize, key);
                return passed as u32;
            }
            day = day.wrapping_add(1);
            passed += 1;
        }
        self.find_earliest_anywhere();
        mask as u32 + 1
    }

    /// The earliest key when a whole year of days held none (or no key is pending): the least
    /// of the lists' heads.
    #[cold]
    #[inline(never)]
    fn find_earliest_anywhere(&mut self) {
        let nodes = &self.nodes;
        self.earliest = self
            .days
            .iter()
            .filter(|day| day.head != NO_SOURCE)
            .map(|day| (nodes[day.head as usize].key, day.head as usize))
            .min()
            .map_or((0, NEVER), |(key, source)| (source, key));
        if self.earliest.1 != NEVER {
            self.day = self.day_of(self.earliest.1);
        }
    }

    /// Any change of a source's key (`NEVER`: none).
    #[inline(never)]
    fn set_key(&mut self, source: usize, key: u128) {
        if self.nodes[source].key != NEVER {
            self.unlink(source);
            self.pending -= 1;
        }
        self.nodes[source].key = key;
        if key != NEVER {
            self.link(source, key);
            self.pending += 1;
        }
        if key < self.earliest.1 {
            // The least key: no other is on an earlier day.
            self.earliest = (source, key);
            self.day = self.day_of(key);
        } else if source == self.earliest.0 {
            // The earliest moved later or left: the current day still precedes every key.
            if self.pending == 0 {
                self.earliest = (0, NEVER);
            } else {
                self.find_earliest();
            }
        }
    }

    /// Takes `source` (with a key) out of its day's list.
    fn unlink(&mut self, source: usize) {
        let mask = self.days.len() - 1;
        let index = self.day_of(self.nodes[source].key) as usize & mask;
        let day = &mut self.days[index];
        let next = self.nodes[source].next;
        if day.head as usize == source {
            day.head = next;
            if next == NO_SOURCE {
                day.tail = self.sentinel;
                self.occupied[index / 64] &= !(1 << (index % 64));
            }
            return;
        }
        let mut before = day.head as usize;
        while self.nodes[before].next as usize != source {
            before = self.nodes[before].next as usize;
        }
        self.nodes[before].next = next;
        if day.tail as usize == source {
            day.tail = before as u32;
        }
    }

    /// Chooses the day on the first update of the earliest source, then every
    /// `updates_per_check` updates if those cost more than [`STEPS_PER_UPDATE_LIMIT`] steps
    /// each.
    #[cold]
    #[inline(never)]
    fn check(&mut self) {
        let limit = u64::from(STEPS_PER_UPDATE_LIMIT) * u64::from(self.updates_per_check);
        if !self.planned || u64::from(self.steps) > limit {
            self.planned = true;
            self.plan();
        }
        self.updates_left = self.updates_per_check;
        self.steps = 0;
    }

    /// Chooses the day from the gap between pending keys near the earliest: the `k`-th
    /// earliest key lies about `k` gaps after the earliest (`k` a quarter of the keys; for
    /// Poisson sources the gap is about their aggregate mean gap), so that one or two keys fall
    /// on a day; files the keys again if the day changed.
    fn plan(&mut self) {
        let mut keys: Vec<(u128, u32)> = self.nodes[..self.sentinel as usize]
            .iter()
            .enumerate()
            .filter(|(_, node)| node.key != NEVER)
            .map(|(source, node)| (node.key, source as u32))
            .collect();
        keys.sort_unstable();
        if keys.len() >= 2 {
            let k = keys.len() / 4 + 1;
            let k = k.min(keys.len() - 1);
            let spread = ((keys[k].0 >> 64) - (keys[0].0 >> 64)) as u64;
            let gap = (spread / k as u64).max(1);
            // The power of two above the gap: days up to twice as wide cost fewer empty days
            // scanned for the same sorted insertions (1,000 Poisson sources: 14 instructions
            // an update fewer than at the power below).
            let shift = (64 - gap.leading_zeros()).min(63);
            if shift != self.shift {
                self.shift = shift;
                self.days.fill(Day {
                    head: NO_SOURCE,
                    tail: self.sentinel,
                });
                self.occupied.fill(0);
                for &(key, source) in &keys {
                    self.link(source as usize, key);
                }
                self.day = self.day_of(keys[0].0);
            }
        }
    }

    /// The source with the earliest pending packet and that packet's key
    /// ([`NEVER`] if no source has one).
    #[inline(always)]
    fn earliest(&self) -> (usize, u128) {
        self.earliest
    }
}

/// From this many sources on, a run's [`SourceClock`] is a [`SourceCalendar`], below it a
/// [`SourceTree`]. The tree's update has no data-dependent branch but grows by a level at
/// each doubling of the sources; the calendar's costs the same at any number of sources but
/// branches on the lists it meets. On the ns-2 scenario (alternating CPU-time runs of both
/// under load, 2026-11-27) the tree is faster at 10 sources (median 110 ns a packet against
/// 115), they are even at 20 and 30, and the calendar is faster at 50 (120 against 130) and
/// 150 (135 against 145).
pub(crate) const CALENDAR_FROM_SOURCES: usize = 32;

/// The next-packet key `(time, seq)` of every source: a [`SourceTree`] with fewer than
/// [`CALENDAR_FROM_SOURCES`] sources, a [`SourceCalendar`] from there on (chosen per run); both
/// give the earliest key exactly, so the choice changes no result. The earliest source and its
/// key are copied beside the structure after each update, for the engine's loop, which reads
/// them on every event.
#[derive(Debug)]
pub(crate) struct SourceClock {
    earliest: (usize, u128),
    /// The calendar of a run with many sources, else `None` and the tree.
    calendar: Option<Box<SourceCalendar>>,
    /// The tree of a run with few sources (of one source while the calendar is used).
    tree: SourceTree,
}

impl SourceClock {
    /// A clock for `sources` sources, none with a pending packet.
    pub fn new(sources: usize) -> SourceClock {
        SourceClock::with_calendar(sources, sources >= CALENDAR_FROM_SOURCES)
    }

    /// A clock for `sources` sources in a calendar (`calendar`) or a tree.
    pub fn with_calendar(sources: usize, calendar: bool) -> SourceClock {
        SourceClock {
            earliest: (0, NEVER),
            calendar: calendar.then(|| Box::new(SourceCalendar::new(sources))),
            tree: SourceTree::new(if calendar { 1 } else { sources }),
        }
    }

    /// Sets source `source`'s next packet to `time`, sequence number `seq`.
    #[inline(always)]
    pub fn set(&mut self, source: usize, time: TimeNs, seq: u64) {
        self.earliest = match &mut self.calendar {
            None => {
                self.tree.set(source, time, seq);
                self.tree.earliest()
            }
            Some(calendar) => {
                calendar.set(source, time, seq);
                calendar.earliest()
            }
        };
    }

    /// Source `source` has no pending packet.
    #[inline(always)]
    pub fn clear(&mut self, source: usize) {
        self.earliest = match &mut self.calendar {
            None => {
                self.tree.clear(source);
                self.tree.earliest()
            }
            Some(calendar) => {
                calendar.clear(source);
                calendar.earliest()
            }
        };
    }

    /// The source with the earliest pending packet and that packet's key
    /// ([`NEVER`] if no source has one).
    #[inline(always)]
    pub fn earliest(&self) -> (usize, u128) {
        self.earliest
    }

    /// Time of a key (`u64::MAX` for [`NEVER`], after every event's time).
    #[inline(always)]
    pub fn time_of(key: u128) -> TimeNs {
        (key >> 64) as TimeNs
    }

    /// Bytes the clock of a run with `sources` sources holds on the heap.
    pub fn bytes_for(sources: usize) -> usize {
        if sources >= CALENDAR_FROM_SOURCES {
            SourceCalendar::bytes_for(sources)
        } else {
            SourceTree::bytes_for(sources)
        }
    }
}

/// The next-packet key of every source in a tournament (winner) tree (the [`SourceClock`] of
/// runs with fewer than [`CALENDAR_FROM_SOURCES`] sources) over one `(time, seq)`
/// key per source. Setting a source's key replays the matches on its path to the root
/// against the winners of the sibling subtrees: ⌈log2 n⌉ comparisons, a fixed trip count
/// and no data-dependent branch, where a heap's sift-down branches on every comparison (and,
/// fed by n sources and the links, is deeper). On the simulator benchmark (10 sources) this
/// made a packet 15–20 % cheaper in CPU time than one `BinaryHeap` of all events, for about
/// the same instruction count: the difference is branch mispredictions.
#[derive(Debug)]
pub(crate) struct SourceTree {
    /// Per source (leaf; padded to a power of two with [`NEVER`]), its key.
    keys: Vec<u128>,
    /// Per node (root at 1, children of `i` at `2i` and `2i + 1`, source `j`'s leaf at
    /// `leaves + j`), the source with the smallest key below it.
    winner: Vec<u32>,
    /// The number of sources rounded up to a power of two.
    leaves: usize,
    /// The root's winner and its key.
    earliest: (usize, u128),
}

impl SourceTree {
    /// A clock for `sources` sources, none with a pending packet.
    pub fn new(sources: usize) -> SourceTree {
        let leaves = sources.max(1).next_power_of_two();
        let mut winner = vec![0; 2 * leaves];
        for (leaf, node) in winner[leaves..].iter_mut().enumerate() {
            *node = leaf as u32;
        }
        // Every key is NEVER: each node's winner is the leftmost leaf below it.
        for node in (1..leaves).rev() {
            winner[node] = winner[2 * node];
        }
        SourceTree {
            keys: vec![NEVER; leaves],
            winner,
            leaves,
            earliest: (0, NEVER),
        }
    }

    /// Sets source `source`'s next packet to `time`, sequence number `seq`.
    #[inline(always)]
    pub fn set(&mut self, source: usize, time: TimeNs, seq: u64) {
        self.set_key(source, Event::new(time, seq, 0).key());
    }

    /// Source `source` has no pending packet.
    #[inline(always)]
    pub fn clear(&mut self, source: usize) {
        self.set_key(source, NEVER);
    }

    /// Replays the matches from `source`'s leaf to the root against the sibling subtrees'
    /// winners (which are unchanged). Keys are unique but for NEVER, so the side that wins a
    /// tie does not matter. Trees of up to 32 leaves replay a fixed number of levels
    /// ([`SourceTree::replay_levels`], unrolled), others loop.
    #[inline(always)]
    fn set_key(&mut self, source: usize, key: u128) {
        match self.leaves {
            16 => self.replay_levels::<4>(source, key),
            8 => self.replay_levels::<3>(source, key),
            32 => self.replay_levels::<5>(source, key),
            4 => self.replay_levels::<2>(source, key),
            2 => self.replay_levels::<1>(source, key),
            _ => self.replay_loop(source, key),
        }
    }

    /// [`SourceTree::set_key`] for a tree of `2^LEVELS` leaves, its levels unrolled: without
    /// a loop, LLVM keeps the winner's select a conditional move (in a loop, its x86 back end
    /// turns a select carried from one level to the next into a branch, which is mispredicted
    /// about once an update; see `replay_loop`).
    #[inline(always)]
    fn replay_levels<const LEVELS: usize>(&mut self, source: usize, key: u128) {
        let leaves = 1 << LEVELS;
        debug_assert_eq!(self.leaves, leaves);
        let keys = &mut self.keys[..leaves];
        let winner = &mut self.winner[..2 * leaves];
        keys[source & (leaves - 1)] = key;
        let mut node = leaves + (source & (leaves - 1));
        let mut best = source as u32 & (leaves as u32 - 1);
        // The best key so far is carried along, not read again from `keys[best]`: each
        // level's sibling and its key depend only on the path (not on the matches below), so
        // the processor loads them all at once, and the chain from one match to the next is
        // a compare and two selects, without a load whose address waits for the match.
        let mut best_key = key;
        for _ in 0..LEVELS {
            let sibling = winner[node ^ 1] & (leaves as u32 - 1);
            let sibling_key = keys[sibling as usize];
            let take = sibling_key < best_key;
            best = if take { sibling } else { best };
            best_key = if take { sibling_key } else { best_key };
            node /= 2;
            winner[node] = best;
        }
        self.earliest = (best as usize, best_key);
    }

    /// [`SourceTree::set_key`] for any tree, by a loop over its levels.
    #[inline(always)]
    fn replay_loop(&mut self, source: usize, key: u128) {
        // Slices whose lengths are `mask + 1`, indexed `& mask`: the compiler sees that no
        // index can be out of bounds and drops the checks from the loop.
        let leaf_mask = self.leaves - 1;
        let node_mask = 2 * self.leaves - 1;
        let keys = &mut self.keys[..leaf_mask + 1];
        let winner = &mut self.winner[..node_mask + 1];
        keys[source & leaf_mask] = key;
        let mut node = self.leaves + source;
        let mut best = source as u32;
        while node > 1 {
            let sibling = winner[(node ^ 1) & node_mask];
            // Which side wins is data-dependent and a branch on it would be mispredicted
            // about once per update: select with a mask instead. (`black_box` stops LLVM
            // from turning the mask back into a select, which its x86 back end then
            // compiles to a branch because `best` is carried from one level to the next.)
            let take = keys[sibling as usize & leaf_mask] < keys[best as usize & leaf_mask];
            let mask = std::hint::black_box(take as u32).wrapping_neg();
            best ^= (best ^ sibling) & mask;
            node /= 2;
            winner[node & node_mask] = best;
        }
        self.earliest = (best as usize, keys[best as usize & leaf_mask]);
    }

    /// The source with the earliest pending packet and that packet's key.
    #[inline(always)]
    fn earliest(&self) -> (usize, u128) {
        self.earliest
    }

    /// Bytes a tree for `sources` sources holds on the heap: a key per leaf and a winner per
    /// node (the leaves are the sources rounded up to a power of two).
    fn bytes_for(sources: usize) -> usize {
        let leaves = sources.max(1).next_power_of_two();
        leaves * std::mem::size_of::<u128>() + 2 * leaves * std::mem::size_of::<u32>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    impl SourceClock {
        /// Bytes this clock holds on the heap ([`SourceClock::bytes_for`] should be this).
        pub fn allocated_bytes(&self) -> usize {
            match &self.calendar {
                None => {
                    let tree = &self.tree;
                    tree.keys.capacity() * std::mem::size_of::<u128>()
                        + tree.winner.capacity() * std::mem::size_of::<u32>()
                }
                Some(calendar) => {
                    calendar.nodes.capacity() * std::mem::size_of::<ClockNode>()
                        + calendar.days.capacity() * std::mem::size_of::<Day>()
                        + calendar.occupied.capacity() * std::mem::size_of::<u64>()
                }
            }
        }

        /// Checks a calendar's lists (nothing for a tree).
        fn check_lists(&self) {
            if let Some(calendar) = &self.calendar {
                calendar.check_lists();
                assert_eq!(self.earliest, calendar.earliest);
            }
        }

        /// A clock of the other kind or the same (`calendar`) with the same keys (tests: the
        /// engine's results must not depend on the kind).
        pub fn rebuilt(&self, calendar: bool) -> SourceClock {
            let keys: Vec<u128> = match &self.calendar {
                None => self.tree.keys.clone(),
                Some(calendar) => calendar.nodes[..calendar.sentinel as usize]
                    .iter()
                    .map(|node| node.key)
                    .collect(),
            };
            let sources = match &self.calendar {
                None => keys.len(),
                Some(calendar) => calendar.sentinel as usize,
            };
            let mut clock = SourceClock::with_calendar(sources, calendar);
            for (source, &key) in keys.iter().enumerate().take(sources) {
                if key != NEVER {
                    clock.set(source, SourceClock::time_of(key), key as u64);
                }
            }
            assert_eq!(clock.earliest(), self.earliest());
            clock
        }

        /// Chooses a calendar's day again (nothing for a tree).
        fn plan(&mut self) {
            if let Some(calendar) = &mut self.calendar {
                calendar.plan();
            }
        }
    }

    impl SourceCalendar {
        /// Checks the lists against the keys (tests): every source with a key is in its day's
        /// list exactly once, each list is sorted with the right tail, no key is on a day before
        /// the current one, and the earliest is the least key.
        fn check_lists(&self) {
            let mask = self.days.len() - 1;
            let sources = &self.nodes[..self.sentinel as usize];
            assert_eq!(self.nodes[self.sentinel as usize].key, 0, "the sentinel's key");
            let mut seen = vec![false; sources.len()];
            for (index, day) in self.days.iter().enumerate() {
                assert_eq!(
                    self.occupied[index / 64] >> (index % 64) & 1 == 1,
                    day.head != NO_SOURCE,
                    "bit of list {index}"
                );
                if day.head == NO_SOURCE {
                    assert_eq!(day.tail, self.sentinel, "tail of empty list {index}");
                }
                let mut at = day.head;
                let mut last = None;
                while at != NO_SOURCE {
                    let node = &self.nodes[at as usize];
                    assert!(!seen[at as usize], "source {at} listed twice");
                    seen[at as usize] = true;
                    assert_ne!(node.key, NEVER);
                    assert_eq!(self.day_of(node.key) as usize & mask, index, "source {at}'s day");
                    assert!(self.day_of(node.key) >= self.day, "a key before the current day");
                    assert!(last.is_none_or(|last| last < node.key), "sorted list");
                    last = Some(node.key);
                    if node.next == NO_SOURCE {
                        assert_eq!(day.tail, at, "tail of list {index}");
                    }
                    at = node.next;
                }
            }
            for (source, node) in sources.iter().enumerate() {
                assert_eq!(seen[source], node.key != NEVER, "source {source} listed");
            }
            assert_eq!(self.pending, seen.iter().filter(|&&s| s).count());
            let least = sources
                .iter()
                .enumerate()
                .map(|(source, node)| (node.key, source))
                .min()
                .filter(|&(key, _)| key != NEVER);
            match least {
                Some((key, source)) => assert_eq!(self.earliest, (source, key)),
                None => assert_eq!(self.earliest.1, NEVER),
            }
        }
    }

    /// A time for the clock's tests: near a base (ties with other keys are common), far in the
    /// future (beyond a year of days: on-off sources, late starts), or at the end of time.
    fn test_time() -> impl Strategy<Value = u64> {
        prop_oneof![
            6 => 0u64..64,
            2 => 0u64..1 << 24,
            1 => (1u64 << 40)..(1u64 << 40) + 8,
            1 => (u64::MAX - 4)..=u64::MAX,
        ]
    }

    /// What a test does to the clock.
    #[derive(Clone, Debug)]
    enum ClockOp {
        /// The earliest source takes a key this much later (0: the same time, a later seq).
        Advance(u64),
        /// Source `.0` (modulo the sources) takes time `.1`.
        Set(usize, u64),
        /// Source `.0` has no key.
        Clear(usize),
        /// The day is chosen again from the keys.
        Plan,
    }

    fn clock_op() -> impl Strategy<Value = ClockOp> {
        prop_oneof![
            8 => prop_oneof![
                4 => 0u64..4,
                4 => 0u64..1 << 20,
                1 => (1u64 << 40)..(1u64 << 41),
            ]
            .prop_map(ClockOp::Advance),
            3 => (0usize..64, test_time()).prop_map(|(s, t)| ClockOp::Set(s, t)),
            1 => (0usize..64).prop_map(ClockOp::Clear),
            1 => Just(ClockOp::Plan),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// The clock's earliest source is the one with the smallest `(time, seq)` of a model
        /// set of keys, after any sequence of updates of the earliest source (the engine's
        /// case: same-time ties, far-future keys), sets of any source to any time (earlier
        /// than the earliest too), clears (stopped and ended sources) and choices of the day,
        /// for any number of sources, as a tree and as a calendar (whose lists stay sorted and
        /// complete).
        #[test]
        fn clock_finds_the_earliest_source(
            sources in 1usize..64,
            calendar in any::<bool>(),
            ops in prop::collection::vec(clock_op(), 1..400),
        ) {
            let mut clock = SourceClock::with_calendar(sources, calendar);
            let mut keys: Vec<Option<(u64, u64)>> = vec![None; sources];
            let mut model = std::collections::BTreeSet::new();
            let mut seq = 0u64;
            for op in ops {
                seq += 1;
                let change = match op {
                    ClockOp::Advance(delta) => model
                        .first()
                        .map(|&((time, _), source): &((u64, u64), usize)| {
                            (source, Some(time.saturating_add(delta)))
                        }),
                    ClockOp::Set(source, time) => Some((source % sources, Some(time))),
                    ClockOp::Clear(source) => Some((source % sources, None)),
                    ClockOp::Plan => {
                        clock.plan();
                        None
                    }
                };
                if let Some((source, time)) = change {
                    if let Some(old) = keys[source].take() {
                        model.remove(&(old, source));
                    }
                    match time {
                        Some(time) => {
                            clock.set(source, time, seq);
                            keys[source] = Some((time, seq));
                            model.insert(((time, seq), source));
                        }
                        None => clock.clear(source),
                    }
                }
                clock.check_lists();
                let (source, key) = clock.earliest();
                match model.first() {
                    None => prop_assert_eq!(key, NEVER),
                    Some(&((t, q), s)) => {
                        prop_assert_eq!(source, s);
                        prop_assert_eq!(key, Event::new(t, q, 0).key);
                        prop_assert_eq!(SourceClock::time_of(key), t);
                    }
                }
            }
        }
    }

    /// Many sources with the same times (constant-rate sources started together): in a
    /// calendar each update joins the tail of its day's list; the order is the sequence
    /// numbers'.
    #[test]
    fn clock_orders_ties_by_sequence_number() {
        let sources = 300;
        let mut clock = SourceClock::new(sources);
        assert!(clock.calendar.is_some());
        let mut seq = 0;
        for source in 0..sources {
            clock.set(source, 1_000, seq);
            seq += 1;
        }
        for round in 0..5u64 {
            for expected in 0..sources {
                let (source, key) = clock.earliest();
                assert_eq!(source, expected, "round {round}");
                assert_eq!(SourceClock::time_of(key), 1_000 + round * 10_000);
                clock.set(source, 1_000 + (round + 1) * 10_000, seq);
                seq += 1;
            }
            clock.check_lists();
        }
    }

    proptest! {
        /// The FIFO gives back its events in the order they were added, whatever the
        /// interleaving of pushes and pops (and its growth), as `VecDeque` does.
        #[test]
        fn fifo_keeps_the_order_of_its_events(ops in prop::collection::vec(any::<bool>(), 1..400)) {
            let mut fifo = EventFifo::with_capacity(1);
            let mut model = std::collections::VecDeque::new();
            for (seq, push) in ops.into_iter().enumerate() {
                if push {
                    let event = Event::new(seq as u64 / 3, seq as u64, seq as u32);
                    fifo.push_back(event);
                    model.push_back(event);
                } else {
                    prop_assert_eq!(fifo.pop_front(), model.pop_front());
                }
                prop_assert_eq!(fifo.len(), model.len());
                prop_assert_eq!(fifo.front_key(), model.front().map_or(NEVER, |e| e.key));
                prop_assert_eq!(fifo.back_key(), model.back().map_or(0, |e| e.key));
            }
        }
    }

    proptest! {
        /// Events come out in `(time, seq)` order whatever the interleaving of pushes,
        /// replacements of the top and pops.
        #[test]
        fn pops_in_time_then_seq_order(ops in prop::collection::vec((0u8..3, 0u64..50), 1..300)) {
            let mut queue = EventQueue::default();
            let mut model: Vec<(u64, u64)> = Vec::new();
            let mut seq = 0;
            for (op, time) in ops {
                match op {
                    0 => {
                        queue.push(Event::new(time, seq, seq as u32));
                        model.push((time, seq));
                        seq += 1;
                    }
                    1 if !model.is_empty() => {
                        model.sort_unstable();
                        model.remove(0);
                        queue.replace_top(Event::new(time, seq, seq as u32));
                        model.push((time, seq));
                        seq += 1;
                    }
                    _ => {
                        model.sort_unstable();
                        if !model.is_empty() {
                            model.remove(0);
                        }
                        queue.pop();
                    }
                }
                model.sort_unstable();
                let top = queue.peek().map(|e| (e.time(), e.seq()));
                prop_assert_eq!(top, model.first().copied());
                prop_assert_eq!(queue.len(), model.len());
                if let Some(e) = queue.peek() {
                    prop_assert_eq!(e.tag as u64, e.seq());
                }
            }
        }
    }
}
