//! DiffServ conditioning on simulated links (`[link.conditioner]`): the BA classifier on the
//! sources' DSCP, the meters with their actions (absolute dropper, marker), the marking seen by
//! the next link, the per-meter colour counts in the results, and the scenario errors.
//! Hand-derived values on deterministic (CBR) traffic.

use std::path::Path;

use schedlab_sim::{run_scenario_text, validate_scenario_text, SimResults};
use serde_json::{Map, Value};

fn run(text: &str) -> SimResults {
    run_scenario_text(text, Path::new(".")).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn count(row: &Map<String, Value>, key: &str) -> u64 {
    row[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing in {row:?}"))
}

fn meters(results: &SimResults) -> Vec<Map<String, Value>> {
    results.summary()["meters"]
        .as_array()
        .expect("a meters table")
        .iter()
        .map(|m| m.as_object().unwrap().clone())
        .collect()
}

const CBR_2MBIT: &str =
    "arrivals = { model = \"cbr\", rate_pps = 1000 }\nsize = { dist = \"constant\", size = 250 }\n";

/// Paper 003's two-parameter meter as a policer: 250-byte packets every millisecond (2 Mbit/s)
/// against r = 1 Mbit/s (125 bytes per ms) and b = 1000 bytes. The full bucket passes 7
/// packets (1000 + 6·125 = 1750 = 7·250), then every second packet is in profile: of 1000
/// arrivals 7 + 496 are green and 497 red, which the absolute dropper drops.
#[test]
fn token_bucket_policer_passes_the_profile_and_drops_the_rest() {
    let text = format!(
        "[run]\nduration = \"1s\"\n\n[[link]]\nname = \"edge\"\nrate = \"10Mbit\"\n\
         [[link.conditioner.meter]]\nkind = \"token_bucket\"\nrate = \"1Mbit\"\nbucket = 1000\n\n\
         [[source]]\npath = [\"edge\"]\n{CBR_2MBIT}"
    );
    let results = run(&text);
    let meter = &meters(&results)[0];
    assert_eq!(meter["kind"], "token_bucket");
    assert_eq!(meter["selects"], "all");
    assert_eq!(
        (
            count(meter, "green_packets"),
            count(meter, "yellow_packets"),
            count(meter, "red_packets")
        ),
        (503, 0, 497)
    );
    assert_eq!(count(meter, "red_bytes"), 497 * 250);
    assert_eq!(count(meter, "dropped"), 497);
    let flow = &results.flow_summaries()[0];
    assert_eq!(count(flow, "sent"), 1000);
    assert_eq!(count(flow, "received"), 503);
    assert_eq!(count(flow, "dropped_out_of_profile"), 497);
    assert_eq!(count(flow, "dropped"), 497);
}

/// The BA classifier queues by DSCP: EF (46) in class 0, AF11 (10) in class 1 at this link,
/// whatever class the sources declared; the end-to-end class table keeps the sources' classes.
/// srTCM on class 1 marks yellow packets AF12 (12), and the next link's BA rule puts AF12 in
/// class 2: as many packets as the meter coloured yellow.
#[test]
fn ba_classifier_and_marker_carry_over_to_the_next_link() {
    let text = format!(
        "[run]\nduration = \"1s\"\n\n\
         [[link]]\nname = \"edge\"\nrate = \"100Mbit\"\nscheduler = {{ kind = \"priority\" }}\n\
         [link.conditioner]\nclassify = [ {{ dscp = 46, class = 0 }}, {{ dscp = 10, class = 1 }} ]\n\
         meter = [ {{ class = 1, kind = \"srtcm\", cir = \"1Mbit\", cbs = 2000, ebs = 3000, yellow = {{ dscp = 12 }}, red = \"drop\" }} ]\n\n\
         [[link]]\nname = \"core\"\nrate = \"100Mbit\"\n\
         [link.conditioner]\nclassify = [ {{ dscp = 12, class = 2 }} ]\n\n\
         [[source]]\nflow = 0\nclass = 7\ndscp = 46\npath = [\"edge\", \"core\"]\n{CBR_2MBIT}\n\
         [[source]]\nflow = 1\nclass = 7\ndscp = 10\npath = [\"edge\", \"core\"]\n{CBR_2MBIT}"
    );
    let results = run(&text);
    let meter = &meters(&results)[0];
    assert_eq!(meter["selects"], "class 1");
    let (green, yellow, red) = (
        count(meter, "green_packets"),
        count(meter, "yellow_packets"),
        count(meter, "red_packets"),
    );
    assert_eq!(green + yellow + red, 1000);
    // C holds 8 packets and refills 125 bytes/ms, so after the burst half the packets are
    // green; E fills only while C is full, which never happens again: 12 yellow (3000/250).
    assert_eq!(yellow, 12);
    assert!(green <= (2000 + 125 * 999) / 250, "{meter:?}");
    let link_class = |link: u64, class: u64| {
        results
            .link_class_summaries()
            .into_iter()
            .find(|row| row["link"] == link && row["class"] == class)
    };
    assert_eq!(count(&link_class(0, 0).unwrap(), "sent_packets"), 1000);
    assert_eq!(count(&link_class(0, 1).unwrap(), "sent_packets"), green + yellow);
    assert!(link_class(0, 7).is_none());
    assert_eq!(count(&link_class(1, 2).unwrap(), "sent_packets"), yellow);
    // The class set at the first link stays with the packet (green AF11 is still class 1).
    assert_eq!(count(&link_class(1, 0).unwrap(), "sent_packets"), 1000);
    assert_eq!(count(&link_class(1, 1).unwrap(), "sent_packets"), green);
    // End to end: one class 7 row holding both sources, every packet counted once.
    let classes = results.class_summaries();
    assert_eq!(classes.len(), 1);
    assert_eq!(classes[0]["class"], 7);
    assert_eq!(count(&classes[0], "sent"), 2000);
    assert_eq!(
        count(&classes[0], "received") + count(&classes[0], "dropped"),
        2000
    );
    assert_eq!(count(&classes[0], "dropped_out_of_profile"), red);
}

/// A colour-aware trTCM downstream of a colour-blind one never upgrades: packets the first
/// meter coloured red (passed here, not dropped) stay red at the second.
#[test]
fn colour_aware_meter_keeps_the_upstream_colour() {
    let text = format!(
        "[run]\nduration = \"1s\"\n\n\
         [[link]]\nname = \"a\"\nrate = \"100Mbit\"\n\
         [[link.conditioner.meter]]\nkind = \"trtcm\"\ncir = \"500kbit\"\ncbs = 1000\npir = \"1Mbit\"\npbs = 1000\nred = \"pass\"\n\
         [[link]]\nname = \"b\"\nrate = \"100Mbit\"\n\
         [[link.conditioner.meter]]\nkind = \"trtcm\"\ncir = \"100Mbit\"\ncbs = 100000\npir = \"100Mbit\"\npbs = 100000\ncolour_aware = true\n\n\
         [[source]]\npath = [\"a\", \"b\"]\n{CBR_2MBIT}"
    );
    let results = run(&text);
    let m = meters(&results);
    // Everything fits the second meter's buckets; only the pre-colour decides.
    for colour in ["green_packets", "yellow_packets", "red_packets"] {
        assert_eq!(count(&m[0], colour), count(&m[1], colour), "{colour}: {m:?}");
    }
    assert!(count(&m[0], "red_packets") > 400);
    assert_eq!(count(&m[1], "dropped"), count(&m[0], "red_packets"));
}

#[test]
fn conditioner_errors_name_the_key_and_value() {
    let base = "[run]\nduration = \"1s\"\n[[link]]\nname = \"l\"\nrate = \"1Mbit\"\n";
    let source = "[[source]]\npath = [\"l\"]\narrivals = { model = \"cbr\", rate_pps = 10 }\nsize = { dist = \"constant\", size = 100 }\n";
    let error = |conditioner: &str| {
        validate_scenario_text(&format!("{base}{conditioner}\n{source}"), Path::new("."))
            .unwrap_err()
            .to_string()
    };
    let e = error("[link.conditioner]\nclassify = [ { source = \"10.0.0.0/8\", class = 1 } ]");
    assert!(
        e.contains("link[0].conditioner.classify[0].source = \"10.0.0.0/8\""),
        "{e}"
    );
    let e = error("[link.conditioner]\nclassify = [ { dscp = 46, flow = 3 } ]");
    assert!(e.contains("link[0].conditioner.classify[0].flow = 3"), "{e}");
    let e = error("[[link.conditioner.meter]]\nkind = \"srtcm\"\ncir = \"1Mbit\"\ncbs = 0\nebs = 10");
    assert!(e.contains("link[0].conditioner.meter[0].cbs = 0"), "{e}");
    let e = error("[link.conditioner]\n");
    assert!(e.contains("link[0].conditioner"), "{e}");
    let e = validate_scenario_text(&format!("{base}{source}dscp = 64\n"), Path::new("."))
        .unwrap_err()
        .to_string();
    assert!(e.contains("source[0].dscp = 64"), "{e}");
}
