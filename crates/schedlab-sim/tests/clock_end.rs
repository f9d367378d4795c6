//! A scenario whose simulated time would pass the end of the clock ([`CLOCK_LIMIT`], about
//! 292 years) is a clear error naming the link, not a panic or a wrapped time: a link too slow
//! for its largest packet when the scenario is read (or, for a scenario changed in code, when
//! it is run), a queue of packets whose transmissions together pass the end while it runs, a
//! drain needing more bins than the memory guard allows.

use std::path::Path;

use schedlab_core::time::CLOCK_LIMIT;
use schedlab_sim::scenario::parse_scenario;
use schedlab_sim::{run_scenario_watched, ScenarioError};

/// One link `slow` of `rate` (`kind` scheduler), one Poisson source (1 packet a second) of
/// `size`-byte packets, a 4 s run with `bin` bins, drained.
fn scenario(rate: &str, size: u64, kind: &str, bin: &str) -> String {
    format!(
        "[run]\nduration = \"4s\"\nseed = 7\ndrain = true\nbin = \"{bin}\"\n\n\
         [[link]]\nname = \"slow\"\nrate = \"{rate}\"\ndelay = \"1ms\"\nscheduler = {{ kind = \"{kind}\" }}\n\n\
         [[source]]\nflow = 0\npath = [\"slow\"]\narrivals = {{ model = \"poisson\", rate_pps = 1.0 }}\n\
         size = {{ dist = \"constant\", size = {size} }}\n"
    )
}

/// Reads and runs `text`, giving up (as interrupted) after about a million events, so that a
/// regression fails instead of hanging.
fn run(text: &str) -> Result<(), ScenarioError> {
    let scenario = parse_scenario(text, Path::new("."))?;
    let mut polls = 0;
    run_scenario_watched(&scenario, None, &mut |_| {
        polls += 1;
        polls < 1_000
    })
    .map(|_| ())
}

#[test]
fn a_link_too_slow_for_its_largest_packet_is_a_load_time_error() {
    // 4·10⁹ bytes at 3 bit/s: 1.07·10¹⁹ ns (the run hung); at 1 bit/s the time saturates (the
    // run "finished" with a wrapped clock).
    for rate in ["3bit", "1bit"] {
        let error = run(&scenario(rate, 4_000_000_000, "fifo", "1s")).expect_err("too slow");
        let ScenarioError::Config(error) = error else {
            panic!("a configuration error, not {error}");
        };
        assert_eq!(error.path, "link[0].rate");
        assert_eq!(error.value, rate);
        let message = error.to_string();
        for part in ["\"slow\"", "4000000000 bytes", "source[0]", "292 years"] {
            assert!(message.contains(part), "{message} names {part}");
        }
    }
}

#[test]
fn a_shaper_too_slow_for_the_largest_packet_is_a_load_time_error() {
    let text =
        scenario("10Mbit", 4_000_000_000, "fifo", "1s") + "shaper = { sigma = 4000000000, rho = \"1bit\" }\n";
    let Err(ScenarioError::Config(error)) = parse_scenario(&text, Path::new(".")) else {
        panic!("a configuration error");
    };
    assert_eq!(error.path, "source[0].shaper.rho");
    assert!(error.to_string().contains("4000000000 bytes"), "{error}");
}

#[test]
fn transmissions_queued_past_the_clock_end_stop_the_run_with_an_error_naming_the_link() {
    // 10⁹ bytes at 1 bit/s: 8·10¹⁸ ns each, within the limit alone; the second one queued
    // behind the first ends past it. FIFO: the link is a private hop (see the engine); DRR:
    // its transmission ends are events.
    const { assert!(8_000_000_000_000_000_000 <= CLOCK_LIMIT) };
    for kind in ["fifo", "drr"] {
        let error =
            run(&scenario("1bit", 1_000_000_000, kind, "1000000000s")).expect_err("past the clock's end");
        let ScenarioError::Run(message) = error else {
            panic!("a run-time error, not {error}");
        };
        assert!(message.contains("link \"slow\""), "{message}");
        assert!(message.contains("end of the simulated clock"), "{message}");
    }
}

#[test]
fn a_drain_longer_than_the_bins_allow_stops_with_an_error() {
    // (DRR: a FIFO link here would be a private hop, whose second transmission passes the
    // clock's end as soon as it is queued.)
    let error = run(&scenario("1bit", 1_000_000_000, "drr", "1s")).expect_err("too many bins");
    let ScenarioError::Run(message) = error else {
        panic!("a run-time error, not {error}");
    };
    assert!(message.contains("run.bin = 1 s"), "{message}");
}

#[test]
fn a_transmission_ending_just_before_the_clock_end_is_simulated() {
    // One packet (a budget of one): its transmission ends 8·10¹⁸ ns after it enters.
    let text =
        scenario("1bit", 1_000_000_000, "fifo", "1000000000s").replace("duration = \"4s\"", "packets = 1");
    let scenario = parse_scenario(&text, Path::new(".")).unwrap();
    let results = schedlab_sim::run_scenario(&scenario).unwrap();
    assert_eq!(results.replications.len(), 1);
    // The packet was delivered, 8·10¹⁸ ns plus the 1 ms delay after it entered.
    let flow = &results.flow_summaries()[0];
    assert_eq!(flow["received"], 1, "{flow:?}");
    let delay = flow["delay_max_s"].as_f64().unwrap();
    assert!((delay - 8e9).abs() < 1.0, "{delay} s");
}

/// A [`Scenario`](schedlab_sim::scenario::Scenario) built or changed in code, which the loader
/// never checked, gets the same errors when it is run (it used to wrap in a release build and
/// panic in a debug one).
#[test]
fn a_scenario_changed_in_code_is_checked_when_run() {
    let parsed = parse_scenario(&scenario("10Mbit", 1000, "drr", "1s"), Path::new(".")).unwrap();
    let mut delayed = parsed.clone();
    delayed.links[0].delay = u64::MAX - 10;
    let Err(ScenarioError::Config(error)) = schedlab_sim::run_scenario(&delayed) else {
        panic!("a configuration error");
    };
    assert_eq!(error.path, "link[0].delay");
    let mut served = parsed.clone();
    served.links[0].service.per_packet = u64::MAX - 10;
    let Err(ScenarioError::Config(error)) = schedlab_sim::run_scenario(&served) else {
        panic!("a configuration error");
    };
    // (The fixed time alone is too long: the error names it, not the rate.)
    assert_eq!(error.path, "link[0].service");
    let mut shaped = parsed;
    shaped.sources[0].shaper = Some(schedlab_sim::scenario::ShaperConfig {
        sigma: 1000,
        rho: schedlab_core::Rate::from_bits_per_second(1).unwrap(),
    });
    assert!(
        schedlab_sim::run_scenario(&shaped).is_ok(),
        "1,000 bytes at 1 bit/s fit"
    );
    shaped.sources[0].shaper.as_mut().unwrap().sigma = 4_000_000_000;
    shaped.sources[0].size = parse_scenario(&scenario("10Mbit", 4_000_000_000, "drr", "1s"), Path::new("."))
        .unwrap()
        .sources[0]
        .size
        .clone();
    let Err(ScenarioError::Config(error)) = schedlab_sim::run_scenario(&shaped) else {
        panic!("a configuration error");
    };
    assert_eq!(error.path, "source[0].shaper.rho");
}

#[test]
fn a_delay_that_with_the_largest_packet_passes_the_clock_end_is_a_load_time_error() {
    // 10⁹ bytes at 1 bit/s (8·10¹⁸ ns) plus 2·10⁹ s of propagation.
    let text =
        scenario("1bit", 1_000_000_000, "fifo", "1s").replace("delay = \"1ms\"", "delay = \"2000000000s\"");
    let Err(ScenarioError::Config(error)) = parse_scenario(&text, Path::new(".")) else {
        panic!("a configuration error");
    };
    assert_eq!(error.path, "link[0].delay");
    assert_eq!(error.value, "2000000000.000000000s");
    assert!(
        error.to_string().contains("source[0] (1000000000 bytes)"),
        "{error}"
    );
}

#[test]
fn a_packet_budget_run_past_the_clock_end_stops_with_an_error_and_an_undrained_one_finishes() {
    // A packet budget: the clock's end is guarded from the start (no window end comes first).
    let text =
        scenario("1bit", 1_000_000_000, "drr", "1000000000s").replace("duration = \"4s\"", "packets = 4");
    let Err(ScenarioError::Run(message)) = run(&text) else {
        panic!("a run-time error");
    };
    assert!(message.contains("link \"slow\""), "{message}");
    // Without the drain the run stops at its duration, with the packets still in flight.
    let text = scenario("1bit", 1_000_000_000, "drr", "1s").replace("drain = true", "drain = false");
    run(&text).expect("a run that stops at its duration");
}
