//! TCP sources against their textbook behaviour, on short runs: one flow fills a clean
//! bottleneck; with random loss p the goodput follows Mathis et al. (MSS/RTT·√(3/(2p)));
//! equal-RTT flows through DRR share equally; FIFO favours the short-RTT flow; finite
//! transfers report completion times; bad keys are refused with the key and the value.

use std::path::Path;

use schedlab_sim::{run_scenario_text, validate_scenario_text, SimResults};
use serde_json::Value;

fn run(text: &str) -> SimResults {
    run_scenario_text(text, Path::new(".")).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn tcp_value(results: &SimResults, flow: usize, key: &str) -> f64 {
    let summary = results.summary();
    summary["tcp_flows"][flow][key]
        .as_f64()
        .unwrap_or_else(|| panic!("tcp_flows[{flow}].{key} missing: {}", summary["tcp_flows"]))
}

/// A dumbbell: `flows` TCP sources over one bottleneck of `rate` with the given scheduler
/// and buffer; flow i has one-way delay `delays_ms[i]` before the bottleneck (an access link)
/// and ACKs return over a reverse link of the same delay.
fn dumbbell(rate: &str, scheduler: &str, buffer: &str, delays_ms: &[u32], duration: &str) -> String {
    let mut text = format!(
        "[run]\nduration = \"{duration}\"\nwarmup = \"5s\"\nseed = 4\n\
         [[link]]\nname = \"bottleneck\"\nrate = \"{rate}\"\ndelay = \"1ms\"\nbuffer = \"{buffer}\"\n\
         scheduler = {scheduler}\n"
    );
    for (i, delay) in delays_ms.iter().enumerate() {
        text += &format!(
            "[[link]]\nname = \"access{i}\"\nrate = \"1Gbit\"\ndelay = \"{delay}ms\"\n\
             [[link]]\nname = \"reverse{i}\"\nrate = \"1Gbit\"\ndelay = \"{}ms\"\n",
            delay + 1
        );
    }
    for i in 0..delays_ms.len() {
        text += &format!(
            "[[source]]\nflow = {i}\npath = [\"access{i}\", \"bottleneck\"]\n\
             transport = {{ kind = \"tcp\", mss = 1460 }}\narrivals = {{ model = \"bulk\" }}\n\
             ack_path = [\"reverse{i}\"]\n"
        );
    }
    text
}

#[test]
fn one_flow_reaches_the_bottleneck_rate() {
    let results = run(&dumbbell("10Mbit", "{ kind = \"fifo\" }", "125KB", &[10], "20s"));
    // Payload share of the wire: 1460 of every 1500 bytes.
    let ceiling = 10e6 * 1460.0 / 1500.0;
    let goodput = tcp_value(&results, 0, "goodput_bps");
    assert!(
        goodput > 0.97 * ceiling && goodput <= ceiling * 1.0001,
        "{goodput} vs {ceiling}"
    );
    let link = &results.link_summaries()[0];
    assert!(link["utilisation"].as_f64().unwrap() > 0.99, "{link:?}");
}

/// Mathis, Semke, Mahdavi, Ott, "The macroscopic behavior of the TCP congestion avoidance
/// algorithm", CCR 1997: B = MSS/RTT·√(3/(2p)) (no delayed ACKs). Random loss p on a fast link,
/// RTT 100 ms; the formula ignores timeouts, which lower the goodput as p grows: the minimum RTO
/// is Linux's 200 ms (RFC 6298's 1 s makes each timeout cost ten round trips, and at p = 2 %
/// the goodput falls to 0.82 of the formula).
#[test]
fn goodput_follows_the_mathis_formula_under_random_loss() {
    for (p, duration) in [
        (0.001f64, "300s"),
        (0.005, "200s"),
        (0.01, "150s"),
        (0.02, "150s"),
    ] {
        let text = format!(
            "[run]\nduration = \"{duration}\"\nwarmup = \"10s\"\nseed = 1\nreplications = 2\n\
             [[link]]\nname = \"forward\"\nrate = \"100Mbit\"\ndelay = \"50ms\"\nloss = {p}\n\
             [[source]]\nflow = 0\npath = [\"forward\"]\n\
             transport = {{ kind = \"tcp\", mss = 1460, min_rto = \"200ms\" }}\n\
             arrivals = {{ model = \"bulk\" }}\nack_delay = \"50ms\"\n"
        );
        let results = run(&text);
        let mathis = 1460.0 * 8.0 / 0.1 * (1.5 / p).sqrt();
        let goodput = tcp_value(&results, 0, "goodput_bps");
        assert!(
            (goodput / mathis - 1.0).abs() < 0.2,
            "p = {p}: goodput {goodput:.0} bit/s, Mathis {mathis:.0} bit/s"
        );
        let lost = results.flow_summaries()[0]["lost"].as_u64().unwrap();
        assert!(lost > 50, "p = {p}: only {lost} losses");
    }
}

#[test]
fn equal_rtt_flows_share_a_drr_bottleneck_fairly() {
    let results = run(&dumbbell(
        "10Mbit",
        "{ kind = \"drr\", quantum = 1500 }",
        "200KB",
        &[20, 20, 20, 20],
        "30s",
    ));
    let goodputs: Vec<f64> = (0..4).map(|i| tcp_value(&results, i, "goodput_bps")).collect();
    let jain = schedlab_sim::results::jain_index(&goodputs).unwrap();
    assert!(jain >= 0.99, "Jain {jain} over {goodputs:?}");
    let total: f64 = goodputs.iter().sum();
    assert!(total > 0.9 * 10e6 * 1460.0 / 1500.0, "{goodputs:?}");
}

#[test]
fn fifo_favours_the_short_rtt_flow() {
    // One-way access delays 4 and 49 ms: RTTs of about 10 and 100 ms.
    let results = run(&dumbbell(
        "10Mbit",
        "{ kind = \"fifo\" }",
        "60KB",
        &[4, 49],
        "40s",
    ));
    let short = tcp_value(&results, 0, "goodput_bps");
    let long = tcp_value(&results, 1, "goodput_bps");
    assert!(
        short > 2.0 * long,
        "short RTT {short:.0} bit/s, long RTT {long:.0} bit/s"
    );
    let rtt_short = tcp_value(&results, 0, "rtt_mean_s");
    let rtt_long = tcp_value(&results, 1, "rtt_mean_s");
    assert!(rtt_short >= 0.010 && rtt_long >= 0.100, "{rtt_short} {rtt_long}");
}

#[test]
fn finite_transfers_report_completion_times() {
    // 100 kB transfers, Poisson at 5 per second, over an idle 10 Mbit/s path with 20 ms RTT:
    // each takes a few RTTs of slow start (IW = 3 segments) plus its serialisation.
    let text = "[run]\nduration = \"30s\"\nseed = 2\n\
        [[link]]\nname = \"forward\"\nrate = \"10Mbit\"\ndelay = \"10ms\"\n\
        [[source]]\nflow = 0\npath = [\"forward\"]\n\
        transport = { kind = \"tcp\" }\narrivals = { model = \"poisson\", rate_pps = 5 }\n\
        size = { dist = \"constant\", size = 100000 }\nack_delay = \"10ms\"\n";
    let results = run(text);
    let summary = results.summary();
    let row = &summary["tcp_flows"][0];
    let completed = row["transfers_completed"].as_u64().unwrap();
    assert!((120..=180).contains(&completed), "{row}");
    // Lower bound: 100 kB at 10 Mbit/s (80 ms) plus one RTT; with IW = 3 slow start needs
    // 5 round trips for 69 segments, so a lone transfer takes about 5·20 ms + 80 ms.
    let p50 = row["fct_p50_s"].as_f64().unwrap();
    assert!((0.1..0.3).contains(&p50), "{row}");
    assert_eq!(row["retransmissions"].as_u64(), Some(0));
    assert_eq!(row["timeouts"].as_u64(), Some(0));
}

/// With a 64 KB receiver window the queue never exceeds 64 KB − BDP (about 37 KB) of the
/// 125 KB buffer: no loss, so the receiver's ACK count is its own choice.
#[test]
fn delayed_acks_halve_the_acks_sent() {
    let base = dumbbell("10Mbit", "{ kind = \"fifo\" }", "125KB", &[10], "10s").replace(
        "transport = { kind = \"tcp\", mss = 1460 }",
        "transport = { kind = \"tcp\", mss = 1460, receiver_window = \"64KB\" }",
    );
    let delayed = base.replace("receiver_window", "delayed_ack = \"40ms\", receiver_window");
    let plain = run(&base);
    let delayed = run(&delayed);
    let ratio = tcp_value(&delayed, 0, "acks_sent") / tcp_value(&delayed, 0, "segments_sent");
    assert!((0.45..0.6).contains(&ratio), "{ratio}");
    assert!(tcp_value(&plain, 0, "acks_sent") >= tcp_value(&plain, 0, "segments_sent") - 1.0);
    for results in [&plain, &delayed] {
        assert_eq!(tcp_value(results, 0, "retransmissions"), 0.0);
        assert!(tcp_value(results, 0, "goodput_bps") > 0.97 * 10e6 * 1460.0 / 1500.0);
        let queue = results.link_summaries()[0]["queue_max_bytes"].as_f64().unwrap();
        assert!(queue < 64_000.0, "{queue}");
    }
}

#[test]
fn same_seed_same_results() {
    let text = dumbbell(
        "5Mbit",
        "{ kind = \"drr\", quantum = 1500 }",
        "30KB",
        &[5, 30],
        "10s",
    )
    .replace("name = \"bottleneck\"\n", "name = \"bottleneck\"\nloss = 0.01\n");
    let a = run(&text).summary();
    assert_eq!(a, run(&text).summary());
    assert_ne!(a["tcp_flows"], Value::Null);
}

#[test]
fn bad_tcp_keys_name_the_key_and_the_value() {
    let base = dumbbell("10Mbit", "{ kind = \"fifo\" }", "125KB", &[10], "10s");
    let cases = [
        ("mss = 1460 }", "mss = 0 }", "source[0].transport.mss"),
        (
            "mss = 1460 }",
            "mss = 1460, variant = \"reno\" }",
            "source[0].transport.variant",
        ),
        (
            "ack_path = [\"reverse0\"]",
            "ack_path = [\"nowhere\"]",
            "source[0].ack_path[0]",
        ),
        ("ack_path = [\"reverse0\"]", "", "source[0].ack_path"),
        (
            "ack_path = [\"reverse0\"]",
            "ack_path = [\"reverse0\"]\nack_delay = \"1ms\"",
            "source[0].ack_delay",
        ),
        (
            "delay = \"1ms\"\n",
            "delay = \"1ms\"\nloss = 1.5\n",
            "link[0].loss",
        ),
        (
            "kind = \"tcp\", mss = 1460 ",
            "kind = \"udp\" ",
            "source[0].transport.kind",
        ),
    ];
    for (from, to, key) in cases {
        let text = base.replacen(from, to, 1);
        assert_ne!(text, base, "{from}");
        let error = validate_scenario_text(&text, Path::new("."))
            .unwrap_err()
            .to_string();
        assert!(error.contains(key), "{key}: {error}");
    }
    let open_loop_bulk = "[run]\nduration = \"1s\"\n[[link]]\nname = \"l\"\nrate = \"1Mbit\"\n\
        [[source]]\npath = [\"l\"]\narrivals = { model = \"bulk\" }\n";
    let error = validate_scenario_text(open_loop_bulk, Path::new("."))
        .unwrap_err()
        .to_string();
    assert!(error.contains("source[0].arrivals"), "{error}");
}

/// Slow start overshoots a 20-packet drop-tail buffer on a 100 ms path and loses a burst of
/// segments in one window. SACK (RFC 6675) retransmits exactly the dropped segments and
/// recovers without a timeout; NewReno recovers one hole per round trip, times out and
/// resends already-received data after going back to SND.UNA.
#[test]
fn sack_recovers_a_slow_start_burst_loss_without_a_timeout() {
    let scenario = |variant: &str| {
        format!(
            "[run]\nduration = \"8s\"\nwarmup = \"0s\"\nseed = 1\n\
             [[link]]\nname = \"bottleneck\"\nrate = \"10Mbit\"\ndelay = \"1ms\"\nbuffer_packets = 20\n\
             [[link]]\nname = \"access\"\nrate = \"1Gbit\"\ndelay = \"49ms\"\n\
             [[source]]\nflow = 0\npath = [\"access\", \"bottleneck\"]\n\
             transport = {{ kind = \"tcp\", mss = 1460, variant = \"{variant}\", min_rto = \"200ms\" }}\n\
             arrivals = {{ model = \"bulk\" }}\nack_delay = \"50ms\"\n"
        )
    };
    let sack = run(&scenario("sack"));
    let newreno = run(&scenario("newreno"));
    let dropped = |results: &SimResults| results.link_summaries()[0]["dropped"].as_f64().unwrap();
    assert!(dropped(&sack) >= 10.0, "a burst loss: {}", dropped(&sack));
    assert_eq!(tcp_value(&sack, 0, "timeouts"), 0.0);
    assert_eq!(tcp_value(&sack, 0, "retransmissions"), dropped(&sack));
    assert!(tcp_value(&newreno, 0, "timeouts") >= 1.0);
    assert!(tcp_value(&newreno, 0, "retransmissions") > dropped(&newreno));
    assert!(
        tcp_value(&sack, 0, "goodput_bps") > 1.2 * tcp_value(&newreno, 0, "goodput_bps"),
        "{} vs {}",
        tcp_value(&sack, 0, "goodput_bps"),
        tcp_value(&newreno, 0, "goodput_bps")
    );
}
