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

/// "No node": the end of a list.
const NIL: u32 = u32::MAX;

/// The two ends of one list in [`PooledLists`]; kept by the caller (e.g. in its per-flow
/// state), both ends nil when the list is empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
}

#[derive(Clone, Copy, Debug)]
struct PoolNode<T> {
    value: T,
    next: u32,
    prev: u32,
}

/// Many FIFO lists of `T` (one per flow) in one shared pool of nodes with a LIFO free list.
#[derive(Clone, Debug)]
pub struct PooledLists<T> {
    nodes: Vec<PoolNode<T>>,
    free: u32,
}

impl<T> Default for PooledLists<T> {
    fn default() -> Self {
        PooledLists {
            nodes: Vec::new(),
            free: NIL,
        }
    }
}

impl<T: Copy> PooledLists<T> {
    /// Appends `value` to the list `ends`.
    #[inline]
    pub fn push_back(&mut self, ends: &mut ListEnds, value: T) {
        let node = PoolNode {
            value,
            next: NIL,
            prev: ends.tail,
        };
        let index = if self.free == NIL {
            let index = self.nodes.len() as u32;
            assert!(index < NIL, "more than 2^32 - 1 packets queued");
            self.nodes.push(node);
            index
        } else {
            let index = self.free;
            let slot = &mut self.nodes[index as usize];
            self.free = slot.next;
            *slot = node;
            index
        };
        if ends.tail == NIL {
            ends.head = index;
        } else {
            self.nodes[ends.tail as usize].next = index;
        }
        ends.tail = index;
    }

    /// Removes the first value of the list `ends`.
    #[inline]
    pub fn pop_front(&mut self, ends: &mut ListEnds) -> Option<T> {
        let index = ends.head;
        if index == NIL {
            return None;
        }
        let node = &mut self.nodes[index as usize];
        let value = node.value;
        ends.head = node.next;
        // The new head's `prev` is left stale: a head's `prev` is never read (pop_back checks
        // for a one-node list first), which saves touching the next node.
        if ends.head == NIL {
            ends.tail = NIL;
        }
        self.nodes[index as usize].next = self.free;
        self.free = index;
        Some(value)
    }

    /// Removes the last value of the list `ends`.
    #[inline]
    pub fn pop_back(&mut self, ends: &mut ListEnds) -> Option<T> {
        let index = ends.tail;
        if index == NIL {
            return None;
        }
        let node = self.nodes[index as usize];
        if ends.head == index {
            *ends = ListEnds::default();
        } else {
            ends.tail = node.prev;
            self.nodes[ends.tail as usize].next = NIL;
        }
        self.nodes[index as usize].next = self.free;
        self.free = index;
        Some(node.value)
    }

    /// The first value of the list `ends`.
    #[inline]
    pub fn front(&self, ends: &ListEnds) -> Option<&T> {
        (ends.head != NIL).then(|| &self.nodes[ends.head as usize].value)
    }

    /// The last value of the list `ends`.
    #[inline]
    pub fn back(&self, ends: &ListEnds) -> Option<&T> {
        (ends.tail != NIL).then(|| &self.nodes[ends.tail as usize].value)
    }

    /// The values of the list `ends`, first to last.
    pub fn iter(&self, ends: ListEnds) -> ListIter<'_, T> {
        ListIter {
            nodes: &self.nodes,
            next: ends.head,
        }
    }

    /// Nodes in the pool (in lists or free): the largest total length seen.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Nodes the pool can hold without allocating.
    pub fn capacity(&self) -> usize {
        self.nodes.capacity()
    }

    /// Nodes on the free list.
    pub fn free_count(&self) -> usize {
        let (mut count, mut next) = (0, self.free);
        while next != NIL {
            count += 1;
            next = self.nodes[next as usize].next;
        }
        count
    }
}

/// Iterator over one list of a [`PooledLists`], first to last.
#[derive(Clone, Debug)]
pub struct ListIter<'a, T> {
    nodes: &'a [PoolNode<T>],
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
}
