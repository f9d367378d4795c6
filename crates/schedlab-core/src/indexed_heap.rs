//! One indexed min-heap, shared by DWCS (its deadline heap, and the heap of runs of its table 1
//! order in [`crate::sorted_runs::SortedRuns`]) and the fair-queueing family (`tagged_queues`'
//! tag calendar's overflow heap; without its index, WFQ's GPS departures, WF2Q+'s lingering
//! set, and its eligible and ineligible sets while they hold many flows).
//!
//! Each entry stands for one *item* (a flow) named by a small integer `id`, and is ordered by
//! `(key, seq)`: the key first, then the sequence number, smaller first. A position index
//! (`id` → slot) lets an item's key be changed or the item removed in O(log n), so no stale
//! entries are ever left behind. Every id is in the heap at most once.
//!
//! Tie rule: equal keys come out in increasing `seq`. Owners pass an arrival sequence number
//! (the fair-queueing family: first come, first served among equal tags) or the flow id
//! (DWCS: the lowest-numbered stream), so that the order is total and does not depend on the
//! history of the heap. The one exception is the [`KeyOnly`] key of a narrow
//! [`VirtualTimeHeap`], which compares keys alone (equal keys in no particular order), for an
//! owner to whom ties do not matter (WF2Q+'s ineligible set, WFQ's departures).
//!
//! Layout: a [`ARITY`]-ary heap in one vector (a node's children are adjacent in memory, and
//! the tree is half as deep as a binary one); removal of the top and increases of a key sift
//! the entry down (a hole moves along the least children until the entry is not after the
//! least of them; every entry moved is written once), and decreases and pushes sift it up.
//! Pops from the top of a plain heap use Floyd's variant (the hole to a leaf, then the entry
//! rises); in the indexed heaps it was measured and not kept (issue 14). The vectors keep their capacity: no allocation once every id has
//! been seen and the heap has held its largest number of entries.
//!
//! [`PlainHeap`] (`IndexedHeap<K, false>`) is the same heap without the position index: no
//! sift writes a position back, entries leave only from the top, and [`LazyVirtualTimeHeap`]
//! builds lazy deletion on it (WF2Q+'s sets and WFQ's departures, where a flow leaves a heap elsewhere than at the
//! top only when longest-queue drop pushes out its only packet).
//!
//! [`VirtualTimeHeap`] is the same heap for [`VirtualTime`] keys (128 bits): it stores each key
//! as a 64-bit offset from a base while every key in it lies within 2^64 raw units of the base
//! (the usual case: the live tags of the fair-queueing family stay within a few packets'
//! `L/w` of the system's virtual time), which halves the cost of a comparison and shrinks an
//! entry from 32 to 24 bytes; when a key falls outside, the base moves (every offset shifted by
//! the same amount, order unchanged), and when the keys in the heap spread over 2^63 raw units
//! or more it holds them as full 128-bit keys until it is empty again. The order is exact in
//! every case.

use std::cmp::Ordering;

use crate::pool::prefetch_bytes;
use crate::virtual_time::VirtualTime;

/// Children per node.
pub const ARITY: usize = 4;

/// The position of an id that is not in the heap.
const ABSENT: u32 = u32::MAX;

/// A key the heap orders by, together with a sequence number.
pub trait HeapKey: Copy + Ord {
    /// Whether `(self, seq)` comes before `(other, other_seq)` lexicographically. Key types may
    /// override it with an equivalent faster comparison.
    #[inline(always)]
    fn precedes(&self, seq: u64, other: &Self, other_seq: u64) -> bool {
        match self.cmp(other) {
            Ordering::Less => true,
            Ordering::Equal => seq < other_seq,
            Ordering::Greater => false,
        }
    }
}

impl HeapKey for u64 {
    #[inline(always)]
    fn precedes(&self, seq: u64, other: &Self, other_seq: u64) -> bool {
        ((*self as u128) << 64 | seq as u128) < ((*other as u128) << 64 | other_seq as u128)
    }
}

impl HeapKey for VirtualTime {
    #[inline(always)]
    fn precedes(&self, seq: u64, other: &Self, other_seq: u64) -> bool {
        let (a, b) = (self.raw(), other.raw());
        let (a_high, b_high) = ((a >> 64) as u64, (b >> 64) as u64);
        if a_high != b_high {
            // Rare: live virtual times almost always share their high 64 bits.
            return a_high < b_high;
        }
        // (low 64 bits of the key, seq) as one 128-bit number: one compare with borrow, which
        // the child selection turns into conditional moves.
        ((a as u64 as u128) << 64 | seq as u128) < ((b as u64 as u128) << 64 | other_seq as u128)
    }
}

/// The key of a narrow [`VirtualTimeHeap`]: a 64-bit offset from the heap's base, with its
/// order among entries (`u64`: by (offset, seq); [`KeyOnly`]: by the offset alone).
pub trait OffsetKey: HeapKey + Default {
    /// The key of `offset`.
    fn from_offset(offset: u64) -> Self;
    /// The offset.
    fn offset(self) -> u64;
}

impl OffsetKey for u64 {
    #[inline(always)]
    fn from_offset(offset: u64) -> u64 {
        offset
    }

    #[inline(always)]
    fn offset(self) -> u64 {
        self
    }
}

/// An offset key ordered by itself alone: entries with equal keys come out in no particular
/// order (their seq is kept but not compared). For an owner to whom the order among equal
/// keys does not matter (WF2Q+'s ineligible set, which hands every flow V reaches to the
/// eligible heap whatever the order), one 64-bit comparison instead of a 128-bit one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct KeyOnly(u64);

impl HeapKey for KeyOnly {
    #[inline(always)]
    fn precedes(&self, _seq: u64, other: &Self, _other_seq: u64) -> bool {
        self.0 < other.0
    }
}

impl OffsetKey for KeyOnly {
    #[inline(always)]
    fn from_offset(offset: u64) -> KeyOnly {
        KeyOnly(offset)
    }

    #[inline(always)]
    fn offset(self) -> u64 {
        self.0
    }
}

/// One entry: the item `id` with its `key` and tie-breaking `seq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry<K> {
    /// The key the heap orders by.
    pub key: K,
    /// Tie-breaker among equal keys; smaller first.
    pub seq: u64,
    /// The item the entry stands for (a flow id).
    pub id: u32,
    /// A value the owner keeps with the entry, not part of the order (the entry has room for
    /// it): `tagged_queues` keeps the pool index of the flow's head tag there, so that the
    /// next flow's data can be prefetched from the top entry alone. 0 unless set.
    pub aux: u32,
}

impl<K: HeapKey> Entry<K> {
    /// The entry of `id` with `key` and `seq` (and [`Entry::aux`] 0).
    #[inline(always)]
    pub fn new(key: K, seq: u64, id: u32) -> Entry<K> {
        Entry { key, seq, id, aux: 0 }
    }

    /// Whether `self` comes out of the heap before `other`: `(key, seq)` lexicographically.
    #[inline(always)]
    pub fn before(&self, other: &Entry<K>) -> bool {
        self.key.precedes(self.seq, &other.key, other.seq)
    }
}

/// A min-heap of [`Entry`] by `(key, seq)` with a position index by id (`INDEXED`, the
/// default), or without one ([`PlainHeap`]).
#[derive(Clone, Debug)]
pub struct IndexedHeap<K, const INDEXED: bool = true> {
    entries: Vec<Entry<K>>,
    /// `position[id]`: the slot of `id` in `entries`, or [`ABSENT`] (empty unless `INDEXED`).
    position: Vec<u32>,
}

/// The same 4-ary heap without the position index: no id → slot look-up, so entries leave only
/// from the top (no update or removal by id), the same id may be in it more than once, and no
/// sift writes a position back. Owners that must take an item out elsewhere leave its entry
/// behind and skip it once it reaches the top (lazy deletion; see [`LazyVirtualTimeHeap`]).
pub type PlainHeap<K> = IndexedHeap<K, false>;

impl<K, const INDEXED: bool> Default for IndexedHeap<K, INDEXED> {
    fn default() -> Self {
        IndexedHeap {
            entries: Vec::new(),
            position: Vec::new(),
        }
    }
}

impl<K: HeapKey> IndexedHeap<K> {
    /// An empty heap.
    pub fn new() -> IndexedHeap<K> {
        IndexedHeap::default()
    }

    /// Whether `id` is in the heap.
    #[inline]
    pub fn contains(&self, id: u32) -> bool {
        self.position.get(id as usize).is_some_and(|&at| at != ABSENT)
    }

    /// The entry of `id`, if it is in the heap.
    #[inline]
    pub fn get(&self, id: u32) -> Option<&Entry<K>> {
        match self.position.get(id as usize) {
            Some(&at) if at != ABSENT => Some(&self.entries[at as usize]),
            _ => None,
        }
    }

    /// Changes the key and seq of `id` (which must be in the heap). O(log n).
    #[inline]
    pub fn update(&mut self, id: u32, key: K, seq: u64) {
        self.update_with(id, key, seq, 0);
    }

    /// [`IndexedHeap::update`] with the entry's new [`Entry::aux`].
    #[inline]
    pub fn update_with(&mut self, id: u32, key: K, seq: u64, aux: u32) {
        let at = self.position[id as usize];
        debug_assert_ne!(at, ABSENT, "id {id} is not in the heap");
        self.place(at as usize, Entry { key, seq, id, aux });
    }

    /// Sets the [`Entry::aux`] of `id` (which must be in the heap); the order is unchanged.
    #[inline]
    pub fn set_aux(&mut self, id: u32, aux: u32) {
        let at = self.position[id as usize];
        debug_assert_ne!(at, ABSENT, "id {id} is not in the heap");
        self.entries[at as usize].aux = aux;
    }

    /// Adds `id` with `key` and `seq`, or changes its key and seq if it is in the heap.
    #[inline]
    pub fn set(&mut self, id: u32, key: K, seq: u64) {
        if self.contains(id) {
            self.update(id, key, seq);
        } else {
            self.push(id, key, seq);
        }
    }

    /// Removes `id` if it is in the heap and returns its entry. O(log n).
    #[inline]
    pub fn remove(&mut self, id: u32) -> Option<Entry<K>> {
        let at = *self.position.get(id as usize)?;
        if at == ABSENT {
            return None;
        }
        let entry = self.entries[at as usize];
        self.remove_at(at as usize);
        Some(entry)
    }
}

impl<K: HeapKey, const INDEXED: bool> IndexedHeap<K, INDEXED> {
    /// Number of entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the heap is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The least entry.
    #[inline]
    pub fn peek(&self) -> Option<&Entry<K>> {
        self.entries.first()
    }

    /// The entry that would be least once the least is popped: the least child of the top.
    #[inline]
    pub fn second(&self) -> Option<&Entry<K>> {
        match self.entries.get(1..1 + ARITY) {
            Some(children) => Some(&children[least_of_four(children.try_into().expect("four children"))]),
            None => self.entries.get(1..)?.iter().reduce(
                |least, child| {
                    if child.before(least) {
                        child
                    } else {
                        least
                    }
                },
            ),
        }
    }

    /// Makes room for ids below `ids` and for as many entries, so that later pushes of such
    /// ids do not allocate. Owners call it when they first see an item.
    pub fn reserve_ids(&mut self, ids: usize) {
        if INDEXED && self.position.len() < ids {
            self.position.resize(ids, ABSENT);
        }
        if self.entries.capacity() < ids {
            self.entries.reserve(ids - self.entries.len());
        }
    }

    /// Adds `id` (which must not be in the heap unless the heap is plain) with `key` and
    /// `seq`. O(log n).
    #[inline]
    pub fn push(&mut self, id: u32, key: K, seq: u64) {
        self.push_with(id, key, seq, 0);
    }

    /// [`IndexedHeap::push`] with the entry's [`Entry::aux`].
    #[inline]
    pub fn push_with(&mut self, id: u32, key: K, seq: u64, aux: u32) {
        let index = id as usize;
        if INDEXED {
            if index >= self.position.len() {
                self.position.resize(index + 1, ABSENT);
            }
            debug_assert_eq!(self.position[index], ABSENT, "id {id} is already in the heap");
        }
        let entry = Entry { key, seq, id, aux };
        self.entries.push(entry);
        self.rise(self.entries.len() - 1, entry);
    }

    /// Removes and returns the least entry. O(log n).
    #[inline]
    pub fn pop(&mut self) -> Option<Entry<K>> {
        let top = *self.entries.first()?;
        self.remove_at(0);
        Some(top)
    }

    /// Replaces the least entry of the non-empty heap by `id` (not in the heap, or the least
    /// entry's own id) with `key`, `seq` and `aux`: a pop and a push in one pass down from
    /// the top, the usual exchange of the fair-queueing family's two sets. O(log n).
    #[inline]
    pub fn replace_top_with(&mut self, id: u32, key: K, seq: u64, aux: u32) {
        if INDEXED {
            let top = self.entries[0].id;
            self.position[top as usize] = ABSENT;
            let index = id as usize;
            if index >= self.position.len() {
                self.position.resize(index + 1, ABSENT);
            }
            debug_assert_eq!(self.position[index], ABSENT, "id {id} is already in the heap");
        }
        self.fall::<false>(0, Entry { key, seq, id, aux });
    }

    /// Removes every entry (keeps the capacity).
    pub fn clear(&mut self) {
        if INDEXED {
            for entry in &self.entries {
                self.position[entry.id as usize] = ABSENT;
            }
        }
        self.entries.clear();
    }

    /// Keeps only the entries for which `keep` is true and restores the heap order (bottom-up,
    /// O(n)); keeps the capacity.
    pub fn retain(&mut self, mut keep: impl FnMut(&Entry<K>) -> bool) {
        let position = &mut self.position;
        self.entries.retain(|entry| {
            let kept = keep(entry);
            if INDEXED && !kept {
                position[entry.id as usize] = ABSENT;
            }
            kept
        });
        let len = self.entries.len();
        if INDEXED {
            for (at, entry) in self.entries.iter().enumerate() {
                self.position[entry.id as usize] = at as u32;
            }
        }
        if len > 1 {
            for at in (0..=(len - 2) / ARITY).rev() {
                self.fall::<false>(at, self.entries[at]);
            }
        }
    }

    /// The entries in heap (not sorted) order.
    pub fn iter(&self) -> impl Iterator<Item = &Entry<K>> {
        self.entries.iter()
    }

    /// Replaces every key `k` by `shift(k)`. `shift` must be strictly increasing over the
    /// keys in the heap (for instance, subtracting the same amount from each), so the heap
    /// order is unchanged. O(n).
    fn shift_keys(&mut self, shift: impl Fn(K) -> K) {
        for entry in &mut self.entries {
            entry.key = shift(entry.key);
        }
    }

    #[inline]
    fn remove_at(&mut self, at: usize) {
        if INDEXED {
            let removed = self.entries[at].id;
            self.position[removed as usize] = ABSENT;
        }
        let last = self.entries.pop().expect("the heap holds the entry");
        if !INDEXED && at == 0 && !self.entries.is_empty() {
            // The last entry belongs near the bottom: the hole goes down first (one comparison
            // a level fewer), and `last` rises from there. Plain heaps only: in the indexed
            // ones (DWCS, the tag calendar's overflow) it cost 1 to 13 instructions a packet more (issue 14, session 9).
            self.fall::<true>(0, last);
        } else if at < self.entries.len() {
            self.place(at, last);
        }
    }

    /// Writes `entry` into the slot `at` (whose old content is discarded) and restores the
    /// heap order around it.
    #[inline]
    fn place(&mut self, at: usize, entry: Entry<K>) {
        if at > 0 && entry.before(&self.entries[(at - 1) / ARITY]) {
            self.rise(at, entry);
        } else {
            self.fall::<false>(at, entry);
        }
    }

    /// Moves the hole at `at` up to where `entry` belongs, then writes it there.
    #[inline]
    fn rise(&mut self, mut at: usize, entry: Entry<K>) {
        debug_assert!(at < self.entries.len());
        while at > 0 {
            let parent = (at - 1) / ARITY;
            // SAFETY: `parent < at < len` (`at` is a slot of the heap, and only decreases).
            let above = unsafe { *self.entries.get_unchecked(parent) };
            if !entry.before(&above) {
                break;
            }
            // SAFETY: `at < len` (above).
            unsafe { *self.entries.get_unchecked_mut(at) = above };
            if INDEXED {
                self.position[above.id as usize] = at as u32;
            }
            at = parent;
        }
        self.entries[at] = entry;
        if INDEXED {
            self.position[entry.id as usize] = at as u32;
        }
    }

    /// `entry`, which does not precede the parent of `at`, goes into the subtree of the hole
    /// `at`: the hole moves down along the least children while one of them precedes `entry`
    /// or, if `TO_LEAF`, to the bottom whatever `entry` is (for an entry that belongs near the
    /// bottom, as the last one moved to the top by a pop), and then `entry` rises from there.
    #[inline]
    fn fall<const TO_LEAF: bool>(&mut self, at: usize, entry: Entry<K>) {
        // Two copies of the loop, so that heaps below the prefetch threshold pay no test for it
        // per level. Only plain heaps prefetch (see [`PREFETCH_GRANDCHILDREN_FROM`]).
        if !INDEXED && self.entries.len() >= PREFETCH_AHEAD_ENTRIES {
            self.fall_from::<true, TO_LEAF>(at, entry);
        } else {
            self.fall_from::<false, TO_LEAF>(at, entry);
        }
    }

    /// [`IndexedHeap::fall`], prefetching grandchildren from [`PREFETCH_GRANDCHILDREN_FROM`] on
    /// if `PREFETCH`.
    #[inline(always)]
    fn fall_from<const PREFETCH: bool, const TO_LEAF: bool>(&mut self, mut at: usize, entry: Entry<K>) {
        let len = self.entries.len();
        loop {
            let first = ARITY * at + 1;
            let least = if first + ARITY <= len {
                if PREFETCH && at >= PREFETCH_GRANDCHILDREN_FROM {
                    // The sixteen grandchildren are contiguous: start loading the block the
                    // next level will read while this one compares.
                    if let Some(grandchild) = self.entries.get(ARITY * first + 1) {
                        prefetch_bytes(grandchild, ARITY * ARITY * std::mem::size_of::<Entry<K>>());
                    }
                }
                debug_assert!(first + ARITY <= self.entries.len());
                // SAFETY: the four children lie below `len`, the heap's length (tested above).
                let children = unsafe { self.entries.get_unchecked(first..first + ARITY) };
                first + least_of_four(children.try_into().expect("four children"))
            } else if first < len {
                let mut least = first;
                for child in first + 1..len {
                    if self.entries[child].before(&self.entries[least]) {
                        least = child;
                    }
                }
                least
            } else {
                break;
            };
            // `least` is a child of `at` below `len`, so both are slots of the heap.
            debug_assert!(at < least && least < self.entries.len());
            // SAFETY: `least < len` (above).
            let below = unsafe { *self.entries.get_unchecked(least) };
            if !TO_LEAF && !below.before(&entry) {
                break;
            }
            // SAFETY: `at < least < len` (above).
            unsafe { *self.entries.get_unchecked_mut(at) = below };
            if INDEXED {
                self.position[below.id as usize] = at as u32;
            }
            at = least;
        }
        if TO_LEAF {
            // Every entry moved up was the least of its siblings: `entry` belongs on the path
            // from the root to `at`.
            self.rise(at, entry);
            return;
        }
        self.entries[at] = entry;
        if INDEXED {
            self.position[entry.id as usize] = at as u32;
        }
    }

    /// Checks the heap order and the position index (tests).
    #[cfg(test)]
    fn check(&self) {
        for (at, entry) in self.entries.iter().enumerate() {
            if INDEXED {
                assert_eq!(self.position[entry.id as usize], at as u32);
            }
            if at > 0 {
                assert!(
                    !entry.before(&self.entries[(at - 1) / ARITY]),
                    "heap order at {at}"
                );
            }
        }
        if INDEXED {
            let present = self.position.iter().filter(|&&at| at != ABSENT).count();
            assert_eq!(present, self.entries.len());
        }
    }
}

/// The index of the least of the four entries `c` (ties to the lower index): a tree of pairs,
/// which the compiler turns into conditional moves.
#[inline(always)]
fn least_of_four<K: HeapKey>(c: &[Entry<K>; ARITY]) -> usize {
    let a = c[1].before(&c[0]) as usize;
    let b = 2 + c[3].before(&c[2]) as usize;
    if c[b].before(&c[a]) {
        b
    } else {
        a
    }
}

// The child selection compares four children in a tree of pairs.
const _: () = assert!(ARITY == 4);

/// From this many entries on, [`VirtualTimeHeap::upcoming`] names the least entry: below it a
/// few hundred bytes of per-flow tables per entry stay in the first-level cache, and the
/// prefetch instructions only cost time (+4 to +17 % at 1 and 64 flows, while they save 20 to
/// 30 % at 1,024).
pub const PREFETCH_ENTRIES: usize = 256;

/// From this many entries on, [`VirtualTimeHeap::upcoming`] names the entry after the least
/// too: the per-flow tables of that many flows (slots, queues, counters: a few hundred bytes a
/// flow) outgrow a 1 MiB second-level cache, and prefetching two services ahead hides more of
/// the memory latency (−5 to −8 % time at 16,384 flows), while below it the extra
/// instructions cost more than they save (+5 % time at 1,024 flows).
pub const PREFETCH_AHEAD_ENTRIES: usize = 4096;

/// In plain heaps ([`PlainHeap`]) of [`PREFETCH_AHEAD_ENTRIES`] entries or more, a sift-down
/// from this slot on (the first of the fourth level, 1 + 4 + 16) prefetches the node's sixteen
/// grandchildren while it compares the children: they lie on the sixth level or deeper, past
/// the first 1,365 entries (32 KiB), where the per-flow tables streaming past evict them (WF2Q+
/// at 16,384 flows: about −5 % time under load, +70 instructions a packet). The indexed heaps
/// do not: with it, WFQ and SCFQ at 16,384 flows took 0.86–0.93 of their time under load, but
/// +5 to +10 % instructions there, and the extra branch cost WFQ +2 % instructions at 1,024
/// flows (issue 14, session 8; not weighed against their own changes of that session).
pub const PREFETCH_GRANDCHILDREN_FROM: usize = 1 + ARITY + ARITY * ARITY;

/// Raw units a key may lie above the base of a narrow [`VirtualTimeHeap`].
const NARROW_SPAN: u128 = 1 << 64;

/// An [`IndexedHeap`] of [`VirtualTime`] keys stored, while they fit, as 64-bit offsets from a
/// base (see the module documentation). Same operations, same `(key, seq)` order.
/// `INDEXED` as in [`IndexedHeap`]: [`PlainVirtualTimeHeap`] keeps no position index. `N`,
/// the narrow key: `u64` orders by (key, seq), [`KeyOnly`] by the key alone (the 128-bit store
/// orders by (key, seq) either way, which is one of the orders [`KeyOnly`] allows).
#[derive(Clone, Debug, Default)]
pub struct VirtualTimeHeap<const INDEXED: bool = true, N = u64> {
    /// Raw value of the key offset 0 in `narrow`.
    base: u128,
    /// The entries, keyed `key − base`, while `wide` is not in use.
    narrow: IndexedHeap<N, INDEXED>,
    /// The entries with their full keys, while some key does not fit `narrow`.
    wide: IndexedHeap<VirtualTime, INDEXED>,
    /// Whether the entries are in `wide` (`narrow` is then empty).
    is_wide: bool,
}

/// A [`VirtualTimeHeap`] without the position index (see [`PlainHeap`]).
pub type PlainVirtualTimeHeap<N = u64> = VirtualTimeHeap<false, N>;

impl VirtualTimeHeap {
    /// An empty heap.
    pub fn new() -> VirtualTimeHeap {
        VirtualTimeHeap::default()
    }

    /// Whether `id` is in the heap.
    #[inline]
    pub fn contains(&self, id: u32) -> bool {
        if self.is_wide {
            self.wide.contains(id)
        } else {
            self.narrow.contains(id)
        }
    }

    /// The entry of `id`, if it is in the heap.
    #[inline]
    pub fn get(&self, id: u32) -> Option<Entry<VirtualTime>> {
        if self.is_wide {
            self.wide.get(id).copied()
        } else {
            self.narrow.get(id).map(|entry| self.widen_entry(entry))
        }
    }

    /// Sets the [`Entry::aux`] of `id` (which must be in the heap); the order is unchanged.
    #[inline]
    pub fn set_aux(&mut self, id: u32, aux: u32) {
        if self.is_wide {
            self.wide.set_aux(id, aux);
        } else {
            self.narrow.set_aux(id, aux);
        }
    }

    /// Removes `id` if it is in the heap and returns its entry. O(log n).
    #[inline]
    pub fn remove(&mut self, id: u32) -> Option<Entry<VirtualTime>> {
        if self.is_wide {
            let entry = self.wide.remove(id);
            self.narrow_if_empty();
            entry
        } else {
            let entry = self.narrow.remove(id)?;
            Some(self.widen_entry(&entry))
        }
    }
}

impl<const INDEXED: bool, N: OffsetKey> VirtualTimeHeap<INDEXED, N> {
    /// Number of entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.narrow.len() + self.wide.len()
    }

    /// Whether the heap is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline(always)]
    fn widen_entry(&self, entry: &Entry<N>) -> Entry<VirtualTime> {
        Entry {
            key: VirtualTime::from_raw(self.base + entry.key.offset() as u128),
            seq: entry.seq,
            id: entry.id,
            aux: entry.aux,
        }
    }

    /// The least entry.
    #[inline]
    pub fn peek(&self) -> Option<Entry<VirtualTime>> {
        if self.is_wide {
            self.wide.peek().copied()
        } else {
            self.narrow.peek().map(|entry| self.widen_entry(entry))
        }
    }

    /// Makes room for ids below `ids` and for as many entries (see
    /// [`IndexedHeap::reserve_ids`]; the 128-bit store is only reserved once it is used).
    pub fn reserve_ids(&mut self, ids: usize) {
        self.narrow.reserve_ids(ids);
        if self.is_wide {
            self.wide.reserve_ids(ids);
        }
    }

    /// `key` as an offset from the base, if it fits.
    #[inline(always)]
    fn offset(&self, key: VirtualTime) -> Option<u64> {
        let offset = key.raw().wrapping_sub(self.base);
        (key.raw() >= self.base && offset < NARROW_SPAN).then_some(offset as u64)
    }

    /// Runs `narrow` with `key`'s offset if it fits the 64-bit store (after moving the base
    /// if needed), else `wide` with `key`.
    #[inline(always)]
    fn with_key(
        &mut self,
        key: VirtualTime,
        narrow: impl FnOnce(&mut IndexedHeap<N, INDEXED>, N),
        wide: impl FnOnce(&mut IndexedHeap<VirtualTime, INDEXED>, VirtualTime),
    ) {
        if !self.is_wide {
            match self.offset(key) {
                Some(offset) => return narrow(&mut self.narrow, N::from_offset(offset)),
                None => self.refit(key),
            }
        }
        match self.offset(key) {
            Some(offset) if !self.is_wide => narrow(&mut self.narrow, N::from_offset(offset)),
            _ => wide(&mut self.wide, key),
        }
    }

    /// Adds `id` (which must not be in the heap) with `key` and `seq`. O(log n).
    #[inline]
    pub fn push(&mut self, id: u32, key: VirtualTime, seq: u64) {
        self.push_with(id, key, seq, 0);
    }

    /// [`VirtualTimeHeap::push`] with the entry's [`Entry::aux`].
    #[inline]
    pub fn push_with(&mut self, id: u32, key: VirtualTime, seq: u64, aux: u32) {
        self.with_key(
            key,
            |heap, offset| heap.push_with(id, offset, seq, aux),
            |heap, key| heap.push_with(id, key, seq, aux),
        );
    }

    /// The id and [`Entry::aux`] of the least entry (no key conversion).
    #[inline]
    pub fn peek_id_aux(&self) -> Option<(u32, u32)> {
        if self.is_wide {
            self.wide.peek().map(|entry| (entry.id, entry.aux))
        } else {
            self.narrow.peek().map(|entry| (entry.id, entry.aux))
        }
    }

    /// The id and [`Entry::aux`] of the entry that would be least once the least is popped
    /// (see [`IndexedHeap::second`]).
    #[inline]
    pub fn second_id_aux(&self) -> Option<(u32, u32)> {
        if self.is_wide {
            self.wide.second().map(|entry| (entry.id, entry.aux))
        } else {
            self.narrow.second().map(|entry| (entry.id, entry.aux))
        }
    }

    /// The ids and [`Entry::aux`] of the entries worth prefetching for before the next pops
    /// (see [`crate::pool::prefetch`]): none below [`PREFETCH_ENTRIES`] entries, else the
    /// least, and from [`PREFETCH_AHEAD_ENTRIES`] entries on also the one that would be least
    /// after it.
    #[inline(always)]
    pub fn upcoming(&self) -> [Option<(u32, u32)>; 2] {
        let len = self.len();
        if len < PREFETCH_ENTRIES {
            return [None, None];
        }
        let far = len >= PREFETCH_AHEAD_ENTRIES;
        [self.peek_id_aux(), if far { self.second_id_aux() } else { None }]
    }

    /// Replaces the least entry of the non-empty heap by `id` (see
    /// [`IndexedHeap::replace_top_with`]). O(log n).
    #[inline(always)]
    pub fn replace_top_with(&mut self, id: u32, key: VirtualTime, seq: u64, aux: u32) {
        // The usual case spelled out, so that it is inlined into the caller (through
        // `with_key`'s closures it was not, at +40 instructions per call).
        if let (false, Some(offset)) = (self.is_wide, self.offset(key)) {
            return self.narrow.replace_top_with(id, N::from_offset(offset), seq, aux);
        }
        self.replace_top_with_refit(id, key, seq, aux);
    }

    /// [`VirtualTimeHeap::replace_top_with`] when `key` does not fit the narrow store as it is.
    #[inline(never)]
    fn replace_top_with_refit(&mut self, id: u32, key: VirtualTime, seq: u64, aux: u32) {
        self.with_key(
            key,
            |heap, offset| heap.replace_top_with(id, offset, seq, aux),
            |heap, key| heap.replace_top_with(id, key, seq, aux),
        );
    }

    /// Removes and returns the least entry. O(log n).
    #[inline]
    pub fn pop(&mut self) -> Option<Entry<VirtualTime>> {
        if self.is_wide {
            let top = self.wide.pop();
            self.narrow_if_empty();
            top
        } else {
            let top = self.narrow.pop()?;
            Some(self.widen_entry(&top))
        }
    }

    /// Removes the least entry, if any, without returning it (no key conversion). O(log n).
    #[inline]
    pub fn remove_top(&mut self) {
        if self.is_wide {
            self.wide.pop();
            self.narrow_if_empty();
        } else {
            self.narrow.pop();
        }
    }

    /// Removes every entry (keeps the capacity).
    pub fn clear(&mut self) {
        self.narrow.clear();
        self.wide.clear();
        self.is_wide = false;
    }

    /// The entries in heap (not sorted) order.
    pub fn iter(&self) -> impl Iterator<Item = Entry<VirtualTime>> + '_ {
        let narrow = self.narrow.iter().map(|entry| self.widen_entry(entry));
        narrow.chain(self.wide.iter().copied())
    }

    /// Keeps only the entries for which `keep` is true (see [`IndexedHeap::retain`]). O(n).
    pub fn retain(&mut self, mut keep: impl FnMut(&Entry<VirtualTime>) -> bool) {
        let base = self.base;
        self.narrow.retain(|entry| {
            keep(&Entry {
                key: VirtualTime::from_raw(base + entry.key.offset() as u128),
                seq: entry.seq,
                id: entry.id,
                aux: entry.aux,
            })
        });
        self.wide.retain(keep);
        self.narrow_if_empty();
    }

    /// Back to 64-bit offsets once the 128-bit store is empty.
    #[inline]
    fn narrow_if_empty(&mut self) {
        if self.wide.is_empty() {
            self.is_wide = false;
        }
    }

    /// `key` does not fit the narrow store: moves the base so that every key in the heap and
    /// `key` fit with room to spare on both sides (every offset shifted by the same amount),
    /// or, if they spread over half the span or more, moves the entries to the 128-bit store.
    /// O(n); a base move leaves at least 2^62 raw units of room on either side of the keys.
    #[cold]
    fn refit(&mut self, key: VirtualTime) {
        let (mut low, mut high) = (key.raw(), key.raw());
        for entry in self.narrow.iter() {
            let raw = self.base + entry.key.offset() as u128;
            low = low.min(raw);
            high = high.max(raw);
        }
        let spread = high - low;
        if spread < NARROW_SPAN / 2 {
            let room = (NARROW_SPAN - 1 - spread) / 2;
            let base = low - room.min(low);
            let old_base = self.base;
            self.narrow
                .shift_keys(|key| N::from_offset((old_base + key.offset() as u128 - base) as u64));
            self.base = base;
        } else {
            let ids = self.narrow.position.len().max(self.narrow.entries.capacity());
            self.wide.reserve_ids(ids);
            for index in 0..self.narrow.len() {
                let entry = self.widen_entry(&self.narrow.entries[index]);
                self.wide.push_with(entry.id, entry.key, entry.seq, entry.aux);
            }
            self.narrow.clear();
            self.is_wide = true;
        }
    }

    /// Checks both stores (tests).
    #[cfg(test)]
    fn check(&self) {
        self.narrow.check();
        self.wide.check();
        assert!(self.is_wide || self.wide.is_empty());
        assert!(!self.is_wide || self.narrow.is_empty());
    }
}

/// A [`PlainVirtualTimeHeap`] from which its owner takes items out anywhere by lazy deletion.
/// The owner decides whether an entry is live (WF2Q+: the flow is still at the place the heap
/// stands for, and the entry's seq is that of the flow's one live entry), says when an entry
/// has gone stale ([`LazyVirtualTimeHeap::forget`]), and reads the top through
/// [`LazyVirtualTimeHeap::peek_live`], which pops the stale entries that reach it. When the
/// stale entries outnumber the live ones, one O(n) pass drops them all (paid for by the n/2
/// forgets before it), so the heap never holds more than two entries per item (one live, at
/// most one stale on average) and every operation stays O(log n) amortised. With no stale
/// entry (the usual case), it costs what the plain heap costs, and no sift writes a position.
///
/// `N` as in [`VirtualTimeHeap`]: with [`KeyOnly`], live entries of equal keys come out in no
/// particular order.
#[derive(Clone, Debug, Default)]
pub struct LazyVirtualTimeHeap<N = u64> {
    heap: PlainVirtualTimeHeap<N>,
    /// Entries in `heap` that the owner has declared stale.
    stale: usize,
}

impl<N: OffsetKey> LazyVirtualTimeHeap<N> {
    /// An empty heap.
    pub fn new() -> LazyVirtualTimeHeap<N> {
        LazyVirtualTimeHeap::default()
    }

    /// Number of entries, live or stale.
    #[inline]
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether the heap holds no entry at all (live or stale).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Number of live entries.
    #[inline]
    pub fn live_len(&self) -> usize {
        self.heap.len() - self.stale
    }

    /// Makes room for as many entries as `ids` items can leave live and stale (twice `ids`),
    /// so that pushes do not allocate.
    pub fn reserve_ids(&mut self, ids: usize) {
        self.heap.reserve_ids(2 * ids + 1);
    }

    /// Adds an entry for `id` with `key`, `seq` and `aux` (the owner makes it the item's one
    /// live entry). O(log n).
    #[inline]
    pub fn push_with(&mut self, id: u32, key: VirtualTime, seq: u64, aux: u32) {
        self.heap.push_with(id, key, seq, aux);
    }

    /// The least live entry; the stale entries above it are popped on the way. `live` must
    /// be true of the live entries and false of the stale ones.
    #[inline]
    pub fn peek_live(&mut self, live: impl Fn(&Entry<VirtualTime>) -> bool) -> Option<Entry<VirtualTime>> {
        loop {
            let top = self.heap.peek()?;
            if self.stale == 0 || live(&top) {
                return Some(top);
            }
            self.heap.pop();
            self.stale -= 1;
        }
    }

    /// Removes and returns the least entry, which must be live (read by
    /// [`LazyVirtualTimeHeap::peek_live`] since the last change). O(log n).
    #[inline]
    pub fn pop(&mut self) -> Option<Entry<VirtualTime>> {
        self.heap.pop()
    }

    /// [`LazyVirtualTimeHeap::pop`] without returning the entry (no key conversion).
    #[inline]
    pub fn remove_top(&mut self) {
        self.heap.remove_top();
    }

    /// Replaces the least entry, which must be live, by an entry for `id` (see
    /// [`IndexedHeap::replace_top_with`]). O(log n).
    #[inline(always)]
    pub fn replace_top_with(&mut self, id: u32, key: VirtualTime, seq: u64, aux: u32) {
        self.heap.replace_top_with(id, key, seq, aux);
    }

    /// One live entry has gone stale (the owner has already changed what `live` tests). When
    /// stale entries are then more than half, drops every entry for which `live` is false.
    #[inline]
    pub fn forget(&mut self, live: impl Fn(&Entry<VirtualTime>) -> bool) {
        self.stale += 1;
        if 2 * self.stale > self.heap.len() {
            let live_entries = self.live_len();
            self.heap.retain(live);
            debug_assert_eq!(
                self.heap.len(),
                live_entries,
                "`live` and the stale count disagree"
            );
            self.stale = 0;
        }
    }

    /// The ids and [`Entry::aux`] of the entries worth prefetching for (see
    /// [`VirtualTimeHeap::upcoming`]; stale entries may be among them).
    #[inline(always)]
    pub fn upcoming(&self) -> [Option<(u32, u32)>; 2] {
        self.heap.upcoming()
    }

    /// Every entry, live or stale, in heap (not sorted) order.
    pub fn iter(&self) -> impl Iterator<Item = Entry<VirtualTime>> + '_ {
        self.heap.iter()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;
    use proptest::test_runner::TestCaseError;

    use super::*;

    #[test]
    fn virtual_time_comparison_is_exact_across_the_64_bit_boundary() {
        let entry = |raw: u128, seq: u64| Entry {
            key: VirtualTime::from_raw(raw),
            seq,
            id: 0,
            aux: 0,
        };
        let below = entry((1 << 64) - 1, 9);
        let above = entry(1 << 64, 0);
        assert!(below.before(&above) && !above.before(&below));
        assert!(entry(5 << 64 | 7, 1).before(&entry(5 << 64 | 7, 2)));
        assert!(!entry(5 << 64 | 7, 2).before(&entry(5 << 64 | 7, 2)));
        assert!(entry(5 << 64 | 7, 9).before(&entry(5 << 64 | 8, 0)));
        assert!(entry(4 << 64 | u64::MAX as u128, 9).before(&entry(5 << 64, 0)));
    }

    #[test]
    fn equal_keys_pop_in_seq_order_whatever_the_push_order() {
        let mut heap = IndexedHeap::new();
        for (id, seq) in [(0, 5), (1, 2), (2, 9), (3, 0), (4, 7)] {
            heap.push(id, 10u64, seq);
        }
        heap.push(5, 3u64, 100);
        let order: Vec<(u64, u64, u32)> =
            std::iter::from_fn(|| heap.pop().map(|e| (e.key, e.seq, e.id))).collect();
        assert_eq!(
            order,
            vec![
                (3, 100, 5),
                (10, 0, 3),
                (10, 2, 1),
                (10, 5, 0),
                (10, 7, 4),
                (10, 9, 2)
            ]
        );
    }

    #[test]
    fn update_and_remove_by_id() {
        let mut heap = IndexedHeap::new();
        for id in 0..10u32 {
            heap.push(id, 10 * id as u64, 0);
        }
        heap.update(7, 1, 0); // up
        heap.update(0, 95, 0); // down
        assert_eq!(heap.remove(3).map(|e| e.key), Some(30));
        assert_eq!(heap.remove(3), None);
        assert!(!heap.contains(3) && heap.contains(7));
        assert_eq!(heap.get(7).map(|e| e.key), Some(1));
        heap.check();
        let order: Vec<u32> = std::iter::from_fn(|| heap.pop().map(|e| e.id)).collect();
        assert_eq!(order, vec![7, 1, 2, 4, 5, 6, 8, 9, 0]);
        assert!(heap.is_empty() && !heap.contains(0));
    }

    #[test]
    fn virtual_time_heap_moves_its_base_and_widens_only_when_it_must() {
        let key = |raw: u128| VirtualTime::from_raw(raw);
        let mut heap = VirtualTimeHeap::new();
        heap.push(0, key(1 << 70), 0); // beyond the first base's span: the base moves
        assert!(!heap.is_wide && heap.base > 0);
        heap.push(1, key((1 << 70) + (1 << 62)), 1);
        assert!(!heap.is_wide);
        heap.push(2, key(1 << 72), 2); // spread over 2^63: 128-bit keys
        assert!(heap.is_wide);
        heap.check();
        assert_eq!(heap.pop().map(|e| (e.key, e.id)), Some((key(1 << 70), 0)));
        assert_eq!(
            heap.pop().map(|e| (e.key, e.id)),
            Some((key((1 << 70) + (1 << 62)), 1))
        );
        assert!(heap.is_wide);
        assert_eq!(heap.pop().map(|e| (e.key, e.id)), Some((key(1 << 72), 2)));
        assert!(!heap.is_wide && heap.is_empty()); // empty: back to offsets
        heap.push(3, key(5), 0); // below the base: the base moves down
        heap.push(4, key(6), 0);
        assert!(!heap.is_wide && heap.base <= 5);
        assert_eq!(heap.pop().map(|e| e.id), Some(3));
        heap.check();
    }

    #[derive(Clone, Debug)]
    enum Op {
        Set(u32, u64, u64),
        Remove(u32),
        Pop,
        /// `replace_top_with` when the heap is not empty and the id is absent or the top's.
        ReplaceTop(u32, u64, u64),
    }

    fn arb_op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u32..40, 0u64..20, 0u64..4).prop_map(|(id, key, seq)| Op::Set(id, key, seq)),
            1 => (0u32..40).prop_map(Op::Remove),
            2 => Just(Op::Pop),
            2 => (0u32..40, 0u64..20, 0u64..4).prop_map(|(id, key, seq)| Op::ReplaceTop(id, key, seq)),
        ]
    }

    /// The operations of both heaps, by value, for one model test.
    trait TestHeap<K> {
        fn set(&mut self, id: u32, key: K, seq: u64);
        fn remove(&mut self, id: u32) -> Option<Entry<K>>;
        fn pop(&mut self) -> Option<Entry<K>>;
        fn replace_top_with(&mut self, id: u32, key: K, seq: u64);
        fn peek(&self) -> Option<Entry<K>>;
        fn get(&self, id: u32) -> Option<Entry<K>>;
        fn len(&self) -> usize;
        fn check(&self);
    }

    impl<K: HeapKey> TestHeap<K> for IndexedHeap<K> {
        fn set(&mut self, id: u32, key: K, seq: u64) {
            IndexedHeap::set(self, id, key, seq)
        }
        fn remove(&mut self, id: u32) -> Option<Entry<K>> {
            IndexedHeap::remove(self, id)
        }
        fn pop(&mut self) -> Option<Entry<K>> {
            IndexedHeap::pop(self)
        }
        fn replace_top_with(&mut self, id: u32, key: K, seq: u64) {
            IndexedHeap::replace_top_with(self, id, key, seq, 0)
        }
        fn peek(&self) -> Option<Entry<K>> {
            IndexedHeap::peek(self).copied()
        }
        fn get(&self, id: u32) -> Option<Entry<K>> {
            IndexedHeap::get(self, id).copied()
        }
        fn len(&self) -> usize {
            IndexedHeap::len(self)
        }
        fn check(&self) {
            IndexedHeap::check(self)
        }
    }

    impl TestHeap<VirtualTime> for VirtualTimeHeap {
        fn set(&mut self, id: u32, key: VirtualTime, seq: u64) {
            // The owners of this heap never change a key in place (WFQ's departures moved
            // to a lazy heap): a new key is a removal and a push.
            VirtualTimeHeap::remove(self, id);
            VirtualTimeHeap::push(self, id, key, seq)
        }
        fn remove(&mut self, id: u32) -> Option<Entry<VirtualTime>> {
            VirtualTimeHeap::remove(self, id)
        }
        fn pop(&mut self) -> Option<Entry<VirtualTime>> {
            VirtualTimeHeap::pop(self)
        }
        fn replace_top_with(&mut self, id: u32, key: VirtualTime, seq: u64) {
            VirtualTimeHeap::replace_top_with(self, id, key, seq, 0)
        }
        fn peek(&self) -> Option<Entry<VirtualTime>> {
            VirtualTimeHeap::peek(self)
        }
        fn get(&self, id: u32) -> Option<Entry<VirtualTime>> {
            VirtualTimeHeap::get(self, id)
        }
        fn len(&self) -> usize {
            VirtualTimeHeap::len(self)
        }
        fn check(&self) {
            VirtualTimeHeap::check(self)
        }
    }

    /// Applies `ops` to `heap` and to a sorted map of id → (key, seq), the key of a set being
    /// `key_of(value, region)`: every pop and removal returns what the map says, and after
    /// each operation the structure checks, the length, the least entry and every id's entry
    /// agree. The seq of a set carries the id in its low bits, so (key, seq) is unique.
    fn follows_sorted_map<K: HeapKey + std::fmt::Debug>(
        mut heap: impl TestHeap<K>,
        ops: Vec<(Op, u32)>,
        key_of: impl Fn(u64, u32) -> K,
    ) -> Result<(), TestCaseError> {
        let mut model: BTreeMap<u32, (K, u64)> = BTreeMap::new();
        let least = |model: &BTreeMap<u32, (K, u64)>| {
            model
                .iter()
                .min_by_key(|(_, &kv)| kv)
                .map(|(&id, &(key, seq))| Entry { key, seq, id, aux: 0 })
        };
        for (op, region) in ops {
            match op {
                Op::Set(id, value, seq) => {
                    let (key, seq) = (key_of(value, region), seq << 8 | id as u64);
                    heap.set(id, key, seq);
                    model.insert(id, (key, seq));
                }
                Op::Remove(id) => {
                    let expected = model.remove(&id).map(|(key, seq)| Entry { key, seq, id, aux: 0 });
                    prop_assert_eq!(heap.remove(id), expected);
                }
                Op::Pop => {
                    let expected = least(&model);
                    if let Some(entry) = expected {
                        model.remove(&entry.id);
                    }
                    prop_assert_eq!(heap.pop(), expected);
                }
                Op::ReplaceTop(id, value, seq) => {
                    let Some(top) = least(&model) else { continue };
                    if model.contains_key(&id) && id != top.id {
                        continue;
                    }
                    let (key, seq) = (key_of(value, region), seq << 8 | id as u64);
                    heap.replace_top_with(id, key, seq);
                    model.remove(&top.id);
                    model.insert(id, (key, seq));
                }
            }
            heap.check();
            prop_assert_eq!(heap.len(), model.len());
            prop_assert_eq!(heap.peek(), least(&model));
            for (&id, &(key, seq)) in &model {
                prop_assert_eq!(heap.get(id), Some(Entry { key, seq, id, aux: 0 }));
            }
        }
        Ok(())
    }

    proptest! {
        /// Against a sorted map: every pop returns the least (key, seq), updates and removals
        /// by id keep order and index consistent.
        #[test]
        fn behaves_like_a_sorted_map(ops in proptest::collection::vec((arb_op(), Just(0u32)), 1..400)) {
            follows_sorted_map(IndexedHeap::new(), ops, |value, _| value)?;
        }

        /// [`VirtualTimeHeap`] against a sorted map, with keys that sometimes leave the
        /// narrow span (the base moves), sometimes spread over 2^63 raw units or more (the
        /// 128-bit store) and come back: the same order as the map, whatever the store.
        #[test]
        fn virtual_time_heap_behaves_like_a_sorted_map(
            ops in proptest::collection::vec((arb_op(), 0u32..7), 1..400)
        ) {
            // Keys: a small value above one of a few far-apart regions.
            let regions: [u128; 7] = [0, 1 << 40, 1 << 62, 1 << 63, 5 << 62, 3 << 64, 1 << 100];
            follows_sorted_map(VirtualTimeHeap::new(), ops, |value, region| {
                VirtualTime::from_raw(regions[region as usize] + value as u128)
            })?;
        }

        /// [`LazyVirtualTimeHeap`] against a map of each id's one live (key, seq): pushes
        /// (which make an id's earlier entry stale), forgets and pops of the least live entry
        /// agree with the map, with keys in far-apart regions; the heap never holds more than
        /// two entries per item.
        #[test]
        fn lazy_heap_behaves_like_a_map_of_live_entries(
            ops in proptest::collection::vec((0u8..4, 0u32..30, 0u64..20, 0u32..7), 1..500)
        ) {
            follows_map_of_live_entries(LazyVirtualTimeHeap::<u64>::new(), ops, false)?;
        }

        /// The same with [`KeyOnly`] keys: the least live entry has the least live key (any of
        /// the live entries of that key); many equal keys (values below 20).
        #[test]
        fn key_only_lazy_heap_pops_the_least_key(
            ops in proptest::collection::vec((0u8..4, 0u32..30, 0u64..20, 0u32..7), 1..500)
        ) {
            follows_map_of_live_entries(LazyVirtualTimeHeap::<KeyOnly>::new(), ops, true)?;
        }

        /// Virtual-time keys straddling 2^64: pops come out sorted by (key, seq).
        #[test]
        fn virtual_time_keys_pop_sorted(keys in proptest::collection::vec(0u64..50, 1..300)) {
            let mut heap = IndexedHeap::new();
            for (id, &k) in keys.iter().enumerate() {
                heap.push(id as u32, VirtualTime::from_raw((1u128 << 64) - 25 + k as u128), keys.len() as u64 - id as u64);
            }
            let popped: Vec<(VirtualTime, u64)> = std::iter::from_fn(|| heap.pop().map(|e| (e.key, e.seq))).collect();
            let mut sorted = popped.clone();
            sorted.sort();
            prop_assert_eq!(popped, sorted);
        }
    }

    /// Runs `ops` (op, id, value, region) on `heap` and a map of each id's live (key, seq):
    /// ops 0 and 1 push (an id already live gets a new entry, its old one goes stale), 2
    /// forgets the id's entry, 3 reads and pops the least live entry. With `key_only`, the
    /// least live entry may be any live entry of the least key.
    fn follows_map_of_live_entries<N: OffsetKey>(
        mut heap: LazyVirtualTimeHeap<N>,
        ops: Vec<(u8, u32, u64, u32)>,
        key_only: bool,
    ) -> Result<(), TestCaseError> {
        let regions: [u128; 7] = [0, 1 << 40, 1 << 62, 1 << 63, 5 << 62, 3 << 64, 1 << 100];
        heap.reserve_ids(30);
        let capacity = heap.heap.narrow.entries.capacity();
        // id → (key, seq) of its live entry.
        let mut live: BTreeMap<u32, (VirtualTime, u64)> = BTreeMap::new();
        let mut next_seq = 0u64;
        for (op, id, value, region) in ops {
            match op {
                0 | 1 => {
                    let key = VirtualTime::from_raw(regions[region as usize] + value as u128);
                    if live.remove(&id).is_some() {
                        heap.forget(|entry| live.get(&entry.id) == Some(&(entry.key, entry.seq)));
                    }
                    live.insert(id, (key, next_seq));
                    heap.push_with(id, key, next_seq, id);
                    next_seq += 1;
                }
                2 => {
                    if live.remove(&id).is_some() {
                        heap.forget(|entry| live.get(&entry.id) == Some(&(entry.key, entry.seq)));
                    }
                }
                _ => {
                    let least = live
                        .iter()
                        .min_by_key(|(_, &kv)| kv)
                        .map(|(&id, &(key, seq))| (id, key, seq));
                    let top = heap.peek_live(|entry| live.get(&entry.id) == Some(&(entry.key, entry.seq)));
                    if key_only {
                        prop_assert_eq!(top.map(|e| e.key), least.map(|(_, key, _)| key));
                        if let Some(top) = top {
                            prop_assert_eq!(live.get(&top.id), Some(&(top.key, top.seq)));
                        }
                    } else {
                        prop_assert_eq!(top.map(|e| (e.id, e.key, e.seq)), least);
                    }
                    if let Some(top) = top {
                        prop_assert_eq!(heap.pop().map(|e| (e.id, e.aux)), Some((top.id, top.id)));
                        live.remove(&top.id);
                    }
                }
            }
            heap.heap.check();
            prop_assert_eq!(heap.live_len(), live.len());
            prop_assert!(heap.len() <= 2 * 30);
        }
        // No allocation: the reserve covered every entry, live or stale.
        prop_assert_eq!(heap.heap.narrow.entries.capacity(), capacity);
        Ok(())
    }
}
