//! The router model of paper 001 in the simulator: processing stages, classes and their
//! names, per-class utilisation (GCU) and drops by reason at each link, the sojourn limit and
//! the link-dropping policies. Hand-derived values on deterministic (CBR) traffic.

use std::path::Path;

use schedlab_sim::{run_scenario_text, validate_scenario_text, SimResults};
use serde_json::{Map, Value};

fn run(text: &str) -> SimResults {
    run_scenario_text(text, Path::new(".")).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn link_class(results: &SimResults, link: u64, class: u64) -> Map<String, Value> {
    results
        .link_class_summaries()
        .into_iter()
        .find(|row| row["link"] == link && row["class"] == class)
        .unwrap_or_else(|| panic!("no row for link {link} class {class}"))
}

fn f(row: &Map<String, Value>, key: &str) -> f64 {
    row[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing in {row:?}"))
}

/// A CPU stage of 300 µs per packet (no rate) and a 2 Mbit/s link; one CBR source per class.
fn router(duration: &str, sources: &[(&str, f64, u32)], cpu_extra: &str, link_extra: &str) -> String {
    let mut text = format!(
        "[run]\nduration = \"{duration}\"\nseed = 1\nbin = \"1s\"\n\n\
         [classes]\ngold = 0\nsilver = 1\nbronze = 2\n\n\
         [[link]]\nname = \"cpu\"\nservice = \"300us\"\n{cpu_extra}\n\n\
         [[link]]\nname = \"out\"\nrate = \"2Mbit\"\n{link_extra}\n"
    );
    for (i, (class, rate, size)) in sources.iter().enumerate() {
        text += &format!(
            "\n[[source]]\nflow = {i}\nclass = \"{class}\"\npath = [\"cpu\", \"out\"]\n\
             arrivals = {{ model = \"cbr\", rate_pps = {rate} }}\nsize = {{ dist = \"constant\", size = {size} }}\n"
        );
    }
    text
}

/// GCU: 1000 packets/s of Gold and 500 of Bronze on a 300 µs CPU are 30 % and 15 % busy;
/// every packet spends exactly 300 µs at the CPU (no queueing: CBR phases never collide
/// beyond one service), and 100-byte packets 400 µs on the 2 Mbit/s link.
#[test]
fn a_processing_stage_reports_utilisation_per_class() {
    let results = run(&router(
        "2s",
        &[("gold", 1000.0, 100), ("bronze", 500.0, 100)],
        "",
        "",
    ));
    let gold = link_class(&results, 0, 0);
    let bronze = link_class(&results, 0, 2);
    assert_eq!(gold["class_name"], "gold");
    assert!((f(&gold, "utilisation") - 0.30).abs() < 0.002, "{gold:?}");
    assert!((f(&bronze, "utilisation") - 0.15).abs() < 0.002, "{bronze:?}");
    assert_eq!(gold["sent_packets"], 2000);
    let links = results.link_summaries();
    assert!((f(&links[0], "utilisation") - 0.45).abs() < 0.003);
    assert_eq!(links[0]["rate_bps"], 0);
    // Delay at the CPU is at least its service time; at the link at least 400 µs.
    assert!(f(&gold, "delay_mean_s") >= 300e-6 - 1e-12);
    assert!(f(&link_class(&results, 1, 2), "delay_mean_s") >= 400e-6 - 1e-12);
    // The class table carries the names too.
    let classes = results.class_summaries();
    assert_eq!(classes[0]["class_name"], "gold");
    assert_eq!(classes[1]["class_name"], "bronze");
}

/// A stage with both a per-packet time and a rate: 100 µs + 1000 bytes at 8 Mbit/s = 1.1 ms.
#[test]
fn service_and_rate_add_up() {
    let text = "[run]\nduration = \"1s\"\n[[link]]\nname = \"cpu\"\nservice = \"100us\"\nrate = \"8Mbit\"\n\
                [[source]]\npath = [\"cpu\"]\narrivals = { model = \"cbr\", rate_pps = 100 }\n\
                size = { dist = \"constant\", size = 1000 }\n";
    let results = run(text);
    let flows = results.flow_summaries();
    assert!(
        (f(&flows[0], "delay_mean_s") - 1.1e-3).abs() < 1e-9,
        "{:?}",
        flows[0]
    );
}

/// The sojourn limit: 3 sources of 1000 packets/s on a 300 µs CPU offer 90 % load in
/// simultaneous bursts of three; the third packet of each burst waits 600 µs. With
/// max_sojourn = 500 µs it is dropped (reason sojourn), with 600 µs it is served.
#[test]
fn max_sojourn_drops_packets_that_waited_too_long() {
    let sources = [
        ("gold", 1000.0, 100),
        ("silver", 1000.0, 100),
        ("bronze", 1000.0, 100),
    ];
    let strict = run(&router(
        "1s",
        &sources,
        "max_sojourn = \"500us\"\nscheduler = { kind = \"priority\" }",
        "",
    ));
    let bronze = link_class(&strict, 0, 2);
    assert_eq!(bronze["dropped_sojourn"], bronze["dropped"]);
    assert_eq!(bronze["dropped_sojourn"], 1000, "{bronze:?}");
    assert_eq!(link_class(&strict, 0, 0)["dropped"], 0);
    let classes = strict.class_summaries();
    assert_eq!(classes[2]["dropped_sojourn"], 1000);
    let loose = run(&router(
        "1s",
        &sources,
        "max_sojourn = \"600us\"\nscheduler = { kind = \"priority\" }",
        "",
    ));
    assert_eq!(link_class(&loose, 0, 2)["dropped"], 0);
}

/// Fixed-Link does not lend: Gold idle, Bronze alone at 1500 packets/s of 100 bytes
/// (1.2 Mbit/s) on a 2 Mbit/s link whose Bronze share is 20 % (0.4 Mbit/s) loses about two
/// thirds; Default-Link loses nothing.
#[test]
fn fixed_link_wastes_the_unused_share_and_default_link_does_not() {
    let sources = [("bronze", 1500.0, 100)];
    let fixed = run(&router(
        "2s",
        &sources,
        "",
        "buffer = 2000\ndrop_policy = { kind = \"fixed_link\", link_share = [0.5, 0.3, 0.2] }",
    ));
    let row = link_class(&fixed, 1, 2);
    let dropped = row["dropped_no_bandwidth"].as_u64().unwrap();
    let offered = dropped + row["sent_packets"].as_u64().unwrap();
    let loss = dropped as f64 / offered as f64;
    assert!((loss - 2.0 / 3.0).abs() < 0.01, "loss {loss}: {row:?}");
    let default = run(&router(
        "2s",
        &sources,
        "",
        "buffer = 2000\ndrop_policy = { kind = \"default_link\" }",
    ));
    assert_eq!(link_class(&default, 1, 2)["dropped"], 0);
}

#[test]
fn bad_router_configuration_names_the_key() {
    let check = |text: &str, path: &str| {
        let e = validate_scenario_text(text, Path::new("."))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(path), "{e}");
    };
    let base = |link: &str, source: &str| {
        format!(
            "[run]\nduration = \"1s\"\n[classes]\ngold = 0\n[[link]]\nname = \"l\"\n{link}\n[[source]]\npath = [\"l\"]\n\
             arrivals = {{ model = \"cbr\", rate_pps = 1 }}\nsize = {{ dist = \"constant\", size = 100 }}\n{source}\n"
        )
    };
    check(&base("delay = \"1ms\"", ""), "link[0].rate");
    check(&base("service = \"0us\"", ""), "link[0].service");
    check(
        &base("service = \"1ms\"\nmax_sojourn = \"0s\"", ""),
        "link[0].max_sojourn",
    );
    check(
        &base("service = \"1ms\"\nscheduler = { kind = \"wfq\" }", ""),
        "link[0].scheduler.kind",
    );
    check(
        &base("rate = \"1Mbit\"\ndrop_policy = { kind = \"default_link\" }", ""),
        "link[0].drop_policy",
    );
    check(
        &base(
            "service = \"1ms\"\nbuffer = 100\ndrop_policy = { kind = \"default_link\" }",
            "",
        ),
        "link[0].drop_policy",
    );
    check(
        &base(
            "rate = \"1Mbit\"\nbuffer = 1000\ndrop_policy = { kind = \"fixed_link\", link_share = [1.0] }",
            "class = 1",
        ),
        "source[0].class",
    );
    check(
        &base("rate = \"1Mbit\"", "class = \"platinum\""),
        "source[0].class",
    );
    check(
        "[run]\nduration = \"1s\"\n[classes]\ngold = 0\nsilver = 0\n[[link]]\nname = \"l\"\nrate = 1000\n\
          [[source]]\npath = [\"l\"]\narrivals = { model = \"cbr\", rate_pps = 1 }\nsize = { dist = \"constant\", size = 100 }\n",
        "classes.silver",
    );
}
