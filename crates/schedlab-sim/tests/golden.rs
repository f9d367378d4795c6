//! Golden-file tests: fixed-seed scenarios whose every output table must stay byte-identical
//! when the engine is changed for speed (no result file holds a wall-clock time).
//!
//! Each `tests/golden/<name>/scenario.toml` is run and its written tables are compared with
//! `tests/golden/<name>/expected/`. The expected files were written by the engine before the
//! simulator-speed work (commit `516c008`'s engine); a change that alters a random stream, the
//! order of events or a statistic shows up here. After an intended change of results,
//! regenerate them with `SCHEDLAB_BLESS=1 cargo test -p schedlab-sim --test golden` and say
//! why in the commit.

use std::path::{Path, PathBuf};

use schedlab_sim::run_scenario_text;

fn golden_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

fn check(name: &str) {
    let dir = golden_dir(name);
    let text = std::fs::read_to_string(dir.join("scenario.toml")).unwrap();
    let results = run_scenario_text(&text, &dir).unwrap_or_else(|e| panic!("{name}: {e}"));
    let out = std::env::temp_dir().join(format!("schedlab-golden-{name}-{}", std::process::id()));
    let written = results.write(&out).unwrap();
    // The streamed summary.json is the text of the in-memory document, byte for byte.
    let streamed = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert_eq!(
        streamed,
        serde_json::to_string_pretty(&results.summary()).unwrap() + "\n",
        "{name}: the streamed summary.json differs from SimResults::summary()"
    );
    let expected_dir = dir.join("expected");
    let bless = std::env::var_os("SCHEDLAB_BLESS").is_some();
    if bless {
        std::fs::create_dir_all(&expected_dir).unwrap();
    }
    let mut differing = Vec::new();
    for path in &written {
        let file = path.file_name().unwrap().to_str().unwrap().to_owned();
        let actual = std::fs::read_to_string(path).unwrap();
        let expected_path = expected_dir.join(&file);
        if bless {
            std::fs::write(&expected_path, &actual).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path)
            .unwrap_or_else(|e| panic!("{}: {e}", expected_path.display()));
        if actual != expected {
            let line = actual
                .lines()
                .zip(expected.lines())
                .position(|(a, e)| a != e)
                .map_or_else(|| "length".to_owned(), |i| format!("line {}", i + 1));
            differing.push(format!("{file} ({line})"));
        }
    }
    let _ = std::fs::remove_dir_all(&out);
    assert!(
        differing.is_empty(),
        "{name}: outputs differ from tests/golden/{name}/expected: {}",
        differing.join(", ")
    );
}

/// Every traffic model, a shaper, a trace with its own classes and deadlines (per-class
/// statistics kept live), three hops with propagation delay, drops, warm-up, no drain, two
/// replications.
#[test]
fn network_outputs_are_unchanged() {
    check("network");
}

/// A packet-count run through DWCS, VD and DRR+ (contracts, demotions) with drain.
#[test]
fn deadline_disciplines_outputs_are_unchanged() {
    check("deadlines");
}
