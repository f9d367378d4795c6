//! No heap allocation per packet in steady state, for every discipline in the registry.
//!
//! A counting global allocator counts `alloc`, `alloc_zeroed`, `realloc` and `dealloc` calls
//! made by the measuring thread only (other test threads are not counted). Each discipline in
//! [`schedlab_core::DISCIPLINES`] is built from its entry in [`CASES`], given a steady backlog
//! of [`PACKETS_PER_FLOW`] packets on each of [`FLOWS`] flows, warmed up, and then driven for
//! [`PAIRS`] enqueue + dequeue pairs (each packet that leaves, sent or dropped, is replaced by
//! a new one of the same flow, so the backlog stays constant). Any allocator call in that
//! window fails the test, naming the discipline.
//!
//! A discipline added to the registry without an entry in [`CASES`] fails
//! `every_discipline_has_a_case` (and the measuring tests) by name: add a line below giving
//! the `[scheduler]` table and the flow parameters it needs.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use schedlab_core::{build_scheduler, AnyScheduler, FlowId, FlowTable, Packet, Rate, Scheduler, DISCIPLINES};

// ---------------------------------------------------------------------------------------------
// Counting allocator

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static DEALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Whether this thread's allocator calls are being counted.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

fn counting() -> bool {
    COUNTING.try_with(|c| c.get()).unwrap_or(false)
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counting() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if counting() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if counting() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if counting() {
            DEALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocator calls (allocations incl. reallocations, deallocations) made by this thread while
/// `f` runs, and `f`'s result.
fn count_allocations<T>(f: impl FnOnce() -> T) -> (u64, u64, T) {
    // Counters are global; the thread-local flag keeps other threads out, and tests that
    // measure run one at a time through this lock.
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let allocations = ALLOCATIONS.load(Ordering::SeqCst);
    let deallocations = DEALLOCATIONS.load(Ordering::SeqCst);
    COUNTING.with(|c| c.set(true));
    let result = f();
    COUNTING.with(|c| c.set(false));
    (
        ALLOCATIONS.load(Ordering::SeqCst) - allocations,
        DEALLOCATIONS.load(Ordering::SeqCst) - deallocations,
        result,
    )
}

// ---------------------------------------------------------------------------------------------
// One case per discipline

/// How to build one discipline for the test: registry id, its `[scheduler]` table (without
/// buffer keys, which the test adds) and the flow table (TOML) of flow `f`, with the keys that
/// discipline reads.
struct Case {
    id: &'static str,
    scheduler: &'static str,
    flow: fn(FlowId) -> String,
}

// Flow parameters set to valid values varied by flow: shares 1..=4, quantum 1500 B, priority
// 0..=3, 10 Mbit/s reserved rate (64 flows reserve 640 Mbit/s of the 1 Gbit/s link), DWCS loss
// tolerance 1/4 with 1 ms deadline gap.

fn no_params(_: FlowId) -> String {
    String::new()
}

fn drr_params(_: FlowId) -> String {
    "quantum = 1500".into()
}

fn drr_plus_params(flow: FlowId) -> String {
    format!(
        "quantum = 1500\nlatency_critical = {}\ncontract_bytes = 3000\ncontract_interval = \"1ms\"",
        flow.is_multiple_of(8)
    )
}

fn drr_plusplus_params(flow: FlowId) -> String {
    format!("quantum = 1500\nlatency_critical = {}", flow.is_multiple_of(8))
}

fn dwcs_params(flow: FlowId) -> String {
    format!(
        "loss_tolerance = \"1/4\"\ndeadline_gap = \"1ms\"\ndeadline_offset = \"1ms\"\ndroppable = {}",
        flow.is_multiple_of(2)
    )
}

fn priority_params(flow: FlowId) -> String {
    format!("priority = {}", flow % 4)
}

fn wrr_params(flow: FlowId) -> String {
    format!("packets_per_round = {}", 1 + flow % 4)
}

/// EWRR: W_i of 1..=4 × 1500 B and W_max of twice that, so idle weight accumulates.
fn ewrr_params(flow: FlowId) -> String {
    let m = 1 + flow as u64 % 4;
    format!("weight_bytes = {}\nmax_weight_bytes = {}", 1500 * m, 3000 * m)
}

fn vd_params(flow: FlowId) -> String {
    format!("quantum_mtus = {}", 1 + flow % 4)
}

fn srr_params(flow: FlowId) -> String {
    format!("visits_per_pass = {}", 1 + flow % 4)
}

fn aliquem_params(flow: FlowId) -> String {
    format!("quantum_units = {}", 1 + flow % 4)
}

fn share_params(flow: FlowId) -> String {
    format!("share = {}", 1 + flow % 4)
}

fn virtual_clock_params(flow: FlowId) -> String {
    format!("rate = \"10Mbit\"\nshare = {}", 1 + flow % 4)
}

/// One line per registered discipline. A new discipline must add its line here.
const CASES: &[Case] = &[
    Case {
        id: "fifo",
        scheduler: "kind = \"fifo\"",
        flow: no_params,
    },
    Case {
        id: "drr",
        scheduler: "kind = \"drr\"\nquantum = 1500",
        flow: drr_params,
    },
    Case {
        id: "drr_plus",
        scheduler: "kind = \"drr_plus\"\nquantum = 1500",
        flow: drr_plus_params,
    },
    Case {
        id: "drr_plusplus",
        scheduler: "kind = \"drr_plusplus\"\nquantum = 1500",
        flow: drr_plusplus_params,
    },
    Case {
        id: "dwcs",
        scheduler: "kind = \"dwcs\"",
        flow: dwcs_params,
    },
    Case {
        id: "priority",
        scheduler: "kind = \"priority\"",
        flow: priority_params,
    },
    Case {
        id: "wrr",
        scheduler: "kind = \"wrr\"",
        flow: wrr_params,
    },
    Case {
        id: "ewrr",
        scheduler: "kind = \"ewrr\"",
        flow: ewrr_params,
    },
    Case {
        id: "vd",
        scheduler: "kind = \"vd\"\nmtu = 1500\nrounds = 64",
        flow: vd_params,
    },
    Case {
        id: "scfq",
        scheduler: "kind = \"scfq\"",
        flow: share_params,
    },
    Case {
        id: "virtual_clock",
        scheduler: "kind = \"virtual_clock\"",
        flow: virtual_clock_params,
    },
    Case {
        id: "stfq",
        scheduler: "kind = \"stfq\"",
        flow: share_params,
    },
    Case {
        id: "wfq",
        scheduler: "kind = \"wfq\"",
        flow: share_params,
    },
    Case {
        id: "wf2q_plus",
        scheduler: "kind = \"wf2q_plus\"",
        flow: share_params,
    },
    Case {
        id: "dynamic_priority",
        scheduler: "kind = \"dynamic_priority\"\nshare = [0.4, 0.3, 0.3]\ninterval = \"1ms\"",
        flow: no_params,
    },
    Case {
        id: "adaptive",
        scheduler: "kind = \"adaptive\"\nshare = [0.4, 0.3, 0.3]\ninterval = \"1ms\"",
        flow: no_params,
    },
    Case {
        id: "qfq",
        scheduler: "kind = \"qfq\"",
        flow: share_params,
    },
    Case {
        id: "srr",
        scheduler: "kind = \"srr\"\nquantum = 1500",
        flow: srr_params,
    },
    Case {
        id: "aliquem",
        scheduler: "kind = \"aliquem\"\nquantum = 1500\nscaling = 5",
        flow: aliquem_params,
    },
];

fn case(id: &str) -> &'static Case {
    CASES.iter().find(|case| case.id == id).unwrap_or_else(|| {
        panic!(
            "discipline {id:?} is in schedlab_core::DISCIPLINES but has no entry in CASES in \
             crates/schedlab-core/tests/no_allocation.rs: add one giving its [scheduler] table \
             and the flow parameters it needs"
        )
    })
}

// ---------------------------------------------------------------------------------------------
// The steady-state driver

const FLOWS: FlowId = 64;
const PACKETS_PER_FLOW: u32 = 4;
const WARM_UP_PAIRS: u64 = 20_000;
const PAIRS: u64 = 100_000;

fn link() -> Rate {
    Rate::from_bits_per_second(1_000_000_000).unwrap()
}

/// Packet sizes 64..=1500 bytes from a fixed xorshift sequence.
struct Sizes(u64);

impl Sizes {
    fn next(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        64 + (self.0 % 1437) as u32
    }
}

/// Buffer settings of a run.
#[derive(Clone, Copy, Debug)]
enum Load {
    /// Unlimited buffer; every packet that leaves is replaced by one new packet.
    Steady,
    /// A buffer exactly as large as the initial backlog (in packets) and two arrivals per
    /// departure, so every step also drops (tail drop, or longest-queue drop where the
    /// discipline has per-flow queues).
    Overload,
}

/// A scheduler with its driving state: the current time, the next packet id, the drops
/// vector (capacity reserved up front) and the size sequence.
struct Driver<S> {
    scheduler: S,
    now: u64,
    id: u64,
    drops: Vec<schedlab_core::Dropped>,
    sizes: Sizes,
    load: Load,
    sent: u64,
    dropped: u64,
}

impl<S: Scheduler> Driver<S> {
    fn new(scheduler: S, load: Load) -> Self {
        let mut driver = Driver {
            scheduler,
            now: 0,
            id: 0,
            drops: Vec::with_capacity(64),
            sizes: Sizes(0x9E37_79B9_7F4A_7C15),
            load,
            sent: 0,
            dropped: 0,
        };
        for _ in 0..PACKETS_PER_FLOW {
            for flow in 0..FLOWS {
                driver.arrive(flow);
            }
        }
        assert_eq!(driver.dropped, 0, "the initial backlog must fit");
        driver
    }

    fn arrive(&mut self, flow: FlowId) {
        let packet = Packet {
            class: (flow % 4) as u8,
            ..Packet::new(self.id, flow, self.sizes.next(), self.now)
        };
        self.id += 1;
        self.scheduler.enqueue(packet, self.now, &mut self.drops);
        self.replace_drops();
    }

    /// Counts the packets in `drops` and clears it (no new arrivals for them: under
    /// overload the extra arrival per step keeps the buffer full; in steady state nothing
    /// is dropped on arrival, and late drops at dequeue are replaced in `step`).
    fn replace_drops(&mut self) {
        self.dropped += self.drops.len() as u64;
        self.drops.clear();
    }

    /// One step: a dequeue (advancing time past a hold-back if the discipline holds packets)
    /// and the arrival(s) that replace what left. Returns whether a packet was sent.
    fn step(&mut self) -> bool {
        let packet = self.scheduler.dequeue(self.now, &mut self.drops);
        // Packets dropped at dequeue (late) are replaced by new ones of the same flow, kept
        // without allocation by reading flows out of the reserved drops vector in place.
        let late = self.drops.len();
        for index in 0..late {
            let flow = self.drops[index].packet.flow;
            let packet = Packet::new(self.id, flow, self.sizes.next(), self.now);
            self.id += 1;
            self.scheduler.enqueue(packet, self.now, &mut self.drops);
        }
        self.replace_drops();
        match packet {
            Some(packet) => {
                self.sent += 1;
                self.now += link().transmission_time(packet.size as u64);
                self.arrive(packet.flow);
                if let Load::Overload = self.load {
                    self.arrive((packet.flow + 1) % FLOWS);
                }
                true
            }
            None => {
                assert!(
                    self.scheduler.backlog().packets > 0,
                    "{}: the backlog ran dry",
                    self.scheduler.id()
                );
                self.now = match self.scheduler.next_wakeup(self.now) {
                    Some(at) if at > self.now => at,
                    _ => self.now + 1_000,
                };
                false
            }
        }
    }

    /// Runs until `pairs` packets were sent (dequeue + replacing enqueue), with a cap on
    /// steps so that a discipline that stops sending fails instead of hanging.
    fn run_pairs(&mut self, pairs: u64) {
        let start = self.sent;
        let mut steps = 0u64;
        while self.sent - start < pairs {
            self.step();
            steps += 1;
            assert!(
                steps < pairs * 100,
                "{}: only {} of {pairs} packets sent in {steps} steps",
                self.scheduler.id(),
                self.sent - start
            );
        }
    }
}

fn build(case: &Case, load: Load, per_flow_queues: bool) -> AnyScheduler {
    let mut text = case.scheduler.to_string();
    if let Load::Overload = load {
        text.push_str(&format!(
            "\nbuffer_packets = {}\ndrop_policy = \"{}\"",
            FLOWS * PACKETS_PER_FLOW,
            if per_flow_queues {
                "longest_queue_drop"
            } else {
                "tail_drop"
            }
        ));
    }
    let table: toml::Table = text
        .parse()
        .unwrap_or_else(|e| panic!("{}: CASES table does not parse: {e}", case.id));
    let parse = |text: String| -> toml::Table { text.parse().expect("case flow tables are TOML") };
    let mut flows = FlowTable::uniform(parse((case.flow)(0)));
    for flow in 0..FLOWS {
        flows.set(flow, parse((case.flow)(flow)), format!("flow[{flow}]"));
    }
    build_scheduler(&table, "scheduler", &flows, link())
        .unwrap_or_else(|e| panic!("{}: CASES entry does not build: {e}", case.id))
}

/// Allocator calls during [`PAIRS`] steady-state pairs after warm-up.
fn steady_state_allocations<S: Scheduler>(scheduler: S, load: Load) -> (u64, u64, Driver<S>) {
    let mut driver = Driver::new(scheduler, load);
    driver.run_pairs(WARM_UP_PAIRS);
    let (allocations, deallocations, ()) = count_allocations(|| driver.run_pairs(PAIRS));
    (allocations, deallocations, driver)
}

fn check_every_discipline(load: Load) {
    let mut failures = Vec::new();
    for info in DISCIPLINES {
        let scheduler = build(case(info.id), load, info.per_flow_queues);
        let (allocations, deallocations, driver) = steady_state_allocations(scheduler, load);
        let backlog = driver.scheduler.backlog().packets;
        assert!(
            backlog >= (FLOWS * PACKETS_PER_FLOW / 2) as u64,
            "{}: backlog fell to {backlog}, the run was not in steady state",
            info.id
        );
        if let Load::Overload = load {
            assert!(driver.dropped > 0, "{}: overload run dropped nothing", info.id);
        }
        if allocations != 0 || deallocations != 0 {
            failures.push(format!(
                "{}: {allocations} allocations and {deallocations} deallocations in {PAIRS} \
                 enqueue+dequeue pairs ({load:?})",
                info.id
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_discipline_has_a_case() {
    for info in DISCIPLINES {
        case(info.id);
    }
    for case in CASES {
        assert!(
            DISCIPLINES.iter().any(|info| info.id == case.id),
            "CASES names {:?}, which is not registered",
            case.id
        );
    }
}

#[test]
fn no_allocation_in_steady_state() {
    check_every_discipline(Load::Steady);
}

#[test]
fn no_allocation_under_overload_with_drops() {
    check_every_discipline(Load::Overload);
}

// ---------------------------------------------------------------------------------------------
// The harness itself can fail

/// A FIFO that boxes every packet: the allocation the test must catch.
struct BoxingFifo {
    inner: AnyScheduler,
    boxes: std::collections::VecDeque<Box<Packet>>,
}

impl Scheduler for BoxingFifo {
    fn id(&self) -> &'static str {
        "boxing_fifo"
    }
    fn enqueue(&mut self, packet: Packet, now: u64, drops: &mut Vec<schedlab_core::Dropped>) {
        self.boxes.push_back(Box::new(packet));
        self.inner.enqueue(packet, now, drops);
    }
    fn dequeue(&mut self, now: u64, drops: &mut Vec<schedlab_core::Dropped>) -> Option<Packet> {
        self.boxes.pop_front();
        self.inner.dequeue(now, drops)
    }
    fn peek(&mut self, now: u64) -> Option<Packet> {
        self.inner.peek(now)
    }
    fn counters(&self) -> &schedlab_core::Counters {
        self.inner.counters()
    }
}

#[test]
fn the_counter_catches_a_discipline_that_allocates() {
    let inner = build(case("fifo"), Load::Steady, false);
    let boxing = BoxingFifo {
        inner,
        boxes: std::collections::VecDeque::new(),
    };
    let (allocations, deallocations, _) = steady_state_allocations(boxing, Load::Steady);
    assert_eq!(allocations, PAIRS, "one Box per enqueue");
    assert_eq!(deallocations, PAIRS, "one Box freed per dequeue");
}
