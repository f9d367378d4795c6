//! Enqueue + dequeue cost per packet of every discipline at 1, 64, 1,024 and 16,384
//! backlogged flows, in steady state: each measured step dequeues one packet and enqueues a
//! new one for the same flow, so the backlog (4 packets per flow) stays constant and no
//! allocation happens. `cargo bench -p schedlab-core --bench disciplines`.
//!
//! `SCHEDLAB_BENCH_FLOWS` (comma-separated, e.g. `1,10,100,1000,10000,100000,1000000`)
//! replaces the flow counts; `bench/flow_scaling.sh` uses it for the plot of ns per packet
//! against flows. Cases whose cost grows linearly with the flows (`dwcs_list`) stop at
//! [`LINEAR_CASE_MAX_FLOWS`].
//!
//! `SCHEDLAB_BENCH_STEPS=<n>` (with `SCHEDLAB_BENCH_CASE=<case>` and one count in
//! `SCHEDLAB_BENCH_FLOWS`) skips criterion and runs exactly `n` steps of that case after the
//! set-up, for instruction and cache-miss counts that do not depend on the machine's load:
//! run it under `valgrind --tool=cachegrind` with two step counts and divide the difference
//! by the difference of the steps.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
use schedlab_core::{build_scheduler, AnyScheduler, FlowTable, Packet, Rate, Scheduler};

/// One bench case per discipline: registry id (or id and variant) and the `[scheduler]` table
/// used. Flow `f` gets share (WRR packets per round, EWRR W_i in units of 1500 bytes, VD
/// quantum in MTUs) `1 + f % 4` and quantum 1500 (flow parameters are set below); for
/// the `drr_plus*` cases every fourth flow (`f % 4 == 0`) is latency critical, with a DRR+
/// contract it never breaks (1 GB per 10 µs), so those cases time the priority path. For DWCS
/// flow `f` has loss-tolerance 1/(80 + 10·(f % 8)) (the paper's eight classes 1/80 … 1/150) and
/// deadlines `count` × 625 ns apart (about one mean service time per stream at 10 Gbit/s: a
/// load near 1, so some deadlines are missed, as in the paper's figure 7(a); not droppable).
const CASES: &[(&str, &str)] = &[
    ("fifo", "kind = \"fifo\""),
    ("drr", "kind = \"drr\"\nquantum = 1500"),
    ("drr_plus", "kind = \"drr_plus\"\nquantum = 1500"),
    ("drr_plusplus", "kind = \"drr_plusplus\"\nquantum = 1500"),
    (
        "drr_plusplus_original",
        "kind = \"drr_plusplus\"\nvariant = \"original\"\nquantum = 1500",
    ),
    ("dwcs", "kind = \"dwcs\""),
    ("dwcs_list", "kind = \"dwcs\"\nstructure = \"list\""),
    ("priority", "kind = \"priority\""),
    ("wrr", "kind = \"wrr\""),
    ("ewrr", "kind = \"ewrr\""),
    ("vd", "kind = \"vd\"\nmtu = 1500\nrounds = 64"),
    ("scfq", "kind = \"scfq\""),
    ("virtual_clock", "kind = \"virtual_clock\""),
    ("stfq", "kind = \"stfq\""),
    ("wfq", "kind = \"wfq\""),
    ("wf2q_plus", "kind = \"wf2q_plus\""),
    (
        "dynamic_priority",
        "kind = \"dynamic_priority\"\nshare = [0.4, 0.3, 0.3]\ninterval = \"1ms\"",
    ),
    (
        "adaptive",
        "kind = \"adaptive\"\nshare = [0.4, 0.3, 0.3]\ninterval = \"1ms\"",
    ),
    ("qfq", "kind = \"qfq\""),
    ("srr", "kind = \"srr\"\nquantum = 1500"),
    ("aliquem", "kind = \"aliquem\"\nquantum = 1500\nscaling = 5"),
];

const FLOW_COUNTS: &[u32] = &[1, 64, 1024, 16384];
/// Cases that scan every flow per packet are not run above this many flows.
const LINEAR_CASES: &[&str] = &["dwcs_list"];
const LINEAR_CASE_MAX_FLOWS: u32 = 16_384;

/// The flow counts: `SCHEDLAB_BENCH_FLOWS` if set, else [`FLOW_COUNTS`].
fn flow_counts() -> Vec<u32> {
    match std::env::var("SCHEDLAB_BENCH_FLOWS") {
        Err(_) => FLOW_COUNTS.to_vec(),
        Ok(list) => list
            .split(',')
            .map(|n| match n.trim().parse::<u32>() {
                Ok(count) if (1..=1 << 24).contains(&count) => count,
                _ => panic!("SCHEDLAB_BENCH_FLOWS = {list:?}: {n:?} is not a flow count from 1 to 2^24"),
            })
            .collect(),
    }
}
const PACKETS_PER_FLOW: u32 = 4;

fn flows(kind: &str, count: u32) -> FlowTable {
    let mut table = FlowTable::default();
    for flow in 0..count {
        let share = 1 + flow % 4;
        let text = match kind.split('_').next().unwrap_or(kind) {
            "drr" if kind.starts_with("drr_plus") => {
                let mut text = "quantum = 1500".to_string();
                if flow % 4 == 0 {
                    text += "\nlatency_critical = true";
                    if kind == "drr_plus" {
                        text += "\ncontract_bytes = 1000000000\ncontract_interval = \"10us\"";
                    }
                }
                text
            }
            "drr" => "quantum = 1500".to_string(),
            "dwcs" => format!(
                "loss_tolerance = \"1/{}\"\ndeadline_gap = \"{}ns\"",
                80 + 10 * (flow % 8),
                count as u64 * 625
            ),
            "wrr" => format!("packets_per_round = {share}"),
            "ewrr" => format!("weight_bytes = {}", 1500 * share),
            "vd" => format!("quantum_mtus = {share}"),
            "srr" => format!("visits_per_pass = {share}"),
            "aliquem" => format!("quantum_units = {share}"),
            "scfq" | "virtual" | "stfq" | "wfq" | "wf2q" | "qfq" => format!("share = {share}"),
            _ => String::new(),
        };
        table.set(flow, text.parse().expect("TOML"), format!("flow {flow}"));
    }
    table
}

/// Deterministic pseudo-random sizes in 64..=1500 (xorshift), so no RNG crate is needed.
fn sizes(n: usize) -> Vec<u32> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            64 + (x % 1437) as u32
        })
        .collect()
}

/// The bench link's clock: when the last bit of every packet dequeued so far has left a link
/// of exactly the bench's rate, in whole nanoseconds rounded down, with the fraction carried
/// to the next packet. Rounding each transmission time up instead (as the simulator does for
/// a packet on its own) would make the link about 0.4 ns per packet slower than its rate:
/// WFQ's GPS reference, which serves at the exact rate, would then slowly run ahead of the
/// packets and empty, and a long criterion run would time WFQ with almost no flow backlogged
/// in GPS instead of the steady backlogged state this bench describes.
#[derive(Clone, Copy, Debug, Default)]
struct LinkClock {
    /// Nanoseconds, rounded down.
    now: u64,
    /// The fraction of a nanosecond not yet counted, in bit·nanoseconds (below the rate).
    carry: u64,
}

impl LinkClock {
    /// Advances past one packet of `size` bytes on a link of `rate`.
    #[inline(always)]
    fn advance(&mut self, rate: Rate, size: u32) {
        let numerator = size as u64 * 8 * 1_000_000_000 + self.carry;
        self.now += numerator / rate.bits_per_second();
        self.carry = numerator % rate.bits_per_second();
    }
}

fn prepared(kind: &str, table: &str, count: u32, rate: Rate) -> (AnyScheduler, u64, LinkClock) {
    let config: toml::Table = table.parse().expect("bench case parses");
    let mut scheduler = build_scheduler(&config, "scheduler", &flows(kind, count), rate).expect(kind);
    let mut drops = Vec::new();
    let sizes = sizes(1024);
    let mut id = 0u64;
    for _ in 0..PACKETS_PER_FLOW {
        for flow in 0..count {
            let packet = Packet::new(id, flow, sizes[id as usize % sizes.len()], 0);
            scheduler.enqueue(packet, 0, &mut drops);
            id += 1;
        }
    }
    assert!(drops.is_empty());
    (scheduler, id, LinkClock::default())
}

/// One measured step: dequeue one packet and enqueue a new one for the same flow.
#[inline(always)]
fn step(
    scheduler: &mut AnyScheduler,
    sizes: &[u32],
    rate: Rate,
    id: &mut u64,
    clock: &mut LinkClock,
    drops: &mut Vec<schedlab_core::Dropped>,
) {
    let packet = scheduler.dequeue(clock.now, drops).expect("backlogged");
    clock.advance(rate, packet.size);
    let size = sizes[*id as usize & 4095];
    let now = clock.now;
    scheduler.enqueue(black_box(Packet::new(*id, packet.flow, size, now)), now, drops);
    *id += 1;
    drops.clear();
}

fn rate() -> Rate {
    Rate::from_bits_per_second(10_000_000_000).unwrap()
}

/// `SCHEDLAB_BENCH_STEPS` mode: `steps` steps of one case at one flow count, no timing.
fn count_steps(steps: &str) {
    let steps: u64 = steps
        .parse()
        .unwrap_or_else(|_| panic!("SCHEDLAB_BENCH_STEPS = {steps:?} is not a step count"));
    let case = std::env::var("SCHEDLAB_BENCH_CASE").expect("SCHEDLAB_BENCH_CASE names the case");
    let (kind, table) = CASES
        .iter()
        .find(|(kind, _)| *kind == case)
        .unwrap_or_else(|| panic!("SCHEDLAB_BENCH_CASE = {case:?} is not a bench case"));
    let [count] = flow_counts()[..] else {
        panic!("SCHEDLAB_BENCH_FLOWS must name exactly one flow count with SCHEDLAB_BENCH_STEPS");
    };
    let (mut scheduler, mut id, mut clock) = prepared(kind, table, count, rate());
    let sizes = sizes(4096);
    let mut drops = Vec::with_capacity(16);
    for _ in 0..steps {
        step(&mut scheduler, &sizes, rate(), &mut id, &mut clock, &mut drops);
    }
    black_box(&scheduler);
}

fn bench(c: &mut Criterion) {
    let rate = rate();
    let sizes = sizes(4096);
    for (kind, table) in CASES {
        let mut group = c.benchmark_group(*kind);
        group.throughput(Throughput::Elements(1));
        group.warm_up_time(Duration::from_millis(500));
        group.measurement_time(Duration::from_secs(2));
        for count in flow_counts() {
            if LINEAR_CASES.contains(kind) && count > LINEAR_CASE_MAX_FLOWS {
                continue;
            }
            // Built once, on the first sample of a case that the filter selects (criterion
            // calls the closure only for those, once per sample; building a million flows
            // takes seconds). The state carries on from sample to sample.
            let mut state = None;
            let mut drops = Vec::with_capacity(16);
            group.bench_with_input(BenchmarkId::from_parameter(count), &count, |b, _| {
                let (scheduler, id, clock) = state.get_or_insert_with(|| prepared(kind, table, count, rate));
                b.iter_custom(|iterations| {
                    let start = Instant::now();
                    for _ in 0..iterations {
                        step(scheduler, &sizes, rate, id, clock, &mut drops);
                    }
                    start.elapsed()
                });
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench);

fn main() {
    match std::env::var("SCHEDLAB_BENCH_STEPS") {
        Ok(steps) => count_steps(&steps),
        Err(_) => {
            benches();
            Criterion::default().configure_from_args().final_summary();
        }
    }
}
