//! Shared test helpers: random traces and the invariant checks every discipline must pass.

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::link::{run_link, LinkRun, Outcome};
use crate::packet::{FlowId, Packet};
use crate::scheduler::Scheduler;
use crate::time::Rate;

/// The test link: 8 Mbit/s, so one byte takes exactly 1 µs.
pub fn link() -> Rate {
    Rate::from_bits_per_second(8_000_000).unwrap()
}

/// Ids of `packets` in the order the scheduler sent them on [`link`].
pub fn send_order<S: Scheduler + ?Sized>(scheduler: &mut S, packets: &[Packet]) -> Vec<u64> {
    let run = run_link(scheduler, link(), packets).unwrap();
    run.send_order
        .iter()
        .map(|(index, _)| packets[*index].id)
        .collect()
}

/// Random traces: up to `max_len` packets of 40..=1500 bytes over `flows` flows, with gaps
/// of 0..3 ms (so both idle periods and heavy backlogs occur on the 8 Mbit/s test link).
pub fn arb_trace(flows: FlowId, max_len: usize) -> impl Strategy<Value = Vec<Packet>> {
    proptest::collection::vec(
        (
            0..flows,
            40u32..=1500,
            prop_oneof![3 => 0u64..200_000, 1 => 0u64..3_000_000],
        ),
        1..max_len,
    )
    .prop_map(|rows| {
        let mut time = 0;
        rows.into_iter()
            .enumerate()
            .map(|(id, (flow, size, gap))| {
                time += gap;
                Packet {
                    class: (flow % 4) as u8,
                    ..Packet::new(id as u64, flow, size, time)
                }
            })
            .collect()
    })
}

/// Runs `trace` through `scheduler` on the test link and checks the invariants every
/// discipline keeps: every packet sent or dropped exactly once; counters agree; FIFO order
/// within a flow; the link never sends two packets at once nor a packet before it arrived;
/// no stall; and, if `work_conserving`, never idle while backlogged.
pub fn check_invariants<S: Scheduler + ?Sized>(
    scheduler: &mut S,
    trace: &[Packet],
    work_conserving: bool,
) -> Result<LinkRun, TestCaseError> {
    let run = run_link(scheduler, link(), trace).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(run.stalled, 0, "scheduler stalled with packets queued");
    let mut seen = vec![false; trace.len()];
    for (index, _) in &run.send_order {
        prop_assert!(!seen[*index], "packet {} sent twice", index);
        seen[*index] = true;
    }
    let mut dropped = 0u64;
    for (index, outcome) in run.outcomes.iter().enumerate() {
        match outcome {
            None => {
                return Err(TestCaseError::fail(format!(
                    "packet {index} neither sent nor dropped"
                )))
            }
            Some(Outcome::Sent { start, end }) => {
                prop_assert!(seen[index], "packet {} marked sent but not in send order", index);
                prop_assert!(*start >= trace[index].arrival);
                prop_assert!(end > start);
            }
            Some(Outcome::Dropped { .. }) => {
                prop_assert!(!seen[index], "packet {} both sent and dropped", index);
                dropped += 1;
            }
        }
    }
    prop_assert_eq!(run.send_order.len() as u64 + dropped, trace.len() as u64);
    // Counters agree with the outcomes.
    let counters = scheduler.counters();
    let sent: u64 = counters.flows().iter().map(|f| f.sent_packets).sum();
    let lost: u64 = counters.flows().iter().map(|f| f.dropped_total()).sum();
    let offered: u64 = counters.flows().iter().map(|f| f.enqueued_packets).sum();
    prop_assert_eq!(sent, run.send_order.len() as u64);
    prop_assert_eq!(lost, dropped);
    prop_assert_eq!(offered, trace.len() as u64);
    prop_assert_eq!(scheduler.backlog().packets, 0);
    prop_assert_eq!(scheduler.backlog().bytes, 0);
    // FIFO within a flow and a link that carries one packet at a time.
    let mut last_of_flow = std::collections::HashMap::new();
    let mut link_free = 0;
    for (index, start) in &run.send_order {
        let packet = trace[*index];
        if let Some(previous) = last_of_flow.insert(packet.flow, *index) {
            prop_assert!(
                previous < *index,
                "flow {} sent packet {} after {}",
                packet.flow,
                previous,
                index
            );
        }
        prop_assert!(
            *start >= link_free,
            "packet {} starts before the link is free",
            index
        );
        link_free = start + link().transmission_time(packet.size as u64);
    }
    if work_conserving {
        prop_assert_eq!(run.idle_while_backlogged, 0, "idle while backlogged");
    }
    Ok(run)
}

/// The example of the WF2Q paper (Bennett & Zhang, INFOCOM '96): session 1 has weight 10,
/// sessions 2–11 weight 1; at t = 0 session 1 queues 11 packets of 1000 B and every other
/// session one. Returns the weights and the packets (ids in order).
pub fn wf2q_example() -> (Vec<(FlowId, u32)>, Vec<Packet>) {
    let weights = std::iter::once((1, 10)).chain((2..=11).map(|f| (f, 1))).collect();
    let flows = std::iter::repeat_n(1, 11).chain(2..=11);
    let packets = flows
        .enumerate()
        .map(|(id, flow)| Packet::new(id as u64, flow, 1000, 0))
        .collect();
    (weights, packets)
}

/// The flows of `packets` in the order the scheduler sent them on [`link`].
pub fn flows_in_send_order<S: Scheduler + ?Sized>(scheduler: &mut S, packets: &[Packet]) -> Vec<FlowId> {
    send_order(scheduler, packets)
        .iter()
        .map(|id| packets[*id as usize].flow)
        .collect()
}

/// Bytes served per flow when every flow in `flows` starts with `per_flow` packets of
/// `size(flow, k)` bytes queued at time 0 and the link serves `packets_to_send` packets.
pub fn backlogged_service<S: Scheduler + ?Sized>(
    scheduler: &mut S,
    flows: &[FlowId],
    per_flow: usize,
    size: impl Fn(FlowId, usize) -> u32,
    packets_to_send: usize,
) -> Vec<u64> {
    let mut drops = Vec::new();
    let mut id = 0;
    for k in 0..per_flow {
        for &flow in flows {
            scheduler.enqueue(Packet::new(id, flow, size(flow, k), 0), 0, &mut drops);
            id += 1;
        }
    }
    assert!(drops.is_empty(), "backlogged_service needs an unlimited buffer");
    let mut served = vec![0u64; flows.iter().max().map_or(0, |m| *m as usize + 1)];
    let mut now = 0;
    for _ in 0..packets_to_send {
        let packet = scheduler.dequeue(now, &mut drops).expect("flows stay backlogged");
        served[packet.flow as usize] += packet.size as u64;
        now += link().transmission_time(packet.size as u64);
    }
    served
}

/// Flows 0, 1 and 2 backlogged with 600 packets each, sizes taken in turn from `sizes`;
/// serves `packets_to_send` packets. Returns the bytes served per flow and each flow's largest
/// packet.
pub fn three_backlogged_flows<S: Scheduler + ?Sized>(
    scheduler: &mut S,
    sizes: &[u32],
    packets_to_send: usize,
) -> (Vec<u64>, Vec<f64>) {
    let size = |f: FlowId, k: usize| sizes[(k * 3 + f as usize) % sizes.len()];
    let served = backlogged_service(scheduler, &[0, 1, 2], 600, size, packets_to_send);
    let largest = (0..3)
        .map(|f| (0..600).map(|k| size(f, k)).max().unwrap_or(0) as f64)
        .collect();
    (served, largest)
}

/// How a pairwise fairness bound combines the two flows' largest packets, each divided by the
/// flow's share.
#[derive(Clone, Copy, Debug)]
pub enum PairBound {
    /// L_i/φ_i + L_j/φ_j (SCFQ, STFQ, WF2Q+).
    Sum,
    /// max(L_i/φ_i, L_j/φ_j) (PGPS and Virtual Clock, flows backlogged from time 0).
    Max,
}

/// Checks |served_i/φ_i − served_j/φ_j| ≤ bound + `slack` for every pair of flows, where φ is
/// `share` (weights, or rates in bytes/s) and the bound is built from `largest` as `bound` says.
pub fn check_pairwise_fairness(
    served: &[u64],
    share: &[f64],
    largest: &[f64],
    bound: PairBound,
    slack: f64,
) -> Result<(), TestCaseError> {
    for i in 0..served.len() {
        for j in (i + 1)..served.len() {
            let gap = (served[i] as f64 / share[i] - served[j] as f64 / share[j]).abs();
            let (a, b) = (largest[i] / share[i], largest[j] / share[j]);
            let limit = match bound {
                PairBound::Sum => a + b,
                PairBound::Max => a.max(b),
            };
            prop_assert!(
                gap <= limit + slack,
                "flows {}, {}: gap {} > bound {}",
                i,
                j,
                gap,
                limit
            );
        }
    }
    Ok(())
}

/// A flow table written as TOML, e.g. `params("quantum = 500")`.
pub fn params(text: &str) -> toml::Table {
    text.parse()
        .unwrap_or_else(|e| panic!("test flow table {text:?} is not TOML: {e}"))
}

/// A [`crate::config::FlowTable`] with `defaults` (TOML text) and the given flows' tables.
pub fn flow_table<'a>(
    defaults: &str,
    flows: impl IntoIterator<Item = (FlowId, &'a str)>,
) -> crate::config::FlowTable {
    let mut table = crate::config::FlowTable::uniform(params(defaults));
    for (flow, text) in flows {
        table.set(flow, params(text), format!("flow {flow}"));
    }
    table
}

/// The build context of a discipline on the test link with `limit` and `flows`.
pub fn context(
    limit: crate::config::BufferLimit,
    flows: &crate::config::FlowTable,
) -> crate::discipline::BuildContext<'_> {
    crate::discipline::BuildContext {
        limit,
        flows,
        link_rate: link(),
    }
}

/// Builds discipline `D` on the test link with `config`, `limit`, and per-flow parameters
/// (TOML text) for the given flows (other flows take the defaults).
pub fn build_with<'a, D: crate::discipline::Discipline>(
    config: D::Config,
    flows: impl IntoIterator<Item = (FlowId, &'a str)>,
    limit: crate::config::BufferLimit,
) -> D {
    let table = flow_table("", flows);
    D::build(config, &context(limit, &table))
        .unwrap_or_else(|e| panic!("test configuration does not build: {e}"))
}

/// Builds discipline `D` on the test link with `config`, `limit`, and the given flows' values
/// of the discipline's one integer flow key (`share`, `packets_per_round`); other flows take
/// the default.
pub fn build_weighted<D: crate::discipline::Discipline>(
    config: D::Config,
    weights: &[(FlowId, u32)],
    limit: crate::config::BufferLimit,
) -> D {
    let [key] = D::INFO.flow_params else {
        panic!("build_weighted needs a discipline with exactly one flow key")
    };
    let texts: Vec<(FlowId, String)> = weights
        .iter()
        .map(|&(flow, weight)| (flow, format!("{} = {weight}", key.name)))
        .collect();
    build_with(
        config,
        texts.iter().map(|(flow, text)| (*flow, text.as_str())),
        limit,
    )
}

/// A buffer of `bytes` with longest-queue drop when `longest_queue_drop`, else tail drop.
pub fn byte_limit(bytes: u64, longest_queue_drop: bool) -> crate::config::BufferLimit {
    use crate::config::{BufferLimit, DropPolicy};
    let policy = if longest_queue_drop {
        DropPolicy::LongestQueueDrop
    } else {
        DropPolicy::TailDrop
    };
    BufferLimit {
        bytes: Some(bytes),
        policy,
        ..BufferLimit::UNLIMITED
    }
}
