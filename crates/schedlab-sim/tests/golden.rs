//! Golden-file tests: fixed-seed scenarios whose every output table must stay byte-identical
//! (apart from wall-clock keys, `results::VOLATILE_KEYS`) when the engine is changed for speed.
//!
//! Each `tests/golden/<name>/scenario.toml` is run and its written tables are compared with
//! `tests/golden/<name>/expected/`. The expected files were written by the engine before the
//! simulator-speed work (commit `516c008`'s engine); a change that alters a random stream, the
//! order of events or a statistic shows up here. After an intended change of results,
//! regenerate them with `SCHEDLAB_BLESS=1 cargo test -p schedlab-sim --test golden` and say
//! why in the commit.

use std::path::{Path, PathBuf};

use schedlab_sim::results::VOLATILE_KEYS;
use schedlab_sim::run_scenario_text;
use serde_json::Value;

fn golden_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// `summary.json` without the volatile keys (they sit in its `run` object).
fn stable_summary(text: &str) -> String {
    let mut v: Value = serde_json::from_str(text).expect("summary.json parses");
    if let Some(run) = v.get_mut("run").and_then(Value::as_object_mut) {
        for key in VOLATILE_KEYS {
            run.remove(*key);
        }
    }
    serde_json::to_string_pretty(&v).expect("serialises") + "\n"
}

/// A CSV table without the columns named in `VOLATILE_KEYS`.
fn stable_csv(text: &str) -> String {
    let mut lines = text.lines();
    let Some(header) = lines.next() else {
        return String::new();
    };
    let keep: Vec<bool> = header.split(',').map(|c| !VOLATILE_KEYS.contains(&c)).collect();
    let filter = |line: &str| {
        line.split(',')
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(c, _)| c)
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut out = filter(header) + "\n";
    for line in lines {
        out += &filter(line);
        out += "\n";
    }
    out
}

fn check(name: &str) {
    let dir = golden_dir(name);
    let text = std::fs::read_to_string(dir.join("scenario.toml")).unwrap();
    let results = run_scenario_text(&text, &dir).unwrap_or_else(|e| panic!("{name}: {e}"));
    let out = std::env::temp_dir().join(format!("schedlab-golden-{name}-{}", std::process::id()));
    let written = results.write(&out).unwrap();
    let expected_dir = dir.join("expected");
    let bless = std::env::var_os("SCHEDLAB_BLESS").is_some();
    if bless {
        std::fs::create_dir_all(&expected_dir).unwrap();
    }
    let mut differing = Vec::new();
    for path in &written {
        let file = path.file_name().unwrap().to_str().unwrap().to_owned();
        let raw = std::fs::read_to_string(path).unwrap();
        let actual = if file.ends_with(".json") {
            stable_summary(&raw)
        } else {
            stable_csv(&raw)
        };
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
