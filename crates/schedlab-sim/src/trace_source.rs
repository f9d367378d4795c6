//! Trace replay as a traffic source (`arrivals = { model = "trace", file = "…", flow = 3 }`):
//! the rows of a replay trace (`time_s,flow,size_bytes[,class,deadline_s]`, read by
//! [`crate::trace`]) become the packets of one source.
//!
//! Trace times are kept as they are, shifted by the source's `start`; a `deadline_s` column is
//! an absolute time on the trace's clock, so each packet keeps `deadline_s − time_s` as its
//! relative deadline.

use std::path::Path;

use crate::trace::Trace;
use crate::traffic::TracePacket;

/// Loads the packets whose flow label is `flow_label` (all rows when `None`) from the trace at
/// `path`. Errors name the file, line, field and value.
pub fn load(path: &Path, flow_label: Option<u64>) -> Result<Vec<TracePacket>, String> {
    let trace = Trace::from_path(path).map_err(|e| e.to_string())?;
    let wanted = match flow_label {
        None => None,
        Some(label) => Some(trace.id_of(label).ok_or_else(|| {
            let mut labels: Vec<String> = trace.labels.iter().map(u64::to_string).collect();
            labels.truncate(20);
            format!("the trace has no flow {label} (flows: {})", labels.join(", "))
        })?),
    };
    Ok(trace
        .packets
        .iter()
        .filter(|p| wanted.is_none_or(|f| p.flow == f))
        .map(|p| TracePacket {
            time: p.arrival,
            size: p.size,
            class: p.class,
            deadline: p.deadline.map(|d| d.saturating_sub(p.arrival)),
        })
        .collect())
}
