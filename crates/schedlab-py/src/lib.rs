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

/// Replays a trace CSV through the scheduler of a configuration file and writes the
/// departure CSV. Returns a dict with `discipline`, `packets`, `flows` (list of per-flow
/// dicts) and `discipline_counters`.
#[pyfunction]
fn replay<'py>(
    py: Python<'py>,
    config: PathBuf,
    trace: PathBuf,
    out: PathBuf,
) -> PyResult<Bound<'py, PyDict>> {
    let result = py
        .detach(|| schedlab_sim::replay_files(&config, &trace, &out))
        .map_err(input_error)?;
    let summary = PyDict::new(py);
    summary.set_item("discipline", result.discipline)?;
    summary.set_item("packets", result.rows.len())?;
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
/// what it declares as a JSON string. `file`, when given, names the file in error messages
/// and locates the offending key's line in `text`.
#[pyfunction]
#[pyo3(signature = (text, base_dir, file=None))]
fn validate_scenario(
    py: Python<'_>,
    text: String,
    base_dir: PathBuf,
    file: Option<String>,
) -> PyResult<String> {
    let scenario = py
        .detach(|| schedlab_sim::validate_scenario_text(&text, &base_dir))
        .map_err(|e| scenario_error(e, file.as_deref(), &text))?;
    Ok(scenario.describe().to_string())
}

/// Runs a scenario and returns `summary.json` as a string; writes every output table to
/// `out_dir` when given. `replication` runs only that replication (0-based), with the same
/// random streams as in a full run. The GIL is released while the simulation runs.
/// `progress`, when given, is called as `progress(done, total)` with replications finished.
#[pyfunction]
#[pyo3(signature = (text, base_dir, out_dir=None, replication=None, file=None, progress=None))]
fn run_scenario(
    py: Python<'_>,
    text: String,
    base_dir: PathBuf,
    out_dir: Option<PathBuf>,
    replication: Option<u32>,
    file: Option<String>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let results = py
        .detach(|| {
            let scenario = schedlab_sim::validate_scenario_text(&text, &base_dir)?;
            match (replication, progress) {
                (Some(r), _) => schedlab_sim::run_scenario_replication(&scenario, r),
                (None, None) => schedlab_sim::run_scenario(&scenario),
                (None, Some(callback)) => {
                    // Reported between replications; an error in the callback is not the
                    // simulation's, so it is ignored (the bar is cosmetic).
                    let mut report = |done: u32, total: u32| {
                        Python::attach(|py| {
                            let _ = callback.call1(py, (done, total));
                        })
                    };
                    schedlab_sim::run_scenario_with_progress(&scenario, &mut report)
                }
            }
        })
        .map_err(|e| scenario_error(e, file.as_deref(), &text))?;
    if let Some(dir) = out_dir {
        py.detach(|| write_results(&results, &dir)).map_err(input_error)?;
    }
    Ok(results.summary().to_string())
}

fn write_results(results: &schedlab_sim::SimResults, dir: &Path) -> Result<(), InputError> {
    results.write(dir).map(|_| ()).map_err(|e| InputError::Io {
        path: dir.display().to_string(),
        message: e.to_string(),
    })
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
/// Runs `schedlab gateway` in this process until SIGINT/SIGTERM or `duration_s`: forwards
/// frames from `ingress` to `egress` through the configured scheduler (see
/// `schedlab_gateway::linux`). Returns the final stats document as a JSON string. Bad
/// configuration and interfaces that cannot be opened (missing, no permission) raise
/// `InputError`; failures while running raise `OSError`.
#[cfg(target_os = "linux")]
#[pyfunction]
#[pyo3(signature = (config, ingress, egress, stats=None, duration_s=None))]
fn gateway(
    py: Python<'_>,
    config: PathBuf,
    ingress: String,
    egress: String,
    stats: Option<PathBuf>,
    duration_s: Option<f64>,
) -> PyResult<String> {
    use schedlab_gateway::linux::{run, GatewayError, GatewayOptions};
    let duration = match duration_s {
        None => None,
        Some(s) => Some(schedlab_core::time::seconds_to_ns(s).ok_or_else(|| {
            PyInputError::new_err(format!(
                "--duration = {s}: must be a non-negative number of seconds"
            ))
        })?),
    };
    let options = GatewayOptions {
        config,
        ingress,
        egress,
        stats,
        duration,
    };
    match py.detach(|| run(&options)) {
        Ok(stats) => Ok(stats.to_string()),
        Err(GatewayError::Input(e)) => Err(input_error(e)),
        Err(e @ GatewayError::Interface { .. }) => Err(PyInputError::new_err(e.to_string())),
        Err(GatewayError::Io(message)) => Err(pyo3::exceptions::PyOSError::new_err(message)),
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("InputError", m.py().get_type::<PyInputError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(replay, m)?)?;
    m.add_function(wrap_pyfunction!(validate_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(run_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(parse_rate, m)?)?;
    m.add_function(wrap_pyfunction!(parse_size, m)?)?;
    m.add_function(wrap_pyfunction!(parse_duration_s, m)?)?;
    m.add_function(wrap_pyfunction!(disciplines, m)?)?;
    m.add_function(wrap_pyfunction!(traffic_models, m)?)?;
    m.add_function(wrap_pyfunction!(size_distributions, m)?)?;
    #[cfg(target_os = "linux")]
    m.add_function(wrap_pyfunction!(gateway, m)?)?;
    Ok(())
}
