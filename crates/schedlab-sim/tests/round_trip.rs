//! Paper 001's round-trip time per class for open-loop sources: a delivered packet's echo
//! returns over a fixed delay (`ack_delay`) or over links (`ack_path`), and the results report
//! `rtt_samples` and `rtt_mean_s` per flow and per class. Exact values on an idle network.

use std::path::Path;

use schedlab_sim::{run_scenario_text, SimResults};

/// One 1 Mbit/s link with 10 ms of delay (and a reverse link the same), a 125-byte packet
/// every 100 ms from each of two sources (classes 0 and 1): nothing ever queues.
fn run(return_keys: &str) -> SimResults {
    let text = format!(
        "[run]\nduration = \"2s\"\nseed = 1\n\n\
         [[link]]\nname = \"out\"\nrate = \"1Mbit\"\ndelay = \"10ms\"\n\n\
         [[link]]\nname = \"reverse\"\nrate = \"1Mbit\"\ndelay = \"10ms\"\n\n\
         [[source]]\nflow = 1\nclass = 0\npath = [\"out\"]\n{return_keys}\n\
         arrivals = {{ model = \"cbr\", rate_pps = 10 }}\nsize = {{ dist = \"constant\", size = 125 }}\n\n\
         [[source]]\nflow = 2\nclass = 1\nstart = \"50ms\"\npath = [\"out\"]\n{return_keys}\n\
         arrivals = {{ model = \"cbr\", rate_pps = 10 }}\nsize = {{ dist = \"constant\", size = 125 }}\n"
    );
    run_scenario_text(&text, Path::new(".")).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn rtt(rows: Vec<serde_json::Map<String, serde_json::Value>>) -> Vec<(u64, f64)> {
    rows.iter()
        .map(|row| {
            (
                row["rtt_samples"].as_u64().unwrap(),
                row["rtt_mean_s"].as_f64().unwrap_or(f64::NAN),
            )
        })
        .collect()
}

/// Fixed return delay: RTT = 1 ms serialisation + 10 ms propagation + 5 ms return, exactly.
#[test]
fn a_fixed_return_delay_adds_to_the_one_way_delay() {
    let results = run("ack_delay = \"5ms\"");
    for (samples, mean) in rtt(results.flow_summaries())
        .into_iter()
        .chain(rtt(results.class_summaries()))
    {
        assert!(samples >= 19, "{samples}");
        assert!((mean - 0.016).abs() < 1e-9, "{mean}");
    }
}

/// Echoes over the reverse link: + 40 bytes at 1 Mbit/s (0.32 ms) + 10 ms = 21.32 ms.
#[test]
fn echoes_over_a_reverse_link_cross_it() {
    let results = run("ack_path = [\"reverse\"]");
    for (samples, mean) in rtt(results.flow_summaries())
        .into_iter()
        .chain(rtt(results.class_summaries()))
    {
        assert!(samples >= 19, "{samples}");
        assert!((mean - 0.02132).abs() < 1e-9, "{mean}");
    }
}

/// Without a return path there is no sample and no mean.
#[test]
fn no_return_path_no_round_trip() {
    for (samples, mean) in rtt(run("").flow_summaries()) {
        assert_eq!(samples, 0);
        assert!(mean.is_nan());
    }
}

#[test]
fn return_path_errors_name_the_key() {
    for (keys, key) in [
        (
            "ack_delay = \"5ms\"\nack_path = [\"reverse\"]",
            "source[0].ack_delay",
        ),
        ("ack_path = []", "source[0].ack_path"),
        ("ack_path = [\"nowhere\"]", "source[0].ack_path"),
    ] {
        let text = format!(
            "[run]\nduration = \"1s\"\n[[link]]\nname = \"out\"\nrate = \"1Mbit\"\n[[link]]\nname = \"reverse\"\nrate = \"1Mbit\"\n\
             [[source]]\nflow = 1\npath = [\"out\"]\n{keys}\narrivals = {{ model = \"cbr\", rate_pps = 10 }}\n\
             size = {{ dist = \"constant\", size = 125 }}\n"
        );
        let e = run_scenario_text(&text, Path::new(".")).unwrap_err().to_string();
        assert!(e.contains(key), "{keys}: {e}");
    }
}
