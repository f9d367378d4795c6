//! Configuration: reading TOML tables with errors that name the key and the value, per-flow
//! parameters ([`FlowParams`], [`FlowTable`]) and buffer limits ([`BufferLimit`]).
//!
//! Every configuration error is a [`ConfigError`] whose message has the form
//! `key.path = value: rule`, e.g. `scheduler.quantum = 0: must be at least 1`.

use std::collections::{BTreeMap, BTreeSet};

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

/// The parameters a flow may carry. Every field is optional: disciplines use the fields
/// they need and fall back to the flow defaults, then to their own documented default.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FlowParams {
    /// Relative weight (WRR packets per round, WFQ family share, VD w_i, EWRR W_i in bytes).
    pub weight: Option<u32>,
    /// DRR-family quantum in bytes.
    pub quantum: Option<u32>,
    /// Strict-priority level, 0 = highest.
    pub priority: Option<u8>,
    /// Reserved rate (Virtual Clock).
    pub rate: Option<Rate>,
    /// DRR+/DRR++: the flow is latency critical.
    pub latency_critical: Option<bool>,
    /// DRR+: contract, at most this many bytes in any `contract_interval`.
    pub contract_bytes: Option<u64>,
    /// DRR+: contract interval in ns.
    pub contract_interval: Option<TimeNs>,
    /// EWRR: W_i^max, the cap on the accumulated current weight, in bytes.
    pub max_weight: Option<u64>,
    /// DWCS loss tolerance x/y.
    pub loss_tolerance: Option<LossTolerance>,
    /// DWCS: spacing of consecutive deadlines, ns.
    pub deadline_gap: Option<TimeNs>,
    /// DWCS: deadline of the first packet after an idle period, relative to its arrival, ns.
    pub deadline_offset: Option<TimeNs>,
    /// DWCS: late packets may be dropped.
    pub droppable: Option<bool>,
}

/// The keys [`FlowParams::read`] accepts.
pub const FLOW_PARAM_KEYS: &[&str] = &[
    "weight",
    "quantum",
    "priority",
    "rate",
    "latency_critical",
    "contract_bytes",
    "contract_interval",
    "max_weight",
    "loss_tolerance",
    "deadline_gap",
    "deadline_offset",
    "droppable",
];

/// [`FLOW_PARAM_KEYS`] plus `id`, the keys of a `[[flow]]` table.
pub const FLOW_PARAM_KEYS_WITH_ID: &[&str] = &[
    "id",
    "weight",
    "quantum",
    "priority",
    "rate",
    "latency_critical",
    "contract_bytes",
    "contract_interval",
    "max_weight",
    "loss_tolerance",
    "deadline_gap",
    "deadline_offset",
    "droppable",
];

impl FlowParams {
    /// Reads the flow-parameter keys present in `reader` (leaving other keys to the caller).
    pub fn read<'a>(reader: &mut TableReader<'a>) -> Result<FlowParams, ConfigError> {
        let loss_tolerance = match reader.string("loss_tolerance")? {
            None => None,
            Some(text) => {
                Some(LossTolerance::parse(text).map_err(|rule| reader.error("loss_tolerance", rule))?)
            }
        };
        let priority = reader.integer("priority", 0, 255)?.map(|p| p as u8);
        let contract_bytes = reader.size("contract_bytes")?;
        if contract_bytes == Some(0) {
            return Err(reader.error("contract_bytes", "must be at least 1 byte"));
        }
        let contract_interval = reader.duration("contract_interval")?;
        if contract_interval == Some(0) {
            return Err(reader.error("contract_interval", "must be longer than zero"));
        }
        let max_weight = reader.size("max_weight")?;
        if max_weight == Some(0) {
            return Err(reader.error("max_weight", "must be at least 1 byte"));
        }
        let deadline_gap = reader.duration("deadline_gap")?;
        if deadline_gap == Some(0) {
            return Err(reader.error("deadline_gap", "must be longer than zero"));
        }
        Ok(FlowParams {
            weight: reader.positive_u32("weight")?,
            quantum: reader.positive_u32("quantum")?,
            priority,
            rate: reader.rate("rate")?,
            latency_critical: reader.bool("latency_critical")?,
            contract_bytes,
            contract_interval,
            max_weight,
            loss_tolerance,
            deadline_gap,
            deadline_offset: reader.duration("deadline_offset")?,
            droppable: reader.bool("droppable")?,
        })
    }

    /// Reads a table that holds only flow parameters.
    pub fn from_table(table: &toml::Table, path: &str) -> Result<FlowParams, ConfigError> {
        let mut reader = TableReader::new(table, path);
        let params = FlowParams::read(&mut reader)?;
        reader.finish_with(FLOW_PARAM_KEYS)?;
        Ok(params)
    }

    /// Each field of `self` if set, else the field of `defaults`.
    pub fn or(self, defaults: &FlowParams) -> FlowParams {
        FlowParams {
            weight: self.weight.or(defaults.weight),
            quantum: self.quantum.or(defaults.quantum),
            priority: self.priority.or(defaults.priority),
            rate: self.rate.or(defaults.rate),
            latency_critical: self.latency_critical.or(defaults.latency_critical),
            contract_bytes: self.contract_bytes.or(defaults.contract_bytes),
            contract_interval: self.contract_interval.or(defaults.contract_interval),
            max_weight: self.max_weight.or(defaults.max_weight),
            loss_tolerance: self.loss_tolerance.or(defaults.loss_tolerance),
            deadline_gap: self.deadline_gap.or(defaults.deadline_gap),
            deadline_offset: self.deadline_offset.or(defaults.deadline_offset),
            droppable: self.droppable.or(defaults.droppable),
        }
    }
}

/// Per-flow parameters: defaults for every flow plus overrides for named flows. A flow that
/// first appears at run time takes the defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowTable {
    /// Parameters of any flow without an override.
    pub defaults: FlowParams,
    /// Overrides by flow id (already merged with nothing: fields left `None` fall back to
    /// `defaults`).
    pub overrides: BTreeMap<FlowId, FlowParams>,
    /// The configuration path of each override, for error messages (e.g. `flow[2]`).
    pub override_paths: BTreeMap<FlowId, String>,
    /// The configuration path of the defaults (e.g. `flow_defaults`).
    pub defaults_path: String,
}

impl FlowTable {
    /// A table where every flow has `defaults`.
    pub fn uniform(defaults: FlowParams) -> FlowTable {
        FlowTable {
            defaults,
            defaults_path: "flow_defaults".into(),
            ..FlowTable::default()
        }
    }

    /// Adds or replaces the override of `flow`.
    pub fn set(&mut self, flow: FlowId, params: FlowParams, path: impl Into<String>) {
        self.overrides.insert(flow, params);
        self.override_paths.insert(flow, path.into());
    }

    /// The parameters of `flow`: its override merged over the defaults.
    pub fn get(&self, flow: FlowId) -> FlowParams {
        match self.overrides.get(&flow) {
            Some(params) => params.or(&self.defaults),
            None => self.defaults,
        }
    }

    /// The defaults and every override, each with its configuration path, for validation.
    pub fn entries(&self) -> impl Iterator<Item = (String, FlowParams)> + '_ {
        std::iter::once((self.defaults_path.clone(), self.defaults)).chain(self.overrides.keys().map(
            |flow| {
                let path = self
                    .override_paths
                    .get(flow)
                    .cloned()
                    .unwrap_or_else(|| format!("flow {flow}"));
                (path, self.get(*flow))
            },
        ))
    }

    /// Checks `rule` on the defaults and every override; `rule` returns the offending key,
    /// its value and the broken rule.
    pub fn validate(
        &self,
        rule: impl Fn(&FlowParams) -> Result<(), (&'static str, String, String)>,
    ) -> Result<(), ConfigError> {
        for (path, params) in self.entries() {
            rule(&params).map_err(|(key, value, why)| ConfigError::new(join_path(&path, key), value, why))?;
        }
        Ok(())
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

    #[test]
    fn flow_params_read_units_and_reject_bad_values() {
        let t = table("weight = 3\nrate = \"1Mbit\"\ncontract_interval = \"10ms\"\nloss_tolerance = \"1/2\"");
        let p = FlowParams::from_table(&t, "flow[0]").unwrap();
        assert_eq!(p.weight, Some(3));
        assert_eq!(p.rate.unwrap().bits_per_second(), 1_000_000);
        assert_eq!(p.contract_interval, Some(10_000_000));
        assert_eq!(p.loss_tolerance, Some(LossTolerance { x: 1, y: 2 }));

        let e = FlowParams::from_table(&table("weight = 0"), "flow[1]").unwrap_err();
        assert_eq!(e.path, "flow[1].weight");
        assert_eq!(e.value, "0");
        let e = FlowParams::from_table(&table("loss_tolerance = \"3/2\""), "flow[1]").unwrap_err();
        assert!(e.rule.contains("exceeds"), "{e}");
        let e = FlowParams::from_table(&table("wieght = 2"), "flow_defaults").unwrap_err();
        assert_eq!(e.path, "flow_defaults.wieght");
        assert!(e.rule.contains("unknown key"));
        let e = FlowParams::from_table(&table("rate = \"-1Mbit\""), "flow[0]").unwrap_err();
        assert_eq!(
            e.to_string(),
            "flow[0].rate = \"-1Mbit\": must be a finite, non-negative amount"
        );
    }

    #[test]
    fn overrides_fall_back_to_defaults() {
        let mut flows = FlowTable::uniform(FlowParams {
            weight: Some(1),
            quantum: Some(500),
            ..Default::default()
        });
        flows.set(
            7,
            FlowParams {
                weight: Some(4),
                ..Default::default()
            },
            "flow[0]",
        );
        assert_eq!(flows.get(7).weight, Some(4));
        assert_eq!(flows.get(7).quantum, Some(500));
        assert_eq!(flows.get(8).weight, Some(1));
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
