//! DRR+ (`drr_plus`): Deficit Round Robin with a priority queue for latency-critical flows that
//! keep their contract, and demotion to best effort, for good, on the first violation.
//!
//! M. Shreedhar and G. Varghese, "Efficient Fair Queueing Using Deficit Round Robin",
//! IEEE/ACM Transactions on Networking 4(3), 1996 (DRR+, latency-critical flows), as described
//! and measured in Chong Zhang, "A Measurement Study on Scheduling Latency-Critical Traffic",
//! MSc thesis, University of Alberta, 2001 (seed 000): §2.5.4 (the policy), §4.4.4 (the formal
//! contract), §3.4 eq. (3.3) (latency once demoted) and §5.1 (measurements).
//!
//! Thesis name → code:
//! * best-effort transmit queue + ActiveList → `active` ([`ActiveList`]), as in
//!   [`crate::disciplines::drr`]; Q_i → [`DeficitFlow::quantum`], DC_i →
//!   [`DeficitFlow::deficit`] (Q_LC, a latency-critical flow's `quantum`, is used once it is
//!   demoted);
//! * priority queue → `priority` ([`PriorityTokens`]): one token per queued packet of a
//!   conforming latency-critical flow, in arrival order; always served before the ActiveList;
//! * contract C_j bytes per Δt (§4.4.4; "x bytes in some period T" in §2.5.4) →
//!   [`Contract`] (flow keys `contract_bytes`, `contract_interval`);
//! * N_j, the bytes of flow j that arrived in the window → [`DrrPlusFlow::window_bytes`];
//!   "moved into the best-effort class" → [`DrrPlusFlow::demoted_at`] becomes `Some`.
//!
//! Conformance (§4.4.4): a flow obeys its contract iff N_j(t − Δt, t] ≤ C_j for every t,
//! counting every arrival (refused ones too). Checked exactly on each arrival at `now`:
//! arrivals at or before `now − Δt` leave the window; `window_bytes + size > C_j` demotes.
//!
//! Invariants: a best-effort (or demoted) flow is on `active` iff its queue is non-empty (a
//! flow emptied by a push-out leaves lazily at the head); a conforming latency-critical flow is
//! never on `active` and has one `priority` token per queued packet; a demoted flow has none
//! and is never promoted back; a deficit is zero while its flow is idle.
//!
//! Guarantees: a conforming latency-critical packet waits only for the packet on the link and
//! for latency-critical packets that arrived before it; a demoted flow is a DRR flow with
//! quantum Q_LC, latency (3F − 2Q_LC)/BNBW with F = Q_LC + ΣQ_BE (eq. 3.3). Work conserving.
//! O(1) per packet (amortised over the window), plus O(priority backlog) at a demotion and per
//! push-out of a latency-critical packet.
//!
//! Counters (`discipline_counters`): `demotions`; `priority_sent`; `total_rounds`
//! ([`RoundCounter`] over the best-effort ActiveList); `lc_service` (a service interval of the
//! priority queue while conforming, an ActiveList visit that sends once demoted) and
//! `lc_backlog` (visits to a demoted latency-critical flow that end with its head larger than
//! its deficit), as DRR++ defines them (§5.1.2; `docs/disciplines.md`).
//!
//! Choices where the paper is silent:
//! * at demotion the flow's queued packets move with it: its tokens are removed and it joins
//!   the tail of the ActiveList with DC = 0 (FIFO within the flow is kept);
//! * conforming latency-critical flows share one FIFO priority queue, without deficits;
//! * a flow is latency critical iff `latency_critical = true`; it must set `contract_bytes`
//!   and `contract_interval` (a configuration error otherwise); contract keys on other flows
//!   are ignored;
//! * a flow first seen at run time takes the flow defaults; quantum defaults to the scheduler's
//!   `quantum`, else 1500 bytes; `peek` advances the DRR round exactly as the next dequeue would.

use std::collections::VecDeque;

use crate::config::{ConfigError, FlowParams, TableReader};
use crate::counters::{Counters, Dropped};
use crate::discipline::{BuildContext, Discipline, DisciplineInfo, ParamInfo};
use crate::packet::{FlowId, Packet, MAX_FLOW_ID};
use crate::queues::Admission;
use crate::round_robin::{
    ActiveList, DeficitFlow, DeficitFlows, PriorityTokens, RoundCounter, DEFAULT_QUANTUM,
};
use crate::scheduler::Scheduler;
use crate::time::TimeNs;

/// Parameters of [`DrrPlus`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DrrPlusConfig {
    /// Quantum in bytes of flows whose own parameters give none.
    pub quantum: Option<u32>,
}

/// A latency-critical flow's contract: at most `bytes` arriving in any window of `interval`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Contract {
    /// C_j, bytes.
    pub bytes: u64,
    /// Δt, ns.
    pub interval: TimeNs,
}

/// A DRR+ flow's parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DrrPlusFlowParams {
    /// Quantum in bytes (key `quantum`).
    pub quantum: u32,
    /// Key `latency_critical`.
    pub latency_critical: bool,
    /// C_j in bytes (key `contract_bytes`), required when `latency_critical`.
    pub contract_bytes: Option<u64>,
    /// Δt in ns (key `contract_interval`), required when `latency_critical`.
    pub contract_interval: Option<TimeNs>,
}

impl DrrPlusFlowParams {
    /// The contract of a latency-critical flow (`None` for a best-effort flow).
    pub fn contract(&self) -> Option<Contract> {
        match (self.latency_critical, self.contract_bytes, self.contract_interval) {
            (true, Some(bytes), Some(interval)) => Some(Contract { bytes, interval }),
            _ => None,
        }
    }
}

impl FlowParams for DrrPlusFlowParams {
    fn read(reader: &mut TableReader<'_>, inherited: &Self) -> Result<Self, ConfigError> {
        let quantum = reader.positive_u32("quantum")?.unwrap_or(inherited.quantum);
        let latency_critical = reader
            .bool("latency_critical")?
            .unwrap_or(inherited.latency_critical);
        let contract_bytes = reader.size("contract_bytes")?;
        if contract_bytes == Some(0) {
            return Err(reader.error("contract_bytes", "must be at least 1 byte"));
        }
        let contract_interval = reader.duration("contract_interval")?;
        if contract_interval == Some(0) {
            return Err(reader.error("contract_interval", "must be longer than zero"));
        }
        let params = DrrPlusFlowParams {
            quantum,
            latency_critical,
            contract_bytes: contract_bytes.or(inherited.contract_bytes),
            contract_interval: contract_interval.or(inherited.contract_interval),
        };
        let rule = "required when latency_critical = true (DRR+ polices the contract)";
        if latency_critical && params.contract_bytes.is_none() {
            return Err(reader.error("contract_bytes", rule));
        }
        if latency_critical && params.contract_interval.is_none() {
            return Err(reader.error("contract_interval", rule));
        }
        Ok(params)
    }
}

/// The class a flow is served in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServiceClass {
    /// Conforming latency-critical flow: served from the priority queue.
    Priority,
    /// Best-effort flow, or a demoted latency-critical flow: served by DRR.
    BestEffort,
}

/// DRR+'s own per-flow fields (quantum, deficit and the ActiveList flag are
/// [`DeficitFlow`]'s).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DrrPlusFlow {
    /// The contract of a latency-critical flow (`None`: best effort).
    pub contract: Option<Contract>,
    /// When the flow broke its contract and was demoted (`None`: never).
    pub demoted_at: Option<TimeNs>,
    /// N_j: bytes that arrived in the current window (zero once demoted).
    pub window_bytes: u64,
    /// Arrivals in the current window: (time, size).
    window: VecDeque<(TimeNs, u32)>,
    /// The §5.1.2 round of the flow's last visit (0: never; [`RoundCounter::visit`]).
    visited_round: u64,
}

impl DrrPlusFlow {
    /// Configured `latency_critical = true`.
    pub fn latency_critical(&self) -> bool {
        self.contract.is_some()
    }

    /// The class the flow is served in now.
    pub fn class(&self) -> ServiceClass {
        if self.latency_critical() && self.demoted_at.is_none() {
            ServiceClass::Priority
        } else {
            ServiceClass::BestEffort
        }
    }
}

/// DRR+ scheduler.
#[derive(Clone, Debug)]
pub struct DrrPlus {
    flows: DeficitFlows<DrrPlusFlowParams, DrrPlusFlow>,
    /// The priority queue: one token per queued packet of a conforming latency-critical flow.
    priority: PriorityTokens,
    /// The best-effort ActiveList.
    active: ActiveList,
    rounds: RoundCounter,
    demotions: u64,
    priority_sent: u64,
    lc_service: u64,
    lc_backlog: u64,
    /// The last packet sent came from the priority queue (and the scheduler has not emptied).
    last_was_priority: bool,
    /// The current ActiveList visit has already been counted as an LC service.
    visit_counted: bool,
}

impl DrrPlus {
    /// DRR+'s own state of `flow`, if seen.
    pub fn flow(&self, flow: FlowId) -> Option<&DrrPlusFlow> {
        self.flows.get(flow).map(|state| &state.extra)
    }

    /// Whether `flow` broke its contract and is now best effort.
    pub fn is_demoted(&self, flow: FlowId) -> bool {
        self.flow(flow).is_some_and(|s| s.demoted_at.is_some())
    }

    /// Latency-critical flows demoted so far.
    pub fn demotions(&self) -> u64 {
        self.demotions
    }

    /// Polices the contract of a conforming latency-critical flow on an arrival of `size`
    /// bytes at `now`; demotes it on the first violation.
    fn police(&mut self, flow: FlowId, size: u32, now: TimeNs) {
        let state = &mut self.flows.state(flow).extra;
        if state.class() != ServiceClass::Priority {
            return;
        }
        let contract = state.contract.expect("latency-critical flows have a contract");
        // The window is (now − Δt, now]: arrivals at or before now − Δt leave it.
        while let Some(&(time, bytes)) = state.window.front() {
            if now - time < contract.interval {
                break;
            }
            state.window.pop_front();
            state.window_bytes -= bytes as u64;
        }
        if state.window_bytes + size as u64 <= contract.bytes {
            state.window.push_back((now, size));
            state.window_bytes += size as u64;
            return;
        }
        // First violation: best effort for good, queued packets included.
        state.demoted_at = Some(now);
        state.window = VecDeque::new();
        state.window_bytes = 0;
        self.demotions += 1;
        self.priority.remove_flow(flow);
        if !self.flows.is_empty(flow) {
            self.flows.activate(flow, &mut self.active);
        }
    }

    /// Advances the DRR round until the head of the ActiveList may send its head packet.
    fn select_best_effort(&mut self) -> Option<FlowId> {
        let (rounds, visit_counted, lc_backlog) =
            (&mut self.rounds, &mut self.visit_counted, &mut self.lc_backlog);
        let selected = self.flows.select(
            &mut self.active,
            |_, state| {
                // A visit: a new §5.1.2 round if this flow was already visited in this one.
                rounds.visit(&mut state.extra.visited_round, true);
                *visit_counted = false;
            },
            |_, state| *lc_backlog += state.extra.latency_critical() as u64,
        );
        if self.active.is_empty() {
            self.rounds.close();
        }
        selected
    }
}

impl Discipline for DrrPlus {
    type Config = DrrPlusConfig;
    const INFO: DisciplineInfo = DisciplineInfo {
        id: "drr_plus",
        name: "DRR+ (Deficit Round Robin with latency-critical priority)",
        citation: "Shreedhar & Varghese, IEEE/ACM ToN 1996; Zhang, MSc thesis, U. Alberta 2001, §2.5.4, §4.4.4",
        summary: "Latency-critical flows that keep their contract (at most C bytes in any window Δt) are served first from a priority queue; the first violation demotes the flow to DRR best effort for good.",
        scheduler_params: &[ParamInfo {
            name: "quantum",
            unit: "bytes",
            default: "1500",
            description: "quantum of flows that set none",
        }],
        flow_params: &[
            ParamInfo {
                name: "quantum",
                unit: "bytes",
                default: "scheduler quantum",
                description: "bytes added to the flow's deficit per DRR round (best effort, or once demoted)",
            },
            ParamInfo {
                name: "latency_critical",
                unit: "bool",
                default: "false",
                description: "served from the priority queue while it keeps its contract",
            },
            ParamInfo {
                name: "contract_bytes",
                unit: "bytes",
                default: "required if latency_critical",
                description: "C: most bytes that may arrive in any window of contract_interval",
            },
            ParamInfo {
                name: "contract_interval",
                unit: "duration",
                default: "required if latency_critical",
                description: "Δt: length of the sliding contract window",
            },
        ],
        per_flow_queues: true,
    };

    fn read_config(reader: &mut TableReader<'_>) -> Result<DrrPlusConfig, ConfigError> {
        let quantum = reader.positive_u32("quantum")?;
        Ok(DrrPlusConfig { quantum })
    }

    fn build(config: DrrPlusConfig, context: &BuildContext<'_>) -> Result<DrrPlus, ConfigError> {
        let base = DrrPlusFlowParams {
            quantum: config.quantum.unwrap_or(DEFAULT_QUANTUM),
            ..DrrPlusFlowParams::default()
        };
        Ok(DrrPlus {
            flows: DeficitFlows::new(context.limit, context.flows.parse(&Self::INFO, &base)?),
            priority: PriorityTokens::default(),
            active: ActiveList::default(),
            rounds: RoundCounter::default(),
            demotions: 0,
            priority_sent: 0,
            lc_service: 0,
            lc_backlog: 0,
            last_was_priority: false,
            visit_counted: false,
        })
    }
}

impl Scheduler for DrrPlus {
    fn id(&self) -> &'static str {
        Self::INFO.id
    }

    fn enqueue(&mut self, packet: Packet, now: TimeNs, drops: &mut Vec<Dropped>) {
        let flow = packet.flow;
        let first_drop = drops.len();
        let first = |p: &DrrPlusFlowParams| {
            let extra = DrrPlusFlow {
                contract: p.contract(),
                ..DrrPlusFlow::default()
            };
            DeficitFlow::new(p.quantum as u64, extra)
        };
        if flow <= MAX_FLOW_ID {
            // Police before admission: an arrival refused by a full buffer did arrive.
            self.flows.ensure(flow, first);
            self.police(flow, packet.size, now);
        }
        // Buffer stealing weighs queue lengths by 1/quantum, as in DRR.
        let admitted = self.flows.admit(packet, drops, |s| s.quantum, first);
        let flows = &self.flows;
        self.priority.forget_pushed_out(&drops[first_drop..], |victim| {
            flows.get(victim).map(|s| s.extra.class()) == Some(ServiceClass::Priority)
        });
        if admitted == Admission::Queued {
            match self.flows.state(flow).extra.class() {
                ServiceClass::Priority => self.priority.push(flow),
                ServiceClass::BestEffort => _ = self.flows.activate(flow, &mut self.active),
            }
        }
    }

    fn dequeue(&mut self, _now: TimeNs, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        if let Some(flow) = self.priority.pop_front() {
            self.priority_sent += 1;
            if !self.last_was_priority {
                self.lc_service += 1;
            }
            let packet = self
                .flows
                .queues
                .pop_sent(flow)
                .expect("priority tokens match queued packets");
            self.last_was_priority = self.flows.queues.counters.backlog().packets > 0;
            return Some(packet);
        }
        self.last_was_priority = false;
        let flow = self.select_best_effort()?;
        if self.flows.state(flow).extra.latency_critical() && !self.visit_counted {
            self.lc_service += 1;
            self.visit_counted = true;
        }
        let (packet, left) = self.flows.send_from(flow, &mut self.active);
        if left && self.active.is_empty() {
            self.rounds.close();
        }
        Some(packet)
    }

    fn peek(&mut self, _now: TimeNs) -> Option<Packet> {
        let flow = match self.priority.front() {
            Some(flow) => flow,
            None => self.select_best_effort()?,
        };
        self.flows.queues.head(flow).copied()
    }

    fn counters(&self) -> &Counters {
        &self.flows.queues.counters
    }

    fn discipline_counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("demotions", self.demotions),
            ("priority_sent", self.priority_sent),
            ("total_rounds", self.rounds.total()),
            ("lc_service", self.lc_service),
            ("lc_backlog", self.lc_backlog),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{BufferLimit, FlowTable};
    use crate::link::Outcome;
    use crate::testkit;
    use proptest::prelude::*;

    const MS: TimeNs = 1_000_000;
    const US: TimeNs = 1_000;

    /// Latency-critical flows `(flow, contract_bytes, contract_interval)`; every flow has
    /// quantum 500 unless `quanta` says otherwise.
    fn drr_plus(lc: &[(FlowId, u64, TimeNs)], quanta: &[(FlowId, u32)], limit: BufferLimit) -> DrrPlus {
        let mut flows: std::collections::BTreeMap<FlowId, String> = Default::default();
        for &(flow, bytes, interval) in lc {
            let text = flows.entry(flow).or_default();
            *text += &format!(
                "latency_critical = true\ncontract_bytes = {bytes}\ncontract_interval = \"{interval}ns\"\n"
            );
        }
        for &(flow, quantum) in quanta {
            *flows.entry(flow).or_default() += &format!("quantum = {quantum}\n");
        }
        let flows = flows.iter().map(|(flow, text)| (*flow, text.as_str()));
        testkit::build_with(DrrPlusConfig { quantum: Some(500) }, flows, limit)
    }

    fn counter(s: &DrrPlus, name: &str) -> u64 {
        s.discipline_counters().iter().find(|c| c.0 == name).unwrap().1
    }

    /// On the 1 byte/µs test link: BE packets a, b, c (500 B, flow 1) wait at 0; the LC flow 0
    /// sends d (300 B) at 100 µs and e (300 B) at 200 µs, 600 B within its 1000 B / 10 ms
    /// contract. a is on the link when d arrives; d and e then go before b and c.
    #[test]
    fn conforming_flow_jumps_the_best_effort_backlog() {
        let mut s = drr_plus(&[(0, 1000, 10 * MS)], &[], BufferLimit::UNLIMITED);
        let trace = [
            Packet::new(0, 1, 500, 0),
            Packet::new(1, 1, 500, 0),
            Packet::new(2, 1, 500, 0),
            Packet::new(3, 0, 300, 100 * US),
            Packet::new(4, 0, 300, 200 * US),
        ];
        assert_eq!(testkit::send_order(&mut s, &trace), vec![0, 3, 4, 1, 2]);
        assert_eq!(counter(&s, "demotions"), 0);
        assert_eq!(counter(&s, "priority_sent"), 2);
        // d and e are one service interval of the priority queue; it is never backlogged
        // after a quantum.
        assert_eq!(counter(&s, "lc_service"), 1);
        assert_eq!(counter(&s, "lc_backlog"), 0);
        assert_eq!(s.flow(0).unwrap().window_bytes, 600);
        assert_eq!(s.flow(0).unwrap().class(), ServiceClass::Priority);
    }

    /// LCService and LCBacklog of a demoted flow (thesis §5.1.2, as DRR++ counts them). The LC
    /// flow 0 (contract 100 B / 10 ms, quantum 500) is demoted by its first 400 B packet p0;
    /// p1 (400 B) follows; the BE flow 1 (quantum 500) has q0, q1 (500 B), all at 0. Visits:
    /// flow 0 (DC 500) sends p0 (LCService 1), p1 does not fit DC 100 (LCBacklog 1); flow 1
    /// sends q0; flow 0 (DC 600) sends p1 (LCService 2) and empties; flow 1 sends q1.
    #[test]
    fn demoted_flow_counts_lc_services_and_backlogs() {
        let mut s = drr_plus(&[(0, 100, 10 * MS)], &[], BufferLimit::UNLIMITED);
        let trace = [
            Packet::new(0, 0, 400, 0),
            Packet::new(1, 0, 400, 0),
            Packet::new(2, 1, 500, 0),
            Packet::new(3, 1, 500, 0),
        ];
        assert_eq!(testkit::send_order(&mut s, &trace), vec![0, 2, 1, 3]);
        assert_eq!(counter(&s, "demotions"), 1);
        assert_eq!(counter(&s, "lc_service"), 2);
        assert_eq!(counter(&s, "lc_backlog"), 1);
        assert_eq!(counter(&s, "priority_sent"), 0);
    }

    /// Contract 1000 B per 10 ms. Arrivals 600 B at 0 and 300 B at 2 ms conform (900 B);
    /// 200 B at 5 ms makes N(−5 ms, 5 ms] = 1100 B > 1000 B: demoted at 5 ms. From then on the
    /// flow is a DRR flow: even a lone 100 B packet 95 ms later, which conforms to any
    /// window, waits behind the best-effort flow that is ahead of it on the ActiveList.
    #[test]
    fn first_violation_demotes_for_good() {
        let mut s = drr_plus(&[(0, 1000, 10 * MS)], &[], BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        for id in 0..4 {
            s.enqueue(Packet::new(id, 1, 500, 0), 0, &mut drops);
        }
        s.enqueue(Packet::new(10, 0, 600, 0), 0, &mut drops);
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 10, "conforming: priority");
        s.enqueue(Packet::new(11, 0, 300, 2 * MS), 2 * MS, &mut drops);
        assert_eq!(
            s.dequeue(2 * MS, &mut drops).unwrap().id,
            11,
            "900 B: still conforming"
        );
        assert_eq!(s.flow(0).unwrap().window_bytes, 900);
        s.enqueue(Packet::new(12, 0, 200, 5 * MS), 5 * MS, &mut drops);
        let state = s.flow(0).unwrap();
        assert_eq!(state.demoted_at, Some(5 * MS));
        assert_eq!(state.class(), ServiceClass::BestEffort);
        assert!(s.is_demoted(0));
        assert_eq!(counter(&s, "demotions"), 1);
        // DRR, quantum 500 each, ActiveList [1, 0]: flow 1 sends one 500 B packet, then flow
        // 0's 200 B packet, then flow 1 again.
        let order: Vec<u64> = (0..5)
            .map(|_| s.dequeue(5 * MS, &mut drops).unwrap().id)
            .collect();
        assert_eq!(order, vec![0, 12, 1, 2, 3]);
        // Never promoted back.
        let later = 100 * MS;
        s.enqueue(Packet::new(4, 1, 500, later), later, &mut drops);
        s.enqueue(Packet::new(5, 1, 500, later), later, &mut drops);
        s.enqueue(Packet::new(13, 0, 100, later), later, &mut drops);
        let order: Vec<u64> = (0..3).map(|_| s.dequeue(later, &mut drops).unwrap().id).collect();
        assert_eq!(order, vec![4, 13, 5]);
        assert_eq!(counter(&s, "demotions"), 1, "a flow is demoted once");
        assert_eq!(s.flow(0).unwrap().demoted_at, Some(5 * MS));
        assert_eq!(counter(&s, "priority_sent"), 2);
        assert!(drops.is_empty());
    }

    /// The window is (t − Δt, t]: 1000 B at 0 and 1000 B at exactly 10 ms conform to
    /// 1000 B / 10 ms; 1 B at 19.999999 ms shares a window with the 10 ms arrival.
    #[test]
    fn contract_window_is_half_open() {
        let mut s = drr_plus(&[(0, 1000, 10 * MS)], &[], BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        s.enqueue(Packet::new(0, 0, 1000, 0), 0, &mut drops);
        s.enqueue(Packet::new(1, 0, 1000, 10 * MS), 10 * MS, &mut drops);
        assert!(!s.is_demoted(0));
        s.enqueue(Packet::new(2, 0, 1, 20 * MS - 1), 20 * MS - 1, &mut drops);
        assert_eq!(s.flow(0).unwrap().demoted_at, Some(20 * MS - 1));
        // The queued conforming packets moved with the flow: FIFO is kept.
        let order: Vec<u64> = (0..3)
            .map(|_| s.dequeue(20 * MS, &mut drops).unwrap().id)
            .collect();
        assert_eq!(order, vec![0, 1, 2]);
        assert_eq!(counter(&s, "priority_sent"), 0);
    }

    /// A single packet larger than the contract is a violation by itself.
    #[test]
    fn a_packet_above_the_contract_demotes_at_once() {
        let mut s = drr_plus(&[(0, 1000, 10 * MS)], &[], BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        s.enqueue(Packet::new(0, 0, 1001, 0), 0, &mut drops);
        assert!(s.is_demoted(0));
    }

    #[test]
    fn latency_critical_flows_need_a_contract() {
        let table = |text: &str| {
            let mut t = FlowTable::default();
            t.set(3, testkit::params(text), "flow[3]");
            t
        };
        let build = |t: &FlowTable| {
            DrrPlus::build(
                DrrPlusConfig::default(),
                &testkit::context(BufferLimit::UNLIMITED, t),
            )
            .map(|_| ())
        };
        let e = build(&table("latency_critical = true\ncontract_interval = \"1ms\"")).unwrap_err();
        assert_eq!(e.path, "flow[3].contract_bytes");
        assert_eq!(e.value, "(missing)");
        let e = build(&table("latency_critical = true\ncontract_bytes = 1000")).unwrap_err();
        assert_eq!(e.path, "flow[3].contract_interval");
        let defaults = FlowTable::uniform(testkit::params("latency_critical = true"));
        assert_eq!(build(&defaults).unwrap_err().path, "flow_defaults.contract_bytes");
        // Contract keys on a best-effort flow are ignored.
        assert!(build(&table("contract_bytes = 1000")).is_ok());
        // A flow key DRR+ does not read is an error.
        let e = build(&table("weight = 2")).unwrap_err();
        assert_eq!(e.path, "flow[3].weight");
        assert!(
            e.rule
                .contains("reads only quantum, latency_critical, contract_bytes, contract_interval"),
            "{e}"
        );
    }

    #[test]
    fn builds_from_the_registry() {
        let config: toml::Table = "kind = \"drr_plus\"\nquantum = 900".parse().unwrap();
        let s = crate::build_scheduler(&config, "scheduler", &FlowTable::default(), testkit::link()).unwrap();
        assert_eq!(s.id(), "drr_plus");
        assert!(s.is_work_conserving());
    }

    /// Conforming latency-critical traffic on flows 0 and 1 (contract 1500 B per 2 ms):
    /// bursts of 1–3 packets totalling at most 1500 B, spread over at most 200 µs, bursts at
    /// least 2.2 ms apart, so no window of 2 ms holds two bursts.
    fn conforming_lc(flow: FlowId) -> impl Strategy<Value = Vec<Packet>> {
        proptest::collection::vec(
            (
                proptest::collection::vec((40u32..=500, 0u64..200 * US), 1..=3),
                2_200 * US..6 * MS,
            ),
            1..25,
        )
        .prop_map(move |bursts| {
            let mut time = 0;
            let mut packets = Vec::new();
            for (burst, gap) in bursts {
                time += gap;
                let mut offsets: Vec<u64> = burst.iter().map(|b| b.1).collect();
                offsets.sort_unstable();
                for ((size, _), offset) in burst.iter().zip(offsets) {
                    packets.push(Packet::new(0, flow, *size, time + offset));
                }
            }
            packets
        })
    }

    fn merge(parts: &[Vec<Packet>]) -> Vec<Packet> {
        let mut all: Vec<Packet> = parts.concat();
        all.sort_by_key(|p| p.arrival);
        for (id, p) in all.iter_mut().enumerate() {
            p.id = id as u64;
        }
        all
    }

    /// Reference oracle: the time of the first arrival at which some window (t − Δt, t]
    /// holds more than `bytes` of `flow`'s arrivals (O(n²)).
    fn first_violation(trace: &[Packet], flow: FlowId, bytes: u64, interval: TimeNs) -> Option<TimeNs> {
        let arrivals: Vec<&Packet> = trace.iter().filter(|p| p.flow == flow).collect();
        for (k, p) in arrivals.iter().enumerate() {
            let window: u64 = arrivals[..=k]
                .iter()
                .filter(|q| p.arrival - q.arrival < interval)
                .map(|q| q.size as u64)
                .sum();
            if window > bytes {
                return Some(p.arrival);
            }
        }
        None
    }

    proptest! {
        /// Conforming latency-critical flows are never demoted, and no best-effort packet
        /// starts while a latency-critical packet is waiting.
        #[test]
        fn conforming_flows_always_go_first(
            lc0 in conforming_lc(0),
            lc1 in conforming_lc(1),
            be in testkit::arb_trace(4, 200),
        ) {
            let be: Vec<Packet> = be.into_iter().map(|p| Packet { flow: p.flow + 2, ..p }).collect();
            let trace = merge(&[lc0, lc1, be]);
            let mut s = drr_plus(&[(0, 1500, 2 * MS), (1, 1500, 2 * MS)], &[(3, 300), (4, 1500)], BufferLimit::UNLIMITED);
            let run = testkit::check_invariants(&mut s, &trace, true)?;
            prop_assert_eq!(counter(&s, "demotions"), 0);
            let start = |i: usize| match run.outcomes[i] {
                Some(Outcome::Sent { start, .. }) => start,
                other => panic!("packet {i}: {other:?}"),
            };
            for (i, p) in trace.iter().enumerate().filter(|(_, p)| p.flow >= 2) {
                let s_be = start(i);
                for (j, q) in trace.iter().enumerate().filter(|(_, q)| q.flow < 2) {
                    prop_assert!(
                        !(q.arrival <= s_be && start(j) > s_be),
                        "BE packet {} (flow {}) started at {} while LC packet {} (arrived {}) waited",
                        i, p.flow, s_be, j, q.arrival
                    );
                }
            }
        }

        /// Random traffic with two latency-critical flows that may break their contracts:
        /// invariants hold, and each flow is demoted exactly at the first arrival where the
        /// reference oracle finds a window over its contract.
        #[test]
        fn invariants_and_demotion_times(trace in testkit::arb_trace(5, 300), lqd in proptest::bool::ANY) {
            let limit = testkit::byte_limit(8000, lqd);
            let contracts = [(0, 2000, 3 * MS), (1, 6000, 10 * MS)];
            let mut s = drr_plus(&contracts, &[(2, 300), (3, 4000)], limit);
            testkit::check_invariants(&mut s, &trace, true)?;
            let mut demoted = 0;
            for (flow, bytes, interval) in contracts {
                let expected = first_violation(&trace, flow, bytes, interval);
                let seen = s.flow(flow).map(|f| f.demoted_at);
                prop_assert_eq!(seen.flatten(), expected, "flow {}", flow);
                demoted += expected.is_some() as u64;
            }
            prop_assert_eq!(counter(&s, "demotions"), demoted);
        }
    }
}
