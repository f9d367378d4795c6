//! Packet traces in CSV: `time_s,flow,size_bytes` with optional `class` and `deadline_s`
//! columns, one row per packet, times non-decreasing.
//!
//! Flow labels in a trace are any non-negative integers; [`Trace`] maps them onto dense flow
//! ids (0, 1, … in order of first appearance) for the schedulers and keeps the labels for
//! output.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use schedlab_core::time::seconds_to_ns;
use schedlab_core::{FlowId, Packet, MAX_FLOW_ID};

/// A malformed trace: file, line, field and value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {field} = {value:?}: {rule}")]
pub struct TraceError {
    /// The trace file (or `<memory>`).
    pub file: String,
    /// 1-based line number (1 = header).
    pub line: u64,
    /// Column name (or `header`, `row`).
    pub field: String,
    /// The offending text.
    pub value: String,
    /// The rule that was broken.
    pub rule: String,
}

/// A parsed trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// Packets in file order; `id` = row index, `flow` = dense id.
    pub packets: Vec<Packet>,
    /// Dense flow id → label as written in the trace.
    pub labels: Vec<u64>,
    /// Label → dense flow id.
    pub ids: HashMap<u64, FlowId>,
}

impl Trace {
    /// The dense id of a label, if it occurs in the trace.
    pub fn id_of(&self, label: u64) -> Option<FlowId> {
        self.ids.get(&label).copied()
    }

    /// Reads a trace file.
    pub fn from_path(path: &Path) -> Result<Trace, TraceError> {
        let file = std::fs::File::open(path).map_err(|e| TraceError {
            file: path.display().to_string(),
            line: 0,
            field: "file".into(),
            value: path.display().to_string(),
            rule: format!("cannot be read: {e}"),
        })?;
        Trace::from_reader(file, &path.display().to_string())
    }

    /// Reads a trace from any reader; `name` is used in error messages.
    pub fn from_reader<R: Read>(reader: R, name: &str) -> Result<Trace, TraceError> {
        let error = |line: u64, field: &str, value: &str, rule: String| TraceError {
            file: name.to_string(),
            line,
            field: field.to_string(),
            value: value.to_string(),
            rule,
        };
        let mut csv = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .flexible(false)
            .from_reader(reader);
        let headers = csv
            .headers()
            .map_err(|e| error(1, "header", "", e.to_string()))?
            .clone();
        let column = |name: &str| headers.iter().position(|h| h == name);
        let required = ["time_s", "flow", "size_bytes"];
        for name in required {
            if column(name).is_none() {
                let rule =
                    "missing required column; the header must start time_s,flow,size_bytes".to_string();
                return Err(error(
                    1,
                    name,
                    &headers.iter().collect::<Vec<_>>().join(","),
                    rule,
                ));
            }
        }
        for name in headers.iter() {
            if !["time_s", "flow", "size_bytes", "class", "deadline_s"].contains(&name) {
                let rule = "unknown column; known: time_s, flow, size_bytes, class, deadline_s".to_string();
                return Err(error(1, "header", name, rule));
            }
        }
        let (time_col, flow_col, size_col) = (
            column("time_s").unwrap(),
            column("flow").unwrap(),
            column("size_bytes").unwrap(),
        );
        let (class_col, deadline_col) = (column("class"), column("deadline_s"));

        let mut trace = Trace::default();
        let mut previous: u64 = 0;
        for (index, record) in csv.records().enumerate() {
            let record = record.map_err(|e| {
                let line = e.position().map_or(index as u64 + 2, |p| p.line());
                error(line, "row", "", e.to_string())
            })?;
            let line = record.position().map_or(index as u64 + 2, |p| p.line());
            let field = |col: usize| record.get(col).unwrap_or("");

            let text = field(time_col);
            let seconds: f64 = text
                .parse()
                .map_err(|_| error(line, "time_s", text, "not a number".into()))?;
            let arrival = seconds_to_ns(seconds).ok_or_else(|| {
                error(
                    line,
                    "time_s",
                    text,
                    "must be a finite, non-negative number of seconds".into(),
                )
            })?;
            if arrival < previous {
                let rule = format!(
                    "times must be non-decreasing (previous row: {})",
                    schedlab_core::format_seconds(previous)
                );
                return Err(error(line, "time_s", text, rule));
            }
            previous = arrival;

            let text = field(flow_col);
            let label: u64 = text
                .parse()
                .map_err(|_| error(line, "flow", text, "must be a non-negative integer".into()))?;
            let next_id = trace.labels.len() as FlowId;
            let flow = *trace.ids.entry(label).or_insert(next_id);
            if flow == next_id {
                if next_id > MAX_FLOW_ID {
                    return Err(error(
                        line,
                        "flow",
                        text,
                        format!("more than {} distinct flows", MAX_FLOW_ID as u64 + 1),
                    ));
                }
                trace.labels.push(label);
            }

            let text = field(size_col);
            let size: u32 = text.parse().ok().filter(|s| *s > 0).ok_or_else(|| {
                error(
                    line,
                    "size_bytes",
                    text,
                    "must be an integer from 1 to 4294967295".into(),
                )
            })?;

            let class = match class_col.map(field) {
                None | Some("") => 0,
                Some(text) => text
                    .parse::<u8>()
                    .map_err(|_| error(line, "class", text, "must be an integer from 0 to 255".into()))?,
            };
            let deadline = match deadline_col.map(field) {
                None | Some("") => None,
                Some(text) => {
                    let seconds: f64 = text
                        .parse()
                        .map_err(|_| error(line, "deadline_s", text, "not a number".into()))?;
                    Some(seconds_to_ns(seconds).ok_or_else(|| {
                        error(
                            line,
                            "deadline_s",
                            text,
                            "must be a finite, non-negative number of seconds".into(),
                        )
                    })?)
                }
            };
            let id = trace.packets.len() as u64;
            trace.packets.push(Packet {
                id,
                flow,
                class,
                size,
                arrival,
                deadline,
            });
        }
        Ok(trace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Trace, TraceError> {
        Trace::from_reader(text.as_bytes(), "t.csv")
    }

    #[test]
    fn reads_rows_and_maps_labels_densely() {
        let t = parse("time_s,flow,size_bytes,class,deadline_s\n0.5,7,100,2,0.6\n0.5,3,200,,\n1,7,50,1,\n")
            .unwrap();
        assert_eq!(t.labels, vec![7, 3]);
        assert_eq!(t.packets.len(), 3);
        assert_eq!(
            t.packets[0],
            Packet {
                id: 0,
                flow: 0,
                class: 2,
                size: 100,
                arrival: 500_000_000,
                deadline: Some(600_000_000)
            }
        );
        assert_eq!(t.packets[1].flow, 1);
        assert_eq!(t.packets[2].arrival, 1_000_000_000);
        assert_eq!(t.id_of(3), Some(1));
    }

    #[test]
    fn errors_name_line_field_and_value() {
        let e = parse("time_s,flow,size_bytes\n0.1,1,100\n0.05,1,100\n").unwrap_err();
        assert_eq!(
            (e.line, e.field.as_str(), e.value.as_str()),
            (3, "time_s", "0.05")
        );
        assert!(e.rule.contains("non-decreasing"));
        let e = parse("time_s,flow,size_bytes\n0.1,1,zero\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.csv:2: size_bytes = \"zero\": must be an integer from 1 to 4294967295"
        );
        let e = parse("time_s,flow,size_bytes\n0.1,-1,10\n").unwrap_err();
        assert_eq!(e.field, "flow");
        let e = parse("time_s,flow\n0.1,1\n").unwrap_err();
        assert_eq!(e.field, "size_bytes");
        let e = parse("time_s,flow,size_bytes\n0.1,1\n").unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (2, "row"));
        let e = parse("time_s,flow,size_bytes,colour\n").unwrap_err();
        assert_eq!(e.value, "colour");
        let e = parse("time_s,flow,size_bytes\nnan,1,10\n").unwrap_err();
        assert_eq!(e.field, "time_s");
    }
}
