//! Aliquem: DRR with quanta below the largest packet at O(1) cost (`aliquem`).
//!
//! L. Lenzini, E. Mingozzi, G. Stea, "Tradeoffs Between Low Complexity, Low Latency, and
//! Fairness With Deficit Round-Robin Schedulers", IEEE/ACM Transactions on Networking 12(4),
//! 2004, §IV (Active List Queue Method, "Aliquem") — the comparator of Bakiras et al. (seed
//! 004, §IV), run there with scaling factor q = 5 and McKenney's buffer stealing weighted by
//! 1/w.
//!
//! DRR sends a flow's head packet only once its deficit covers it; with quanta φ_i below the
//! largest packet L a flow may have to be skipped for several rounds, and plain DRR pays for
//! each skip (O(N) per packet). Aliquem keeps q + 1 active lists, one per upcoming round, and
//! files a backlogged flow directly in the list of the round in which its head packet will fit,
//! crediting the skipped rounds' quanta at once. Every flow sends in each round what DRR with
//! the same quanta would send in it; only the order within a round can differ (a flow filed k
//! rounds ahead joins that round's list when it is filed, where DRR would re-append it after
//! each skipped visit). With quanta that cover every packet nothing is skipped and the output
//! is DRR's exactly (a test below). The latency is that of DRR with a frame q times shorter.
//!
//! Per visit of flow i (DRR's figure 3 with quantum φ_i) and when it is filed:
//!
//! ```text
//! Δ_i ← Δ_i + φ_i;  while L_head ≤ Δ_i: send head, Δ_i ← Δ_i − L_head;  empty: Δ_i ← 0
//! k = ⌈(L_head − Δ_i) / φ_i⌉;  list ← (current + min(k, q)) mod (q + 1);  Δ_i ← Δ_i + (k − 1)·φ_i
//! ```
//!
//! Paper name → code:
//! * quantum φ_i → [`DeficitFlow::quantum`] = w_i · `quantum` / q (bytes, at least 1), with
//!   w_i the flow's `quantum_units`, `quantum` the scheduler's basic quantum (Bakiras et al.'s
//!   L_M = 1000 B) and q the `scaling` factor;
//! * deficit counter Δ_i → [`DeficitFlow::deficit`];
//! * ActiveList[0..q] → `lists` ([`ActiveList`]s), the current round's list → `current`;
//! * "the number of rounds before the head packet can be sent",
//!   k = ⌈(L_head − Δ_i)/φ_i⌉ → `rounds_until_fit`; the flow goes to list (current + k) mod
//!   (q + 1) with Δ_i raised by (k − 1)·φ_i (the skipped rounds), and receives the last φ_i
//!   when that list is served.
//!
//! Invariants: a flow is in exactly one list iff it is active; a flow is active iff its queue
//! is non-empty (a flow emptied by a push-out is removed lazily when its list is served); when
//! a flow at the head of the current list is served its deficit covers its head packet; the
//! deficit of an idle flow is 0.
//!
//! Choices where the paper is silent:
//! * A flow needing more than q rounds (φ_i·q below its head packet) is filed q rounds ahead
//!   and filed again when reached, exactly as DRR would keep skipping it.
//! * A newly backlogged flow counts the current round as its first: it goes to list
//!   (current + k − 1) with k = ⌈L_head/φ_i⌉ (so, when its packet fits one quantum, to the tail
//!   of the current round, as DRR appends it to the tail of its ActiveList).
//! * Moving to the next non-empty list scans at most q + 1 lists (q is small: 5 in seed 004).
//! * Buffer overflow with `drop_policy = "longest_queue_drop"` pushes out the tail of the queue
//!   with the largest bytes / w_i.
//! * `peek` advances the rounds exactly as the next dequeue would.

use crate::config::{ConfigError, FlowParams, TableReader};
use crate::counters::{Counters, Dropped};
use crate::discipline::{BuildContext, Discipline, DisciplineInfo, ParamInfo};
use crate::packet::{FlowId, Packet};
use crate::queues::Admission;
use crate::round_robin::{ActiveList, DeficitFlow, DeficitFlows, Step, DEFAULT_QUANTUM};
use crate::scheduler::Scheduler;
use crate::time::TimeNs;

/// Scaling factor q when none is given (Bakiras et al.'s choice).
pub const DEFAULT_SCALING: u32 = 5;

/// Parameters of [`Aliquem`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AliquemConfig {
    /// Basic quantum per unit of weight, bytes, before scaling.
    pub quantum: Option<u32>,
    /// Scaling factor q: quanta are divided by q, and q + 1 active lists are kept.
    pub scaling: Option<u32>,
}

/// Aliquem's own per-flow field (φ_i, Δ_i and the active flag are [`DeficitFlow`]'s).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AliquemFlow {
    /// w_i.
    pub weight: u32,
}

/// Aliquem scheduler.
#[derive(Clone, Debug)]
pub struct Aliquem {
    flows: DeficitFlows<AliquemFlowParams, AliquemFlow>,
    /// ActiveList[0..q], one per upcoming round.
    lists: Vec<ActiveList>,
    current: usize,
    quantum: u32,
    scaling: u32,
    rounds: u64,
}

/// An Aliquem flow's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AliquemFlowParams {
    /// w_i: the flow's quantum in units of `quantum`/q bytes (key `quantum_units`).
    pub quantum_units: u32,
}

impl FlowParams for AliquemFlowParams {
    fn read(reader: &mut TableReader<'_>, inherited: &Self) -> Result<Self, ConfigError> {
        Ok(AliquemFlowParams {
            quantum_units: reader
                .positive_u32("quantum_units")?
                .unwrap_or(inherited.quantum_units),
        })
    }
}

impl Aliquem {
    /// The state of `flow`, if seen.
    pub fn flow(&self, flow: FlowId) -> Option<&DeficitFlow<AliquemFlow>> {
        self.flows.get(flow)
    }

    /// Rounds until a head packet of `size` bytes fits a deficit of `deficit` growing by
    /// `quantum` per round: ⌈(size − deficit)/quantum⌉ (at least 1).
    fn rounds_until_fit(size: u64, deficit: i64, quantum: u64) -> u64 {
        (size as i64 - deficit)
            .max(0)
            .unsigned_abs()
            .div_ceil(quantum)
            .max(1)
    }

    /// Files `flow` (deficit already up to date, off every list) `k` rounds ahead of the
    /// current one (k ≥ 1), crediting the quanta of the rounds it skips; at most q rounds.
    #[inline]
    fn file(&mut self, flow: FlowId, k: u64) {
        let k = k.min(self.scaling as u64);
        let state = self.flows.state(flow);
        state.deficit += ((k - 1) * state.quantum) as i64;
        let list = (self.current + k as usize) % self.lists.len();
        self.lists[list].push(flow);
    }

    /// The current list's head ends its visit still short of its head packet of `size`
    /// bytes: it is filed in the round where that packet fits.
    #[inline]
    fn refile(&mut self, flow: FlowId, size: u64) {
        let state = self.flows.state(flow);
        let k = Self::rounds_until_fit(size, state.deficit, state.quantum);
        self.lists[self.current].remove_head();
        self.file(flow, k);
    }

    /// Serves rounds until the head flow of the current list may send; returns it.
    #[inline]
    fn select(&mut self) -> Option<FlowId> {
        if self.flows.queues.counters.backlog().packets == 0 {
            return None;
        }
        loop {
            let Some(step) = self.flows.step(&mut self.lists[self.current], |_, _| {}) else {
                self.current = (self.current + 1) % self.lists.len();
                self.rounds += 1;
                continue;
            };
            match step {
                Step::Send(flow) => return Some(flow),
                Step::Left(_) => {}
                // Still short (filed more than q rounds ahead, or its head changed by a
                // push-out): file it again.
                Step::Short(flow) => {
                    let size = self.flows.queues.head(flow).expect("backlogged").size;
                    self.refile(flow, size as u64);
                }
            }
        }
    }
}

impl Discipline for Aliquem {
    type Config = AliquemConfig;
    const INFO: DisciplineInfo = DisciplineInfo {
        id: "aliquem",
        name: "Aliquem (Active List Queue Method)",
        citation: "Lenzini, Mingozzi & Stea, IEEE/ACM ToN 2004",
        summary: "DRR with quanta scaled down by q: q + 1 active lists, one per upcoming round, so a flow whose head packet needs several rounds is filed straight into the right one. O(1) per packet (O(q) to skip empty rounds), DRR's output with a frame q times shorter.",
        scheduler_params: &[
            ParamInfo {
                name: "quantum",
                unit: "bytes",
                default: "1500",
                description: "basic quantum per unit of weight, before scaling (L_M in seed 004)",
            },
            ParamInfo {
                name: "scaling",
                unit: "factor",
                default: "5",
                description: "q: flow quanta are w·quantum/q; q + 1 active lists",
            },
        ],
        flow_params: &[ParamInfo {
            name: "quantum_units",
            unit: "units of quantum/q bytes (integer ≥ 1)",
            default: "1",
            description: "w_i; the flow's quantum is w_i·quantum/q bytes",
        }],
        per_flow_queues: true,
    };

    fn read_config(reader: &mut TableReader<'_>) -> Result<AliquemConfig, ConfigError> {
        let quantum = reader.positive_u32("quantum")?;
        let scaling = reader.integer("scaling", 1, 1024)?.map(|q| q as u32);
        Ok(AliquemConfig { quantum, scaling })
    }

    fn build(config: AliquemConfig, context: &BuildContext<'_>) -> Result<Aliquem, ConfigError> {
        let table = context
            .flows
            .parse(&Self::INFO, &AliquemFlowParams { quantum_units: 1 })?;
        let scaling = config.scaling.unwrap_or(DEFAULT_SCALING);
        Ok(Aliquem {
            flows: DeficitFlows::new(context.limit, table),
            lists: vec![ActiveList::default(); scaling as usize + 1],
            current: 0,
            quantum: config.quantum.unwrap_or(DEFAULT_QUANTUM),
            scaling,
            rounds: 0,
        })
    }
}

impl Scheduler for Aliquem {
    fn id(&self) -> &'static str {
        Self::INFO.id
    }

    fn enqueue(&mut self, packet: Packet, _now: TimeNs, drops: &mut Vec<Dropped>) {
        let flow = packet.flow;
        let (quantum, scaling) = (self.quantum as u64, self.scaling as u64);
        let first = |p: &AliquemFlowParams| {
            let weight = p.quantum_units;
            let phi = (weight as u64 * quantum / scaling).max(1);
            DeficitFlow::new(phi, AliquemFlow { weight })
        };
        // Buffer stealing weighs queue lengths by 1/w.
        let share = |s: &DeficitFlow<AliquemFlow>| s.extra.weight as u64;
        if self.flows.admit(packet, drops, share, first) != Admission::Queued || self.flows.state(flow).active
        {
            return;
        }
        let state = self.flows.state(flow);
        state.active = true;
        state.deficit = 0;
        // The current round counts as the first: file it k − 1 rounds ahead (k = 1: the
        // tail of the current list).
        let k = Self::rounds_until_fit(packet.size as u64, 0, state.quantum);
        if k == 1 {
            self.lists[self.current].push(flow);
        } else {
            let k = k.min(scaling + 1);
            state.deficit = ((k - 1) * state.quantum) as i64;
            let list = (self.current + k as usize - 1) % self.lists.len();
            self.lists[list].push(flow);
        }
    }

    fn dequeue(&mut self, _now: TimeNs, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        let flow = self.select()?;
        let (packet, left) = self.flows.send_from(flow, &mut self.lists[self.current]);
        if !left {
            let next = self.flows.queues.head(flow).expect("not emptied").size as u64;
            if next as i64 > self.flows.state(flow).deficit {
                // End of this flow's visit: file it in the round where its head packet fits.
                self.refile(flow, next);
            }
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
        vec![("rounds", self.rounds)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BufferLimit;
    use crate::disciplines::drr::{Drr, DrrConfig};
    use crate::testkit;

    fn aliquem(weights: &[(FlowId, u32)], quantum: u32, scaling: u32, limit: BufferLimit) -> Aliquem {
        testkit::build_weighted(
            AliquemConfig {
                quantum: Some(quantum),
                scaling: Some(scaling),
            },
            weights,
            limit,
        )
    }

    /// Quantum 1000 B scaled by q = 5: φ = 200 B for weight 1, 400 B for weight 2. Flow 1
    /// (w = 1) holds a 1000-byte packet: it needs 5 rounds (the current one counts), so it is
    /// filed 4 rounds ahead with Δ = 4·200 and gets its fifth quantum there. Flow 2 (w = 2)
    /// sends a 400-byte packet every round. Rounds 0–3: flow 2 alone; round 4: both.
    #[test]
    fn small_quanta_file_flows_in_the_round_they_fit() {
        let mut s = aliquem(&[(1, 1), (2, 2)], 1000, 5, BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        for k in 0..6 {
            s.enqueue(Packet::new(10 + k, 2, 400, 0), 0, &mut drops);
        }
        s.enqueue(Packet::new(1, 1, 1000, 0), 0, &mut drops);
        assert_eq!(s.flow(1).unwrap().deficit, 800);
        let order: Vec<u64> = std::iter::from_fn(|| s.dequeue(0, &mut drops).map(|p| p.id)).collect();
        // Flow 1 was filed for round 4 before flow 2 (filed there during round 3): it goes
        // first in round 4 (DRR, which visits flow 1 every round, would send 14 first).
        assert_eq!(order, vec![10, 11, 12, 13, 1, 14, 15]);
        assert_eq!(s.flow(1).unwrap().deficit, 0);
    }

    /// With every quantum at least the largest packet, no flow is ever skipped: Aliquem sends
    /// exactly what DRR with the same quanta sends, in the same order.
    #[test]
    fn matches_drr_when_quanta_cover_every_packet() {
        let weights = [(0, 1), (1, 2), (2, 3)];
        let mut s = aliquem(&weights, 7500, 5, BufferLimit::UNLIMITED);
        let quanta: Vec<(FlowId, String)> = weights
            .iter()
            .map(|&(f, w)| (f, format!("quantum = {}", 1500 * w)))
            .collect();
        let quanta = quanta.iter().map(|(f, text)| (*f, text.as_str()));
        let mut drr: Drr = testkit::build_with(DrrConfig { quantum: None }, quanta, BufferLimit::UNLIMITED);
        let packets: Vec<Packet> = (0..600u64)
            .map(|k| Packet::new(k, (k % 3) as FlowId, 40 + (k * 997 % 1461) as u32, 0))
            .collect();
        assert_eq!(
            testkit::send_order(&mut s, &packets),
            testkit::send_order(&mut drr, &packets)
        );
    }

    #[test]
    fn byte_shares_follow_weights() {
        let mut s = aliquem(&[(0, 1), (1, 2), (2, 5)], 1000, 5, BufferLimit::UNLIMITED);
        let served = testkit::backlogged_service(&mut s, &[0, 1, 2], 3000, |_, _| 1000, 4000);
        // φ = 200, 400, 1000 B: every 5 rounds flows send 1, 2, 5 packets of 1000 B.
        assert_eq!(served, vec![500_000, 1_000_000, 2_500_000]);
    }

    proptest::proptest! {
        #[test]
        fn invariants(trace in testkit::arb_trace(5, 300), lqd in proptest::bool::ANY, scaling in 1u32..8) {
            let limit = testkit::byte_limit(8000, lqd);
            let mut s = aliquem(&[(1, 1), (2, 3), (3, 6)], 1000, scaling, limit);
            testkit::check_invariants(&mut s, &trace, true)?;
        }

        /// DRR's fairness with quanta φ_i (S–V lemma 2): |sent_0/φ_0 − sent_1/φ_1|·φ ≤ Max + 2φ.
        #[test]
        fn byte_shares_follow_quanta(w0 in 1u32..10, w1 in 1u32..10, sizes in proptest::collection::vec(40u32..=1500, 64), n in 1usize..500) {
            let mut s = aliquem(&[(0, w0), (1, w1)], 1000, 5, BufferLimit::UNLIMITED);
            let served = testkit::backlogged_service(&mut s, &[0, 1], 1000, |f, k| sizes[(k + f as usize) % sizes.len()], n);
            let (q0, q1) = (200.0 * w0 as f64, 200.0 * w1 as f64);
            let q = q0.min(q1);
            let gap = (served[0] as f64 / q0 - served[1] as f64 / q1).abs() * q;
            proptest::prop_assert!(gap <= 1500.0 + 2.0 * q, "gap {} > {}", gap, 1500.0 + 2.0 * q);
        }
    }
}
