//! Vertical Dimensioning (`vd`): DRR without per-flow queues.
//!
//! S. Bakiras, F. Wang, D. Papadias and M. Hamdi, "Vertical Dimensioning: A Novel DRR
//! Implementation for Efficient Fair Queueing" (the seed text names no venue or year; seed
//! 004), §III-A, equation (3) and the figure 2 pseudo-code; bounds in §III-B (lemma 1,
//! theorems 1–3).
//!
//! Instead of a queue per flow, VD keeps M FIFO "round" queues. Queue `q[r]` holds the
//! packets DRR (quantum w_i·L_M) would send in round r; rounds are served in turn, each
//! in arrival order. An arrival of flow i goes to
//!
//! ```text
//! pos = (current + ⌈(bytes_i − deficit_i + size) / (w_i·L_M)⌉ − 1) mod M      (3)
//! ```
//!
//! and on overflow the tail of the last non-empty round queue is dropped, O(1).
//!
//! Paper name → code (figure 2, line by line):
//! * `q[0..M]` → `rounds` (lists of `pool`, blocks of 16 packets); `current`, `last` → `current`/`current_index`, `last`/`last_index`
//!   (the rounds are also counted without wrapping in `current` and `last`, so that
//!   `f[i].round ≠ current` cannot alias after a multiple of M rounds);
//! * `f[i].bytes`, `f[i].deficit`, `f[i].round` → [`VdFlow::bytes`], [`VdFlow::deficit`],
//!   [`VdFlow::round`]; w_i → [`VdFlow::weight`]; L_M → `mtu`; `bytes` → `counters` backlog;
//! * enqueue (2)–(5) "new flow" → `bytes_i == 0` (the paper keeps per-flow state only for
//!   active flows, "when its first packet is enqueued its deficit is initialized to zero");
//!   (6)–(8) → `start_round`; (9) → `offset`; (10)–(14) → push and `last`; (15)–(16) → the
//!   overflow loop; dequeue (1)–(11) → [`Vd::dequeue`]; drop (1)–(7) → `drop_last`.
//!
//! Invariants: every queued packet p of flow i sits in round
//! current + ⌈(C_p − deficit_i')/(w_i·L_M)⌉ − 1, with C_p the bytes of flow i queued up to
//! and including p and deficit_i' the deficit after `start_round`; hence a flow's packets
//! occupy non-decreasing rounds in arrival order (FIFO within a flow), its head is in round
//! `current` or `current + 1`, and the rounds `current..=last` have no empty queue between
//! non-empty ones. −w_i·L_M ≤ deficit_i < L_M. `counters` holds exactly the queued packets.
//! Each packet of a backlogged flow is sent in the same round as under DRR with quantum
//! w_i·L_M (tested against [`crate::disciplines::drr`]).
//!
//! Guarantees (§III-B): lemma 1, a flow backlogged for X rounds receives service in
//! (X·w_i·L_M − L_M, X·w_i·L_M + L_M); Golestani fairness < 2L_M/r_min + L_M(1/r_i + 1/r_j).
//! O(1) enqueue, dequeue and drop; O(N + M) space plus the largest backlog seen in blocks of
//! 16 packets, at most ⌈packets/16⌉ + M + 64 blocks (64 spares: the rounds are lists of one
//! [`BlockLists`], read in order from contiguous memory, as from a FIFO per round).
//!
//! Choices where the paper is silent (reasons in `docs/disciplines.md`):
//! * `mtu` (L_M) defaults to 1500 bytes; a larger packet is dropped at enqueue as
//!   [`DropReason::InvalidPacket`] (a round could not hold it);
//! * `rounds` (M) defaults to ⌈buffer/mtu⌉ as in the paper, and is required without `buffer`
//!   (bytes); an arrival whose round would be M or more rounds after `current` (it would wrap
//!   and break FIFO) is refused as [`DropReason::BufferFull`];
//! * the overflow loop of figure 2 runs until the bytes and the packets limits both hold; its
//!   victim is [`DropReason::BufferFull`] when it is the arrival, else
//!   [`DropReason::PushedOut`]; `drop_policy` must stay `"tail_drop"`;
//! * dequeue skips an empty `q[current]` (defensive: the invariants imply it never is);
//! * a flow with no `quantum_mtus` has w_i = 1; w_i·L_M is limited to 2^48 bytes; a flow id
//!   above [`MAX_FLOW_ID`] is dropped as invalid without entering the per-flow counters.

use crate::config::{BufferLimit, ConfigError, FlowParamTable, FlowParams, TableReader};
use crate::counters::{Counters, DropReason, Dropped};
use crate::discipline::{require_tail_drop, BuildContext, Discipline, DisciplineInfo, ParamInfo};
use crate::packet::{FlowId, Packet, MAX_FLOW_ID};
use crate::pool::{BlockListEnds, BlockLists};
use crate::scheduler::Scheduler;
use crate::time::TimeNs;

/// L_M used when `mtu` is not given, bytes.
pub const DEFAULT_MTU: u32 = 1500;

/// Largest number of round queues accepted.
pub const MAX_ROUNDS: u64 = 1 << 20;

/// Largest quantum w_i·L_M accepted, bytes.
pub const MAX_QUANTUM: u64 = 1 << 48;

/// Parameters of [`Vd`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VdConfig {
    /// L_M, the largest packet size in bytes.
    pub mtu: u32,
    /// M, the number of round queues; `None` for ⌈buffer/mtu⌉.
    pub rounds: Option<u32>,
}

impl Default for VdConfig {
    fn default() -> Self {
        VdConfig {
            mtu: DEFAULT_MTU,
            rounds: None,
        }
    }
}

/// Per-flow VD state (figure 2's `f[i]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VdFlow {
    /// w_i, the flow's weight (0 = flow not seen yet).
    pub weight: u32,
    /// `bytes_i`: bytes of the flow now queued.
    pub bytes: u64,
    /// `deficit_i`: D_i^k − b_i^k, the carried deficit minus the bytes sent this round.
    pub deficit: i64,
    /// `round_i`: the round in which the flow last sent (or became active), not wrapped.
    pub round: u64,
}

/// Vertical Dimensioning scheduler.
#[derive(Clone, Debug)]
pub struct Vd {
    /// q[0..M], one FIFO per round: lists of `pool`.
    rounds: Vec<BlockListEnds>,
    /// The blocks of every round's packets: never more than the largest backlog seen needs.
    pool: BlockLists<Packet>,
    /// `current`, counted without wrapping.
    current: u64,
    /// `current` mod M.
    current_index: usize,
    /// `last`, counted without wrapping (meaningful while packets are queued).
    last: u64,
    flows: Vec<VdFlow>,
    counters: Counters,
    limit: BufferLimit,
    mtu: u32,
    table: FlowParamTable<VdFlowParams>,
}

/// A VD flow's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VdFlowParams {
    /// w_i: the flow's DRR quantum in MTUs (key `quantum_mtus`), so Quantum_i = w_i · mtu.
    pub quantum_mtus: u32,
}

impl FlowParams for VdFlowParams {
    fn read(reader: &mut TableReader<'_>, inherited: &Self) -> Result<Self, ConfigError> {
        Ok(VdFlowParams {
            quantum_mtus: reader
                .positive_u32("quantum_mtus")?
                .unwrap_or(inherited.quantum_mtus),
        })
    }
}

impl Vd {
    /// M, the number of round queues.
    pub fn round_count(&self) -> usize {
        self.rounds.len()
    }

    /// The paper's `current`: the index (0..M) of the round queue being served.
    pub fn current(&self) -> usize {
        self.current_index
    }

    /// The round being served, counted from 0 without wrapping (after [`Scheduler::peek`],
    /// the round of the packet the next dequeue returns).
    pub fn current_round(&self) -> u64 {
        self.current
    }

    /// The paper's `last`: the index (0..M) of the last non-empty round queue, if any.
    pub fn last(&self) -> Option<usize> {
        (self.counters.backlog().packets > 0).then(|| self.index_of(self.last))
    }

    /// The round queue `q[index]`, head first.
    pub fn round_queue(&self, index: usize) -> impl Iterator<Item = &Packet> {
        self.pool.iter(self.rounds[index])
    }

    /// Packet slots allocated for all round queues together: blocks of 16 for the largest
    /// backlog seen, however it was spread over the rounds (at most ⌈packets/16⌉ + 1 blocks
    /// per non-empty round, plus [`crate::pool::SPARE_BLOCKS`] kept by emptied rounds).
    pub fn packet_slots(&self) -> usize {
        self.pool.slot_count()
    }

    /// The state of `flow`, if seen.
    pub fn flow(&self, flow: FlowId) -> Option<&VdFlow> {
        self.flows.get(flow as usize).filter(|f| f.weight > 0)
    }

    /// The queue index of round `round` (which must be in `current..current + M`).
    #[inline]
    fn index_of(&self, round: u64) -> usize {
        let index = self.current_index + (round - self.current) as usize;
        if index >= self.rounds.len() {
            index - self.rounds.len()
        } else {
            index
        }
    }

    /// `current = (current + 1) mod M`.
    #[inline]
    fn advance(&mut self) {
        self.current += 1;
        self.current_index += 1;
        if self.current_index == self.rounds.len() {
            self.current_index = 0;
        }
    }

    /// Figure 2 drop (1)–(7): removes the tail of `q[last]`, moving `last` back over
    /// queues it empties. Returns the removed packet.
    #[inline]
    fn drop_last(&mut self) -> Packet {
        let index = self.index_of(self.last);
        let packet = self
            .pool
            .pop_back(&mut self.rounds[index])
            .expect("`last` names a non-empty queue");
        self.flows[packet.flow as usize].bytes -= packet.size as u64;
        while self.last > self.current && self.rounds[self.index_of(self.last)].is_empty() {
            self.last -= 1;
        }
        packet
    }
}

/// Figure 2 enqueue (6)–(8) and dequeue (5)–(6): on the flow's first touch in a new round,
/// carry its deficit over by adding the quantum (once per round: the sum is then ≥ 0).
#[inline]
fn start_round(flow: &mut VdFlow, current: u64, quantum: i64) {
    if flow.round != current && flow.deficit < 0 {
        flow.deficit += quantum;
    }
}

impl Discipline for Vd {
    type Config = VdConfig;
    const INFO: DisciplineInfo = DisciplineInfo {
        id: "vd",
        name: "Vertical Dimensioning",
        citation: "Bakiras, Wang, Papadias & Hamdi, \"Vertical Dimensioning: A Novel DRR Implementation for Efficient Fair Queueing\"",
        summary: "DRR (quantum w_i·mtu) without per-flow queues: M FIFO round queues, each packet placed in the round DRR would send it, served in arrival order within a round; overflow drops the tail of the last round. O(1).",
        scheduler_params: &[
            ParamInfo {
                name: "mtu",
                unit: "bytes",
                default: "1500",
                description: "L_M, the largest packet; larger packets are dropped as invalid",
            },
            ParamInfo {
                name: "rounds",
                unit: "integer",
                default: "⌈buffer/mtu⌉ (required without buffer)",
                description: "M, the number of round queues",
            },
        ],
        flow_params: &[ParamInfo {
            name: "quantum_mtus",
            unit: "MTUs (integer ≥ 1)",
            default: "1",
            description: "w_i; the flow's DRR quantum is w_i·mtu bytes",
        }],
        per_flow_queues: false,
    };

    fn read_config(reader: &mut TableReader<'_>) -> Result<VdConfig, ConfigError> {
        let mtu = match reader.size("mtu")? {
            None => DEFAULT_MTU,
            Some(m) if (1..=u32::MAX as u64).contains(&m) => m as u32,
            Some(_) => return Err(reader.error("mtu", format!("must be from 1 to {} bytes", u32::MAX))),
        };
        let rounds = reader.integer("rounds", 1, MAX_ROUNDS as i64)?.map(|m| m as u32);
        if rounds.is_none() && !reader.has("buffer") {
            return Err(reader.error(
                "rounds",
                "required when `buffer` (bytes) is not set; the default is M = ⌈buffer/mtu⌉",
            ));
        }
        Ok(VdConfig { mtu, rounds })
    }

    fn build(config: VdConfig, context: &BuildContext<'_>) -> Result<Vd, ConfigError> {
        require_tail_drop(&Self::INFO, &context.limit)?;
        if config.mtu == 0 {
            return Err(ConfigError::new("scheduler.mtu", "0", "must be at least 1 byte"));
        }
        let rounds = match (config.rounds, context.limit.bytes) {
            (Some(m), _) if m >= 1 && m as u64 <= MAX_ROUNDS => m as u64,
            (Some(m), _) => {
                return Err(ConfigError::new(
                    "scheduler.rounds",
                    m.to_string(),
                    format!("must be an integer from 1 to {MAX_ROUNDS}"),
                ))
            }
            (None, Some(buffer)) => {
                let m = buffer.div_ceil(config.mtu as u64);
                if m > MAX_ROUNDS {
                    return Err(ConfigError::new(
                        "scheduler.rounds",
                        "(missing)",
                        format!("the default ⌈buffer/mtu⌉ = {m} exceeds {MAX_ROUNDS}; set rounds"),
                    ));
                }
                m
            }
            (None, None) => {
                return Err(ConfigError::new(
                    "scheduler.rounds",
                    "(missing)",
                    "required when `buffer` (bytes) is not set; the default is M = ⌈buffer/mtu⌉",
                ))
            }
        };
        let mtu = config.mtu as u64;
        let table = context
            .flows
            .parse(&Self::INFO, &VdFlowParams { quantum_mtus: 1 })?;
        table.validate(|params| {
            let weight = params.quantum_mtus as u64;
            if weight * mtu > MAX_QUANTUM {
                return Err((
                    "quantum_mtus",
                    weight.to_string(),
                    format!(
                        "the quantum quantum_mtus × mtu = {} exceeds {MAX_QUANTUM} bytes",
                        weight * mtu
                    ),
                ));
            }
            Ok(())
        })?;
        Ok(Vd {
            rounds: vec![BlockListEnds::default(); rounds as usize],
            pool: BlockLists::default(),
            current: 0,
            current_index: 0,
            last: 0,
            flows: Vec::new(),
            counters: Counters::default(),
            limit: context.limit,
            mtu: config.mtu,
            table,
        })
    }
}

impl Scheduler for Vd {
    fn id(&self) -> &'static str {
        Self::INFO.id
    }

    fn enqueue(&mut self, packet: Packet, _now: TimeNs, drops: &mut Vec<Dropped>) {
        if packet.flow > MAX_FLOW_ID {
            self.counters.refuse_invalid_flow(packet, drops);
            return;
        }
        if packet.size > self.mtu {
            self.counters.refuse_invalid_packet(packet, drops);
            return;
        }
        let index = packet.flow as usize;
        if index >= self.flows.len() {
            self.flows.resize(index + 1, VdFlow::default());
        }
        if self.flows[index].weight == 0 {
            self.flows[index].weight = self.table.get(packet.flow).quantum_mtus;
        }
        let current = self.current;
        let flow = &mut self.flows[index];
        let quantum = flow.weight as i64 * self.mtu as i64;
        let size = packet.size as i64;
        if flow.bytes == 0 {
            // (2)–(5): a flow becoming active starts afresh in the current round.
            flow.deficit = 0;
            flow.round = current;
        } else {
            start_round(flow, current, quantum); // (6)–(8)
        }
        // (9), equation (3): ⌈x/Q⌉ − 1 = (x − 1)/Q for x ≥ 1, where x ≥ size − deficit > 0.
        let x = flow.bytes as i64 - flow.deficit + size;
        debug_assert!(x >= 1, "flow {} has x = {x}", packet.flow);
        let offset = if x <= quantum {
            0
        } else {
            ((x - 1) / quantum) as u64
        };
        if offset >= self.rounds.len() as u64 {
            // The round would wrap onto an earlier one: the round array is full for this flow.
            self.counters.record_arrival(&packet);
            self.counters.record_drop(&packet, DropReason::BufferFull, false);
            drops.push(Dropped {
                packet,
                reason: DropReason::BufferFull,
            });
            return;
        }
        let position = current + offset;
        // (10)–(14).
        flow.bytes += size as u64;
        let backlog = self.counters.backlog();
        self.last = if backlog.packets == 0 {
            position
        } else {
            self.last.max(position)
        };
        let queue = self.index_of(position);
        self.pool.push_back(&mut self.rounds[queue], packet);
        // (15)–(16): drop tails of the last round until the backlog fits; the arrival is
        // counted as queued only if it survives, so the peak backlog never exceeds the limit.
        let mut packets = backlog.packets + 1;
        let mut bytes = backlog.bytes + packet.size as u64;
        if self.limit.fits(packets, bytes) {
            // The common case: arrival and queueing recorded with one look-up of the flow.
            self.counters.record_arrival_queued(&packet);
            return;
        }
        self.counters.record_arrival(&packet);
        let mut arrival_queued = true;
        while !self.limit.fits(packets, bytes) {
            let arrival_at_tail = arrival_queued && self.last == position;
            let dropped = self.drop_last();
            packets -= 1;
            bytes -= dropped.size as u64;
            if arrival_at_tail {
                // The arrival was the tail of q[last]: it never enters the buffer.
                arrival_queued = false;
                self.counters.record_drop(&dropped, DropReason::BufferFull, false);
                drops.push(Dropped {
                    packet: dropped,
                    reason: DropReason::BufferFull,
                });
            } else {
                self.counters.record_drop(&dropped, DropReason::PushedOut, true);
                drops.push(Dropped {
                    packet: dropped,
                    reason: DropReason::PushedOut,
                });
            }
        }
        if arrival_queued {
            self.counters.record_queued(&packet);
        }
    }

    fn dequeue(&mut self, _now: TimeNs, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        if self.counters.backlog().packets == 0 {
            return None;
        }
        while self.rounds[self.current_index].is_empty() {
            self.advance();
        }
        // (1)–(4)
        let packet = self
            .pool
            .pop_front(&mut self.rounds[self.current_index])
            .expect("q[current] is non-empty");
        let current = self.current;
        let flow = &mut self.flows[packet.flow as usize];
        flow.bytes -= packet.size as u64;
        // (5)–(8)
        start_round(flow, current, flow.weight as i64 * self.mtu as i64);
        flow.deficit -= packet.size as i64;
        flow.round = current;
        // (9)–(10)
        if self.rounds[self.current_index].is_empty() {
            self.advance();
        }
        self.counters.record_sent(&packet);
        Some(packet)
    }

    fn peek(&mut self, _now: TimeNs) -> Option<Packet> {
        if self.counters.backlog().packets == 0 {
            return None;
        }
        while self.rounds[self.current_index].is_empty() {
            self.advance();
        }
        self.pool.front(&self.rounds[self.current_index]).copied()
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FlowTable;
    use crate::disciplines::drr::{Drr, DrrConfig};
    use crate::testkit;
    use proptest::prelude::*;

    fn vd(weights: &[(FlowId, u32)], mtu: u32, rounds: Option<u32>, limit: BufferLimit) -> Vd {
        testkit::build_weighted(VdConfig { mtu, rounds }, weights, limit)
    }

    fn ids<'a>(queue: impl Iterator<Item = &'a Packet>) -> Vec<u64> {
        queue.map(|p| p.id).collect()
    }

    /// The rounds share one node pool: 100 bursts of 100 one-packet flows, each drained
    /// before the next, land in 100 different round queues (the current round moves on as each
    /// drains), yet the pool holds 7 + 64 blocks of 16, 1,136 packet slots — the peak backlog
    /// of 100 rounded up to whole blocks, plus the 64 spares emptied rounds may keep — where a
    /// FIFO per round keeping its peak capacity would hold 10,000.
    #[test]
    fn round_queues_share_a_pool_bounded_by_the_peak_backlog() {
        let mut s = vd(&[], 1500, Some(128), BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        let mut rounds_used = std::collections::BTreeSet::new();
        for burst in 0..100u64 {
            for flow in 0..100u32 {
                s.enqueue(
                    Packet::new(burst * 100 + flow as u64, flow, 1500, 0),
                    0,
                    &mut drops,
                );
            }
            rounds_used.insert(s.current());
            assert_eq!(s.round_queue(s.current()).count(), 100);
            for flow in 0..100u32 {
                assert_eq!(s.dequeue(0, &mut drops).unwrap().flow, flow);
            }
        }
        assert!(drops.is_empty());
        assert_eq!(rounds_used.len(), 100, "each burst used a round queue of its own");
        assert_eq!(s.packet_slots(), (7 + crate::pool::SPARE_BLOCKS as usize) * 16);
        assert_eq!(s.counters().peak_backlog().packets, 100);
    }

    /// Figure 1: M = 10, flows 1–4 with weights 2, 1, 1, 1, packets of L_M bytes numbered in
    /// arrival order, no departures. From the text: packets 1–3 (flows 1, 2, 4, each with a
    /// backlog of L_M) join q[0]; packet 4 (flow 4's second, backlog 2L_M, w = 1) joins q[1];
    /// packet 5 (flow 3's first) joins q[0]; packet 6 (flow 1's second, w = 2) joins q[0].
    /// The figure itself is not in the text; packets 7–10 continue it by equation (3) so that
    /// q[2] is the last non-empty queue, as the text says of figure 1: 7 = flow 1's third
    /// (⌈3L/2L⌉ − 1 = 1), 8 = flow 4's third (2), 9 = flow 2's second (1), 10 = flow 3's
    /// second (1).
    #[test]
    fn figure_1_placements() {
        let l = 1000;
        let mut s = vd(
            &[(1, 2), (2, 1), (3, 1), (4, 1)],
            l,
            Some(10),
            BufferLimit::UNLIMITED,
        );
        let flows = [1, 2, 4, 4, 3, 1, 1, 4, 2, 3];
        let mut drops = Vec::new();
        for (k, &flow) in flows.iter().enumerate() {
            s.enqueue(Packet::new(k as u64 + 1, flow, l, 0), 0, &mut drops);
            if k == 5 {
                // The placements the text describes.
                assert_eq!(ids(s.round_queue(0)), vec![1, 2, 3, 5, 6]);
                assert_eq!(ids(s.round_queue(1)), vec![4]);
            }
        }
        assert_eq!(ids(s.round_queue(0)), vec![1, 2, 3, 5, 6]);
        assert_eq!(ids(s.round_queue(1)), vec![4, 7, 9, 10]);
        assert_eq!(ids(s.round_queue(2)), vec![8]);
        assert!((3..10).all(|q| s.round_queue(q).next().is_none()));
        assert_eq!((s.current(), s.last()), (0, Some(2)));
        assert_eq!(s.flow(1).unwrap().bytes, 3 * l as u64);

        // Overflow with a buffer of 10·L_M: an 11th packet from flow 1 (backlog 4L_M, w = 2)
        // goes to q[1]; the tail of the last queue, packet 8 of q[2], is pushed out.
        let limit = BufferLimit {
            bytes: Some(10 * l as u64),
            ..BufferLimit::UNLIMITED
        };
        let mut s = vd(&[(1, 2), (2, 1), (3, 1), (4, 1)], l, Some(10), limit);
        for (k, &flow) in flows.iter().enumerate() {
            s.enqueue(Packet::new(k as u64 + 1, flow, l, 0), 0, &mut drops);
        }
        assert!(drops.is_empty());
        s.enqueue(Packet::new(11, 1, l, 0), 0, &mut drops);
        assert_eq!(drops.len(), 1);
        assert_eq!((drops[0].packet.id, drops[0].reason), (8, DropReason::PushedOut));
        assert_eq!(ids(s.round_queue(1)), vec![4, 7, 9, 10, 11]);
        assert_eq!(s.last(), Some(1), "q[2] emptied: last moves back");
        assert_eq!(s.flow(4).unwrap().bytes, 2 * l as u64);
        // A 12th packet, flow 2's third (backlog 2L_M → q[2]), is itself the tail of the
        // last queue: the arrival is refused.
        drops.clear();
        s.enqueue(Packet::new(12, 2, l, 0), 0, &mut drops);
        assert_eq!(
            (drops[0].packet.id, drops[0].reason),
            (12, DropReason::BufferFull)
        );
        assert_eq!(s.last(), Some(1));
        assert_eq!(s.backlog().bytes, 10 * l as u64);
        assert_eq!(s.counters().peak_backlog().bytes, 10 * l as u64);
        // Service: q[0] then q[1] in arrival order.
        let order: Vec<u64> = (0..10).map(|_| s.dequeue(0, &mut drops).unwrap().id).collect();
        assert_eq!(order, vec![1, 2, 3, 5, 6, 4, 7, 9, 10, 11]);
        assert_eq!(s.current(), 2);
    }

    /// Deficit bookkeeping of figure 2 on one flow (w = 1, L_M = 1000, so the quantum is 1000):
    /// 600 + 600 bytes go to rounds 0 and 1. Sending the first in round 0 leaves deficit
    /// −600 and empties q[0], so round 1 starts. A 300-byte arrival is the flow's first touch
    /// in round 1: enqueue (6)–(8) adds the quantum (deficit 400) and x = 600 − 400 + 300 =
    /// 500 ≤ 1000 puts it in round 1. The dequeue in round 1 must not add a second quantum.
    #[test]
    fn deficit_carries_over_once_per_round() {
        let mut s = vd(&[], 1000, Some(4), BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        s.enqueue(Packet::new(0, 0, 600, 0), 0, &mut drops);
        s.enqueue(Packet::new(1, 0, 600, 0), 0, &mut drops);
        assert_eq!((ids(s.round_queue(0)), ids(s.round_queue(1))), (vec![0], vec![1]));
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 0);
        assert_eq!(s.flow(0).unwrap().deficit, -600);
        assert_eq!(s.current_round(), 1, "q[0] emptied: current advanced");
        // Enqueue (6)–(8): new round, deficit < 0 → −600 + 1000 = 400; x = 600 − 400 + 300.
        s.enqueue(Packet::new(2, 0, 300, 0), 0, &mut drops);
        assert_eq!(s.flow(0).unwrap().deficit, 400);
        assert_eq!(ids(s.round_queue(1)), vec![1, 2]);
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 1);
        assert_eq!(
            s.flow(0).unwrap().deficit,
            -200,
            "no second quantum in the same round"
        );
        // x = 300 + 200 + 900 = 1400 → round 1 + 1 = 2.
        s.enqueue(Packet::new(3, 0, 900, 0), 0, &mut drops);
        assert_eq!(ids(s.round_queue(2)), vec![3]);
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 2);
        assert_eq!(s.flow(0).unwrap().deficit, -500);
        // Round 2: the dequeue is the first touch, (5)–(6) add the quantum: 500 − 900.
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 3);
        assert_eq!(s.flow(0).unwrap().deficit, -400);
        // The flow is empty; its next packet starts afresh (deficit 0) in the current round.
        s.enqueue(Packet::new(4, 0, 1000, 0), 0, &mut drops);
        assert_eq!(s.flow(0).unwrap().deficit, 0);
        assert_eq!(s.current(), 3);
        assert_eq!(ids(s.round_queue(3)), vec![4]);
    }

    #[test]
    fn invalid_packets_and_round_overflow() {
        let mut s = vd(&[], 1000, Some(2), BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        s.enqueue(Packet::new(0, 0, 1001, 0), 0, &mut drops);
        assert_eq!(drops[0].reason, DropReason::InvalidPacket);
        for id in 1..=3 {
            s.enqueue(Packet::new(id, 0, 1000, 0), 0, &mut drops);
        }
        // With M = 2 the third 1000-byte packet of a weight-1 flow would need round 2.
        assert_eq!((drops[1].packet.id, drops[1].reason), (3, DropReason::BufferFull));
        let flow = s.counters().flow(0).unwrap();
        assert_eq!(flow.dropped(DropReason::InvalidPacket), 1);
        assert_eq!(flow.dropped(DropReason::BufferFull), 1);
        assert_eq!(s.backlog().packets, 2);
    }

    #[test]
    fn configuration() {
        let build = |text: &str| {
            let t: toml::Table = text.parse().unwrap();
            crate::build_scheduler(&t, "link[0].scheduler", &FlowTable::default(), testkit::link())
        };
        let e = build("kind = \"vd\"").unwrap_err();
        assert_eq!(
            (e.path.as_str(), e.value.as_str()),
            ("link[0].scheduler.rounds", "(missing)")
        );
        let e = build("kind = \"vd\"\nbuffer = 3000\nmtu = 0").unwrap_err();
        assert_eq!(e.path, "link[0].scheduler.mtu");
        let e = build("kind = \"vd\"\nrounds = 4\ndrop_policy = \"longest_queue_drop\"").unwrap_err();
        assert!(e.path.ends_with("scheduler.drop_policy"), "{e}");
        let ok = |text: &str| match build(text).unwrap() {
            crate::AnyScheduler::Vd(vd) => (vd.round_count(), vd.mtu),
            other => panic!("built {}", other.id()),
        };
        assert_eq!(ok("kind = \"vd\"\nbuffer = \"64KB\""), (43, 1500)); // ⌈64000/1500⌉
        assert_eq!(
            ok("kind = \"vd\"\nbuffer = 3000\nmtu = 1000\nrounds = 7"),
            (7, 1000)
        );
    }

    /// Per-packet rounds of DRR, read from the `drr` discipline itself: a flow's visit count
    /// goes up whenever `peek` shows its deficit grew (a quantum was added).
    fn drr_rounds(d: &mut Drr, prev: &mut [i64], visits: &mut [u64]) -> Option<(Packet, u64)> {
        let mut drops = Vec::new();
        let head = d.peek(0)?;
        let f = head.flow as usize;
        let deficit = d.flow(head.flow).unwrap().deficit;
        if deficit > prev[f] {
            visits[f] += 1;
        }
        let p = d.dequeue(0, &mut drops).unwrap();
        prev[f] = d.flow(head.flow).unwrap().deficit;
        Some((p, visits[f]))
    }

    /// One step of a backlogged run: `Some(flow, size)` enqueues, `None` dequeues.
    type Step = Option<(FlowId, u32)>;

    fn backlogged_run() -> impl Strategy<Value = (Vec<u32>, u32, Vec<u32>, Vec<Step>)> {
        (proptest::collection::vec(1u32..5, 1..5), 300u32..=1500).prop_flat_map(|(weights, mtu)| {
            let n = weights.len() as FlowId;
            (
                Just(weights),
                Just(mtu),
                proptest::collection::vec(40u32..=mtu, 64),
                proptest::collection::vec(
                    prop_oneof![2 => Just(None), 1 => (0..n, 40u32..=mtu).prop_map(Some)],
                    1..400,
                ),
            )
        })
    }

    proptest! {
        #[test]
        fn invariants(
            trace in testkit::arb_trace(5, 300),
            weights in proptest::collection::vec(1u32..5, 5),
            bytes in 1500u64..20_000,
            mtu in prop_oneof![Just(1500u32), 1000u32..1500],
            rounds in proptest::option::of(1u32..12),
            packets in proptest::option::of(1u64..30),
        ) {
            let w: Vec<(FlowId, u32)> = weights.iter().enumerate().map(|(f, &w)| (f as FlowId, w)).collect();
            let limit = BufferLimit { bytes: Some(bytes), packets, ..BufferLimit::UNLIMITED };
            let mut s = vd(&w, mtu, rounds, limit);
            testkit::check_invariants(&mut s, &trace, true)?;
            let mut s = vd(&w, mtu, Some(rounds.unwrap_or(3)), BufferLimit::UNLIMITED);
            testkit::check_invariants(&mut s, &trace, true)?;
        }

        /// Each packet of a backlogged flow is sent in the round DRR with quantum w_i·L_M sends
        /// it, and lemma 1 holds: a flow backlogged over X complete rounds receives service in
        /// (X·w·L_M − L_M, X·w·L_M + L_M). Every flow starts with 400 packets and random
        /// arrivals are interleaved with departures; fewer than 400 departures happen, so no
        /// flow empties.
        #[test]
        fn rounds_match_drr_and_lemma_1((weights, mtu, sizes, steps) in backlogged_run()) {
            let flows = weights.len();
            let w: Vec<(FlowId, u32)> = weights.iter().enumerate().map(|(f, &w)| (f as FlowId, w)).collect();
            let mut v = vd(&w, mtu, Some(4096), BufferLimit::UNLIMITED);
            let quanta: Vec<(FlowId, u32)> = w.iter().map(|&(f, w)| (f, w * mtu)).collect();
            let mut d: Drr = testkit::build_weighted(DrrConfig::default(), &quanta, BufferLimit::UNLIMITED);
            let mut drops = Vec::new();
            let mut id = 0u64;
            let mut offer = |v: &mut Vd, d: &mut Drr, flow: FlowId, size: u32, id: &mut u64| {
                let p = Packet::new(*id, flow, size, 0);
                *id += 1;
                v.enqueue(p, 0, &mut drops);
                d.enqueue(p, 0, &mut drops);
            };
            for k in 0..400 {
                for f in 0..flows {
                    offer(&mut v, &mut d, f as FlowId, sizes[(k * flows + f) % sizes.len()], &mut id);
                }
            }
            let (mut prev, mut visits) = (vec![0i64; flows], vec![0u64; flows]);
            let mut vd_round = std::collections::HashMap::new();
            let mut drr_round = std::collections::HashMap::new();
            // served[f][r]: bytes of flow f sent in VD round r.
            let mut served = vec![Vec::<u64>::new(); flows];
            let mut last_round = 0;
            for step in &steps {
                match *step {
                    Some((flow, size)) => offer(&mut v, &mut d, flow, size, &mut id),
                    None => {
                        v.peek(0);
                        let round = v.current_round();
                        let p = v.dequeue(0, &mut Vec::new()).unwrap();
                        vd_round.insert(p.id, round + 1);
                        let f = p.flow as usize;
                        if served[f].len() <= round as usize {
                            served[f].resize(round as usize + 1, 0);
                        }
                        served[f][round as usize] += p.size as u64;
                        last_round = round;
                        let (q, r) = drr_rounds(&mut d, &mut prev, &mut visits).unwrap();
                        drr_round.insert(q.id, r);
                    }
                }
            }
            prop_assert!(drops.is_empty());
            // Compare rounds of the packets both have sent, and of everything VD still holds
            // against DRR's eventual schedule.
            for (id, r) in &vd_round {
                if let Some(dr) = drr_round.get(id) {
                    prop_assert_eq!(r, dr, "packet {} VD round {} DRR round {}", id, r, dr);
                }
            }
            let mut vd_rest = std::collections::HashMap::new();
            while v.peek(0).is_some() {
                let round = v.current_round() + 1;
                let p = v.dequeue(0, &mut Vec::new()).unwrap();
                vd_rest.insert(p.id, round);
            }
            while let Some((p, r)) = drr_rounds(&mut d, &mut prev, &mut visits) {
                let vr = vd_round.get(&p.id).or(vd_rest.get(&p.id)).copied();
                prop_assert_eq!(vr, Some(r), "packet {} (flow {})", p.id, p.flow);
            }
            // Lemma 1 over every run of X complete rounds before the round in progress.
            let l = mtu as i64;
            for (f, per_round) in served.iter().enumerate() {
                let q = weights[f] as i64 * l;
                let complete = (last_round as usize).min(per_round.len());
                for a in 0..complete {
                    let mut s = 0i64;
                    for (x, bytes) in per_round[a..complete].iter().enumerate() {
                        s += *bytes as i64;
                        let x = x as i64 + 1;
                        prop_assert!(s > x * q - l && s < x * q + l,
                            "flow {} rounds {}..{}: {} bytes vs {}·{} ± {}", f, a, a + x as usize, s, x, q, l);
                    }
                }
            }
        }
    }
}
