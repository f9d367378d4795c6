//! `summary.json` is written a flow row at a time (`SimResults::write_summary`), without the
//! document tree that `SimResults::summary` builds; the text must be the same bytes, with every
//! optional part present: TCP flows (`tcp_flows`), conditioners (`meters`), replications.

use std::path::Path;

use schedlab_sim::results::read_summary_columns;
use schedlab_sim::run_scenario_text;

fn assert_streamed_equals_document(text: &str, base: &Path) {
    let results = run_scenario_text(text, base).unwrap_or_else(|e| panic!("{e}"));
    let mut streamed = Vec::new();
    results.write_summary(&mut streamed).unwrap();
    let document = serde_json::to_string_pretty(&results.summary()).unwrap() + "\n";
    assert_eq!(String::from_utf8(streamed).unwrap(), document);
    // The head without the per-flow arrays says how many flows there are.
    let head = results.summary_without_flows();
    assert_eq!(head["flow_count"], results.scenario.sources.len());
    assert!(head.get("flows").is_none() && head.get("tcp_flows").is_none());
    assert!(head["classes"] == results.summary()["classes"], "classes differ");
    // Read back a row at a time: the head, and the chosen per-flow columns.
    let mut text = Vec::new();
    results.write_summary(&mut text).unwrap();
    let wanted = [
        "flow".to_string(),
        "delay_mean_s".to_string(),
        "no_such_key".to_string(),
    ];
    let read = read_summary_columns(text.as_slice(), Some(&wanted)).unwrap();
    // (Compared with the same text parsed whole: serde_json may read a float's last digit
    // differently from how it printed it.)
    let document: serde_json::Value = serde_json::from_slice(&text).unwrap();
    let flows = document["flows"].as_array().unwrap();
    assert_eq!(read.head["flow_count"], flows.len());
    assert!(read.head["links"] == document["links"], "links differ");
    assert!(!read.head.contains_key("flows"));
    // A key no row has is no column.
    assert_eq!(
        read.flows.keys().collect::<Vec<_>>(),
        wanted[..2].iter().collect::<Vec<_>>()
    );
    for (i, flow) in flows.iter().enumerate() {
        assert_eq!(read.flows["flow"][i], flow["flow"]);
        assert_eq!(read.flows["delay_mean_s"][i], flow["delay_mean_s"]);
    }
    // Every column when none is chosen.
    let all = read_summary_columns(text.as_slice(), None).unwrap();
    let first = flows[0].as_object().unwrap();
    assert_eq!(
        all.flows.keys().collect::<Vec<_>>(),
        first.keys().collect::<Vec<_>>()
    );
    assert_eq!(
        all.flows["received"][flows.len() - 1],
        flows[flows.len() - 1]["received"]
    );
}

#[test]
fn streamed_summary_with_tcp_flows_is_the_document() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/vd");
    let text = std::fs::read_to_string(base.join("fig5_tcp_small_buffers.toml"))
        .unwrap()
        .replace("duration = \"40s\"", "duration = \"2s\"")
        .replace("warmup = \"5s\"", "warmup = \"500ms\"")
        .replace("replications = 5", "replications = 2");
    assert!(text.contains("transport"), "the scenario has TCP sources");
    let results = run_scenario_text(&text, &base).unwrap();
    assert!(results.summary()["tcp_flows"]
        .as_array()
        .is_some_and(|a| !a.is_empty()));
    assert_streamed_equals_document(&text, &base);
}

#[test]
fn streamed_summary_with_meters_is_the_document() {
    let text = "[run]\nduration = \"1s\"\nreplications = 3\n\n[[link]]\nname = \"edge\"\nrate = \"10Mbit\"\n\
         [[link.conditioner.meter]]\nkind = \"token_bucket\"\nrate = \"1Mbit\"\nbucket = 1000\n\n\
         [[source]]\npath = [\"edge\"]\narrivals = { model = \"poisson\", rate_pps = 1000 }\n\
         size = { dist = \"constant\", size = 250 }\n\n\
         [[source]]\ncount = 50\npath = [\"edge\"]\narrivals = { model = \"poisson\", rate_pps = 10 }\n\
         size = { dist = \"constant\", size = 250 }\n";
    assert_streamed_equals_document(text, Path::new("."));
}
