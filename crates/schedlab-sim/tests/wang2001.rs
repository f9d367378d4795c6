//! Paper 001's claims (Wang, Lung, Majumdar) checked on short runs of the router model:
//! orderings of drop rates and delays between policies and classes, not the paper's numbers
//! (its figures give no values in the text). The scenarios are those of
//! `experiments/wang2001/`, shortened; see its README for the reading of the CPU load.

use std::path::Path;

use schedlab_sim::{run_scenario_text, SimResults};

/// One router: a CPU stage (`service`, 20 ms sojourn limit, CPU policy `cpu`) and a 2 Mbit/s
/// output link with a 25 000-byte buffer (100 ms) and `drop_policy`; Poisson sources of 500-byte
/// packets, `rate` packets/s split by `proportions` over Gold, Silver, Bronze.
fn router(
    service: &str,
    cpu: &str,
    drop_policy: &str,
    rate: f64,
    proportions: [f64; 3],
    seconds: u32,
) -> String {
    let buffer = 25_000;
    let mut text = format!(
        "[run]\nduration = \"{seconds}s\"\nwarmup = \"2s\"\nseed = 7\nbin = \"1s\"\n\n\
         [classes]\ngold = 0\nsilver = 1\nbronze = 2\n\n\
         [[link]]\nname = \"cpu\"\nservice = \"{service}\"\nmax_sojourn = \"20ms\"\nscheduler = {cpu}\n\n\
         [[link]]\nname = \"out\"\nrate = \"2Mbit\"\nbuffer = {buffer}\ndrop_policy = {drop_policy}\n"
    );
    for (class, (name, p)) in ["gold", "silver", "bronze"].iter().zip(proportions).enumerate() {
        if p > 0.0 {
            text += &format!(
                "\n[[source]]\nflow = {class}\nclass = \"{name}\"\npath = [\"cpu\", \"out\"]\n\
                 arrivals = {{ model = \"poisson\", rate_pps = {} }}\nsize = {{ dist = \"constant\", size = 500 }}\n",
                rate * p
            );
        }
    }
    text
}

fn run(text: &str) -> SimResults {
    run_scenario_text(text, Path::new(".")).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Drop rate per class (index = class) and overall.
fn drop_rates(results: &SimResults) -> ([f64; 3], f64) {
    let mut rates = [0.0; 3];
    let (mut sent, mut dropped) = (0.0, 0.0);
    for row in results.class_summaries() {
        let class = row["class"].as_u64().unwrap() as usize;
        let s = row["sent"].as_f64().unwrap();
        let d = row["dropped"].as_f64().unwrap();
        rates[class] = d / s;
        sent += s;
        dropped += d;
    }
    (rates, dropped / sent)
}

fn mean_delay(results: &SimResults) -> [f64; 3] {
    let mut delays = [0.0; 3];
    for row in results.class_summaries() {
        delays[row["class"].as_u64().unwrap() as usize] = row["delay_mean_s"].as_f64().unwrap();
    }
    delays
}

const EQUAL: &str = "{ kind = \"fifo\" }";
const FIXED: &str = "{ kind = \"priority\" }";
const DEFAULT_LINK: &str = "{ kind = \"default_link\" }";

const FIXED_LINK: &str = "{ kind = \"fixed_link\", link_share = [0.5, 0.3, 0.2] }";
const DYNAMIC_LINK: &str = "{ kind = \"dynamic_link\", n1 = 0.02, n2 = 0.005 }";
const THIRDS: [f64; 3] = [1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0];
const TABLE_1: [f64; 3] = [0.4, 0.3, 0.3];
/// The CPU time per packet that reproduces the CPU-policy figures (4 × Ptime; README).
const CPU: &str = "1200us";

fn share_policy(kind: &str, share: [f64; 3], interval: &str) -> String {
    format!(
        "{{ kind = \"{kind}\", share = [{}, {}, {}], interval = \"{interval}\" }}",
        share[0], share[1], share[2]
    )
}

/// Figure 3 (§4.1): Fixed-Link differentiates (Gold < Silver < Bronze) at the cost of a
/// higher overall drop rate than Default-Link, whose classes drop alike; the difference
/// shrinks as the arrival rate grows.
#[test]
fn fig3_fixed_link_differentiates_at_a_higher_overall_drop_rate() {
    let mut gaps = Vec::new();
    for rate in [633.0, 918.0] {
        let (default, default_all) = drop_rates(&run(&router(CPU, EQUAL, DEFAULT_LINK, rate, THIRDS, 30)));
        let (fixed, fixed_all) = drop_rates(&run(&router(CPU, EQUAL, FIXED_LINK, rate, THIRDS, 30)));
        assert!(fixed[0] < fixed[1] && fixed[1] < fixed[2], "{rate}: {fixed:?}");
        if rate < 700.0 {
            assert!(
                fixed_all > default_all + 0.02,
                "{rate}: {fixed_all} vs {default_all}"
            );
        }
        let spread = default.iter().cloned().fold(f64::MIN, f64::max)
            - default.iter().cloned().fold(f64::MAX, f64::min);
        assert!(spread < 0.02, "Default-Link classes differ: {default:?}");
        gaps.push(fixed_all - default_all);
    }
    // "As the packet arrival rate increases … the overall dropping rates for Default-Link and
    // Fixed-Link become equal to one another."
    assert!(
        gaps[1].abs() < gaps[0] / 10.0,
        "gap does not shrink with the rate: {gaps:?}"
    );
}

/// Figure 4 (§4.1, 633 packets/s): Dynamic-Link with n1 = 2 %, n2 = 0.5 % gives Gold a drop
/// rate near zero and Silver and Bronze lower drop rates than Fixed-Link; Gold loses less
/// than with Default-Link, Bronze more.
#[test]
fn fig4_dynamic_link_beats_fixed_link() {
    let (fixed, _) = drop_rates(&run(&router(CPU, EQUAL, FIXED_LINK, 633.0, THIRDS, 30)));
    let (dynamic, _) = drop_rates(&run(&router(CPU, EQUAL, DYNAMIC_LINK, 633.0, THIRDS, 30)));
    let (default, _) = drop_rates(&run(&router(CPU, EQUAL, DEFAULT_LINK, 633.0, THIRDS, 30)));
    // Near zero: under a fifteenth of what Gold loses under Default-Link (1.1 % vs 20 %).
    assert!(
        dynamic[0] < default[0] / 15.0,
        "Gold {dynamic:?} vs default {default:?}"
    );
    assert!(
        dynamic[1] < fixed[1] && dynamic[2] < fixed[2],
        "{dynamic:?} vs fixed {fixed:?}"
    );
    // Gold loses less and Bronze more than under Default-Link. The paper also has Silver below
    // Default-Link; this model does not reproduce that (README: Silver 23.0 % vs 20.0 %).
    assert!(
        dynamic[0] < default[0] && dynamic[2] > default[2],
        "{dynamic:?} vs {default:?}"
    );
}

/// Figure 5 (table 1, 918 packets/s, Default-Link): Fixed-Priority starves Bronze (its
/// highest drop rate); Equal-Priority drops all classes alike; Dynamic-Priority and Adaptive
/// (Share = proportions) stay near Equal-Priority, far from Fixed-Priority's Bronze.
#[test]
fn fig5_fixed_priority_starves_bronze() {
    let policy = |cpu: &str| drop_rates(&run(&router(CPU, cpu, DEFAULT_LINK, 918.0, TABLE_1, 30))).0;
    let equal = policy(EQUAL);
    let fixed = policy(FIXED);
    let adaptive = policy(&share_policy("adaptive", TABLE_1, "100ms"));
    let dynamic = policy(&share_policy("dynamic_priority", TABLE_1, "100ms"));
    assert!(
        fixed[2] > fixed[0] + 0.1 && fixed[2] > fixed[1] + 0.1,
        "{fixed:?}"
    );
    assert!(fixed[2] > equal[2] + 0.1, "{fixed:?} vs {equal:?}");
    for class in 0..3 {
        assert!((equal[class] - equal[0]).abs() < 0.02, "{equal:?}");
        assert!(
            (adaptive[class] - equal[class]).abs() < 0.03,
            "{adaptive:?} vs {equal:?}"
        );
        assert!(dynamic[class] < fixed[2] - 0.05, "{dynamic:?}");
    }
}

/// Figure 6: with its interval longer than the run (and its drain), Adaptive never reschedules and is
/// Fixed-Priority — the same drops, packet for packet.
#[test]
fn fig6_adaptive_degenerates_to_fixed_priority() {
    let fixed = run(&router(CPU, FIXED, DEFAULT_LINK, 918.0, TABLE_1, 20));
    let adaptive = run(&router(
        CPU,
        &share_policy("adaptive", TABLE_1, "60s"),
        DEFAULT_LINK,
        918.0,
        TABLE_1,
        20,
    ));
    assert_eq!(fixed.class_summaries(), adaptive.class_summaries());
}

/// Figure 8 (table 3, 811 packets/s, Fixed-Priority, Link-Share = proportions): the smaller
/// Bronze's proportion, the larger the fraction of its packets dropped (starvation at 5 %).
#[test]
fn fig8_small_bronze_groups_starve_under_fixed_priority() {
    let bronze = |p: [f64; 3]| {
        let link = format!(
            "{{ kind = \"fixed_link\", link_share = [{}, {}, {}] }}",
            p[0], p[1], p[2]
        );
        drop_rates(&run(&router(CPU, FIXED, &link, 811.0, p, 30))).0[2]
    };
    let large = bronze([0.4, 0.3, 0.3]);
    let small = bronze([0.475, 0.475, 0.05]);
    assert!(small > large, "5 % Bronze {small} vs 30 % Bronze {large}");
}

/// Figure 9 (table 4, 633 packets/s, Fixed-Link 40/30/30): Fixed-Priority gives the sharpest
/// distinction, Gold < Silver < Bronze; under Equal-Priority the groups' delays are alike.
#[test]
fn fig9_fixed_priority_orders_the_delays() {
    let link = "{ kind = \"fixed_link\", link_share = [0.4, 0.3, 0.3] }";
    let fixed = mean_delay(&run(&router(CPU, FIXED, link, 633.0, TABLE_1, 30)));
    let equal = mean_delay(&run(&router(CPU, EQUAL, link, 633.0, TABLE_1, 30)));
    assert!(fixed[0] < fixed[1] && fixed[1] < fixed[2], "{fixed:?}");
    let spread =
        |d: [f64; 3]| d.iter().cloned().fold(f64::MIN, f64::max) - d.iter().cloned().fold(f64::MAX, f64::min);
    assert!(spread(equal) < spread(fixed), "{equal:?} vs {fixed:?}");
}

/// Figures 10 and 11 (tables 5 and 6): Share tunes Adaptive — raising Gold's Share shortens
/// Gold's delay.
#[test]
fn fig10_11_share_tunes_adaptive() {
    let link = "{ kind = \"fixed_link\", link_share = [0.4, 0.3, 0.3] }";
    let gold = |share: [f64; 3]| {
        mean_delay(&run(&router(
            CPU,
            &share_policy("adaptive", share, "100ms"),
            link,
            811.0,
            TABLE_1,
            30,
        )))[0]
    };
    let low = gold([0.2, 0.4, 0.4]);
    let high = gold([0.6, 0.2, 0.2]);
    assert!(high < low, "Gold delay with Share 60 % {high} vs 20 % {low}");
}

/// The literal reading (Ptime = 300 µs at 918 packets/s: 27.5 % CPU) cannot reproduce the
/// CPU-policy figures: no policy loses a packet at the CPU, so every policy gives the same
/// drops.
#[test]
fn at_the_literal_cpu_load_no_policy_drops_at_the_cpu() {
    for cpu in [
        EQUAL.to_string(),
        FIXED.to_string(),
        share_policy("adaptive", TABLE_1, "100ms"),
    ] {
        let results = run(&router("300us", &cpu, DEFAULT_LINK, 918.0, TABLE_1, 20));
        let cpu_drops: u64 = results
            .link_class_summaries()
            .iter()
            .filter(|row| row["link"] == 0)
            .map(|row| row["dropped"].as_u64().unwrap())
            .sum();
        assert_eq!(cpu_drops, 0, "{cpu}");
    }
}

/// Every scenario of `experiments/wang2001/` is valid.
#[test]
fn the_experiment_files_validate() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/wang2001");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let text = std::fs::read_to_string(&path).unwrap();
            schedlab_sim::validate_scenario_text(&text, &dir)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            count += 1;
        }
    }
    assert_eq!(count, 9);
}
