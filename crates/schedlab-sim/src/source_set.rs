//! Compact source declarations: one `[[source]]` table that stands for many flows.
//!
//! ```toml
//! [[source]]                 # flows 100 … 999 999, one light Poisson flow each
//! count = 999900
//! flow = 100                 # the first flow id (default: the number of flows declared before)
//! name = "web"               # names web0, web1, … (default: flow<N>)
//! path = ["bottleneck"]
//! arrivals = { model = "poisson", rate_pps = { draw = "uniform", min = 0.5, max = 2.0 } }
//! size = { dist = "constant", size = { each = [500, 1000, 1500] } }   # needs count = 3
//! params = { weight = { draw = "choice", values = [1, 2, 4] } }
//!
//! [[source]]                 # one flow per row of a CSV file, the rest of the table shared
//! file = "flows.csv"         # header: key paths, e.g. flow,arrivals.rate_pps,params.quantum,path
//! path = ["bottleneck"]
//! arrivals = { model = "poisson" }
//! size = { dist = "constant", size = 500 }
//! ```
//!
//! Any value inside a `count` source may be given per flow: `{ each = [v0, v1, …] }` (exactly
//! `count` values, flow `i` takes `v_i`) or drawn with the scenario's seed:
//! `{ draw = "uniform", min, max }` (integers when both bounds are integers, inclusive),
//! `{ draw = "exponential", mean }`, `{ draw = "choice", values = […], weights = […] }`.
//! Each key path of each `[[source]]` table has its own random stream
//! (`traffic::stream_seed(seed, u64::MAX, …)`), so the drawn values do not depend on the
//! replication, on other keys or on other tables: the scenario is the same network in every
//! replication.
//!
//! A CSV file's header names key paths relative to the source (`flow`, `name`,
//! `arrivals.rate_pps`, `params.quantum`, …; `path` holds link names separated by spaces); each
//! row is one flow whose non-empty cells replace the table's values. A cell is an integer, else
//! a number, else `true`/`false`, else text. Without a `flow` column the flows are numbered
//! from the table's `flow` (as for `count`).
//!
//! Every expanded flow is then read exactly as a one-flow `[[source]]` table, so every rule and
//! error of a `[[source]]` applies; an error names the table's key path (so that the CLI finds
//! its line) and, in its rule, the flow and the index or CSV line it came from.

use std::path::Path;

use rand::RngExt;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use schedlab_core::{ConfigError, FlowId, MAX_FLOW_ID};

use crate::traffic::stream_seed;

/// The replication number under which per-flow draws take their streams: no real
/// replication uses it, so draws never share a stream with a source's packets.
const DRAW_REPLICATION: u64 = u64::MAX;

/// How one value varies over the flows of a set.
#[derive(Debug)]
enum PerFlow {
    /// `{ each = [...] }`: flow `i` takes item `i`.
    Each(Vec<toml::Value>),
    /// `{ draw = ... }`: drawn from a distribution, one draw per flow in order.
    Draw(Draw, Box<Xoshiro256PlusPlus>),
}

#[derive(Debug)]
enum Draw {
    UniformInteger {
        min: i64,
        max: i64,
    },
    Uniform {
        min: f64,
        max: f64,
    },
    Exponential {
        mean: f64,
    },
    Choice {
        values: Vec<toml::Value>,
        cumulative: Vec<f64>,
    },
}

impl Draw {
    fn sample(&self, rng: &mut Xoshiro256PlusPlus) -> toml::Value {
        match self {
            Draw::UniformInteger { min, max } => toml::Value::Integer(rng.random_range(*min..=*max)),
            Draw::Uniform { min, max } => toml::Value::Float(min + (max - min) * rng.random::<f64>()),
            Draw::Exponential { mean } => {
                let u: f64 = rng.random();
                toml::Value::Float(-mean * (1.0 - u).ln())
            }
            Draw::Choice { values, cumulative } => {
                let total = *cumulative.last().unwrap_or(&1.0);
                let u = rng.random::<f64>() * total;
                let index = cumulative.iter().position(|&c| u < c).unwrap_or(values.len() - 1);
                values[index].clone()
            }
        }
    }
}

/// Where each flow's own values come from.
enum Rows {
    /// `count = N` and `{ each }` / `{ draw }` values.
    Count {
        count: usize,
        varying: Vec<(Vec<String>, PerFlow)>,
    },
    /// `file = "…csv"`: per row, its line and its non-empty cells (by column).
    Csv {
        file: String,
        columns: Vec<Vec<String>>,
        rows: Vec<(u64, Vec<Option<toml::Value>>)>,
    },
}

/// A `[[source]]` table that declares several flows (`count = N` or `file = "flows.csv"`).
pub(crate) struct SourceSet {
    path: String,
    template: toml::Table,
    first_flow: u64,
    name: Option<String>,
    rows: Rows,
}

/// The keys only a set reads; the rest of the table is the template of every flow.
const SET_KEYS: &[&str] = &["count", "file"];

/// Whether `value` is a per-flow value (`{ each = … }` or `{ draw = … }`).
fn is_per_flow(value: &toml::Value) -> bool {
    matches!(value, toml::Value::Table(t) if t.contains_key("each") || t.contains_key("draw"))
}

/// The first per-flow value inside `table`, as a key path, if any.
fn find_per_flow(table: &toml::Table, prefix: &str) -> Option<String> {
    table.iter().find_map(|(key, value)| {
        let path = schedlab_core::config::join_path(prefix, key);
        if is_per_flow(value) {
            Some(path)
        } else if let toml::Value::Table(inner) = value {
            find_per_flow(inner, &path)
        } else {
            None
        }
    })
}

fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

impl SourceSet {
    /// Reads table `index` (key path `path`): `None` if it declares one flow. `flows_before`
    /// is the number of flows declared by earlier tables (the default first flow id), `seed`
    /// the scenario's seed, `base_dir` where a relative CSV file is found.
    pub(crate) fn read(
        table: &toml::Table,
        path: &str,
        index: usize,
        flows_before: usize,
        seed: u64,
        base_dir: &Path,
    ) -> Result<Option<SourceSet>, ConfigError> {
        let at = |key: &str| schedlab_core::config::join_path(path, key);
        let count = table.get("count");
        let file = table.get("file");
        if count.is_none() && file.is_none() {
            if let Some(key) = find_per_flow(table, path) {
                return Err(ConfigError::new(
                    key,
                    "(a per-flow value)",
                    "{ each = [...] } and { draw = ... } need count = N in the [[source]]",
                ));
            }
            return Ok(None);
        }
        let mut template = table.clone();
        for key in SET_KEYS {
            template.remove(*key);
        }
        let first_flow = match template.get("flow") {
            None => flows_before as u64,
            Some(toml::Value::Integer(f)) if (0..=MAX_FLOW_ID as i64).contains(f) => *f as u64,
            Some(other) => {
                return Err(ConfigError::new(
                    at("flow"),
                    other.to_string(),
                    format!("must be the first flow id, an integer from 0 to {MAX_FLOW_ID}"),
                ))
            }
        };
        let name = match template.get("name") {
            None => None,
            Some(toml::Value::String(s)) => Some(s.clone()),
            Some(other) if is_per_flow(other) => None,
            Some(other) => {
                return Err(ConfigError::new(
                    at("name"),
                    other.to_string(),
                    "must be a string",
                ))
            }
        };
        let rows = match (count, file) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::new(
                    at("file"),
                    file.map(toml::Value::to_string).unwrap_or_default(),
                    "a [[source]] takes count = N or a CSV file of flows, not both",
                ))
            }
            (Some(count), None) => {
                let count = match count {
                    toml::Value::Integer(n) if *n >= 1 && *n <= MAX_FLOW_ID as i64 + 1 => *n as usize,
                    other => {
                        return Err(ConfigError::new(
                            at("count"),
                            other.to_string(),
                            format!(
                                "must be the number of flows, an integer from 1 to {}",
                                MAX_FLOW_ID as u64 + 1
                            ),
                        ))
                    }
                };
                let mut varying = Vec::new();
                collect_per_flow(&template, path, &mut Vec::new(), count, seed, index, &mut varying)?;
                Rows::Count { count, varying }
            }
            (None, Some(file)) => {
                let toml::Value::String(name) = file else {
                    return Err(ConfigError::new(
                        at("file"),
                        file.to_string(),
                        "must name a CSV file of flows (a header of key paths, one row per flow)",
                    ));
                };
                if let Some(key) = find_per_flow(&template, path) {
                    return Err(ConfigError::new(
                        key,
                        "(a per-flow value)",
                        "{ each } and { draw } go with count = N; with a CSV file give the values as columns",
                    ));
                }
                read_csv(&base_dir.join(name), name, &at("file"))?
            }
            (None, None) => unreachable!("handled above"),
        };
        let set = SourceSet {
            path: path.to_string(),
            template,
            first_flow,
            name,
            rows,
        };
        let last = set.first_flow + set.len() as u64 - 1;
        if !set.has_flow_column() && last > MAX_FLOW_ID as u64 {
            return Err(ConfigError::new(
                at("count"),
                set.len().to_string(),
                format!(
                    "flows {} to {last} would pass the largest flow id {MAX_FLOW_ID}",
                    set.first_flow
                ),
            ));
        }
        Ok(Some(set))
    }

    /// The number of flows the table declares.
    pub(crate) fn len(&self) -> usize {
        match &self.rows {
            Rows::Count { count, .. } => *count,
            Rows::Csv { rows, .. } => rows.len(),
        }
    }

    fn has_flow_column(&self) -> bool {
        matches!(&self.rows, Rows::Csv { columns, .. } if columns.iter().any(|c| c.len() == 1 && c[0] == "flow"))
    }

    /// Whether flows differ in more than their id and name (else one parse serves all).
    pub(crate) fn only_ids_vary(&self) -> bool {
        match &self.rows {
            Rows::Count { varying, .. } => varying
                .iter()
                .all(|(key, _)| key.len() == 1 && (key[0] == "flow" || key[0] == "name")),
            Rows::Csv { columns, .. } => columns
                .iter()
                .all(|c| c.len() == 1 && (c[0] == "flow" || c[0] == "name")),
        }
    }

    /// The one-flow `[[source]]` table of flow `i` (call with `i` = 0, 1, 2, … in order: draws
    /// are taken in that order).
    pub(crate) fn table(&mut self, i: usize) -> Result<toml::Table, ConfigError> {
        let mut table = self.template.clone();
        table.insert(
            "flow".into(),
            toml::Value::Integer((self.first_flow + i as u64) as i64),
        );
        if let Some(name) = &self.name {
            table.insert("name".into(), toml::Value::String(format!("{name}{i}")));
        }
        match &mut self.rows {
            Rows::Count { varying, .. } => {
                for (key, per_flow) in varying.iter_mut() {
                    let value = match per_flow {
                        PerFlow::Each(values) => values[i].clone(),
                        PerFlow::Draw(draw, rng) => draw.sample(rng),
                    };
                    set_key(&mut table, key, value);
                }
            }
            Rows::Csv { columns, rows, .. } => {
                for (key, cell) in columns.iter().zip(&rows[i].1) {
                    if let Some(value) = cell {
                        set_key(&mut table, key, value.clone());
                    }
                }
            }
        }
        Ok(table)
    }

    /// The key path of flow `i`'s `params` in errors: `source[N].count[i].params`, or
    /// `source[N].file(line L).params` (the CLI still finds the table's line from it).
    pub(crate) fn params_path(&self, i: usize) -> String {
        match &self.rows {
            Rows::Count { .. } => format!("{}.count[{i}].params", self.path),
            Rows::Csv { rows, .. } => format!("{}.file(line {}).params", self.path, rows[i].0),
        }
    }

    /// `error` (from reading flow `i`'s table) with the flow and where it came from in its rule.
    pub(crate) fn locate(&self, mut error: ConfigError, i: usize, flow: Option<FlowId>) -> ConfigError {
        let flow = flow.map(|f| format!("flow {f}, ")).unwrap_or_default();
        let origin = match &self.rows {
            Rows::Count { count, .. } => format!("{flow}index {i} of {}.count = {count}", self.path),
            Rows::Csv { file, rows, .. } => format!("{flow}{file} line {}", rows[i].0),
        };
        error.rule = format!("{} ({origin})", error.rule);
        error
    }
}

/// Sets `key` (a path of table keys) in `table`, creating tables on the way.
fn set_key(table: &mut toml::Table, key: &[String], value: toml::Value) {
    let (last, parents) = key.split_last().expect("key paths are not empty");
    let mut node = table;
    for step in parents {
        let entry = node
            .entry(step.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if !entry.is_table() {
            *entry = toml::Value::Table(toml::Table::new());
        }
        node = entry.as_table_mut().expect("made a table above");
    }
    node.insert(last.clone(), value);
}

/// Finds every per-flow value in `table` (key path `path`), checks it and records it.
fn collect_per_flow(
    table: &toml::Table,
    path: &str,
    key: &mut Vec<String>,
    count: usize,
    seed: u64,
    index: usize,
    found: &mut Vec<(Vec<String>, PerFlow)>,
) -> Result<(), ConfigError> {
    for (name, value) in table {
        key.push(name.clone());
        let at = format!("{path}.{}", key.join("."));
        if is_per_flow(value) {
            let spec = value.as_table().expect("is_per_flow checked");
            let stream = stream_seed(
                seed,
                DRAW_REPLICATION,
                (index as u64) ^ fnv1a(&key.join(".")).rotate_left(17),
            );
            found.push((key.clone(), per_flow(spec, &at, count, stream)?));
        } else if let toml::Value::Table(inner) = value {
            collect_per_flow(inner, path, key, count, seed, index, found)?;
        }
        key.pop();
    }
    Ok(())
}

fn number(value: Option<&toml::Value>, at: &str, key: &str, rule: &str) -> Result<f64, ConfigError> {
    match value {
        Some(toml::Value::Integer(i)) => Ok(*i as f64),
        Some(toml::Value::Float(f)) if f.is_finite() => Ok(*f),
        Some(other) => Err(ConfigError::new(format!("{at}.{key}"), other.to_string(), rule)),
        None => Err(ConfigError::new(format!("{at}.{key}"), "(missing)", rule)),
    }
}

fn per_flow(spec: &toml::Table, at: &str, count: usize, stream: u64) -> Result<PerFlow, ConfigError> {
    let only = |accepted: &[&str]| -> Result<(), ConfigError> {
        match spec.keys().find(|k| !accepted.contains(&k.as_str())) {
            Some(k) => Err(ConfigError::new(
                format!("{at}.{k}"),
                spec[k].to_string(),
                format!("unknown key; accepted: {}", accepted.join(", ")),
            )),
            None => Ok(()),
        }
    };
    if let Some(each) = spec.get("each") {
        only(&["each"])?;
        return match each {
            toml::Value::Array(values) if values.len() == count => Ok(PerFlow::Each(values.clone())),
            toml::Value::Array(values) => Err(ConfigError::new(
                format!("{at}.each"),
                format!("({} values)", values.len()),
                format!("must list exactly count = {count} values, one per flow"),
            )),
            other => Err(ConfigError::new(
                format!("{at}.each"),
                other.to_string(),
                "must be an array of one value per flow",
            )),
        };
    }
    let rng = Box::new(Xoshiro256PlusPlus::seed_from_u64(stream));
    let kind = match spec.get("draw") {
        Some(toml::Value::String(kind)) => kind.as_str(),
        other => {
            return Err(ConfigError::new(
                format!("{at}.draw"),
                other.map(toml::Value::to_string).unwrap_or_default(),
                "must be one of uniform, exponential, choice",
            ))
        }
    };
    let draw = match kind {
        "uniform" => {
            only(&["draw", "min", "max"])?;
            match (spec.get("min"), spec.get("max")) {
                (Some(toml::Value::Integer(min)), Some(toml::Value::Integer(max))) => {
                    if min > max {
                        return Err(ConfigError::new(
                            format!("{at}.max"),
                            max.to_string(),
                            "must be at least min",
                        ));
                    }
                    Draw::UniformInteger { min: *min, max: *max }
                }
                (min, max) => {
                    let min = number(min, at, "min", "must be a number (the smallest value)")?;
                    let max = number(max, at, "max", "must be a number (the largest value)")?;
                    if min > max {
                        return Err(ConfigError::new(
                            format!("{at}.max"),
                            max.to_string(),
                            "must be at least min",
                        ));
                    }
                    Draw::Uniform { min, max }
                }
            }
        }
        "exponential" => {
            only(&["draw", "mean"])?;
            let mean = number(
                spec.get("mean"),
                at,
                "mean",
                "must be a positive number (the mean)",
            )?;
            if mean <= 0.0 {
                return Err(ConfigError::new(
                    format!("{at}.mean"),
                    mean.to_string(),
                    "must be a positive number (the mean)",
                ));
            }
            Draw::Exponential { mean }
        }
        "choice" => {
            only(&["draw", "values", "weights"])?;
            let values = match spec.get("values") {
                Some(toml::Value::Array(v)) if !v.is_empty() => v.clone(),
                other => {
                    return Err(ConfigError::new(
                        format!("{at}.values"),
                        other
                            .map(toml::Value::to_string)
                            .unwrap_or_else(|| "(missing)".into()),
                        "must be a non-empty array of the values to choose from",
                    ))
                }
            };
            let weights = match spec.get("weights") {
                None => vec![1.0; values.len()],
                Some(toml::Value::Array(w)) if w.len() == values.len() => w
                    .iter()
                    .map(|v| match v {
                        toml::Value::Integer(i) if *i >= 0 => Ok(*i as f64),
                        toml::Value::Float(f) if f.is_finite() && *f >= 0.0 => Ok(*f),
                        other => Err(ConfigError::new(
                            format!("{at}.weights"),
                            other.to_string(),
                            "each weight must be a non-negative number",
                        )),
                    })
                    .collect::<Result<_, _>>()?,
                Some(other) => {
                    return Err(ConfigError::new(
                        format!("{at}.weights"),
                        other.to_string(),
                        format!(
                            "must be an array of {} non-negative numbers, one per value",
                            values.len()
                        ),
                    ))
                }
            };
            let cumulative: Vec<f64> = weights
                .iter()
                .scan(0.0, |sum, w| {
                    *sum += w;
                    Some(*sum)
                })
                .collect();
            if cumulative.last().is_none_or(|&t| t <= 0.0) {
                return Err(ConfigError::new(
                    format!("{at}.weights"),
                    spec.get("weights")
                        .map(toml::Value::to_string)
                        .unwrap_or_default(),
                    "must not all be zero",
                ));
            }
            Draw::Choice { values, cumulative }
        }
        other => {
            return Err(ConfigError::new(
                format!("{at}.draw"),
                format!("{other:?}"),
                "must be one of uniform, exponential, choice",
            ))
        }
    };
    Ok(PerFlow::Draw(draw, rng))
}

/// A CSV cell as a TOML value: an integer, else a number, else a boolean, else text; the
/// `path` column holds link names separated by spaces.
fn cell_value(column: &[String], cell: &str) -> toml::Value {
    if column.len() == 1 && column[0] == "path" {
        return toml::Value::Array(
            cell.split_whitespace()
                .map(|l| toml::Value::String(l.into()))
                .collect(),
        );
    }
    if let Ok(i) = cell.parse::<i64>() {
        toml::Value::Integer(i)
    } else if let Ok(f) = cell.parse::<f64>() {
        toml::Value::Float(f)
    } else if cell == "true" || cell == "false" {
        toml::Value::Boolean(cell == "true")
    } else {
        toml::Value::String(cell.to_string())
    }
}

fn read_csv(full: &Path, name: &str, at: &str) -> Result<Rows, ConfigError> {
    let fail = |rule: String| ConfigError::new(at, format!("{name:?}"), rule);
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .flexible(true)
        .comment(Some(b'#'))
        .from_path(full)
        .map_err(|e| fail(format!("cannot be read: {e}")))?;
    let headers = reader
        .headers()
        .map_err(|e| fail(format!("line 1: {e}")))?
        .clone();
    let mut columns: Vec<Vec<String>> = Vec::with_capacity(headers.len());
    for header in &headers {
        let key: Vec<String> = header.split('.').map(str::to_string).collect();
        if header.is_empty() || key.iter().any(String::is_empty) {
            return Err(fail(format!(
                "line 1: column {header:?} is not a key path such as arrivals.rate_pps"
            )));
        }
        if SET_KEYS.contains(&key[0].as_str()) {
            return Err(fail(format!(
                "line 1: column {header:?} cannot be given per flow"
            )));
        }
        if columns.contains(&key) {
            return Err(fail(format!("line 1: column {header:?} appears twice")));
        }
        columns.push(key);
    }
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| fail(e.to_string()))?;
        let line = record.position().map_or(0, |p| p.line());
        if record.len() != columns.len() {
            return Err(fail(format!(
                "line {line}: {} fields, the header has {}",
                record.len(),
                columns.len()
            )));
        }
        let cells = columns
            .iter()
            .zip(record.iter())
            .map(|(column, cell)| (!cell.is_empty()).then(|| cell_value(column, cell)))
            .collect();
        rows.push((line, cells));
    }
    if rows.is_empty() {
        return Err(fail("has no flow: give one row per flow after the header".into()));
    }
    Ok(Rows::Csv {
        file: name.to_string(),
        columns,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use crate::scenario::{parse_scenario, Scenario, ScenarioError};
    use crate::traffic::ArrivalModel;

    const HEAD: &str = "[run]\nduration = \"1s\"\nseed = 3\n[[link]]\nname = \"l\"\nrate = \"1Gbit\"\nscheduler = { kind = \"drr\" }\n";

    fn parse(body: &str) -> Result<Scenario, ScenarioError> {
        parse_scenario(&format!("{HEAD}{body}"), Path::new("."))
    }

    fn error(body: &str) -> String {
        parse(body)
            .expect_err("the scenario must be rejected")
            .to_string()
    }

    fn rate(model: &ArrivalModel) -> f64 {
        match model {
            ArrivalModel::Poisson { rate_pps } => *rate_pps,
            other => panic!("not Poisson: {other:?}"),
        }
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("schedlab-source-set-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_count_source_equals_the_tables_written_out() {
        let compact = parse(
            "[[source]]\ncount = 3\nflow = 10\npath = [\"l\"]\n\
             arrivals = { model = \"poisson\", rate_pps = { each = [1, 2.5, 4] } }\n\
             size = { dist = \"constant\", size = 500 }\nparams = { quantum = { each = [1500, 3000, 4500] } }\n",
        )
        .unwrap();
        let mut written = String::new();
        for (i, (rate, quantum)) in [("1", 1500), ("2.5", 3000), ("4", 4500)].iter().enumerate() {
            written += &format!(
                "[[source]]\nflow = {}\npath = [\"l\"]\narrivals = {{ model = \"poisson\", rate_pps = {rate} }}\n\
                 size = {{ dist = \"constant\", size = 500 }}\nparams = {{ quantum = {quantum} }}\n",
                10 + i
            );
        }
        let explicit = parse(&written).unwrap();
        assert_eq!(compact.sources, explicit.sources);
        let tables = |s: &Scenario| -> Vec<(u32, toml::Table)> {
            s.links[0]
                .flows
                .overrides
                .iter()
                .map(|(f, (t, _))| (*f, t.clone()))
                .collect()
        };
        assert_eq!(tables(&compact), tables(&explicit));
        assert_eq!(compact.sources[2].name, "flow12");
        assert_eq!(rate(&compact.sources[1].arrivals), 2.5);
    }

    #[test]
    fn flows_that_differ_only_in_id_share_one_reading_and_get_numbered_names() {
        let s = parse(
            "[[source]]\nflow = 0\npath = [\"l\"]\narrivals = { model = \"cbr\", rate_pps = 1 }\nsize = { dist = \"constant\", size = 100 }\n\
             [[source]]\ncount = 1000\nname = \"web\"\npath = [\"l\"]\n\
             arrivals = { model = \"poisson\", rate_pps = 2 }\nsize = { dist = \"constant\", size = 500 }\n",
        )
        .unwrap();
        assert_eq!(s.sources.len(), 1001);
        // The default first flow id is the number of flows declared before.
        let ids: Vec<u32> = s.sources.iter().map(|s| s.flow).collect();
        assert_eq!(ids, (0..1001).collect::<Vec<u32>>());
        assert_eq!(s.sources[1].name, "web0");
        assert_eq!(s.sources[1000].name, "web999");
        assert!(s.sources[1..].iter().all(|s| rate(&s.arrivals) == 2.0));
    }

    #[test]
    fn draws_follow_the_seed_stay_in_range_and_match_their_distribution() {
        let body = "[[source]]\ncount = 4000\npath = [\"l\"]\n\
             arrivals = { model = \"poisson\", rate_pps = { draw = \"exponential\", mean = 2.0 } }\n\
             size = { dist = \"constant\", size = { draw = \"uniform\", min = 100, max = 199 } }\n\
             params = { quantum = { draw = \"choice\", values = [1500, 3000], weights = [3, 1] } }\n";
        let a = parse(body).unwrap();
        let b = parse(body).unwrap();
        let c = parse_scenario(
            &format!("{}{}", HEAD.replace("seed = 3", "seed = 4"), body),
            Path::new("."),
        )
        .unwrap();
        assert_eq!(a.sources, b.sources, "the same seed draws the same values");
        assert_ne!(a.sources, c.sources, "another seed draws other values");
        let rates: Vec<f64> = a.sources.iter().map(|s| rate(&s.arrivals)).collect();
        let mean = rates.iter().sum::<f64>() / rates.len() as f64;
        assert!((mean - 2.0).abs() < 0.1, "exponential mean {mean}");
        let sizes: Vec<u64> = a.sources.iter().map(|s| s.size.as_ref().unwrap().max()).collect();
        assert!(sizes.iter().all(|&s| (100..=199).contains(&s)));
        assert!(
            sizes.contains(&100) && sizes.contains(&199),
            "both bounds are drawn"
        );
        let big = a.links[0]
            .flows
            .overrides
            .values()
            .filter(|(p, _)| p.get("quantum").and_then(|q| q.as_integer()) == Some(3000))
            .count();
        let share = big as f64 / 4000.0;
        assert!((share - 0.25).abs() < 0.03, "weight 1 of 4 drew {share}");
    }

    #[test]
    fn a_csv_source_gives_one_flow_per_row() {
        let dir = temp_dir("csv");
        std::fs::write(
            dir.join("flows.csv"),
            "flow,name,arrivals.rate_pps,params.quantum,path\n7,video,30,3000,l\n# a comment\n9,,5,,l\n",
        )
        .unwrap();
        let text = format!(
            "{HEAD}[[source]]\nfile = \"flows.csv\"\npath = [\"l\"]\narrivals = {{ model = \"poisson\", rate_pps = 1 }}\n\
             size = {{ dist = \"constant\", size = 500 }}\n"
        );
        let s = parse_scenario(&text, &dir).unwrap();
        let got: Vec<(u32, &str, f64)> = s
            .sources
            .iter()
            .map(|s| (s.flow, s.name.as_str(), rate(&s.arrivals)))
            .collect();
        assert_eq!(got, vec![(7, "video", 30.0), (9, "flow9", 5.0)]);
        assert_eq!(
            s.links[0]
                .flows
                .overrides
                .get(&7)
                .and_then(|(p, _)| p.get("quantum"))
                .and_then(|q| q.as_integer()),
            Some(3000)
        );
        std::fs::write(dir.join("bad.csv"), "arrivals.rate_pps\n1\n-4\n").unwrap();
        let bad = parse_scenario(&text.replace("flows.csv", "bad.csv"), &dir)
            .unwrap_err()
            .to_string();
        assert!(bad.contains("source[0].arrivals.rate_pps = -4"), "{bad}");
        assert!(bad.contains("bad.csv line 3"), "{bad}");
        std::fs::write(dir.join("ragged.csv"), "flow,arrivals.rate_pps\n1,2\n3\n").unwrap();
        let ragged = parse_scenario(&text.replace("flows.csv", "ragged.csv"), &dir)
            .unwrap_err()
            .to_string();
        assert!(
            ragged.contains("source[0].file") && ragged.contains("line 3"),
            "{ragged}"
        );
        let missing = parse_scenario(&text.replace("flows.csv", "none.csv"), &dir)
            .unwrap_err()
            .to_string();
        assert!(
            missing.contains("source[0].file = \"none.csv\"") && missing.contains("cannot be read"),
            "{missing}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn bad_compact_declarations_name_the_key_and_value() {
        let base = "path = [\"l\"]\narrivals = { model = \"poisson\", rate_pps = 1 }\nsize = { dist = \"constant\", size = 500 }\n";
        let cases = [
            ("count = 0\n", "source[0].count = 0"),
            (
                "count = 2\nparams = { quantum = { each = [1, 2, 3] } }\n",
                "source[0].params.quantum.each = (3 values)",
            ),
            ("params = { quantum = { each = [1] } }\n", "need count = N"),
            (
                "count = 2\nparams = { quantum = { draw = \"gauss\" } }\n",
                "source[0].params.quantum.draw = \"gauss\"",
            ),
            (
                "count = 2\nparams = { quantum = { draw = \"uniform\", min = 5, max = 1 } }\n",
                "source[0].params.quantum.max = 1",
            ),
            ("count = 2\nfile = \"x.csv\"\n", "not both"),
            ("count = 3\nflow = 16777214\n", "source[0].count = 3"),
            (
                "count = 2\nparams = { quantum = { each = [1500, 0] } }\n",
                "source[0].count[1].params.quantum = 0",
            ),
        ];
        for (keys, expected) in cases {
            let message = error(&format!("[[source]]\n{keys}{base}"));
            assert!(message.contains(expected), "{keys:?}: {message}");
        }
        let twice = error(&format!(
            "[[source]]\ncount = 3\n{base}[[source]]\nflow = 2\n{base}"
        ));
        assert!(
            twice.contains("source[1].flow = 2") && twice.contains("source[0] already uses"),
            "{twice}"
        );
    }
}
