//! The simulator against closed-form results, hand-derived traces, the replay driver, and
//! its own determinism and input checking.
//!
//! Queueing checks use a 1000-packet/s server: an 8 Mbit/s link and packets of mean 1000 bytes.
//! Exponential sizes (`min = 1`, effectively untruncated with `max` = 4·10⁹) give exponential
//! service times up to rounding to whole bytes and nanoseconds (relative error < 10⁻³).

use std::path::{Path, PathBuf};

use schedlab_core::{build_scheduler, run_link, FlowTable, Outcome, Packet, Rate};
use schedlab_sim::{run_scenario_text, validate_scenario_text, SimResults};
use serde_json::Value;

fn run(text: &str) -> SimResults {
    run_scenario_text(text, Path::new(".")).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn flow(results: &SimResults, index: usize, key: &str) -> f64 {
    let flows = results.flow_summaries();
    flows[index][key]
        .as_f64()
        .unwrap_or_else(|| panic!("flow {index} has no {key}: {:?}", flows[index]))
}

/// A single 8 Mbit/s link with Poisson sources; `sources` are (rate_pps, size table, params).
fn single_link(packets: u64, replications: u32, kind: &str, sources: &[(f64, &str, &str)]) -> String {
    let mut text = format!(
        "[run]\npackets = {packets}\nwarmup = \"20s\"\nseed = 11\nreplications = {replications}\n\
         bin = \"100s\"\n\n[[link]]\nname = \"server\"\nrate = \"8Mbit\"\nscheduler = {{ kind = \"{kind}\" }}\n"
    );
    for (i, (rate, size, params)) in sources.iter().enumerate() {
        text += &format!(
            "\n[[source]]\nflow = {i}\npath = [\"server\"]\narrivals = {{ model = \"poisson\", rate_pps = {rate} }}\n\
             size = {size}\nparams = {{ {params} }}\n"
        );
    }
    text
}

const EXP_1000: &str = "{ dist = \"exponential\", mean = 1000, max = 4000000000 }";
const CONST_1000: &str = "{ dist = \"constant\", size = 1000 }";

/// Asserts the simulated mean delay of flow `index` is within `tolerance` (relative) of
/// `expected` seconds, and that the run was long enough to tell: its 95% CI is tighter.
fn assert_mean_delay(results: &SimResults, index: usize, expected: f64, tolerance: f64) {
    let mean = flow(results, index, "delay_mean_s");
    let ci = flow(results, index, "delay_mean_ci95_s");
    let error = (mean - expected).abs() / expected;
    assert!(
        error < tolerance,
        "flow {index}: mean delay {mean} s, theory {expected} s, error {:.2}% > {:.0}% (CI ±{ci})",
        error * 100.0,
        tolerance * 100.0
    );
    assert!(
        ci / expected < tolerance,
        "CI ±{ci} s too wide to test a {tolerance} tolerance"
    );
}

#[test]
fn mm1_fifo_mean_delay_at_half_load() {
    // λ = 500/s, μ = 1000/s: E[T] = 1/(μ − λ) = 2 ms; tolerance 2%.
    let r = run(&single_link(600_000, 4, "fifo", &[(500.0, EXP_1000, "")]));
    assert_mean_delay(&r, 0, 1.0 / 500.0, 0.02);
    // Utilisation ρ = 0.5 and the mean number waiting Lq = ρ²/(1 − ρ) = 0.5.
    let link = &r.link_summaries()[0];
    assert!(
        (link["utilisation"].as_f64().unwrap() - 0.5).abs() < 0.01,
        "{link:?}"
    );
    assert!(
        (link["queue_mean_packets"].as_f64().unwrap() - 0.5).abs() < 0.025,
        "{link:?}"
    );
    // Sojourn time is exponential with rate μ − λ: median ln 2 / 500, p99 ln 100 / 500.
    let p50 = flow(&r, 0, "delay_p50_s");
    let p99 = flow(&r, 0, "delay_p99_s");
    assert!((p50 / (2f64.ln() / 500.0) - 1.0).abs() < 0.02, "p50 {p50}");
    assert!((p99 / (100f64.ln() / 500.0) - 1.0).abs() < 0.03, "p99 {p99}");
}

#[test]
fn mm1_fifo_mean_delay_at_ninety_percent_load() {
    // λ = 900/s: E[T] = 10 ms; tolerance 5%. Ten sources of 90/s are one Poisson stream.
    let sources: Vec<(f64, &str, &str)> = (0..10).map(|_| (90.0, EXP_1000, "")).collect();
    let r = run(&single_link(1_500_000, 4, "fifo", &sources));
    let classes = r.class_summaries();
    let mean = classes[0]["delay_mean_s"].as_f64().unwrap();
    let error = (mean - 0.01).abs() / 0.01;
    assert!(error < 0.05, "mean delay {mean} s, theory 0.01 s");
    let ci = classes[0]["delay_mean_ci95_s"].as_f64().unwrap();
    assert!(ci < 0.0005, "CI ±{ci} s too wide to test a 5% tolerance");
}

#[test]
fn md1_mean_delay_matches_pollaczek_khinchine() {
    // Constant 1 ms service, λ = 800/s, ρ = 0.8:
    // E[T] = 1/μ + ρ/(2μ(1 − ρ)) = 1 ms + 0.8/(2·1000·0.2) s = 3 ms; tolerance 2%.
    let r = run(&single_link(600_000, 4, "fifo", &[(800.0, CONST_1000, "")]));
    assert_mean_delay(&r, 0, 0.003, 0.02);
    // Every packet needs exactly 1 ms on the link: the minimum delay is 1 ms.
    let p50 = flow(&r, 0, "delay_p50_s");
    assert!(p50 > 0.001, "p50 {p50}");
}

#[test]
fn two_class_priority_matches_cobham() {
    // Non-preemptive priority M/M/1, λ₁ = λ₂ = 400/s, μ = 1000/s (exponential service):
    // W₀ = Σ λᵢ E[Sᵢ²]/2 = 0.8 · 2/μ² · μ/2 = 0.8 ms;
    // W₁ = W₀/(1 − σ₁) = 0.8/0.6 ms, W₂ = W₀/((1 − σ₁)(1 − σ₁ − σ₂)) = 0.8/(0.6·0.2) ms;
    // T = W + 1 ms.
    let r = run(&single_link(
        1_000_000,
        4,
        "priority",
        &[
            (400.0, EXP_1000, "priority = 0"),
            (400.0, EXP_1000, "priority = 1"),
        ],
    ));
    assert_mean_delay(&r, 0, 0.001 + 0.0008 / 0.6, 0.03);
    assert_mean_delay(&r, 1, 0.001 + 0.0008 / (0.6 * 0.2), 0.03);
}

#[test]
fn drr_shares_bytes_in_the_ratio_of_quanta() {
    // Two sources of 8 Mbit/s each into one 8 Mbit/s link (unlimited buffer): both stay
    // backlogged. Quanta 1500 and 4500 bytes → shares 1:3. Measured from the per-bin received
    // bytes after the first second, so the backlog left at the end does not matter.
    let text = r#"
        [run]
        duration = "10s"
        drain = false
        bin = "1s"
        [[link]]
        name = "l"
        rate = "8Mbit"
        scheduler = { kind = "drr" }
        [[source]]
        flow = 0
        path = ["l"]
        arrivals = { model = "cbr", rate = "8Mbit" }
        size = { dist = "uniform", min = 64, max = 1500 }
        params = { quantum = 1500 }
        [[source]]
        flow = 1
        path = ["l"]
        arrivals = { model = "cbr", rate = "8Mbit" }
        size = { dist = "uniform", min = 64, max = 1500 }
        params = { quantum = 4500 }
    "#;
    let r = run(text);
    let series = &r.replications[0].flow_series;
    let bytes = |f: usize| series[f].bytes[1..10].iter().sum::<u64>() as f64;
    let ratio = bytes(1) / bytes(0);
    assert!(
        (ratio / 3.0 - 1.0).abs() < 0.01,
        "byte ratio {ratio}, quanta ratio 3"
    );
    // Together they fill the link: 9 s at 1 MB/s.
    assert!(((bytes(0) + bytes(1)) / 9e6 - 1.0).abs() < 0.001);
}

#[test]
fn tandem_links_add_transmission_and_propagation() {
    // One CBR flow, 10 packets/s of 1000 B, across a 8 Mbit/s link with 5 ms propagation and a
    // 4 Mbit/s link with 20 ms: no queueing, so every delay is 1 + 5 + 2 + 20 = 28 ms.
    let text = r#"
        [run]
        duration = "10s"
        [[link]]
        name = "a"
        rate = "8Mbit"
        delay = "5ms"
        [[link]]
        name = "b"
        rate = "4Mbit"
        delay = "20ms"
        [[source]]
        path = ["a", "b"]
        arrivals = { model = "cbr", rate_pps = 10 }
        size = { dist = "constant", size = 1000 }
    "#;
    let r = run(text);
    assert_eq!(flow(&r, 0, "received"), 100.0);
    assert_eq!(flow(&r, 0, "delay_mean_s"), 0.028);
    assert_eq!(flow(&r, 0, "delay_max_s"), 0.028);
    // Jitter (paper 003 §5.2): receive gaps equal the 100 ms send gaps; no delay variation.
    assert_eq!(flow(&r, 0, "jitter_mean_s"), 0.1);
    assert_eq!(flow(&r, 0, "jitter_std_s"), 0.0);
    assert_eq!(flow(&r, 0, "ipdv_mean_s"), 0.0);
    let links = r.link_summaries();
    assert!((links[0]["utilisation"].as_f64().unwrap() - 0.01).abs() < 1e-12);
    assert!((links[1]["utilisation"].as_f64().unwrap() - 0.02).abs() < 1e-12);
}

#[test]
fn arrivals_at_a_departure_time_are_enqueued_first() {
    // 2 packets/s of 1000 B into 8 kbit/s (1 s per packet) with room for one queued packet.
    // At every whole second a packet departs and one arrives: the arrival is offered first,
    // finds the buffer full and is dropped. Over [0, 10 s): packets at 1, 2, …, 9 s dropped.
    let text = r#"
        [run]
        duration = "10s"
        [[link]]
        name = "l"
        rate = "8kbit"
        buffer_packets = 1
        [[source]]
        path = ["l"]
        arrivals = { model = "cbr", rate_pps = 2 }
        size = { dist = "constant", size = 1000 }
    "#;
    let r = run(text);
    let flows = r.flow_summaries();
    assert_eq!(flows[0]["sent"], 20);
    assert_eq!(flows[0]["dropped"], 9);
    assert_eq!(flows[0]["dropped_buffer_full"], 9);
    assert_eq!(flows[0]["received"], 11);
    // The 0.5 s packets wait 0.5 s and take 1 s: delay 1.5 s; the first one 1 s.
    assert_eq!(flows[0]["delay_max_s"], 1.5);
    assert_eq!(
        flows[0]["delay_mean_s"].as_f64().unwrap(),
        (1.0 + 10.0 * 1.5) / 11.0
    );
}

#[test]
fn warmup_is_excluded() {
    let text = r#"
        [run]
        duration = "10s"
        warmup = "2s"
        [[link]]
        name = "l"
        rate = "1Mbit"
        [[source]]
        path = ["l"]
        arrivals = { model = "cbr", rate_pps = 10 }
        size = { dist = "constant", size = 100 }
    "#;
    let r = run(text);
    assert_eq!(flow(&r, 0, "sent"), 80.0);
    assert_eq!(flow(&r, 0, "received"), 80.0);
    // 80 packets of 800 bits over the 8 s window.
    assert_eq!(flow(&r, 0, "throughput_bps"), 8000.0);
}

/// Disciplines checked against the replay driver: (kind, scheduler parameters).
const REPLAY_KINDS: &[(&str, &str)] = &[
    ("fifo", ""),
    ("drr", "quantum = 700"),
    ("drr_plus", "quantum = 700"),
    ("drr_plusplus", "quantum = 700"),
    ("priority", ""),
    ("wrr", ""),
    ("ewrr", ""),
    ("vd", ""),
];

#[test]
fn one_link_matches_the_replay_driver() {
    // A random three-flow trace (classes 0-2) through each discipline with a small buffer: the
    // simulator's per-flow received and dropped counts, mean and maximum delay equal those
    // computed from run_link's outcomes on the same packets.
    let dir = temp_dir("replay");
    let mut csv = String::from("time_s,flow,size_bytes,class\n");
    let mut packets = Vec::new();
    let mut state = 12345u64;
    let mut t = 0u64;
    for _ in 0..3000 {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        t += (state >> 40) % 400_000; // up to 0.4 ms apart
        let flow = ((state >> 20) % 3) as u32;
        let size = 64 + ((state >> 8) % 1400) as u32;
        csv += &format!(
            "{}.{:09},{},{},{}\n",
            t / 1_000_000_000,
            t % 1_000_000_000,
            flow,
            size,
            flow
        );
        let mut packet = Packet::new(0, flow, size, t);
        packet.class = flow as u8;
        packets.push(packet);
    }
    std::fs::write(dir.join("trace.csv"), csv).unwrap();
    for (kind, params) in REPLAY_KINDS {
        let extra = if params.is_empty() {
            String::new()
        } else {
            format!(", {params}")
        };
        let mut text = format!(
            "[run]\nduration = \"10s\"\n[[link]]\nname = \"l\"\nrate = \"10Mbit\"\nbuffer = \"6KB\"\n\
             scheduler = {{ kind = \"{kind}\"{extra} }}\n"
        );
        for f in 0..3 {
            text += &format!(
                "[[source]]\nflow = {f}\npath = [\"l\"]\n\
                 arrivals = {{ model = \"trace\", file = \"trace.csv\", flow = {f} }}\n"
            );
        }
        let r = run_scenario_text(&text, &dir).unwrap_or_else(|e| panic!("{kind}: {e}"));
        let table: toml::Table = format!("kind = \"{kind}\"\n{params}\nbuffer = 6000")
            .parse()
            .unwrap();
        let rate = Rate::from_bits_per_second(10_000_000).unwrap();
        let mut scheduler = build_scheduler(&table, "scheduler", &FlowTable::default(), rate).unwrap();
        let outcomes = run_link(&mut scheduler, rate, &packets).unwrap().outcomes;
        let flows = r.flow_summaries();
        for f in 0..3u32 {
            let mut delays = Vec::new();
            let mut dropped = 0;
            for (p, o) in packets.iter().zip(&outcomes) {
                if p.flow != f {
                    continue;
                }
                match o.unwrap() {
                    Outcome::Sent { end, .. } => delays.push(end - p.arrival),
                    Outcome::Dropped { .. } => dropped += 1,
                }
            }
            let summary = &flows[f as usize];
            assert_eq!(summary["received"], delays.len() as u64, "{kind} flow {f}");
            assert_eq!(summary["dropped"], dropped, "{kind} flow {f}");
            let sum: u64 = delays.iter().sum();
            let mean = sum as f64 / delays.len() as f64 / 1e9;
            assert!(
                (summary["delay_mean_s"].as_f64().unwrap() - mean).abs() < 1e-15,
                "{kind} flow {f}"
            );
            let max = *delays.iter().max().unwrap() as f64 / 1e9;
            assert_eq!(summary["delay_max_s"].as_f64().unwrap(), max, "{kind} flow {f}");
        }
        let drops: u64 = flows.iter().map(|f| f["dropped"].as_u64().unwrap()).sum();
        assert!(drops > 0, "{kind}: the buffer must overflow");
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("schedlab-sim-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn example(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../experiments/examples")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn same_seed_same_summary_different_seed_different() {
    // The parking lot has every traffic model but trace replay, a shaper and three hops.
    let text = example("parking_lot.toml")
        .replace("duration = \"60s\"", "duration = \"4s\"")
        .replace("warmup = \"5s\"", "warmup = \"1s\"");
    let a = run(&text).summary();
    let b = run(&text).summary();
    assert_eq!(a, b);
    let other = text.replace("seed = 1", "seed = 2");
    assert_ne!(other, text, "the example sets seed = 1");
    let c = run(&other).summary();
    assert_ne!(a["flows"], c["flows"]);
    // Replications differ from each other, and a single replication run alone matches.
    let full = run(&text);
    assert_ne!(full.replications[0].flows, full.replications[1].flows);
    let scenario = validate_scenario_text(&text, Path::new(".")).unwrap();
    let alone = schedlab_sim::run_scenario_replication(&scenario, 1).unwrap();
    assert_eq!(alone.replications[0].flows, full.replications[1].flows);
}

#[test]
fn examples_run_and_write_every_table() {
    let out = temp_dir("examples");
    for name in ["single_bottleneck.toml", "parking_lot.toml"] {
        let text = example(name)
            .replace("duration = \"100s\"", "duration = \"3s\"")
            .replace("duration = \"60s\"", "duration = \"3s\"")
            .replace("warmup = \"5s\"", "warmup = \"1s\"");
        let r = run(&text);
        let written = r.write(&out.join(name)).unwrap();
        assert_eq!(written.len(), 11);
        let summary: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join(name).join("summary.json")).unwrap())
                .unwrap();
        for key in [
            "flow",
            "sent",
            "received",
            "dropped",
            "throughput_bps",
            "delay_mean_s",
            "delay_mean_ci95_s",
            "delay_p50_s",
            "delay_p99_s",
            "delay_max_s",
            "jitter_mean_s",
        ] {
            assert!(
                summary["flows"][0].get(key).is_some(),
                "{name}: summary flows lack {key}"
            );
        }
        let flows_csv = std::fs::read_to_string(out.join(name).join("flows.csv")).unwrap();
        let rows = flows_csv.lines().count() - 1;
        assert_eq!(
            rows,
            r.scenario.sources.len() * r.scenario.run.replications as usize
        );
    }
}

fn error_of(text: &str) -> String {
    match validate_scenario_text(text, Path::new(".")) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

const GOOD: &str = r#"
[run]
duration = "10s"
[[link]]
name = "bottleneck"
rate = "125kbit"
scheduler = { kind = "drr", quantum = 1500 }
[[source]]
flow = 0
path = ["bottleneck"]
arrivals = { model = "poisson", rate_pps = 15 }
size = { dist = "uniform", min = 80, max = 740 }
params = { quantum = 2000, drr_plus = { latency_critical = true, contract_bytes = 8303, contract_interval = "1s" } }
"#;

#[test]
fn bad_scenarios_name_the_key_and_value() {
    assert!(validate_scenario_text(GOOD, Path::new(".")).is_ok());
    let cases = [
        (
            GOOD.replace("rate_pps = 15", "rate_pps = -1"),
            "source[0].arrivals.rate_pps = -1: must be a positive number (packets per second)",
        ),
        (
            GOOD.replace("path = [\"bottleneck\"]", "path = [\"bottlenek\"]"),
            "source[0].path[0] = \"bottlenek\": no link has this name (links: bottleneck)",
        ),
        (
            GOOD.replace("seed = 1", "").replace("[run]\n", "[run]\nsede = 3\n"),
            "run.sede = 3: unknown key; accepted keys: duration, packets, warmup, seed, replications, bin, ci, drain",
        ),
        (
            GOOD.replace("quantum = 2000", "quantum = 2000, latency_critical = true"),
            "source[0].params.latency_critical = true: not a flow key of drr, which reads only quantum",
        ),
        (
            GOOD.replace("kind = \"drr\"", "kind = \"dwcs\"")
                .replace("quantum = 1500", "check_every = 1")
                .replace("quantum = 2000", "loss_tolerance = \"3/2\""),
            "source[0].params.loss_tolerance = \"3/2\": x = 3 exceeds y = 2: at most y of y packets can be lost",
        ),
        (
            GOOD.replace("kind = \"drr\"", "kind = \"drr_plus\"").replace("contract_bytes = 8303, ", ""),
            "source[0].params.contract_bytes = (missing): required when latency_critical = true",
        ),
        (
            GOOD.replace("min = 80, max = 740", "min = 800, max = 740"),
            "source[0].size.min = 800: must not exceed max = 740",
        ),
        (
            GOOD.replace("rate = \"125kbit\"", "rate = \"-125kbit\""),
            "link[0].rate = \"-125kbit\": must be a finite, non-negative amount",
        ),
        (
            GOOD.replace("quantum = 1500", "quantom = 1500"),
            "link[0].scheduler.quantom = 1500",
        ),
        (
            GOOD.replace(
                "arrivals = { model = \"poisson\", rate_pps = 15 }",
                "arrivals = { model = \"on_off\", on_packets = 0, off = \"40ms\", rate_pps = 15 }",
            ),
            "source[0].arrivals.on_packets = 0: must be",
        ),
        (
            GOOD.replace(
                "arrivals = { model = \"poisson\", rate_pps = 15 }",
                "arrivals = { model = \"on_off\", on_packets = 20, rate_pps = 15 }",
            ),
            "source[0].arrivals.off = (missing): is required with on_packets",
        ),
        (
            GOOD.replace(
                "arrivals = { model = \"poisson\", rate_pps = 15 }",
                "arrivals = { model = \"on_off\", on_packets = 20, off = \"40ms\", mean_on = \"1s\", rate_pps = 15 }",
            ),
            "source[0].arrivals.mean_on = \"1s\": cannot be combined with on_packets/off",
        ),
        (
            GOOD.replace(
                "arrivals = { model = \"poisson\", rate_pps = 15 }",
                "arrivals = { model = \"on_off\", off = \"0s\", on_packets = 3, rate_pps = 15 }",
            ),
            "source[0].arrivals.off = \"0s\": must be longer than zero",
        ),
        (
            GOOD.replace("model = \"poisson\"", "model = \"poison\""),
            "source[0].arrivals.model = \"poison\": unknown arrival model",
        ),
        (
            GOOD.replace("flow = 0\n", "flow = 0\ncolour = \"red\"\n"),
            "source[0].colour = \"red\": unknown key",
        ),
        (
            GOOD.replace("duration = \"10s\"", "duration = \"10s\"\nwarmup = \"20s\""),
            "run.warmup = \"20s\": must be shorter than run.duration",
        ),
        (
            format!("{GOOD}shaper = {{ sigma = 100, rho = \"1Mbit\" }}\n"),
            "source[0].shaper.sigma = 100: must hold the source's largest packet (740 bytes)",
        ),
        (
            GOOD.replace("[run]", "[run]\npackets = 5"),
            "run.packets = 5: give either run.duration or run.packets, not both",
        ),
        (
            GOOD.replace(
                "arrivals = { model = \"poisson\", rate_pps = 15 }",
                "arrivals = { model = \"mmpp\", rates_pps = [1, 2], transition_rates = [[0, 1], [1, 5]] }",
            ),
            "source[0].arrivals.transition_rates[1][1] = 5: the diagonal must be 0",
        ),
        (
            GOOD.replace("arrivals = { model = \"poisson\", rate_pps = 15 }", "arrivals = { model = \"mpeg\" }"),
            "source[0].size = { dist = \"uniform\", max = 740, min = 80 }: this arrival model sets its own packet sizes",
        ),
        (
            format!("{GOOD}[[source]]\nflow = 0\npath = [\"bottleneck\"]\narrivals = {{ model = \"cbr\", rate_pps = 1 }}\nsize = {{ dist = \"constant\", size = 10 }}\n"),
            "source[1].flow = 0: source[0] already uses this flow id",
        ),
        (
            GOOD.replace("flow = 0\n", "flow = 0\nmtu = 28\n"),
            "source[0].mtu = 28: must exceed the fragment header (28 bytes)",
        ),
        (
            GOOD.replace("flow = 0\n", "flow = 0\nfragment_header = 20\n"),
            "source[0].fragment_header = 20: applies to fragments only: give the source an mtu too",
        ),
    ];
    for (text, expected) in cases {
        let message = error_of(&text);
        assert!(
            message.starts_with(expected),
            "expected {expected:?}\n     got {message:?}"
        );
    }
    assert!(error_of("[run\n").starts_with("scenario is not valid TOML"));
}

#[test]
fn files_errors_name_the_file_line_field_and_value() {
    let dir = temp_dir("files");
    std::fs::write(dir.join("sizes.csv"), "size,weight\n64,2\n1500,x\n").unwrap();
    std::fs::write(
        dir.join("trace.csv"),
        "time_s,flow,size_bytes\n0.0,7,100\n0.5,7,abc\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("good.csv"),
        "time_s,flow,size_bytes,class\n0.0,7,100,2\n0.5,9,300,1\n",
    )
    .unwrap();
    let with_size = |size: &str| GOOD.replace("{ dist = \"uniform\", min = 80, max = 740 }", size);
    let e = validate_scenario_text(&with_size("{ dist = \"empirical\", file = \"sizes.csv\" }"), &dir)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "source[0].size.file = \"sizes.csv\": line 3, field weight = \"x\": must be a non-negative number"
    );
    let trace = |file: &str, flow: u64| {
        GOOD.replace(
            "arrivals = { model = \"poisson\", rate_pps = 15 }\nsize = { dist = \"uniform\", min = 80, max = 740 }",
            &format!("arrivals = {{ model = \"trace\", file = \"{file}\", flow = {flow} }}"),
        )
    };
    let e = validate_scenario_text(&trace("trace.csv", 7), &dir)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("source[0].arrivals.file = \"trace.csv\": "), "{e}");
    assert!(
        e.ends_with("trace.csv:3: size_bytes = \"abc\": must be an integer from 1 to 4294967295"),
        "{e}"
    );
    let e = validate_scenario_text(&trace("good.csv", 8), &dir)
        .unwrap_err()
        .to_string();
    assert!(e.contains("the trace has no flow 8 (flows: 7, 9)"), "{e}");
    // A good trace: flow 9's one packet, class 1 from the trace.
    let r = run_scenario_text(&trace("good.csv", 9), &dir).unwrap();
    let flows = r.flow_summaries();
    assert_eq!(flows[0]["received"], 1);
    assert_eq!(flows[0]["received_bytes"], 300);
    assert_eq!(r.class_summaries()[0]["class"], 1);
}

#[test]
fn packet_count_runs_stop_after_that_many_packets() {
    let text = GOOD.replace("duration = \"10s\"", "packets = 1234");
    let r = run(&text);
    assert_eq!(r.replications[0].packets, 1234);
    assert_eq!(flow(&r, 0, "sent"), 1234.0);
    assert_eq!(flow(&r, 0, "received") + flow(&r, 0, "dropped"), 1234.0);
}

/// Zhang's thesis §4.4.1: MPEG frames travel as IP fragments. The same frames (fragmentation
/// draws nothing from the random stream) become ⌈size/1472⌉ packets of at most 1500 bytes,
/// each with a 28-byte header, released at the frame's time.
#[test]
fn mpeg_frames_travel_as_mtu_sized_fragments() {
    let whole = r#"
[run]
duration = "1s"
[[link]]
name = "out"
rate = "10Mbit"
scheduler = { kind = "fifo" }
[[source]]
flow = 0
path = ["out"]
arrivals = { model = "mpeg" }
"#;
    let fragmented = whole.replace("flow = 0\n", "flow = 0\nmtu = 1500\n");
    let (a, b) = (run(whole), run(&fragmented));
    let frames = flow(&a, 0, "sent");
    let packets = flow(&b, 0, "sent");
    assert_eq!(frames, 30.0);
    // Three I frames of 11-12 fragments each, 27 P/B frames of at least one.
    assert!(packets >= 3.0 * 11.0 + 27.0, "{packets}");
    assert_eq!(
        flow(&b, 0, "sent_bytes"),
        flow(&a, 0, "sent_bytes") + 28.0 * packets
    );
    let described = validate_scenario_text(&fragmented, Path::new("."))
        .unwrap()
        .describe();
    assert_eq!(described["flows"][0]["max_packet_bytes"], 1500);
}

/// `schedlab run --packets`: the per-packet rows of a replication agree with its counters —
/// one row per measured packet (sent or dropped), per-flow `seq` 0, 1, 2, …, the mean delay of
/// the rows equal to the flow's, and on one link with constant sizes every departure one
/// transmission time after its start.
#[test]
fn packet_log_rows_agree_with_the_counters() {
    use schedlab_sim::engine::run_replication_logged;
    use schedlab_sim::packet_log::{Fate, PacketLog};

    let text = r#"
[run]
duration = "20s"
warmup = "1s"
seed = 7
[[link]]
name = "out"
rate = "100kbit"
buffer_packets = 5
scheduler = { kind = "fifo" }
[[source]]
flow = 0
path = ["out"]
arrivals = { model = "poisson", rate_pps = 10 }
size = { dist = "constant", size = 1000 }
[[source]]
flow = 4
path = ["out"]
arrivals = { model = "poisson", rate_pps = 5 }
size = { dist = "constant", size = 1000 }
"#;
    let scenario = validate_scenario_text(text, Path::new(".")).unwrap();
    let (raw, log) = run_replication_logged(&scenario, 0, PacketLog::new(None), &mut |_| true).unwrap();
    let plain = schedlab_sim::engine::run_replication(&scenario, 0).unwrap();
    for (a, b) in raw.flows.iter().zip(&plain.flows) {
        assert_eq!(
            (a.sent, a.received, a.delay_sum),
            (b.sent, b.received, b.delay_sum),
            "the log changes nothing"
        );
    }
    for (index, flow) in [(0usize, 0u32), (1, 4)] {
        let rows: Vec<_> = log.rows.iter().filter(|r| r.flow == flow).collect();
        let acc = &raw.flows[index];
        assert_eq!(rows.len() as u64, acc.sent);
        let sent: Vec<_> = rows
            .iter()
            .filter(|r| matches!(r.fate, Fate::Sent { .. }))
            .collect();
        let dropped = rows
            .iter()
            .filter(|r| matches!(r.fate, Fate::Dropped { .. }))
            .count() as u64;
        assert_eq!(sent.len() as u64, acc.received);
        assert_eq!(dropped, acc.dropped_total());
        assert!(dropped > 0, "the 5-packet buffer overflows at 120% load");
        for (k, row) in rows.iter().enumerate() {
            assert_eq!(row.seq, k as u64);
            assert!(row.arrival >= 1_000_000_000, "warm-up packets are not measured");
        }
        let mut total = 0u128;
        for row in &sent {
            let Fate::Sent { start, end } = row.fate else {
                unreachable!()
            };
            assert!(start >= row.arrival);
            assert_eq!(end - start, 80_000_000, "1000 bytes at 100 kbit/s");
            total += (end - row.arrival) as u128;
        }
        assert_eq!(total, acc.delay_sum, "the rows' delays are the flow's");
    }
}

/// `delay_cdf.csv` is drawn from the full histogram (a point whenever the CDF has risen by
/// `DELAY_CDF_STEP`), so an M/M/1 queue's continuous delays (4,000 packets) rise in small
/// steps below the median, not in steps of 1/8 as with quantile ticks; it ends at 1 and never
/// decreases.
#[test]
fn delay_cdf_comes_from_the_full_histogram_in_small_steps() {
    let text = r#"
[run]
duration = "20s"
seed = 4
[[link]]
name = "l"
rate = "1Mbit"
scheduler = { kind = "fifo" }
[[source]]
flow = 0
path = ["l"]
arrivals = { model = "poisson", rate_pps = 200 }
size = { dist = "exponential", mean = 500 }
"#;
    let results = run(text);
    let out = std::env::temp_dir().join(format!("schedlab-cdf-{}", std::process::id()));
    results.write(&out).unwrap();
    let csv = std::fs::read_to_string(out.join("delay_cdf.csv")).unwrap();
    let _ = std::fs::remove_dir_all(&out);
    let points: Vec<(f64, f64)> = csv
        .lines()
        .skip(1)
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            (cells[2].parse().unwrap(), cells[3].parse().unwrap())
        })
        .collect();
    assert!((150..=250).contains(&points.len()), "{} points", points.len());
    assert!(points.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    assert!((points.last().unwrap().1 - 1.0).abs() < 1e-12);
    let below_median = points.iter().take_while(|p| p.1 <= 0.5).collect::<Vec<_>>();
    let largest_step = below_median
        .windows(2)
        .map(|w| w[1].1 - w[0].1)
        .fold(0.0, f64::max);
    assert!(
        largest_step < 0.01,
        "largest step below the median {largest_step}"
    );
}
