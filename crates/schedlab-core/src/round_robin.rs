//! The deficit round-robin building block of the round-robin family (DRR, DRR+, both DRR++,
//! EWRR, WRR, SRR, Aliquem), after Shreedhar & Varghese's figure 3.
//!
//! * [`DeficitFlows`]: the per-flow queues ([`FlowQueues`]) and one [`DeficitFlow`] per flow
//!   (Quantum_i, DeficitCounter_i, whether it is on an active list, and the discipline's own
//!   fields), created from the flow's parameters on its first packet — the one place where
//!   "first seen" is recorded. Buffer stealing weighs queue lengths by the discipline's share.
//! * [`ActiveList`]: flow ids in a power-of-two ring, head visited next, and whether the
//!   head's visit has begun (its quantum added). [`DeficitFlows::step`] is one step of
//!   figure 3 for the head of a list; [`DeficitFlows::select`] loops it, rotating flows whose
//!   head packet does not fit; [`DeficitFlows::select_send`] also sends the selected flow's
//!   head packet, in one pass (DRR's dequeue).
//! * [`RoundCounter`]: Zhang's §5.1.2 TotalRounds (DRR+ and DRR++).
//! * [`PriorityTokens`]: one token per queued packet of the flows served by priority, in
//!   arrival order (DRR+, original DRR++); a push-out takes the flow's last token.
//!
//! Invariants kept here: a flow is on an active list iff its `active` flag is set; a flow that
//! leaves a list has deficit 0 (callers keep "on a list iff backlogged"; a flow emptied by a
//! push-out leaves lazily, as [`Step::Left`], when it reaches the head); a flow's state exists
//! from its first valid packet on and its parameters are read once.

use std::collections::VecDeque;

use crate::config::{BufferLimit, FlowParamTable};
use crate::counters::{DropReason, Dropped};
use crate::packet::{FlowId, Packet, MAX_FLOW_ID};
use crate::queues::{Admission, FlowQueues};

/// Quantum (bytes) of a flow when neither the flow, the flow defaults nor the scheduler give
/// one: DRR, DRR+, DRR++, SRR's quantum and Aliquem's basic quantum.
pub const DEFAULT_QUANTUM: u32 = 1500;

/// One flow's deficit round-robin state (`Default`: the placeholder of a flow not seen).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeficitFlow<X> {
    /// Quantum_i: what a visit adds to the deficit (bytes; packets for WRR).
    pub quantum: u64,
    /// DeficitCounter_i: what the flow may still send (bytes; packets for WRR). Negative only
    /// in EWRR, which sends the packet that crosses it and pays the excess back.
    pub deficit: i64,
    /// Whether the flow is on an active list.
    pub active: bool,
    /// Whether the flow has been seen (its state made from its parameters); false only in the
    /// placeholder slots of [`DeficitFlows`] for flow ids not seen yet.
    pub(crate) seen: bool,
    /// The discipline's own per-flow fields.
    pub extra: X,
}

impl<X> DeficitFlow<X> {
    /// A flow seen for the first time: idle, deficit 0.
    pub fn new(quantum: u64, extra: X) -> Self {
        DeficitFlow {
            quantum,
            deficit: 0,
            active: false,
            seen: true,
            extra,
        }
    }
}

/// A list of flows visited in turn: DRR's ActiveList.
///
/// A ring of flow ids whose length is a power of two (0 before the first push), so that a
/// position is the free-running head plus an offset, masked: the head is one load, a rotation
/// one load and one store, with no wrap-around test (a `VecDeque` compares and subtracts its
/// capacity at each step). The ring doubles (out of line) when a push finds it full.
#[derive(Clone, Debug, Default)]
pub struct ActiveList {
    /// The flows, from `head` (masked) on, `len` of them; `ring.len()` is 0 or a power of two
    /// at least `len`.
    ring: Box<[FlowId]>,
    /// Position of the head; wraps around freely (positions are taken modulo `ring.len()`).
    head: usize,
    /// Flows on the list.
    len: usize,
    /// The head's visit has begun (its quantum was added).
    visiting: bool,
}

impl ActiveList {
    /// The index in `ring` of position `position` (taken modulo the ring's length, a power of
    /// two): below `ring.len()` if the ring is not empty.
    #[inline(always)]
    fn index(&self, position: usize) -> usize {
        debug_assert!(self.ring.len().is_power_of_two());
        position & self.ring.len().wrapping_sub(1)
    }

    /// The flow at ring position `position` (taken modulo the ring's length).
    ///
    /// # Safety
    /// The ring is not empty (callers hold a flow, so `ring.len() >= len >= 1`, or have just
    /// grown it).
    #[inline(always)]
    unsafe fn at(&mut self, position: usize) -> &mut FlowId {
        let index = self.index(position);
        // SAFETY: the ring is not empty (the caller's contract) and its length is a power of
        // two, so `index < ring.len()`.
        unsafe { self.ring.get_unchecked_mut(index) }
    }

    /// The flow visited next.
    #[inline]
    pub fn front(&self) -> Option<FlowId> {
        if self.len == 0 {
            return None;
        }
        // SAFETY: `len >= 1`, so the ring is not empty and, its length being a power of two,
        // the index is below `ring.len()`.
        Some(unsafe { *self.ring.get_unchecked(self.index(self.head)) })
    }

    /// Flows on the list.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no flow is on the list.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the head's visit has begun.
    #[inline]
    pub fn visiting(&self) -> bool {
        self.visiting
    }

    /// Appends `flow` (the caller keeps its `active` flag).
    #[inline]
    pub fn push(&mut self, flow: FlowId) {
        if self.len == self.ring.len() {
            self.grow();
        }
        // SAFETY: the ring has room for one more flow (it just grew if it was full).
        *unsafe { self.at(self.head.wrapping_add(self.len)) } = flow;
        self.len += 1;
    }

    /// Doubles the ring (at least 8 places), its flows in order from position 0.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let capacity = (self.ring.len() * 2).max(8);
        let mut ring = Vec::with_capacity(capacity);
        for offset in 0..self.len {
            // SAFETY: `offset < len`, so the ring holds at least one flow.
            ring.push(*unsafe { self.at(self.head.wrapping_add(offset)) });
        }
        ring.resize(capacity, 0);
        self.ring = ring.into_boxed_slice();
        self.head = 0;
    }

    /// Ends the head's visit and moves it to the tail.
    ///
    /// With a compiler fence, a code-generation hint only: it emits no instruction, and
    /// correctness does not depend on it (in the language it orders memory only against
    /// atomics and signal handlers). As LLVM compiles it today, it keeps the lists' and queues'
    /// fields from being hoisted out of a discipline's selection loop and spilled to the stack
    /// before every selection (DRR++'s `select` at 1,024 flows: 406 instructions a step with
    /// the ring and no fence, 359 with the `VecDeque`, whose growth call had that effect; with
    /// the fence and `pop_sent_backlogged`, 352). Recheck those counts when the toolchain
    /// changes.
    #[inline]
    pub fn rotate(&mut self) {
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
        if self.len != 0 {
            // When the ring is full the tail's place is the head's: the store rewrites the
            // head, and only the head position moves.
            // SAFETY: `len != 0`, so the ring is not empty.
            let flow = *unsafe { self.at(self.head) };
            // SAFETY: as above.
            *unsafe { self.at(self.head.wrapping_add(self.len)) } = flow;
            self.head = self.head.wrapping_add(1);
        }
        self.visiting = false;
    }

    /// Ends the head's visit and removes it.
    #[inline]
    pub fn remove_head(&mut self) {
        if self.len != 0 {
            self.head = self.head.wrapping_add(1);
            self.len -= 1;
        }
        self.visiting = false;
    }
}

/// What [`DeficitFlows::step`] found at the head of a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The head flow's deficit covers its head packet: it may send.
    Send(FlowId),
    /// The head flow's head packet is larger than its deficit: its visit is over (the caller
    /// rotates it, or files it elsewhere); it keeps its deficit.
    Short(FlowId),
    /// The head flow's queue had been emptied by a push-out: it left the list with deficit 0.
    Left(FlowId),
}

/// Per-flow queues with one [`DeficitFlow`] per flow seen; `P` are the discipline's flow
/// parameters, `X` its own per-flow fields.
#[derive(Clone, Debug)]
pub struct DeficitFlows<P, X> {
    /// The per-flow packet queues and counters.
    pub queues: FlowQueues,
    /// Indexed by flow id; a flow not seen yet has a placeholder with `seen` false. (Plain
    /// values rather than `Option`s: the hot path indexes without unwrapping.)
    flows: Vec<DeficitFlow<X>>,
    table: FlowParamTable<P>,
}

impl<P, X: Default> DeficitFlows<P, X> {
    /// No flow seen yet; `limit` is the shared buffer, `table` the flows' parameters.
    pub fn new(limit: BufferLimit, table: FlowParamTable<P>) -> Self {
        DeficitFlows {
            queues: FlowQueues::new(limit),
            flows: Vec::new(),
            table,
        }
    }

    /// The flows' parameters.
    pub fn table(&self) -> &FlowParamTable<P> {
        &self.table
    }

    /// The state of `flow`, if seen.
    #[inline]
    pub fn get(&self, flow: FlowId) -> Option<&DeficitFlow<X>> {
        self.flows.get(flow as usize).filter(|state| state.seen)
    }

    /// The state of `flow`, which must have been seen (it queued a packet).
    #[inline(always)]
    pub fn state(&mut self, flow: FlowId) -> &mut DeficitFlow<X> {
        let state = &mut self.flows[flow as usize];
        debug_assert!(state.seen, "flow {flow} queued a packet, so it has state");
        state
    }

    /// Whether `flow` has nothing queued.
    #[inline]
    pub fn is_empty(&self, flow: FlowId) -> bool {
        self.queues.is_empty(flow)
    }

    /// Records `packet`'s arrival and queues it, or drops it (buffer full, or an invalid flow
    /// id) into `drops`. A flow's state is made by `first` from its parameters on its first
    /// packet. With longest-queue drop, queue lengths are weighed by 1/`share(flow)`.
    // (Always inlined: with `#[inline]`, the simulator's lean loop inlined DRR's `enqueue`
    // but called this, 22 instructions a packet more; docs/performance.md, session 10.)
    #[inline(always)]
    pub fn admit(
        &mut self,
        packet: Packet,
        drops: &mut Vec<Dropped>,
        share: impl Fn(&DeficitFlow<X>) -> u64,
        first: impl FnOnce(&P) -> DeficitFlow<X>,
    ) -> Admission {
        if packet.flow <= MAX_FLOW_ID {
            self.ensure(packet.flow, first);
        }
        let flows = &self.flows;
        self.queues.admit(
            packet,
            |f| flows.get(f as usize).filter(|s| s.seen).map_or(1, &share),
            drops,
        )
    }

    /// Makes the state of `flow` (at most [`MAX_FLOW_ID`]) with `first` if it was not seen.
    #[inline]
    pub fn ensure(&mut self, flow: FlowId, first: impl FnOnce(&P) -> DeficitFlow<X>) {
        if self.flows.get(flow as usize).is_none_or(|state| !state.seen) {
            self.first_sight(flow, first);
        }
    }

    #[cold]
    #[inline(never)]
    fn first_sight(&mut self, flow: FlowId, first: impl FnOnce(&P) -> DeficitFlow<X>) {
        let index = flow as usize;
        if index >= self.flows.len() {
            self.flows.resize_with(index + 1, DeficitFlow::default);
        }
        self.flows[index] = first(self.table.get(flow));
        self.flows[index].seen = true;
    }

    /// Puts an idle `flow` on `list` with deficit 0 (figure 3: a flow becoming backlogged
    /// joins the tail of the ActiveList); returns whether it was idle.
    #[inline(always)]
    pub fn activate(&mut self, flow: FlowId, list: &mut ActiveList) -> bool {
        let state = self.state(flow);
        if state.active {
            return false;
        }
        state.active = true;
        state.deficit = 0;
        list.push(flow);
        true
    }

    /// The head `flow` of `list` leaves it: deficit 0, inactive.
    #[inline(always)]
    pub fn leave(&mut self, flow: FlowId, list: &mut ActiveList) {
        Self::leave_with(self.state(flow), list);
    }

    /// [`DeficitFlows::leave`] of the flow whose state is `state`.
    #[inline(always)]
    fn leave_with(state: &mut DeficitFlow<X>, list: &mut ActiveList) {
        state.deficit = 0;
        state.active = false;
        list.remove_head();
    }

    /// One step of figure 3 for the head of `list`: a flow emptied by a push-out leaves; at
    /// the start of a visit DeficitCounter_i += Quantum_i and `on_credit` is told (with the
    /// flow's state, where a discipline keeps its per-visit fields: the cache line is loaded
    /// already); then the head packet is compared with the deficit.
    #[inline(always)]
    pub fn step(
        &mut self,
        list: &mut ActiveList,
        on_credit: impl FnOnce(FlowId, &mut DeficitFlow<X>),
    ) -> Option<Step> {
        let flow = list.front()?;
        let Some(head) = self.queues.head(flow) else {
            self.leave(flow, list);
            return Some(Step::Left(flow));
        };
        let size = head.size;
        let fits = Self::credit_and_fit(flow, self.state(flow), list, size, on_credit);
        Some(if fits { Step::Send(flow) } else { Step::Short(flow) })
    }

    /// The visit part of [`DeficitFlows::step`] for the head `flow` of `list`, whose state is
    /// `state` and whose head packet has `size` bytes: at the start of a visit
    /// DeficitCounter_i += Quantum_i and `on_credit` is told; returns whether the packet fits
    /// in the deficit.
    #[inline(always)]
    fn credit_and_fit(
        flow: FlowId,
        state: &mut DeficitFlow<X>,
        list: &mut ActiveList,
        size: u32,
        on_credit: impl FnOnce(FlowId, &mut DeficitFlow<X>),
    ) -> bool {
        if !list.visiting {
            state.deficit += state.quantum as i64;
            list.visiting = true;
            on_credit(flow, state);
        }
        size as i64 <= state.deficit
    }

    /// [`DeficitFlows::select`] and [`DeficitFlows::send_from`] of the selected flow in one
    /// pass: the flow's list ends and state are looked up once a step, and the head packet is
    /// popped where it was compared with the deficit. Returns the flow, its packet and whether
    /// it left the list.
    #[inline(always)]
    pub fn select_send(
        &mut self,
        list: &mut ActiveList,
        on_credit: impl FnMut(FlowId, &mut DeficitFlow<X>),
        on_short: impl FnMut(FlowId, &DeficitFlow<X>),
    ) -> Option<(FlowId, Packet, bool)> {
        self.select_send_with(list, on_credit, on_short, |packet| *packet)
    }

    /// [`DeficitFlows::select_send`], the sent packet shown to `take` in its node (see
    /// [`FlowQueues::pop_sent_if_with`]) instead of returned: returns the flow, what `take`
    /// returned and whether the flow left the list.
    #[inline(always)]
    pub fn select_send_with<R>(
        &mut self,
        list: &mut ActiveList,
        mut on_credit: impl FnMut(FlowId, &mut DeficitFlow<X>),
        mut on_short: impl FnMut(FlowId, &DeficitFlow<X>),
        mut take: impl FnMut(&Packet) -> R,
    ) -> Option<(FlowId, R, bool)> {
        loop {
            let flow = list.front()?;
            let state = &mut self.flows[flow as usize];
            debug_assert!(state.seen, "flow {flow} is on a list, so it has state");
            let mut left = false;
            let sent = self.queues.pop_sent_if_with(
                flow,
                |head| match head {
                    Some(head) => Self::credit_and_fit(flow, state, list, head.size, &mut on_credit),
                    None => {
                        left = true;
                        false
                    }
                },
                &mut take,
            );
            if let Some((taken, size, emptied)) = sent {
                Self::charge_or_leave(state, list, size, emptied);
                return Some((flow, taken, emptied));
            }
            if left {
                // Emptied by a push-out: it leaves with deficit 0.
                Self::leave_with(state, list);
            } else {
                on_short(flow, state);
                list.rotate();
            }
        }
    }

    /// DRR's selection on `list`: steps until the head may send its head packet, rotating
    /// flows whose head does not fit (after `on_short`); returns that flow. Its visit logic
    /// (credit, fit, leave, rotate) is also [`DeficitFlows::select_send`]'s, written out there
    /// to look the flow up once: the two must change together (the proptest
    /// `one_pass_dequeue_as_select_then_send` in `drr.rs` compares them).
    #[inline]
    pub fn select(
        &mut self,
        list: &mut ActiveList,
        mut on_credit: impl FnMut(FlowId, &mut DeficitFlow<X>),
        mut on_short: impl FnMut(FlowId, &DeficitFlow<X>),
    ) -> Option<FlowId> {
        loop {
            match self.step(list, &mut on_credit)? {
                Step::Send(flow) => return Some(flow),
                Step::Short(flow) => {
                    on_short(flow, self.state(flow));
                    list.rotate();
                }
                Step::Left(_) => {}
            }
        }
    }

    /// Sends the head packet of `flow` and charges its size to the deficit; returns it with
    /// whether the queue is now empty.
    #[inline(always)]
    pub fn send(&mut self, flow: FlowId) -> (Packet, bool) {
        let (packet, emptied) = self.queues.pop_sent_backlogged(flow);
        self.state(flow).deficit -= packet.size as i64;
        (packet, emptied)
    }

    /// Sends the head packet of `flow`, the head of `list`, as figure 3 does: an emptied flow
    /// leaves the list with deficit 0. Returns the packet with whether the flow left.
    #[inline(always)]
    pub fn send_from(&mut self, flow: FlowId, list: &mut ActiveList) -> (Packet, bool) {
        let (packet, emptied) = self.queues.pop_sent_backlogged(flow);
        let state = self.state(flow);
        Self::charge_or_leave(state, list, packet.size, emptied);
        (packet, emptied)
    }

    /// Figure 3 after a head packet of `size` bytes was sent from `list`'s head flow, whose
    /// state is `state`: an emptied flow leaves the list with deficit 0 (what the charge
    /// would have left does not matter), else the packet is charged to its deficit.
    #[inline(always)]
    fn charge_or_leave(state: &mut DeficitFlow<X>, list: &mut ActiveList, size: u32, emptied: bool) {
        if emptied {
            Self::leave_with(state, list);
        } else {
            state.deficit -= size as i64;
        }
    }
}

/// Zhang's §5.1.2 TotalRounds: "a period in which there is at least one queue to be served
/// when the scheduler scans all the queues". A round starts at the first visit after the
/// counter was closed (the scheduler or its list emptied), or at a visit to a flow already
/// visited in the current round.
///
/// The round in which a flow was last visited (0: never) is the flow's own field, kept by the
/// discipline in its per-flow state (`last_visit` of [`RoundCounter::visit`]), so that a visit
/// touches the flow's state line only, not a second per-flow table.
#[derive(Clone, Debug, Default)]
pub struct RoundCounter {
    total: u64,
    open: bool,
}

impl RoundCounter {
    /// Records a visit of a flow whose last visit was in round `*last_visit` (0: never), and
    /// sets it to the current round; with `repeat_starts_round` false a repeated visit does not
    /// start a round (DRR++'s LC flow, served inside every round).
    #[inline]
    pub fn visit(&mut self, last_visit: &mut u64, repeat_starts_round: bool) {
        if !self.open || (repeat_starts_round && *last_visit == self.total) {
            self.total += 1;
            self.open = true;
        }
        *last_visit = self.total;
    }

    /// The next visit starts a new round.
    pub fn close(&mut self) {
        self.open = false;
    }

    /// Rounds counted.
    pub fn total(&self) -> u64 {
        self.total
    }
}

/// One token (the flow id) per queued packet of the flows served by priority, in arrival
/// order.
#[derive(Clone, Debug, Default)]
pub struct PriorityTokens {
    tokens: VecDeque<FlowId>,
}

impl PriorityTokens {
    /// A packet of `flow` was queued.
    #[inline]
    pub fn push(&mut self, flow: FlowId) {
        self.tokens.push_back(flow);
    }

    /// The flow of the oldest token.
    #[inline]
    pub fn front(&self) -> Option<FlowId> {
        self.tokens.front().copied()
    }

    /// Removes the oldest token.
    #[inline]
    pub fn pop_front(&mut self) -> Option<FlowId> {
        self.tokens.pop_front()
    }

    /// Removes every token of `flow` (it is no longer served by priority). O(tokens).
    pub fn remove_flow(&mut self, flow: FlowId) {
        self.tokens.retain(|&f| f != flow);
    }

    /// Removes the token of each packet pushed out in `drops` whose flow `is_priority`: a
    /// push-out takes its flow's tail, i.e. the flow's last token. O(tokens) per push-out.
    pub fn forget_pushed_out(&mut self, drops: &[Dropped], is_priority: impl Fn(FlowId) -> bool) {
        for dropped in drops {
            let flow = dropped.packet.flow;
            if dropped.reason == DropReason::PushedOut && is_priority(flow) {
                if let Some(index) = self.tokens.iter().rposition(|&f| f == flow) {
                    self.tokens.remove(index);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_counter_counts_passes() {
        let mut rounds = RoundCounter::default();
        // Each flow's last visit, as a discipline keeps it in its per-flow state.
        let mut last_visit = [0u64; 4];
        rounds.visit(&mut last_visit[1], true);
        rounds.visit(&mut last_visit[2], true);
        assert_eq!(rounds.total(), 1);
        rounds.visit(&mut last_visit[1], true); // flow 1 again: a new pass
        assert_eq!(rounds.total(), 2);
        rounds.visit(&mut last_visit[1], false); // a repeat that does not start a round
        assert_eq!(rounds.total(), 2);
        assert_eq!(last_visit, [0, 2, 1, 0]);
        rounds.close();
        rounds.visit(&mut last_visit[3], true);
        assert_eq!(rounds.total(), 3);
        assert_eq!(last_visit, [0, 2, 1, 3]);
    }

    proptest::proptest! {
        /// The ring against a `VecDeque` model: pushes (growing the ring with the head at any
        /// position), rotations and removals, with the head, the length and the visit flag
        /// after each operation.
        #[test]
        fn active_list_as_a_deque(ops in proptest::collection::vec((0u8..4, 0u32..1000), 0..400)) {
            let mut list = ActiveList::default();
            let mut model: VecDeque<FlowId> = VecDeque::new();
            for (op, flow) in ops {
                match op {
                    0 | 1 => model.push_back(flow),
                    2 => {
                        if let Some(head) = model.pop_front() {
                            model.push_back(head);
                        }
                    }
                    _ => {
                        model.pop_front();
                    }
                }
                match op {
                    0 | 1 => list.push(flow),
                    2 => list.rotate(),
                    _ => list.remove_head(),
                }
                proptest::prop_assert_eq!(list.front(), model.front().copied());
                proptest::prop_assert_eq!(list.len(), model.len());
                proptest::prop_assert_eq!(list.is_empty(), model.is_empty());
                if op >= 2 {
                    proptest::prop_assert!(!list.visiting());
                }
            }
            // Every flow in order, by rotating once round the list.
            for &flow in &model {
                proptest::prop_assert_eq!(list.front(), Some(flow));
                list.rotate();
            }
        }
    }

    #[test]
    fn a_push_out_removes_the_flows_last_token() {
        let mut tokens = PriorityTokens::default();
        for flow in [1, 2, 1, 2, 1] {
            tokens.push(flow);
        }
        let pushed = |flow| Dropped {
            packet: Packet::new(0, flow, 100, 0),
            reason: DropReason::PushedOut,
        };
        tokens.forget_pushed_out(&[pushed(2), pushed(1)], |flow| flow == 2);
        assert_eq!(tokens.tokens, [1, 2, 1, 1]);
        tokens.remove_flow(1);
        assert_eq!((tokens.pop_front(), tokens.front()), (Some(2), None));
    }
}
