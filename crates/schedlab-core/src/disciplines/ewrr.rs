//! Elastic Weighted Round Robin (`ewrr`).
//!
//! H. Yokota, T. Kato and H. Tominaga, "A New Round Robin Scheduling Algorithm for
//! Multimedia Traffic and Differentiated Services Router Implementation" (received June 2001,
//! accepted November 2001; the seed text names no venue), seed 003, §3, equations (1)–(6).
//!
//! Each queue i has a weight W_i (bytes) and a current weight w_i(t) for scheduling window
//! SW(t). In SW(t) queue i sends packets while the bytes it has sent in the window,
//! c_i(t), are below w_i(t); the packet that crosses w_i(t) is still sent and the excess is
//! paid back in SW(t + 1). Between windows
//!
//! ```text
//! w_i(t + 1) = w_i(t) + (W_i − c_i(t))      (1)
//! w_i(t)    <= W_i^max                       (2)
//! ```
//!
//! so weight a queue leaves unused (c_i(t) < w_i(t), in particular c_i(t) = 0 while it is
//! idle) accumulates, up to W_i^max. "Those queues that do not have packets to send are
//! extracted from the SW, and when all queues have been removed from the SW, w(i) is
//! recalculated from Eqs. (1) and (2), and the process moves on to the next SW." With
//! W_i^max = W_i this is DRR with quantum W_i up to the send-then-pay-back rule; eq. (6):
//! backlogged queues get r_i = W_i / ΣW · r.
//!
//! Paper name → code ([`crate::round_robin`]'s per-flow state):
//! * W_i → [`DeficitFlow::quantum`] (flow key `weight_bytes`); W_i^max →
//!   [`EwrrFlow::max_weight`] (flow key `max_weight_bytes`);
//! * w_i(t) − c_i(t), the weight still unused in window t → [`DeficitFlow::deficit`] (w_i(t)
//!   at the start of a visit; each sent packet subtracts its size);
//! * t of SW(t) → `window` (the window being served) and [`EwrrFlow::window`] (the window the
//!   deficit refers to: the one the flow is queued for, or, while idle, the first window it
//!   has not taken part in);
//! * "queue i is in the SW" → the flow is on `active`: the flows of SW(t) still to be visited,
//!   then those queued for SW(t + 1);
//! * eqs. (1)+(2) at the end of a visit → `end_visit`: `deficit = min(deficit + W_i,
//!   W_i^max)`, `window += 1`; over k idle windows, applied in one step when the flow rejoins
//!   → `accumulate_until`: `deficit = min(deficit + k·W_i, W_i^max)`.
//!
//! Invariants: a flow is on `active` iff its queue is non-empty (a flow emptied by a
//! push-out leaves lazily when it reaches the head); flows on `active` are ordered by the
//! window they are queued for, and every such window is `window` or `window + 1`;
//! −L^max < deficit ≤ W_i^max between visits (L^max the largest packet); while a flow stays
//! backlogged its visits end with deficit ≤ 0, so no weight is lost to the cap and eq. (3)
//! holds exactly: Σ c_i(t) over k windows = k·W_i + w_i(first) − w_i(first + k).
//!
//! Complexity: O(1) per packet when every W_i is at least the largest packet (every visit
//! then sends at least one packet, as in DRR); a flow with W_i below its packet sizes
//! is visited ⌈L/W_i⌉ windows per packet of L bytes.
//!
//! Choices where the paper is silent:
//! * Visit order: round robin in order of joining, each visit's packets back to back (fig. 2
//!   shows one block per queue per window).
//! * A window is a pass over the flows that were backlogged when it started. A flow that
//!   becomes backlogged joins the first window that has not started serving yet (the paper
//!   "extracts" empty queues from the running SW); a flow whose visit ends still backlogged
//!   is queued for the next window.
//! * Windows are counted only while the scheduler holds packets: an idle link does not
//!   advance t, so idle weight accumulates per window served to others, not per second
//!   (the paper defines the SW by its transmissions, eq. (5)). When the scheduler empties,
//!   the next arrival starts a new window.
//! * w_i at "the beginning" is W_i; a flow's beginning is its first arrival (flows first
//!   seen at run time do not inherit credit from windows before they existed).
//! * A flow that sets no `weight_bytes` has W_i = 1500 bytes; `max_weight_bytes` defaults to W_i and
//!   must be at least W_i (W_i^max < W_i would cap away part of the weight every window and
//!   break eq. (6)). Both are limited to 2^48 bytes.
//! * The paper's W_i = m·L^max is written in bytes (`weight_bytes = 3000` for m = 2 and
//!   L^max = 1500).
//! * `drop_policy = "longest_queue_drop"` weighs queue lengths by 1/W_i.
//! * A flow id above [`crate::MAX_FLOW_ID`] is dropped as invalid without entering the
//!   per-flow counters.
//! * `peek` ends visits whose weight is used up (rotating the list) exactly as the next
//!   dequeue would.

use crate::config::{ConfigError, FlowParams, TableReader};
use crate::counters::{Counters, Dropped};
use crate::discipline::{BuildContext, Discipline, DisciplineInfo, ParamInfo};
use crate::packet::{FlowId, Packet};
use crate::queues::Admission;
use crate::round_robin::{ActiveList, DeficitFlow, DeficitFlows};
use crate::scheduler::Scheduler;
use crate::time::TimeNs;

/// W_i, in bytes, of a flow that sets no `weight`.
pub const DEFAULT_WEIGHT_BYTES: u64 = 1500;

/// Largest W_i and W_i^max accepted, in bytes (keeps the arithmetic in `i64`).
pub const MAX_WEIGHT_BYTES: u64 = 1 << 48;

/// Parameters of [`Ewrr`] (none: W_i and W_i^max are per-flow keys).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EwrrConfig;

/// EWRR's own per-flow fields. W_i is [`DeficitFlow::quantum`] and w_i(t) − c_i(t), the
/// weight still unused in window t, is [`DeficitFlow::deficit`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EwrrFlow {
    /// W_i^max, bytes: the cap on the current weight.
    pub max_weight: u64,
    /// The window t that the deficit refers to.
    pub window: u64,
}

/// Eqs. (1) and (2) on one flow's state.
trait Windows {
    /// At the end of the flow's visit to its window.
    fn end_visit(&mut self);
    /// Over the windows up to `window` in which the flow sent nothing.
    fn accumulate_until(&mut self, window: u64);
}

impl Windows for DeficitFlow<EwrrFlow> {
    #[inline]
    fn end_visit(&mut self) {
        self.deficit = (self.deficit + self.quantum as i64).min(self.extra.max_weight as i64);
        self.extra.window += 1;
    }

    #[inline]
    fn accumulate_until(&mut self, window: u64) {
        let idle = window - self.extra.window;
        if idle > 0 {
            let grown = self.deficit as i128 + idle as i128 * self.quantum as i128;
            self.deficit = grown.min(self.extra.max_weight as i128) as i64;
            self.extra.window = window;
        }
    }
}

/// An EWRR flow's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EwrrFlowParams {
    /// W_i in bytes (key `weight_bytes`).
    pub weight_bytes: u64,
    /// W_i^max in bytes (key `max_weight_bytes`); `None`: W_i.
    pub max_weight_bytes: Option<u64>,
}

impl EwrrFlowParams {
    /// W_i^max in bytes.
    pub fn max_weight(&self) -> u64 {
        self.max_weight_bytes.unwrap_or(self.weight_bytes)
    }
}

impl FlowParams for EwrrFlowParams {
    fn read(reader: &mut TableReader<'_>, inherited: &Self) -> Result<Self, ConfigError> {
        let weight_bytes = reader.size("weight_bytes")?;
        if let Some(w) = weight_bytes {
            if !(1..=MAX_WEIGHT_BYTES).contains(&w) {
                return Err(reader.error(
                    "weight_bytes",
                    format!("must be from 1 to {MAX_WEIGHT_BYTES} bytes"),
                ));
            }
        }
        let max_weight_bytes = reader.size("max_weight_bytes")?;
        if max_weight_bytes.is_some_and(|m| m > MAX_WEIGHT_BYTES) {
            return Err(reader.error(
                "max_weight_bytes",
                format!("must be at most {MAX_WEIGHT_BYTES} bytes"),
            ));
        }
        let params = EwrrFlowParams {
            weight_bytes: weight_bytes.unwrap_or(inherited.weight_bytes),
            max_weight_bytes: max_weight_bytes.or(inherited.max_weight_bytes),
        };
        if params.max_weight() < params.weight_bytes {
            return Err(reader.error(
                "max_weight_bytes",
                format!(
                    "must be at least the flow's weight W_i = {} bytes",
                    params.weight_bytes
                ),
            ));
        }
        Ok(params)
    }
}

/// Elastic Weighted Round Robin scheduler.
#[derive(Clone, Debug)]
pub struct Ewrr {
    flows: DeficitFlows<EwrrFlowParams, EwrrFlow>,
    active: ActiveList,
    /// t: the scheduling window being served (0 before the first).
    window: u64,
}

impl Ewrr {
    /// The state of `flow`, if seen.
    pub fn flow(&self, flow: FlowId) -> Option<&DeficitFlow<EwrrFlow>> {
        self.flows.get(flow)
    }

    /// The scheduling window being served (t of SW(t)); 0 before the first.
    pub fn window(&self) -> u64 {
        self.window
    }

    /// Ends visits that are over (weight used up, or queue emptied by a push-out) until the
    /// head flow may send; returns it.
    #[inline]
    fn select(&mut self) -> Option<FlowId> {
        loop {
            let flow = self.active.front()?;
            let emptied = self.flows.is_empty(flow);
            let state = self.flows.state(flow);
            // The head is queued for the next window once the current one has been served.
            self.window = self.window.max(state.extra.window);
            if emptied {
                state.end_visit();
                state.active = false;
                self.active.remove_head();
                continue;
            }
            if state.deficit > 0 {
                return Some(flow);
            }
            // w_i(t) − c_i(t) ≤ 0: the flow is done with SW(t); it waits for SW(t + 1).
            state.end_visit();
            self.active.rotate();
        }
    }
}

impl Discipline for Ewrr {
    type Config = EwrrConfig;
    const INFO: DisciplineInfo = DisciplineInfo {
        id: "ewrr",
        name: "Elastic Weighted Round Robin",
        citation: "Yokota, Kato & Tominaga, \"A New Round Robin Scheduling Algorithm for Multimedia Traffic and Differentiated Services Router Implementation\", 2001",
        summary: "Round robin in scheduling windows; a flow may cross its current weight and pays the excess back next window, and weight left unused (also while idle) accumulates up to max_weight. Backlogged rates W_i/ΣW·r; DRR when max_weight = weight.",
        scheduler_params: &[],
        flow_params: &[
            ParamInfo {
                name: "weight_bytes",
                unit: "bytes",
                default: "1500",
                description: "W_i, bytes the flow may send per scheduling window",
            },
            ParamInfo {
                name: "max_weight_bytes",
                unit: "bytes",
                default: "W_i",
                description: "W_i^max, cap on the current weight accumulated from unused windows (>= W_i)",
            },
        ],
        per_flow_queues: true,
    };

    fn read_config(_reader: &mut TableReader<'_>) -> Result<EwrrConfig, ConfigError> {
        Ok(EwrrConfig)
    }

    fn build(_config: EwrrConfig, context: &BuildContext<'_>) -> Result<Ewrr, ConfigError> {
        let base = EwrrFlowParams {
            weight_bytes: DEFAULT_WEIGHT_BYTES,
            max_weight_bytes: None,
        };
        Ok(Ewrr {
            flows: DeficitFlows::new(context.limit, context.flows.parse(&Self::INFO, &base)?),
            active: ActiveList::default(),
            window: 0,
        })
    }
}

impl Scheduler for Ewrr {
    fn id(&self) -> &'static str {
        Self::INFO.id
    }

    fn enqueue(&mut self, packet: Packet, _now: TimeNs, drops: &mut Vec<Dropped>) {
        let flow = packet.flow;
        // The first window that has not started serving.
        let joining = self.window + 1;
        // w_i at the flow's beginning is W_i.
        let first = |p: &EwrrFlowParams| DeficitFlow {
            deficit: p.weight_bytes as i64,
            ..DeficitFlow::new(
                p.weight_bytes,
                EwrrFlow {
                    max_weight: p.max_weight(),
                    window: joining,
                },
            )
        };
        if self.flows.admit(packet, drops, |s| s.quantum, first) == Admission::Queued {
            let state = self.flows.state(flow);
            if !state.active {
                state.accumulate_until(joining);
                state.active = true;
                self.active.push(flow);
            }
        }
    }

    fn dequeue(&mut self, _now: TimeNs, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        let flow = self.select()?;
        // c_i(t) += size: the packet that crosses w_i(t) is sent; the excess is paid back.
        let (packet, emptied) = self.flows.send(flow);
        let state = self.flows.state(flow);
        if emptied {
            state.end_visit();
            state.active = false;
            self.active.remove_head();
        } else if state.deficit <= 0 {
            state.end_visit();
            self.active.rotate();
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{BufferLimit, DropPolicy, FlowTable};
    use crate::disciplines::drr::{Drr, DrrConfig};
    use crate::testkit;
    use proptest::prelude::*;

    /// Flows `(id, W_i, W_i^max)` with `weight_unit = 1`.
    fn ewrr(flows: &[(FlowId, u32, u64)], limit: BufferLimit) -> Ewrr {
        let texts: Vec<(FlowId, String)> = flows
            .iter()
            .map(|&(flow, w, max)| (flow, format!("weight_bytes = {w}\nmax_weight_bytes = {max}")))
            .collect();
        testkit::build_with(EwrrConfig, texts.iter().map(|(f, t)| (*f, t.as_str())), limit)
    }

    fn drr(quanta: &[(FlowId, u32)]) -> Drr {
        testkit::build_weighted(DrrConfig::default(), quanta, BufferLimit::UNLIMITED)
    }

    fn enqueue_all(s: &mut Ewrr, packets: &[(u64, FlowId, u32)]) {
        let mut drops = Vec::new();
        for &(id, flow, size) in packets {
            s.enqueue(Packet::new(id, flow, size, 0), 0, &mut drops);
        }
        assert!(drops.is_empty());
    }

    fn dequeue_ids(s: &mut Ewrr, n: usize) -> Vec<u64> {
        let mut drops = Vec::new();
        (0..n).map(|_| s.dequeue(0, &mut drops).unwrap().id).collect()
    }

    /// The crossing packet is sent and paid back (fig. 3(a)). W = W^max = 500 for both flows;
    /// flow 0 has six 300-byte packets (ids 0..6), flow 1 a 1200-byte packet then three of
    /// 100 bytes (ids 6..10). By eqs. (1)–(2):
    /// SW1: flow 0 w=500 sends 0, 1 (c=600, w(2)=400); flow 1 w=500 sends 6 (c=1200, w(2)=−200).
    /// SW2: flow 0 sends 2, 3 (c=600, w(3)=300); flow 1 has w=−200 and sends nothing (w(3)=300).
    /// SW3: flow 0 sends 4 (c=300, w(4)=500); flow 1 sends 7, 8, 9 (c=300, empties, w(4)=500).
    /// SW4: flow 0 sends 5 (c=300, empties, w(5)=min(700, 500)=500).
    #[test]
    fn crossing_packet_is_sent_and_its_excess_paid_back() {
        let mut s = ewrr(&[(0, 500, 500), (1, 500, 500)], BufferLimit::UNLIMITED);
        let mut packets: Vec<(u64, FlowId, u32)> = (0..6).map(|id| (id, 0, 300)).collect();
        packets.extend([(6, 1, 1200), (7, 1, 100), (8, 1, 100), (9, 1, 100)]);
        enqueue_all(&mut s, &packets);
        assert_eq!(dequeue_ids(&mut s, 3), vec![0, 1, 6]);
        let f1 = *s.flow(1).unwrap();
        assert_eq!(
            (f1.deficit, f1.extra.window),
            (-200, 2),
            "w_1(2) = 500 + 500 − 1200"
        );
        assert_eq!(dequeue_ids(&mut s, 2), vec![2, 3]);
        assert_eq!(s.window(), 2);
        assert_eq!(dequeue_ids(&mut s, 4), vec![4, 7, 8, 9]);
        assert_eq!(s.window(), 3);
        assert_eq!(dequeue_ids(&mut s, 1), vec![5]);
        assert_eq!(s.window(), 4);
        let f0 = *s.flow(0).unwrap();
        assert_eq!((f0.deficit, f0.extra.window, f0.active), (500, 5, false));
        assert!(s.peek(0).is_none());
    }

    /// Idle accumulation is capped at W^max (fig. 3(b), eq. (2)). Flow 0: W = 500,
    /// W^max = 1200; flow 1: W = W^max = 500 with 500-byte packets. SW1: flow 0 sends a
    /// 100-byte packet and empties (w_0(2) = 900), flow 1 sends one packet. Flow 1 alone is
    /// served in SW2–SW4 while flow 0 accumulates: 900 → 1400, capped to 1200. A burst of six
    /// 300-byte packets then joins SW5 with w_0 = 1200 and sends four of them (1200 bytes);
    /// without the cap (900 + 3·500 = 2400) it would send all six, and with W^max = W only two.
    #[test]
    fn idle_weight_accumulates_up_to_max_weight() {
        let mut s = ewrr(&[(0, 500, 1200), (1, 500, 500)], BufferLimit::UNLIMITED);
        let mut packets = vec![(0, 0, 100)];
        packets.extend((1..=10).map(|id| (id, 1, 500)));
        enqueue_all(&mut s, &packets);
        assert_eq!(dequeue_ids(&mut s, 2), vec![0, 1]);
        assert_eq!(s.flow(0).unwrap().deficit, 900);
        assert_eq!(dequeue_ids(&mut s, 3), vec![2, 3, 4]);
        assert_eq!(s.window(), 4);
        enqueue_all(&mut s, &(11..=16).map(|id| (id, 0, 300)).collect::<Vec<_>>());
        let f0 = *s.flow(0).unwrap();
        assert_eq!((f0.deficit, f0.extra.window), (1200, 5), "capped at W^max");
        assert_eq!(dequeue_ids(&mut s, 5), vec![5, 11, 12, 13, 14]);
        // SW6: w_0(6) = min(1200 − 1200 + 500, 1200) = 500: 300 (200 left), 300 (crosses).
        assert_eq!(dequeue_ids(&mut s, 3), vec![6, 15, 16]);
        assert_eq!(s.flow(0).unwrap().deficit, 400, "w_0(7) = 500 − 600 + 500");
        assert_eq!(dequeue_ids(&mut s, 4), vec![7, 8, 9, 10]);
    }

    /// With W^max = W and every W a multiple of the (equal) packet size, no packet crosses,
    /// and EWRR sends exactly what DRR with quantum W sends: 250 windows of 500 + 1000 + 1500
    /// bytes after 3000 packets of 250 bytes.
    #[test]
    fn equals_drr_when_max_weight_is_weight() {
        let mut s = ewrr(
            &[(0, 500, 500), (1, 1000, 1000), (2, 1500, 1500)],
            BufferLimit::UNLIMITED,
        );
        let served = testkit::backlogged_service(&mut s, &[0, 1, 2], 2000, |_, _| 250, 3000);
        assert_eq!(served, vec![125_000, 250_000, 375_000]);
        let mut d = drr(&[(0, 500), (1, 1000), (2, 1500)]);
        let mut e = ewrr(
            &[(0, 500, 500), (1, 1000, 1000), (2, 1500, 1500)],
            BufferLimit::UNLIMITED,
        );
        let packets: Vec<Packet> = (0..600)
            .map(|id| Packet::new(id, (id % 3) as FlowId, 250, id * 100_000))
            .collect();
        assert_eq!(
            testkit::send_order(&mut e, &packets),
            testkit::send_order(&mut d, &packets)
        );
    }

    /// Long-run rates with W^max = W and packet sizes that do cross: EWRR and DRR both give
    /// W_i/ΣW (eq. (6)); over 30,000 packets each share is within 0.2 % of it, and the two
    /// disciplines' shares within 0.3 % of each other.
    #[test]
    fn long_run_rates_match_drr() {
        let weights = [(0, 600u32), (1, 1500), (2, 2400)];
        let size = |f: FlowId, k: usize| 40 + ((f as usize * 7919 + k * 104_729) % 1461) as u32;
        let mut e = ewrr(&weights.map(|(f, w)| (f, w, w as u64)), BufferLimit::UNLIMITED);
        let mut d = drr(&weights);
        let se = testkit::backlogged_service(&mut e, &[0, 1, 2], 40_000, size, 30_000);
        let sd = testkit::backlogged_service(&mut d, &[0, 1, 2], 40_000, size, 30_000);
        let (te, td): (u64, u64) = (se.iter().sum(), sd.iter().sum());
        for (f, w) in weights {
            let share = w as f64 / 4500.0;
            let (re, rd) = (
                se[f as usize] as f64 / te as f64,
                sd[f as usize] as f64 / td as f64,
            );
            assert!(
                (re - share).abs() < 0.002 * share,
                "EWRR flow {f}: {re} vs {share}"
            );
            assert!(
                (rd - share).abs() < 0.002 * share,
                "DRR flow {f}: {rd} vs {share}"
            );
            assert!((re - rd).abs() < 0.003 * share, "flow {f}: EWRR {re} DRR {rd}");
        }
    }

    #[test]
    fn configuration_errors_name_the_flow_key() {
        let build = |defaults: &str, flow: &str| {
            let mut table = FlowTable::uniform(testkit::params(defaults));
            table.set(3, testkit::params(flow), "flow[1]");
            let context = testkit::context(BufferLimit::UNLIMITED, &table);
            Ewrr::build(EwrrConfig, &context)
        };
        let e = build("", "weight_bytes = \"3KB\"\nmax_weight_bytes = 2999").unwrap_err();
        assert_eq!(e.path, "flow[1].max_weight_bytes");
        assert_eq!(e.value, "2999");
        assert!(e.rule.contains("W_i = 3000 bytes"), "{e}");
        let e = build("weight_bytes = 0", "").unwrap_err();
        assert_eq!(e.path, "flow_defaults.weight_bytes");
        // W^max defaults to W, also when W is inherited from the flow defaults.
        let s = build("weight_bytes = 1000", "max_weight_bytes = 2999").unwrap();
        let (w3, w4) = (s.flows.table().get(3), s.flows.table().get(4));
        assert_eq!((w3.weight_bytes, w3.max_weight()), (1000, 2999));
        assert_eq!((w4.weight_bytes, w4.max_weight()), (1000, 1000));
        let table: toml::Table = "kind = \"ewrr\"\nweight_unit = 1".parse().unwrap();
        let e =
            crate::build_scheduler(&table, "scheduler", &FlowTable::default(), testkit::link()).unwrap_err();
        assert_eq!(e.path, "scheduler.weight_unit");
    }

    /// A flow id beyond MAX_FLOW_ID is refused without touching the per-flow counters.
    #[test]
    fn invalid_flow_id_is_refused() {
        let mut s = ewrr(&[], BufferLimit::UNLIMITED);
        let mut drops = Vec::new();
        s.enqueue(Packet::new(0, u32::MAX, 100, 0), 0, &mut drops);
        assert_eq!(drops[0].reason, crate::counters::DropReason::InvalidPacket);
        assert!(s.counters().flows().is_empty());
        assert!(s.dequeue(0, &mut drops).is_none());
    }

    proptest! {
        #[test]
        fn invariants(
            trace in testkit::arb_trace(5, 300),
            lqd in proptest::bool::ANY,
            bytes in 3000u64..30_000,
            extra in 0u64..6000,
        ) {
            let policy = if lqd { DropPolicy::LongestQueueDrop } else { DropPolicy::TailDrop };
            let limit = BufferLimit { bytes: Some(bytes), policy, ..BufferLimit::UNLIMITED };
            // Flow 1's weight is below the largest packet, so some windows pass it by.
            let mut s = ewrr(&[(1, 300, 300 + extra), (2, 1500, 1500), (3, 4000, 4000 + extra)], limit);
            testkit::check_invariants(&mut s, &trace, true)?;
        }

        /// Fairness while backlogged, however long the run. Flows first run idle phases so
        /// they enter with accumulated weights w_j(s) in (−L^max, W_j^max]; then all are
        /// backlogged from window s on. Summing eq. (1) over the k complete windows since s
        /// (no weight is capped away while backlogged, as every visit ends with w − c ≤ 0):
        /// S_j = k·W_j + w_j(s) − w_j(s+k) + p_j, with p_j the bytes sent in the window in
        /// progress. By eq. (2) and the crossing rule, w_j(s) ∈ (−L^max, W_j^max] and
        /// p_j − w_j(s+k) ∈ [−W_j^max, L^max), so E_j = S_j − k·W_j satisfies
        /// |E_j| < b_j = W_j^max + L^max. As Σ_j (W_i·k·W_j) = ΣW·k·W_i,
        /// ΣW·S_i − W_i·S = (ΣW − W_i)·E_i − W_i·Σ_{j≠i} E_j, hence the constant bound
        /// |ΣW·S_i − W_i·S| < (ΣW − W_i)·b_i + W_i·Σ_{j≠i} b_j.
        #[test]
        fn backlogged_service_stays_within_the_derived_bound(
            flows in proptest::collection::vec((100u32..3000, 0u64..5000), 2..5),
            warm in 0usize..40,
            sizes in proptest::collection::vec(40u32..=1500, 97),
            n in 1usize..1500,
        ) {
            let spec: Vec<(FlowId, u32, u64)> = flows
                .iter()
                .enumerate()
                .map(|(f, &(w, extra))| (f as FlowId, w, w as u64 + extra))
                .collect();
            let mut s = ewrr(&spec, BufferLimit::UNLIMITED);
            let mut drops = Vec::new();
            let mut id = 0u64;
            let mut next_size = || { id += 1; sizes[id as usize % sizes.len()] };
            // Idle phases: one packet per flow, then flow 0 alone, each drained.
            for f in 0..spec.len() {
                let size = next_size();
                s.enqueue(Packet::new(0, f as FlowId, size, 0), 0, &mut drops);
            }
            while s.dequeue(0, &mut drops).is_some() {}
            for _ in 0..warm {
                let size = next_size();
                s.enqueue(Packet::new(0, 0, size, 0), 0, &mut drops);
            }
            while s.dequeue(0, &mut drops).is_some() {}
            // Backlogged phase: more packets per flow than can be sent.
            for _ in 0..n + 1 {
                for f in 0..spec.len() {
                    let size = next_size();
                    s.enqueue(Packet::new(0, f as FlowId, size, 0), 0, &mut drops);
                }
            }
            prop_assert!(drops.is_empty());
            let mut served = vec![0u64; spec.len()];
            for _ in 0..n {
                let p = s.dequeue(0, &mut drops).unwrap();
                served[p.flow as usize] += p.size as u64;
            }
            let total: u64 = served.iter().sum();
            let lmax = *sizes.iter().max().unwrap() as u64;
            let sum_w: u64 = spec.iter().map(|f| f.1 as u64).sum();
            let b: Vec<u64> = spec.iter().map(|f| f.2 + lmax).collect();
            let sum_b: u64 = b.iter().sum();
            for (i, &(_, w, _)) in spec.iter().enumerate() {
                let w = w as u64;
                let gap = (sum_w as i128 * served[i] as i128 - w as i128 * total as i128).abs();
                let bound = (sum_w - w) as i128 * b[i] as i128 + w as i128 * (sum_b - b[i]) as i128;
                prop_assert!(gap < bound, "flow {}: |ΣW·S_i − W_i·S| = {} ≥ {}", i, gap, bound);
            }
        }
    }
}
