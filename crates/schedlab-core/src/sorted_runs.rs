//! A priority queue for keys that mostly grow: the items as a few sorted runs, and a small
//! [`IndexedHeap`] of the runs by their first item. Used by DWCS for its table-1 order.
//!
//! Each item (a flow) is named by a small integer `id` and ordered by `(key, seq)`, smaller
//! first, exactly as in [`IndexedHeap`] (same [`HeapKey`], same tie rule). The items are
//! partitioned into *runs*: doubly linked lists, each sorted by `(key, seq)`. The heap holds
//! one entry per non-empty run, keyed by its first item, so the least entry of the heap is the
//! least item.
//!
//! Setting an item's key appends it to a run whose last item precedes it, if the owner's
//! `class` hint finds one (the run last extended with that class of key, and the run the item
//! is in), or keeps it where it is if it still lies between its neighbours; otherwise it starts
//! a run of its own. A run's first item changing re-keys the run in the heap. When keys are set
//! mostly in increasing order within each class (DWCS: a stream served at its loss-tolerance
//! x'/y' gets its next deadline, a gap later than its last, and usually goes behind every stream
//! of its class), most items live in a few long runs, the heap stays small, and serving the
//! least item costs an append and a sift-down through a heap of a few entries instead of a
//! sift-down through a heap of every item. At worst every run holds one item and the structure
//! is an [`IndexedHeap`] of every item, with the lists' bookkeeping on top.
//!
//! The order is exact whatever the runs: every run is sorted, and the heap orders the runs'
//! first items. Storage is per id and per run (at most one run per item): no allocation once
//! [`SortedRuns::reserve_ids`] has covered every id.

use crate::indexed_heap::{HeapKey, IndexedHeap};

/// No item, no run.
const NONE: u32 = u32::MAX;

/// Entries of the table of class hints (a power of two).
const HINTS: usize = 64;

/// An item's key, tie-breaker and place in its run.
#[derive(Clone, Copy, Debug)]
struct Node<K> {
    key: K,
    seq: u64,
    prev: u32,
    next: u32,
    /// The run the item is in; [`NONE`]: the item is absent.
    run: u32,
}

/// A run's first and last items ([`NONE`] for a run not in use).
#[derive(Clone, Copy, Debug)]
struct Run {
    first: u32,
    last: u32,
}

/// Items by `(key, seq)` in sorted runs, with a heap of the runs by their first item.
#[derive(Clone, Debug)]
pub struct SortedRuns<K> {
    nodes: Vec<Node<K>>,
    runs: Vec<Run>,
    /// Runs not in use.
    free_runs: Vec<u32>,
    /// One entry per run in use: its first item's key and seq, the run as id, the item as aux.
    firsts: IndexedHeap<K>,
    /// By a hash of the class of a key: the run last extended with (or started by) a key of
    /// that class. Only a hint: checked before use.
    hints: Box<[u32; HINTS]>,
    len: usize,
}

impl<K: HeapKey> Default for SortedRuns<K> {
    fn default() -> Self {
        SortedRuns {
            nodes: Vec::new(),
            runs: Vec::new(),
            free_runs: Vec::new(),
            firsts: IndexedHeap::new(),
            hints: Box::new([NONE; HINTS]),
            len: 0,
        }
    }
}

impl<K: HeapKey + Default> SortedRuns<K> {
    /// An empty queue.
    pub fn new() -> SortedRuns<K> {
        SortedRuns::default()
    }

    /// Number of items.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the queue is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of runs (a measure of how well the keys' order suits the structure).
    pub fn runs(&self) -> usize {
        self.firsts.len()
    }

    /// Whether `id` is in the queue.
    #[inline]
    pub fn contains(&self, id: u32) -> bool {
        self.nodes.get(id as usize).is_some_and(|node| node.run != NONE)
    }

    /// The key and seq of `id`, if it is in the queue.
    #[inline]
    pub fn get(&self, id: u32) -> Option<(K, u64)> {
        let node = self.nodes.get(id as usize)?;
        (node.run != NONE).then_some((node.key, node.seq))
    }

    /// The id of the least item.
    #[inline]
    pub fn peek(&self) -> Option<u32> {
        self.firsts.peek().map(|entry| entry.aux)
    }

    /// Makes room for ids below `ids` (and as many runs), so that later operations on such ids
    /// do not allocate. Owners call it when they first see an item.
    pub fn reserve_ids(&mut self, ids: usize) {
        if self.nodes.len() < ids {
            let absent = Node {
                key: K::default(),
                seq: 0,
                prev: NONE,
                next: NONE,
                run: NONE,
            };
            self.nodes.resize(ids, absent);
        }
        self.runs.reserve(ids.saturating_sub(self.runs.len()));
        self.free_runs.reserve(ids.saturating_sub(self.free_runs.len()));
        self.firsts.reserve_ids(ids);
    }

    /// Adds `id` with `key` and `seq`, or changes its key and seq if it is in the queue.
    /// `class` names the keys that tend to follow one another in increasing order (DWCS: the
    /// loss-tolerance level); any value is correct, a good one keeps the runs few.
    #[inline(always)]
    pub fn set(&mut self, id: u32, key: K, seq: u64, class: u64) {
        let index = id as usize;
        if index >= self.nodes.len() {
            self.reserve_ids(index + 1);
        }
        let present = self.nodes[index].run != NONE;
        if present && self.len == 1 {
            // The only item (DWCS with one backlogged stream): no run to look for.
            let node = &mut self.nodes[index];
            node.key = key;
            node.seq = seq;
            self.firsts.update_with(node.run, key, seq, id);
            return;
        }
        let hint = self.hints[hint_slot(class)];
        if let Some(run) = self.appendable(hint, id, &key, seq) {
            if present {
                self.detach(id);
            }
            self.append(run, id, key, seq);
            return;
        }
        if present {
            let node = self.nodes[index];
            let after_prev = node.prev == NONE || self.precedes_item(node.prev, &key, seq);
            let before_next = node.next == NONE
                || key.precedes(
                    seq,
                    &self.nodes[node.next as usize].key,
                    self.nodes[node.next as usize].seq,
                );
            if after_prev && before_next {
                let node = &mut self.nodes[index];
                node.key = key;
                node.seq = seq;
                if node.prev == NONE {
                    self.firsts.update_with(node.run, key, seq, id);
                }
                return;
            }
            let own = node.run;
            self.detach(id);
            // The item's own run, if it is still in use, may take it at its end.
            if let Some(run) = self.appendable(own, id, &key, seq) {
                self.append(run, id, key, seq);
                self.hints[hint_slot(class)] = run;
                return;
            }
        }
        let run = self.start_run(id, key, seq);
        self.hints[hint_slot(class)] = run;
    }

    /// Removes `id` if it is in the queue and returns its key and seq.
    #[inline]
    pub fn remove(&mut self, id: u32) -> Option<(K, u64)> {
        let found = self.get(id)?;
        self.detach(id);
        Some(found)
    }

    /// Removes every item (keeps the capacity).
    pub fn clear(&mut self) {
        while let Some(id) = self.peek() {
            self.detach(id);
        }
        *self.hints = [NONE; HINTS];
    }

    /// Whether the item `id` precedes `(key, seq)`.
    #[inline(always)]
    fn precedes_item(&self, id: u32, key: &K, seq: u64) -> bool {
        let node = &self.nodes[id as usize];
        node.key.precedes(node.seq, key, seq)
    }

    /// `run` if it is in use, does not end with `id`, and its last item precedes `(key, seq)`.
    #[inline(always)]
    fn appendable(&self, run: u32, id: u32, key: &K, seq: u64) -> Option<u32> {
        let last = self.runs.get(run as usize)?.last;
        (last != NONE && last != id && self.precedes_item(last, key, seq)).then_some(run)
    }

    /// Puts the absent `id` at the end of `run`, whose last item precedes `(key, seq)`.
    #[inline]
    fn append(&mut self, run: u32, id: u32, key: K, seq: u64) {
        let last = self.runs[run as usize].last;
        self.nodes[last as usize].next = id;
        self.nodes[id as usize] = Node {
            key,
            seq,
            prev: last,
            next: NONE,
            run,
        };
        self.runs[run as usize].last = id;
        self.len += 1;
    }

    /// Starts a run holding the absent `id` alone; returns the run.
    fn start_run(&mut self, id: u32, key: K, seq: u64) -> u32 {
        let fresh = Run { first: id, last: id };
        let run = match self.free_runs.pop() {
            Some(run) => {
                self.runs[run as usize] = fresh;
                run
            }
            None => {
                self.runs.push(fresh);
                (self.runs.len() - 1) as u32
            }
        };
        self.nodes[id as usize] = Node {
            key,
            seq,
            prev: NONE,
            next: NONE,
            run,
        };
        self.firsts.push_with(run, key, seq, id);
        self.len += 1;
        run
    }

    /// Takes the present `id` out of its run (and the run out of use if it empties).
    #[inline]
    fn detach(&mut self, id: u32) {
        let Node { prev, next, run, .. } = self.nodes[id as usize];
        self.nodes[id as usize].run = NONE;
        self.len -= 1;
        if next != NONE {
            self.nodes[next as usize].prev = prev;
        } else {
            self.runs[run as usize].last = prev;
        }
        if prev != NONE {
            self.nodes[prev as usize].next = next;
            return;
        }
        self.runs[run as usize].first = next;
        if next == NONE {
            self.firsts.remove(run);
            self.free_runs.push(run);
        } else {
            let Node { key, seq, .. } = self.nodes[next as usize];
            self.firsts.update_with(run, key, seq, next);
        }
    }

    /// Checks every run's order and links, and the heap of first items (tests).
    #[cfg(test)]
    fn check(&self) {
        let mut items = 0;
        for (run, entry) in self.runs.iter().enumerate() {
            if entry.first == NONE {
                assert!(!self.firsts.contains(run as u32));
                continue;
            }
            let head = self.firsts.get(run as u32).expect("a run in use is in the heap");
            let first = &self.nodes[entry.first as usize];
            assert_eq!((head.aux, head.seq), (entry.first, first.seq));
            assert_eq!(first.prev, NONE);
            let mut at = entry.first;
            loop {
                let node = &self.nodes[at as usize];
                assert_eq!(node.run, run as u32);
                items += 1;
                if node.next == NONE {
                    assert_eq!(entry.last, at);
                    break;
                }
                let next = &self.nodes[node.next as usize];
                assert_eq!(next.prev, at);
                assert!(
                    node.key.precedes(node.seq, &next.key, next.seq),
                    "run {run} out of order"
                );
                at = node.next;
            }
        }
        assert_eq!(items, self.len);
        assert_eq!(
            self.nodes.iter().filter(|node| node.run != NONE).count(),
            self.len
        );
    }
}

/// The slot of `class` in the table of hints.
#[inline(always)]
fn hint_slot(class: u64) -> usize {
    (class.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - HINTS.trailing_zeros())) as usize
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn increasing_keys_make_one_run() {
        let mut queue = SortedRuns::new();
        for id in 0..100u32 {
            queue.set(id, id as u64, 0, 7);
        }
        assert_eq!(queue.runs(), 1);
        // Serving the least and giving it a larger key moves it to the end of the run.
        for round in 0..300u64 {
            let id = queue.peek().unwrap();
            assert_eq!(id as u64, round % 100);
            queue.set(id, 100 + round, 0, 7);
            assert_eq!(queue.runs(), 1);
        }
        queue.check();
        assert_eq!(queue.remove(42), Some((342, 0)));
        assert_eq!(queue.remove(42), None);
        queue.check();
        queue.clear();
        assert!(queue.is_empty() && queue.peek().is_none());
        queue.check();
    }

    #[derive(Clone, Debug)]
    enum Op {
        /// Set the id's key to the value, under the class.
        Set(u32, u64, u64, u64),
        /// Give the least item a key this much larger, under the class.
        Serve(u64, u64),
        Remove(u32),
    }

    fn arb_op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u32..40, 0u64..60, 0u64..3, 0u64..4).prop_map(|(id, key, seq, class)| Op::Set(id, key, seq, class)),
            4 => (0u64..30, 0u64..4).prop_map(|(step, class)| Op::Serve(step, class)),
            1 => (0u32..40).prop_map(Op::Remove),
        ]
    }

    proptest! {
        /// Against a map of id → (key, seq): after each operation the structure checks, and
        /// the length, the least item and every id's key agree.
        #[test]
        fn behaves_like_a_sorted_map(ops in proptest::collection::vec(arb_op(), 1..400)) {
            let mut queue = SortedRuns::new();
            let mut model: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
            let least = |model: &BTreeMap<u32, (u64, u64)>| {
                model.iter().min_by_key(|(&id, &kv)| (kv, id)).map(|(&id, _)| id)
            };
            for op in ops {
                match op {
                    Op::Set(id, key, seq, class) => {
                        // The seq carries the id, so (key, seq) is unique, as for DWCS.
                        let seq = seq << 8 | id as u64;
                        queue.set(id, key, seq, class);
                        model.insert(id, (key, seq));
                    }
                    Op::Serve(step, class) => {
                        let Some(id) = least(&model) else { continue };
                        let (key, seq) = model[&id];
                        queue.set(id, key + step, seq, class);
                        model.insert(id, (key + step, seq));
                    }
                    Op::Remove(id) => {
                        prop_assert_eq!(queue.remove(id), model.remove(&id));
                    }
                }
                queue.check();
                prop_assert_eq!(queue.len(), model.len());
                prop_assert_eq!(queue.peek(), least(&model));
                for id in 0..40u32 {
                    prop_assert_eq!(queue.get(id), model.get(&id).copied());
                }
            }
        }
    }
}
