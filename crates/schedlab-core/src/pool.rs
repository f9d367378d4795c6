//! Many FIFO lists in one shared pool of nodes: the storage of the per-flow packet queues
//! ([`crate::queues::FlowQueues`]) and of the per-packet tags of the fair-queueing family
//! ([`crate::tagged_queues`]).
//!
//! A list is a doubly linked chain of pool nodes whose two ends ([`ListEnds`]) the caller
//! keeps (e.g. in its per-flow state); free nodes form a LIFO free list. So the pool never
//! holds more nodes than the largest total length seen, memory stays contiguous, and once the
//! pool has grown no operation allocates, however the backlog moves between lists (a
//! `VecDeque` per flow would grow to each flow's longest queue). The node a pop frees is the
//! next one a push uses, still in cache.
//!
//! Invariant: every node is in exactly one list or in the free list.
//!
//! [`BlockLists`] is the same idea with nodes of [`BLOCK`] values (an unrolled list), for
//! long lists that are read in order (VD's round queues): consecutive values of a list sit
//! side by side in memory, so reading a list is a sequential scan that the hardware
//! prefetches, where single-value nodes, reused in whatever order the free list hands them
//! out, end up scattered over the pool and every read waits for memory.

/// "No node": the end of a list.
const NIL: u32 = u32::MAX;

/// Asks the processor to bring the cache lines of `value` into its caches: a hint with no
/// effect on any result, for data a scheduler will read soon from a random place in a large
/// table (a prefetch at 16,384 flows saves a memory round trip per line), or for the next
/// block of a [`BlockLists`] list (every line of a value longer than one). Nothing on targets
/// other than x86-64.
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    prefetch_range(
        (value as *const T).cast(),
        std::mem::size_of::<T>(),
        std::mem::align_of::<T>(),
    );
}

/// [`prefetch`] of `items[index]`, without a bounds check: an index out of range prefetches
/// some address that is not read, which is harmless (a prefetch never faults and changes no
/// result), and saves the check on a path where the index is known valid (a flow id from the
/// scheduler's own order).
#[inline(always)]
pub fn prefetch_at<T>(items: &[T], index: usize) {
    prefetch_range(
        items.as_ptr().wrapping_add(index).cast(),
        std::mem::size_of::<T>(),
        std::mem::align_of::<T>(),
    );
}

/// [`prefetch_at`] of the first `bytes` bytes of `items[index]` (at least one line).
#[inline(always)]
pub fn prefetch_bytes_at<T>(items: &[T], index: usize, bytes: usize) {
    prefetch_range(
        items.as_ptr().wrapping_add(index).cast(),
        bytes,
        std::mem::align_of::<T>(),
    );
}

/// [`prefetch`] of the first `bytes` bytes from `value`'s address (at least one line): for a
/// caller that will read only the leading fields of a large value (the simulator's per-flow
/// state), or a few neighbours of an element. The one place that issues the processor's
/// prefetch instruction, for the core and the simulator.
#[inline(always)]
pub fn prefetch_bytes<T>(value: &T, bytes: usize) {
    prefetch_range((value as *const T).cast(), bytes, std::mem::align_of::<T>());
}

/// Prefetches the lines of the `bytes` bytes from `first`, whose address is a multiple of
/// `align` (a power of two): the one place that issues the processor's prefetch instruction.
/// A range aligned to a line, or no longer than its alignment (below a line), starts its
/// last line at a multiple of 64 from `first`, so it needs no prefetch of its last byte.
#[inline(always)]
fn prefetch_range(first: *const i8, bytes: usize, align: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let bytes = bytes.max(1);
        // SAFETY: `prefetch` needs SSE, which every x86-64 processor has, and never faults or
        // changes memory whatever the address: it only hints the cache.
        unsafe {
            // One per line of a range longer than a line (a block of `BlockLists`).
            for offset in (0..bytes).step_by(64) {
                _mm_prefetch::<_MM_HINT_T0>(first.wrapping_add(offset));
            }
            if !(align >= 64 || bytes <= align) {
                // The range may straddle one more line.
                _mm_prefetch::<_MM_HINT_T0>(first.wrapping_add(bytes - 1));
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (first, bytes, align);
}

/// The two ends of one list in [`PooledLists`]; kept by the caller (e.g. in its per-flow
/// state), both ends nil when the list is empty.
/// Aligned to its size (8 bytes), so that it never straddles two cache lines and one prefetch
/// covers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(align(8))]
pub struct ListEnds {
    head: u32,
    tail: u32,
}

impl Default for ListEnds {
    fn default() -> Self {
        ListEnds { head: NIL, tail: NIL }
    }
}

impl ListEnds {
    /// Whether the list is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head == NIL
    }

    /// The pool index of the first node (for [`PooledLists::prefetch_node`]; `u32::MAX` when
    /// the list is empty).
    #[inline]
    pub fn head_node(&self) -> u32 {
        self.head
    }
}

/// A node of a [`NodePool`]: a value and the links to the neighbouring nodes of its list
/// (`next` is also the free list's link).
#[derive(Clone, Copy, Debug)]
struct Node<V> {
    value: V,
    next: u32,
    prev: u32,
}

/// The nodes of many doubly linked lists and their LIFO free list: allocation, linking at the
/// tail, unlinking at either end and release, shared by [`PooledLists`] (a value per node) and
/// [`BlockLists`] (a block of values per node).
#[derive(Clone, Debug)]
struct NodePool<V> {
    nodes: Vec<Node<V>>,
    free: u32,
}

impl<V> Default for NodePool<V> {
    fn default() -> Self {
        NodePool {
            nodes: Vec::new(),
            free: NIL,
        }
    }
}

impl<V> NodePool<V> {
    /// The node at `index`, of a list end: bounds-checked unless `OWN`.
    ///
    /// # Safety
    /// With `OWN`, `index` must be a node of this pool: an index taken from list ends made by
    /// this pool (see [`PooledLists::push_back_own`]). Without it, any index (checked).
    #[inline(always)]
    unsafe fn node_at<const OWN: bool>(&mut self, index: u32) -> &mut Node<V> {
        if OWN {
            debug_assert!(
                (index as usize) < self.nodes.len(),
                "node {index} is not in the pool"
            );
            // SAFETY: the caller's contract (above).
            unsafe { self.nodes.get_unchecked_mut(index as usize) }
        } else {
            &mut self.nodes[index as usize]
        }
    }

    /// Links a node at the tail of `ends`: the free list's first node, its value set by
    /// `reuse`, or else a new node of value `new()`. Returns whether the list was empty (the
    /// node is its head).
    ///
    /// # Safety
    /// With `OWN`, `ends` must be a list of this pool (see [`NodePool::node_at`]).
    #[inline(always)]
    unsafe fn push_back<const OWN: bool>(
        &mut self,
        ends: &mut ListEnds,
        reuse: impl FnOnce(&mut V),
        new: impl FnOnce() -> V,
    ) -> bool {
        let (next, prev) = (NIL, ends.tail);
        let index = if self.free == NIL {
            let index = self.nodes.len() as u32;
            assert!(index < NIL, "more than 2^32 - 1 pool nodes");
            self.nodes.push(Node {
                value: new(),
                next,
                prev,
            });
            index
        } else {
            let index = self.free;
            debug_assert!((index as usize) < self.nodes.len());
            // SAFETY: the free list is the pool's own (private, only this type writes it) and
            // links nodes of this pool only: `free` and every `next` on it index `nodes`, which
            // never shrinks. (The list ends passed in are the caller's, so they stay checked.)
            let node = unsafe { self.nodes.get_unchecked_mut(index as usize) };
            self.free = node.next;
            reuse(&mut node.value);
            (node.next, node.prev) = (next, prev);
            index
        };
        let was_empty = ends.tail == NIL;
        if was_empty {
            ends.head = index;
        } else {
            // SAFETY: with `OWN` the tail is a node of this pool (the contract), else checked.
            unsafe { self.node_at::<OWN>(ends.tail) }.next = index;
        }
        ends.tail = index;
        was_empty
    }

    /// Takes from the head node of `ends` (`None` if the list is empty): `take` returns what
    /// it took and whether the node is now empty, and an empty node is unlinked and freed. The
    /// new head's `prev` is left stale: a head's `prev` is never read (`pop_back` checks for a
    /// one-node list first), which saves touching the next node.
    ///
    /// # Safety
    /// With `OWN`, `ends` must be a list of this pool (see [`NodePool::node_at`]).
    #[inline(always)]
    unsafe fn pop_front<const OWN: bool, R>(
        &mut self,
        ends: &mut ListEnds,
        take: impl FnOnce(&mut V) -> (R, bool),
    ) -> Option<R> {
        let index = ends.head;
        if index == NIL {
            return None;
        }
        // SAFETY: with `OWN` the head is a node of this pool (the contract), else checked.
        let (taken, emptied) = take(&mut unsafe { self.node_at::<OWN>(index) }.value);
        if emptied {
            // SAFETY: the same contract.
            unsafe { self.release_head::<OWN>(ends) };
        }
        Some(taken)
    }

    /// Unlinks the head node of the non-empty list `ends` and frees it; the new head's `prev`
    /// is left stale (see [`NodePool::pop_front`]).
    ///
    /// # Safety
    /// With `OWN`, `ends` must be a list of this pool (see [`NodePool::node_at`]).
    #[inline(always)]
    unsafe fn release_head<const OWN: bool>(&mut self, ends: &mut ListEnds) {
        let (index, free) = (ends.head, self.free);
        // SAFETY: with `OWN` the head is a node of this pool (the contract), else checked.
        let node = unsafe { self.node_at::<OWN>(index) };
        ends.head = node.next;
        if ends.head == NIL {
            ends.tail = NIL;
        }
        node.next = free;
        self.free = index;
    }

    /// Takes from the tail node of `ends`, as [`NodePool::pop_front`] from the head.
    #[inline]
    fn pop_back<R>(&mut self, ends: &mut ListEnds, take: impl FnOnce(&mut V) -> (R, bool)) -> Option<R> {
        let index = ends.tail;
        if index == NIL {
            return None;
        }
        let (taken, emptied) = take(&mut self.nodes[index as usize].value);
        if emptied {
            if ends.head == index {
                *ends = ListEnds::default();
            } else {
                ends.tail = self.nodes[index as usize].prev;
                self.nodes[ends.tail as usize].next = NIL;
            }
            self.nodes[index as usize].next = self.free;
            self.free = index;
        }
        Some(taken)
    }

    /// The value of the head node of `ends`.
    #[inline(always)]
    fn head(&self, ends: &ListEnds) -> Option<&V> {
        (ends.head != NIL).then(|| &self.nodes[ends.head as usize].value)
    }

    /// [`NodePool::head`] without a bounds check on the head node.
    ///
    /// # Safety
    /// `ends` must be a list of this pool (see [`NodePool::node_at`]).
    #[inline(always)]
    unsafe fn head_own(&self, ends: &ListEnds) -> Option<&V> {
        if ends.head == NIL {
            return None;
        }
        debug_assert!(
            (ends.head as usize) < self.nodes.len(),
            "node {} is not in the pool",
            ends.head
        );
        // SAFETY: the caller's contract: the head of a list of this pool is one of its nodes,
        // and `nodes` never shrinks.
        Some(&unsafe { self.nodes.get_unchecked(ends.head as usize) }.value)
    }

    /// The value of the tail node of `ends`.
    #[inline(always)]
    fn tail(&self, ends: &ListEnds) -> Option<&V> {
        (ends.tail != NIL).then(|| &self.nodes[ends.tail as usize].value)
    }

    /// The values of the nodes of `ends`, head first.
    fn iter(&self, ends: ListEnds) -> ListIter<'_, V> {
        ListIter {
            nodes: &self.nodes,
            next: ends.head,
        }
    }

    /// Nodes on the free list.
    fn free_count(&self) -> usize {
        let (mut count, mut next) = (0, self.free);
        while next != NIL {
            count += 1;
            next = self.nodes[next as usize].next;
        }
        count
    }
}

/// Many FIFO lists of `T` (one per flow) in one shared pool of nodes with a LIFO free list.
#[derive(Clone, Debug)]
pub struct PooledLists<T> {
    pool: NodePool<T>,
}

impl<T> Default for PooledLists<T> {
    fn default() -> Self {
        PooledLists {
            pool: NodePool::default(),
        }
    }
}

impl<T: Copy> PooledLists<T> {
    /// Appends `value` to the list `ends`.
    #[inline(always)]
    pub fn push_back(&mut self, ends: &mut ListEnds, value: T) {
        // SAFETY: not `OWN`: every index is checked.
        unsafe { self.pool.push_back::<false>(ends, |slot| *slot = value, || value) };
    }

    /// Removes the first value of the list `ends`.
    #[inline(always)]
    pub fn pop_front(&mut self, ends: &mut ListEnds) -> Option<T> {
        // SAFETY: not `OWN`: every index is checked.
        unsafe { self.pool.pop_front::<false, _>(ends, |value| (*value, true)) }
    }

    /// [`PooledLists::push_back`] without bounds checks on the list's nodes (an owner's per-packet
    /// path: −3 instructions per node reached through `ends`). Returns whether the list was
    /// empty (`value` is now its only value).
    ///
    /// # Safety
    /// `ends` must be a list of this pool: made by `ListEnds::default()` and changed only by
    /// this pool's methods (its indices are then nodes of this pool, which never shrinks). An
    /// owner that keeps its pool and its lists' ends private, and never passes them to another
    /// pool, can vouch for that.
    #[inline(always)]
    pub unsafe fn push_back_own(&mut self, ends: &mut ListEnds, value: T) -> bool {
        // SAFETY: the caller's contract is `OWN`'s.
        unsafe { self.pool.push_back::<true>(ends, |slot| *slot = value, || value) }
    }

    /// [`PooledLists::pop_front`] without bounds checks on the list's nodes.
    ///
    /// # Safety
    /// As for [`PooledLists::push_back_own`].
    #[inline(always)]
    pub unsafe fn pop_front_own(&mut self, ends: &mut ListEnds) -> Option<T> {
        // SAFETY: the caller's contract is `OWN`'s.
        unsafe { self.pool.pop_front::<true, _>(ends, |value| (*value, true)) }
    }

    /// [`PooledLists::pop_front_own`] of a list that is not empty (panics if it is): the value
    /// itself rather than an `Option` of it, so that a caller that knows the list is not empty
    /// does not test the `Option`'s discriminant again (a `Packet`'s `None` is a niche of one of
    /// its fields, which the compiler cannot rule out in a value loaded from a node).
    ///
    /// # Safety
    /// As for [`PooledLists::push_back_own`].
    #[inline(always)]
    pub unsafe fn pop_front_filled_own(&mut self, ends: &mut ListEnds) -> T {
        // SAFETY: the caller's contract.
        let value = *unsafe { self.front_filled_own(ends) };
        // SAFETY: the same contract; the list is not empty.
        unsafe { self.remove_front_own(ends) };
        value
    }

    /// The first value of the list `ends`, which is not empty (panics if it is), in its node:
    /// a caller may read it there (and copy it where it goes) before
    /// [`PooledLists::remove_front_own`].
    ///
    /// # Safety
    /// As for [`PooledLists::push_back_own`].
    #[inline(always)]
    pub unsafe fn front_filled_own(&self, ends: &ListEnds) -> &T {
        let index = ends.head;
        assert!(index != NIL, "front_filled_own of an empty list");
        debug_assert!(
            (index as usize) < self.pool.nodes.len(),
            "node {index} is not in the pool"
        );
        // SAFETY: the caller's contract: the head of a list of this pool is one of its nodes,
        // and `nodes` never shrinks.
        &unsafe { self.pool.nodes.get_unchecked(index as usize) }.value
    }

    /// Unlinks and frees the head node of the list `ends`, which is not empty.
    ///
    /// # Safety
    /// As for [`PooledLists::push_back_own`], and `ends` is not empty.
    #[inline(always)]
    pub unsafe fn remove_front_own(&mut self, ends: &mut ListEnds) {
        // SAFETY: the caller's contract is `OWN`'s; the list is not empty.
        unsafe { self.pool.release_head::<true>(ends) };
    }

    /// Removes the last value of the list `ends`.
    #[inline]
    pub fn pop_back(&mut self, ends: &mut ListEnds) -> Option<T> {
        self.pool.pop_back(ends, |value| (*value, true))
    }

    /// The first value of the list `ends`.
    #[inline(always)]
    pub fn front(&self, ends: &ListEnds) -> Option<&T> {
        self.pool.head(ends)
    }

    /// [`PooledLists::front`] without a bounds check on the list's head node.
    ///
    /// # Safety
    /// As for [`PooledLists::push_back_own`].
    #[inline(always)]
    pub unsafe fn front_own(&self, ends: &ListEnds) -> Option<&T> {
        // SAFETY: the caller's contract is `OWN`'s.
        unsafe { self.pool.head_own(ends) }
    }

    /// The last value of the list `ends`.
    #[inline]
    pub fn back(&self, ends: &ListEnds) -> Option<&T> {
        self.pool.tail(ends)
    }

    /// The values of the list `ends`, first to last.
    pub fn iter(&self, ends: ListEnds) -> ListIter<'_, T> {
        self.pool.iter(ends)
    }

    /// Prefetches (see [`prefetch`]) the node of pool index `node`, if there is one.
    #[inline(always)]
    pub fn prefetch_node(&self, node: u32) {
        // The end of a list is the one index out of range that the callers pass: no bounds
        // check, the pool's node count need not be loaded.
        if node != NIL {
            prefetch_at(&self.pool.nodes, node as usize);
        }
    }

    /// Nodes in the pool (in lists or free): the largest total length seen.
    pub fn node_count(&self) -> usize {
        self.pool.nodes.len()
    }

    /// Nodes the pool can hold without allocating.
    pub fn capacity(&self) -> usize {
        self.pool.nodes.capacity()
    }

    /// Nodes on the free list.
    pub fn free_count(&self) -> usize {
        self.pool.free_count()
    }
}

/// Iterator over one list of a [`PooledLists`], first to last.
#[derive(Clone, Debug)]
pub struct ListIter<'a, T> {
    nodes: &'a [Node<T>],
    next: u32,
}

impl<'a, T> Iterator for ListIter<'a, T> {
    type Item = &'a T;
    fn next(&mut self) -> Option<&'a T> {
        (self.next != NIL).then(|| {
            let node = &self.nodes[self.next as usize];
            self.next = node.next;
            &node.value
        })
    }
}

/// Values per node of [`BlockLists`]: 16 packet descriptors are 768 bytes, 12 cache lines.
pub const BLOCK: usize = 16;

/// Empty lists of a [`BlockLists`] that keep their last block (a spare), at most: so many
/// blocks beyond those of the values, whatever the number of lists.
pub const SPARE_BLOCKS: u32 = 64;

/// The ends of one list in [`BlockLists`], kept by the caller: its first and last blocks,
/// the first live slot of the first block and one past the last live slot of the last
/// block. The blocks between are full. Keeping the slots here rather than in the blocks
/// puts the next value one load from the caller's array (block and slot are read
/// together), as with a `VecDeque`, instead of two (the block's bookkeeping, then the slot).
///
/// An empty list has no block (`start == end ==` [`BLOCK`]) or one spare block (`start ==
/// end == 0`): either way a push needs one comparison (`end < BLOCK`) to know whether the
/// last block has room, and into a spare it takes the fast path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockListEnds {
    blocks: ListEnds,
    /// First live slot of the first block.
    start: u32,
    /// One past the last live slot of the last block.
    end: u32,
}

impl Default for BlockListEnds {
    fn default() -> Self {
        BlockListEnds {
            blocks: ListEnds::default(),
            start: BLOCK as u32,
            end: BLOCK as u32,
        }
    }
}

impl BlockListEnds {
    /// Whether the list is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        // The blocks first: `start == end` alone holds at random (1 in 16) in a list of several
        // blocks, and a branch on it first would be mispredicted that often.
        self.blocks.head == self.blocks.tail && self.start == self.end
    }

    /// One past the last live slot of the first block.
    #[inline(always)]
    fn first_block_end(&self) -> u32 {
        if self.blocks.head == self.blocks.tail {
            self.end
        } else {
            BLOCK as u32
        }
    }
}

/// Many FIFO lists of `T` in one shared pool of blocks of [`BLOCK`] values, with a LIFO free
/// list of blocks. A list is a doubly linked chain of blocks whose ends ([`BlockListEnds`])
/// the caller keeps; only its first and last blocks may be partly filled. A list that a
/// `pop_front` empties keeps its block as a spare while fewer than [`SPARE_BLOCKS`] lists do,
/// so that a list that empties and fills again every few values (VD's rounds with one flow)
/// does not take and return a block each time, behind a branch no predictor can learn. So
/// the pool holds at most ⌈values / BLOCK⌉ + 1 blocks per non-empty list plus
/// [`SPARE_BLOCKS`], and once it has grown no operation allocates. O(1) per operation.
///
/// Invariant: every block is in exactly one list (non-empty, or empty with it as its spare)
/// or in the free list; `spares` counts the spares.
#[derive(Clone, Debug)]
pub struct BlockLists<T> {
    pool: NodePool<[T; BLOCK]>,
    spares: u32,
}

impl<T> Default for BlockLists<T> {
    fn default() -> Self {
        BlockLists {
            pool: NodePool::default(),
            spares: 0,
        }
    }
}

impl<T: Copy> BlockLists<T> {
    /// Appends `value` to the list `ends`.
    #[inline(always)]
    pub fn push_back(&mut self, ends: &mut BlockListEnds, value: T) {
        if (ends.end as usize) < BLOCK {
            // `end == 0` only in a spare, which is a spare no more (no branch).
            self.spares -= (ends.end == 0) as u32;
            self.pool.nodes[ends.blocks.tail as usize].value[ends.end as usize] = value;
            ends.end += 1;
        } else {
            self.push_block(ends, value);
        }
    }

    /// Appends a block holding `value` to the list `ends`. A reused block keeps its old values
    /// in the unused slots (only slot 0 is written); a new block's hold copies of `value`.
    /// Neither is ever read.
    #[inline(never)]
    fn push_block(&mut self, ends: &mut BlockListEnds, value: T) {
        if ends.blocks.is_empty() {
            ends.start = 0;
        }
        let reuse = |block: &mut [T; BLOCK]| block[0] = value;
        // SAFETY: not `OWN`: every index is checked.
        unsafe {
            self.pool
                .push_back::<false>(&mut ends.blocks, reuse, || [value; BLOCK])
        };
        ends.end = 1;
    }

    /// Removes the first value of the list `ends`.
    #[inline(always)]
    pub fn pop_front(&mut self, ends: &mut BlockListEnds) -> Option<T> {
        // Not through `NodePool::pop_front`, and the value is read last: a value read before the
        // bookkeeping was copied through the stack, a store-to-load round trip on the way to
        // the caller's next look-up (the packet's flow). Release leaves values in place.
        if ends.is_empty() {
            return None;
        }
        let (index, start) = (ends.blocks.head as usize, ends.start as usize);
        ends.start += 1;
        if ends.start == ends.first_block_end() {
            if ends.blocks.head != ends.blocks.tail {
                // SAFETY: not `OWN`: every index is checked.
                unsafe { self.pool.release_head::<false>(&mut ends.blocks) };
                ends.start = 0;
                // The block after the new first one: a round's blocks lie wherever the free
                // list had them, so the hardware prefetcher loses the stream at each block;
                // one block ahead (16 values) the lines arrive in time (VD at 16,384 flows).
                let next = self.pool.nodes[ends.blocks.head as usize].next;
                if next != NIL {
                    prefetch(&self.pool.nodes[next as usize].value);
                }
            } else if self.spares < SPARE_BLOCKS {
                self.spares += 1;
                (ends.start, ends.end) = (0, 0);
            } else {
                // SAFETY: not `OWN`: every index is checked.
                unsafe { self.pool.release_head::<false>(&mut ends.blocks) };
                (ends.start, ends.end) = (BLOCK as u32, BLOCK as u32);
            }
        }
        Some(self.pool.nodes[index].value[start])
    }

    /// Removes the last value of the list `ends`.
    #[inline]
    pub fn pop_back(&mut self, ends: &mut BlockListEnds) -> Option<T> {
        if ends.is_empty() {
            return None;
        }
        let first = if ends.blocks.head == ends.blocks.tail {
            ends.start
        } else {
            0
        };
        ends.end -= 1;
        let (end, emptied) = (ends.end as usize, ends.end == first);
        let value = self
            .pool
            .pop_back(&mut ends.blocks, |block| (block[end], emptied));
        if emptied {
            // The block before was full, or the list is empty now (with no block).
            ends.end = BLOCK as u32;
            if ends.blocks.is_empty() {
                ends.start = BLOCK as u32;
            }
        }
        value
    }

    /// The first value of the list `ends`.
    #[inline(always)]
    pub fn front(&self, ends: &BlockListEnds) -> Option<&T> {
        (!ends.is_empty()).then(|| &self.pool.nodes[ends.blocks.head as usize].value[ends.start as usize])
    }

    /// The values of the list `ends`, first to last.
    pub fn iter(&self, ends: BlockListEnds) -> impl Iterator<Item = &T> + '_ {
        let tail = ends.blocks.tail;
        let mut first = true;
        self.pool.iter(ends.blocks).flat_map(move |block| {
            let start = if first { ends.start as usize } else { 0 };
            first = false;
            let last = std::ptr::eq(block, &self.pool.nodes[tail as usize].value);
            &block[start..if last { ends.end as usize } else { BLOCK }]
        })
    }

    /// Value slots in the pool (in blocks in lists or free).
    pub fn slot_count(&self) -> usize {
        self.pool.nodes.len() * BLOCK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooled_lists_are_fifos_that_reuse_nodes() {
        let mut pool = PooledLists::default();
        let (mut a, mut b) = (ListEnds::default(), ListEnds::default());
        for value in 0..4u64 {
            pool.push_back(&mut a, value);
            pool.push_back(&mut b, 10 + value);
        }
        assert_eq!(pool.pop_front(&mut a), Some(0));
        assert_eq!(pool.pop_back(&mut a), Some(3));
        assert_eq!(pool.pop_back(&mut b), Some(13));
        assert_eq!(pool.iter(a).copied().collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!((pool.front(&b), pool.back(&b)), (Some(&10), Some(&12)));
        pool.push_back(&mut a, 4);
        pool.push_back(&mut b, 14);
        pool.push_back(&mut b, 15);
        assert_eq!(pool.node_count(), 8, "three freed nodes were reused");
        assert_eq!(pool.iter(a).copied().collect::<Vec<_>>(), vec![1, 2, 4]);
        assert_eq!(
            pool.iter(b).copied().collect::<Vec<_>>(),
            vec![10, 11, 12, 14, 15]
        );
        while pool.pop_back(&mut b).is_some() {}
        assert!(b.is_empty());
        assert_eq!(pool.pop_front(&mut b), None);
        assert_eq!(pool.pop_front(&mut a), Some(1));
        assert_eq!(pool.pop_back(&mut a), Some(4));
        assert_eq!(pool.pop_front(&mut a), Some(2));
        assert!(a.is_empty() && pool.front(&a).is_none());
    }

    /// Lists that empty keep a spare block, at most `SPARE_BLOCKS` of them: 100 lists each
    /// filled with one value and emptied leave 64 spares and one free block.
    #[test]
    fn emptied_block_lists_keep_at_most_spare_blocks() {
        let mut pool = BlockLists::default();
        let mut ends = [BlockListEnds::default(); 100];
        for round in 0..3u64 {
            for (list, ends) in ends.iter_mut().enumerate() {
                pool.push_back(ends, round * 1000 + list as u64);
                pool.push_back(ends, round * 1000 + 500 + list as u64);
                assert_eq!(pool.pop_back(ends), Some(round * 1000 + 500 + list as u64));
                assert_eq!(pool.pop_front(ends), Some(round * 1000 + list as u64));
                assert!(ends.is_empty() && pool.front(ends).is_none());
                assert_eq!((pool.pop_front(ends), pool.pop_back(ends)), (None, None));
                assert_eq!(pool.iter(*ends).count(), 0);
            }
            assert_eq!(pool.spares, SPARE_BLOCKS);
            assert_eq!(pool.slot_count(), (SPARE_BLOCKS as usize + 1) * BLOCK);
        }
    }

    /// Against a `VecDeque` per list, under random pushes and pops at both ends of three
    /// lists: the same values come out, and the pool never holds more blocks than the bound
    /// (⌈len / BLOCK⌉ + 1 per list at the worst moment).
    #[test]
    fn block_lists_are_fifos_within_the_block_bound() {
        use std::collections::VecDeque;
        let mut pool = BlockLists::default();
        let mut ends = [BlockListEnds::default(); 3];
        let mut model: [VecDeque<u64>; 3] = Default::default();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut peak_bound = 0;
        for value in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let list = (x % 3) as usize;
            match (x >> 8) % 5 {
                0 => assert_eq!(pool.pop_front(&mut ends[list]), model[list].pop_front()),
                1 => assert_eq!(pool.pop_back(&mut ends[list]), model[list].pop_back()),
                _ => {
                    pool.push_back(&mut ends[list], value);
                    model[list].push_back(value);
                }
            }
            assert_eq!(pool.front(&ends[list]), model[list].front());
            assert_eq!(ends[list].is_empty(), model[list].is_empty());
            if value % 97 == 0 {
                assert!(pool.iter(ends[list]).copied().eq(model[list].iter().copied()));
            }
            // Blocks in use: at most ⌈len / BLOCK⌉ + 1 per list (partly filled ends); the pool
            // holds the largest number ever in use.
            let bound: usize = model.iter().map(|m| m.len().div_ceil(BLOCK) + 1).sum();
            peak_bound = peak_bound.max(bound);
            assert!(pool.slot_count() <= peak_bound * BLOCK);
        }
        for list in 0..3 {
            assert!(pool.iter(ends[list]).copied().eq(model[list].iter().copied()));
        }
    }
}
