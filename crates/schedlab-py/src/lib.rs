//! Python bindings for schedlab: the module `schedlab._core`, wrapped by the `schedlab`
//! package. Rust does the work with the GIL released; input errors raise
//! `schedlab._core.InputError` (a `ValueError`) whose message names the file, line, key and
//! value.
#![deny(missing_docs)]

use std::path::{Path, PathBuf};

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use schedlab_sim::{InputError, ScenarioError};

create_exception!(
    _core,
    PyInputError,
    PyValueError,
    "Bad input: the message names the file, line, key and value."
);

fn input_error(error: InputError) -> PyErr {
    PyInputError::new_err(error.to_string())
}

/// A scenario error as `InputError`: with `file`, naming the file and the key's line in
/// `text`; without, naming only the key path, value and rule.
fn scenario_error(error: ScenarioError, file: Option<&str>, text: &str) -> PyErr {
    match file {
        Some(file) => input_error(error.into_input_error(file, text)),
        None => PyInputError::new_err(error.to_string()),
    }
}

/// Replays a trace (CSV, or a pcap/pcapng capture classified as the gateway would) through
/// the scheduler of a configuration file and writes the
/// departure CSV. Returns a dict with `discipline`, `packets`, `flows` (list of per-flow
/// dicts) and `discipline_counters`. `progress(percent_done, 100)` is called at most every
/// 0.2 s. Python signal handlers run while it works: Ctrl-C stops it within a second,
/// leaves no departure file and raises `KeyboardInterrupt`.
#[pyfunction]
#[pyo3(signature = (config, trace, out, progress=None))]
fn replay<'py>(
    py: Python<'py>,
    config: PathBuf,
    trace: PathBuf,
    out: PathBuf,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let mut watcher = SignalWatcher::new(progress);
    let outcome = py.detach(|| {
        if schedlab_gateway::pcap::is_capture(&trace) {
            schedlab_gateway::pcap::replay_pcap_files_watched(&config, &trace, &out, &mut |p| watcher.poll(p))
                .map(|(r, p)| (r, Some(p)))
        } else {
            schedlab_sim::replay_files_watched(&config, &trace, &out, &mut |p| watcher.poll(p))
                .map(|r| (r, None))
        }
    });
    let (result, skipped) = match outcome {
        Ok(found) => found,
        Err(InputError::Interrupted) => return Err(watcher.into_error()),
        Err(e) => return Err(input_error(e)),
    };
    let summary = PyDict::new(py);
    if let Some(read) = skipped {
        let counts = PyDict::new(py);
        counts.set_item("not_ip", read.skipped_not_ip)?;
        counts.set_item("malformed", read.skipped_malformed)?;
        counts.set_item("flow_table_full", read.skipped_flow_table_full)?;
        summary.set_item("skipped_frames", counts)?;
    }
    summary.set_item("discipline", result.discipline)?;
    summary.set_item("packets", result.packets)?;
    let flows = PyList::empty(py);
    for flow in &result.flows {
        let row = PyDict::new(py);
        row.set_item("flow", flow.flow)?;
        row.set_item("sent", flow.sent)?;
        row.set_item("dropped", flow.dropped)?;
        row.set_item("bytes", flow.bytes)?;
        row.set_item("throughput_bps", flow.throughput_bps)?;
        row.set_item("delay_mean_s", flow.delay_mean_s)?;
        row.set_item("delay_p99_s", flow.delay_p99_s)?;
        row.set_item("delay_max_s", flow.delay_max_s)?;
        flows.append(row)?;
    }
    summary.set_item("flows", flows)?;
    let counters = PyDict::new(py);
    for (name, value) in &result.discipline_counters {
        counters.set_item(*name, *value)?;
    }
    summary.set_item("discipline_counters", counters)?;
    Ok(summary)
}

/// Validates a scenario (TOML text; relative paths resolved against `base_dir`) and returns
/// what it declares as a JSON string (`flow_count`, and with `flows` the list of every flow,
/// which a run does not need: at 10^6 flows the list is 125 MB of JSON). `file`, when given,
/// names the file in error messages and locates the offending key's line in `text`.
#[pyfunction]
#[pyo3(signature = (text, base_dir, file=None, flows=true))]
fn validate_scenario(
    py: Python<'_>,
    text: String,
    base_dir: PathBuf,
    file: Option<String>,
    flows: bool,
) -> PyResult<String> {
    let scenario = py
        .detach(|| schedlab_sim::validate_scenario_text(&text, &base_dir))
        .map_err(|e| scenario_error(e, file.as_deref(), &text))?;
    let mut described = scenario.describe_flows(flows);
    described["flow_count"] = scenario.sources.len().into();
    described["memory_estimate"] = schedlab_sim::memory::estimate(&scenario).to_json();
    Ok(described.to_string())
}

/// Runs a scenario and returns `{"summary": <summary.json>, "timing": <wall-clock facts>}` as
/// a JSON string (the timing is kept out of the result files); writes every output table to
/// `out_dir` when given. With `flows=False` the summary has `flow_count` in place of its
/// per-flow arrays (`flows`, `tcp_flows`), which with many flows are read from the written
/// `summary.json` by `read_summary` instead. `replication` runs only that replication (0-based), with the same
/// random streams as in a full run. The GIL is released while the simulation runs.
/// `progress`, when given, is called as `progress(done, total)`: with whole numbers before
/// the first replication and after each one, and with a fraction (replications done plus the
/// simulated fraction of the current one) at most every 0.2 s in between.
///
/// Python signal handlers (Ctrl-C, SIGTERM) run while the simulation runs: the simulator
/// checks for them every few thousand events (`schedlab_sim::watch`), stops, writes nothing
/// and re-raises the handler's exception (`KeyboardInterrupt` for Ctrl-C).
#[pyfunction]
#[pyo3(signature = (text, base_dir, out_dir=None, replication=None, file=None, progress=None, flows=true))]
#[allow(clippy::too_many_arguments)]
fn run_scenario(
    py: Python<'_>,
    text: String,
    base_dir: PathBuf,
    out_dir: Option<PathBuf>,
    replication: Option<u32>,
    file: Option<String>,
    progress: Option<Py<PyAny>>,
    flows: bool,
) -> PyResult<String> {
    let mut watcher = SignalWatcher::new(progress);
    let results = py.detach(|| {
        let scenario = schedlab_sim::validate_scenario_text(&text, &base_dir)?;
        schedlab_sim::run_scenario_watched(&scenario, replication, &mut |p| watcher.poll(p))
    });
    let results = match results {
        Ok(results) => results,
        Err(schedlab_sim::ScenarioError::Interrupted) => return Err(watcher.into_error()),
        Err(e) => return Err(scenario_error(e, file.as_deref(), &text)),
    };
    if let Some(dir) = out_dir {
        py.detach(|| write_results(&results, &dir)).map_err(input_error)?;
    }
    let summary = if flows {
        results.summary()
    } else {
        results.summary_without_flows()
    };
    Ok(serde_json::json!({ "summary": summary, "timing": results.timing() }).to_string())
}

/// Reads a `summary.json` a flow row at a time and returns, as a JSON string,
/// `{"head": <the document without flows, with flow_count>, "flows": {key: [value per flow]}}`
/// with only the per-flow keys in `columns` (all when None; a key no row has is left out): the
/// whole document of a million-flow run is gigabytes, a few columns are megabytes.
#[pyfunction]
#[pyo3(signature = (path, columns=None))]
fn read_summary(py: Python<'_>, path: PathBuf, columns: Option<Vec<String>>) -> PyResult<String> {
    py.detach(|| {
        let file = std::fs::File::open(&path).map_err(|e| e.to_string())?;
        let read = schedlab_sim::results::read_summary_columns(file, columns.as_deref())
            .map_err(|e| e.to_string())?;
        Ok(serde_json::json!({ "head": read.head, "flows": read.flows }).to_string())
    })
    .map_err(|message: String| PyInputError::new_err(format!("{}: {message}", path.display())))
}

/// Runs replication 0 of a scenario again keeping a row per measured packet of `flows` (every
/// flow when None) and writes them to `path` with the replay's departure columns
/// (`schedlab run --packets`). Returns the number of rows written.
#[pyfunction]
#[pyo3(signature = (text, base_dir, path, flows=None, file=None))]
fn write_packets(
    py: Python<'_>,
    text: String,
    base_dir: PathBuf,
    path: PathBuf,
    flows: Option<Vec<u32>>,
    file: Option<String>,
) -> PyResult<u64> {
    let mut watcher = SignalWatcher::new(None);
    let logged = py.detach(|| {
        let scenario = schedlab_sim::validate_scenario_text(&text, &base_dir)?;
        if let Some(flows) = &flows {
            for flow in flows {
                if !scenario.sources.iter().any(|s| s.flow == *flow) {
                    let known: Vec<String> = scenario.sources.iter().map(|s| s.flow.to_string()).collect();
                    return Err(schedlab_sim::ScenarioError::Config(
                        schedlab_core::ConfigError::new(
                            "--packets-flows",
                            flow.to_string(),
                            format!("no source has this flow id (flows: {})", known.join(", ")),
                        ),
                    ));
                }
            }
        }
        let log = schedlab_sim::packet_log::PacketLog::new(flows.as_deref());
        let total = 1.0;
        schedlab_sim::engine::run_replication_logged(&scenario, 0, log, &mut |fraction| {
            watcher.poll(schedlab_sim::Progress {
                done: fraction,
                total,
            })
        })
    });
    let (_, log) = match logged {
        Ok(done) => done,
        Err(schedlab_sim::ScenarioError::Interrupted) => return Err(watcher.into_error()),
        Err(e) => return Err(scenario_error(e, file.as_deref(), &text)),
    };
    py.detach(|| log.write(&path)).map_err(input_error)
}

/// Polled by a long run with the GIL released: runs Python's signal handlers (keeping the
/// exception one of them raises, which stops the run) and reports progress to a Python
/// callback — whole units always, fractions at most every [`FRACTION_EVERY`].
struct SignalWatcher {
    progress: Option<Py<PyAny>>,
    error: Option<PyErr>,
    last_fraction: std::time::Instant,
}

/// Least wall time between two fractional progress reports.
const FRACTION_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

impl SignalWatcher {
    fn new(progress: Option<Py<PyAny>>) -> SignalWatcher {
        SignalWatcher {
            progress,
            error: None,
            last_fraction: std::time::Instant::now(),
        }
    }

    fn poll(&mut self, progress: schedlab_sim::Progress) -> bool {
        let whole = progress.done.fract() == 0.0;
        let report = self.progress.is_some() && (whole || self.last_fraction.elapsed() >= FRACTION_EVERY);
        Python::attach(|py| {
            if let Err(e) = py.check_signals() {
                self.error = Some(e);
                return false;
            }
            if report {
                if let Some(callback) = &self.progress {
                    self.last_fraction = std::time::Instant::now();
                    let called = if whole {
                        callback.call1(py, (progress.done as u64, progress.total as u64))
                    } else {
                        callback.call1(py, (progress.done, progress.total as u64))
                    };
                    // An error in the callback is not the run's (the bar is cosmetic), but a
                    // signal handled while it ran (Ctrl-C, SIGTERM) stops the run.
                    if let Err(e) = called {
                        if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py)
                            || e.is_instance_of::<pyo3::exceptions::PySystemExit>(py)
                        {
                            self.error = Some(e);
                            return false;
                        }
                    }
                }
            }
            true
        })
    }

    /// The exception that stopped the run.
    fn into_error(self) -> PyErr {
        self.error
            .unwrap_or_else(|| pyo3::exceptions::PyKeyboardInterrupt::new_err("interrupted"))
    }
}

fn write_results(results: &schedlab_sim::SimResults, dir: &Path) -> Result<(), InputError> {
    results.write(dir).map(|_| ()).map_err(|e| InputError::Io {
        path: dir.display().to_string(),
        message: e.to_string(),
    })
}

/// The keys a scenario's `[run]` table accepts.
#[pyfunction]
fn run_keys() -> Vec<&'static str> {
    schedlab_sim::scenario::RUN_KEYS.to_vec()
}

/// Parses a rate such as `"125kbit"` into bit/s (the same parser as the TOML files).
#[pyfunction]
fn parse_rate(text: &str) -> PyResult<u64> {
    schedlab_core::parse_rate(text)
        .map(|r| r.bits_per_second())
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Parses a size such as `"64KB"` into bytes.
#[pyfunction]
fn parse_size(text: &str) -> PyResult<u64> {
    schedlab_core::parse_size(text).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Parses a duration such as `"250us"` into seconds.
#[pyfunction]
fn parse_duration_s(text: &str) -> PyResult<f64> {
    schedlab_core::parse_duration(text)
        .map(|ns| ns as f64 / 1e9)
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

fn param_list<'py>(py: Python<'py>, params: &[schedlab_core::ParamInfo]) -> PyResult<Bound<'py, PyList>> {
    let items = PyList::empty(py);
    for p in params {
        let d = PyDict::new(py);
        d.set_item("name", p.name)?;
        d.set_item("unit", p.unit)?;
        d.set_item("default", p.default)?;
        d.set_item("description", p.description)?;
        items.append(d)?;
    }
    Ok(items)
}

/// Every built-in discipline: id, name, citation, summary, scheduler and flow parameters
/// (name, unit, default, description), and whether it has per-flow queues.
#[pyfunction]
fn disciplines(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let list = PyList::empty(py);
    for info in schedlab_core::DISCIPLINES {
        let entry = PyDict::new(py);
        entry.set_item("id", info.id)?;
        entry.set_item("name", info.name)?;
        entry.set_item("citation", info.citation)?;
        entry.set_item("summary", info.summary)?;
        entry.set_item("per_flow_queues", info.per_flow_queues)?;
        entry.set_item("scheduler_params", param_list(py, info.scheduler_params)?)?;
        entry.set_item("flow_params", param_list(py, info.flow_params)?)?;
        list.append(entry)?;
    }
    Ok(list)
}

fn model_list<'py>(
    py: Python<'py>,
    models: &[schedlab_sim::catalogue::ModelInfo],
) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for model in models {
        let entry = PyDict::new(py);
        entry.set_item("id", model.id)?;
        entry.set_item("summary", model.summary)?;
        entry.set_item("params", param_list(py, model.params)?)?;
        entry.set_item("example", model.example)?;
        list.append(entry)?;
    }
    Ok(list)
}

/// The simulator's traffic models (`arrivals = { model = … }`) with their keys and units.
#[pyfunction]
fn traffic_models(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    model_list(py, schedlab_sim::catalogue::TRAFFIC_MODELS)
}

/// The simulator's packet-size distributions (`size = { dist = … }`) with their keys and units.
#[pyfunction]
fn size_distributions(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    model_list(py, schedlab_sim::catalogue::SIZE_DISTRIBUTIONS)
}

/// The `schedlab._core` module.
#[cfg(target_os = "linux")]
fn gateway_error(error: schedlab_gateway::linux::GatewayError) -> PyErr {
    use schedlab_gateway::linux::GatewayError;
    match error {
        GatewayError::Input(e) => input_error(e),
        e @ GatewayError::Interface { .. } => PyInputError::new_err(e.to_string()),
        GatewayError::Io(message) => pyo3::exceptions::PyOSError::new_err(message),
    }
}

#[cfg(target_os = "linux")]
fn seconds_option(name: &str, value: Option<f64>) -> PyResult<Option<u64>> {
    value
        .map(|s| {
            schedlab_core::time::seconds_to_ns(s).ok_or_else(|| {
                PyInputError::new_err(format!("{name} = {s}: must be a non-negative number of seconds"))
            })
        })
        .transpose()
}

/// Runs `schedlab gateway` in this process until SIGINT/SIGTERM or `duration_s`: forwards
/// frames from `ingress` to `egress` through the scheduler of `config` (a replay
/// configuration) or of `scenario`'s bottleneck link (classifying `schedlab gen`'s sources by
/// port `port_base + flow`); with `pcap_out`, captures what it transmits on `egress` there;
/// `busy_poll` (a duration such as `"200us"`) overrides the busy-poll window.
/// Returns the final stats document as a JSON string. Bad input and
/// interfaces that cannot be opened raise `InputError`; failures while running `OSError`.
#[cfg(target_os = "linux")]
#[pyfunction]
#[pyo3(signature = (ingress, egress, config=None, scenario=None, port_base=20000, stats=None, duration_s=None, pcap_out=None, busy_poll=None))]
#[allow(clippy::too_many_arguments)]
fn gateway(
    py: Python<'_>,
    ingress: String,
    egress: String,
    config: Option<PathBuf>,
    scenario: Option<PathBuf>,
    port_base: u16,
    stats: Option<PathBuf>,
    duration_s: Option<f64>,
    pcap_out: Option<PathBuf>,
    busy_poll: Option<String>,
) -> PyResult<String> {
    use schedlab_gateway::gateway::check_busy_poll;
    use schedlab_gateway::linux::{run, GatewayOptions, GatewaySetup};
    let busy_poll = busy_poll
        .map(|text| {
            let window = schedlab_core::parse_duration(&text).map_err(|e| e.rule);
            window
                .and_then(|ns| check_busy_poll(ns).map_err(str::to_string))
                .map_err(|rule| PyInputError::new_err(format!("--busy-poll = {text}: {rule}")))
        })
        .transpose()?;
    let setup = match (config, scenario) {
        (Some(path), None) => GatewaySetup::Config(path),
        (None, Some(path)) => GatewaySetup::Scenario { path, port_base },
        _ => {
            return Err(PyInputError::new_err(
                "give exactly one of --config and --scenario",
            ))
        }
    };
    let options = GatewayOptions {
        setup,
        ingress,
        egress,
        stats,
        duration: seconds_option("--duration", duration_s)?,
        pcap_out,
        busy_poll,
    };
    py.detach(|| run(&options))
        .map(|s| s.to_string())
        .map_err(gateway_error)
}

/// Checks, without opening anything, that `schedlab measure` can run `scenario`: the
/// scenario is valid and its bottleneck is what the gateway emulates (one bottleneck, open-loop
/// UDP sources or TCP bulk sources, no simulator-only link keys). Raises `InputError` naming
/// the key and value. Returns the TCP sources as a JSON list (`source`, `flow`, `port`,
/// `start_s`, `stop_s`, `mss`, `variant`) for the Linux senders and receivers.
#[cfg(target_os = "linux")]
#[pyfunction]
#[pyo3(signature = (scenario, port_base=20000))]
fn check_measurable(py: Python<'_>, scenario: PathBuf, port_base: u16) -> PyResult<String> {
    use schedlab_gateway::linux::{load_scenario, scenario_input_error};
    py.detach(|| {
        let parsed = load_scenario(&scenario)?;
        schedlab_gateway::gateway::build_from_scenario(&parsed, port_base)
            .map_err(|e| scenario_input_error(&scenario, e))?;
        let endpoints: Vec<serde_json::Value> = schedlab_gateway::gateway::tcp_endpoints(&parsed, port_base)
            .into_iter()
            .map(|e| {
                serde_json::json!({"source": e.source, "flow": e.flow, "port": e.port, "start_s": e.start_s,
                                   "stop_s": e.stop_s, "mss": e.mss, "variant": e.variant})
            })
            .collect();
        Ok(serde_json::Value::from(endpoints).to_string())
    })
    .map_err(|e: schedlab_sim::InputError| PyInputError::new_err(e.to_string()))
}

/// The shared time 0: an instant, a file to wait for, or `otherwise`.
#[cfg(target_os = "linux")]
fn origin(
    at: Option<u64>,
    file: Option<PathBuf>,
    otherwise: schedlab_gateway::endpoints::Origin,
) -> schedlab_gateway::endpoints::Origin {
    use schedlab_gateway::endpoints::Origin;
    match (at, file) {
        (Some(t), _) => Origin::At(t),
        (None, Some(path)) => Origin::File(path),
        (None, None) => otherwise,
    }
}

/// Runs `schedlab gen`: sends the packets of `scenario`'s sources (replication
/// `replication`; `sources` by index, all if empty) as UDP datagrams to `destination:port`
/// from ports `port_base + flow`, at `origin + time` on CLOCK_MONOTONIC (`origin_ns`, or read
/// from `origin_file` once it appears, else in 0.2 s). Creates `ready` once set up. Writes
/// the sent log to `log`; returns the report as a JSON string.
#[cfg(target_os = "linux")]
#[pyfunction]
#[pyo3(signature = (scenario, destination, port=9000, port_base=20000, replication=0, sources=Vec::new(), origin_ns=None, log=None, ready=None, origin_file=None))]
#[allow(clippy::too_many_arguments)]
fn generate(
    py: Python<'_>,
    scenario: PathBuf,
    destination: String,
    port: u16,
    port_base: u16,
    replication: u32,
    sources: Vec<usize>,
    origin_ns: Option<u64>,
    log: Option<PathBuf>,
    ready: Option<PathBuf>,
    origin_file: Option<PathBuf>,
) -> PyResult<String> {
    let destination = destination.parse().map_err(|_| {
        PyInputError::new_err(format!(
            "--destination = {destination}: must be an IPv4 or IPv6 address"
        ))
    })?;
    let options = schedlab_gateway::endpoints::GenOptions {
        scenario,
        replication,
        sources,
        destination,
        port,
        port_base,
        origin: origin(origin_ns, origin_file, schedlab_gateway::endpoints::Origin::Soon),
        log,
        ready,
    };
    py.detach(|| schedlab_gateway::endpoints::generate(&options))
        .map(|s| s.to_string())
        .map_err(gateway_error)
}

/// Runs `schedlab sink` on UDP `port` until `until_s` after `origin_ns` (or SIGINT/SIGTERM);
/// writes the received log to `log`; creates `ready` once listening; returns a short report as
/// a JSON string.
#[cfg(target_os = "linux")]
#[pyfunction]
#[pyo3(signature = (log, port=9000, origin_ns=None, until_s=None, ready=None, origin_file=None))]
fn sink(
    py: Python<'_>,
    log: PathBuf,
    port: u16,
    origin_ns: Option<u64>,
    until_s: Option<f64>,
    ready: Option<PathBuf>,
    origin_file: Option<PathBuf>,
) -> PyResult<String> {
    let options = schedlab_gateway::endpoints::SinkOptions {
        port,
        origin: origin(
            origin_ns,
            origin_file,
            schedlab_gateway::endpoints::Origin::At(schedlab_gateway::linux::monotonic_ns()),
        ),
        until: seconds_option("--until", until_s)?,
        log,
        ready,
    };
    py.detach(|| schedlab_gateway::endpoints::sink(&options))
        .map(|s| s.to_string())
        .map_err(gateway_error)
}

/// The rows of a log beside the packet logs, or none when the run wrote no such file.
fn read_if_present<T>(path: &Path, read: fn(&Path) -> Result<Vec<T>, String>) -> Result<Vec<T>, String> {
    if path.exists() {
        read(path)
    } else {
        Ok(Vec::new())
    }
}

/// Builds the results of a measured run (`schedlab measure`) from the logs of each
/// replication — a list of `(replication, sent_log, received_log, gateway_stats_json_or_None)`;
/// `tcp_sent.csv` and `tcp_received.csv` beside the logs, when present, are the TCP sources'
/// samples — and writes the files of `schedlab run` plus `measure.json` into `out_dir`.
#[pyfunction]
fn write_measured(
    py: Python<'_>,
    scenario: PathBuf,
    runs: Vec<(u32, PathBuf, PathBuf, Option<PathBuf>)>,
    out_dir: PathBuf,
) -> PyResult<()> {
    let work = || -> Result<(), String> {
        let file = scenario.display().to_string();
        let text = std::fs::read_to_string(&scenario).map_err(|e| format!("{file}: {e}"))?;
        let base = scenario.parent().unwrap_or(Path::new("."));
        let parsed = schedlab_sim::validate_scenario_text(&text, base)
            .map_err(|e| e.into_input_error(&file, &text).to_string())?;
        let bottleneck =
            schedlab_gateway::gateway::bottleneck(&parsed).map_err(|e| format!("{file}: {e}"))?;
        let mut measured = Vec::new();
        for (replication, sent, received, stats) in &runs {
            let gateway = match stats {
                Some(path) => {
                    let text =
                        std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
                    Some(serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?)
                }
                None => None,
            };
            measured.push(schedlab_gateway::measured::MeasuredRun {
                replication: *replication,
                sent: schedlab_gateway::traffic::read_sent(sent)?,
                received: schedlab_gateway::traffic::read_received(received)?,
                gateway,
                tcp_sent: read_if_present(
                    &sent.with_file_name("tcp_sent.csv"),
                    schedlab_gateway::traffic::read_tcp_sent,
                )?,
                tcp_received: read_if_present(
                    &received.with_file_name("tcp_received.csv"),
                    schedlab_gateway::traffic::read_tcp_received,
                )?,
            });
        }
        let (results, extra) = schedlab_gateway::measured::measured_results(&parsed, &measured, bottleneck)?;
        schedlab_gateway::measured::write_measured(&results, &extra, &out_dir)
            .map_err(|e| format!("{}: {e}", out_dir.display()))
    };
    py.detach(work).map_err(PyInputError::new_err)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("InputError", m.py().get_type::<PyInputError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(replay, m)?)?;
    m.add_function(wrap_pyfunction!(validate_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(run_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(run_keys, m)?)?;
    m.add_function(wrap_pyfunction!(write_packets, m)?)?;
    m.add_function(wrap_pyfunction!(read_summary, m)?)?;
    m.add_function(wrap_pyfunction!(parse_rate, m)?)?;
    m.add_function(wrap_pyfunction!(parse_size, m)?)?;
    m.add_function(wrap_pyfunction!(parse_duration_s, m)?)?;
    m.add_function(wrap_pyfunction!(disciplines, m)?)?;
    m.add_function(wrap_pyfunction!(traffic_models, m)?)?;
    m.add_function(wrap_pyfunction!(size_distributions, m)?)?;
    m.add_function(wrap_pyfunction!(write_measured, m)?)?;
    #[cfg(target_os = "linux")]
    {
        m.add_function(wrap_pyfunction!(gateway, m)?)?;
        m.add_function(wrap_pyfunction!(check_measurable, m)?)?;
        m.add_function(wrap_pyfunction!(generate, m)?)?;
        m.add_function(wrap_pyfunction!(sink, m)?)?;
    }
    Ok(())
}
