//! A calendar queue of [`VirtualTime`] keys with exact `(key, seq)` order, for owners whose
//! keys almost never go below the key last popped and lie within a bounded window above it:
//! the head-of-line tags of SCFQ and STFQ. There a flow's new head gets `F = v + L/w` (SCFQ) or
//! `S = F_prev ≤ v + L/w` (STFQ), with `v` the tag last served, so every head lies in
//! `[v, v + L_max/w_min]`. Virtual Clock's stamps mostly do the same while the flows keep up
//! with their reserved rates, and so do WFQ's head-of-line finish tags `V(a) + L/φ` while the
//! flows stay backlogged in the GPS reference (when GPS drains ahead of the link they spread
//! beyond the window and go to the overflow heap; the order stays exact). WF2Q+ keeps its two
//! sets in calendars while they are small: its ineligible flows by start tag (every push lies
//! above V, and V releases them from the least on), and its eligible ones by finish tag, whose
//! pops keep the first day at V's rather than at the tag just served
//! ([`TagCalendar::pop_with_floor`]): a flow V has just reached often has a finish tag below the
//! last one served, but hardly ever below V.
//!
//! R. Brown, "Calendar Queues: A Fast O(1) Priority Queue Implementation for the Simulation
//! Event Set Problem", Communications of the ACM 31(10), 1988: a circular array of buckets
//! ("days") of fixed width, each bucket a sorted list, scanned from the current day on.
//!
//! Here a key's *day* is `key >> day_shift`, the calendar holds the entries whose day lies in
//! `[cursor, cursor + BUCKETS)` in bucket `day mod BUCKETS`, each bucket a list sorted by
//! `(key, seq)`, and a two-level bitmap finds the first non-empty bucket from the cursor. Every
//! other entry (a key below the cursor or [`BUCKETS`] days or more above it, a push that would
//! pass more than [`BUCKET_WALK_LIMIT`] entries of its bucket, or any key while there are
//! [`CALENDAR_MAX_ENTRIES`] entries or more) goes to an overflow [`VirtualTimeHeap`], so the
//! order is exact for any keys: a pop takes the smaller of
//! the calendar's first entry and the heap's top. The cursor moves to the day of each entry the
//! calendar serves (the least in the calendar, so no calendar entry is left behind it), or with
//! [`TagCalendar::pop_with_floor`] only as far as the floor's day, if that is lower (a caller
//! that expects later keys below the entry served but not below the floor); when the
//! calendar is empty, a push sets it to the last pop's day if the key lies in that window, else
//! to the key's day.
//!
//! The day adapts to the keys, as Brown's calendar resizes its buckets to the spacing of the
//! events: it starts at [`DAY_SHIFT`] (half a unit: half a byte per unit weight for the tags of
//! SCFQ, STFQ and WFQ) or at the owner's choice ([`TagCalendar::with_day_shift`]: Virtual
//! Clock's stamps), and every [`ADAPT_PERIOD`] pops it becomes a quarter to an eighth of the
//! mean advance of the popped key per pop (the spacing of the heads near the cursor), unless
//! it lies within a sixteenth to a half of it already, but never so narrow that its window
//! covers less than four times the entries' spread; every calendar entry is then filed again
//! (`SharedTagCalendar::adapt_day`). At 1,024 backlogged flows of the core bench the heads are
//! about 0.3 bytes per unit weight apart: with half-byte days a push found its bucket taken
//! (and a pop left an entry behind in its bucket) 50–53 % of the time, a branch no predictor
//! can learn; with sixteenth-byte days 28–31 % (the tags of integer sizes over weights 1–4 lie
//! on a grid of twelfths of a byte, so narrower days would not spread them further). At 64
//! flows the heads are about 5 bytes apart, 5–6 % of the pushes find their bucket taken, and
//! the day stays half a byte: narrower days there only spread the pops' bitmap scans over more
//! words.
//!
//! Cost: a push walks its bucket's list (entries per bucket = flows / days spanned by their
//! tags; about one at 1,024 flows of 64–1,500-byte packets; at most [`BUCKET_WALK_LIMIT`]), a
//! pop reads the first non-empty bucket, which the calendar keeps (the bitmap is scanned only
//! when that bucket empties), and the calendar keeps its least id and key too, so that a look
//! at the least entry reads neither the bucket array nor a node (a pop loads the next least
//! node at its end, ahead of the next look); while the calendar is empty (from
//! [`CALENDAR_MAX_ENTRIES`] entries on) a pop goes straight to the heap's in-place top
//! replacement;
//! against log₄ n levels of four comparisons for each sift-down of the 4-ary heap. The nodes
//! are indexed by id and the buckets are linked lists through them: no allocation once every
//! id has been seen (the bucket array is allocated on the first push).
//!
//! Tests (at the bottom): one calendar against a sorted map (`follows_a_sorted_map`, with
//! days set directly by `rebucket` among the operations and, in half the cases of its variant
//! with other first days, a lowered adaptation period), the day's adaptation on even
//! spacings, and two calendars sharing a node table (`SharedTagCalendar<0>` and `<1>`, as
//! WF2Q+'s sets) against a sorted map each. The day is chosen only every [`ADAPT_PERIOD`]
//! pops, more than a random sequence has, so a test build gives each calendar a probe (not
//! compiled otherwise: the release code is the same) that lowers the period and counts the
//! calls of `adapt_day` and the re-bucketings with entries. The shared-calendar test lowers
//! the period to 1–16 pops in five cases of six and, in every case, forces on each of the two
//! calendars a re-bucketing with entries, a push beyond the window and one below the cursor
//! (both to the overflow heap) and a pop from the heap, between two random sequences; it
//! counts the cases that reached each path on each calendar and asserts that all did. A
//! `rebucket` broken on member 1 only (the new day set, the entries left in their old
//! buckets) fails it; the tests before session 12 passed with that fault.

use crate::indexed_heap::{Entry, VirtualTimeHeap, PREFETCH_AHEAD_ENTRIES, PREFETCH_ENTRIES};
use crate::virtual_time::{VirtualTime, FRACTION_BITS};

/// Bits of a raw key below its first day, until the calendar adapts the day to the keys'
/// spacing (see the module documentation): half a unit (half a byte per unit weight for SCFQ,
/// STFQ and WFQ).
pub const DAY_SHIFT: u32 = FRACTION_BITS - 1;
/// Buckets (days) of the calendar: with the first day, 16,384 bytes per unit weight of tags
/// ahead of the cursor (room for a 9,000-byte packet at weight 1); with a day adapted to the
/// keys' spacing, 4,096 to 8,192 times the mean spacing.
pub const BUCKETS: usize = 1 << 15;
/// From this many entries (calendar and heap) on, pushes go to the heap. With more, the sorted
/// insertion walks lists of nodes spread over a table larger than the second-level cache (at
/// 16,384 flows, +20 to +37 % time per packet against the heap alone, under load), while the
/// heap's upper levels stay cached.
pub const CALENDAR_MAX_ENTRIES: usize = 4096;
/// A push that would pass more entries than this in its bucket goes to the heap: the cost of a
/// push stays bounded whatever the spread of the keys against the day (a day chosen too wide
/// for some owner's keys costs heap pushes, not long walks).
pub const BUCKET_WALK_LIMIT: usize = 8;
/// The widest day: 2^112 raw units ([`BUCKETS`] of them still fit in a raw key).
pub const MAX_DAY_SHIFT: u32 = 127 - BUCKETS.trailing_zeros();
/// `log2` of [`BUCKETS`]: a node's bucket field holds its calendar's member number above them.
const BUCKET_BITS: u32 = BUCKETS.trailing_zeros();
/// Calendars that may share one `CalendarNodes` table (member numbers below this; the
/// bucket field of a node in none of them, `NIL`, shifted by `BUCKET_BITS` is not one).
pub const MEMBERS: u32 = NIL >> BUCKET_BITS;
/// Bitmap words.
const WORDS: usize = BUCKETS / 64;
/// Summary words (bit `w` of word `w / 64`: bitmap word `w` is not zero).
const SUMMARY_WORDS: usize = WORDS / 64;
/// Bytes of the bucket array and its bitmap that a calendar allocates on its first push (one
/// 4-byte list head per bucket and one bit per bucket; 132 KiB), whatever its number of ids.
pub const BUCKET_ARRAY_BYTES: usize = std::mem::size_of::<Buckets>();
/// Bytes of a calendar's node per id (one cache line; the nodes grow with the largest id
/// pushed, like a `Vec`).
pub const NODE_BYTES: usize = std::mem::size_of::<Node>();
/// The end of a list, and the bucket of an id that is not in the calendar.
const NIL: u32 = u32::MAX;
/// Pops (from the calendar or its overflow heap) between two choices of the day
/// (see the module documentation).
pub const ADAPT_PERIOD: u32 = 1024;
/// The registry ids of the disciplines whose scheduler holds tag calendars, each with the
/// number of calendars (bucket arrays) it holds and of node tables (a node per flow each), for
/// estimates of their memory (`schedlab_sim::memory`): one calendar with its own nodes for the
/// head-of-line tags of SCFQ, STFQ, Virtual Clock and WFQ (`TaggedQueues<_, TagCalendar>`),
/// two calendars sharing one node table for WF2Q+ (its eligible and ineligible sets, a flow in
/// one at a time; the table reserves a node per flow, and the bucket arrays stay allocated
/// when the sets move to their heaps at many flows). A discipline that starts or stops using
/// a calendar changes this list.
pub const DISCIPLINES: [(&str, u64, u64); 5] = [
    ("scfq", 1, 1),
    ("stfq", 1, 1),
    ("virtual_clock", 1, 1),
    ("wfq", 1, 1),
    ("wf2q_plus", 2, 1),
];

/// How many tag calendars (bucket arrays) a scheduler of discipline `id` holds
/// ([`DISCIPLINES`]; 0 for the others).
pub fn calendars_of(id: &str) -> u64 {
    user(id).map_or(0, |&(_, calendars, _)| calendars)
}

/// The entry of discipline `id` in [`DISCIPLINES`], if it uses calendars.
fn user(id: &str) -> Option<&'static (&'static str, u64, u64)> {
    DISCIPLINES.iter().find(|(user, ..)| *user == id)
}

/// How many calendar node tables (a node per id each) a scheduler of discipline `id` holds
/// ([`DISCIPLINES`]; 0 for the others).
pub fn node_tables_of(id: &str) -> u64 {
    user(id).map_or(0, |&(.., node_tables)| node_tables)
}

/// One id's entry and links, one cache line (36 bytes unaligned, 48 at `u128` alignment,
/// would put some of the nodes across two lines).
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
struct Node {
    key: u128,
    seq: u64,
    aux: u32,
    /// The bucket holding the id, plus the member number of its calendar (among those sharing
    /// the node table) times [`BUCKETS`]; [`NIL`] while the id is in no calendar of the table.
    bucket: u32,
    /// The next id of the bucket (a singly linked list: a pop takes the first, and the rare
    /// removal of another walks from the first to its predecessor).
    next: u32,
}

impl Default for Node {
    fn default() -> Node {
        Node {
            key: 0,
            seq: 0,
            aux: 0,
            bucket: NIL,
            next: NIL,
        }
    }
}

/// Whether `(key, seq)` comes before `(other_key, other_seq)`.
#[inline(always)]
fn precedes(key: u128, seq: u64, other_key: u128, other_seq: u64) -> bool {
    let (high, other_high) = ((key >> 64) as u64, (other_key >> 64) as u64);
    if high != other_high {
        // Rare: live keys almost always share their high 64 bits.
        return high < other_high;
    }
    ((key as u64 as u128) << 64 | seq as u128) < ((other_key as u64 as u128) << 64 | other_seq as u128)
}

/// The bucket array and its bitmap (fixed sizes, so that masked indices need no bounds check).
#[derive(Clone, Debug)]
struct Buckets {
    /// First (least) id of each bucket, or [`NIL`].
    heads: [u32; BUCKETS],
    /// Bit `b % 64` of word `b / 64`: bucket `b` is not empty.
    words: [u64; WORDS],
}

impl Buckets {
    /// Empty buckets, on the heap. Out of line: built in place, its 132 KiB would otherwise make
    /// every push probe that much stack.
    #[cold]
    #[inline(never)]
    fn new() -> Box<Buckets> {
        Box::new(Buckets {
            heads: [NIL; BUCKETS],
            words: [0; WORDS],
        })
    }
}

/// A priority queue of ids by `(key, seq)`: a calendar for the keys near the cursor and a heap
/// for the others (see the module documentation), with its own node per id.
#[derive(Clone, Debug, Default)]
pub struct TagCalendar {
    nodes: CalendarNodes,
    calendar: SharedTagCalendar,
}

/// The nodes of the [`SharedTagCalendar`]s of one owner, one per id ([`NODE_BYTES`] each): an
/// id in one of them at a time needs one node, not one in each (WF2Q+'s eligible and
/// ineligible sets: a flow moving from one to the other writes the node line the pop has just
/// read). Each node names the calendar holding its id (its member number), if any.
///
/// Crate-private, as [`SharedTagCalendar`]: the calendars read nodes without bounds checks,
/// which is sound only if every calendar is always given the same table and no two calendars
/// on one table have the same `MEMBER` (conditions the owner keeps; a safe public API could
/// not promise them).
#[derive(Clone, Debug, Default)]
pub(crate) struct CalendarNodes {
    nodes: Vec<Node>,
}

impl CalendarNodes {
    /// An empty table.
    pub fn new() -> CalendarNodes {
        CalendarNodes::default()
    }

    /// Makes room for ids below `ids`, so that later pushes of such ids do not allocate.
    #[inline]
    pub fn reserve_ids(&mut self, ids: usize) {
        if self.nodes.len() < ids {
            self.nodes.resize(ids, Node::default());
        }
    }

    /// Bytes the table holds on the heap ([`NODE_BYTES`] per id of its capacity).
    pub fn allocated_bytes(&self) -> usize {
        self.nodes.capacity() * NODE_BYTES
    }

    /// The node of `id`, without a bounds check. Invariant: every id that has or had an
    /// entry in a calendar of this table (or in its overflow heap) has a node, since
    /// [`SharedTagCalendar::push_with`] grows the table before filing it and nodes are never
    /// removed; so do the ids in the bucket lists and in the nodes' links, which only
    /// [`SharedTagCalendar::link`] writes. It holds if each calendar is only ever given this
    /// table (a calendar's ids are nodes of the table it pushed them into) and the calendars
    /// sharing it have distinct `MEMBER`s (a calendar reads only the nodes marked with its own).
    #[inline(always)]
    fn node(&self, id: u32) -> &Node {
        debug_assert!((id as usize) < self.nodes.len(), "id {id} has no node");
        // SAFETY: `id` has a node (the invariant above, checked in debug builds).
        unsafe { self.nodes.get_unchecked(id as usize) }
    }

    /// [`CalendarNodes::node`], mutable.
    #[inline(always)]
    fn node_mut(&mut self, id: u32) -> &mut Node {
        debug_assert!((id as usize) < self.nodes.len(), "id {id} has no node");
        // SAFETY: as in `node`.
        unsafe { self.nodes.get_unchecked_mut(id as usize) }
    }
}

/// [`TagCalendar`] without its nodes: its owner keeps them in a [`CalendarNodes`] table, which
/// it may share with other calendars as long as each id is in at most one of them at a time,
/// and passes the table to every operation. `MEMBER` (below [`MEMBERS`]) tells the calendars
/// sharing a table apart: it is stored in the bits of a node's bucket field above the bucket
/// (a constant, so that linking a node costs no more than with a table of its own).
#[derive(Clone, Debug)]
pub(crate) struct SharedTagCalendar<const MEMBER: u32 = 0> {
    /// The buckets, allocated on the first push.
    buckets: Option<Box<Buckets>>,
    summary: [u64; SUMMARY_WORDS],
    /// The first raw key of the first day the calendar covers (a multiple of the day).
    cursor: u128,
    /// The bucket of the cursor's day.
    cursor_bucket: usize,
    /// The first non-empty bucket from the cursor's on (wrapping), while the calendar holds an
    /// entry: kept up to date by [`SharedTagCalendar::link`] and [`SharedTagCalendar::unlink_least`], so that a
    /// pop and the prefetch look-ahead after it read it instead of scanning the bitmap each.
    first_bucket: usize,
    /// The calendar's least entry (the first of `first_bucket`) and its raw key, while the
    /// calendar holds an entry: kept by [`SharedTagCalendar::link`] and
    /// [`SharedTagCalendar::unlink_least`], so that a look at the least entry (WF2Q+: every
    /// promotion's test against V, every choice) reads neither the bucket array nor the node,
    /// and a pop loads the next least node at its end, ahead of the next look.
    least_id: u32,
    least_key: u128,
    /// The key last popped (raw; its day is computed only when an empty calendar needs it).
    last_popped: u128,
    /// Entries in the calendar.
    calendar_len: usize,
    /// Entries in all (the calendar's and the overflow heap's): one field to read where the
    /// heap's count would be a sum of two (see [`VirtualTimeHeap::len`]), on every push and
    /// every look at the least entry.
    len: usize,
    /// Entries outside the calendar's days.
    overflow: VirtualTimeHeap,
    /// Bits of a raw key below its day (first [`DAY_SHIFT`] or the owner's choice, then
    /// adapted to the keys' spacing).
    day_shift: u32,
    /// `!(2^day_shift − 1)`: a raw key's bits above its day.
    day_mask: u128,
    /// Raw keys the calendar covers from the cursor on: [`BUCKETS`] days.
    window: u128,
    /// Whether `window` is at most 2^64 raw units (days of at most 2^49): a key's distance
    /// from the cursor then fits in 64 bits, and its day offset is a 64-bit shift.
    narrow_window: bool,
    /// Pops left before the next [`SharedTagCalendar::adapt_day`].
    pops_until_adapt: u32,
    /// The key last popped when the current period of [`ADAPT_PERIOD`] pops began (`None`
    /// before the first period: the keys' spacing is measured from the first pop on).
    period_start: Option<u128>,
    /// What the tests set and read (test builds only: the release layout and code are the
    /// same without it).
    #[cfg(test)]
    probe: Probe,
}

/// A test build's knob and counts for the cold paths of a [`SharedTagCalendar`]: the period
/// of its day's adaptation, lowered so that short operation sequences reach
/// [`SharedTagCalendar::adapt_day`] and [`SharedTagCalendar::rebucket`] among the other
/// operations, and how often they ran.
#[cfg(test)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Probe {
    /// Pops between two choices of the day ([`ADAPT_PERIOD`] unless a test lowers it).
    pub adapt_period: u32,
    /// Calls of [`SharedTagCalendar::adapt_day`].
    pub adaptations: u64,
    /// Calls of [`SharedTagCalendar::rebucket`] that found calendar entries to file again.
    pub rebuckets_with_entries: u64,
}

#[cfg(test)]
impl Default for Probe {
    fn default() -> Probe {
        Probe {
            adapt_period: ADAPT_PERIOD,
            adaptations: 0,
            rebuckets_with_entries: 0,
        }
    }
}

impl TagCalendar {
    /// An empty calendar whose first days are half a unit ([`DAY_SHIFT`]).
    pub fn new() -> TagCalendar {
        TagCalendar::default()
    }

    /// An empty calendar whose day is `2^day_shift` raw units (see
    /// `SharedTagCalendar::with_day_shift`).
    pub fn with_day_shift(day_shift: u32) -> TagCalendar {
        TagCalendar {
            nodes: CalendarNodes::new(),
            calendar: SharedTagCalendar::with_day_shift(day_shift),
        }
    }

    /// The current day, as `log2` of its width in raw units.
    pub fn day_shift(&self) -> u32 {
        self.calendar.day_shift()
    }

    /// Number of entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.calendar.len()
    }

    /// Whether there is no entry.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.calendar.is_empty()
    }

    /// Whether `id` has an entry.
    #[inline]
    pub fn contains(&self, id: u32) -> bool {
        self.calendar.contains(&self.nodes, id)
    }

    /// The entry of `id`, if any.
    #[inline]
    pub fn get(&self, id: u32) -> Option<Entry<VirtualTime>> {
        self.calendar.get(&self.nodes, id)
    }

    /// The least entry.
    #[inline]
    pub fn peek(&self) -> Option<Entry<VirtualTime>> {
        self.calendar.peek(&self.nodes)
    }

    /// The least entry's id (see `SharedTagCalendar::peek_id`).
    #[inline(always)]
    pub fn peek_id(&self) -> Option<u32> {
        self.calendar.peek_id(&self.nodes)
    }

    /// The least entry's key (see `SharedTagCalendar::peek_id`).
    #[inline(always)]
    pub fn peek_key(&self) -> Option<VirtualTime> {
        self.calendar.peek_key(&self.nodes)
    }

    /// Bytes this calendar holds on the heap outside its overflow heap: the bucket array (once
    /// allocated, [`BUCKET_ARRAY_BYTES`]) and its nodes' capacity ([`NODE_BYTES`] each).
    pub fn allocated_bytes(&self) -> usize {
        self.calendar.allocated_bytes() + self.nodes.allocated_bytes()
    }

    /// Makes room for ids below `ids`, so that later pushes of such ids do not allocate.
    pub fn reserve_ids(&mut self, ids: usize) {
        self.nodes.reserve_ids(ids);
        self.calendar.reserve_ids(ids);
    }

    /// Adds `id` (which must have no entry) with `key`, `seq` and `aux` (see
    /// `SharedTagCalendar::push_with`).
    #[inline(always)]
    pub fn push_with(&mut self, id: u32, key: VirtualTime, seq: u64, aux: u32) {
        self.calendar.push_with(&mut self.nodes, id, key, seq, aux);
    }

    /// Takes the least entry out, then files its id again with the `(key, seq, aux)` that
    /// `next` returns for it (see `SharedTagCalendar::pop_then`); returns that entry.
    #[inline]
    pub fn pop_then(
        &mut self,
        next: impl FnOnce(&Entry<VirtualTime>) -> Option<(VirtualTime, u64, u32)>,
    ) -> Option<Entry<VirtualTime>> {
        self.calendar.pop_then(&mut self.nodes, next)
    }

    /// Sets the [`Entry::aux`] of `id` (which must have an entry); the order is unchanged.
    #[inline]
    pub fn set_aux(&mut self, id: u32, aux: u32) {
        self.calendar.set_aux(&mut self.nodes, id, aux);
    }

    /// Removes `id`'s entry, if any, and returns it.
    #[inline]
    pub fn remove(&mut self, id: u32) -> Option<Entry<VirtualTime>> {
        self.calendar.remove(&mut self.nodes, id)
    }

    /// Removes and returns the least entry (see `SharedTagCalendar::pop`).
    #[inline]
    pub fn pop(&mut self) -> Option<Entry<VirtualTime>> {
        self.calendar.pop(&mut self.nodes)
    }

    /// Removes and returns the least entry; later keys are expected from `floor` on (see
    /// `SharedTagCalendar::pop_with_floor`).
    #[inline]
    pub fn pop_with_floor(&mut self, floor: VirtualTime) -> Option<Entry<VirtualTime>> {
        self.calendar.pop_with_floor(&mut self.nodes, floor)
    }

    /// Removes and returns the least entry if its key is at most `limit` (see
    /// `SharedTagCalendar::pop_at_most`).
    #[inline(always)]
    pub fn pop_at_most(&mut self, limit: VirtualTime) -> Option<Entry<VirtualTime>> {
        self.calendar.pop_at_most(&mut self.nodes, limit)
    }

    /// The entries worth prefetching for (see `SharedTagCalendar::upcoming`).
    #[inline(always)]
    pub fn upcoming(&self) -> [Option<(u32, u32)>; 2] {
        self.calendar.upcoming(&self.nodes)
    }

    /// A new day of `2^day_shift` raw units, every entry filed again (tests).
    #[cfg(test)]
    fn rebucket(&mut self, day_shift: u32) {
        self.calendar.rebucket(&mut self.nodes, day_shift);
    }

    /// Checks the lists, the bitmaps and the window (tests).
    #[cfg(test)]
    fn check(&self) {
        self.calendar.check(&self.nodes);
    }
}

impl<const MEMBER: u32> Default for SharedTagCalendar<MEMBER> {
    fn default() -> SharedTagCalendar<MEMBER> {
        SharedTagCalendar::with_day_shift(DAY_SHIFT)
    }
}

impl<const MEMBER: u32> SharedTagCalendar<MEMBER> {
    /// The bits of a node's bucket field that name this calendar.
    const MEMBER_BITS: u32 = {
        assert!(MEMBER < MEMBERS, "a member number below MEMBERS");
        MEMBER << BUCKET_BITS
    };

    /// An empty calendar whose first days are half a unit ([`DAY_SHIFT`]).
    pub fn new() -> SharedTagCalendar<MEMBER> {
        SharedTagCalendar::default()
    }

    /// An empty calendar whose day is `2^day_shift` raw units (at most [`MAX_DAY_SHIFT`]): the
    /// owner chooses it so that its keys spread over a few thousand days (the order is exact
    /// with any width; only the cost changes).
    pub fn with_day_shift(day_shift: u32) -> SharedTagCalendar<MEMBER> {
        let mut calendar = SharedTagCalendar {
            buckets: None,
            summary: [0; SUMMARY_WORDS],
            cursor: 0,
            cursor_bucket: 0,
            first_bucket: 0,
            least_id: NIL,
            least_key: 0,
            last_popped: 0,
            calendar_len: 0,
            len: 0,
            overflow: VirtualTimeHeap::default(),
            day_shift: 0,
            day_mask: 0,
            window: 0,
            narrow_window: false,
            pops_until_adapt: ADAPT_PERIOD,
            period_start: None,
            #[cfg(test)]
            probe: Probe::default(),
        };
        calendar.set_day_shift(day_shift);
        calendar
    }

    /// Sets the day to `2^day_shift` raw units (at most [`MAX_DAY_SHIFT`]) and what follows
    /// from it; the entries must then be filed again ([`SharedTagCalendar::rebucket`]).
    fn set_day_shift(&mut self, day_shift: u32) {
        let day_shift = day_shift.min(MAX_DAY_SHIFT);
        self.day_shift = day_shift;
        self.day_mask = !((1u128 << day_shift) - 1);
        self.window = (BUCKETS as u128) << day_shift;
        self.narrow_window = day_shift + BUCKETS.trailing_zeros() <= 64;
    }

    /// The current day, as `log2` of its width in raw units.
    pub fn day_shift(&self) -> u32 {
        self.day_shift
    }

    /// The position of `bucket` in the calendar's order: its distance from the cursor's
    /// bucket, wrapping.
    #[inline(always)]
    fn buckets_after_cursor(&self, bucket: usize) -> usize {
        bucket.wrapping_sub(self.cursor_bucket) & (BUCKETS - 1)
    }

    /// The day of a raw key.
    #[inline(always)]
    fn day_of(&self, key: u128) -> u128 {
        key >> self.day_shift
    }

    /// The bucket of a raw key's day.
    #[inline(always)]
    fn bucket_of(&self, key: u128) -> usize {
        self.day_of(key) as usize & (BUCKETS - 1)
    }

    /// Number of entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there is no entry.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `id` has an entry.
    #[inline]
    pub fn contains(&self, nodes: &CalendarNodes, id: u32) -> bool {
        self.in_calendar(nodes, id) || self.overflow.contains(id)
    }

    /// Whether `id` is in the calendar (the nodes are not read while the calendar is empty,
    /// as it is from [`CALENDAR_MAX_ENTRIES`] entries on: at many flows they are not cached).
    #[inline(always)]
    fn in_calendar(&self, nodes: &CalendarNodes, id: u32) -> bool {
        self.calendar_len > 0
            && nodes
                .nodes
                .get(id as usize)
                .is_some_and(|node| node.bucket >> BUCKET_BITS == MEMBER)
    }

    #[inline(always)]
    fn entry(&self, nodes: &CalendarNodes, id: u32) -> Entry<VirtualTime> {
        let node = nodes.node(id);
        Entry {
            key: VirtualTime::from_raw(node.key),
            seq: node.seq,
            id,
            aux: node.aux,
        }
    }

    /// The entry of `id`, if any.
    #[inline]
    pub fn get(&self, nodes: &CalendarNodes, id: u32) -> Option<Entry<VirtualTime>> {
        if self.in_calendar(nodes, id) {
            Some(self.entry(nodes, id))
        } else {
            self.overflow.get(id)
        }
    }

    /// The buckets (allocated: the calendar holds or held an entry).
    #[inline(always)]
    fn table(&self) -> &Buckets {
        self.buckets
            .as_deref()
            .expect("a calendar with entries has buckets")
    }

    /// The first non-empty bucket at or after `from` (no wrapping).
    #[inline(always)]
    fn bucket_from(&self, from: usize) -> Option<usize> {
        let word = from / 64;
        if word >= WORDS {
            return None;
        }
        let words = &self.table().words;
        let bits = words[word] & (u64::MAX << (from % 64));
        if bits != 0 {
            return Some((word * 64 + bits.trailing_zeros() as usize) % BUCKETS);
        }
        let next_word = word + 1;
        for summary_word in next_word / 64..SUMMARY_WORDS {
            let mut bits = self.summary[summary_word];
            if summary_word == next_word / 64 {
                bits &= u64::MAX << (next_word % 64);
            }
            if bits != 0 {
                let word = summary_word * 64 + bits.trailing_zeros() as usize;
                return Some((word * 64 + words[word % WORDS].trailing_zeros() as usize) % BUCKETS);
            }
        }
        None
    }

    /// The least id of the calendar.
    #[inline(always)]
    fn calendar_first(&self) -> Option<u32> {
        (self.calendar_len > 0).then_some(self.least_id)
    }

    /// The least entry's id, and whether it is in the calendar.
    #[inline(always)]
    fn least(&self, nodes: &CalendarNodes) -> Option<(u32, bool)> {
        let first = self.calendar_first();
        if self.len == self.calendar_len {
            // The overflow heap is empty.
            return first.map(|id| (id, true));
        }
        let top = self.overflow.peek().expect("the overflow heap is not empty");
        match first {
            Some(id) => {
                let node = nodes.node(id);
                if precedes(top.key.raw(), top.seq, node.key, node.seq) {
                    Some((top.id, false))
                } else {
                    Some((id, true))
                }
            }
            None => Some((top.id, false)),
        }
    }

    /// The least entry.
    #[inline]
    pub fn peek(&self, nodes: &CalendarNodes) -> Option<Entry<VirtualTime>> {
        match self.least(nodes)? {
            (id, true) => Some(self.entry(nodes, id)),
            (_, false) => self.overflow.peek(),
        }
    }

    /// The least entry's id (inlined: an owner that reads the top several times a packet).
    #[inline(always)]
    pub fn peek_id(&self, nodes: &CalendarNodes) -> Option<u32> {
        self.least(nodes).map(|(id, _)| id)
    }

    /// The least entry's key (see [`SharedTagCalendar::peek_id`]).
    #[inline(always)]
    pub fn peek_key(&self, nodes: &CalendarNodes) -> Option<VirtualTime> {
        match self.least(nodes)? {
            (_, true) => Some(VirtualTime::from_raw(self.least_key)),
            (_, false) => self.overflow.peek().map(|top| top.key),
        }
    }

    /// Bytes this calendar holds on the heap outside its overflow heap and its node table: the
    /// bucket array (once allocated, [`BUCKET_ARRAY_BYTES`]).
    pub fn allocated_bytes(&self) -> usize {
        self.buckets.as_deref().map_or(0, std::mem::size_of_val)
    }

    /// Makes room for ids below `ids` in the overflow heap (the owner reserves them in the node
    /// table: [`CalendarNodes::reserve_ids`]), so that later pushes of such ids do not allocate.
    pub fn reserve_ids(&mut self, ids: usize) {
        self.overflow.reserve_ids(ids);
    }

    /// Adds `id` (which must have no entry) with `key`, `seq` and `aux`. Always inlined:
    /// WF2Q+ pushes twice a packet, and a call there saved and restored registers each time.
    #[inline(always)]
    pub fn push_with(&mut self, nodes: &mut CalendarNodes, id: u32, key: VirtualTime, seq: u64, aux: u32) {
        nodes.reserve_ids(id as usize + 1);
        debug_assert!(!self.contains(nodes, id), "id {id} already has an entry");
        debug_assert_eq!(
            nodes.node(id).bucket,
            NIL,
            "id {id} is in a calendar of its table"
        );
        self.file(nodes, id, key, seq, aux, self.len);
        self.len += 1;
    }

    /// [`SharedTagCalendar::push_with`] for an id that has a node, with `others` entries besides it
    /// (`len` is the caller's to count): inlined into [`SharedTagCalendar::pop_then`], which files
    /// the popped id again on every service.
    #[inline(always)]
    fn file(
        &mut self,
        nodes: &mut CalendarNodes,
        id: u32,
        key: VirtualTime,
        seq: u64,
        aux: u32,
        others: usize,
    ) {
        let raw = key.raw();
        let Some(cursor) = self.window_for(raw, others) else {
            self.overflow.push_with(id, key, seq, aux);
            return;
        };
        if self.calendar_len == 0 {
            self.cursor = cursor;
            self.cursor_bucket = self.bucket_of(cursor);
        }
        self.link(nodes, id, key, seq, aux, self.bucket_of(raw));
    }

    /// [`SharedTagCalendar::file`] for the id that [`SharedTagCalendar::pop_then`] just took out of the
    /// calendar, with a key not below the one taken out. The cursor is then the day of the key
    /// taken out, which is the window [`SharedTagCalendar::window_for`] would choose even if the
    /// calendar is now empty (the last pop's day covers the key), so only the window's end
    /// and the entry limit need checking, and the bucket is the cursor's plus the key's days
    /// above it.
    #[inline(always)]
    fn refile(&mut self, nodes: &mut CalendarNodes, id: u32, key: VirtualTime, seq: u64, aux: u32) {
        let raw = key.raw();
        debug_assert_eq!(self.cursor, self.last_popped & self.day_mask);
        debug_assert!(raw >= self.last_popped, "a key below the one taken out");
        let above = raw.wrapping_sub(self.cursor);
        // `len` still counts the id (taken out and filed again): the others reach the limit.
        if self.len > CALENDAR_MAX_ENTRIES || raw < self.cursor || above >= self.window {
            self.overflow.push_with(id, key, seq, aux);
            return;
        }
        let days = if self.narrow_window {
            ((above as u64) >> self.day_shift) as usize
        } else {
            (above >> self.day_shift) as usize
        };
        let bucket = self.cursor_bucket.wrapping_add(days) & (BUCKETS - 1);
        debug_assert_eq!(bucket, self.bucket_of(raw));
        self.link(nodes, id, key, seq, aux, bucket);
    }

    /// Links `id` with `key` (in the window) into `bucket`, its day's, in `(key, seq)` order,
    /// or files it in the overflow heap if that would pass more than [`BUCKET_WALK_LIMIT`]
    /// entries.
    #[inline(always)]
    fn link(
        &mut self,
        nodes: &mut CalendarNodes,
        id: u32,
        key: VirtualTime,
        seq: u64,
        aux: u32,
        bucket: usize,
    ) {
        let raw = key.raw();
        let table = self.buckets.get_or_insert_with(Buckets::new);
        // The list stays sorted: the new entry goes before the first entry it precedes. A
        // crowded bucket (keys much denser than the days) sends it to the heap instead.
        let (mut prev, mut at) = (NIL, table.heads[bucket]);
        let mut walked = 0;
        while at != NIL {
            let node = nodes.node(at);
            if precedes(raw, seq, node.key, node.seq) {
                break;
            }
            walked += 1;
            if walked > BUCKET_WALK_LIMIT {
                self.overflow.push_with(id, key, seq, aux);
                return;
            }
            (prev, at) = (at, node.next);
        }
        *nodes.node_mut(id) = Node {
            key: raw,
            seq,
            aux,
            bucket: bucket as u32 | Self::MEMBER_BITS,
            next: at,
        };
        if prev != NIL {
            nodes.node_mut(prev).next = id;
        } else {
            table.heads[bucket] = id;
            table.words[bucket / 64] |= 1 << (bucket % 64);
            self.summary[bucket / 4096] |= 1 << (bucket / 64 % 64);
            // The first of the first bucket (or of one before it): the new least entry.
            if self.calendar_len == 0
                || self.buckets_after_cursor(bucket) <= self.buckets_after_cursor(self.first_bucket)
            {
                self.first_bucket = bucket;
                self.least_id = id;
                self.least_key = raw;
            }
        }
        self.calendar_len += 1;
    }

    /// The calendar's cursor (first raw key of its first day) if a key `raw` pushed while there
    /// are `len` entries goes to the calendar, else `None` (it goes to the heap). When the
    /// calendar is empty any window will do: from the last pop's day if it covers the key
    /// (later pushes of SCFQ and STFQ lie above that day), else from the key's day.
    #[inline(always)]
    fn window_for(&self, raw: u128, len: usize) -> Option<u128> {
        if len >= CALENDAR_MAX_ENTRIES {
            return None;
        }
        let cursor = if self.calendar_len > 0 {
            self.cursor
        } else {
            let floor = self.last_popped & self.day_mask;
            if self.covers(floor, raw) {
                floor
            } else {
                raw & self.day_mask
            }
        };
        self.covers(cursor, raw).then_some(cursor)
    }

    /// Whether the window from `cursor` (a day's first raw key) covers the raw key `raw`: no
    /// wrapping past the largest key, so the buckets from the cursor's on hold increasing days.
    #[inline(always)]
    fn covers(&self, cursor: u128, raw: u128) -> bool {
        raw.checked_sub(cursor).is_some_and(|above| above < self.window)
    }

    /// Moves the cursor to the day of `raw`, whose entry was in `bucket` (the calendar's least).
    #[inline(always)]
    fn advance_to(&mut self, raw: u128, bucket: usize) {
        self.cursor = raw & self.day_mask;
        self.cursor_bucket = bucket;
        self.last_popped = raw;
    }

    /// The calendar popped the raw key `raw`, and the owner's later keys lie at or above
    /// `floor`, which is below it: the cursor moves to `floor`'s day if that is ahead of it.
    /// Every entry is at or above `raw`, so it stays in the window.
    #[inline(always)]
    fn advance_to_floor(&mut self, raw: u128, floor: u128) {
        self.last_popped = raw;
        let day = floor & self.day_mask;
        if day > self.cursor {
            self.cursor = day;
            self.cursor_bucket = self.bucket_of(day);
        }
    }

    /// Takes the least entry out, then files its id again with the `(key, seq, aux)` that
    /// `next` returns for it (if any), which must not precede the entry taken out; returns
    /// that entry. When both are in the heap, the heap's top is changed in place.
    #[inline]
    pub fn pop_then(
        &mut self,
        nodes: &mut CalendarNodes,
        next: impl FnOnce(&Entry<VirtualTime>) -> Option<(VirtualTime, u64, u32)>,
    ) -> Option<Entry<VirtualTime>> {
        // Between two operations: the day may change here (every entry filed again).
        self.count_pop(nodes);
        if self.calendar_len == 0 {
            // The heap alone (always from `CALENDAR_MAX_ENTRIES` entries on): no bucket to look at.
            return self.pop_overflow_then(nodes, next);
        }
        let (id, in_calendar) = self.least(nodes)?;
        if !in_calendar {
            return self.pop_overflow_then(nodes, next);
        }
        let top = self.entry(nodes, id);
        let bucket = self.unlink_least(nodes, id);
        self.advance_to(top.key.raw(), bucket);
        match next(&top) {
            Some((key, seq, aux)) => self.refile(nodes, id, key, seq, aux),
            None => self.len -= 1,
        }
        Some(top)
    }

    /// Counts a pop (from the calendar or the overflow heap: with a day far too wide, most
    /// entries are in the heap); every [`ADAPT_PERIOD`] of them the day is chosen again
    /// ([`SharedTagCalendar::adapt_day`]).
    #[inline(always)]
    fn count_pop(&mut self, nodes: &mut CalendarNodes) {
        self.pops_until_adapt -= 1;
        if self.pops_until_adapt == 0 {
            self.adapt_day(nodes);
        }
    }

    /// Chooses the day from the keys' spacing (Brown's resize, by the mean advance of the
    /// popped key over the last [`ADAPT_PERIOD`] pops): a day of a quarter to an eighth of
    /// that spacing, kept while it lies within a sixteenth to a half of it, and never so narrow
    /// that the window of [`BUCKETS`] days covers less than four times the entries' spread
    /// (entries × spacing). Fewer entries then share a bucket near the cursor (whether a push
    /// finds its bucket taken is an outcome the processor cannot predict; see the module
    /// documentation), and the next entry is still a few buckets away (in the same bitmap
    /// word, mostly). A day too narrow or too wide costs time only; the order is exact with
    /// any day. Called between two operations (at the start of a pop), since every entry may
    /// be filed again.
    #[cold]
    #[inline(never)]
    fn adapt_day(&mut self, nodes: &mut CalendarNodes) {
        #[cfg(test)]
        {
            self.probe.adaptations += 1;
        }
        let period = self.adapt_period();
        self.pops_until_adapt = period;
        let start = self.period_start.replace(self.last_popped);
        let Some(advance) = start.and_then(|start| self.last_popped.checked_sub(start)) else {
            // The first period, or keys that went back (a new busy period, or an owner whose
            // keys are not monotone): measured again over the next one.
            return;
        };
        let spacing = advance / period as u128;
        if spacing == 0 {
            return;
        }
        let log_spacing = u128::BITS - 1 - spacing.leading_zeros();
        if (log_spacing.saturating_sub(3)..=log_spacing.saturating_sub(1)).contains(&self.day_shift) {
            return;
        }
        // The window (BUCKETS days) still covers four times the entries' mean spread (their
        // number times the spacing), so that few keys fall beyond it into the heap.
        let spread = spacing.saturating_mul(4 * self.len() as u128);
        let covering = (u128::BITS - spread.leading_zeros()).saturating_sub(BUCKETS.trailing_zeros());
        let day_shift = log_spacing.saturating_sub(2).max(covering).min(MAX_DAY_SHIFT);
        if day_shift != self.day_shift {
            self.rebucket(nodes, day_shift);
        }
    }

    /// Pops between two choices of the day: [`ADAPT_PERIOD`] (in a test build, the
    /// probe's, which a test may lower: [`SharedTagCalendar::set_adapt_period`]).
    #[inline(always)]
    fn adapt_period(&self) -> u32 {
        #[cfg(test)]
        return self.probe.adapt_period;
        #[cfg(not(test))]
        ADAPT_PERIOD
    }

    /// Chooses the day every `pops` pops (at least 1) instead of every [`ADAPT_PERIOD`], from
    /// the next pop on (tests: short sequences then reach [`SharedTagCalendar::adapt_day`] and
    /// [`SharedTagCalendar::rebucket`]; the order must not depend on when the day changes).
    #[cfg(test)]
    pub fn set_adapt_period(&mut self, pops: u32) {
        self.probe.adapt_period = pops.max(1);
        self.pops_until_adapt = self.pops_until_adapt.min(self.probe.adapt_period);
    }

    /// What the tests read: the adaptation period and how often the cold paths ran.
    #[cfg(test)]
    pub fn probe(&self) -> Probe {
        self.probe
    }

    /// Sets the day to `2^day_shift` raw units and files every calendar entry again: in the
    /// buckets of the new days from the cursor's day on, or in the overflow heap if it lies
    /// beyond the new window or its bucket is crowded. O(entries + bitmap words); no
    /// allocation (the overflow heap has room for every id, see
    /// [`SharedTagCalendar::reserve_ids`]).
    #[cold]
    #[inline(never)]
    fn rebucket(&mut self, nodes: &mut CalendarNodes, day_shift: u32) {
        #[cfg(test)]
        {
            self.probe.rebuckets_with_entries += (self.calendar_len > 0) as u64;
        }
        // Chain every calendar entry through `next`, emptying the buckets.
        let mut chain = NIL;
        if let Some(table) = self.buckets.as_deref_mut().filter(|_| self.calendar_len > 0) {
            for word in 0..WORDS {
                let mut bits = std::mem::take(&mut table.words[word]);
                while bits != 0 {
                    let bucket = word * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    let head = std::mem::replace(&mut table.heads[bucket], NIL);
                    let mut tail = head;
                    while nodes.node(tail).next != NIL {
                        tail = nodes.node(tail).next;
                    }
                    nodes.node_mut(tail).next = chain;
                    chain = head;
                }
            }
        }
        self.summary = [0; SUMMARY_WORDS];
        self.calendar_len = 0;
        // The old cursor is a multiple of the new day if it is narrower; a wider day starts
        // at or below it. Either way no entry lies below the new cursor.
        let cursor = self.cursor;
        self.set_day_shift(day_shift);
        self.cursor = cursor & self.day_mask;
        self.cursor_bucket = self.bucket_of(self.cursor);
        while chain != NIL {
            let (id, node) = (chain, *nodes.node(chain));
            chain = node.next;
            nodes.node_mut(id).bucket = NIL;
            let key = VirtualTime::from_raw(node.key);
            if self.covers(self.cursor, node.key) {
                self.link(nodes, id, key, node.seq, node.aux, self.bucket_of(node.key));
            } else {
                self.overflow.push_with(id, key, node.seq, node.aux);
            }
        }
    }

    /// [`SharedTagCalendar::pop_then`] when the least entry is the overflow heap's top (if any).
    #[inline(always)]
    fn pop_overflow_then(
        &mut self,
        nodes: &mut CalendarNodes,
        next: impl FnOnce(&Entry<VirtualTime>) -> Option<(VirtualTime, u64, u32)>,
    ) -> Option<Entry<VirtualTime>> {
        let top = self.overflow.peek()?;
        self.last_popped = top.key.raw();
        match next(&top) {
            Some((key, seq, aux)) if self.window_for(key.raw(), self.len() - 1).is_none() => {
                self.overflow.replace_top_with(top.id, key, seq, aux);
            }
            Some((key, seq, aux)) => {
                self.overflow.pop();
                self.file(nodes, top.id, key, seq, aux, self.len - 1);
            }
            None => {
                self.overflow.pop();
                self.len -= 1;
            }
        }
        Some(top)
    }

    /// Unlinks `id` (in the calendar) from its bucket, which it returns: the first entry of
    /// its bucket at once, another after a walk to its predecessor.
    #[inline]
    fn unlink(&mut self, nodes: &mut CalendarNodes, id: u32) -> usize {
        let Node { bucket, next, .. } = *nodes.node(id);
        let bucket = bucket as usize % BUCKETS;
        let first = self.table().heads[bucket];
        if first == id && bucket == self.first_bucket {
            return self.unlink_least(nodes, id);
        }
        nodes.node_mut(id).bucket = NIL;
        self.calendar_len -= 1;
        if first != id {
            self.unlink_behind(nodes, first, id, next);
        } else {
            self.unlink_head(bucket, next);
        }
        bucket
    }

    /// Unlinks the calendar's least entry, `id` (every pop's: the first entry of the first
    /// bucket, so neither its bucket nor the bucket's first entry need reading), and returns
    /// its bucket.
    #[inline(always)]
    fn unlink_least(&mut self, nodes: &mut CalendarNodes, id: u32) -> usize {
        let bucket = self.first_bucket;
        debug_assert_eq!(nodes.node(id).bucket as usize % BUCKETS, bucket);
        debug_assert_eq!(self.table().heads[bucket], id);
        let next = nodes.node(id).next;
        nodes.node_mut(id).bucket = NIL;
        self.calendar_len -= 1;
        self.unlink_head(bucket, next);
        // No bucket before this one from the cursor's on holds an entry, so the first found in
        // bucket order from this one (itself, if it still holds an entry), then from 0, is the
        // first from the cursor's.
        if self.calendar_len > 0 {
            self.first_bucket = self
                .bucket_from(bucket)
                .or_else(|| self.bucket_from(0))
                .expect("a calendar with entries has a non-empty bucket");
            self.least_id = self.table().heads[self.first_bucket % BUCKETS];
            self.least_key = nodes.node(self.least_id).key;
        }
        bucket
    }

    /// Makes `next` the first entry of `bucket` in place of its first entry, which is taken
    /// out; clears its bits if it emptied.
    #[inline(always)]
    fn unlink_head(&mut self, bucket: usize, next: u32) {
        let table = self.buckets.as_deref_mut().expect("a calendar entry has buckets");
        table.heads[bucket % BUCKETS] = next;
        // Whether the bucket emptied is a coin toss for the processor's predictor (at 1,024
        // flows of the core bench, a bucket holds another entry behind the one popped 28–31 %
        // of the time), so it is not branched on: its bit is cleared by a mask (and the first
        // bucket, if this was it, is found again from this one).
        let emptied = next == NIL;
        let word = &mut table.words[bucket / 64 % WORDS];
        *word &= !((emptied as u64) << (bucket % 64));
        if *word == 0 {
            self.summary[bucket / 4096 % SUMMARY_WORDS] &= !(1 << (bucket / 64 % 64));
        }
    }

    /// Links `next` behind the predecessor of `id` in the bucket list from `first` (which holds
    /// `id`, not first): the removal of an entry other than the least (push-outs).
    #[cold]
    #[inline(never)]
    fn unlink_behind(&mut self, nodes: &mut CalendarNodes, first: u32, id: u32, next: u32) {
        let mut at = first;
        while nodes.node(at).next != id {
            at = nodes.node(at).next;
            debug_assert_ne!(at, NIL, "id {id} is not in its bucket");
        }
        nodes.node_mut(at).next = next;
    }

    /// Sets the [`Entry::aux`] of `id` (which must have an entry); the order is unchanged.
    #[inline]
    pub fn set_aux(&mut self, nodes: &mut CalendarNodes, id: u32, aux: u32) {
        if self.in_calendar(nodes, id) {
            nodes.node_mut(id).aux = aux;
        } else {
            self.overflow.set_aux(id, aux);
        }
    }

    /// Removes `id`'s entry, if any, and returns it.
    #[inline]
    pub fn remove(&mut self, nodes: &mut CalendarNodes, id: u32) -> Option<Entry<VirtualTime>> {
        if !self.in_calendar(nodes, id) {
            let entry = self.overflow.remove(id)?;
            self.len -= 1;
            return Some(entry);
        }
        let entry = self.entry(nodes, id);
        self.unlink(nodes, id);
        self.len -= 1;
        Some(entry)
    }

    /// Removes and returns the least entry; the cursor moves to its day if the calendar held
    /// it.
    #[inline]
    pub fn pop(&mut self, nodes: &mut CalendarNodes) -> Option<Entry<VirtualTime>> {
        self.pop_above_floor(nodes, u128::MAX)
    }

    /// [`SharedTagCalendar::pop`] for an owner whose later keys may lie below the key popped, but
    /// seldom below `floor`: the cursor moves to the day of the lesser of the two (never
    /// back), so that later keys from `floor` on still go to the calendar instead of the
    /// overflow heap. WF2Q+'s eligible set: a flow that V has just reached often has a finish
    /// tag below the last one served, but hardly ever below V.
    #[inline]
    pub fn pop_with_floor(
        &mut self,
        nodes: &mut CalendarNodes,
        floor: VirtualTime,
    ) -> Option<Entry<VirtualTime>> {
        self.pop_above_floor(nodes, floor.raw())
    }

    /// Removes and returns the least entry if its key is at most `limit` (as
    /// [`SharedTagCalendar::pop`]), else leaves the calendar as it is: one look at the least entry
    /// for an owner that releases every entry up to a limit (WF2Q+'s ineligible flows, as V
    /// reaches their start tags). Always inlined: out of line it cost WF2Q+ 50 instructions a
    /// packet more than a `peek_key` and a `pop` (issue 14, session 10).
    #[inline(always)]
    pub fn pop_at_most(
        &mut self,
        nodes: &mut CalendarNodes,
        limit: VirtualTime,
    ) -> Option<Entry<VirtualTime>> {
        let (id, in_calendar) = self.least(nodes)?;
        if !in_calendar {
            if self.overflow.peek()?.key > limit {
                return None;
            }
            let entry = self.overflow.pop()?;
            self.len -= 1;
            self.last_popped = entry.key.raw();
            self.count_pop(nodes);
            return Some(entry);
        }
        if self.least_key > limit.raw() {
            return None;
        }
        let entry = self.entry(nodes, id);
        let bucket = self.unlink_least(nodes, id);
        self.len -= 1;
        self.advance_to(entry.key.raw(), bucket);
        self.count_pop(nodes);
        Some(entry)
    }

    /// [`SharedTagCalendar::pop_with_floor`] with a raw floor.
    #[inline(always)]
    fn pop_above_floor(&mut self, nodes: &mut CalendarNodes, floor: u128) -> Option<Entry<VirtualTime>> {
        match self.least(nodes)? {
            (id, true) => {
                let entry = self.entry(nodes, id);
                let bucket = self.unlink_least(nodes, id);
                self.len -= 1;
                if floor < entry.key.raw() {
                    self.advance_to_floor(entry.key.raw(), floor);
                } else {
                    self.advance_to(entry.key.raw(), bucket);
                }
                self.count_pop(nodes);
                Some(entry)
            }
            (_, false) => {
                let entry = self.overflow.pop()?;
                self.len -= 1;
                self.last_popped = entry.key.raw();
                self.count_pop(nodes);
                Some(entry)
            }
        }
    }

    /// The id and [`Entry::aux`] of the least entry, and (from [`PREFETCH_AHEAD_ENTRIES`]
    /// entries on, while the overflow heap is empty) of the one after it; none below
    /// [`PREFETCH_ENTRIES`] entries. A prefetch hint only.
    #[inline(always)]
    pub fn upcoming(&self, nodes: &CalendarNodes) -> [Option<(u32, u32)>; 2] {
        if self.calendar_len == 0 {
            return self.overflow.upcoming();
        }
        let len = self.len();
        if len < PREFETCH_ENTRIES {
            return [None, None];
        }
        let Some((id, in_calendar)) = self.least(nodes) else {
            return [None, None];
        };
        let id_aux = |id: u32| (id, self.entry(nodes, id).aux);
        if !in_calendar {
            return [self.overflow.peek_id_aux(), None];
        }
        if len < PREFETCH_AHEAD_ENTRIES || len != self.calendar_len {
            return [Some(id_aux(id)), None];
        }
        let node = nodes.node(id);
        let after = if node.next != NIL {
            Some(node.next)
        } else {
            let bucket = node.bucket as usize % BUCKETS;
            self.bucket_from(bucket + 1)
                .or_else(|| self.bucket_from(0).filter(|&other| other != bucket))
                .map(|other| self.table().heads[other])
        };
        [Some(id_aux(id)), after.map(id_aux)]
    }

    /// Checks the lists, the bitmaps and the window (tests).
    #[cfg(test)]
    fn check(&self, nodes: &CalendarNodes) {
        assert_eq!(self.len, self.calendar_len + self.overflow.len());
        let mut seen = 0;
        let Some(table) = self.buckets.as_deref() else {
            assert_eq!(self.calendar_len, 0);
            return;
        };
        // The buckets whose bit is set (every calendar node is counted below, so a list
        // without its bit would show as a count mismatch).
        let set_buckets = (0..WORDS).flat_map(|word| {
            let mut bits = table.words[word];
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let bit = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    word * 64 + bit
                })
            })
        });
        for bucket in set_buckets {
            assert_ne!(table.heads[bucket], NIL, "bitmap of bucket {bucket}");
            let (mut prev, mut at) = (NIL, table.heads[bucket]);
            while at != NIL {
                let node = &nodes.nodes[at as usize];
                assert_eq!(node.bucket, bucket as u32 | Self::MEMBER_BITS);
                let day = self.day_of(node.key);
                assert!(self.covers(self.cursor, node.key), "day {day} outside the window");
                assert_eq!(day as usize & (BUCKETS - 1), bucket);
                if prev != NIL {
                    let before = &nodes.nodes[prev as usize];
                    assert!(
                        precedes(before.key, before.seq, node.key, node.seq),
                        "sorted bucket"
                    );
                }
                seen += 1;
                (prev, at) = (at, node.next);
            }
        }
        if self.calendar_len > 0 {
            assert_eq!(self.cursor & !self.day_mask, 0, "the cursor starts a day");
            assert_eq!(self.cursor_bucket, self.bucket_of(self.cursor));
            let scanned = self
                .bucket_from(self.cursor_bucket)
                .or_else(|| self.bucket_from(0));
            assert_eq!(
                Some(self.first_bucket),
                scanned,
                "the first bucket from the cursor's"
            );
            assert_eq!(self.least_id, table.heads[self.first_bucket], "the least id");
            assert_eq!(
                self.least_key, nodes.nodes[self.least_id as usize].key,
                "the least key"
            );
        }
        for word in 0..WORDS {
            assert_eq!(
                self.summary[word / 64] >> (word % 64) & 1 == 1,
                table.words[word] != 0
            );
        }
        assert_eq!(seen, self.calendar_len);
        let members = nodes
            .nodes
            .iter()
            .filter(|node| node.bucket >> BUCKET_BITS == MEMBER);
        assert_eq!(members.count(), seen);
        for id in 0..nodes.nodes.len() as u32 {
            assert!(!(self.in_calendar(nodes, id) && self.overflow.contains(id)));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;
    use proptest::test_runner::TestCaseError;

    use super::*;

    fn v(value: u64) -> VirtualTime {
        VirtualTime::from_integer(value)
    }

    #[test]
    fn pops_in_key_then_sequence_order_across_calendar_and_overflow() {
        let mut calendar = TagCalendar::new();
        calendar.push_with(0, v(30), 0, 7);
        calendar.push_with(1, v(10), 1, 8); // below the cursor (day 30): overflow
        calendar.push_with(2, v(30), 2, 9); // same day and key, later: after id 0
        calendar.push_with(3, v(30 + BUCKETS as u64), 3, 0); // beyond the window: overflow
        calendar.push_with(4, VirtualTime::from_raw(v(31).raw() - 1), 4, 0); // end of day 30
        calendar.check();
        assert_eq!(calendar.peek().map(|e| (e.id, e.aux)), Some((1, 8)));
        let order: Vec<u32> = std::iter::from_fn(|| {
            let top = calendar.pop();
            calendar.check();
            top.map(|e| e.id)
        })
        .collect();
        assert_eq!(order, vec![1, 0, 2, 4, 3]);
        assert!(calendar.is_empty());
    }

    #[test]
    fn the_calendar_users_are_registered_disciplines() {
        for (id, ..) in DISCIPLINES {
            assert!(
                crate::registry::discipline_info(id).is_some(),
                "{id} is not registered"
            );
        }
    }

    /// The bucket array is allocated on the first push, not before, and has its fixed size.
    #[test]
    fn the_bucket_array_is_allocated_on_the_first_push() {
        let mut calendar = TagCalendar::new();
        assert_eq!(calendar.allocated_bytes(), 0);
        calendar.reserve_ids(10);
        calendar.push_with(3, v(7), 0, 0);
        assert_eq!(BUCKET_ARRAY_BYTES, BUCKETS * 4 + WORDS * 8);
        assert_eq!(NODE_BYTES, 64);
        assert_eq!(
            calendar.allocated_bytes(),
            BUCKET_ARRAY_BYTES + calendar.nodes.nodes.capacity() * NODE_BYTES
        );
    }

    /// A push that would pass more than [`BUCKET_WALK_LIMIT`] entries of its bucket goes to
    /// the heap, and the pops still come out in order.
    #[test]
    fn a_crowded_bucket_sends_pushes_to_the_heap() {
        let mut calendar = TagCalendar::new();
        let pushes = BUCKET_WALK_LIMIT as u32 + 12;
        for id in 0..pushes {
            // All in day 0, in increasing order: each push passes every entry before it.
            calendar.push_with(id, VirtualTime::from_raw(id as u128), id as u64, 0);
        }
        calendar.check();
        assert_eq!(calendar.calendar.calendar_len, BUCKET_WALK_LIMIT + 1);
        assert_eq!(
            calendar.calendar.overflow.len(),
            pushes as usize - BUCKET_WALK_LIMIT - 1
        );
        let order: Vec<u32> = std::iter::from_fn(|| calendar.pop().map(|e| e.id)).collect();
        assert_eq!(order, (0..pushes).collect::<Vec<_>>());
    }

    /// Beyond [`CALENDAR_MAX_ENTRIES`] entries the pushes go to the heap, and popping with a
    /// push of the next key keeps the exact order across both.
    #[test]
    fn many_entries_spill_to_the_heap_in_order() {
        let mut calendar = TagCalendar::new();
        let flows = CALENDAR_MAX_ENTRIES as u32 + 904;
        let mut seq = 0;
        for id in 0..flows {
            // Keys 0, 7/16, 14/16, … units: several per day, out of id order.
            let key = VirtualTime::from_raw((((id * 7919) % flows) as u128) << 28);
            calendar.push_with(id, key, seq, 0);
            seq += 1;
        }
        calendar.check();
        assert!(
            calendar.calendar.calendar_len == CALENDAR_MAX_ENTRIES && calendar.calendar.overflow.len() == 904
        );
        let mut last = (0, 0);
        for _ in 0..3 * flows {
            seq += 1;
            let top = calendar
                .pop_then(|top| Some((top.key.saturating_add(VirtualTime::from_raw(1 << 35)), seq, 0)))
                .unwrap();
            assert!(
                (top.key.raw(), top.seq) > last || last == (0, 0),
                "order at {top:?}"
            );
            last = (top.key.raw(), top.seq);
        }
        calendar.check();
        assert_eq!(calendar.len(), flows as usize);
    }

    /// The day follows the spacing of the popped keys: after a few periods of
    /// [`ADAPT_PERIOD`] pops whose keys advance by `spacing` each, the day is a quarter to an
    /// eighth of it, and the pops stay in order throughout (across each change of the day).
    #[test]
    fn the_day_follows_the_keys_spacing() {
        // (log2 spacing, entries, day): a quarter to an eighth of the spacing, except with 3,000
        // entries, where that window (2^15 days of 2^26) would cover less than four times
        // their spread (4 · 3,000 · 2^28 < 2^42 = 2^15 · 2^27).
        for (spacing_shift, flows, day_shift) in
            [(20u32, 1024u32, 18), (40, 1024, 38), (33, 64, 31), (28, 3000, 27)]
        {
            let spacing = 1u128 << spacing_shift;
            let mut calendar = TagCalendar::new();
            calendar.reserve_ids(flows as usize);
            let mut seq = 0u64;
            for id in 0..flows {
                calendar.push_with(id, VirtualTime::from_raw(id as u128 * spacing), seq, id);
                seq += 1;
            }
            let mut last = None;
            for _ in 0..4 * ADAPT_PERIOD {
                seq += 1;
                let top = calendar
                    .pop_then(|top| {
                        Some((
                            VirtualTime::from_raw(top.key.raw() + flows as u128 * spacing),
                            seq,
                            top.id,
                        ))
                    })
                    .expect("entries");
                assert!(last < Some((top.key.raw(), top.seq)), "order at {top:?}");
                assert_eq!(top.aux, top.id);
                last = Some((top.key.raw(), top.seq));
            }
            calendar.check();
            assert_eq!(calendar.day_shift(), day_shift, "spacing 2^{spacing_shift}");
            assert_eq!(calendar.len(), flows as usize);
        }
    }

    /// A day kept while it lies within a sixteenth to a half of the spacing.
    #[test]
    fn a_day_near_the_spacing_is_kept() {
        for day_shift in [DAY_SHIFT - 3, DAY_SHIFT - 1, DAY_SHIFT - 4, DAY_SHIFT] {
            let mut calendar = TagCalendar::with_day_shift(day_shift);
            let spacing = 1u128 << (DAY_SHIFT + 1);
            for id in 0..8 {
                calendar.push_with(id, VirtualTime::from_raw(id as u128 * spacing), id as u64, 0);
            }
            for seq in 0..3 * ADAPT_PERIOD as u64 {
                calendar
                    .pop_then(|top| Some((VirtualTime::from_raw(top.key.raw() + 8 * spacing), 8 + seq, 0)));
            }
            let kept = (DAY_SHIFT - 2..=DAY_SHIFT).contains(&day_shift);
            let expected = if kept { day_shift } else { DAY_SHIFT - 1 };
            assert_eq!(calendar.day_shift(), expected, "from {day_shift}");
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        /// Push (after removing it, if present) an id with a key above the last popped key
        /// (`offset` in 1/16 days, so several keys share a day) or anywhere (`free`).
        Push {
            id: u32,
            region: u8,
            offset: u64,
            free: bool,
        },
        Remove(u32),
        Pop,
        /// Pop with a floor `offset` 1/16 days above the last popped key (below or above the
        /// key popped now).
        PopWithFloor(u64),
        /// Pop if the least key is at most `offset` 1/16 days above the last popped key.
        PopAtMost(u64),
        /// Pop, then push the popped id again `offset` 1/16 days above the popped key.
        PopThen(u64),
        /// A new day of `2^shift` raw units, every entry filed again.
        Rebucket(u32),
    }

    fn arb_op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u32..40, 0u8..4, 0u64..(BUCKETS as u64 * 20), prop::bool::weighted(0.1))
                .prop_map(|(id, region, offset, free)| Op::Push { id, region, offset, free }),
            1 => (0u32..40).prop_map(Op::Remove),
            2 => Just(Op::Pop),
            1 => (0u64..(BUCKETS as u64 * 20)).prop_map(Op::PopWithFloor),
            1 => (0u64..(BUCKETS as u64 * 20)).prop_map(Op::PopAtMost),
            2 => (0u64..(BUCKETS as u64 * 20)).prop_map(Op::PopThen),
            1 => prop_oneof![DAY_SHIFT - 12..DAY_SHIFT + 12, Just(0), Just(MAX_DAY_SHIFT)].prop_map(Op::Rebucket),
        ]
    }

    proptest! {
        /// Against a sorted map of (key, seq) → id: keys near the last pop, keys beyond the
        /// window and below the cursor, far-apart regions (across 2^64 and 2^96 raw units and
        /// near the top of the range), equal keys (ties by seq), removals.
        #[test]
        fn follows_a_sorted_map(ops in proptest::collection::vec(arb_op(), 1..400)) {
            follows_the_model(TagCalendar::new(), ops)?;
        }

        /// The same with days far wider than the keys' spacing (up to 2^40 raw units, a
        /// thousand times the default, and the widest): crowded buckets, pushes beyond
        /// [`BUCKET_WALK_LIMIT`] to the heap; and with one-unit days (a window of 2^15 raw
        /// units: most keys outside it). In half the cases the day is chosen every 1 to 16
        /// pops instead of every [`ADAPT_PERIOD`] (the test build's knob), so that its
        /// adaptation re-buckets among these operations too.
        #[test]
        fn follows_a_sorted_map_with_other_days(
            ops in proptest::collection::vec(arb_op(), 1..400),
            day_shift in prop_oneof![DAY_SHIFT..DAY_SHIFT + 10, Just(0), Just(MAX_DAY_SHIFT), Just(u32::MAX)],
            adapt_period in prop_oneof![Just(ADAPT_PERIOD), 1u32..=16],
        ) {
            let mut calendar = TagCalendar::with_day_shift(day_shift);
            calendar.calendar.set_adapt_period(adapt_period);
            follows_the_model(calendar, ops)?;
        }
    }

    fn follows_the_model(mut calendar: TagCalendar, ops: Vec<Op>) -> Result<(), TestCaseError> {
        {
            let mut model: BTreeMap<(u128, u64), u32> = BTreeMap::new();
            let mut by_id: BTreeMap<u32, (u128, u64)> = BTreeMap::new();
            let mut last = 0u128;
            let mut seq = 0u64;
            for op in ops {
                match op {
                    Op::Push {
                        id,
                        region,
                        offset,
                        free,
                    } => {
                        if let Some(old) = by_id.remove(&id) {
                            model.remove(&old);
                            prop_assert!(calendar.remove(id).is_some());
                        }
                        let base = [0u128, 1 << 64, 3 << 96, u128::MAX - (1 << 60)][region as usize];
                        let step = (offset as u128) << (DAY_SHIFT - 4);
                        let raw = if free {
                            base.saturating_add(step)
                        } else {
                            last.max(base).saturating_add(step / 64)
                        };
                        seq += 1;
                        calendar.push_with(id, VirtualTime::from_raw(raw), seq, id + 1);
                        model.insert((raw, seq), id);
                        by_id.insert(id, (raw, seq));
                    }
                    Op::Remove(id) => {
                        let expected = by_id.remove(&id);
                        if let Some(key) = expected {
                            model.remove(&key);
                        }
                        let removed = calendar.remove(id).map(|e| (e.key.raw(), e.seq));
                        prop_assert_eq!(removed, expected);
                    }
                    Op::PopThen(offset) => {
                        let expected = model.pop_first();
                        seq += 1;
                        let mut pushed = None;
                        let popped = calendar.pop_then(|top| {
                            let raw = top.key.raw().saturating_add((offset as u128) << (DAY_SHIFT - 4));
                            pushed = Some((top.id, raw));
                            Some((VirtualTime::from_raw(raw), seq, top.id + 1))
                        });
                        prop_assert_eq!(
                            popped.map(|e| ((e.key.raw(), e.seq), e.id, e.aux)),
                            expected.map(|(key, id)| (key, id, id + 1))
                        );
                        if let (Some(((key, _), _)), Some((id, raw))) = (expected, pushed) {
                            last = key;
                            model.insert((raw, seq), id);
                            by_id.insert(id, (raw, seq));
                        }
                    }
                    Op::Rebucket(shift) => calendar.rebucket(shift),
                    Op::Pop | Op::PopWithFloor(_) | Op::PopAtMost(_) => {
                        let (expected, popped) = match op {
                            Op::PopAtMost(offset) => {
                                let limit = last.saturating_add((offset as u128) << (DAY_SHIFT - 4));
                                let expected = match model.first_key_value() {
                                    Some((&(key, _), _)) if key <= limit => model.pop_first(),
                                    _ => None,
                                };
                                (expected, calendar.pop_at_most(VirtualTime::from_raw(limit)))
                            }
                            Op::PopWithFloor(offset) => (
                                model.pop_first(),
                                calendar.pop_with_floor(VirtualTime::from_raw(
                                    last.saturating_add((offset as u128) << (DAY_SHIFT - 4)),
                                )),
                            ),
                            _ => (model.pop_first(), calendar.pop()),
                        };
                        prop_assert_eq!(
                            popped.map(|e| ((e.key.raw(), e.seq), e.id, e.aux)),
                            expected.map(|(key, id)| (key, id, id + 1))
                        );
                        if let Some(((key, _), id)) = expected {
                            by_id.remove(&id);
                            last = key;
                        }
                    }
                }
                calendar.check();
                prop_assert_eq!(calendar.len(), model.len());
                prop_assert_eq!(
                    calendar.peek().map(|e| e.id),
                    model.first_key_value().map(|(_, &id)| id)
                );
                for (&id, &(key, seq)) in &by_id {
                    let entry = calendar.get(id).expect("present");
                    prop_assert_eq!((entry.key.raw(), entry.seq), (key, seq));
                }
            }
        }
        Ok(())
    }

    /// Ids of the shared-calendar tests.
    const SHARED_IDS: u32 = 24;
    /// Entries a forced re-bucketing cycles through (ids 0 to 3).
    const DRIVE_IDS: u32 = 4;
    /// The id pushed beyond a calendar's window, and the one pushed below its cursor.
    const FAR_ID: u32 = SHARED_IDS - 1;
    const BELOW_ID: u32 = SHARED_IDS - 2;

    /// A random operation of the shared-calendar tests; offsets are in the case's unit.
    #[derive(Clone, Debug)]
    enum SharedOp {
        /// Push `id` into `side` (out of wherever it was first), `offset` above the side's
        /// last popped key.
        Push { id: u32, side: usize, offset: u64 },
        /// Remove `id` from the calendar that holds it, if any.
        Remove(u32),
        /// Pop `side`'s least (see [`SharedPop`]; its offset above the side's last popped key).
        Pop {
            side: usize,
            how: SharedPop,
            offset: u64,
        },
        /// Move `side`'s least to the other calendar, `offset` sixteenths above the greater of
        /// its key and the other side's last popped key.
        Move { side: usize, offset: u64 },
    }

    /// The pops of [`SharedOp::Pop`].
    #[derive(Clone, Copy, Debug)]
    enum SharedPop {
        Plain,
        /// With a floor `offset` above the last popped key.
        WithFloor,
        /// If the least key is at most `offset` above the last popped key.
        AtMost,
        /// Then the popped id filed again `offset` above the popped key.
        Then,
    }

    /// What a forced section does to one calendar: a re-bucketing, then a push beyond its
    /// window and one below its cursor (both to the overflow heap), then a pop (from it).
    #[derive(Clone, Copy, Debug)]
    struct Forced {
        side: usize,
        /// How many times wider or narrower (as a power of two, 3 to 6) than the day the
        /// spacing of the driven keys is.
        steps: u32,
        wider: bool,
        far_offset: u64,
        below_offset: u64,
    }

    /// One case: random operations, a forced section on each calendar, random operations.
    #[derive(Clone, Debug)]
    struct SharedCase {
        /// Pops between two choices of the day, on both calendars.
        adapt_period: u32,
        /// Raw units of the random operations' offsets (as a power of two).
        unit_shift: u32,
        before: Vec<SharedOp>,
        forced: [Forced; 2],
        after: Vec<SharedOp>,
    }

    fn arb_shared_op() -> impl Strategy<Value = SharedOp> {
        let side = 0usize..2;
        let offset = 0u64..(BUCKETS as u64 * 4);
        let how = prop_oneof![
            Just(SharedPop::Plain),
            Just(SharedPop::WithFloor),
            Just(SharedPop::AtMost),
            Just(SharedPop::Then)
        ];
        prop_oneof![
            4 => (0..SHARED_IDS, side.clone(), offset.clone())
                .prop_map(|(id, side, offset)| SharedOp::Push { id, side, offset }),
            1 => (0..SHARED_IDS).prop_map(SharedOp::Remove),
            3 => (side.clone(), how, offset.clone()).prop_map(|(side, how, offset)| SharedOp::Pop { side, how, offset }),
            2 => (side, offset).prop_map(|(side, offset)| SharedOp::Move { side, offset }),
        ]
    }

    fn arb_shared_case() -> impl Strategy<Value = SharedCase> {
        let forced = |side| {
            (3u32..=6, prop::bool::ANY, 0u64..1 << 40, 0u64..1 << 40).prop_map(
                move |(steps, wider, far_offset, below_offset)| Forced {
                    side,
                    steps,
                    wider,
                    far_offset,
                    below_offset,
                },
            )
        };
        (
            prop_oneof![
                Just(1u32),
                Just(2),
                Just(3),
                Just(7),
                Just(16),
                Just(ADAPT_PERIOD)
            ],
            DAY_SHIFT - 12..=DAY_SHIFT + 8,
            proptest::collection::vec(arb_shared_op(), 0..150),
            (forced(0), forced(1), prop::bool::ANY),
            proptest::collection::vec(arb_shared_op(), 0..150),
        )
            .prop_map(
                |(adapt_period, unit_shift, before, (zero, one, swap), after)| SharedCase {
                    adapt_period,
                    unit_shift,
                    before,
                    forced: if swap { [one, zero] } else { [zero, one] },
                    after,
                },
            )
    }

    /// A pop of [`SharedCalendars::pop`], its argument resolved to raw units.
    #[derive(Clone, Copy, Debug)]
    enum Popping {
        Plain,
        WithFloor(u128),
        AtMost(u128),
        /// The popped id filed again this far above the popped key.
        Then(u128),
    }

    /// What a case reached on each calendar (index: member number).
    #[derive(Clone, Copy, Debug, Default)]
    struct Reached {
        adaptations: [u64; 2],
        rebuckets_with_entries: [u64; 2],
        overflow_pushes: [u64; 2],
        overflow_pops: [u64; 2],
    }

    /// Two calendars over one node table, each id in at most one of them at a time (as
    /// WF2Q+'s sets), and a sorted map of (key, seq) → id for each.
    struct SharedCalendars {
        nodes: CalendarNodes,
        first: SharedTagCalendar<0>,
        second: SharedTagCalendar<1>,
        models: [BTreeMap<(u128, u64), u32>; 2],
        by_id: BTreeMap<u32, (usize, (u128, u64))>,
        last: [u128; 2],
        seq: u64,
        /// Pushes that went to a calendar's overflow heap, and pops that came from it.
        overflow_pushes: [u64; 2],
        overflow_pops: [u64; 2],
    }

    /// `$body` with `$calendar` the calendar of `$side` (0 or 1) and `$nodes` the table.
    macro_rules! on_side {
        ($calendars:expr, $side:expr, |$calendar:ident, $nodes:ident| $body:expr) => {
            if $side == 0 {
                let ($calendar, $nodes) = (&mut $calendars.first, &mut $calendars.nodes);
                $body
            } else {
                let ($calendar, $nodes) = (&mut $calendars.second, &mut $calendars.nodes);
                $body
            }
        };
    }

    impl SharedCalendars {
        fn new(adapt_period: u32) -> SharedCalendars {
            let mut calendars = SharedCalendars {
                nodes: CalendarNodes::new(),
                first: SharedTagCalendar::new(),
                second: SharedTagCalendar::new(),
                models: [BTreeMap::new(), BTreeMap::new()],
                by_id: BTreeMap::new(),
                last: [0; 2],
                seq: 0,
                overflow_pushes: [0; 2],
                overflow_pops: [0; 2],
            };
            calendars.first.set_adapt_period(adapt_period);
            calendars.second.set_adapt_period(adapt_period);
            calendars
        }

        fn probe(&self, side: usize) -> Probe {
            [self.first.probe(), self.second.probe()][side]
        }

        fn reached(&self) -> Reached {
            let (first, second) = (self.first.probe(), self.second.probe());
            Reached {
                adaptations: [first.adaptations, second.adaptations],
                rebuckets_with_entries: [first.rebuckets_with_entries, second.rebuckets_with_entries],
                overflow_pushes: self.overflow_pushes,
                overflow_pops: self.overflow_pops,
            }
        }

        /// Takes `id` out of the calendar that holds it, if any (checked against its model).
        fn remove(&mut self, id: u32) -> Result<(), TestCaseError> {
            let expected = self.by_id.remove(&id);
            if let Some((side, key)) = expected {
                self.models[side].remove(&key);
            }
            let removed = [
                self.first.remove(&mut self.nodes, id),
                self.second.remove(&mut self.nodes, id),
            ]
            .map(|entry| entry.map(|e| (e.key.raw(), e.seq)));
            for (side, removed) in removed.into_iter().enumerate() {
                prop_assert_eq!(
                    removed,
                    expected.filter(|&(at, _)| at == side).map(|(_, key)| key)
                );
            }
            Ok(())
        }

        /// Pushes `id` into `side` with the raw key `raw` (out of wherever it was first);
        /// returns whether it went to the overflow heap.
        fn push(&mut self, side: usize, id: u32, raw: u128) -> Result<bool, TestCaseError> {
            self.remove(id)?;
            self.seq += 1;
            let (key, seq) = (VirtualTime::from_raw(raw), self.seq);
            let overflowed = on_side!(self, side, |calendar, nodes| {
                let before = calendar.overflow.len();
                calendar.push_with(nodes, id, key, seq, id);
                calendar.overflow.len() > before
            });
            self.overflow_pushes[side] += overflowed as u64;
            self.models[side].insert((raw, seq), id);
            self.by_id.insert(id, (side, (raw, seq)));
            Ok(overflowed)
        }

        /// Pops `side`'s least as `how` says, checked against its model; returns its id.
        fn pop(&mut self, side: usize, how: Popping) -> Result<Option<u32>, TestCaseError> {
            let model = &mut self.models[side];
            let expected = match how {
                Popping::AtMost(limit) => match model.first_key_value() {
                    Some((&(key, _), _)) if key <= limit => model.pop_first(),
                    _ => None,
                },
                _ => model.pop_first(),
            };
            self.seq += 1;
            let seq = self.seq;
            // Whether the least is the heap's top (a pop then takes it there, unless `how`
            // is `Then`, which may choose a new day first).
            let (popped, from_heap) = on_side!(self, side, |calendar, nodes| {
                let from_heap = calendar.least(nodes).is_some_and(|(_, in_calendar)| !in_calendar);
                let popped = match how {
                    Popping::Plain => calendar.pop(nodes),
                    Popping::WithFloor(floor) => calendar.pop_with_floor(nodes, VirtualTime::from_raw(floor)),
                    Popping::AtMost(limit) => calendar.pop_at_most(nodes, VirtualTime::from_raw(limit)),
                    Popping::Then(increment) => calendar.pop_then(nodes, |top| {
                        Some((
                            top.key.saturating_add(VirtualTime::from_raw(increment)),
                            seq,
                            top.id,
                        ))
                    }),
                };
                (popped, from_heap && !matches!(how, Popping::Then(_)))
            });
            prop_assert_eq!(
                popped.map(|e| ((e.key.raw(), e.seq), e.id, e.aux)),
                expected.map(|(key, id)| (key, id, id))
            );
            let Some(((key, _), id)) = expected else {
                return Ok(None);
            };
            self.overflow_pops[side] += from_heap as u64;
            self.last[side] = key;
            self.by_id.remove(&id);
            if let Popping::Then(increment) = how {
                let raw = key.saturating_add(increment);
                self.models[side].insert((raw, seq), id);
                self.by_id.insert(id, (side, (raw, seq)));
            }
            Ok(Some(id))
        }

        /// Moves `side`'s least to the other calendar, `raw_offset` above the greater of its
        /// key and the other side's last popped key.
        fn move_least(&mut self, side: usize, raw_offset: u128) -> Result<(), TestCaseError> {
            let expected = self.models[side].pop_first();
            let popped = on_side!(self, side, |calendar, nodes| calendar.pop(nodes));
            prop_assert_eq!(popped.map(|e| ((e.key.raw(), e.seq), e.id)), expected);
            let Some(entry) = popped else {
                return Ok(());
            };
            self.by_id.remove(&entry.id);
            self.last[side] = entry.key.raw();
            let other = 1 - side;
            let raw = entry.key.raw().max(self.last[other]).saturating_add(raw_offset);
            let key = VirtualTime::from_raw(raw);
            let overflowed = on_side!(self, other, |calendar, nodes| {
                let before = calendar.overflow.len();
                calendar.push_with(nodes, entry.id, key, entry.seq, entry.aux);
                calendar.overflow.len() > before
            });
            self.overflow_pushes[other] += overflowed as u64;
            self.models[other].insert((raw, entry.seq), entry.id);
            self.by_id.insert(entry.id, (other, (raw, entry.seq)));
            Ok(())
        }

        fn apply(&mut self, op: &SharedOp, unit_shift: u32) -> Result<(), TestCaseError> {
            let units = |offset: u64| (offset as u128) << unit_shift;
            match *op {
                SharedOp::Push { id, side, offset } => {
                    self.push(side, id, self.last[side].saturating_add(units(offset)))?;
                }
                SharedOp::Remove(id) => self.remove(id)?,
                SharedOp::Pop { side, how, offset } => {
                    let above_last = self.last[side].saturating_add(units(offset));
                    let how = match how {
                        SharedPop::Plain => Popping::Plain,
                        SharedPop::WithFloor => Popping::WithFloor(above_last),
                        SharedPop::AtMost => Popping::AtMost(above_last),
                        SharedPop::Then => Popping::Then(units(offset)),
                    };
                    self.pop(side, how)?;
                }
                SharedOp::Move { side, offset } => self.move_least(side, units(offset) >> 4)?,
            }
            Ok(())
        }

        /// A re-bucketing of `forced.side`'s calendar, by construction: the side is emptied,
        /// then [`DRIVE_IDS`] entries spaced `2^e` apart, with `e` `forced.steps` above or below
        /// the day's `log2` plus 2 (outside the range of spacings the day is kept for), each
        /// popped and filed again that many spacings later, `3 · period + 2` times: at least
        /// one period of pops then advances by exactly that spacing, and its adaptation
        /// chooses another day. Then a push beyond the window and one below the cursor (both
        /// to the overflow heap), and a pop (from the heap: the least entry is below the
        /// cursor).
        fn force(&mut self, forced: Forced) -> Result<(), TestCaseError> {
            let side = forced.side;
            while self.pop(side, Popping::Plain)?.is_some() {}
            let day = on_side!(self, side, |calendar, _nodes| calendar.day_shift());
            let (wider, narrower) = (day + 2 + forced.steps, (day + 2).checked_sub(forced.steps));
            let exponent = match narrower {
                Some(narrower) if (!forced.wider || wider > 90) && narrower > 0 => narrower,
                _ => wider,
            };
            let spacing = 1u128 << exponent;
            let base = self.last[side];
            for id in 0..DRIVE_IDS {
                self.push(side, id, base + id as u128 * spacing)?;
            }
            let period = self.probe(side).adapt_period;
            let rebuckets = self.probe(side).rebuckets_with_entries;
            for _ in 0..3 * period + 2 {
                let before = self.probe(side).rebuckets_with_entries;
                prop_assert!(self
                    .pop(side, Popping::Then(DRIVE_IDS as u128 * spacing))?
                    .is_some());
                // The whole structure after each re-bucketing (every pop is checked against
                // the model).
                if self.probe(side).rebuckets_with_entries > before {
                    self.check()?;
                }
            }
            self.check()?;
            prop_assert!(
                self.probe(side).rebuckets_with_entries > rebuckets,
                "no re-bucketing of side {} (day 2^{}, spacing 2^{})",
                side,
                day,
                exponent
            );
            let (cursor, window, in_calendar) = on_side!(self, side, |calendar, _nodes| (
                calendar.cursor,
                calendar.window,
                calendar.calendar_len
            ));
            prop_assert!(in_calendar > 0 && cursor > 0);
            if let Some(far) = cursor.checked_add(window) {
                prop_assert!(self.push(side, FAR_ID, far.saturating_add(forced.far_offset as u128))?);
            }
            let below = cursor - 1 - forced.below_offset as u128 % cursor;
            prop_assert!(self.push(side, BELOW_ID, below)?);
            let pops = self.overflow_pops[side];
            prop_assert_eq!(self.pop(side, Popping::Plain)?, Some(BELOW_ID));
            prop_assert_eq!(self.overflow_pops[side], pops + 1);
            Ok(())
        }

        /// Both calendars' structure, lengths, least entries and every id's entry against the
        /// models.
        fn check(&self) -> Result<(), TestCaseError> {
            let nodes = &self.nodes;
            self.first.check(nodes);
            self.second.check(nodes);
            prop_assert_eq!(self.first.len(), self.models[0].len());
            prop_assert_eq!(self.second.len(), self.models[1].len());
            prop_assert_eq!(
                self.first.peek(nodes).map(|e| e.id),
                self.models[0].first_key_value().map(|(_, &id)| id)
            );
            prop_assert_eq!(
                self.second.peek(nodes).map(|e| e.id),
                self.models[1].first_key_value().map(|(_, &id)| id)
            );
            for id in 0..SHARED_IDS {
                let expected = self.by_id.get(&id);
                let in_first = self.first.get(nodes, id).map(|e| (e.key.raw(), e.seq));
                let in_second = self.second.get(nodes, id).map(|e| (e.key.raw(), e.seq));
                prop_assert_eq!(
                    in_first,
                    expected.filter(|(side, _)| *side == 0).map(|&(_, key)| key)
                );
                prop_assert_eq!(
                    in_second,
                    expected.filter(|(side, _)| *side == 1).map(|&(_, key)| key)
                );
                prop_assert_eq!(self.first.contains(nodes, id), in_first.is_some());
                prop_assert_eq!(self.second.contains(nodes, id), in_second.is_some());
            }
            Ok(())
        }
    }

    /// Runs one case, checking after every operation; returns what it reached in its random
    /// operations and in all.
    fn run_shared_case(case: &SharedCase) -> Result<(Reached, Reached), TestCaseError> {
        let mut calendars = SharedCalendars::new(case.adapt_period);
        let mut random = Reached::default();
        let mut run_random = |calendars: &mut SharedCalendars, ops: &[SharedOp]| {
            let start = calendars.reached();
            for op in ops {
                calendars.apply(op, case.unit_shift)?;
                calendars.check()?;
            }
            let end = calendars.reached();
            for member in 0..2 {
                random.adaptations[member] += end.adaptations[member] - start.adaptations[member];
                random.rebuckets_with_entries[member] +=
                    end.rebuckets_with_entries[member] - start.rebuckets_with_entries[member];
                random.overflow_pushes[member] += end.overflow_pushes[member] - start.overflow_pushes[member];
                random.overflow_pops[member] += end.overflow_pops[member] - start.overflow_pops[member];
            }
            Ok::<(), TestCaseError>(())
        };
        run_random(&mut calendars, &case.before)?;
        for forced in case.forced {
            calendars.force(forced)?;
            calendars.check()?;
        }
        run_random(&mut calendars, &case.after)?;
        Ok((random, calendars.reached()))
    }

    /// Two calendars over one node table, each id in at most one of them at a time (as
    /// WF2Q+'s sets), each following its own sorted map through random pushes, removals, pops
    /// of every kind and moves between the two, with a day adapted every 1 to 16 pops (or
    /// every [`ADAPT_PERIOD`]) and offsets in units of 2^-13 to 2^7 (a case's); and in
    /// each case, between two random sequences, a forced section on each calendar (see
    /// [`SharedCalendars::force`]): a re-bucketing with entries, pushes to the overflow heap
    /// beyond the window and below the cursor, a pop from the heap. Every case must reach
    /// each of these on both calendars (the counts below); the random operations reach them
    /// in some cases too (printed with `--nocapture`).
    #[test]
    fn calendars_sharing_a_node_table_follow_their_sorted_maps() {
        let config = ProptestConfig {
            source_file: Some(file!()),
            ..ProptestConfig::default()
        };
        let cases = config.cases as u64;
        let mut runner = proptest::test_runner::TestRunner::new(config);
        // Cases that reached each path: [random operations, whole case][member].
        let tally = std::cell::RefCell::new([[[0u64; 2]; 4]; 2]);
        let result = runner.run(&arb_shared_case(), |case| {
            let (random, all) = run_shared_case(&case)?;
            let mut tally = tally.borrow_mut();
            for (part, reached) in [random, all].iter().enumerate() {
                let paths = [
                    reached.adaptations,
                    reached.rebuckets_with_entries,
                    reached.overflow_pushes,
                    reached.overflow_pops,
                ];
                for (path, counts) in paths.iter().enumerate() {
                    for member in 0..2 {
                        tally[part][path][member] += (counts[member] > 0) as u64;
                    }
                }
            }
            Ok(())
        });
        if let Err(failure) = result {
            panic!("{failure}");
        }
        let tally = tally.into_inner();
        let paths = [
            "adapt_day",
            "rebucket with entries",
            "overflow push",
            "overflow pop",
        ];
        for (path, name) in paths.iter().enumerate() {
            eprintln!(
                "{name}: random operations of {:?} cases (members 0, 1) of {cases}",
                tally[0][path]
            );
            assert_eq!(
                tally[1][path], [cases; 2],
                "cases that reached {name} on each member"
            );
        }
    }
}
