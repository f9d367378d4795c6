//! DRR++ (`drr_plusplus`): Deficit Round Robin whose latency-critical (LC) flow is regulated by
//! its own deficit instead of a contract, so bursts stay backlogged instead of demoting it.
//!
//! Chong Zhang, "A Measurement Study on Scheduling Latency-Critical Traffic", MSc thesis,
//! University of Alberta, 2001 (seed 000): §2.5.4, §3.1.2 with tables 3.1–3.2 (the modified
//! DRR++, `variant = "modified"`, the default) and tables 3.3–3.4 (the DRR++ of M. H. MacGregor
//! and W. Shi, "Deficits for Bursty Latency-Critical Flows: DRR++", Proc. IEEE ICON 2000,
//! pp. 287–293, `variant = "original"`), table 3.5 (the two execution sequences), §3.4
//! (Lemmas 1–3, Theorem 2) and §5.1.2 (the counters).
//!
//! Pseudo-code name → code:
//! * Q_i, `quantum(i)` → [`DrrPlusPlusFlow::quantum`]; Q_LC / Q_BE are the quanta of LC / BE
//!   flows; DC_i → [`DrrPlusPlusFlow::deficit`];
//! * `IsLatencyCritical(i)` → [`DrrPlusPlusFlow::latency_critical`] (flow parameter
//!   `latency_critical = true`);
//! * modified: `LCList` → `lc_list`, `BestEffortList` → `be_list` (backlogged flows, head
//!   visited next); whose turn it is → `turn`; "add a quantum" happened for the head → `in_visit`;
//! * original: `ActiveList` → `active_list` (LC and BE flows); `PrioTxQueue` → `priority`
//!   (one entry, the flow id, per queued LC packet, in arrival order); n, the number of BE
//!   flows → `be_count`;
//! * `AppendToTxQueue(p)` / `AppendToPrioTxQueue(p)` + the transmit module's `Send(p)` →
//!   returning `p` from `dequeue` (see "transmit queues" below).
//!
//! Modified DRR++ (tables 3.1, 3.2; table 3.5 right column). One round (Definition 4) is one LC
//! service and one BE service: `for i in 0..n { DC_LC += Q_LC; serve LC; DC_BE_i += Q_BE;
//! serve BE_i }`, i.e. the service order is LC, BE_1, LC, BE_2, …. Serving a flow sends head
//! packets while `PacketSize ≤ DC_i`; an emptied queue resets `DC_i = 0` and leaves its list;
//! a flow that still has packets keeps its deficit and goes to the tail of its list. An LC
//! burst beyond its deficit simply stays backlogged: nothing is ever demoted.
//!
//! Original DRR++ (tables 3.3, 3.4; table 3.5 left column). LC packets go straight to
//! `PrioTxQueue` on arrival. The dequeuing module walks the ActiveList: an LC flow gets
//! `DC_LC += n·Q_LC` if it is backlogged, or `DC_LC = n·Q_LC` if not ("no backlog – reset
//! quantum"), and goes back to the tail; a BE flow gets `DC_i += Q_i` and moves its packets to
//! `TxQueue` while they fit. The transmit module sends the head of `PrioTxQueue` whenever its
//! flow's deficit covers it (`DC_i -= Size(p)`), otherwise from `TxQueue`: LC packets may
//! overtake the rest of a BE service, n·Q_LC bytes per full round of the BE flows.
//!
//! Transmit queues (both variants). The dequeuing module is run only when the link needs a
//! packet and both transmit queues are empty (the thesis's round and its measured vacation
//! V_LC ≤ Q_BE/BNBW, §5.1.1, assume service paced by the link; a dequeuing thread running
//! ahead of the link would hand the LC flow a quantum per loop at CPU speed). So the transmit
//! queues never hold more than one service's packets and are not stored: the flow being
//! served is remembered and its head is sent while it fits. In the modified variant the
//! priority transmit queue then only means that an LC service's packets leave before the next
//! BE service's; in the original variant it is real: the priority check is made at every
//! packet boundary.
//!
//! Work conservation. The thesis (§2.5.4, after MacGregor & Shi) calls DRR++
//! non-work-conserving. Here the link never idles while a packet is queued: when the LC flow
//! lacks deficit and no BE flow is backlogged the next LC service starts at once, so
//! [`Scheduler::is_work_conserving`] is true and [`Scheduler::next_wakeup`] is `None`, and the
//! invariant tests check it. The thesis's term still describes the LC class: its priority
//! service is not work conserving — a backlogged LC flow is held back ("the excess traffic
//! simply remains backlogged", §2.5.4) while BE flows are served, however much priority
//! capacity that burst could use, so the LC flow's priority service is rate-regulated to
//! r_LC = Q_LC/(Q_LC + Q_BE)·BNBW under BE load rather than given whenever it is backlogged.
//!
//! Latency-critical flows. The thesis has exactly one LC flow (n_LC in §3.3 is the LC *packet
//! length*, not a number of flows). This implementation accepts any number: in the modified
//! variant an LC turn serves every backlogged LC flow once (each with its own Q_LC, in list
//! order) before the next BE flow, which for one LC flow is the thesis's algorithm and for
//! several keeps each LC flow's round at (ΣQ_LC + Q_BE); in the original variant each LC flow
//! is its own ActiveList entry and `PrioTxQueue` is one FIFO in arrival order, so the head of
//! line blocks when its flow lacks deficit (as in table 3.4).
//!
//! Counters (§5.1.2; `discipline_counters`):
//! * `total_rounds` — TotalRounds, "a period in which there is at least one queue to be served
//!   when the scheduler scans all the queues": a round starts when the dequeuing module visits
//!   a flow that it already visited in the current round, or visits one after the scheduler was
//!   empty (original: every ActiveList visit counts, an idle LC flow's reset included). In the
//!   modified variant the LC flow is served inside every round, so only BE services start
//!   rounds, unless no BE flow is backlogged (then an LC service that repeats starts one);
//! * `lc_service` — LCService, "how many times the LC queue is served": modified, the number
//!   of LC services (table 3.1's LC branch entered with the queue non-empty); original, where
//!   the transmit module serves LC packets, the number of LC service intervals (a packet sent
//!   from `PrioTxQueue` when the previous packet sent was not one, or after the scheduler
//!   emptied);
//! * `lc_backlog` — LCBacklog, "how many times the LC queue is still backlogged after
//!   exhausting the quantum in the current round": modified, LC services that end with the LC
//!   queue non-empty; original, LC ActiveList visits that find packets still in `PrioTxQueue`
//!   (table 3.3's backlog branch).
//!
//! Invariants: a flow with a non-empty queue is on its list (modified: `lc_list` /
//! `be_list`; original: `active_list`), except that a queue emptied by a push-out leaves lazily
//! when it reaches the head; modified: every deficit is zero while its flow is idle and below
//! the flow's largest packet after a service; original: an LC flow stays on the ActiveList
//! once seen and `priority` holds exactly one entry per queued LC packet.
//!
//! Guarantees (modified, one LC flow, Q_LC ≥ largest LC packet L, Q_BE ≥ largest BE packet
//! M): an LC packet arriving to an empty LC queue waits for at most the BE service in
//! progress, at most Q_BE + M − 1 bytes (the thesis's Q_BE/BNBW plus DRR's deficit carry);
//! Theorem 2, delay ≤ σ/ρ + (Q_LC + 3Q_BE)/BNBW for a (σ, ρ) LC flow with
//! ρ ≤ r_LC, holds with one BE flow and the departure of the last bit; with n BE flows each
//! BE flow may carry up to M − 1 bytes of deficit into the LC busy period, which the
//! thesis's two-flow DRR argument (Lemma 2) misses, and the bound becomes
//! σ/ρ + (Q_LC + 3Q_BE + (n − 1)(M − 1))/BNBW (tests: `theorem_2_*`,
//! `deficit_carry_breaks_theorem_2_with_many_best_effort_flows`). Complexity O(1) per packet
//! when every quantum is at least the largest packet (the original variant also visits idle LC
//! flows once per round).
//!
//! Choices where the paper is silent or the pseudo-code is loose:
//! * table 3.1 serves the LC list whenever it is non-empty; the alternation LC, BE, LC, … of
//!   the text (§3.1.2, Definition 4, table 3.5) is implemented;
//! * tables 3.2 and 3.4 append a BE flow to its list even when its queue emptied; here it
//!   leaves and rejoins on its next arrival with DC = 0, as in [`crate::disciplines::drr`];
//! * table 3.3 re-appends the LC flow only in the no-backlog branch; here it is always
//!   re-appended, and gets `DC += n·Q_LC` when backlogged (§3.1.2 "increases the quantum value,
//!   n·Q_LC, of the LC flow before serving it and all the other BE flows");
//! * n is the number of BE flows on the ActiveList when the LC flow is visited, at least 1 (so
//!   an LC flow alone still gets Q_LC);
//! * table 3.4 tests `DC_i > Size(p)`; `Size(p) ≤ DC_i` is used, as in every other deficit test
//!   of tables 3.1–3.4 and in DRR, so a packet of exactly the credit is sent;
//! * the initial turn is LC; a flow first seen at run time takes the flow defaults; quantum
//!   defaults to the scheduler's `quantum`, else 1500 bytes; `peek` advances the round exactly
//!   as the next dequeue would.

use std::collections::VecDeque;

use crate::config::{ConfigError, FlowParamTable, FlowParams, TableReader};
use crate::counters::{Counters, DropReason, Dropped};
use crate::discipline::{BuildContext, Discipline, DisciplineInfo, ParamInfo};
use crate::packet::{FlowId, Packet, MAX_FLOW_ID};
use crate::queues::{Admission, FlowQueues};
use crate::scheduler::Scheduler;
use crate::time::TimeNs;

/// Quantum used when neither the flow, the flow defaults nor the scheduler give one.
pub const DEFAULT_QUANTUM: u32 = 1500;

/// Which DRR++ the scheduler runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Variant {
    /// The thesis's modified DRR++ (tables 3.1–3.2): Q_LC before each BE flow.
    #[default]
    Modified,
    /// MacGregor & Shi's DRR++ (tables 3.3–3.4): n·Q_LC per round, LC gated at transmit time.
    Original,
}

/// Parameters of [`DrrPlusPlus`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DrrPlusPlusConfig {
    /// Quantum in bytes of flows whose own parameters give none.
    pub quantum: Option<u32>,
    /// `"modified"` (default) or `"original"`.
    pub variant: Variant,
}

/// Per-flow DRR++ state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DrrPlusPlusFlow {
    /// Q_i: Q_LC or Q_BE, bytes.
    pub quantum: u32,
    /// DC_i, bytes.
    pub deficit: u64,
    /// `IsLatencyCritical(i)`.
    pub latency_critical: bool,
    /// Whether the flow is on its list (modified: LCList / BestEffortList; original:
    /// ActiveList).
    pub active: bool,
    /// The §5.1.2 round in which the flow was last served (0: never).
    visited_round: u64,
}

/// A DRR++ flow's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrrPlusPlusFlowParams {
    /// Q_LC or Q_BE in bytes (key `quantum`).
    pub quantum: u32,
    /// `IsLatencyCritical(i)` (key `latency_critical`).
    pub latency_critical: bool,
}

impl FlowParams for DrrPlusPlusFlowParams {
    fn read(reader: &mut TableReader<'_>, inherited: &Self) -> Result<Self, ConfigError> {
        Ok(DrrPlusPlusFlowParams {
            quantum: reader.positive_u32("quantum")?.unwrap_or(inherited.quantum),
            latency_critical: reader
                .bool("latency_critical")?
                .unwrap_or(inherited.latency_critical),
        })
    }
}

/// Whose service is next in the modified variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Turn {
    LatencyCritical,
    BestEffort,
}

/// DRR++ scheduler (both variants).
#[derive(Clone, Debug)]
pub struct DrrPlusPlus {
    queues: FlowQueues,
    flows: Vec<Option<DrrPlusPlusFlow>>,
    table: FlowParamTable<DrrPlusPlusFlowParams>,
    variant: Variant,
    /// The head of the list being served has received its quantum (a service is under way).
    in_visit: bool,
    // Modified variant.
    lc_list: VecDeque<FlowId>,
    be_list: VecDeque<FlowId>,
    turn: Turn,
    /// LC services left in the current LC turn (0: the turn has not started).
    lc_turn_left: usize,
    // Original variant.
    active_list: VecDeque<FlowId>,
    priority: VecDeque<FlowId>,
    be_count: u64,
    last_sent_lc: bool,
    // §5.1.2 counters.
    total_rounds: u64,
    round_open: bool,
    lc_service: u64,
    lc_backlog: u64,
}

impl DrrPlusPlus {
    /// The state of `flow`, if seen.
    pub fn flow(&self, flow: FlowId) -> Option<&DrrPlusPlusFlow> {
        self.flows.get(flow as usize)?.as_ref()
    }

    /// The variant being run.
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// TotalRounds (§5.1.2).
    pub fn total_rounds(&self) -> u64 {
        self.total_rounds
    }

    /// LCService (§5.1.2).
    pub fn lc_service(&self) -> u64 {
        self.lc_service
    }

    /// LCBacklog (§5.1.2).
    pub fn lc_backlog(&self) -> u64 {
        self.lc_backlog
    }

    fn state(&mut self, flow: FlowId) -> &mut DrrPlusPlusFlow {
        self.flows[flow as usize]
            .as_mut()
            .expect("flows that queued a packet have state")
    }

    fn ensure_state(&mut self, flow: FlowId) {
        let index = flow as usize;
        if index >= self.flows.len() {
            self.flows.resize(index + 1, None);
        }
        if self.flows[index].is_none() {
            let params = *self.table.get(flow);
            self.flows[index] = Some(DrrPlusPlusFlow {
                quantum: params.quantum,
                latency_critical: params.latency_critical,
                ..DrrPlusPlusFlow::default()
            });
        }
    }

    /// Records a service of `flow` for TotalRounds; `repeats_end_round` tells whether serving
    /// it again within a round ends that round.
    fn mark_round(&mut self, flow: FlowId, repeats_end_round: bool) {
        let (open, round) = (self.round_open, self.total_rounds);
        let state = self.state(flow);
        if !open || (repeats_end_round && state.visited_round == round) {
            self.total_rounds += 1;
            self.round_open = true;
        }
        let round = self.total_rounds;
        self.state(flow).visited_round = round;
    }

    fn backlogged(&self) -> bool {
        self.queues.counters.backlog().packets > 0
    }

    // ---- Modified DRR++ (tables 3.1, 3.2) ----

    /// Ends the LC service of the head of `lc_list` (already removed or rotated).
    fn end_lc_service(&mut self) {
        self.in_visit = false;
        self.lc_turn_left -= 1;
        if self.lc_turn_left == 0 {
            self.turn = Turn::BestEffort;
        }
    }

    /// The head of `lc_list` emptied: DC_i = 0, leave the LCList.
    fn lc_leaves(&mut self, flow: FlowId) {
        let state = self.state(flow);
        state.deficit = 0;
        state.active = false;
        self.lc_list.pop_front();
        self.end_lc_service();
    }

    /// The head of `be_list` emptied: DC_i = 0, leave the BestEffortList; the LC turn is next.
    fn be_leaves(&mut self, flow: FlowId) {
        let state = self.state(flow);
        state.deficit = 0;
        state.active = false;
        self.be_list.pop_front();
        self.in_visit = false;
        self.turn = Turn::LatencyCritical;
    }

    /// Advances the alternation LC, BE, LC, … until a flow may send its head packet.
    fn select_modified(&mut self) -> Option<FlowId> {
        if !self.backlogged() {
            return None;
        }
        loop {
            match self.turn {
                Turn::LatencyCritical => {
                    if !self.in_visit {
                        if self.lc_turn_left == 0 {
                            if self.lc_list.is_empty() {
                                self.turn = Turn::BestEffort;
                                continue;
                            }
                            self.lc_turn_left = self.lc_list.len();
                        }
                        let flow = self.lc_list[0];
                        if self.queues.is_empty(flow) {
                            self.lc_leaves(flow); // emptied by a push-out
                            continue;
                        }
                        // DC_i = quantum(i) + DC_i
                        let alone = self.be_list.is_empty();
                        self.mark_round(flow, alone);
                        let state = self.state(flow);
                        state.deficit += state.quantum as u64;
                        self.in_visit = true;
                        self.lc_service += 1;
                    }
                    let flow = self.lc_list[0];
                    match self.queues.head(flow).map(|p| p.size as u64) {
                        None => self.lc_leaves(flow),
                        Some(size) if size <= self.state(flow).deficit => return Some(flow),
                        Some(_) => {
                            // Still backlogged after exhausting the quantum.
                            self.lc_backlog += 1;
                            self.lc_list.rotate_left(1);
                            self.end_lc_service();
                        }
                    }
                }
                Turn::BestEffort => {
                    let Some(&flow) = self.be_list.front() else {
                        if self.lc_list.is_empty() {
                            return None; // unreachable while the invariants hold
                        }
                        self.turn = Turn::LatencyCritical;
                        continue;
                    };
                    if !self.in_visit {
                        if self.queues.is_empty(flow) {
                            // Emptied by a push-out: drop it, the BE turn goes to the next one.
                            let state = self.state(flow);
                            state.deficit = 0;
                            state.active = false;
                            self.be_list.pop_front();
                            continue;
                        }
                        self.mark_round(flow, true);
                        let state = self.state(flow);
                        state.deficit += state.quantum as u64;
                        self.in_visit = true;
                    }
                    match self.queues.head(flow).map(|p| p.size as u64) {
                        None => self.be_leaves(flow),
                        Some(size) if size <= self.state(flow).deficit => return Some(flow),
                        Some(_) => {
                            self.be_list.rotate_left(1);
                            self.in_visit = false;
                            self.turn = Turn::LatencyCritical;
                        }
                    }
                }
            }
        }
    }

    fn dequeue_modified(&mut self) -> Option<Packet> {
        let flow = self.select_modified()?;
        let packet = self.queues.pop_sent(flow).expect("selected flow is backlogged");
        let state = self.state(flow);
        state.deficit -= packet.size as u64;
        let latency_critical = state.latency_critical;
        if self.queues.is_empty(flow) {
            // No backlog: DC_i = 0.
            if latency_critical {
                self.lc_leaves(flow);
            } else {
                self.be_leaves(flow);
            }
        }
        Some(packet)
    }

    // ---- Original DRR++ (tables 3.3, 3.4) ----

    /// The head of `active_list`, a BE flow, emptied: DC_i = 0, leave the ActiveList.
    fn original_be_leaves(&mut self, flow: FlowId) {
        let state = self.state(flow);
        state.deficit = 0;
        state.active = false;
        self.active_list.pop_front();
        self.be_count -= 1;
        self.in_visit = false;
    }

    /// Runs the transmit module and, when both transmit queues are empty, the dequeuing
    /// module, until a packet can be sent.
    fn select_original(&mut self) -> Option<FlowId> {
        if !self.backlogged() {
            return None;
        }
        loop {
            // Transmit module: PrioTxQueue first, if DC_i covers its head.
            if let Some(&flow) = self.priority.front() {
                let size = self
                    .queues
                    .head(flow)
                    .expect("priority entries match queued packets")
                    .size;
                if size as u64 <= self.state(flow).deficit {
                    return Some(flow);
                }
            }
            // Then TxQueue: the BE service under way.
            if self.in_visit {
                let flow = self.active_list[0];
                match self.queues.head(flow).map(|p| p.size as u64) {
                    None => self.original_be_leaves(flow),
                    Some(size) if size <= self.state(flow).deficit => return Some(flow),
                    Some(_) => {
                        self.active_list.rotate_left(1);
                        self.in_visit = false;
                    }
                }
                continue;
            }
            // Dequeuing module: the next ActiveList entry.
            let flow = *self.active_list.front()?;
            if self.state(flow).latency_critical {
                self.mark_round(flow, true);
                let n = self.be_count.max(1);
                let backlogged = !self.queues.is_empty(flow);
                let state = self.state(flow);
                let credit = n * state.quantum as u64;
                if backlogged {
                    state.deficit += credit;
                    self.lc_backlog += 1;
                } else {
                    // No backlog: reset quantum.
                    state.deficit = credit;
                }
                self.active_list.rotate_left(1);
            } else if self.queues.is_empty(flow) {
                self.original_be_leaves(flow); // emptied by a push-out
            } else {
                self.mark_round(flow, true);
                let state = self.state(flow);
                state.deficit += state.quantum as u64;
                self.in_visit = true;
            }
        }
    }

    fn dequeue_original(&mut self) -> Option<Packet> {
        let flow = self.select_original()?;
        let packet = self.queues.pop_sent(flow).expect("selected flow is backlogged");
        let state = self.state(flow);
        state.deficit -= packet.size as u64;
        if state.latency_critical {
            self.priority.pop_front();
            if !self.last_sent_lc {
                self.lc_service += 1;
            }
            self.last_sent_lc = true;
        } else {
            self.last_sent_lc = false;
            if self.queues.is_empty(flow) {
                self.original_be_leaves(flow);
            }
        }
        Some(packet)
    }
}

impl Discipline for DrrPlusPlus {
    type Config = DrrPlusPlusConfig;
    const INFO: DisciplineInfo = DisciplineInfo {
        id: "drr_plusplus",
        name: "DRR++ (deficit-regulated latency-critical priority)",
        citation: "Zhang, MSc thesis, U. Alberta 2001, tables 3.1-3.5; MacGregor & Shi, IEEE ICON 2000",
        summary: "Latency-critical flows get a quantum before each best-effort flow (modified) or n quanta per round (original) and priority transmission within that deficit; bursts stay backlogged, nothing is demoted.",
        scheduler_params: &[
            ParamInfo {
                name: "quantum",
                unit: "bytes",
                default: "1500",
                description: "quantum of flows that set none",
            },
            ParamInfo {
                name: "variant",
                unit: "\"modified\" | \"original\"",
                default: "\"modified\"",
                description: "the thesis's modified DRR++ (tables 3.1-3.2) or MacGregor & Shi's (tables 3.3-3.4)",
            },
        ],
        flow_params: &[
            ParamInfo {
                name: "quantum",
                unit: "bytes",
                default: "scheduler quantum",
                description: "Q_LC or Q_BE: bytes added to the flow's deficit per service",
            },
            ParamInfo {
                name: "latency_critical",
                unit: "bool",
                default: "false",
                description: "LC flow: served before each BE flow, from the priority transmit queue",
            },
        ],
        per_flow_queues: true,
    };

    fn read_config(reader: &mut TableReader<'_>) -> Result<DrrPlusPlusConfig, ConfigError> {
        let quantum = reader.positive_u32("quantum")?;
        let variant = match reader.string("variant")? {
            None | Some("modified") => Variant::Modified,
            Some("original") => Variant::Original,
            Some(_) => return Err(reader.error("variant", "must be \"modified\" or \"original\"")),
        };
        Ok(DrrPlusPlusConfig { quantum, variant })
    }

    fn build(config: DrrPlusPlusConfig, context: &BuildContext<'_>) -> Result<DrrPlusPlus, ConfigError> {
        Ok(DrrPlusPlus {
            queues: FlowQueues::new(context.limit),
            flows: Vec::new(),
            table: context.flows.parse(
                &Self::INFO,
                &DrrPlusPlusFlowParams {
                    quantum: config.quantum.unwrap_or(DEFAULT_QUANTUM),
                    latency_critical: false,
                },
            )?,
            variant: config.variant,
            in_visit: false,
            lc_list: VecDeque::new(),
            be_list: VecDeque::new(),
            turn: Turn::LatencyCritical,
            lc_turn_left: 0,
            active_list: VecDeque::new(),
            priority: VecDeque::new(),
            be_count: 0,
            last_sent_lc: false,
            total_rounds: 0,
            round_open: false,
            lc_service: 0,
            lc_backlog: 0,
        })
    }
}

impl Scheduler for DrrPlusPlus {
    fn id(&self) -> &'static str {
        Self::INFO.id
    }

    fn enqueue(&mut self, packet: Packet, _now: TimeNs, drops: &mut Vec<Dropped>) {
        let flow = packet.flow;
        if flow <= MAX_FLOW_ID {
            self.ensure_state(flow);
        }
        let first_drop = drops.len();
        let flows = &self.flows;
        // Buffer stealing weighs queue lengths by 1/quantum, as in DRR.
        let admitted = self.queues.admit(
            packet,
            |f| {
                flows
                    .get(f as usize)
                    .and_then(|s| s.map(|s| s.quantum as u64))
                    .unwrap_or(1)
            },
            drops,
        );
        if self.variant == Variant::Original {
            // A pushed-out LC packet is its flow's tail: drop the flow's last PrioTxQueue entry.
            for dropped in &drops[first_drop..] {
                let victim = dropped.packet.flow;
                if dropped.reason == DropReason::PushedOut
                    && self.flow(victim).is_some_and(|s| s.latency_critical)
                {
                    if let Some(index) = self.priority.iter().rposition(|&f| f == victim) {
                        self.priority.remove(index);
                    }
                }
            }
        }
        if admitted != Admission::Queued {
            return;
        }
        let variant = self.variant;
        let state = self.state(flow);
        let (was_active, latency_critical) = (state.active, state.latency_critical);
        if !was_active {
            // AppendToActiveList(i); DC_i = 0
            state.active = true;
            state.deficit = 0;
        }
        match variant {
            Variant::Modified => {
                if !was_active {
                    if latency_critical {
                        self.lc_list.push_back(flow);
                    } else {
                        self.be_list.push_back(flow);
                    }
                }
            }
            Variant::Original => {
                if latency_critical {
                    // Move directly to PrioTxQueue.
                    self.priority.push_back(flow);
                }
                if !was_active {
                    self.active_list.push_back(flow);
                    if !latency_critical {
                        self.be_count += 1;
                    }
                }
            }
        }
    }

    fn dequeue(&mut self, _now: TimeNs, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        let packet = match self.variant {
            Variant::Modified => self.dequeue_modified(),
            Variant::Original => self.dequeue_original(),
        };
        if !self.backlogged() {
            // Idle: the next service starts a new round and a new LC service interval.
            self.round_open = false;
            self.last_sent_lc = false;
        }
        packet
    }

    fn peek(&mut self, _now: TimeNs) -> Option<Packet> {
        let flow = match self.variant {
            Variant::Modified => self.select_modified()?,
            Variant::Original => self.select_original()?,
        };
        self.queues.head(flow).copied()
    }

    fn counters(&self) -> &Counters {
        &self.queues.counters
    }

    /// Never idles the link while a packet is queued (see the module header for why the
    /// thesis nevertheless calls DRR++ non-work-conserving).
    fn is_work_conserving(&self) -> bool {
        true
    }

    /// `None`: nothing is ever held back for a later time.
    fn next_wakeup(&self, _now: TimeNs) -> Option<TimeNs> {
        None
    }

    fn discipline_counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("total_rounds", self.total_rounds),
            ("lc_service", self.lc_service),
            ("lc_backlog", self.lc_backlog),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{BufferLimit, FlowTable};
    use crate::link::{run_link, Outcome};
    use crate::testkit;
    use crate::time::Rate;
    use proptest::prelude::*;

    const US: TimeNs = 1_000;
    const MS: TimeNs = 1_000_000;

    /// `lc` flows are latency critical; `quanta` gives per-flow quanta (default 500).
    fn drr_plusplus(
        variant: Variant,
        lc: &[FlowId],
        quanta: &[(FlowId, u32)],
        limit: BufferLimit,
    ) -> DrrPlusPlus {
        let mut flows: Vec<FlowId> = lc.iter().chain(quanta.iter().map(|q| &q.0)).copied().collect();
        flows.sort_unstable();
        flows.dedup();
        let texts: Vec<(FlowId, String)> = flows
            .into_iter()
            .map(|flow| {
                let mut text = format!("latency_critical = {}\n", lc.contains(&flow));
                if let Some(q) = quanta.iter().find(|q| q.0 == flow) {
                    text += &format!("quantum = {}\n", q.1);
                }
                (flow, text)
            })
            .collect();
        let params = texts.iter().map(|(flow, text)| (*flow, text.as_str()));
        let config = DrrPlusPlusConfig {
            quantum: Some(500),
            variant,
        };
        testkit::build_with(config, params, limit)
    }

    fn drain(s: &mut DrrPlusPlus) -> Vec<u64> {
        let mut drops = Vec::new();
        std::iter::from_fn(|| s.dequeue(0, &mut drops).map(|p| p.id)).collect()
    }

    /// LC flow 0 (Q_LC = 500) with six 300 B packets (ids 0–5); BE_1 = flow 1 (Q_BE = 1000)
    /// with six 400 B packets (ids 10–15); BE_2 = flow 2 (Q_BE = 1000) with four 600 B
    /// packets (ids 20–23); all queued at 0 in that order.
    fn table_3_example(variant: Variant) -> DrrPlusPlus {
        let mut s = drr_plusplus(
            variant,
            &[0],
            &[(0, 500), (1, 1000), (2, 1000)],
            BufferLimit::UNLIMITED,
        );
        let mut drops = Vec::new();
        for (flow, first, count, size) in [(0, 0, 6, 300), (1, 10, 6, 400), (2, 20, 4, 600)] {
            for id in first..first + count {
                s.enqueue(Packet::new(id, flow, size, 0), 0, &mut drops);
            }
        }
        s
    }

    /// Tables 3.1–3.2 traced by hand (DC after each service in brackets):
    /// LC +500: 0 [200, backlogged] · BE_1 +1000: 10 11 [200] · LC +500: 1 2 [100, backlogged] ·
    /// BE_2 +1000: 20 [400] · LC +500: 3 4 [0, backlogged] · BE_1 (round 2) +1000: 12 13 14 [0] ·
    /// LC +500: 5 [emptied, 0] · BE_2 +1000: 21 22 [200] · BE_1 (round 3): 15 · BE_2: 23.
    /// LCService = 4 LC services, LCBacklog = 3 of them ended backlogged, TotalRounds = 3.
    #[test]
    fn modified_trace_of_tables_3_1_and_3_2() {
        let mut s = table_3_example(Variant::Modified);
        assert_eq!(
            drain(&mut s),
            vec![0, 10, 11, 1, 2, 20, 3, 4, 12, 13, 14, 5, 21, 22, 15, 23]
        );
        assert_eq!(
            s.discipline_counters(),
            vec![("total_rounds", 3), ("lc_service", 4), ("lc_backlog", 3)]
        );
        assert_eq!(s.flow(0).unwrap().deficit, 0);
        assert!(!s.flow(1).unwrap().active);
    }

    /// Tables 3.3–3.4 on the same packets; ActiveList [LC, BE_1, BE_2], n = 2, so the LC flow
    /// gets n·Q_LC = 1000 per round: LC +1000 [backlogged]: 0 1 2 [100] · BE_1 +1000: 10 11
    /// [200] · BE_2 +1000: 20 [400] · LC (round 2) 100+1000 [backlogged]: 3 4 5 [200] · BE_1:
    /// 12 13 14 [0] · BE_2: 21 22 [200] · LC (round 3, idle): DC = 1000 · BE_1: 15 · BE_2: 23.
    /// The LC flow is served in 2 intervals; 2 of its 3 visits found a backlog.
    #[test]
    fn original_trace_of_tables_3_3_and_3_4() {
        let mut s = table_3_example(Variant::Original);
        assert_eq!(
            drain(&mut s),
            vec![0, 1, 2, 10, 11, 20, 3, 4, 5, 12, 13, 14, 21, 22, 15, 23]
        );
        assert_eq!(
            s.discipline_counters(),
            vec![("total_rounds", 3), ("lc_service", 2), ("lc_backlog", 2)]
        );
        assert_eq!(
            s.flow(0).unwrap().deficit,
            1000,
            "idle LC flow: DC reset to n·Q_LC"
        );
        assert!(s.flow(0).unwrap().active, "the LC flow stays on the ActiveList");
    }

    /// Table 3.5's difference on a timed example (1 byte/µs link): Q_LC = 1000, one BE flow
    /// with Q_BE = 2000 and four 500 B packets queued at 0 with a 300 B LC packet; a second
    /// 300 B LC packet arrives at 400 µs, during the BE service. The original sends it at the
    /// next packet boundary (800 µs) from the priority transmit queue (DC_LC = 700 left); the
    /// modified waits for the whole BE service to end (2300 µs).
    #[test]
    fn original_lc_packets_overtake_a_best_effort_service() {
        let trace = [
            Packet::new(0, 0, 300, 0),
            Packet::new(1, 1, 500, 0),
            Packet::new(2, 1, 500, 0),
            Packet::new(3, 1, 500, 0),
            Packet::new(4, 1, 500, 0),
            Packet::new(5, 0, 300, 400 * US),
        ];
        for (variant, order, start) in [
            (Variant::Original, vec![0, 1, 5, 2, 3, 4], 800 * US),
            (Variant::Modified, vec![0, 1, 2, 3, 4, 5], 2300 * US),
        ] {
            let mut s = drr_plusplus(variant, &[0], &[(0, 1000), (1, 2000)], BufferLimit::UNLIMITED);
            let run = run_link(&mut s, testkit::link(), &trace).unwrap();
            let ids: Vec<u64> = run.send_order.iter().map(|(i, _)| trace[*i].id).collect();
            assert_eq!(ids, order, "{variant:?}");
            assert_eq!(
                run.outcomes[5],
                Some(Outcome::Sent {
                    start,
                    end: start + 300 * US
                })
            );
        }
    }

    /// No demotion: a 20-packet LC burst (10 000 B against Q_LC = 500) stays backlogged and is
    /// served one quantum per BE service — LC, BE_1, LC, BE_2, … — and the LC flow keeps its
    /// class: a lone LC packet after the burst waits for one BE service only.
    #[test]
    fn bursts_stay_backlogged_and_are_never_demoted() {
        let mut s = drr_plusplus(Variant::Modified, &[0], &[], BufferLimit::UNLIMITED);
        let mut trace = Vec::new();
        for k in 0..20 {
            trace.push(Packet::new(k, 0, 500, 0));
        }
        for k in 0..80 {
            trace.push(Packet::new(100 + k, 1 + (k as FlowId % 2), 500, 0));
        }
        trace.push(Packet::new(99, 0, 200, 30 * MS + 250 * US));
        let run = run_link(&mut s, testkit::link(), &trace).unwrap();
        let flows: Vec<FlowId> = run.send_order.iter().map(|(i, _)| trace[*i].flow).collect();
        let expected: Vec<FlowId> = (0..20).flat_map(|k| [0, 1 + k % 2]).collect();
        assert_eq!(flows[..40], expected[..]);
        assert_eq!(s.lc_service(), 21);
        assert_eq!(s.lc_backlog(), 19, "every LC service but the last of the burst");
        // At 30.25 ms the link is 250 µs into a 500 B BE packet (BE only since 20 ms): the lone
        // LC packet goes next, at 30.5 ms.
        assert_eq!(
            run.outcomes[100],
            Some(Outcome::Sent {
                start: 30_500 * US,
                end: 30_700 * US
            })
        );
        assert!(s.flow(0).unwrap().latency_critical);
    }

    #[test]
    fn variant_is_read_and_checked() {
        let flows = FlowTable::default();
        let build = |text: &str| {
            let table: toml::Table = text.parse().unwrap();
            crate::build_scheduler(&table, "scheduler", &flows, testkit::link())
        };
        let s = build("kind = \"drr_plusplus\"").unwrap();
        assert_eq!(s.id(), "drr_plusplus");
        assert!(s.is_work_conserving());
        assert_eq!(s.next_wakeup(0), None);
        let crate::AnyScheduler::DrrPlusPlus(s) =
            build("kind = \"drr_plusplus\"\nvariant = \"original\"").unwrap()
        else {
            panic!("wrong discipline");
        };
        assert_eq!(s.variant(), Variant::Original);
        let e = build("kind = \"drr_plusplus\"\nvariant = \"orig\"").unwrap_err();
        assert_eq!(
            e.to_string(),
            "scheduler.variant = \"orig\": must be \"modified\" or \"original\""
        );
    }

    /// Links whose byte time is a whole number of nanoseconds, so delays are exact.
    const RATES_MBIT: [u64; 6] = [1, 2, 4, 8, 10, 16];

    /// A (σ, ρ) token bucket (σ bytes, ρ bytes/s, full at 0) shaping `wanted` (gap, size)
    /// requests: each packet leaves at the later of its requested time and the time the
    /// bucket holds its size. Tokens are kept in byte·ns/s units (bytes × 10⁹) to stay exact.
    fn shaped(flow: FlowId, start: TimeNs, sigma: u64, rho: u64, wanted: &[(TimeNs, u32)]) -> Vec<Packet> {
        let cap = sigma as u128 * 1_000_000_000;
        let (mut tokens, mut time) = (cap, start);
        let mut out = Vec::new();
        for &(gap, size) in wanted {
            let need = size as u128 * 1_000_000_000;
            let mut t = time + gap;
            let mut have = (tokens + rho as u128 * (t - time) as u128).min(cap);
            if have < need {
                let wait = (need - have).div_ceil(rho as u128) as TimeNs;
                t += wait;
                have = (have + rho as u128 * wait as u128).min(cap);
            }
            tokens = have - need;
            time = t;
            out.push(Packet::new(0, flow, size, t));
        }
        out
    }

    #[derive(Clone, Debug)]
    struct Theorem2Case {
        rate: Rate,
        q_lc: u32,
        q_be: u32,
        sigma: u64,
        rho: u64,
        trace: Vec<Packet>,
        largest_be: u32,
        be_flows: u64,
    }

    /// One LC flow (0) shaped by (σ, ρ) with ρ ≤ r_LC = BNBW·Q_LC/(Q_LC + Q_BE) (floor) and
    /// packets of at most min(σ, Q_LC) bytes; `be_flows` BE flows (1..) each with 120 packets of
    /// 40..=Q_BE bytes queued at 0. LC arrivals stop once the BE backlog could have drained.
    fn theorem_2_case(be_flows: std::ops::RangeInclusive<u64>) -> impl Strategy<Value = Theorem2Case> {
        (0..RATES_MBIT.len(), 200u32..=2000, 200u32..=2000, be_flows)
            .prop_flat_map(|(rate, q_lc, q_be, n)| {
                let rate = Rate::from_bits_per_second(RATES_MBIT[rate] * 1_000_000).unwrap();
                let bytes_per_second = rate.bits_per_second() / 8;
                let r_lc = bytes_per_second * q_lc as u64 / (q_lc + q_be) as u64;
                // Biased towards the worst cases: ρ = r_LC, σ = one LC quantum, full-size
                // packets, BE packets of 40 B next to packets near Q_BE (large deficit carry).
                let be_size = prop_oneof![40u32..=q_be, Just(40u32), (q_be / 2).max(40)..=q_be];
                (
                    Just((rate, q_lc, q_be, n)),
                    prop_oneof![Just(q_lc as u64), 40u64..=4 * q_lc as u64],
                    prop_oneof![Just(r_lc), r_lc / 2..=r_lc, r_lc / 20..=r_lc],
                    proptest::collection::vec(proptest::collection::vec(be_size, 120), n as usize),
                    proptest::collection::vec(
                        (
                            prop_oneof![2 => Just(0u64), 1 => 0u64..20 * MS],
                            prop_oneof![Just(u32::MAX), 0u32..=2000],
                        ),
                        1..80,
                    ),
                    0u64..30 * MS,
                )
            })
            .prop_map(|((rate, q_lc, q_be, n), sigma, rho, be, lc, start)| {
                let largest_lc = (sigma as u32).min(q_lc);
                let wanted: Vec<(TimeNs, u32)> = lc
                    .iter()
                    .map(|&(gap, size)| {
                        (
                            gap,
                            if size == u32::MAX {
                                largest_lc
                            } else {
                                40 + size % (largest_lc - 39)
                            },
                        )
                    })
                    .collect();
                let ns_per_byte = rate.transmission_time(1);
                let be_bytes: u64 = be.iter().flatten().map(|&s| s as u64).sum();
                let horizon = be_bytes * ns_per_byte;
                let mut trace: Vec<Packet> = shaped(0, start, sigma, rho, &wanted)
                    .into_iter()
                    .filter(|p| p.arrival < horizon)
                    .collect();
                for (k, sizes) in be.iter().enumerate() {
                    trace.extend(sizes.iter().map(|&size| Packet::new(0, 1 + k as FlowId, size, 0)));
                }
                trace.sort_by_key(|p| p.arrival);
                let largest_be = be.iter().flatten().copied().max().unwrap_or(0);
                Theorem2Case {
                    rate,
                    q_lc,
                    q_be,
                    sigma,
                    rho,
                    trace,
                    largest_be,
                    be_flows: n,
                }
            })
    }

    /// Checks every LC packet's delay (arrival to departure of its last bit) against
    /// σ/ρ + (Q_LC + 3·Q_BE + extra)/BNBW, exactly: D·ρ·BNBW ≤ σ·10⁹·BNBW + X·10⁹·ρ.
    fn check_theorem_2(case: &Theorem2Case, extra: u64) -> Result<(), TestCaseError> {
        let be_quanta: Vec<(FlowId, u32)> = (1..=case.be_flows as FlowId).map(|f| (f, case.q_be)).collect();
        let mut quanta = vec![(0, case.q_lc)];
        quanta.extend(be_quanta);
        let mut s = drr_plusplus(Variant::Modified, &[0], &quanta, BufferLimit::UNLIMITED);
        let run = run_link(&mut s, case.rate, &case.trace).unwrap();
        let bnbw = case.rate.bits_per_second() as u128 / 8;
        let x = case.q_lc as u128 + 3 * case.q_be as u128 + extra as u128;
        let bound = |delay: u128| {
            delay * case.rho as u128 * bnbw
                <= case.sigma as u128 * 1_000_000_000 * bnbw + x * 1_000_000_000 * case.rho as u128
        };
        for (index, packet) in case.trace.iter().enumerate().filter(|(_, p)| p.flow == 0) {
            let Some(Outcome::Sent { end, .. }) = run.outcomes[index] else {
                return Err(TestCaseError::fail(format!("LC packet {index} not sent")));
            };
            let delay = (end - packet.arrival) as u128;
            prop_assert!(
                bound(delay),
                "LC packet {} (arrived {} ns) delayed {} ns > σ/ρ + {}/BNBW (σ {} B, ρ {} B/s, BNBW {} B/s)",
                index,
                packet.arrival,
                delay,
                x,
                case.sigma,
                case.rho,
                bnbw
            );
        }
        Ok(())
    }

    /// LC bursts of at most Q_LC bytes, all packets of a burst arriving together, bursts far
    /// enough apart that the previous one has left; random BE flows.
    fn one_quantum_bursts() -> impl Strategy<Value = (u32, u32, u64, Vec<Packet>)> {
        (200u32..=2000, 200u32..=2000, 1u64..=4)
            .prop_flat_map(|(q_lc, q_be, n)| {
                (
                    Just((q_lc, q_be, n)),
                    proptest::collection::vec(proptest::collection::vec(40u32..=q_lc, 1..=4), 1..30),
                    proptest::collection::vec(
                        (0..n as FlowId, 40u32..=q_be, 0u64..(q_be as u64) * US),
                        0..600,
                    ),
                )
            })
            .prop_map(|((q_lc, q_be, n), bursts, be)| {
                let mut trace = Vec::new();
                let mut time = 0;
                for burst in bursts {
                    // Keep each burst within Q_LC bytes.
                    let mut total = 0;
                    for size in burst {
                        if total + size > q_lc {
                            break;
                        }
                        total += size;
                        trace.push(Packet::new(0, 0, size, time));
                    }
                    time += (2 * q_be as u64 + q_lc as u64) * US;
                }
                let mut be_time = 0;
                for (flow, size, gap) in be {
                    be_time += gap;
                    trace.push(Packet::new(0, 1 + flow, size, be_time));
                }
                trace.sort_by_key(|p| p.arrival);
                (q_lc, q_be, n, trace)
            })
    }

    proptest! {
        /// Thesis Theorem 2 exactly as stated, with one BE flow: every LC packet departs
        /// (last bit) within σ/ρ + (Q_LC + 3·Q_BE)/BNBW of its arrival.
        #[test]
        fn theorem_2_with_one_best_effort_flow(case in theorem_2_case(1..=1)) {
            check_theorem_2(&case, 0)?;
        }

        /// Theorem 2 with 1–4 BE flows, each of which may bring up to M − 1 bytes of deficit
        /// into the LC busy period: σ/ρ + (Q_LC + 3·Q_BE + (n − 1)(M − 1))/BNBW.
        #[test]
        fn theorem_2_with_deficit_carry_of_many_best_effort_flows(case in theorem_2_case(1..=4)) {
            let extra = (case.be_flows - 1) * (case.largest_be as u64 - 1);
            check_theorem_2(&case, extra)?;
        }

        /// An LC flow that sends at most Q_LC bytes per interval (its bursts find the LC queue
        /// empty) waits for at most one BE service: departure ≤ arrival + (Q_BE + M − 1 +
        /// LC bytes of the burst up to the packet)/BNBW, M the largest BE packet.
        #[test]
        fn one_quantum_per_interval_waits_for_one_best_effort_service((q_lc, q_be, n, trace) in one_quantum_bursts()) {
            let mut quanta: Vec<(FlowId, u32)> = (1..=n as FlowId).map(|f| (f, q_be)).collect();
            quanta.push((0, q_lc));
            let mut s = drr_plusplus(Variant::Modified, &[0], &quanta, BufferLimit::UNLIMITED);
            let run = testkit::check_invariants(&mut s, &trace, true)?;
            let largest_be = trace.iter().filter(|p| p.flow != 0).map(|p| p.size as u64).max().unwrap_or(1);
            let mut burst_bytes = 0;
            let mut burst_time = None;
            for (index, p) in trace.iter().enumerate().filter(|(_, p)| p.flow == 0) {
                if burst_time != Some(p.arrival) {
                    burst_time = Some(p.arrival);
                    burst_bytes = 0;
                }
                burst_bytes += p.size as u64;
                let Some(Outcome::Sent { end, .. }) = run.outcomes[index] else { unreachable!() };
                let bound = (q_be as u64 + largest_be - 1 + burst_bytes) * US;
                prop_assert!(end - p.arrival <= bound, "LC packet {} delayed {} ns > {} ns", index, end - p.arrival, bound);
            }
        }

        #[test]
        fn invariants(trace in testkit::arb_trace(6, 300), lqd in proptest::bool::ANY, original in proptest::bool::ANY) {
            let limit = testkit::byte_limit(8000, lqd);
            let variant = if original { Variant::Original } else { Variant::Modified };
            // Two LC flows (0, 3) with small and large quanta; BE quanta below and above the
            // largest packet.
            let mut s = drr_plusplus(variant, &[0, 3], &[(0, 300), (1, 1500), (2, 4000), (3, 2000), (4, 100)], limit);
            let run = testkit::check_invariants(&mut s, &trace, true)?;
            // A round is counted whenever anything is sent.
            prop_assert_eq!(s.total_rounds() == 0, run.send_order.is_empty());
            if variant == Variant::Modified {
                // LCBacklog counts LC services that ended backlogged.
                prop_assert!(s.lc_backlog() <= s.lc_service());
            }
        }
    }

    /// The thesis's Lemma 2 treats "one BE service" as one DRR flow of quantum Q_BE, but each
    /// of the n BE flows keeps its own deficit. Eight BE flows (Q_BE = 1000) each first send
    /// 40 B, keeping DC = 960 with a 1000 B head; from 320 µs an LC flow sends 1000 B every
    /// 2 ms (σ = 1000 B, ρ = 500 000 B/s = r_LC, Q_LC = 1000) on a 1 byte/µs link. Each of
    /// the next eight BE services sends 1960 B, so the k-th LC packet waits 1000 + 960(k − 1)
    /// µs, up to 8680 µs, beyond Theorem 2's σ/ρ + (Q_LC + 3Q_BE)/BNBW = 2 ms + 4 ms, and
    /// within the bound with the carry term, 6 ms + 7 × 999 µs = 12 993 µs.
    #[test]
    fn deficit_carry_breaks_theorem_2_with_many_best_effort_flows() {
        let mut trace = Vec::new();
        for flow in 1..=8 {
            trace.push(Packet::new(0, flow, 40, 0));
            trace.push(Packet::new(0, flow, 1000, 0));
            trace.push(Packet::new(0, flow, 960, 0));
            for _ in 0..6 {
                trace.push(Packet::new(0, flow, 1000, 0));
            }
        }
        for k in 0..12 {
            trace.push(Packet::new(0, 0, 1000, 320 * US + 2 * MS * k));
        }
        trace.sort_by_key(|p| p.arrival);
        let quanta: Vec<(FlowId, u32)> = (0..=8).map(|f| (f, 1000)).collect();
        let mut s = drr_plusplus(Variant::Modified, &[0], &quanta, BufferLimit::UNLIMITED);
        let run = run_link(&mut s, testkit::link(), &trace).unwrap();
        let delays: Vec<TimeNs> = trace
            .iter()
            .enumerate()
            .filter(|(_, p)| p.flow == 0)
            .map(|(i, p)| match run.outcomes[i] {
                Some(Outcome::Sent { end, .. }) => end - p.arrival,
                other => panic!("{other:?}"),
            })
            .collect();
        let expected: Vec<TimeNs> = (0..12).map(|k: u64| (1000 + 960 * k.min(8)) * US).collect();
        assert_eq!(delays, expected);
        let worst = *delays.iter().max().unwrap();
        assert!(worst > 6 * MS, "Theorem 2's bound is exceeded");
        assert!(
            worst <= 6 * MS + 7 * 999 * US,
            "the bound with the carry term holds"
        );
    }
}
