//! Smoothed Round Robin (`srr`).
//!
//! C. Guo, "SRR: An O(1) Time Complexity Packet Scheduler for Flows in Multi-Service Packet
//! Networks", Proc. ACM SIGCOMM 2001, pp. 211–222, §3 (Weight Spread Sequence, Weight Matrix,
//! the scheduler) — the comparator of Bakiras et al. (seed 004, §IV), who ran it with
//! McKenney's buffer stealing weighted by 1/w.
//!
//! Paper name → code:
//! * weight w_f, coded in binary `w_f = Σ a_{f,k}·2^k` → [`SrrFlow::weight`]; the Weight
//!   Matrix's column k (flows with a_{f,k} = 1, in the order they became backlogged) →
//!   `columns[k]`, an intrusive doubly-linked list over flow ids (`links`);
//! * order K of the Weight Spread Sequence (WSS) → `order`, the bit length of the largest
//!   weight the flow table can give;
//! * WSS S_K (S_1 = 1, S_k = S_{k−1}, k, S_{k−1}): its term at position p (1 ≤ p < 2^K) is
//!   e = tz(p) + 1 (the ruler sequence; tz counts trailing zero bits), and term e visits
//!   column K − e, so column k is visited 2^k times per WSS pass: a flow of weight w is
//!   visited w times per pass → `position`, and `column_of(position)`;
//! * deficit counter DC_f → [`DeficitFlow::deficit`], raised by the scheduler's `quantum` (the
//!   paper's L_max) at each visit; the flow sends head packets while they fit;
//! * `add_flow` / `del_flow` → `activate` / `deactivate` (append to / unlink from every
//!   column of the flow's weight, O(K)).
//!
//! Invariants: a flow is linked in column k iff it is active and bit k of its weight is set;
//! a flow is active iff its queue is non-empty (a flow emptied by a push-out is deactivated
//! lazily when a visit reaches it); the deficit of an idle flow is 0.
//!
//! Rates: one WSS pass (2^K − 1 positions) visits column k 2^k times, so it visits flow f
//! w_f times and raises DC_f by w_f·quantum. A flow backlogged over n passes therefore sends
//!
//! ```text
//! | bytes_f(n passes) − n·w_f·quantum | < L_max
//! ```
//!
//! (after a visit 0 ≤ DC_f < its head packet ≤ L_max), i.e. the share w_f / Σ_j w_j of the
//! backlogged flows, with its w_f visits spread evenly over the pass (the ruler sequence).
//! Cost: O(1) per packet while the flow stays backlogged, O(K) to activate or deactivate a
//! flow and to skip to the next non-empty column.
//!
//! Worked example (Guo §3, also in every course summary of SRR): weights 5, 2, 2, 3, 1 give
//! K = 3, WSS 1 2 1 3 1 2 1 and the service order f1 f2 f3 f4 f1 f1 f4 f5 f1 f2 f3 f4 f1 — the
//! first test below.
//!
//! Choices where the paper is silent:
//! * The order K is fixed when the scheduler is built (the largest weight of the flow table,
//!   defaults included) instead of following the largest weight of the active flows; WSS
//!   positions whose column is empty are skipped by computing, for every non-empty column,
//!   the next position with the matching number of trailing zeros (O(K) per skip, never a
//!   scan of the sequence).
//! * A flow first seen at run time takes the default weight; a flow that becomes backlogged
//!   during a visit of one of its columns is appended and served in that visit if the visit
//!   has not passed it.
//! * Buffer overflow: the shared `buffer` with `drop_policy = "longest_queue_drop"` pushes
//!   out the tail of the queue whose byte length divided by its weight is largest
//!   (McKenney's buffer stealing weighted by 1/w, as Bakiras et al. ran SRR).
//! * `peek` advances the WSS exactly as the next dequeue would.

use crate::config::{ConfigError, FlowParams, TableReader};
use crate::counters::{Counters, Dropped};
use crate::discipline::{BuildContext, Discipline, DisciplineInfo, ParamInfo};
use crate::packet::{FlowId, Packet};
use crate::queues::Admission;
use crate::round_robin::{DeficitFlow, DeficitFlows, DEFAULT_QUANTUM};
use crate::scheduler::Scheduler;
use crate::time::TimeNs;

const NIL: u32 = u32::MAX;

/// Parameters of [`Srr`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrrConfig {
    /// Bytes added to the deficit of a flow at each visit (the paper's L_max).
    pub quantum: Option<u32>,
}

/// SRR's own per-flow field (DC_f and the active flag are [`DeficitFlow`]'s; its quantum is
/// the scheduler's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrrFlow {
    /// w_f.
    pub weight: u32,
}

/// Smoothed Round Robin scheduler.
#[derive(Clone, Debug)]
pub struct Srr {
    flows: DeficitFlows<SrrFlowParams, SrrFlow>,
    /// `links[flow · order + k]` = (previous, next) flow in column k.
    links: Vec<(u32, u32)>,
    /// Head and tail flow of each column.
    columns: Vec<(u32, u32)>,
    order: u32,
    quantum: u32,
    /// Current WSS position, 1 ≤ p < 2^K (0 before the first visit).
    position: u64,
    /// The flow being served in the current column visit (`NIL`: the visit is over).
    cursor: u32,
    /// Whether the cursor flow has received its quantum in this visit.
    quantum_added: bool,
    /// WSS positions visited (a counter for reports).
    visits: u64,
}

/// An SRR flow's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrrFlowParams {
    /// w_f, visits per WSS pass (key `visits_per_pass`).
    pub visits_per_pass: u32,
}

impl FlowParams for SrrFlowParams {
    fn read(reader: &mut TableReader<'_>, inherited: &Self) -> Result<Self, ConfigError> {
        Ok(SrrFlowParams {
            visits_per_pass: reader
                .positive_u32("visits_per_pass")?
                .unwrap_or(inherited.visits_per_pass),
        })
    }
}

impl Srr {
    /// The state of `flow`, if seen.
    pub fn flow(&self, flow: FlowId) -> Option<&DeficitFlow<SrrFlow>> {
        self.flows.get(flow)
    }

    /// The WSS order K.
    pub fn order(&self) -> u32 {
        self.order
    }

    /// The column visited at WSS position `p` (term e = tz(p) + 1 visits column K − e).
    fn column_of(&self, p: u64) -> u32 {
        self.order - 1 - p.trailing_zeros()
    }

    fn link(&mut self, flow: u32, k: u32) -> &mut (u32, u32) {
        &mut self.links[flow as usize * self.order as usize + k as usize]
    }

    /// `add_flow`: append `flow` to the tail of every column of its weight.
    fn activate(&mut self, flow: u32) {
        let weight = self.flows.state(flow).extra.weight;
        for k in 0..self.order {
            if weight & (1 << k) == 0 {
                continue;
            }
            let tail = self.columns[k as usize].1;
            *self.link(flow, k) = (tail, NIL);
            if tail == NIL {
                self.columns[k as usize].0 = flow;
            } else {
                self.link(tail, k).1 = flow;
            }
            self.columns[k as usize].1 = flow;
        }
        let state = self.flows.state(flow);
        state.active = true;
        state.deficit = 0;
    }

    /// `del_flow`: unlink `flow` from every column; if it is the cursor, the visit moves on to
    /// the next flow of the current column.
    fn deactivate(&mut self, flow: u32) {
        if self.cursor == flow {
            let column = self.column_of(self.position);
            self.cursor = self.link(flow, column).1;
            self.quantum_added = false;
        }
        let weight = self.flows.state(flow).extra.weight;
        for k in 0..self.order {
            if weight & (1 << k) == 0 {
                continue;
            }
            let (previous, next) = *self.link(flow, k);
            if previous == NIL {
                self.columns[k as usize].0 = next;
            } else {
                self.link(previous, k).1 = next;
            }
            if next == NIL {
                self.columns[k as usize].1 = previous;
            } else {
                self.link(next, k).0 = previous;
            }
            *self.link(flow, k) = (NIL, NIL);
        }
        let state = self.flows.state(flow);
        state.active = false;
        state.deficit = 0;
    }

    /// The next WSS position after `position` (cyclically) whose column is non-empty.
    fn next_position(&self) -> Option<u64> {
        let period = 1u64 << self.order;
        let p = self.position;
        let mut best: Option<(u64, u64)> = None;
        for k in 0..self.order {
            if self.columns[k as usize].0 == NIL {
                continue;
            }
            let t = self.order - 1 - k;
            let step = 1u64 << (t + 1);
            let mut candidate = ((p >> (t + 1)) << (t + 1)) | (1 << t);
            if candidate <= p {
                candidate += step;
            }
            if candidate >= period {
                candidate = 1 << t;
            }
            // A candidate at or before `p` lies in the next pass (p itself: a whole pass on).
            let distance = if candidate > p {
                candidate - p
            } else {
                candidate + period - p
            };
            if best.is_none_or(|(d, _)| distance < d) {
                best = Some((distance, candidate));
            }
        }
        best.map(|(_, candidate)| candidate)
    }

    /// Advances the visits until a flow may send its head packet; returns it.
    #[inline]
    fn select(&mut self) -> Option<FlowId> {
        if self.flows.queues.counters.backlog().packets == 0 {
            return None;
        }
        loop {
            if self.cursor == NIL {
                self.position = self.next_position()?;
                self.visits += 1;
                self.cursor = self.columns[self.column_of(self.position) as usize].0;
                self.quantum_added = false;
                continue;
            }
            let flow = self.cursor;
            let Some(head) = self.flows.queues.head(flow) else {
                // Emptied by a push-out: leave as if its last packet had been sent.
                self.deactivate(flow);
                continue;
            };
            let size = head.size as i64;
            let state = self.flows.state(flow);
            if !self.quantum_added {
                state.deficit += state.quantum as i64;
                self.quantum_added = true;
            }
            if size <= state.deficit {
                return Some(flow);
            }
            let column = self.column_of(self.position);
            self.cursor = self.link(flow, column).1;
            self.quantum_added = false;
        }
    }
}

impl Discipline for Srr {
    type Config = SrrConfig;
    const INFO: DisciplineInfo = DisciplineInfo {
        id: "srr",
        name: "Smoothed Round Robin",
        citation: "Guo, ACM SIGCOMM 2001",
        summary: "Weights in binary form a Weight Matrix whose columns a Weight Spread Sequence visits (column k 2^k times per pass); each visit adds the quantum to the flow's deficit. O(K) per packet, output spread over the pass.",
        scheduler_params: &[ParamInfo {
            name: "quantum",
            unit: "bytes",
            default: "1500",
            description: "bytes added to a flow's deficit per visit (L_max in the paper)",
        }],
        flow_params: &[ParamInfo {
            name: "visits_per_pass",
            unit: "visits per WSS pass (integer ≥ 1)",
            default: "1",
            description: "w_f; the flow is visited w_f times per pass (up to 2^32 − 1)",
        }],
        per_flow_queues: true,
    };

    fn read_config(reader: &mut TableReader<'_>) -> Result<SrrConfig, ConfigError> {
        let quantum = reader.positive_u32("quantum")?;
        Ok(SrrConfig { quantum })
    }

    fn build(config: SrrConfig, context: &BuildContext<'_>) -> Result<Srr, ConfigError> {
        let table = context
            .flows
            .parse(&Self::INFO, &SrrFlowParams { visits_per_pass: 1 })?;
        let largest = table
            .configured()
            .map(|(_, p)| p.visits_per_pass)
            .fold(table.defaults().visits_per_pass, u32::max);
        let order = 32 - largest.leading_zeros();
        Ok(Srr {
            flows: DeficitFlows::new(context.limit, table),
            links: Vec::new(),
            columns: vec![(NIL, NIL); order as usize],
            order,
            quantum: config.quantum.unwrap_or(DEFAULT_QUANTUM),
            position: 0,
            cursor: NIL,
            quantum_added: false,
            visits: 0,
        })
    }
}

impl Scheduler for Srr {
    fn id(&self) -> &'static str {
        Self::INFO.id
    }

    fn enqueue(&mut self, packet: Packet, _now: TimeNs, drops: &mut Vec<Dropped>) {
        let flow = packet.flow;
        let (links, order) = (&mut self.links, self.order as usize);
        let first = |p: &SrrFlowParams| {
            links.resize(links.len().max((flow as usize + 1) * order), (NIL, NIL));
            DeficitFlow::new(
                self.quantum as u64,
                SrrFlow {
                    weight: p.visits_per_pass,
                },
            )
        };
        // Buffer stealing weighs queue lengths by 1/w.
        let share = |s: &DeficitFlow<SrrFlow>| s.extra.weight as u64;
        if self.flows.admit(packet, drops, share, first) == Admission::Queued
            && !self.flows.state(flow).active
        {
            self.activate(flow);
        }
    }

    fn dequeue(&mut self, _now: TimeNs, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        let flow = self.select()?;
        let (packet, emptied) = self.flows.send(flow);
        if emptied {
            self.deactivate(flow);
        }
        Some(packet)
    }

    fn peek(&mut self, _now: TimeNs) -> Option<Packet> {
        let flow = self.select()?;
        self.flows.queues.head(flow).copied()
    }

    fn counters(&self) -> &Counters {
        &self.flows.queues.counters
    }

    fn discipline_counters(&self) -> Vec<(&'static str, u64)> {
        vec![("wss_visits", self.visits)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BufferLimit;
    use crate::testkit;

    fn srr(weights: &[(FlowId, u32)], quantum: u32, limit: BufferLimit) -> Srr {
        testkit::build_weighted(
            SrrConfig {
                quantum: Some(quantum),
            },
            weights,
            limit,
        )
    }

    /// Guo's example: weights 5, 2, 2, 3, 1 (binary 101, 010, 010, 011, 001), K = 3, WSS
    /// S_3 = 1 2 1 3 1 2 1; one packet of the quantum's size per visit gives the service order
    /// f1 f2 f3 f4 f1 f1 f4 f5 f1 f2 f3 f4 f1, twice over.
    #[test]
    fn guo_worked_example() {
        let weights = [(1, 5), (2, 2), (3, 2), (4, 3), (5, 1)];
        let mut s = srr(&weights, 100, BufferLimit::UNLIMITED);
        assert_eq!(s.order(), 3);
        let mut packets = Vec::new();
        for k in 0..20u64 {
            for flow in 1..=5u32 {
                packets.push(Packet::new(k * 10 + flow as u64, flow, 100, 0));
            }
        }
        let mut drops = Vec::new();
        for packet in &packets {
            s.enqueue(*packet, 0, &mut drops);
        }
        let order: Vec<u32> = (0..26).map(|_| s.dequeue(0, &mut drops).unwrap().flow).collect();
        let pass = [1, 2, 3, 4, 1, 1, 4, 5, 1, 2, 3, 4, 1];
        assert_eq!(order[..13], pass);
        assert_eq!(order[13..], pass);
    }

    #[test]
    fn wss_positions_map_to_columns() {
        let s = srr(&[(1, 8)], 100, BufferLimit::UNLIMITED);
        assert_eq!(s.order(), 4);
        // S_4 = 1 2 1 3 1 2 1 4 1 2 1 3 1 2 1: term e visits column 4 − e.
        let terms: Vec<u32> = (1..16).map(|p| s.order() - s.column_of(p)).collect();
        assert_eq!(terms, vec![1, 2, 1, 3, 1, 2, 1, 4, 1, 2, 1, 3, 1, 2, 1]);
    }

    #[test]
    fn empty_columns_are_skipped_and_a_lone_low_weight_flow_is_served() {
        // Only the weight-1 flow (column 0, visited once per 2^3 − 1 positions) is backlogged.
        let mut s = srr(&[(1, 1), (2, 4)], 500, BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        for k in 0..3 {
            s.enqueue(Packet::new(k, 1, 500, 0), 0, &mut drops);
        }
        for k in 0..3 {
            assert_eq!(s.dequeue(0, &mut drops).unwrap().id, k);
        }
        assert!(s.dequeue(0, &mut drops).is_none());
        assert_eq!(s.flow(1).unwrap().deficit, 0);
        // Three visits, one per WSS pass at position 4.
        assert_eq!(s.discipline_counters(), vec![("wss_visits", 3)]);
    }

    #[test]
    fn byte_shares_follow_weights() {
        let mut s = srr(&[(0, 1), (1, 2), (2, 5)], 1000, BufferLimit::UNLIMITED);
        let served = testkit::backlogged_service(&mut s, &[0, 1, 2], 6000, |_, _| 500, 8000);
        // 8000 packets of 500 B: 8000·500 = 4 MB split 1 : 2 : 5 (whole WSS passes of 16 000 B).
        assert_eq!(served, vec![500_000, 1_000_000, 2_500_000]);
    }

    #[test]
    fn longest_weighted_queue_loses_its_tail() {
        let limit = testkit::byte_limit(3000, true);
        let mut s = srr(&[(0, 1), (1, 4)], 1000, limit);
        let mut drops = Vec::new();
        s.enqueue(Packet::new(0, 0, 1000, 0), 0, &mut drops);
        s.enqueue(Packet::new(1, 1, 1000, 0), 0, &mut drops);
        s.enqueue(Packet::new(2, 1, 1000, 0), 0, &mut drops);
        // Full: weighted lengths 1000/1 and 2000/4; flow 0 loses its tail (its only packet).
        s.enqueue(Packet::new(3, 1, 1000, 0), 0, &mut drops);
        assert_eq!(drops.len(), 1);
        assert_eq!(drops[0].packet.id, 0);
        let order: Vec<u64> = std::iter::from_fn(|| s.dequeue(0, &mut drops).map(|p| p.id)).collect();
        assert_eq!(order, vec![1, 2, 3]);
        assert!(!s.flow(0).unwrap().active);
    }

    proptest::proptest! {
        #[test]
        fn invariants(trace in testkit::arb_trace(5, 300), lqd in proptest::bool::ANY) {
            let limit = testkit::byte_limit(8000, lqd);
            let mut s = srr(&[(1, 1), (2, 3), (3, 6)], 700, limit);
            testkit::check_invariants(&mut s, &trace, true)?;
        }

        /// Over whole WSS passes with every flow backlogged, flow f sends w_f·quantum bytes per
        /// pass; within a pass column k has had p·2^k/2^K ± 1 visits after p positions, so
        /// |sent_i/w_i − sent_j/w_j| ≤ 2 visits + the visit under way (3·quantum) + a deficit
        /// left over (below the largest packet).
        #[test]
        fn weighted_shares(w0 in 1u32..20, w1 in 1u32..20, sizes in proptest::collection::vec(40u32..=1500, 64), n in 1usize..800) {
            let mut s = srr(&[(0, w0), (1, w1)], 1500, BufferLimit::UNLIMITED);
            let served = testkit::backlogged_service(&mut s, &[0, 1], 1000, |f, k| sizes[(k + f as usize) % sizes.len()], n);
            let gap = (served[0] as f64 / w0 as f64 - served[1] as f64 / w1 as f64).abs();
            proptest::prop_assert!(gap <= 3.0 * 1500.0 + 1500.0, "gap {}", gap);
        }
    }
}
