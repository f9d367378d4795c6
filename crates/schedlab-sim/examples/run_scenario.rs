//! Runs a scenario file and writes its results: `run_scenario SCENARIO.toml OUT_DIR`.
//! Prints packets/s and events/s (used by `bench/sim_throughput.sh`).

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: {} SCENARIO.toml OUT_DIR", args[0]);
        return ExitCode::from(2);
    }
    let path = Path::new(&args[1]);
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let base = path.parent().unwrap_or(Path::new("."));
    let results = match schedlab_sim::run_scenario_text(&text, base) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{}: {e}", path.display());
            return ExitCode::from(1);
        }
    };
    if let Err(e) = results.write(Path::new(&args[2])) {
        eprintln!("{}: {e}", args[2]);
        return ExitCode::from(1);
    }
    let sim_time: f64 = results.replications.iter().map(|r| r.wall_time_s).sum();
    let packets: u64 = results.replications.iter().map(|r| r.packets).sum();
    let events: u64 = results.replications.iter().map(|r| r.events).sum();
    println!(
        "packets {packets} events {events} simulation_wall_s {sim_time:.3} packets_per_s {:.0} events_per_s {:.0} total_wall_s {:.3}",
        packets as f64 / sim_time,
        events as f64 / sim_time,
        results.wall_time_s
    );
    ExitCode::SUCCESS
}
