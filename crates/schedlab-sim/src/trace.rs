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
        let mut trace = Trace::default();
        for row in TraceRows::new(reader, name)? {
            let row = row?;
            let flow = trace.flow_id(&row, name)?;
            let id = trace.packets.len() as u64;
            trace.packets.push(row.packet(id, flow));
        }
        Ok(trace)
    }

    /// The dense id of `row`'s label, giving the next id to a label not seen before (an error
    /// naming the row past [`MAX_FLOW_ID`] distinct labels).
    pub fn flow_id(&mut self, row: &TraceRow, name: &str) -> Result<FlowId, TraceError> {
        let next_id = self.labels.len() as FlowId;
        let flow = *self.ids.entry(row.label).or_insert(next_id);
        if flow == next_id {
            if next_id > MAX_FLOW_ID {
                self.ids.remove(&row.label);
                return Err(TraceError {
                    file: name.to_string(),
                    line: row.line,
                    field: "flow".into(),
                    value: row.label.to_string(),
                    rule: format!("more than {} distinct flows", MAX_FLOW_ID as u64 + 1),
                });
            }
            self.labels.push(row.label);
        }
        Ok(flow)
    }
}

/// One row of a trace file, its flow still the label written in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRow {
    /// 1-based line number in the file.
    pub line: u64,
    /// Arrival time, ns.
    pub arrival: u64,
    /// Flow label as written.
    pub label: u64,
    /// Size, bytes.
    pub size: u32,
    /// Class (0 when the column is absent or empty).
    pub class: u8,
    /// Absolute deadline, ns, if given.
    pub deadline: Option<u64>,
}

impl TraceRow {
    /// The packet descriptor of this row with id `id` and dense flow id `flow`.
    pub fn packet(&self, id: u64, flow: FlowId) -> Packet {
        Packet {
            id,
            flow,
            class: self.class,
            size: self.size,
            arrival: self.arrival,
            deadline: self.deadline,
        }
    }
}

/// The rows of a trace, read one at a time (memory independent of the trace's length):
/// every row checked as [`Trace::from_reader`] checks it, errors naming file, line, field and
/// value.
pub struct TraceRows<R: Read> {
    csv: csv::Reader<R>,
    record: csv::StringRecord,
    name: String,
    columns: [usize; 3],
    class_column: Option<usize>,
    deadline_column: Option<usize>,
    previous: u64,
    index: u64,
    failed: bool,
}

impl<R: Read> TraceRows<R> {
    /// Reads and checks the header of the trace `reader` (`name` in error messages).
    pub fn new(reader: R, name: &str) -> Result<TraceRows<R>, TraceError> {
        let error = |field: &str, value: &str, rule: String| TraceError {
            file: name.to_string(),
            line: 1,
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
            .map_err(|e| error("header", "", e.to_string()))?
            .clone();
        let column = |name: &str| headers.iter().position(|h| h == name);
        let required = ["time_s", "flow", "size_bytes"];
        for name in required {
            if column(name).is_none() {
                let rule =
                    "missing required column; the header must start time_s,flow,size_bytes".to_string();
                return Err(error(name, &headers.iter().collect::<Vec<_>>().join(","), rule));
            }
        }
        for name in headers.iter() {
            if !["time_s", "flow", "size_bytes", "class", "deadline_s"].contains(&name) {
                let rule = "unknown column; known: time_s, flow, size_bytes, class, deadline_s".to_string();
                return Err(error("header", name, rule));
            }
        }
        Ok(TraceRows {
            columns: [
                column("time_s").expect("checked above"),
                column("flow").expect("checked above"),
                column("size_bytes").expect("checked above"),
            ],
            class_column: column("class"),
            deadline_column: column("deadline_s"),
            csv,
            record: csv::StringRecord::new(),
            name: name.to_string(),
            previous: 0,
            index: 0,
            failed: false,
        })
    }

    fn read_row(&mut self) -> Option<Result<TraceRow, TraceError>> {
        let fallback_line = self.index + 2;
        match self.csv.read_record(&mut self.record) {
            Ok(false) => return None,
            Ok(true) => {}
            Err(e) => {
                let line = e.position().map_or(fallback_line, |p| p.line());
                return Some(Err(self.error(line, "row", "", e.to_string())));
            }
        }
        self.index += 1;
        let line = self.record.position().map_or(fallback_line, |p| p.line());
        let record = &self.record;
        let field = |col: usize| record.get(col).unwrap_or("");
        let error = |field: &str, value: &str, rule: &str| TraceError {
            file: self.name.clone(),
            line,
            field: field.to_string(),
            value: value.to_string(),
            rule: rule.to_string(),
        };
        let [time_col, flow_col, size_col] = self.columns;
        let row = (|| {
            let text = field(time_col);
            let seconds: f64 = text.parse().map_err(|_| error("time_s", text, "not a number"))?;
            let arrival = seconds_to_ns(seconds)
                .ok_or_else(|| error("time_s", text, "must be a finite, non-negative number of seconds"))?;
            if arrival < self.previous {
                let rule = format!(
                    "times must be non-decreasing (previous row: {})",
                    schedlab_core::format_seconds(self.previous)
                );
                return Err(error("time_s", text, &rule));
            }
            let text = field(flow_col);
            let label: u64 = text
                .parse()
                .map_err(|_| error("flow", text, "must be a non-negative integer"))?;
            let text = field(size_col);
            let size: u32 = text
                .parse()
                .ok()
                .filter(|s| *s > 0)
                .ok_or_else(|| error("size_bytes", text, "must be an integer from 1 to 4294967295"))?;
            let class = match self.class_column.map(field) {
                None | Some("") => 0,
                Some(text) => text
                    .parse::<u8>()
                    .map_err(|_| error("class", text, "must be an integer from 0 to 255"))?,
            };
            let deadline = match self.deadline_column.map(field) {
                None | Some("") => None,
                Some(text) => {
                    let seconds: f64 = text
                        .parse()
                        .map_err(|_| error("deadline_s", text, "not a number"))?;
                    Some(seconds_to_ns(seconds).ok_or_else(|| {
                        error(
                            "deadline_s",
                            text,
                            "must be a finite, non-negative number of seconds",
                        )
                    })?)
                }
            };
            Ok(TraceRow {
                line,
                arrival,
                label,
                size,
                class,
                deadline,
            })
        })();
        if let Ok(row) = &row {
            self.previous = row.arrival;
        }
        Some(row)
    }

    fn error(&self, line: u64, field: &str, value: &str, rule: String) -> TraceError {
        TraceError {
            file: self.name.clone(),
            line,
            field: field.to_string(),
            value: value.to_string(),
            rule,
        }
    }
}

impl<R: Read> Iterator for TraceRows<R> {
    type Item = Result<TraceRow, TraceError>;

    /// The next row; after an error, nothing more.
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let row = self.read_row();
        if matches!(row, Some(Err(_))) {
            self.failed = true;
        }
        row
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
