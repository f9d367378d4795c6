//! Paper 003's claims on figures 10 and 11 (Yokota, Kato, Tominaga), checked on short runs of
//! `experiments/yokota2002/fig10_11_class_thresholds.toml`: the DiffServ router's FIFO class
//! queues with threshold droppers under EWRR (a hierarchy node). Orderings and exact
//! conservation, not the paper's numbers.

use std::path::Path;

use schedlab_sim::{run_scenario_text, SimResults};

const SCENARIO: &str = "../../experiments/yokota2002/fig10_11_class_thresholds.toml";

/// The experiment with every class queue's threshold at `threshold` bytes, run for `seconds`
/// (then drained), without its sweep.
fn run(threshold: u64, seconds: &str) -> SimResults {
    let text = std::fs::read_to_string(SCENARIO).expect("the scenario exists");
    let mut table: toml::Table = text.parse().expect("valid TOML");
    table.remove("sweep");
    table["run"].as_table_mut().unwrap()["duration"] = toml::Value::String(seconds.into());
    let link = &mut table["link"].as_array_mut().unwrap()[0];
    let classes = link["scheduler"]["classes"].as_array_mut().unwrap();
    for class in classes.iter_mut() {
        class.as_table_mut().unwrap()["threshold"] = toml::Value::Integer(threshold as i64);
    }
    let text = toml::to_string(&table).unwrap();
    run_scenario_text(&text, Path::new(".")).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Per class (index = class): (loss rate, mean delay s, threshold drops).
fn per_class(results: &SimResults) -> [(f64, f64, u64); 3] {
    let mut out = [(0.0, 0.0, 0); 3];
    for row in results.class_summaries() {
        let class = row["class"].as_u64().unwrap() as usize;
        let sent = row["sent"].as_f64().unwrap();
        let dropped = row["dropped"].as_f64().unwrap();
        assert_eq!(
            row["dropped"].as_u64().unwrap(),
            row["dropped_threshold"].as_u64().unwrap(),
            "every drop is the threshold dropper's"
        );
        assert_eq!(
            row["received"].as_u64().unwrap() + row["dropped"].as_u64().unwrap(),
            row["sent"].as_u64().unwrap(),
            "drained: every frame delivered or dropped"
        );
        out[class] = (
            dropped / sent,
            row["delay_mean_s"].as_f64().unwrap(),
            row["dropped_threshold"].as_u64().unwrap(),
        );
    }
    out
}

/// Figure 10 at the smallest buffer (64 KB): class 1 (input 2.9 Mbit/s, below its third of
/// the link) loses nothing; classes 2 and 3 exceed their allocation and lose, class 3 (the
/// highest input) the most.
#[test]
fn fig10_small_thresholds_drop_the_classes_above_their_share() {
    let classes = per_class(&run(65_536, "2s"));
    assert_eq!(classes[0].2, 0, "class 1 loses nothing: {classes:?}");
    assert!(classes[1].0 > 0.0, "{classes:?}");
    assert!(classes[2].0 > classes[1].0, "{classes:?}");
}

/// Figures 10 and 11 across buffer sizes: a larger threshold drops less and delays more
/// (classes 2 and 3), class 1's delay stays the lowest, and with 8192 KB nothing is lost over
/// the paper's 10,000 frames per class (§5.1: "no packet loss was experienced in any class").
#[test]
fn fig10_11_larger_thresholds_trade_loss_for_delay() {
    let small = per_class(&run(65_536, "7.168s"));
    let medium = per_class(&run(1_048_576, "7.168s"));
    let large = per_class(&run(8_388_608, "7.168s"));
    for class in 1..3 {
        assert!(
            small[class].0 > medium[class].0,
            "class {class}: {small:?} {medium:?}"
        );
        assert!(
            medium[class].1 > small[class].1,
            "class {class}: {small:?} {medium:?}"
        );
        assert!(
            large[class].1 > medium[class].1,
            "class {class}: {medium:?} {large:?}"
        );
    }
    for run in [&small, &medium, &large] {
        assert!(
            run[0].1 < run[1].1 && run[0].1 < run[2].1,
            "class 1 lowest delay: {run:?}"
        );
    }
    assert!(large[2].1 > large[1].1, "class 3 the highest delay: {large:?}");
    assert_eq!((large[0].2, large[1].2, large[2].2), (0, 0, 0), "{large:?}");
}
