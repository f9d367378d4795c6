//! Dynamic Window-Constrained Scheduling (`dwcs`).
//!
//! R. West, K. Schwan and C. Poellabauer, "Scalable Scheduling Support for Loss and Delay
//! Constrained Media Streams", Proc. 5th IEEE Real-Time Technology and Applications Symposium
//! (RTAS), 1999: §3 (table 1, rules (A), (B), (C), the pseudo-code, figure 1) and §4 (two heaps
//! or a linear list; checking deadlines only every p cycles). Seed 002. Longer discussion:
//! `docs/disciplines.md`.
//!
//! Equations (x/y the original loss-tolerance, x'/y' the current one):
//! * (A) head serviced before its deadline: `if y' > x' { y' −= 1 }; if x' = y' = 0 { x'/y' = x/y }`;
//! * (B) head misses its deadline, x' > 0: `x' −= 1; y' −= 1; if x' = y' = 0 { x'/y' = x/y }`;
//! * (C) head misses its deadline at x' = 0: method 2 (reset) `x'/y' = x/y`, method 1
//!   (amortise) `x' = 2x − 1, y' = 2y + y' − 1`;
//! * a deadline is passed when `now > deadline`; the next head's deadline is the previous + gap.
//!
//! Paper name → code: stream i → flow `i`, its circular queue → [`FlowQueues`]; x/y, x'/y' →
//! [`LossState`] (flow key `loss_tolerance`); deadline(j) → `DwcsStream::deadline`;
//! interpacket_gap(j) → `DwcsStream::gap` (flow key `deadline_gap`); rule (A) →
//! [`LossState::serviced`], (B)/(C) → [`LossState::missed`] ([`ViolationMethod`]); table 1 →
//! the order of [`Precedence`]; "for each stream j missing its deadline, while (deadline missed)"
//! → `Dwcs::check` and `miss_deadlines`; the deadline heap and loss-tolerance heap of figure
//! 3(a) → `Order::Heap` (an [`IndexedHeap`] by deadline; the loss-tolerance "heap" is a
//! [`SortedRuns`]: sorted runs of streams and a small heap of the runs' first streams), the
//! linear list → `Order::List`; p →
//! `check_every`. Violations are measured by [`LossWindowMeter`], outside the scheduling state.
//!
//! Invariants: a flow is in the ordering structure iff its queue is non-empty (in the deadline
//! heap iff it also has a `deadline_gap`), under a key computed from its current state (the
//! deadline heap's key may trail the head's deadline: a service moves the deadline up without
//! re-keying, and the check raises a trailing key when it reaches the top);
//! consecutive deadlines of a backlogged stream are `deadline_gap` apart and never closer
//! across idle periods; the meters never influence a decision. Work conserving: a dequeue
//! returns `None` only when the check dropped every queued packet.
//!
//! Cost per packet, n backlogged streams, m deadline misses handled: heap O((1 + m) log n),
//! list O(n + m). A service re-keys the served stream in the table-1 order: it usually goes
//! to the end of the run last extended at its new loss-tolerance level (its deadline is a gap
//! later than before, behind the other streams of that level), which costs a re-key of its old
//! run in the heap of runs (a few entries in the bench: 2.5, 8 and 6 on average at 64, 1,024 and
//! 16,384 streams) instead of a sift-down through every stream; at worst every stream is a run
//! of its own and it is one heap of n. The deadline heap is re-keyed only when the new head
//! brings its own deadline, or later, once, when the stream's trailing key reaches the top
//! before its deadline has passed. Rule (B) is the plain loop of the pseudo-code, one iteration per missed
//! deadline, not the closed form (k misses in O(1)) used before: a backlogged head's deadline
//! never trails `now` by more than the time since the last check, so the loop is short. In the
//! `dwcs` bench (1/80 … 1/150, load near 1) it runs 0.015, 0.037 and 0.19 times per packet at
//! 64, 1,024 and 16,384 streams, so the closed form cannot matter there. No allocation per
//! packet once every flow has been seen.
//!
//! Choices where the paper is silent or ambiguous:
//! * Table 1 row 4 ("zero loss-tolerance & denominators, order EDF") is read as "zero
//!   tolerance and equal denominators": two 0/3 streams go earliest deadline first (FCFS would
//!   miss a deadline EDF meets). Remaining ties: head arrival time, then the lower flow id.
//! * Rule (B) is applied to every stream, the one just served included; rule (C) to a miss
//!   found at x' = 0; method 1 with x = 0 (x' would be −1) resets instead.
//! * A flow without `deadline_gap` has no deadlines: never late, (A) leaves it alone, and it
//!   comes after streams with deadlines at equal tolerance. `loss_tolerance` defaults to 1/1.
//! * The deadline of a stream's first packet after an idle period is `max(arrival +
//!   deadline_offset, previous deadline + gap)`; `deadline_offset` defaults to the gap.
//! * The paper makes the deadline a packet attribute: a packet's own deadline
//!   (`Packet::deadline`: a trace's `deadline_s`, a source's `deadline`) replaces the derived
//!   one when the packet becomes the head, in streams with a `deadline_gap` (the gap still
//!   spaces the deadlines that follow and moves a late non-droppable head's deadline; streams
//!   without one stay best effort).
//! * `check_every = p` checks at services 0, p, 2p, …; a late head sent in between gets rule
//!   (A) as the scheduler does not look, but the meter counts ⌈lateness/gap⌉ misses.
//! * Violations ("more than x deadlines missed in any y consecutive packets") are counted over
//!   sliding windows: each window of y consecutive packets of a stream (0/0: one packet)
//!   holding more than x late packets is one violation. The count over consecutive,
//!   non-overlapping windows is kept as `fixed_window_violations`. A packet is late when
//!   dropped as late or sent after missing a deadline; buffer drops are not in the windows.
//! * `peek` runs the check a dequeue at the same `now` would; its drops are reported by the
//!   next `enqueue` or `dequeue`. `longest_queue_drop` weighs every stream equally.

use crate::config::{ConfigError, FlowParamTable, FlowParams, LossTolerance, TableReader};
use crate::counters::{Counters, DropReason, Dropped};
use crate::discipline::{BuildContext, Discipline, DisciplineInfo, ParamInfo};
use crate::indexed_heap::{Entry, HeapKey, IndexedHeap};
use crate::loss_window::{LossWindow, LossWindowCounts};
use crate::packet::{FlowId, Packet, MAX_FLOW_ID};
use crate::queues::{Admission, FlowQueues};
use crate::scheduler::Scheduler;
use crate::sorted_runs::SortedRuns;
use crate::time::TimeNs;

/// Loss-tolerance of flows whose parameters give none: every packet may be late.
pub const DEFAULT_LOSS_TOLERANCE: LossTolerance = LossTolerance { x: 1, y: 1 };

/// A DWCS stream's parameters (all optional; see the module docs for the defaults).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DwcsFlowParams {
    /// x/y (key `loss_tolerance`); `None`: [`DEFAULT_LOSS_TOLERANCE`].
    pub loss_tolerance: Option<LossTolerance>,
    /// interpacket_gap in ns (key `deadline_gap`); `None`: no deadlines.
    pub deadline_gap: Option<TimeNs>,
    /// Deadline of the first packet after an idle period, after its arrival, ns (key
    /// `deadline_offset`); `None`: the gap.
    pub deadline_offset: Option<TimeNs>,
    /// Late packets are dropped (key `droppable`).
    pub droppable: Option<bool>,
}

impl FlowParams for DwcsFlowParams {
    fn read(reader: &mut TableReader<'_>, inherited: &Self) -> Result<Self, ConfigError> {
        let loss_tolerance = match reader.string("loss_tolerance")? {
            None => None,
            Some(text) => {
                Some(LossTolerance::parse(text).map_err(|rule| reader.error("loss_tolerance", rule))?)
            }
        };
        let deadline_gap = reader.duration("deadline_gap")?;
        if deadline_gap == Some(0) {
            return Err(reader.error("deadline_gap", "must be longer than zero"));
        }
        let params = DwcsFlowParams {
            loss_tolerance: loss_tolerance.or(inherited.loss_tolerance),
            deadline_gap: deadline_gap.or(inherited.deadline_gap),
            deadline_offset: reader.duration("deadline_offset")?.or(inherited.deadline_offset),
            droppable: reader.bool("droppable")?.or(inherited.droppable),
        };
        if params.deadline_gap.is_none() {
            if params.deadline_offset.is_some() {
                return Err(reader.error(
                    "deadline_offset",
                    "needs a deadline_gap (a stream without deadline_gap has no deadlines)",
                ));
            }
            if params.droppable == Some(true) {
                return Err(reader.error(
                    "droppable",
                    "needs a deadline_gap (a stream without deadline_gap is never late)",
                ));
            }
        }
        Ok(params)
    }
}

/// What to do when a stream misses a deadline at current loss-tolerance 0/y' (rule (C)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ViolationMethod {
    /// Method 2: x' = x, y' = y (the paper's experiments).
    #[default]
    Reset,
    /// Method 1: x' = 2x − 1, y' = 2y + y' − 1 (amortise the loss over 3y packets); streams
    /// with x = 0 are reset.
    Amortize,
}

/// How streams are kept in order (§4, figure 7(a)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Structure {
    /// A deadline heap and the loss-tolerance order in sorted runs ([`SortedRuns`]): O(log n)
    /// per change, O(1) plus a re-key in a heap of runs for the usual service.
    #[default]
    Heap,
    /// A linear list scanned for missed deadlines and for the next stream: O(n) per packet.
    List,
}

/// Parameters of [`Dwcs`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DwcsConfig {
    /// Rule (C) method.
    pub violation: ViolationMethod,
    /// Ordering structure.
    pub structure: Structure,
    /// Check missed deadlines only at every `check_every`-th service (≥ 1; 1 is exact DWCS).
    pub check_every: u32,
}

impl Default for DwcsConfig {
    fn default() -> Self {
        DwcsConfig {
            violation: ViolationMethod::Reset,
            structure: Structure::Heap,
            check_every: 1,
        }
    }
}

/// A stream's original and current loss-tolerance, and rules (A), (B), (C).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LossState {
    /// Original numerator x.
    pub x: u64,
    /// Original denominator y.
    pub y: u64,
    /// Current numerator x'.
    pub x_current: u64,
    /// Current denominator y' (grows without bound only under method 1).
    pub y_current: u64,
}

impl LossState {
    /// The state of a stream that has not been serviced: x'/y' = x/y.
    pub fn new(tolerance: LossTolerance) -> LossState {
        LossState {
            x: tolerance.x as u64,
            y: tolerance.y as u64,
            x_current: tolerance.x as u64,
            y_current: tolerance.y as u64,
        }
    }

    fn reset(&mut self) {
        self.x_current = self.x;
        self.y_current = self.y;
    }

    /// Rule (A), the head was serviced before its deadline.
    pub fn serviced(&mut self) {
        if self.y_current > self.x_current {
            self.y_current -= 1;
        }
        if self.x_current == 0 && self.y_current == 0 {
            self.reset();
        }
    }

    /// One missed deadline: rule (B), or rule (C) if x' = 0. Returns whether (C) applied.
    pub fn missed(&mut self, method: ViolationMethod) -> bool {
        if self.x_current > 0 {
            self.x_current -= 1;
            self.y_current -= 1;
            if self.x_current == 0 && self.y_current == 0 {
                self.reset();
            }
            return false;
        }
        if method == ViolationMethod::Amortize && self.x > 0 {
            self.x_current = 2 * self.x - 1;
            self.y_current = (2 * self.y).saturating_add(self.y_current).saturating_sub(1);
        } else {
            self.reset();
        }
        true
    }
}

/// A stream's measured lateness. Names as in [`DwcsStreamCounters::named`], which
/// [`Scheduler::flow_discipline_counters`] and (summed; `longest_late_run` as a maximum)
/// [`Scheduler::discipline_counters`] report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DwcsStreamCounters {
    /// Deadlines missed: each application of rule (B) or (C) (a non-droppable head can miss
    /// several times), plus ⌈lateness/gap⌉ for each late head sent without a check.
    pub deadlines_missed: u64,
    /// Late packets (dropped as late, or sent after missing a deadline) and the windows they
    /// violate: sliding (`loss_tolerance_violations`) and fixed (`fixed_window_violations`).
    pub window: LossWindowCounts,
    /// Times rule (C) applied (a miss at current loss-tolerance 0/y').
    pub rule_c_applied: u64,
}

impl DwcsStreamCounters {
    /// The counters by name, in a fixed order.
    pub fn named(&self) -> [(&'static str, u64); 6] {
        [
            ("deadlines_missed", self.deadlines_missed),
            ("late_packets", self.window.late_packets),
            ("loss_tolerance_violations", self.window.loss_tolerance_violations),
            ("fixed_window_violations", self.window.fixed_window_violations),
            ("longest_late_run", self.window.longest_late_run),
            ("rule_c_applied", self.rule_c_applied),
        ]
    }
}

/// Measures one stream's late packets against its original loss-tolerance x/y, over sliding
/// and over fixed windows ([`LossWindow`], shared with the simulator's lateness measure). Kept
/// beside, not inside, the scheduling state: DWCS's decisions read [`LossState`] only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LossWindowMeter {
    window: LossWindow,
    counters: DwcsStreamCounters,
}

impl LossWindowMeter {
    /// A meter for a stream of loss-tolerance `tolerance`.
    pub fn new(tolerance: LossTolerance) -> LossWindowMeter {
        LossWindowMeter {
            window: LossWindow::new(tolerance),
            counters: DwcsStreamCounters::default(),
        }
    }

    /// Records `misses` missed deadlines, of which `rule_c` found x' = 0.
    fn missed(&mut self, misses: u64, rule_c: u64) {
        self.counters.deadlines_missed += misses;
        self.counters.rule_c_applied += rule_c;
    }

    /// Records a packet leaving the stream (sent, or dropped as late).
    fn packet(&mut self, late: bool) {
        self.counters.window.add(self.window.packet(late));
    }

    /// The counters.
    pub fn counters(&self) -> DwcsStreamCounters {
        self.counters
    }
}

/// DWCS scheduling state of one stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DwcsStream {
    loss: LossState,
    /// interpacket_gap, ns; 0 = the stream has no deadlines.
    gap: TimeNs,
    offset: TimeNs,
    droppable: bool,
    /// Head's deadline while backlogged; while idle, the earliest deadline of the next packet.
    deadline: TimeNs,
    /// Whether any packet has had a deadline yet.
    started: bool,
    head_arrival: TimeNs,
    /// The head has missed at least one deadline (non-droppable heads stay queued).
    head_late: bool,
}

impl DwcsStream {
    fn new(params: &DwcsFlowParams) -> DwcsStream {
        let gap = params.deadline_gap.unwrap_or(0);
        DwcsStream {
            loss: LossState::new(params.loss_tolerance.unwrap_or(DEFAULT_LOSS_TOLERANCE)),
            gap,
            offset: params.deadline_offset.unwrap_or(gap),
            droppable: params.droppable.unwrap_or(false),
            deadline: 0,
            started: false,
            head_arrival: 0,
            head_late: false,
        }
    }

    /// Original and current loss-tolerance.
    pub fn loss(&self) -> LossState {
        self.loss
    }

    /// Current loss-tolerance as (x', y').
    pub fn loss_tolerance(&self) -> (u64, u64) {
        (self.loss.x_current, self.loss.y_current)
    }

    /// The head packet's deadline (while idle: the earliest deadline of the next packet), or
    /// `None` for a stream without deadlines or that has not had a packet yet.
    pub fn deadline(&self) -> Option<TimeNs> {
        (self.gap > 0 && self.started).then_some(self.deadline)
    }

    fn has_deadlines(&self) -> bool {
        self.gap > 0
    }

    /// `head` became the stream's head, its deadline already derived from the stream's: the
    /// packet's own deadline, if it has one, replaces that (streams with deadlines only).
    fn new_head(&mut self, head: &Packet) {
        self.head_arrival = head.arrival;
        if let Some(deadline) = head.deadline.filter(|_| self.has_deadlines()) {
            self.deadline = deadline;
        }
    }

    fn precedence(&self) -> Precedence {
        let deadline = if self.has_deadlines() {
            self.deadline
        } else {
            TimeNs::MAX
        };
        Precedence::new(
            self.loss.x_current,
            self.loss.y_current,
            deadline,
            self.head_arrival,
        )
    }
}

/// A backlogged stream's place in table 1, encoded so that the derived lexicographic `Ord`
/// of (`level`, `second`, `third`, `arrival`) is table 1 row by row ("less" is served first;
/// the order breaks the last tie by the lower flow id):
/// 1. lowest loss-tolerance x'/y' first (a zero tolerance, 0/0 included, before any other):
///    `level`;
/// 2. same non-zero tolerance: earliest deadline (`second` = deadline), then lowest
///    loss-numerator (`third` = x');
/// 3. zero tolerance: highest loss-denominator (`second` = `u64::MAX` − y'), then earliest
///    deadline (`third` = deadline);
/// 4. all other cases: first come, first served (`arrival`).
///
/// Four words, compared as two 128-bit numbers: an entry of the heap of runs is 48 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Precedence {
    /// x'/y' as ⌊2⁶⁴·x'/y'⌋ (0 for a zero tolerance, `u64::MAX` for x' = y'): one-to-one
    /// while y' < 2³² (fractions with such denominators differ by more than 2⁻⁶⁴; method 1
    /// can grow y' past that, where ties are resolved at 2⁻⁶⁴). Non-zero iff x' > 0.
    pub level: u64,
    /// Non-zero tolerance: the head's deadline (ns); zero tolerance: `u64::MAX` − y'.
    pub second: u64,
    /// Non-zero tolerance: x'; zero tolerance: the head's deadline (ns).
    pub third: u64,
    /// The head's arrival time, ns.
    pub arrival: TimeNs,
}

impl Precedence {
    /// The place of a stream at x'/y' (x' ≤ y') whose head has `deadline` (`TimeNs::MAX`
    /// without deadlines) and `arrival`.
    pub fn new(x: u64, y: u64, deadline: TimeNs, arrival: TimeNs) -> Precedence {
        let level = match x {
            0 => 0,
            x if x >= y => u64::MAX,
            // ⌊2⁶⁴·x/y⌋ by long division in base 2³² (two 64-bit divisions) when y < 2³².
            x if y <= u32::MAX as u64 => {
                let (high, rest) = ((x << 32) / y, (x << 32) % y);
                (high << 32) | ((rest << 32) / y)
            }
            x => (((x as u128) << 64) / y as u128) as u64,
        };
        let (second, third) = if x == 0 {
            (u64::MAX - y, deadline)
        } else {
            (deadline, x)
        };
        Precedence {
            level,
            second,
            third,
            arrival,
        }
    }

    /// The head's deadline (`TimeNs::MAX` for a stream without deadlines).
    #[inline]
    pub fn deadline(&self) -> TimeNs {
        if self.level == 0 {
            self.third
        } else {
            self.second
        }
    }
}

impl HeapKey for Precedence {
    #[inline(always)]
    fn precedes(&self, seq: u64, other: &Precedence, other_seq: u64) -> bool {
        let first = |p: &Precedence| (p.level as u128) << 64 | p.second as u128;
        let rest = |p: &Precedence| (p.third as u128) << 64 | p.arrival as u128;
        let (a, b) = (first(self), first(other));
        if a != b {
            return a < b;
        }
        let (a, b) = (rest(self), rest(other));
        if a != b {
            return a < b;
        }
        seq < other_seq
    }
}

/// The backlogged streams, in one of the two structures of §4. Entries are keyed (key, flow
/// id), the flow id being the item id too.
#[derive(Clone, Debug)]
enum Order {
    /// Figure 3(a): deadline heap (streams with deadlines) and loss-tolerance order (table 1,
    /// in sorted runs whose class is the loss-tolerance level).
    Heap {
        deadlines: IndexedHeap<TimeNs>,
        precedence: SortedRuns<Precedence>,
    },
    /// The backlogged streams' entries in no particular order: the check scans them for
    /// missed deadlines and the selection for the table 1 minimum.
    List { entries: Vec<Entry<Precedence>> },
}

impl Order {
    fn new(structure: Structure) -> Order {
        match structure {
            Structure::Heap => Order::Heap {
                deadlines: IndexedHeap::new(),
                precedence: SortedRuns::new(),
            },
            Structure::List => Order::List { entries: Vec::new() },
        }
    }

    /// Enters a stream that became backlogged, or re-keys one whose head, deadline or
    /// loss-tolerance changed.
    fn set(&mut self, flow: FlowId, stream: &DwcsStream) {
        let (key, seq) = (stream.precedence(), flow as u64);
        match self {
            Order::Heap {
                deadlines,
                precedence,
            } => {
                precedence.set(flow, key, seq, key.level);
                if stream.has_deadlines() {
                    deadlines.set(flow, stream.deadline, seq);
                }
            }
            Order::List { entries } => match entries.iter_mut().find(|entry| entry.id == flow) {
                Some(entry) => entry.key = key,
                None => entries.push(Entry::new(key, seq, flow)),
            },
        }
    }

    /// Re-keys the stream just served, still backlogged: its loss-tolerance and head changed,
    /// and its deadline moved up by the gap unless `own_deadline` (the new head brings its
    /// own, which may be earlier). The deadline heap keeps a lower bound of each stream's
    /// deadline (see [`Dwcs::check`]), so a later deadline leaves it alone.
    #[inline]
    fn served(&mut self, flow: FlowId, stream: &DwcsStream, own_deadline: bool) {
        match self {
            Order::Heap {
                deadlines,
                precedence,
            } => {
                let key = stream.precedence();
                precedence.set(flow, key, flow as u64, key.level);
                if own_deadline && stream.has_deadlines() {
                    deadlines.update(flow, stream.deadline, flow as u64);
                }
            }
            Order::List { .. } => self.set(flow, stream),
        }
    }

    fn remove(&mut self, flow: FlowId) {
        match self {
            Order::Heap {
                deadlines,
                precedence,
            } => {
                precedence.remove(flow);
                deadlines.remove(flow);
            }
            Order::List { entries } => {
                if let Some(at) = entries.iter().position(|entry| entry.id == flow) {
                    entries.swap_remove(at);
                }
            }
        }
    }

    /// The stream to serve: the table 1 minimum.
    fn best(&self) -> Option<FlowId> {
        match self {
            Order::Heap { precedence, .. } => precedence.peek(),
            Order::List { entries } => entries
                .iter()
                .reduce(|best, entry| if entry.before(best) { entry } else { best })
                .map(|entry| entry.id),
        }
    }
}

/// Handles every deadline `flow`'s head has missed by `now` (the inner `while (deadline
/// missed)` loop of the pseudo-code). Returns whether the flow is still backlogged.
fn miss_deadlines(
    stream: &mut DwcsStream,
    meter: &mut LossWindowMeter,
    queues: &mut FlowQueues,
    flow: FlowId,
    now: TimeNs,
    method: ViolationMethod,
    drops: &mut Vec<Dropped>,
) -> bool {
    if !stream.has_deadlines() {
        return true;
    }
    while stream.deadline < now {
        let rule_c = stream.loss.missed(method);
        meter.missed(1, rule_c as u64);
        stream.deadline = stream.deadline.saturating_add(stream.gap);
        if stream.droppable {
            // Drop the head; the next head's deadline is the dropped one's + gap.
            queues
                .pop_dropped(flow, DropReason::Late, drops)
                .expect("a stream with a deadline is backlogged");
            meter.packet(true);
            stream.head_late = false;
            match queues.head(flow) {
                Some(head) => stream.new_head(head),
                None => return false,
            }
        } else {
            // The head keeps its place; its deadline moves by the gap.
            stream.head_late = true;
        }
    }
    true
}

/// Dynamic Window-Constrained Scheduling.
#[derive(Clone, Debug)]
pub struct Dwcs {
    queues: FlowQueues,
    streams: Vec<Option<DwcsStream>>,
    /// Per-stream measurement, indexed like `streams`.
    meters: Vec<Option<LossWindowMeter>>,
    order: Order,
    table: FlowParamTable<DwcsFlowParams>,
    config: DwcsConfig,
    /// Packets serviced so far (the scheduler cycle count for `check_every`).
    services: u64,
    /// Drops made by `peek`, reported by the next `enqueue` or `dequeue`.
    stashed: Vec<Dropped>,
}

impl Dwcs {
    /// The DWCS state of `flow`, if the flow has been seen.
    pub fn stream(&self, flow: FlowId) -> Option<&DwcsStream> {
        self.streams.get(flow as usize)?.as_ref()
    }

    /// The measured lateness of `flow` (zeros for a flow not seen).
    pub fn stream_counters(&self, flow: FlowId) -> DwcsStreamCounters {
        self.meters
            .get(flow as usize)
            .and_then(|meter| meter.as_ref().map(LossWindowMeter::counters))
            .unwrap_or_default()
    }

    /// The configuration.
    pub fn config(&self) -> DwcsConfig {
        self.config
    }

    fn ensure_stream(&mut self, flow: FlowId) {
        let index = flow as usize;
        if index >= self.streams.len() {
            self.streams.resize(index + 1, None);
            self.meters.resize(index + 1, None);
        }
        if self.streams[index].is_none() {
            let params = self.table.get(flow);
            self.streams[index] = Some(DwcsStream::new(params));
            self.meters[index] = Some(LossWindowMeter::new(
                params.loss_tolerance.unwrap_or(DEFAULT_LOSS_TOLERANCE),
            ));
            if let Order::Heap {
                deadlines,
                precedence,
            } = &mut self.order
            {
                precedence.reserve_ids(index + 1);
                deadlines.reserve_ids(index + 1);
            }
        }
    }

    /// Checks every backlogged stream for missed deadlines at `now` (if this cycle checks).
    fn check(&mut self, now: TimeNs, drops: &mut Vec<Dropped>) {
        if !self.services.is_multiple_of(self.config.check_every as u64) {
            return;
        }
        let method = self.config.violation;
        let streams = &mut self.streams;
        let meters = &mut self.meters;
        let mut miss = |streams: &mut Vec<Option<DwcsStream>>,
                        flow: FlowId,
                        queues: &mut FlowQueues,
                        drops: &mut Vec<Dropped>| {
            let stream = streams[flow as usize]
                .as_mut()
                .expect("ordered streams have state");
            let meter = meters[flow as usize]
                .as_mut()
                .expect("ordered streams have a meter");
            let backlogged = miss_deadlines(stream, meter, queues, flow, now, method, drops);
            (backlogged, *stream)
        };
        match &mut self.order {
            Order::Heap {
                deadlines,
                precedence,
            } => {
                // Streams in deadline order; stop at the first deadline not yet passed. A key
                // is a lower bound of the stream's deadline (a service moves the deadline up
                // without re-keying): a key below the deadline is raised to it when it comes
                // to the top, so streams are handled in (deadline, flow) order all the same.
                while let Some(&Entry {
                    key: deadline,
                    id: flow,
                    ..
                }) = deadlines.peek()
                {
                    if deadline >= now {
                        break;
                    }
                    let current = streams[flow as usize]
                        .as_ref()
                        .expect("ordered streams have state")
                        .deadline;
                    if current != deadline {
                        deadlines.update(flow, current, flow as u64);
                        continue;
                    }
                    match miss(streams, flow, &mut self.queues, drops) {
                        (true, stream) => {
                            let key = stream.precedence();
                            precedence.set(flow, key, flow as u64, key.level);
                            deadlines.update(flow, stream.deadline, flow as u64);
                        }
                        (false, _) => {
                            precedence.remove(flow);
                            deadlines.remove(flow);
                        }
                    }
                }
            }
            Order::List { entries } => {
                let mut at = 0;
                while at < entries.len() {
                    // The key holds the head's deadline (`TimeNs::MAX` without deadlines).
                    if entries[at].key.deadline() >= now {
                        at += 1;
                        continue;
                    }
                    let flow = entries[at].id;
                    match miss(streams, flow, &mut self.queues, drops) {
                        (true, stream) => entries[at].key = stream.precedence(),
                        (false, _) => {
                            entries.swap_remove(at);
                            continue;
                        }
                    }
                    at += 1;
                }
            }
        }
    }
}

impl Discipline for Dwcs {
    type Config = DwcsConfig;
    const INFO: DisciplineInfo = DisciplineInfo {
        id: "dwcs",
        name: "Dynamic Window-Constrained Scheduling",
        citation: "West, Schwan & Poellabauer, RTAS 1999",
        summary: "Serves the stream with the lowest current loss-tolerance x'/y' (table 1 breaks ties: EDF, lowest numerator, highest denominator, FCFS); adjusts tolerances on service and on missed deadlines so that at most x of every y packets are late; late packets of droppable streams are dropped.",
        scheduler_params: &[
            ParamInfo {
                name: "violation",
                unit: "\"reset\" | \"amortize\"",
                default: "\"reset\"",
                description: "rule (C) on a miss at loss-tolerance 0/y': method 2 resets x'/y' to x/y, method 1 sets x' = 2x-1, y' = 2y+y'-1",
            },
            ParamInfo {
                name: "structure",
                unit: "\"heap\" | \"list\"",
                default: "\"heap\"",
                description: "two heaps (deadline and loss-tolerance order) or a linear list",
            },
            ParamInfo {
                name: "check_every",
                unit: "services",
                default: "1",
                description: "check streams for missed deadlines only every p services (the paper's approximation)",
            },
        ],
        flow_params: &[
            ParamInfo {
                name: "loss_tolerance",
                unit: "x/y",
                default: "\"1/1\"",
                description: "at most x late or lost packets in every y; \"0/0\" = zero tolerance, EDF among such streams",
            },
            ParamInfo {
                name: "deadline_gap",
                unit: "duration",
                default: "none (no deadlines)",
                description: "spacing of consecutive deadlines of the stream",
            },
            ParamInfo {
                name: "deadline_offset",
                unit: "duration",
                default: "deadline_gap",
                description: "deadline of the first packet after an idle period, after its arrival",
            },
            ParamInfo {
                name: "droppable",
                unit: "bool",
                default: "false",
                description: "drop late packets (else they stay queued and their deadline moves by the gap)",
            },
        ],
        per_flow_queues: true,
    };

    fn read_config(reader: &mut TableReader<'_>) -> Result<DwcsConfig, ConfigError> {
        let violation = match reader.string("violation")? {
            None | Some("reset") => ViolationMethod::Reset,
            Some("amortize") => ViolationMethod::Amortize,
            Some(_) => return Err(reader.error("violation", "must be \"reset\" or \"amortize\"")),
        };
        let structure = match reader.string("structure")? {
            None | Some("heap") => Structure::Heap,
            Some("list") => Structure::List,
            Some(_) => return Err(reader.error("structure", "must be \"heap\" or \"list\"")),
        };
        let check_every = reader.integer("check_every", 1, u32::MAX as i64)?.unwrap_or(1) as u32;
        Ok(DwcsConfig {
            violation,
            structure,
            check_every,
        })
    }

    fn build(config: DwcsConfig, context: &BuildContext<'_>) -> Result<Dwcs, ConfigError> {
        if config.check_every == 0 {
            return Err(ConfigError::new(
                "scheduler.check_every",
                "0",
                "must be at least 1",
            ));
        }
        let table = context.flows.parse(&Self::INFO, &DwcsFlowParams::default())?;
        Ok(Dwcs {
            queues: FlowQueues::new(context.limit),
            streams: Vec::new(),
            meters: Vec::new(),
            order: Order::new(config.structure),
            table,
            config,
            services: 0,
            stashed: Vec::new(),
        })
    }
}

impl Scheduler for Dwcs {
    fn id(&self) -> &'static str {
        Self::INFO.id
    }

    fn enqueue(&mut self, packet: Packet, _now: TimeNs, drops: &mut Vec<Dropped>) {
        drops.append(&mut self.stashed);
        let flow = packet.flow;
        if flow <= MAX_FLOW_ID {
            self.ensure_stream(flow);
        }
        let was_empty = self.queues.is_empty(flow);
        let reported = drops.len();
        let admitted = self.queues.admit(packet, |_| 1, drops);
        // A push-out that took a stream's only packet (its head) takes the stream out of order.
        for dropped in &drops[reported..] {
            if dropped.reason == DropReason::PushedOut && self.queues.is_empty(dropped.packet.flow) {
                self.order.remove(dropped.packet.flow);
                if let Some(stream) = self.streams[dropped.packet.flow as usize].as_mut() {
                    stream.head_late = false;
                }
            }
        }
        if admitted == Admission::Queued && was_empty {
            let stream = self.streams[flow as usize].as_mut().expect("state created above");
            if stream.has_deadlines() {
                let fresh = packet.arrival.saturating_add(stream.offset);
                stream.deadline = if stream.started {
                    fresh.max(stream.deadline)
                } else {
                    fresh
                };
                stream.started = true;
            }
            stream.new_head(&packet);
            stream.head_late = false;
            self.order.set(flow, stream);
        }
    }

    fn dequeue(&mut self, now: TimeNs, drops: &mut Vec<Dropped>) -> Option<Packet> {
        drops.append(&mut self.stashed);
        self.check(now, drops);
        let flow = self.order.best()?;
        let packet = self
            .queues
            .pop_sent(flow)
            .expect("ordered streams are backlogged");
        let stream = self.streams[flow as usize]
            .as_mut()
            .expect("ordered streams have state");
        let meter = self.meters[flow as usize]
            .as_mut()
            .expect("ordered streams have a meter");
        let mut late = stream.head_late;
        if stream.has_deadlines() {
            if stream.deadline < now {
                // Only when this cycle skipped the check: the scheduler does not notice.
                late = true;
                meter.missed((now - stream.deadline).div_ceil(stream.gap), 0);
            }
            stream.loss.serviced(); // (A)
            stream.deadline = stream.deadline.saturating_add(stream.gap);
        }
        meter.packet(late);
        stream.head_late = false;
        match self.queues.head(flow) {
            Some(head) => {
                stream.new_head(head);
                self.order.served(flow, stream, head.deadline.is_some());
            }
            None => self.order.remove(flow),
        }
        self.services += 1;
        Some(packet)
    }

    fn peek(&mut self, now: TimeNs) -> Option<Packet> {
        let mut stash = std::mem::take(&mut self.stashed);
        self.check(now, &mut stash);
        self.stashed = stash;
        let flow = self.order.best()?;
        self.queues.head(flow).copied()
    }

    fn counters(&self) -> &Counters {
        &self.queues.counters
    }

    fn discipline_counters(&self) -> Vec<(&'static str, u64)> {
        let mut totals = DwcsStreamCounters::default().named().to_vec();
        for meter in self.meters.iter().flatten() {
            for (total, (name, value)) in totals.iter_mut().zip(meter.counters().named()) {
                total.1 = if name == "longest_late_run" {
                    total.1.max(value)
                } else {
                    total.1 + value
                };
            }
        }
        totals
    }

    fn flow_discipline_counters(&self, flow: FlowId) -> Vec<(&'static str, u64)> {
        self.stream_counters(flow).named().to_vec()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use proptest::prelude::*;

    use super::*;
    use crate::config::{BufferLimit, FlowTable};
    use crate::link::{run_link, LinkRun, Outcome};
    use crate::registry::build_scheduler;
    use crate::testkit;

    /// One time unit: a 1000-byte packet on the 8 Mbit/s test link.
    const MS: TimeNs = 1_000_000;
    const US: TimeNs = 1_000;
    const UNIT_BYTES: u32 = 1000;

    fn tolerance(text: &str) -> LossTolerance {
        LossTolerance::parse(text).unwrap()
    }

    fn params(loss: &str, gap: Option<TimeNs>, offset: Option<TimeNs>, droppable: bool) -> DwcsFlowParams {
        DwcsFlowParams {
            loss_tolerance: Some(tolerance(loss)),
            deadline_gap: gap,
            deadline_offset: offset,
            droppable: gap.map(|_| droppable),
        }
    }

    /// The flow table that reads back as `p`.
    fn to_toml(p: &DwcsFlowParams) -> toml::Table {
        let mut t = toml::Table::new();
        if let Some(LossTolerance { x, y }) = p.loss_tolerance {
            t.insert("loss_tolerance".into(), format!("{x}/{y}").into());
        }
        if let Some(gap) = p.deadline_gap {
            t.insert("deadline_gap".into(), format!("{gap}ns").into());
        }
        if let Some(offset) = p.deadline_offset {
            t.insert("deadline_offset".into(), format!("{offset}ns").into());
        }
        if let Some(droppable) = p.droppable {
            t.insert("droppable".into(), droppable.into());
        }
        t
    }

    fn dwcs_with(flows: &[(FlowId, DwcsFlowParams)], config: DwcsConfig, limit: BufferLimit) -> Dwcs {
        let mut table = FlowTable::default();
        for (flow, p) in flows {
            table.set(*flow, to_toml(p), format!("flow {flow}"));
        }
        let context = testkit::context(limit, &table);
        Dwcs::build(config, &context).unwrap()
    }

    fn dwcs(flows: &[(FlowId, DwcsFlowParams)], structure: Structure) -> Dwcs {
        let config = DwcsConfig {
            structure,
            ..DwcsConfig::default()
        };
        dwcs_with(flows, config, BufferLimit::UNLIMITED)
    }

    const STRUCTURES: [Structure; 2] = [Structure::Heap, Structure::List];

    fn unit(id: u64, flow: FlowId, arrival: TimeNs) -> Packet {
        Packet::new(id, flow, UNIT_BYTES, arrival)
    }

    fn loss_of(s: &Dwcs, flow: FlowId) -> (u64, u64) {
        s.stream(flow).unwrap().loss_tolerance()
    }

    /// Dropped as late at `at`.
    fn late(at: TimeNs) -> Option<Outcome> {
        Some(Outcome::Dropped {
            at,
            reason: DropReason::Late,
        })
    }

    /// A unit packet sent in `[start, start + 1 ms)`.
    fn sent(start: TimeNs) -> Option<Outcome> {
        Some(Outcome::Sent {
            start,
            end: start + MS,
        })
    }

    /// A stream's counters: deadlines missed, then the window counts (late packets, sliding-
    /// and fixed-window violations, longest late run), then rule (C) applications.
    fn stream_counters(missed: u64, window: [u64; 4], rule_c_applied: u64) -> DwcsStreamCounters {
        let [late_packets, loss_tolerance_violations, fixed_window_violations, longest_late_run] = window;
        DwcsStreamCounters {
            deadlines_missed: missed,
            window: LossWindowCounts {
                late_packets,
                loss_tolerance_violations,
                fixed_window_violations,
                longest_late_run,
            },
            rule_c_applied,
        }
    }

    // ---------------------------------------------------------------- figure 1

    fn figure_1_streams() -> Vec<(FlowId, DwcsFlowParams)> {
        // s1, s2, s3: loss-tolerances 1/2, 3/4, 6/8; deadlines 0, 1, 2, … (gap one unit, the
        // first deadline at the first arrival); late packets are dropped.
        ["1/2", "3/4", "6/8"]
            .iter()
            .enumerate()
            .map(|(i, loss)| (i as FlowId + 1, params(loss, Some(MS), Some(0), true)))
            .collect()
    }

    /// One packet of each stream arrives every time unit, as in the paper.
    fn figure_1_trace(units: u64) -> Vec<Packet> {
        let mut trace = Vec::new();
        for k in 0..units {
            for flow in 1..=3 {
                trace.push(unit(trace.len() as u64, flow, k * MS));
            }
        }
        trace
    }

    /// Figure 1, West et al. §3. Hand-derived from table 1 and rules (A)/(B), and agreeing with
    /// every statement of the text: s1 first (lowest tolerance) and then 1/1; at t = 1 the first
    /// packets of s2 and s3 are dropped and their tolerances become 2/3 and 5/7, and s2 (d = 1) is
    /// served; at t = 2 s1 is back to 1/2 after the meaningless 0/0; at t = 5 s2 is served on a
    /// tie with s3 (2/3, d = 5, same numerator: lowest-numbered stream); at t = 8 the schedule
    /// repeats. Loss-tolerances (s1, s2, s3) before each selection:
    ///
    /// | t | s1  | s2  | s3  | served |
    /// |---|-----|-----|-----|--------|
    /// | 0 | 1/2 | 3/4 | 6/8 | s1 |
    /// | 1 | 1/1 | 2/3 | 5/7 | s2 |
    /// | 2 | 1/2 | 2/2 | 4/6 | s1 |
    /// | 3 | 1/1 | 1/1 | 3/5 | s3 |
    /// | 4 | 1/2 | 3/4 | 3/4 | s1 |
    /// | 5 | 1/1 | 2/3 | 2/3 | s2 (tie → lowest-numbered) |
    /// | 6 | 1/2 | 2/2 | 1/2 | s1 (tie → lowest-numbered) |
    /// | 7 | 1/1 | 1/1 | 0/1 | s3 |
    const FIGURE_1: [(u64, u64, u64, u64, u64, u64, FlowId); 8] = [
        (1, 2, 3, 4, 6, 8, 1),
        (1, 1, 2, 3, 5, 7, 2),
        (1, 2, 2, 2, 4, 6, 1),
        (1, 1, 1, 1, 3, 5, 3),
        (1, 2, 3, 4, 3, 4, 1),
        (1, 1, 2, 3, 2, 3, 2),
        (1, 2, 2, 2, 1, 2, 1),
        (1, 1, 1, 1, 0, 1, 3),
    ];

    #[test]
    fn figure_1_schedule_repeats_every_8_slots() {
        for structure in STRUCTURES {
            let mut s = dwcs(&figure_1_streams(), structure);
            let trace = figure_1_trace(24);
            let run = run_link(&mut s, testkit::link(), &trace).unwrap();
            let served: Vec<FlowId> = run.send_order.iter().map(|(i, _)| trace[*i].flow).collect();
            let period = [1, 2, 1, 3, 1, 2, 1, 3];
            assert_eq!(&served[..24], &period.repeat(3)[..], "{structure:?}");
            // One packet per unit, back to back, each the packet whose deadline is that unit.
            for (slot, (index, start)) in run.send_order.iter().take(24).enumerate() {
                assert_eq!(*start, slot as u64 * MS);
                assert_eq!(trace[*index].arrival, slot as u64 * MS, "served on its deadline");
            }
            // Over 24 units: s1 12 sent / 12 lost, s2 and s3 6 sent / 18 lost each.
            let c = s.counters();
            assert_eq!([1, 2, 3].map(|f| c.flow(f).unwrap().sent_packets), [12, 6, 6]);
            assert_eq!(
                [1, 2, 3].map(|f| c.flow(f).unwrap().dropped(DropReason::Late)),
                [12, 18, 18]
            );
            // "Hence, the loss-tolerances from all three streams are met."
            for flow in 1..=3 {
                assert_eq!(s.stream_counters(flow).window.loss_tolerance_violations, 0);
            }
        }
    }

    #[test]
    fn figure_1_loss_tolerances_step_by_step() {
        for structure in STRUCTURES {
            let mut s = dwcs(&figure_1_streams(), structure);
            let trace = figure_1_trace(16);
            let mut drops = Vec::new();
            let mut next = 0;
            for slot in 0..16u64 {
                let now = slot * MS;
                while next < trace.len() && trace[next].arrival <= now {
                    s.enqueue(trace[next], now, &mut drops);
                    next += 1;
                }
                // peek runs the missed-deadline check; its drops come with the dequeue.
                let peeked = s.peek(now).unwrap();
                let (x1, y1, x2, y2, x3, y3, flow) = FIGURE_1[slot as usize % 8];
                assert_eq!(loss_of(&s, 1), (x1, y1), "s1 at t = {slot}");
                assert_eq!(loss_of(&s, 2), (x2, y2), "s2 at t = {slot}");
                assert_eq!(loss_of(&s, 3), (x3, y3), "s3 at t = {slot}");
                assert_eq!(peeked.flow, flow, "t = {slot}");
                assert!(drops.is_empty(), "peek's drops are stashed");
                let sent = s.dequeue(now, &mut drops).unwrap();
                assert_eq!(sent, peeked);
                // Every slot after the first drops the two other streams' packets of the last
                // unit (deadline t − 1).
                let mut dropped: Vec<(FlowId, TimeNs)> =
                    drops.iter().map(|d| (d.packet.flow, d.packet.arrival)).collect();
                dropped.sort();
                if slot > 0 {
                    let previous = FIGURE_1[(slot as usize - 1) % 8].6;
                    let expected: Vec<(FlowId, TimeNs)> = (1..=3)
                        .filter(|f| *f != previous)
                        .map(|f| (f, (slot - 1) * MS))
                        .collect();
                    assert_eq!(dropped, expected, "t = {slot}");
                }
                assert!(drops.iter().all(|d| d.reason == DropReason::Late));
                drops.clear();
            }
            // After service at t = 0 (on time) s1 was 1/1: rule (A).
            assert_eq!(
                s.stream_counters(1).deadlines_missed,
                7,
                "dropped at t = 2, 4, …, 14"
            );
        }
    }

    // ---------------------------------------------------------------- table 1

    /// Builds DWCS with `streams` (flow, parameters, arrival of its one packet) and returns the
    /// flow served first at the last arrival time (both structures must agree).
    fn first_served(streams: &[(FlowId, DwcsFlowParams, TimeNs)]) -> FlowId {
        let flows: Vec<(FlowId, DwcsFlowParams)> = streams.iter().map(|(f, p, _)| (*f, *p)).collect();
        let mut arrivals: Vec<(TimeNs, FlowId)> = streams.iter().map(|(f, _, a)| (*a, *f)).collect();
        arrivals.sort();
        let now = arrivals.last().unwrap().0;
        let mut chosen = Vec::new();
        for structure in STRUCTURES {
            let mut s = dwcs(&flows, structure);
            let mut drops = Vec::new();
            for (id, (arrival, flow)) in arrivals.iter().enumerate() {
                s.enqueue(unit(id as u64, *flow, *arrival), *arrival, &mut drops);
            }
            let packet = s.dequeue(now, &mut drops).unwrap();
            assert!(drops.is_empty(), "no deadline has passed");
            chosen.push(packet.flow);
        }
        assert_eq!(chosen[0], chosen[1], "heap and list agree");
        chosen[0]
    }

    /// A stream of one packet: flow, loss-tolerance, deadline offset in ms (`None`: no
    /// deadlines), arrival in ms.
    type OnePacketStream = (FlowId, &'static str, Option<u64>, u64);

    /// Table 1 row by row: two streams and the flow served first.
    #[rustfmt::skip]
    const TABLE_1: [(&str, [OnePacketStream; 2], FlowId); 11] = [
        ("row 1: 1/2 < 3/4 although 3/4's deadline is earlier", [(0, "3/4", Some(1), 0), (1, "1/2", Some(9), 0)], 1),
        ("row 1: any zero tolerance precedes any non-zero one", [(0, "1/100", Some(1), 0), (1, "0/4", Some(9), 0)], 1),
        ("row 2: 1/2 = 2/4, earliest deadline first", [(0, "1/2", Some(5), 0), (1, "2/4", Some(3), 0)], 1),
        ("row 2: at equal tolerance, no deadline comes last", [(0, "1/2", None, 0), (1, "1/2", Some(50), 0)], 1),
        ("row 3: same tolerance and deadline, lowest numerator", [(0, "2/4", Some(3), 0), (1, "1/2", Some(3), 0)], 1),
        ("row 4: zero tolerances and denominators, EDF", [(0, "0/0", Some(5), 0), (1, "0/0", Some(2), 0)], 1),
        ("row 5: 0/5 before 0/2 although its deadline is later", [(0, "0/2", Some(1), 0), (1, "0/5", Some(9), 0)], 1),
        ("row 5: 0/1 before 0/0 (denominators 1 > 0)", [(0, "0/0", Some(1), 0), (1, "0/1", Some(9), 0)], 1),
        // Row 6: same tolerance, deadline (3 ms) and numerator: the head that arrived first.
        ("row 6: first come although its flow id is higher", [(0, "1/2", Some(2), 1), (1, "1/2", Some(3), 0)], 1),
        ("row 6: equal zero tolerances and deadlines, first come", [(0, "0/3", Some(2), 1), (1, "0/3", Some(3), 0)], 1),
        ("row 6: everything equal, arrival too: lower flow id", [(1, "1/2", Some(3), 0), (0, "1/2", Some(3), 0)], 0),
    ];

    #[test]
    fn table_1_row_by_row() {
        for (case, streams, winner) in TABLE_1 {
            let streams = streams.map(|(flow, loss, offset_ms, arrival_ms)| {
                let p = match offset_ms {
                    Some(ms) => params(loss, Some(100 * MS), Some(ms * MS), false),
                    None => params(loss, None, None, false),
                };
                (flow, p, arrival_ms * MS)
            });
            assert_eq!(first_served(&streams), winner, "{case}");
        }
    }

    /// Two 0/3 streams (equal denominators): stream A's packet arrives at 0.2 ms with deadline
    /// 5.2 ms, B's at 0.5 ms with deadline 1.4 ms, while a best-effort packet holds the link
    /// until 1 ms (1000-byte packets take 1 ms). FCFS would send A at 1 ms and B at 2 ms, past
    /// its deadline; EDF sends B at 1 ms and A at 2 ms, both on time.
    #[test]
    fn equal_zero_tolerances_are_edf_and_meet_both_deadlines() {
        let (a, b, best_effort) = (1, 2, 3);
        let streams = [
            (a, params("0/3", Some(100 * MS), Some(5 * MS), false)),
            (b, params("0/3", Some(100 * MS), Some(900 * US), false)),
            (best_effort, params("1/1", None, None, false)),
        ];
        let packets = [
            unit(0, best_effort, 0),
            unit(1, a, 200 * US),
            unit(2, b, 500 * US),
        ];
        for structure in STRUCTURES {
            let mut s = dwcs(&streams, structure);
            assert_eq!(testkit::send_order(&mut s, &packets), vec![0, 2, 1]);
            for flow in [a, b] {
                assert_eq!(s.stream_counters(flow).deadlines_missed, 0, "flow {flow}");
            }
        }
    }

    // ---------------------------------------------------------------- rules (A), (B), (C)

    #[test]
    fn rule_a_on_time_service() {
        let mut l = LossState::new(tolerance("2/5"));
        let mut seen = Vec::new();
        for _ in 0..4 {
            l.serviced();
            seen.push((l.x_current, l.y_current));
        }
        // y' falls to x' and stays there.
        assert_eq!(seen, vec![(2, 4), (2, 3), (2, 2), (2, 2)]);
        let mut l = LossState::new(tolerance("0/2"));
        l.serviced();
        assert_eq!((l.x_current, l.y_current), (0, 1));
        l.serviced(); // 0/0 is meaningless: back to 0/2
        assert_eq!((l.x_current, l.y_current), (0, 2));
    }

    #[test]
    fn rules_b_and_c_missed_deadlines() {
        for (method, after_violation) in [
            (ViolationMethod::Reset, (2, 4)),
            (ViolationMethod::Amortize, (3, 9)),
        ] {
            let mut l = LossState::new(tolerance("2/4"));
            assert!(!l.missed(method));
            assert_eq!((l.x_current, l.y_current), (1, 3));
            assert!(!l.missed(method));
            assert_eq!((l.x_current, l.y_current), (0, 2));
            // A miss at 0/2 violates: (C). Method 1: x' = 2x − 1 = 3, y' = 2y + y' − 1 = 9.
            assert!(l.missed(method));
            assert_eq!((l.x_current, l.y_current), after_violation, "{method:?}");
        }
        // x = y: 1/1 → 0/0 → 1/1, never a violation.
        let mut l = LossState::new(tolerance("1/1"));
        assert!(!l.missed(ViolationMethod::Reset));
        assert_eq!((l.x_current, l.y_current), (1, 1));
        // Method 1 with x = 0 would give x' = −1: reset instead.
        let mut l = LossState::new(tolerance("0/3"));
        assert!(l.missed(ViolationMethod::Amortize));
        assert_eq!((l.x_current, l.y_current), (0, 3));
    }

    /// "More than x deadlines missed in any y consecutive packets": every window position
    /// counts (sliding), beside the consecutive windows (fixed). Figure 5's DWCS pattern for
    /// 1/3, X X _ repeated, breaks every sliding window and every fixed one; a run of late
    /// packets across a fixed-window boundary breaks four sliding windows but one fixed one.
    #[test]
    fn violations_over_sliding_and_fixed_windows() {
        let measure = |tolerance: &str, pattern: &str| {
            let mut meter = LossWindowMeter::new(LossTolerance::parse(tolerance).unwrap());
            for mark in pattern.chars() {
                meter.packet(mark == 'X');
            }
            let c = meter.counters();
            (
                c.window.loss_tolerance_violations,
                c.window.fixed_window_violations,
                c.window.longest_late_run,
            )
        };
        assert_eq!(measure("1/3", "XX_XX_XX_"), (7, 3, 2));
        assert_eq!(measure("1/3", "___XXXX__"), (4, 1, 4));
        assert_eq!(measure("1/3", "X__X__X__"), (0, 0, 1));
        // 0/0 is measured over windows of one packet; x = y can never be violated.
        assert_eq!(measure("0/0", "_X_X"), (2, 2, 1));
        assert_eq!(measure("2/2", "XXXX"), (0, 0, 4));
        // Fewer than y packets: no complete sliding window yet, the fixed window already broken.
        assert_eq!(measure("1/5", "XX"), (0, 1, 2));
    }

    /// A zero-tolerance stream without deadlines (always first) holds the link while a 2/4
    /// non-droppable stream misses deadline after deadline: its head keeps its place, its
    /// deadline moves by the gap each time, (B) twice, then (C) at 0/2.
    #[test]
    fn non_droppable_head_misses_repeatedly() {
        for (method, at_3ms, at_4ms, after) in [
            (ViolationMethod::Reset, (2, 4), (1, 3), (1, 2)),
            (ViolationMethod::Amortize, (3, 9), (2, 8), (2, 7)),
        ] {
            for structure in STRUCTURES {
                let flows = [
                    (0, params("2/4", Some(MS), Some(0), false)),
                    (1, params("0/100", None, None, false)),
                ];
                let config = DwcsConfig {
                    violation: method,
                    structure,
                    check_every: 1,
                };
                let mut s = dwcs_with(&flows, config, BufferLimit::UNLIMITED);
                let mut drops = Vec::new();
                s.enqueue(unit(0, 0, 0), 0, &mut drops);
                for id in 1..=4 {
                    s.enqueue(unit(id, 1, 0), 0, &mut drops);
                }
                // The blocker goes first; flow 0's tolerance after each check.
                for (now, loss) in [(0, (2, 4)), (MS, (1, 3)), (2 * MS, (0, 2)), (3 * MS, at_3ms)] {
                    assert_eq!(s.dequeue(now, &mut drops).unwrap().flow, 1, "t = {now}");
                    assert_eq!(loss_of(&s, 0), loss, "t = {now}");
                }
                // t = 4 ms: a fourth miss, then the late head is served: (A).
                assert_eq!(s.peek(4 * MS).unwrap().flow, 0);
                assert_eq!(loss_of(&s, 0), at_4ms);
                assert_eq!(s.dequeue(4 * MS, &mut drops).unwrap().flow, 0);
                assert_eq!(loss_of(&s, 0), after);
                assert!(drops.is_empty());
                let stream = s.stream(0).unwrap();
                assert_eq!(stream.deadline(), Some(5 * MS), "pushed to 4 ms, then + gap");
                assert_eq!(s.stream_counters(0), stream_counters(4, [1, 0, 0, 1], 1));
            }
        }
    }

    /// Droppable: each late head is dropped and the next deadline is the dropped one's + gap.
    #[test]
    fn droppable_late_heads_are_dropped() {
        for structure in STRUCTURES {
            let flows = [
                (0, params("1/2", Some(MS), Some(0), true)),
                (1, params("0/100", None, None, false)),
            ];
            let mut s = dwcs(&flows, structure);
            let trace = [
                unit(0, 0, 0),
                unit(1, 0, 0),
                unit(2, 0, 0),
                unit(3, 1, 0),
                unit(4, 1, 0),
                unit(5, 1, 0),
                unit(6, 0, 3 * MS + MS / 2),
            ];
            let run = run_link(&mut s, testkit::link(), &trace).unwrap();
            // Deadlines 0, 1, 2 ms: dropped at the checks of 1, 2, 3 ms.
            assert_eq!(run.outcomes[..3], [late(MS), late(2 * MS), late(3 * MS)]);
            // The stream went idle at 3 ms with next deadline 3 ms; the arrival at 3.5 ms gets
            // max(3.5 ms + offset 0, 3 ms) and is sent at once.
            assert_eq!(run.outcomes[6], sent(3 * MS + MS / 2));
            let c = s.stream_counters(0);
            // Sliding windows of y = 2: (0, 1) and (1, 2) hold two late > x = 1, (2, 6) one.
            // Fixed windows: (0, 1) two late, (2, 6) one.
            assert_eq!(c, stream_counters(3, [3, 2, 1, 3], 1));
            assert_eq!(s.stream(0).unwrap().deadline(), Some(4 * MS + MS / 2));
        }
    }

    /// Drops made by `peek` are counted at once and handed out by the next call with a drops
    /// vector, here an enqueue.
    #[test]
    fn peek_drops_are_reported_by_the_next_enqueue() {
        for structure in STRUCTURES {
            let mut s = dwcs(&[(0, params("1/2", Some(MS), Some(0), true))], structure);
            let mut drops = Vec::new();
            s.enqueue(unit(0, 0, 0), 0, &mut drops);
            s.enqueue(unit(1, 0, 0), 0, &mut drops);
            // At 1.5 ms the deadlines 0 and 1 ms have passed: both packets go.
            assert_eq!(s.peek(MS + MS / 2), None);
            assert_eq!(s.counters().flow(0).unwrap().dropped(DropReason::Late), 2);
            assert_eq!(s.backlog().packets, 0);
            assert!(drops.is_empty());
            s.enqueue(unit(2, 0, 2 * MS), 2 * MS, &mut drops);
            let ids: Vec<u64> = drops.iter().map(|d| d.packet.id).collect();
            assert_eq!(ids, vec![0, 1]);
            assert!(drops.iter().all(|d| d.reason == DropReason::Late));
            drops.clear();
            assert_eq!(s.dequeue(2 * MS, &mut drops).unwrap().id, 2);
            assert!(drops.is_empty());
        }
    }

    // ---------------------------------------------------------------- check_every

    /// A droppable packet with deadline 1 ms behind a zero-tolerance blocker of five packets.
    fn approximation_run(check_every: u32, structure: Structure) -> (Dwcs, LinkRun) {
        let flows = [
            (0, params("1/2", Some(10 * MS), Some(MS), true)),
            (1, params("0/100", None, None, false)),
        ];
        let config = DwcsConfig {
            structure,
            check_every,
            ..DwcsConfig::default()
        };
        let mut s = dwcs_with(&flows, config, BufferLimit::UNLIMITED);
        let mut trace = vec![unit(0, 0, 0)];
        trace.extend((1..=5).map(|id| unit(id, 1, 0)));
        let run = run_link(&mut s, testkit::link(), &trace).unwrap();
        (s, run)
    }

    #[test]
    fn check_every_p_detects_misses_later() {
        for structure in STRUCTURES {
            // p = 1: the miss (deadline 1 ms) is seen at the first dequeue after it, 2 ms.
            let (s, run) = approximation_run(1, structure);
            assert_eq!(run.outcomes[0], late(2 * MS));
            assert_eq!(s.stream(0).unwrap().loss_tolerance(), (0, 1), "(B) applied");
            // p = 3: checks at services 0 and 3 (t = 0 and 3 ms): dropped at 3 ms.
            let (s, run) = approximation_run(3, structure);
            assert_eq!(run.outcomes[0], late(3 * MS));
            assert_eq!(s.stream_counters(0).deadlines_missed, 1);
            // p = 10: no check after t = 0; the late packet is sent at 5 ms and (B) never
            // applies — (A) does, as after any service — but the counters record the miss.
            let (s, run) = approximation_run(10, structure);
            assert_eq!(run.outcomes[0], sent(5 * MS));
            assert_eq!(s.stream(0).unwrap().loss_tolerance(), (1, 1));
            assert_eq!(s.stream_counters(0).deadlines_missed, 1);
            assert_eq!(s.stream_counters(0).window.late_packets, 1);
        }
    }

    // ---------------------------------------------------------------- reference model

    /// DWCS written straight from the paper's pseudo-code: a list scanned in flow order, rule
    /// (B) one miss at a time, table 1 as a chain of pairwise rules.
    struct Reference {
        streams: Vec<RefStream>,
        method: ViolationMethod,
    }

    struct RefStream {
        loss: LossState,
        gap: TimeNs,
        offset: TimeNs,
        droppable: bool,
        deadline: TimeNs,
        started: bool,
        queue: VecDeque<Packet>,
    }

    /// Table 1, row by row: whether stream `a`'s head precedes stream `b`'s.
    fn table_1_precedes(a: &RefStream, fa: FlowId, b: &RefStream, fb: FlowId) -> bool {
        let (xa, ya, xb, yb) = (
            a.loss.x_current,
            a.loss.y_current,
            b.loss.x_current,
            b.loss.y_current,
        );
        let da = if a.gap > 0 { a.deadline } else { TimeNs::MAX };
        let db = if b.gap > 0 { b.deadline } else { TimeNs::MAX };
        let zero_a = xa == 0;
        let zero_b = xb == 0;
        // Lowest loss-tolerance first.
        if zero_a != zero_b {
            return zero_a;
        }
        if !zero_a && xa * yb != xb * ya {
            return xa * yb < xb * ya;
        }
        if !zero_a {
            // Same non-zero loss-tolerance: EDF; then lowest numerator.
            if da != db {
                return da < db;
            }
            if xa != xb {
                return xa < xb;
            }
        } else if ya != yb {
            // Zero loss-tolerance: highest denominator first.
            return ya > yb;
        } else if da != db {
            // Zero loss-tolerance, equal denominators: EDF.
            return da < db;
        }
        // First come, first served; lowest-numbered stream.
        let (aa, ab) = (a.queue[0].arrival, b.queue[0].arrival);
        if aa != ab {
            return aa < ab;
        }
        fa < fb
    }

    impl Reference {
        fn enqueue(&mut self, packet: Packet) {
            let s = &mut self.streams[packet.flow as usize];
            if s.queue.is_empty() && s.gap > 0 {
                let fresh = packet.arrival + s.offset;
                s.deadline = if s.started { fresh.max(s.deadline) } else { fresh };
                s.started = true;
            }
            s.queue.push_back(packet);
        }

        /// Returns (sent, dropped ids).
        fn dequeue(&mut self, now: TimeNs) -> (Option<Packet>, Vec<u64>) {
            let mut dropped = Vec::new();
            for s in &mut self.streams {
                if s.queue.is_empty() || s.gap == 0 {
                    continue;
                }
                while s.deadline < now {
                    s.loss.missed(self.method);
                    if s.droppable {
                        dropped.push(s.queue.pop_front().unwrap().id);
                        s.deadline += s.gap;
                        if s.queue.is_empty() {
                            break;
                        }
                    } else {
                        s.deadline += s.gap;
                    }
                }
            }
            let mut best: Option<usize> = None;
            for (i, s) in self.streams.iter().enumerate() {
                if s.queue.is_empty() {
                    continue;
                }
                best = match best {
                    Some(b) if !table_1_precedes(s, i as FlowId, &self.streams[b], b as FlowId) => Some(b),
                    _ => Some(i),
                };
            }
            let Some(i) = best else {
                return (None, dropped);
            };
            let s = &mut self.streams[i];
            let packet = s.queue.pop_front();
            if s.gap > 0 {
                s.loss.serviced();
                s.deadline += s.gap;
            }
            (packet, dropped)
        }
    }

    fn arb_flow_params() -> impl Strategy<Value = DwcsFlowParams> {
        (
            0u32..6,
            0u32..7,
            prop_oneof![1 => Just(None), 6 => (50u64..3000).prop_map(|us| Some(us * 1000))],
            prop_oneof![1 => Just(None), 2 => (0u64..4000).prop_map(|us| Some(us * 1000))],
            any::<bool>(),
        )
            .prop_map(|(y, x, gap, offset, droppable)| DwcsFlowParams {
                loss_tolerance: Some(LossTolerance {
                    x: if y == 0 { 0 } else { x % (y + 1) },
                    y,
                }),
                deadline_gap: gap,
                deadline_offset: gap.and(offset),
                droppable: gap.map(|_| droppable),
            })
    }

    fn arb_config() -> impl Strategy<Value = DwcsConfig> {
        (any::<bool>(), 1u32..5).prop_map(|(amortize, check_every)| DwcsConfig {
            violation: if amortize {
                ViolationMethod::Amortize
            } else {
                ViolationMethod::Reset
            },
            structure: Structure::Heap,
            check_every,
        })
    }

    proptest! {
        /// With p = 1, both structures make exactly the pseudo-code's decisions, dequeue by
        /// dequeue (sent packet and the set of late drops) on random traces.
        #[test]
        fn exact_dwcs_equals_the_pseudo_code(
            flows in proptest::collection::vec(arb_flow_params(), 4),
            trace in testkit::arb_trace(4, 200),
            amortize in any::<bool>(),
        ) {
            let method = if amortize { ViolationMethod::Amortize } else { ViolationMethod::Reset };
            let table: Vec<(FlowId, DwcsFlowParams)> =
                flows.iter().enumerate().map(|(f, p)| (f as FlowId, *p)).collect();
            for structure in STRUCTURES {
                let config = DwcsConfig { violation: method, structure, check_every: 1 };
                let mut s = dwcs_with(&table, config, BufferLimit::UNLIMITED);
                let mut reference = Reference {
                    streams: flows
                        .iter()
                        .map(|p| {
                            let gap = p.deadline_gap.unwrap_or(0);
                            RefStream {
                                loss: LossState::new(p.loss_tolerance.unwrap()),
                                gap,
                                offset: p.deadline_offset.unwrap_or(gap),
                                droppable: p.droppable.unwrap_or(false),
                                deadline: 0,
                                started: false,
                                queue: VecDeque::new(),
                            }
                        })
                        .collect(),
                    method,
                };
                let mut drops = Vec::new();
                let mut now = 0;
                let mut next = 0;
                while next < trace.len() || s.backlog().packets > 0 {
                    if s.backlog().packets == 0 {
                        now = now.max(trace[next].arrival);
                    }
                    while next < trace.len() && trace[next].arrival <= now {
                        s.enqueue(trace[next], now, &mut drops);
                        reference.enqueue(trace[next]);
                        next += 1;
                    }
                    let sent = s.dequeue(now, &mut drops);
                    let (expected, mut expected_drops) = reference.dequeue(now);
                    let mut got_drops: Vec<u64> = drops.drain(..).map(|d| d.packet.id).collect();
                    got_drops.sort();
                    expected_drops.sort();
                    prop_assert_eq!(sent, expected, "t = {}", now);
                    prop_assert_eq!(got_drops, expected_drops, "t = {}", now);
                    for (f, r) in reference.streams.iter().enumerate() {
                        prop_assert_eq!(s.stream(f as FlowId).map_or(r.loss, |x| x.loss()), r.loss);
                    }
                    if let Some(p) = sent {
                        now += testkit::link().transmission_time(p.size as u64);
                    }
                }
            }
        }

        /// Heap and list make identical schedules when packets bring their own deadlines,
        /// earlier or later than the derived ones (the deadline heap's keys then move down as
        /// well as up).
        #[test]
        fn heap_and_list_agree_on_packet_deadlines(
            flows in proptest::collection::vec(arb_flow_params(), 4),
            config in arb_config(),
            trace in testkit::arb_trace(4, 300),
            own in proptest::collection::vec(prop_oneof![2 => Just(None), 1 => (0u64..6_000).prop_map(Some)], 300),
        ) {
            let table: Vec<(FlowId, DwcsFlowParams)> =
                flows.iter().enumerate().map(|(f, p)| (f as FlowId, *p)).collect();
            // A packet's own deadline: from 1 ms before its arrival to 5 ms after.
            let trace: Vec<Packet> = trace
                .iter()
                .zip(&own)
                .map(|(p, d)| Packet {
                    deadline: d.map(|us| (p.arrival + us * US).saturating_sub(MS)),
                    ..*p
                })
                .collect();
            let mut heap = dwcs_with(&table, config, BufferLimit::UNLIMITED);
            let list_config = DwcsConfig { structure: Structure::List, ..config };
            let mut list = dwcs_with(&table, list_config, BufferLimit::UNLIMITED);
            let a = testkit::check_invariants(&mut heap, &trace, true)?;
            let b = testkit::check_invariants(&mut list, &trace, true)?;
            prop_assert_eq!(a, b);
            prop_assert_eq!(heap.discipline_counters(), list.discipline_counters());
            for flow in 0..4 {
                prop_assert_eq!(heap.stream(flow), list.stream(flow));
            }
        }

        /// Heap and list make identical schedules, for any rule (C) method and p.
        #[test]
        fn heap_and_list_schedules_are_identical(
            flows in proptest::collection::vec(arb_flow_params(), 5),
            config in arb_config(),
            trace in testkit::arb_trace(6, 300),
        ) {
            // Flow 5 is left to the defaults (1/1, no deadlines).
            let table: Vec<(FlowId, DwcsFlowParams)> =
                flows.iter().enumerate().map(|(f, p)| (f as FlowId, *p)).collect();
            let mut heap = dwcs_with(&table, config, BufferLimit::UNLIMITED);
            let list_config = DwcsConfig { structure: Structure::List, ..config };
            let mut list = dwcs_with(&table, list_config, BufferLimit::UNLIMITED);
            let a = testkit::check_invariants(&mut heap, &trace, true)?;
            let b = testkit::check_invariants(&mut list, &trace, true)?;
            prop_assert_eq!(a, b);
            prop_assert_eq!(heap.discipline_counters(), list.discipline_counters());
            for flow in 0..6 {
                prop_assert_eq!(heap.stream(flow), list.stream(flow));
                prop_assert_eq!(heap.flow_discipline_counters(flow), list.flow_discipline_counters(flow));
            }
        }

        /// Exactly once, FIFO per flow, counters, work conservation, under buffer limits and
        /// push-outs.
        #[test]
        fn invariants(
            flows in proptest::collection::vec(arb_flow_params(), 5),
            config in arb_config(),
            list in any::<bool>(),
            lqd in any::<bool>(),
            trace in testkit::arb_trace(5, 300),
        ) {
            let table: Vec<(FlowId, DwcsFlowParams)> =
                flows.iter().enumerate().map(|(f, p)| (f as FlowId, *p)).collect();
            let limit = testkit::byte_limit(6000, lqd);
            let structure = if list { Structure::List } else { Structure::Heap };
            let mut s = dwcs_with(&table, DwcsConfig { structure, ..config }, limit);
            prop_assert!(s.is_work_conserving());
            testkit::check_invariants(&mut s, &trace, true)?;
        }
    }

    // ---------------------------------------------------------------- under load

    /// Stream sets meeting Σ(1 − x/y)·C/T < 1 with a common period T = qC (C = one unit):
    /// (q, [(x, y)]).
    fn arb_under_loaded() -> impl Strategy<Value = (u64, Vec<(u32, u32)>)> {
        (1u64..9, proptest::collection::vec((0u32..11, 1u32..11), 1..9)).prop_filter_map(
            "minimum demand below the link",
            |(q, raw)| {
                let set: Vec<(u32, u32)> = raw.into_iter().map(|(x, y)| (x % (y + 1), y)).collect();
                // Σ (y − x)/(y·q) < 1, exactly: Σ (y − x)·L/y < q·L with L = lcm(1..=10).
                let l: u64 = 2520;
                let demand: u64 = set.iter().map(|&(x, y)| (y - x) as u64 * l / y as u64).sum();
                (demand < q * l).then_some((q, set))
            },
        )
    }

    proptest! {
        /// Under-load (the paper's figure 1 setting generalised): every stream has one packet
        /// arriving per period T = qC, deadline offset T − C (it must start within its period)
        /// or T, late packets dropped. When Σ(1 − x/y)·C/T < 1, DWCS never finds a stream at
        /// 0/y' missing again: rule (C) never applies, i.e. every DWCS window (from x/y back to
        /// x/y) holds at most x late packets. Checked independently from the outcomes: any y
        /// consecutive packets of a stream hold at most 2x late ones (a window of y packets
        /// overlaps at most two DWCS windows, each at least y packets long).
        #[test]
        fn under_load_no_violation(
            (q, set) in arb_under_loaded(),
            start_by_period_end in any::<bool>(),
            amortize in any::<bool>(),
            list in any::<bool>(),
        ) {
            let period = q * MS;
            let offset = if start_by_period_end { period - MS } else { period };
            let flows: Vec<(FlowId, DwcsFlowParams)> = set
                .iter()
                .enumerate()
                .map(|(f, (x, y))| (f as FlowId, params(&format!("{x}/{y}"), Some(period), Some(offset), true)))
                .collect();
            let config = DwcsConfig {
                violation: if amortize { ViolationMethod::Amortize } else { ViolationMethod::Reset },
                structure: if list { Structure::List } else { Structure::Heap },
                check_every: 1,
            };
            let mut s = dwcs_with(&flows, config, BufferLimit::UNLIMITED);
            let mut trace = Vec::new();
            for k in 0..(600 / q) {
                for f in 0..set.len() {
                    trace.push(unit(trace.len() as u64, f as FlowId, k * period));
                }
            }
            let run = testkit::check_invariants(&mut s, &trace, true)?;
            for (f, &(x, y)) in set.iter().enumerate() {
                let counters = s.stream_counters(f as FlowId);
                prop_assert_eq!(counters.rule_c_applied, 0, "stream {} ({}/{})", f, x, y);
                let late: Vec<bool> = trace
                    .iter()
                    .zip(&run.outcomes)
                    .filter(|(p, _)| p.flow == f as FlowId)
                    .map(|(_, o)| matches!(o, Some(Outcome::Dropped { reason: DropReason::Late, .. })))
                    .collect();
                let late_in = |window: &[bool]| window.iter().filter(|l| **l).count() as u32;
                for window in late.windows(y as usize) {
                    let count = late_in(window);
                    prop_assert!(count <= 2 * x, "stream {} ({}/{}): {} late in {} packets", f, x, y, count, y);
                }
                // The meter's counts, recounted from the outcomes: every window of y packets,
                // and the consecutive non-overlapping ones.
                let sliding = late.windows(y as usize).filter(|w| late_in(w) > x).count() as u64;
                let fixed = late.chunks(y as usize).filter(|w| late_in(w) > x).count() as u64;
                prop_assert_eq!(counters.window.loss_tolerance_violations, sliding);
                prop_assert_eq!(counters.window.fixed_window_violations, fixed);
                // Sent packets are all on time (droppable: a late head never goes out).
                prop_assert_eq!(counters.window.late_packets, late.iter().filter(|l| **l).count() as u64);
            }
        }
    }

    /// Rule (A) leaves y' alone once y' = x', so a DWCS window can be longer than y packets and
    /// two windows' late packets can meet: 1/2 served on time twice stays 1/1, then two misses
    /// (the second after a reset from 0/0) are both allowed without rule (C) — two late packets
    /// in a row, more than x = 1 in the window of y = 2, counted as a violation by the counters
    /// (figure 5's fixed windows) but not by DWCS itself.
    #[test]
    fn dwcs_windows_stretch_past_y() {
        let mut l = LossState::new(tolerance("1/2"));
        l.serviced();
        l.serviced();
        assert_eq!((l.x_current, l.y_current), (1, 1));
        assert!(!l.missed(ViolationMethod::Reset));
        assert_eq!((l.x_current, l.y_current), (1, 2), "0/0 → reset");
        assert!(!l.missed(ViolationMethod::Reset));
        assert_eq!((l.x_current, l.y_current), (0, 1));
    }

    /// Pre-queued (fully backlogged) streams are a different matter: DWCS serves a stream
    /// whenever it has precedence, however far ahead of its deadlines, so a stream can run
    /// ahead. Streams 0/1 (flow 0) and 0/2 (flow 1), T = 7 units, deadline offset T, all packets
    /// queued at 0: flow 1 (higher denominator) goes at 0 and becomes 0/1; equal denominators
    /// then go earliest deadline first (flow 0, deadline 7, at 1; at 2 both have deadline 14 and
    /// the FCFS tie favours flow 0); flow 1 (deadline 14) goes at 3, is reset to 0/2 by (A) and,
    /// with the higher denominator, goes again at 4 (deadline 21); the cycle repeats every 4
    /// units, flow 1 sending at 0, 3, 4, 7, 8, … far ahead of its deadlines 7, 14, 21, 28, 35, and
    /// neither stream is ever late. (Under the FCFS reading of equal denominators flow 1's heads
    /// went late at 15 and 29.)
    #[test]
    fn backlogged_streams_run_ahead() {
        let flows = [
            (0, params("0/1", Some(7 * MS), None, true)),
            (1, params("0/2", Some(7 * MS), None, true)),
        ];
        for structure in STRUCTURES {
            let mut s = dwcs(&flows, structure);
            let trace: Vec<Packet> = (0..120).map(|id| unit(id, (id % 2) as FlowId, 0)).collect();
            let run = run_link(&mut s, testkit::link(), &trace).unwrap();
            let flow_1: Vec<Option<Outcome>> =
                run.outcomes.iter().skip(1).step_by(2).take(5).copied().collect();
            assert_eq!(flow_1, [0, 3, 4, 7, 8].map(|t| sent(t * MS)));
            assert_eq!(s.stream_counters(0).window.late_packets, 0);
            assert_eq!(s.stream_counters(1).window.late_packets, 0);
        }
    }

    // ---------------------------------------------------------------- configuration

    #[test]
    fn configuration_is_checked_up_front() {
        let rate = testkit::link();
        let build = |text: &str, flows: &FlowTable| {
            let table: toml::Table = text.parse().unwrap();
            build_scheduler(&table, "scheduler", flows, rate)
        };
        let none = FlowTable::default();
        let s = build(
            "kind = \"dwcs\"\nviolation = \"amortize\"\nstructure = \"list\"\ncheck_every = 12",
            &none,
        )
        .unwrap();
        assert_eq!(s.id(), "dwcs");
        let e = build("kind = \"dwcs\"\nviolation = \"forgive\"", &none).unwrap_err();
        assert_eq!(e.path, "scheduler.violation");
        assert_eq!(e.value, "\"forgive\"");
        let e = build("kind = \"dwcs\"\nstructure = \"tree\"", &none).unwrap_err();
        assert_eq!(e.path, "scheduler.structure");
        let e = build("kind = \"dwcs\"\ncheck_every = 0", &none).unwrap_err();
        assert_eq!(
            e.to_string(),
            "scheduler.check_every = 0: must be an integer from 1 to 4294967295"
        );

        let flow = testkit::params;
        let parse =
            |text: &str| FlowTable::uniform(flow(text)).parse(&Dwcs::INFO, &DwcsFlowParams::default());
        assert_eq!(
            parse("loss_tolerance = \"0/0\"")
                .unwrap()
                .defaults()
                .loss_tolerance,
            Some(LossTolerance { x: 0, y: 0 })
        );
        assert!(parse("loss_tolerance = \"1/0\"").is_err());
        let mut table = FlowTable::uniform(flow("loss_tolerance = \"1/2\"\ndeadline_gap = \"1ms\""));
        table.set(3, flow("deadline_offset = \"2ms\""), "flow[1]");
        build("kind = \"dwcs\"", &table).unwrap();
        let mut bad = FlowTable::default();
        bad.set(3, flow("droppable = true"), "flow[1]");
        let e = build("kind = \"dwcs\"", &bad).unwrap_err();
        assert_eq!(e.path, "flow[1].droppable");
        bad.set(3, flow("deadline_offset = \"2ms\""), "flow[1]");
        let e = build("kind = \"dwcs\"", &bad).unwrap_err();
        assert_eq!(e.path, "flow[1].deadline_offset");
        let mut odd = FlowTable::default();
        odd.set(0, flow("loss_tolerance = \"3/2\""), "flow[0]");
        let e = build("kind = \"dwcs\"", &odd).unwrap_err();
        assert_eq!(
            e.to_string(),
            "flow[0].loss_tolerance = \"3/2\": x = 3 exceeds y = 2: at most y of y packets can be lost"
        );
        let e = build("kind = \"dwcs\"", &FlowTable::uniform(flow("quantum = 1"))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "flow_defaults.quantum = 1: not a flow key of dwcs, which reads only loss_tolerance, deadline_gap, deadline_offset, droppable (another discipline's keys go in a sub-table named after it)"
        );
    }
}
