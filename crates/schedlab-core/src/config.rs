//! Configuration: reading TOML tables with errors that name the key and the value, per-flow
//! parameters ([`FlowTable`], parsed by each discipline's [`FlowParams`] into a
//! [`FlowParamTable`]) and buffer limits ([`BufferLimit`]).
//!
//! Every configuration error is a [`ConfigError`] whose message has the form
//! `key.path = value: rule`, e.g. `scheduler.quantum = 0: must be at least 1`.

use std::collections::{BTreeMap, BTreeSet};

use crate::discipline::DisciplineInfo;
use crate::packet::FlowId;
use crate::time::{parse_duration, parse_rate, parse_size, Rate, TimeNs};

/// A configuration value that breaks a rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path} = {value}: {rule}")]
pub struct ConfigError {
    /// Dotted key path, e.g. `scheduler.quantum` or `flow[2].weight`.
    pub path: String,
    /// The offending value as written (TOML syntax), or `(missing)`.
    pub value: String,
    /// The rule that was broken.
    pub rule: String,
}

impl ConfigError {
    /// An error at `path` about `value`.
    pub fn new(path: impl Into<String>, value: impl Into<String>, rule: impl Into<String>) -> Self {
        ConfigError {
            path: path.into(),
            value: value.into(),
            rule: rule.into(),
        }
    }
}

/// Joins a table path and a key (`""` + `k` = `k`, `a` + `k` = `a.k`).
pub fn join_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Reads typed values out of a TOML table, remembering which keys were used so that
/// [`TableReader::finish`] can reject unknown keys by name.
pub struct TableReader<'a> {
    table: &'a toml::Table,
    path: String,
    used: BTreeSet<&'a str>,
}

impl<'a> TableReader<'a> {
    /// A reader over `table`, whose keys are reported under `path`.
    pub fn new(table: &'a toml::Table, path: impl Into<String>) -> Self {
        TableReader {
            table,
            path: path.into(),
            used: BTreeSet::new(),
        }
    }

    /// The dotted path of `key` in this table.
    pub fn path_of(&self, key: &str) -> String {
        join_path(&self.path, key)
    }

    /// An error about `key`, quoting its value.
    pub fn error(&self, key: &str, rule: impl Into<String>) -> ConfigError {
        let value = self
            .table
            .get(key)
            .map(|v| v.to_string())
            .unwrap_or_else(|| "(missing)".into());
        ConfigError::new(self.path_of(key), value, rule)
    }

    /// The raw value of `key`, marking it used.
    pub fn value(&mut self, key: &'a str) -> Option<&'a toml::Value> {
        let value = self.table.get(key);
        if value.is_some() {
            self.used.insert(key);
        }
        value
    }

    /// Whether `key` is present (does not mark it used).
    pub fn has(&self, key: &str) -> bool {
        self.table.contains_key(key)
    }

    /// A string value.
    pub fn string(&mut self, key: &'a str) -> Result<Option<&'a str>, ConfigError> {
        match self.value(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => Err(self.error(key, "must be a string")),
        }
    }

    /// A boolean value.
    pub fn bool(&mut self, key: &'a str) -> Result<Option<bool>, ConfigError> {
        match self.value(key) {
            None => Ok(None),
            Some(toml::Value::Boolean(b)) => Ok(Some(*b)),
            Some(_) => Err(self.error(key, "must be true or false")),
        }
    }

    /// An integer in `min..=max`.
    pub fn integer(&mut self, key: &'a str, min: i64, max: i64) -> Result<Option<i64>, ConfigError> {
        match self.value(key) {
            None => Ok(None),
            Some(toml::Value::Integer(i)) if (min..=max).contains(i) => Ok(Some(*i)),
            Some(toml::Value::Integer(_)) => {
                Err(self.error(key, format!("must be an integer from {min} to {max}")))
            }
            Some(_) => Err(self.error(key, "must be an integer")),
        }
    }

    /// A positive integer that fits in `u32` (weights, quanta in bytes).
    pub fn positive_u32(&mut self, key: &'a str) -> Result<Option<u32>, ConfigError> {
        Ok(self.integer(key, 1, u32::MAX as i64)?.map(|v| v as u32))
    }

    /// A non-negative integer.
    pub fn non_negative(&mut self, key: &'a str) -> Result<Option<u64>, ConfigError> {
        Ok(self.integer(key, 0, i64::MAX)?.map(|v| v as u64))
    }

    /// A finite floating-point number in `min..=max` (integers accepted).
    pub fn float(&mut self, key: &'a str, min: f64, max: f64) -> Result<Option<f64>, ConfigError> {
        let value = match self.value(key) {
            None => return Ok(None),
            Some(toml::Value::Float(f)) => *f,
            Some(toml::Value::Integer(i)) => *i as f64,
            Some(_) => return Err(self.error(key, "must be a number")),
        };
        if value.is_finite() && value >= min && value <= max {
            Ok(Some(value))
        } else {
            Err(self.error(key, format!("must be a number from {min} to {max}")))
        }
    }

    /// A rate: integer bit/s or a string such as `"8Mbit"`.
    pub fn rate(&mut self, key: &'a str) -> Result<Option<Rate>, ConfigError> {
        match self.value(key) {
            None => Ok(None),
            Some(toml::Value::Integer(i)) if *i > 0 => Ok(Rate::from_bits_per_second(*i as u64)),
            Some(toml::Value::String(s)) => parse_rate(s).map(Some).map_err(|e| self.error(key, e.rule)),
            Some(_) => Err(self.error(key, "must be a positive rate such as 8000000 or \"8Mbit\"")),
        }
    }

    /// A duration string such as `"1ms"`, in nanoseconds.
    pub fn duration(&mut self, key: &'a str) -> Result<Option<TimeNs>, ConfigError> {
        match self.value(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) => parse_duration(s).map(Some).map_err(|e| self.error(key, e.rule)),
            Some(_) => Err(self.error(key, "must be a duration with a unit such as \"1ms\"")),
        }
    }

    /// A size: integer bytes or a string such as `"64KB"`.
    pub fn size(&mut self, key: &'a str) -> Result<Option<u64>, ConfigError> {
        match self.value(key) {
            None => Ok(None),
            Some(toml::Value::Integer(i)) if *i >= 0 => Ok(Some(*i as u64)),
            Some(toml::Value::String(s)) => parse_size(s).map(Some).map_err(|e| self.error(key, e.rule)),
            Some(_) => Err(self.error(key, "must be a size in bytes such as 1500 or \"64KB\"")),
        }
    }

    /// A sub-table.
    pub fn table(&mut self, key: &'a str) -> Result<Option<&'a toml::Table>, ConfigError> {
        match self.value(key) {
            None => Ok(None),
            Some(toml::Value::Table(t)) => Ok(Some(t)),
            Some(_) => Err(self.error(key, "must be a table")),
        }
    }

    /// Fails on the first key that no getter asked for, listing the keys that are known.
    pub fn finish(self) -> Result<(), ConfigError> {
        if let Some((key, value)) = self.table.iter().find(|(k, _)| !self.used.contains(k.as_str())) {
            let known: Vec<&str> = self.used.iter().copied().collect();
            let hint = if known.is_empty() {
                String::new()
            } else {
                format!(" (keys used here: {})", known.join(", "))
            };
            return Err(ConfigError::new(
                self.path_of(key),
                value.to_string(),
                format!("unknown key{hint}"),
            ));
        }
        Ok(())
    }

    /// Like [`TableReader::finish`], but names the full list of keys this table accepts.
    pub fn finish_with(self, accepted: &[&str]) -> Result<(), ConfigError> {
        if let Some((key, value)) = self.table.iter().find(|(k, _)| !self.used.contains(k.as_str())) {
            return Err(ConfigError::new(
                self.path_of(key),
                value.to_string(),
                format!("unknown key; accepted keys: {}", accepted.join(", ")),
            ));
        }
        Ok(())
    }
}

/// A DWCS loss-tolerance `x/y`: at most `x` late or lost packets in any window of `y`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LossTolerance {
    /// Numerator x: packets that may be late or lost per window.
    pub x: u32,
    /// Denominator y: the window, in consecutive packets.
    pub y: u32,
}

impl LossTolerance {
    /// Parses `"x/y"` with `0 <= x <= y`, `y >= 1`, or `"0/0"` (zero tolerance and no window:
    /// DWCS orders such streams earliest deadline first, table 1 of West et al.).
    pub fn parse(text: &str) -> Result<LossTolerance, String> {
        let (x, y) = text
            .split_once('/')
            .ok_or("must be written \"x/y\", e.g. \"1/2\"")?;
        let x: u32 = x
            .trim()
            .parse()
            .map_err(|_| format!("numerator {x:?} is not a whole number"))?;
        let y: u32 = y
            .trim()
            .parse()
            .map_err(|_| format!("denominator {y:?} is not a whole number"))?;
        if y == 0 && x != 0 {
            return Err("the denominator y must be at least 1 (or write \"0/0\")".into());
        }
        if x > y {
            return Err(format!(
                "x = {x} exceeds y = {y}: at most y of y packets can be lost"
            ));
        }
        Ok(LossTolerance { x, y })
    }
}

/// A discipline's per-flow parameters, read from the flow's table (`[flow_defaults]`, a
/// `[[flow]]` or a source's `params`). Each discipline declares the keys in its
/// [`DisciplineInfo::flow_params`] and reads exactly those here; any other key in a flow table
/// is a [`ConfigError`] naming the key, the discipline and the keys it reads.
///
/// `inherited` holds the values a missing key falls back to: the discipline's own defaults
/// when the flow defaults are read, the parsed flow defaults when a flow's own table is read.
pub trait FlowParams: Clone + std::fmt::Debug + Sized {
    /// Reads this discipline's keys from `reader`; keys absent there keep `inherited`'s value.
    fn read(reader: &mut TableReader<'_>, inherited: &Self) -> Result<Self, ConfigError>;
}

/// Disciplines without per-flow parameters (FIFO) read no key.
impl FlowParams for () {
    fn read(_: &mut TableReader<'_>, _: &()) -> Result<(), ConfigError> {
        Ok(())
    }
}

/// The flow tables of a configuration, unparsed: the defaults of every flow plus the tables of
/// configured flows, each with its configuration path for error messages. A discipline turns
/// it into its own typed [`FlowParamTable`] with [`FlowTable::parse`]; a flow that first
/// appears at run time takes the defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowTable {
    /// Keys every flow starts from (`[flow_defaults]`).
    pub defaults: toml::Table,
    /// The configuration path of the defaults (e.g. `flow_defaults`).
    pub defaults_path: String,
    /// Each configured flow's own keys (which override the defaults) and their path (e.g.
    /// `flow[2]` or `source[1].params`).
    pub overrides: BTreeMap<FlowId, (toml::Table, String)>,
}

impl Default for FlowTable {
    fn default() -> FlowTable {
        FlowTable::uniform(toml::Table::new())
    }
}

impl FlowTable {
    /// A table where every flow has `defaults`.
    pub fn uniform(defaults: toml::Table) -> FlowTable {
        FlowTable {
            defaults,
            defaults_path: "flow_defaults".into(),
            overrides: BTreeMap::new(),
        }
    }

    /// Adds or replaces the table of `flow`.
    pub fn set(&mut self, flow: FlowId, table: toml::Table, path: impl Into<String>) {
        self.overrides.insert(flow, (table, path.into()));
    }

    /// The same tables with only `keys` and the per-discipline sub-tables: what one class
    /// scheduler of a hierarchy reads ([`crate::hierarchy`]).
    pub fn keeping(&self, keys: &[&str]) -> FlowTable {
        let keep = |table: &toml::Table| -> toml::Table {
            table
                .iter()
                .filter(|(k, v)| keys.contains(&k.as_str()) || is_discipline_table(k, v))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        FlowTable {
            defaults: keep(&self.defaults),
            defaults_path: self.defaults_path.clone(),
            overrides: self
                .overrides
                .iter()
                .map(|(flow, (table, path))| (*flow, (keep(table), path.clone())))
                .collect(),
        }
    }

    /// Every key of the defaults and of each flow's table, with the table's path, except the
    /// per-discipline sub-tables.
    pub fn keys(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        std::iter::once((&self.defaults, &self.defaults_path))
            .chain(self.overrides.values().map(|(table, path)| (table, path)))
            .flat_map(|(table, path)| {
                table
                    .iter()
                    .filter(|(k, v)| !is_discipline_table(k, v))
                    .map(move |(k, _)| (path.as_str(), k.as_str()))
            })
    }

    /// Parses every table for `discipline`: the defaults over `base` (the discipline's own
    /// defaults), then each configured flow over the parsed defaults. A key that `P::read` does
    /// not read is an error naming the key, the discipline and the keys it reads.
    pub fn parse<P: FlowParams>(
        &self,
        discipline: &DisciplineInfo,
        base: &P,
    ) -> Result<FlowParamTable<P>, ConfigError> {
        let defaults = read_flow_table(&self.defaults, &self.defaults_path, discipline, base)?;
        let mut overrides = BTreeMap::new();
        for (flow, (table, path)) in &self.overrides {
            let params = read_flow_table(table, path, discipline, &defaults)?;
            overrides.insert(*flow, (params, path.clone()));
        }
        Ok(FlowParamTable {
            defaults: (defaults, self.defaults_path.clone()),
            overrides,
        })
    }
}

/// Reads one flow table for `discipline`, rejecting the keys it does not read.
///
/// A key named after a registered discipline holds a sub-table of keys for that discipline
/// only (`drr_plus = { contract_bytes = 8303, contract_interval = "1s" }`): read over the
/// table's other keys when `discipline` is the one in use, ignored otherwise, so that one flow
/// table serves a sweep over disciplines.
fn read_flow_table<P: FlowParams>(
    table: &toml::Table,
    path: &str,
    discipline: &DisciplineInfo,
    inherited: &P,
) -> Result<P, ConfigError> {
    let own = match table.get(discipline.id) {
        Some(toml::Value::Table(own)) => Some(own),
        _ => None,
    };
    let Some(own) = own else {
        let mut reader = TableReader::new(table, path);
        let params = P::read(&mut reader, inherited)?;
        reject_foreign_keys(table, &reader, discipline)?;
        return Ok(params);
    };
    // The discipline's own sub-table is read together with (and over) the other keys, so that
    // rules between keys see both; errors about its keys name them inside the sub-table.
    let mut merged: toml::Table = table
        .iter()
        .filter(|(k, v)| !is_discipline_table(k, v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    merged.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
    let own_path = join_path(path, discipline.id);
    let reroot = |mut error: ConfigError| {
        if let Some(key) = error.path.strip_prefix(path).and_then(|k| k.strip_prefix('.')) {
            if own.contains_key(key) {
                error.path = join_path(&own_path, key);
            }
        }
        error
    };
    let mut reader = TableReader::new(&merged, path);
    let params = P::read(&mut reader, inherited).map_err(reroot)?;
    reject_foreign_keys(&merged, &reader, discipline).map_err(reroot)?;
    Ok(params)
}

/// Whether `key = value` in a flow table is a sub-table of another discipline's keys.
fn is_discipline_table(key: &str, value: &toml::Value) -> bool {
    value.is_table() && crate::registry::discipline_info(key).is_some()
}

/// Fails on the first key of `table` that `reader` did not read and that is not a
/// per-discipline sub-table.
fn reject_foreign_keys(
    table: &toml::Table,
    reader: &TableReader<'_>,
    discipline: &DisciplineInfo,
) -> Result<(), ConfigError> {
    let foreign = table
        .iter()
        .find(|(k, v)| !reader.used.contains(k.as_str()) && !is_discipline_table(k, v))
        .map(|(k, _)| k);
    if let Some(key) = foreign {
        let reads: Vec<&str> = discipline.flow_params.iter().map(|p| p.name).collect();
        let reads = if reads.is_empty() {
            "no flow keys".to_string()
        } else {
            format!("only {}", reads.join(", "))
        };
        return Err(reader.error(
            key,
            format!(
                "not a flow key of {}, which reads {reads} (another discipline's keys go in a sub-table named after it)",
                discipline.id
            ),
        ));
    }
    Ok(())
}

/// A discipline's parsed per-flow parameters: the defaults and each configured flow's, each
/// with its configuration path.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowParamTable<P> {
    defaults: (P, String),
    overrides: BTreeMap<FlowId, (P, String)>,
}

impl<P> FlowParamTable<P> {
    /// The parameters of `flow` (O(log n) in the configured flows: read them once per flow).
    pub fn get(&self, flow: FlowId) -> &P {
        self.overrides
            .get(&flow)
            .map_or(&self.defaults.0, |entry| &entry.0)
    }

    /// The parameters of flows that are not configured.
    pub fn defaults(&self) -> &P {
        &self.defaults.0
    }

    /// The configured flows and their parameters, by flow id.
    pub fn configured(&self) -> impl Iterator<Item = (FlowId, &P)> + '_ {
        self.overrides.iter().map(|(flow, (params, _))| (*flow, params))
    }

    /// Checks a rule that needs more than one table (e.g. the scheduler's `mtu`) on the
    /// defaults and every configured flow; `rule` returns the offending key, its value and the
    /// broken rule, reported at that entry's configuration path.
    pub fn validate(
        &self,
        rule: impl Fn(&P) -> Result<(), (&'static str, String, String)>,
    ) -> Result<(), ConfigError> {
        for (params, path) in std::iter::once(&self.defaults).chain(self.overrides.values()) {
            rule(params).map_err(|(key, value, why)| ConfigError::new(join_path(path, key), value, why))?;
        }
        Ok(())
    }

    /// Whether `flow` has its own table.
    pub fn is_configured(&self, flow: FlowId) -> bool {
        self.overrides.contains_key(&flow)
    }
}

/// What to drop when an arrival finds the buffer full.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DropPolicy {
    /// Drop the arriving packet.
    #[default]
    TailDrop,
    /// Push out the tail packet of the flow with the longest queue, lengths in bytes weighted
    /// by 1/weight (McKenney's buffer stealing); the arrival is dropped instead when its own
    /// flow is the longest. Only for disciplines with per-flow queues.
    LongestQueueDrop,
}

/// A shared buffer limit in bytes and/or packets; `None` means unlimited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferLimit {
    /// Largest total backlog in bytes.
    pub bytes: Option<u64>,
    /// Largest total backlog in packets.
    pub packets: Option<u64>,
    /// Which packet to drop on overflow.
    pub policy: DropPolicy,
}

impl BufferLimit {
    /// No limit (the buffer never overflows).
    pub const UNLIMITED: BufferLimit = BufferLimit {
        bytes: None,
        packets: None,
        policy: DropPolicy::TailDrop,
    };

    /// Reads `buffer` (size), `buffer_packets` (count) and `drop_policy`
    /// (`"tail_drop"` or `"longest_queue_drop"`) from a scheduler table.
    pub fn read<'a>(reader: &mut TableReader<'a>) -> Result<BufferLimit, ConfigError> {
        let bytes = reader.size("buffer")?;
        if bytes == Some(0) {
            return Err(reader.error("buffer", "must be at least 1 byte"));
        }
        let packets = reader.integer("buffer_packets", 1, i64::MAX)?.map(|p| p as u64);
        let policy = match reader.string("drop_policy")? {
            None | Some("tail_drop") => DropPolicy::TailDrop,
            Some("longest_queue_drop") => DropPolicy::LongestQueueDrop,
            Some(_) => {
                return Err(reader.error("drop_policy", "must be \"tail_drop\" or \"longest_queue_drop\""))
            }
        };
        Ok(BufferLimit {
            bytes,
            packets,
            policy,
        })
    }

    /// Whether a backlog of `packets` and `bytes` is within the limit.
    #[inline]
    pub fn fits(&self, packets: u64, bytes: u64) -> bool {
        self.bytes.is_none_or(|limit| bytes <= limit) && self.packets.is_none_or(|limit| packets <= limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    /// A test discipline reading `share` (integer, default 1) and `rate`.
    #[derive(Clone, Debug, PartialEq)]
    struct Params {
        share: u32,
        rate: Option<Rate>,
    }

    impl FlowParams for Params {
        fn read(reader: &mut TableReader<'_>, inherited: &Params) -> Result<Params, ConfigError> {
            Ok(Params {
                share: reader.positive_u32("share")?.unwrap_or(inherited.share),
                rate: reader.rate("rate")?.or(inherited.rate),
            })
        }
    }

    const INFO: DisciplineInfo = DisciplineInfo {
        id: "test",
        name: "Test",
        citation: "",
        summary: "",
        scheduler_params: &[],
        flow_params: &[
            crate::discipline::ParamInfo {
                name: "share",
                unit: "integer",
                default: "1",
                description: "",
            },
            crate::discipline::ParamInfo {
                name: "rate",
                unit: "bit/s",
                default: "none",
                description: "",
            },
        ],
        per_flow_queues: true,
    };

    const BASE: Params = Params { share: 1, rate: None };

    #[test]
    fn overrides_fall_back_to_defaults() {
        let mut flows = FlowTable::uniform(table("share = 2\nrate = \"1Mbit\""));
        flows.set(7, table("share = 4"), "flow[0]");
        let parsed = flows.parse(&INFO, &BASE).unwrap();
        assert_eq!(parsed.get(7).share, 4);
        assert_eq!(parsed.get(7).rate.unwrap().bits_per_second(), 1_000_000);
        assert_eq!(parsed.get(8).share, 2);
        assert!(parsed.is_configured(7) && !parsed.is_configured(8));
        let parsed = FlowTable::default().parse(&INFO, &BASE).unwrap();
        assert_eq!(parsed.get(3), &BASE);
    }

    #[test]
    fn flow_keys_the_discipline_does_not_read_are_errors() {
        let mut flows = FlowTable::default();
        flows.set(1, table("share = 2\nquantum = 500"), "flow[3]");
        let e = flows.parse(&INFO, &BASE).unwrap_err();
        assert_eq!(
            e.to_string(),
            "flow[3].quantum = 500: not a flow key of test, which reads only share, rate (another discipline's keys go in a sub-table named after it)"
        );
        let e = FlowTable::uniform(table("share = 0"))
            .parse(&INFO, &BASE)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "flow_defaults.share = 0: must be an integer from 1 to 4294967295"
        );
        let e = FlowTable::uniform(table("share = 1"))
            .parse(&INFO_NONE, &())
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "flow_defaults.share = 1: not a flow key of none, which reads no flow keys (another discipline's keys go in a sub-table named after it)"
        );
    }

    #[test]
    fn a_sub_table_named_after_the_discipline_holds_its_own_keys() {
        let info = DisciplineInfo { id: "wfq", ..INFO };
        // Another discipline's sub-table is ignored; the own one is read over the other keys.
        let mut flows = FlowTable::default();
        flows.set(
            1,
            table("share = 2\ndrr = { quantum = 500 }\nwfq = { share = 3 }"),
            "flow[0]",
        );
        flows.set(2, table("share = 2\ndrr = { quantum = 500 }"), "flow[1]");
        let parsed = flows.parse(&info, &BASE).unwrap();
        assert_eq!((parsed.get(1).share, parsed.get(2).share), (3, 2));
        // Errors inside the own sub-table name it.
        let e = FlowTable::uniform(table("wfq = { share = 0 }"))
            .parse(&info, &BASE)
            .unwrap_err();
        assert_eq!(e.path, "flow_defaults.wfq.share");
        let e = FlowTable::uniform(table("wfq = { quantum = 1 }"))
            .parse(&info, &BASE)
            .unwrap_err();
        assert_eq!(e.path, "flow_defaults.wfq.quantum");
        assert!(e.rule.starts_with("not a flow key of wfq"), "{e}");
        // A key named after a discipline that is not a table is an ordinary (foreign) key.
        let e = FlowTable::uniform(table("drr = 1"))
            .parse(&info, &BASE)
            .unwrap_err();
        assert_eq!(e.path, "flow_defaults.drr");
    }

    const INFO_NONE: DisciplineInfo = DisciplineInfo {
        id: "none",
        flow_params: &[],
        ..INFO
    };

    #[test]
    fn loss_tolerance_parses_x_over_y() {
        assert_eq!(LossTolerance::parse("1/2"), Ok(LossTolerance { x: 1, y: 2 }));
        assert_eq!(LossTolerance::parse("0/0"), Ok(LossTolerance { x: 0, y: 0 }));
        assert!(LossTolerance::parse("3/2").unwrap_err().contains("exceeds"));
        assert!(LossTolerance::parse("1/0").is_err());
        assert!(LossTolerance::parse("1").is_err());
    }

    #[test]
    fn buffer_limit_reads_policy() {
        let t = table("buffer = \"64KB\"\nbuffer_packets = 10\ndrop_policy = \"longest_queue_drop\"");
        let mut r = TableReader::new(&t, "scheduler");
        let b = BufferLimit::read(&mut r).unwrap();
        r.finish().unwrap();
        assert_eq!(
            b,
            BufferLimit {
                bytes: Some(64_000),
                packets: Some(10),
                policy: DropPolicy::LongestQueueDrop
            }
        );
        assert!(b.fits(10, 64_000));
        assert!(!b.fits(11, 10));
        let t = table("drop_policy = \"red\"");
        let e = BufferLimit::read(&mut TableReader::new(&t, "scheduler")).unwrap_err();
        assert_eq!(e.path, "scheduler.drop_policy");
    }
}

/// Finds the 1-based line of the key at `path` (`scheduler.quantum`, `flow[2].weight`,
/// `link[0].scheduler.kind`) in TOML `text`, for error messages: the section is located by its
/// `[header]` (the n-th `[[header]]` for `name[n]`), then the first line in it that assigns
/// the key (also inside inline tables). `None` when it cannot be found (e.g. a missing key).
pub fn locate_key(text: &str, path: &str) -> Option<usize> {
    let segments: Vec<&str> = path.split('.').collect();
    let (key, tables) = segments.split_last()?;
    let key = key.split('[').next()?;
    let assigns = |line: &str| {
        let mut rest = line;
        while let Some(position) = rest.find(key) {
            let before_ok = position == 0
                || !rest[..position].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '"');
            let after = rest[position + key.len()..].trim_start();
            if before_ok && after.starts_with('=') && !after.starts_with("==") {
                return true;
            }
            rest = &rest[position + key.len()..];
        }
        false
    };
    // The header of the outermost table segment, and which occurrence of it.
    let (section, occurrence) = match tables.first() {
        None => (None, 0),
        Some(first) => match first.split_once('[') {
            Some((name, index)) => (
                Some(name),
                index.trim_end_matches(']').parse::<usize>().unwrap_or(0),
            ),
            None => (Some(*first), 0),
        },
    };
    let mut inside = section.is_none();
    let mut seen = 0usize;
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            let name = trimmed.trim_matches(|c| c == '[' || c == ']').trim();
            if let Some(section) = section {
                // Nested headers such as [flow.params] belong to the enclosing section.
                if name == section {
                    inside = seen == occurrence;
                    seen += 1;
                } else if !name.starts_with(&format!("{section}.")) {
                    inside = false;
                }
            } else {
                inside = false;
            }
            continue;
        }
        if inside && assigns(trimmed) {
            return Some(number + 1);
        }
    }
    None
}

#[cfg(test)]
mod locate_tests {
    use super::locate_key;

    #[test]
    fn finds_keys_in_sections_and_arrays() {
        let text = "[link]\nrate = \"1Mbit\"\n\n[scheduler]\nkind = \"drr\"\nquantum = 0\n\n[[flow]]\nid = 1\nweight = 2\n\n[[flow]]\nid = 2\nweight = 0\n";
        assert_eq!(locate_key(text, "scheduler.quantum"), Some(6));
        assert_eq!(locate_key(text, "flow[1].weight"), Some(14));
        assert_eq!(locate_key(text, "flow[0].weight"), Some(10));
        assert_eq!(locate_key(text, "link.rate"), Some(2));
        assert_eq!(locate_key(text, "scheduler.buffer"), None);
        let inline = "[[link]]\nname = \"a\"\nscheduler = { kind = \"drr\", quantum = 0 }\n";
        assert_eq!(locate_key(inline, "link[0].scheduler.quantum"), Some(3));
    }
}
