//! Python bindings for schedlab: the module `schedlab._core`, wrapped by the `schedlab`
//! package. Rust does the work with the GIL released; input errors raise
//! `schedlab._core.InputError` (a `ValueError`) whose message names the file, line, key and
//! value.
#![deny(missing_docs)]

use std::path::PathBuf;

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use schedlab_sim::InputError;

create_exception!(
    _core,
    PyInputError,
    PyValueError,
    "Bad input: the message names the file, line, key and value."
);

fn input_error(error: InputError) -> PyErr {
    PyInputError::new_err(error.to_string())
}

/// Replays a trace CSV through the scheduler of a configuration file and writes the
/// departure CSV. Returns a dict with `discipline`, `flows` (list of per-flow dicts) and
/// `discipline_counters`.
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
        for (key, params) in [
            ("scheduler_params", info.scheduler_params),
            ("flow_params", info.flow_params),
        ] {
            let items = PyList::empty(py);
            for p in params {
                let d = PyDict::new(py);
                d.set_item("name", p.name)?;
                d.set_item("unit", p.unit)?;
                d.set_item("default", p.default)?;
                d.set_item("description", p.description)?;
                items.append(d)?;
            }
            entry.set_item(key, items)?;
        }
        list.append(entry)?;
    }
    Ok(list)
}

/// The `schedlab._core` module.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("InputError", m.py().get_type::<PyInputError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(replay, m)?)?;
    m.add_function(wrap_pyfunction!(disciplines, m)?)?;
    Ok(())
}
