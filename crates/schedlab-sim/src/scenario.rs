//! The scenario file: a TOML description of a run, its links and its traffic sources.
//!
//! ```toml
//! [run]
//! duration = "100s"      # or packets = 1000000 (total packets generated)
//! warmup = "5s"          # packets entering the network before this are not measured
//! seed = 1
//! replications = 5
//!
//! [[link]]
//! name = "bottleneck"
//! rate = "125kbit"
//! delay = "0ms"          # propagation
//! buffer = "64KB"        # optional
//! scheduler = { kind = "drr", quantum = 1500 }
//!
//! [[source]]
//! flow = 0
//! path = ["bottleneck"]  # links in order
//! arrivals = { model = "poisson", rate_pps = 15 }
//! size = { dist = "uniform", min = 80, max = 740 }
//! params = { latency_critical = true, quantum = 2000 }
//! ```
//!
//! Every key is documented in `docs/results.md` (one table for many flows: `count`, `file`). Parsing goes through
//! [`TableReader`], so every error names the key path and the value
//! (`source[2].arrivals.rate_pps = -1: must be a positive number`), unknown keys are rejected,
//! and a path naming a missing link is rejected.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use schedlab_core::config::join_path;
use schedlab_core::time::CLOCK_LIMIT;
use schedlab_core::{
    build_scheduler, discipline_info, AnyScheduler, Conditioner, ConfigError, FlowId, FlowTable,
    LinkDropPolicy, LinkDropPolicyKind, Rate, ServiceTime, TableReader, TimeNs, MAX_FLOW_ID,
};

use crate::lateness::LatenessSpec;
use crate::source_set::SourceSet;
use crate::tcp::TcpConfig;
use crate::traffic::{
    stationary_distribution, ArrivalModel, Fragmentation, FrameType, MpegModel, PeriodDist, SizeDist,
    SizeShape, Spacing,
};

/// How long a run lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunLength {
    /// Sources generate packets in `[0, duration)`.
    Duration(TimeNs),
    /// Sources stop once this many packets (all sources together) have been generated.
    Packets(u64),
}

/// How confidence intervals over replications are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CiMethod {
    /// Student t with n − 1 degrees of freedom: t₀.₉₇₅,ₙ₋₁ · s/√n (the default).
    StudentT,
    /// The thesis's 1.96 · s/√n (Zhang §5.1).
    Normal,
}

/// The `[run]` table.
#[derive(Clone, Debug, PartialEq)]
pub struct RunConfig {
    /// Run length.
    pub length: RunLength,
    /// Warm-up, ns: packets entering the network before it are not measured.
    pub warmup: TimeNs,
    /// Base seed.
    pub seed: u64,
    /// Number of independent replications.
    pub replications: u32,
    /// Width of time-series bins, ns.
    pub bin: TimeNs,
    /// Confidence-interval method.
    pub ci: CiMethod,
    /// Whether the network drains after the sources stop (so every measured packet is either
    /// received or dropped); otherwise the run stops when the sources do.
    pub drain: bool,
}

/// One `[[link]]`.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkConfig {
    /// Name used in source paths.
    pub name: String,
    /// Transmission rate (`None` for a processing stage with a fixed time per packet only).
    pub rate: Option<Rate>,
    /// Time a packet holds the link: `service` per packet plus serialisation at `rate`.
    pub service: ServiceTime,
    /// Packets that waited longer than this in the queue are dropped when the link takes them
    /// ([`schedlab_core::DropReason::Sojourn`]).
    pub max_sojourn: Option<TimeNs>,
    /// Paper 001's link-dropping policy, applied before the scheduler.
    pub drop_policy: Option<LinkDropPolicyKind>,
    /// The DiffServ traffic conditioner (classifier, meters, marker, absolute dropper) in front
    /// of the dropping policy and the scheduler, fresh (buckets full, counters zero).
    pub conditioner: Option<Conditioner>,
    /// The link's `buffer` in bytes (the horizon of its dropping policy).
    pub buffer: Option<u64>,
    /// Propagation delay, ns.
    pub delay: TimeNs,
    /// The scheduler table, with the link's `buffer` / `buffer_packets` merged in.
    pub scheduler: toml::Table,
    /// Per-flow parameters of the flows crossing this link.
    pub flows: FlowTable,
    /// Probability that a packet is lost after its transmission on this link (`loss`, in
    /// [0, 1)), independently of every other packet.
    pub loss: f64,
}

impl LinkConfig {
    /// The flow keys this link's discipline reads (none if its kind is unknown, which building
    /// the scheduler reports).
    pub fn flow_params(&self) -> &'static [schedlab_core::ParamInfo] {
        self.scheduler
            .get("kind")
            .and_then(toml::Value::as_str)
            .and_then(discipline_info)
            .map_or(&[], |info| info.flow_params)
    }

    /// Builds a fresh scheduler for this link (`index` is the link's position, for error paths).
    pub fn build_scheduler(&self, index: usize) -> Result<AnyScheduler, ConfigError> {
        // A processing stage without `rate` serves packets, not bytes: the disciplines that
        // turn bytes into time at the link rate cannot run on it (the others ignore the rate).
        let rate = match self.rate {
            Some(rate) => rate,
            None => {
                let kind = self.scheduler.get("kind").and_then(|k| k.as_str()).unwrap_or("");
                if RATE_BASED_DISCIPLINES.contains(&kind) {
                    return Err(ConfigError::new(
                        format!("link[{index}].scheduler.kind"),
                        format!("{kind:?}"),
                        "needs the link's rate (bytes to time); give the stage a rate as well as its service time",
                    ));
                }
                Rate::from_bits_per_second(u64::MAX).expect("non-zero")
            }
        };
        build_scheduler(
            &self.scheduler,
            &format!("link[{index}].scheduler"),
            &self.flows,
            rate,
        )
    }

    /// The link-dropping policy's fresh state, if the link has one.
    pub fn build_drop_policy(&self) -> Option<LinkDropPolicy> {
        let kind = self.drop_policy.as_ref()?;
        // parse_link guarantees both when a policy is set.
        Some(LinkDropPolicy::new(kind, self.rate?, self.buffer?))
    }
}

/// Disciplines that convert bytes to time at the link rate (virtual time, rate checks): they
/// need a `rate` on a processing stage.
pub const RATE_BASED_DISCIPLINES: &[&str] = &["wfq", "wf2q_plus", "stfq", "virtual_clock"];

/// A (σ,ρ) token-bucket shaper in front of a source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShaperConfig {
    /// Bucket depth σ, bytes.
    pub sigma: u64,
    /// Token rate ρ.
    pub rho: Rate,
}

/// One `[[source]]`: a flow, its path and its traffic.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceConfig {
    /// Flow id (unique over sources).
    pub flow: FlowId,
    /// Label for reports (defaults to `flow<N>`).
    pub name: String,
    /// Traffic class of its packets (trace replay may override per packet).
    pub class: u8,
    /// The DSCP its packets carry (0–63), which a link's conditioner may classify on.
    pub dscp: u8,
    /// Indices of the links crossed, in order.
    pub path: Vec<usize>,
    /// Arrival process.
    pub arrivals: ArrivalModel,
    /// Packet sizes (absent for MPEG and trace, which set their own).
    pub size: Option<SizeDist>,
    /// The flow's scheduler parameters (the flow table given to the links on its path).
    pub params: toml::Table,
    /// Optional token-bucket shaper.
    pub shaper: Option<ShaperConfig>,
    /// Time the source starts, ns.
    pub start: TimeNs,
    /// Time the source stops (no packet at or after it), ns.
    pub stop: Option<TimeNs>,
    /// Relative deadline stamped on every packet, ns.
    pub deadline: Option<TimeNs>,
    /// The transport (TCP), if the source is closed-loop: then `arrivals` and `size` describe
    /// the application's writes (bytes), not packets.
    pub transport: Option<TransportConfig>,
    /// IP fragmentation of the model's units into packets of at most `mtu` bytes (`mtu`,
    /// `fragment_header`); `None`: every unit is one packet.
    pub fragmentation: Option<Fragmentation>,
    /// Deadlines and loss-tolerance the results measure the flow's packets against, whatever
    /// the discipline (key `lateness`, see [`crate::lateness`]).
    pub lateness: Option<LatenessSpec>,
    /// An open-loop source's return path (`ack_path` or `ack_delay` without a transport): each
    /// delivered packet is echoed back as a [`ECHO_SIZE`]-byte acknowledgement over those links
    /// or after that delay, and the results report the round-trip time (paper 001's RTT).
    pub echo: Option<AckReturn>,
}

/// Size of the acknowledgement an open-loop source's receiver echoes (a TCP/IP header).
pub const ECHO_SIZE: u32 = 40;

/// A closed-loop source's transport and the return path of its acknowledgements.
#[derive(Clone, Debug, PartialEq)]
pub struct TransportConfig {
    /// TCP parameters.
    pub tcp: TcpConfig,
    /// How ACKs travel back.
    pub ack_return: AckReturn,
}

/// How a TCP receiver's acknowledgements reach the sender.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AckReturn {
    /// Over these links (indices), in order, as packets of `header` bytes.
    Path(Vec<usize>),
    /// After this fixed delay, ns, without crossing any link.
    Delay(TimeNs),
}

impl SourceConfig {
    /// The largest packet the source can send.
    pub fn max_packet(&self) -> u64 {
        if let Some(transport) = &self.transport {
            return transport.tcp.max_packet();
        }
        let largest_unit = self
            .arrivals
            .own_max_size()
            .or_else(|| self.size.as_ref().map(|s| s.max()))
            .unwrap_or(0);
        match self.fragmentation {
            Some(f) => f.max_packet(largest_unit),
            None => largest_unit,
        }
    }
}

/// A parsed and validated scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Optional `name`.
    pub name: Option<String>,
    /// The `[run]` table.
    pub run: RunConfig,
    /// Links in file order.
    pub links: Vec<LinkConfig>,
    /// Sources in file order.
    pub sources: Vec<SourceConfig>,
    /// The `[classes]` table: class names and their numbers, by number.
    pub class_names: Vec<(String, u8)>,
    /// The scenario as parsed (echoed into `summary.json`).
    pub table: toml::Table,
}

/// Why a scenario could not be read or run.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ScenarioError {
    /// The text is not TOML.
    #[error("scenario is not valid TOML: {0}")]
    Toml(String),
    /// A value breaks a rule (the message names the key path and the value).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The run could not complete (e.g. more packets in flight than the simulator can track).
    #[error("simulation failed: {0}")]
    Run(String),
    /// The run was stopped by its watcher (Ctrl-C, SIGTERM) before it finished.
    #[error("interrupted before the run finished")]
    Interrupted,
}

impl ScenarioError {
    /// The same error as the replay tool's [`crate::InputError`], naming `file` (whose text is
    /// `text`) and, for configuration errors, the line of the offending key.
    pub fn into_input_error(self, file: &str, text: &str) -> crate::InputError {
        match self {
            ScenarioError::Toml(message) => crate::InputError::Syntax {
                file: file.to_string(),
                message,
            },
            ScenarioError::Config(error) => crate::InputError::config(file, text, error),
            ScenarioError::Run(message) => crate::InputError::Io {
                path: file.to_string(),
                message,
            },
            ScenarioError::Interrupted => crate::InputError::Interrupted,
        }
    }
}

impl Scenario {
    /// The name `[classes]` gives class `class`, if any.
    pub fn class_name(&self, class: u8) -> Option<&str> {
        self.class_names
            .iter()
            .find(|(_, number)| *number == class)
            .map(|(name, _)| name.as_str())
    }

    /// What the scenario declares (run length, links, flows), as JSON: what
    /// `schedlab validate` prints.
    pub fn describe(&self) -> serde_json::Value {
        self.describe_flows(true)
    }

    /// [`Scenario::describe`], listing the flows only if `flows` (else the key `flows` is
    /// absent).
    pub fn describe_flows(&self, flows: bool) -> serde_json::Value {
        use serde_json::json;
        let length = match self.run.length {
            RunLength::Duration(d) => json!({ "duration_s": d as f64 / 1e9 }),
            RunLength::Packets(p) => json!({ "packets": p }),
        };
        let mut described = json!({
            "name": self.name,
            "run": {
                "length": length,
                "warmup_s": self.run.warmup as f64 / 1e9,
                "seed": self.run.seed,
                "replications": self.run.replications,
            },
            "links": self.links.iter().map(|l| json!({
                "name": l.name,
                "rate_bps": l.rate.map(|r| r.bits_per_second()),
                "service_s": (l.service.per_packet > 0).then(|| l.service.per_packet as f64 / 1e9),
                "delay_s": l.delay as f64 / 1e9,
                "loss": l.loss,
                "scheduler": l.scheduler.get("kind").and_then(|k| k.as_str()),
            })).collect::<Vec<_>>(),
            "flows": flows.then(|| self.sources.iter().map(|s| json!({
                "flow": s.flow,
                "name": s.name,
                "class": s.class,
                "path": s.path.iter().map(|&l| self.links[l].name.as_str()).collect::<Vec<_>>(),
                "model": model_name(&s.arrivals),
                "max_packet_bytes": s.max_packet(),
                "transport": s.transport.as_ref().map(|_| "tcp"),
                "mtu": s.fragmentation.map(|f| f.mtu),
            })).collect::<Vec<_>>()),
        });
        if !flows {
            described.as_object_mut().map(|o| o.remove("flows"));
        }
        described
    }
}

/// The `model` name of an arrival model, as written in a scenario.
pub fn model_name(model: &ArrivalModel) -> &'static str {
    match model {
        ArrivalModel::Cbr { .. } => "cbr",
        ArrivalModel::Poisson { .. } => "poisson",
        ArrivalModel::OnOff {
            on: PeriodDist::Exponential { .. },
            ..
        } => "on_off",
        ArrivalModel::OnOff { .. } => "pareto_on_off",
        ArrivalModel::PeriodicOnOff { .. } => "on_off",
        ArrivalModel::Mmpp { .. } => "mmpp",
        ArrivalModel::Mpeg(_) => "mpeg",
        ArrivalModel::Trace { .. } => "trace",
        ArrivalModel::Bulk => "bulk",
    }
}

/// Upper bound on time-series bins per run (memory guard).
pub const MAX_BINS: u64 = 1_000_000;

const TOP_KEYS: &[&str] = &[
    "name",
    "description",
    "run",
    "link",
    "source",
    "flow_defaults",
    "classes",
    "sweep",
    "report",
];
/// The keys the `[run]` table accepts (any other is an error naming it).
pub const RUN_KEYS: &[&str] = &[
    "duration",
    "packets",
    "warmup",
    "seed",
    "replications",
    "bin",
    "ci",
    "drain",
];
const LINK_KEYS: &[&str] = &[
    "name",
    "rate",
    "service",
    "delay",
    "buffer",
    "buffer_packets",
    "scheduler",
    "max_sojourn",
    "drop_policy",
    "conditioner",
    "loss",
];
const SOURCE_KEYS: &[&str] = &[
    "flow",
    "name",
    "class",
    "dscp",
    "path",
    "arrivals",
    "size",
    "params",
    "shaper",
    "start",
    "stop",
    "deadline",
    "transport",
    "ack_path",
    "ack_delay",
    "mtu",
    "fragment_header",
    "lateness",
];

/// A number (integer or float) that must be finite and `> 0`.
fn positive<'a>(reader: &mut TableReader<'a>, key: &'a str, unit: &str) -> Result<Option<f64>, ConfigError> {
    let value = match reader.value(key) {
        None => return Ok(None),
        Some(toml::Value::Float(f)) => *f,
        Some(toml::Value::Integer(i)) => *i as f64,
        Some(_) => return Err(reader.error(key, format!("must be a positive number ({unit})"))),
    };
    if value.is_finite() && value > 0.0 {
        Ok(Some(value))
    } else {
        Err(reader.error(key, format!("must be a positive number ({unit})")))
    }
}

fn required<T>(value: Option<T>, reader: &TableReader<'_>, key: &str, what: &str) -> Result<T, ConfigError> {
    value.ok_or_else(|| reader.error(key, format!("is required: {what}")))
}

fn array<'a>(
    reader: &mut TableReader<'a>,
    key: &'a str,
) -> Result<Option<&'a Vec<toml::Value>>, ConfigError> {
    match reader.value(key) {
        None => Ok(None),
        Some(toml::Value::Array(a)) => Ok(Some(a)),
        Some(_) => Err(reader.error(key, "must be an array")),
    }
}

fn number_at(value: &toml::Value, path: String, rule: &str) -> Result<f64, ConfigError> {
    let v = match value {
        toml::Value::Float(f) => *f,
        toml::Value::Integer(i) => *i as f64,
        _ => return Err(ConfigError::new(path, value.to_string(), rule)),
    };
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(ConfigError::new(path, value.to_string(), rule))
    }
}

fn size_u32(reader: &mut TableReader<'_>, key: &'static str, min: u64) -> Result<Option<u32>, ConfigError> {
    match reader.size(key)? {
        None => Ok(None),
        Some(v) if v >= min && v <= u32::MAX as u64 => Ok(Some(v as u32)),
        Some(_) => Err(reader.error(key, format!("must be a size from {min} to {} bytes", u32::MAX))),
    }
}

/// Parses and validates a scenario. Relative file names (traces, empirical size tables) are
/// resolved against `base_dir`. Every link's scheduler is built once to validate its
/// configuration and the flow parameters of every flow crossing it.
pub fn parse_scenario(text: &str, base_dir: &Path) -> Result<Scenario, ScenarioError> {
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| ScenarioError::Toml(e.to_string()))?;
    let mut top = TableReader::new(&table, "");
    let name = top.string("name")?.map(str::to_string);
    top.string("description")?;
    let run = match top.table("run")? {
        Some(t) => parse_run(t)?,
        None => return Err(ConfigError::new("run", "(missing)", "a [run] table is required").into()),
    };
    let defaults = top.table("flow_defaults")?.cloned().unwrap_or_default();
    let class_names = match top.table("classes")? {
        Some(t) => parse_classes(t)?,
        None => Vec::new(),
    };
    let link_tables = tables(&mut top, "link")?;
    let source_tables = tables(&mut top, "source")?;
    // `[sweep]` and `[report]` belong to the Python front (sweeps, figures), which validates
    // their contents; here they only have to be tables.
    top.table("sweep")?;
    top.table("report")?;
    top.finish_with(TOP_KEYS)?;
    if link_tables.is_empty() {
        return Err(ConfigError::new("link", "(missing)", "at least one [[link]] is required").into());
    }
    if source_tables.is_empty() {
        return Err(ConfigError::new("source", "(missing)", "at least one [[source]] is required").into());
    }
    let mut links = Vec::with_capacity(link_tables.len());
    for (index, t) in link_tables.iter().enumerate() {
        let link = parse_link(t, index)?;
        if let Some(other) = links.iter().position(|l: &LinkConfig| l.name == link.name) {
            return Err(ConfigError::new(
                format!("link[{index}].name"),
                format!("{:?}", link.name),
                format!("link[{other}] has the same name"),
            )
            .into());
        }
        links.push(link);
    }
    let mut sources: Vec<SourceConfig> = Vec::with_capacity(source_tables.len());
    // The `[[source]]` table each source comes from (a `count` or CSV table declares many).
    let mut origins: Vec<usize> = Vec::with_capacity(source_tables.len());
    // Where each source's `params` are declared, for errors about them.
    let mut params_paths: Vec<Option<String>> = Vec::with_capacity(source_tables.len());
    let mut flow_origin: std::collections::HashMap<FlowId, usize> = std::collections::HashMap::new();
    let mut add = |source: SourceConfig, index: usize, sources: &mut Vec<SourceConfig>| {
        if let Some(other) = flow_origin.insert(source.flow, index) {
            let whose = if other == index {
                "another flow of this [[source]] has this flow id".to_string()
            } else {
                format!("source[{other}] already uses this flow id")
            };
            return Err(ConfigError::new(
                format!("source[{index}].flow"),
                source.flow.to_string(),
                whose,
            ));
        }
        sources.push(source);
        origins.push(index);
        Ok(())
    };
    for (index, t) in source_tables.iter().enumerate() {
        let path = format!("source[{index}]");
        let Some(mut set) = SourceSet::read(t, &path, index, sources.len(), run.seed, base_dir)? else {
            add(
                parse_source(t, index, &links, base_dir, &run, &class_names)?,
                index,
                &mut sources,
            )?;
            params_paths.push(None);
            continue;
        };
        sources.reserve(set.len());
        // When flows differ only in id and name, the first flow's table is read for all.
        let mut shared: Option<SourceConfig> = None;
        for i in 0..set.len() {
            let table = set.table(i)?;
            let flow = table
                .get("flow")
                .and_then(toml::Value::as_integer)
                .map(|f| f as FlowId);
            let source = match &shared {
                Some(first) => {
                    let mut reader = TableReader::new(&table, path.clone());
                    let mut source = first.clone();
                    source.flow = reader
                        .integer("flow", 0, MAX_FLOW_ID as i64)
                        .map_err(|e| set.locate(e, i, None))?
                        .map_or(source.flow, |f| f as FlowId);
                    source.name =
                        r_string(&mut reader, "name")?.unwrap_or_else(|| format!("flow{}", source.flow));
                    source
                }
                None => {
                    let source = parse_source(&table, index, &links, base_dir, &run, &class_names)
                        .map_err(|e| set.locate(e, i, flow))?;
                    if set.only_ids_vary() {
                        shared = Some(source.clone());
                    }
                    source
                }
            };
            add(source, index, &mut sources).map_err(|e| set.locate(e, i, flow))?;
            params_paths.push(Some(set.params_path(i)));
        }
    }
    // Flow keys go to every link a flow crosses (`flow_defaults` to every link), and each link's
    // discipline rejects the keys it does not read, except keys that another discipline on the
    // same path reads: one `params` table serves a path through different disciplines.
    let reads: Vec<&'static [schedlab_core::ParamInfo]> = links.iter().map(LinkConfig::flow_params).collect();
    let read_on = |on: &mut dyn Iterator<Item = usize>| -> Vec<&'static str> {
        on.flat_map(|link| reads[link].iter().map(|p| p.name)).collect()
    };
    let read_anywhere = read_on(&mut (0..links.len()));
    for (index, link) in links.iter_mut().enumerate() {
        link.flows.defaults = keys_for_link(&defaults, reads[index], &read_anywhere);
    }
    for (index, source) in sources.iter().enumerate() {
        let ack_links = match source.transport.as_ref().map(|t| &t.ack_return) {
            Some(AckReturn::Path(links)) => links.as_slice(),
            _ => &[],
        };
        let read_on_path = read_on(&mut source.path.iter().chain(ack_links).copied());
        for &link in source.path.iter().chain(ack_links) {
            let params = keys_for_link(&source.params, reads[link], &read_on_path);
            links[link].flows.set(
                source.flow,
                params,
                match &params_paths[index] {
                    Some(path) => path.clone(),
                    None => format!("source[{}].params", origins[index]),
                },
            );
        }
    }
    check_service_times(&links, &sources, &origins)?;
    for (index, link) in links.iter().enumerate() {
        link.build_scheduler(index)?;
        if let Some(classes) = link.drop_policy.as_ref().and_then(|p| p.classes()) {
            if let Some((s, source)) = sources
                .iter()
                .enumerate()
                .find(|(_, s)| s.path.contains(&index) && s.class as usize >= classes)
            {
                return Err(ConfigError::new(
                    format!("source[{}].class", origins[s]),
                    source.class.to_string(),
                    format!(
                        "link[{index}].drop_policy.link_share has {classes} classes (0 to {})",
                        classes - 1
                    ),
                )
                .into());
            }
        }
    }
    Ok(Scenario {
        name,
        run,
        links,
        sources,
        class_names,
        table,
    })
}

/// [`check_service_times`] of a scenario however it was made (its sources' indices as the
/// origins): the engine's arithmetic relies on it, and a [`Scenario`] built in code has not
/// been through the loader.
pub(crate) fn check_clock(scenario: &Scenario) -> Result<(), ConfigError> {
    let origins: Vec<usize> = (0..scenario.sources.len()).collect();
    check_service_times(&scenario.links, &scenario.sources, &origins)
}

/// Rejects a link whose service time of the largest packet that can reach it (a source's
/// largest on its path, a TCP acknowledgement's header or an echo on its return path), alone
/// or with the link's delay, exceeds [`CLOCK_LIMIT`] (about 292 years), and a shaper whose
/// token rate takes longer than that to refill its source's largest packet: the simulator adds
/// such times to the clock, which must not pass its end. The error names the link's `rate`
/// (or its `service` when that alone is too long, or without a rate) or `delay`, or the
/// shaper's `rho`, with the packet's size and its source. `origins[s]` is the index of source
/// `s`'s table in the file. The loader calls this; so does the engine, for a [`Scenario`]
/// built in code (see [`check_clock`]).
pub(crate) fn check_service_times(
    links: &[LinkConfig],
    sources: &[SourceConfig],
    origins: &[usize],
) -> Result<(), ConfigError> {
    for (s, source) in sources.iter().enumerate() {
        let Some(shaper) = &source.shaper else {
            continue;
        };
        // (A release is the previous one, at most the clock's end, plus at most this time.)
        let largest = source.max_packet();
        let refill = shaper.rho.transmission_time(largest);
        if refill > CLOCK_LIMIT {
            return Err(ConfigError::new(
                format!("source[{}].shaper.rho", origins[s]),
                shaper.rho.to_string(),
                format!(
                    "takes {refill} ns to refill the source's largest packet ({largest} bytes), more than \
                     the simulated clock can hold ({CLOCK_LIMIT} ns, about 292 years); use a higher rate"
                ),
            ));
        }
    }
    // Per link: its largest packet and the source sending it (one pass over the paths).
    let mut largest: Vec<Option<(u64, usize)>> = vec![None; links.len()];
    let mut consider = |link: usize, size: u64, s: usize| {
        if largest[link].is_none_or(|(l, _)| size > l) {
            largest[link] = Some((size, s));
        }
    };
    for (s, source) in sources.iter().enumerate() {
        let size = source.max_packet();
        for &link in &source.path {
            consider(link, size, s);
        }
        if let Some(transport) = &source.transport {
            if let AckReturn::Path(path) = &transport.ack_return {
                for &link in path {
                    consider(link, transport.tcp.header as u64, s);
                }
            }
        }
        if let Some(AckReturn::Path(path)) = &source.echo {
            for &link in path {
                consider(link, ECHO_SIZE as u64, s);
            }
        }
    }
    for (index, (link, largest)) in links.iter().zip(largest).enumerate() {
        let Some((size, s)) = largest else {
            continue;
        };
        let service = link
            .service
            .per_packet
            .saturating_add(link.service.rate.map_or(0, |rate| rate.transmission_time(size)));
        let (key, value) = match link.service.rate {
            Some(rate) if link.service.per_packet <= CLOCK_LIMIT => ("rate", rate.to_string()),
            _ => (
                "service",
                format!("{}s", schedlab_core::format_seconds(link.service.per_packet)),
            ),
        };
        let sending = format!(
            "to send the largest packet of source[{}] ({size} bytes), link {:?} takes {service} ns",
            origins[s], link.name
        );
        if service > CLOCK_LIMIT {
            return Err(ConfigError::new(
                format!("link[{index}].{key}"),
                value,
                format!(
                    "{sending} (about {:.0} years), more than the simulated clock can hold ({CLOCK_LIMIT} \
                     ns, about 292 years); use a higher rate or smaller packets",
                    service as f64 / 1e9 / 31_557_600.0,
                ),
            ));
        }
        if service.saturating_add(link.delay) > CLOCK_LIMIT {
            return Err(ConfigError::new(
                format!("link[{index}].delay"),
                format!("{}s", schedlab_core::format_seconds(link.delay)),
                format!(
                    "{sending}; with this delay, more than the simulated clock can hold ({CLOCK_LIMIT} ns, \
                     about 292 years)"
                ),
            ));
        }
    }
    Ok(())
}

/// Reads `[classes]`: `name = number` (0 = highest), names and numbers each unique.
fn parse_classes(table: &toml::Table) -> Result<Vec<(String, u8)>, ConfigError> {
    let mut names: Vec<(String, u8)> = Vec::with_capacity(table.len());
    for (name, value) in table {
        let path = format!("classes.{name}");
        let number = match value {
            toml::Value::Integer(i) if (0..=255).contains(i) => *i as u8,
            _ => {
                return Err(ConfigError::new(
                    path,
                    value.to_string(),
                    "must be a class number from 0 (highest) to 255",
                ))
            }
        };
        if let Some((other, _)) = names.iter().find(|(_, n)| *n == number) {
            return Err(ConfigError::new(
                path,
                value.to_string(),
                format!("classes.{other} has the same number"),
            ));
        }
        names.push((name.clone(), number));
    }
    names.sort_by_key(|(_, n)| *n);
    Ok(names)
}

fn tables<'a>(reader: &mut TableReader<'a>, key: &'a str) -> Result<Vec<&'a toml::Table>, ConfigError> {
    let Some(value) = reader.value(key) else {
        return Ok(Vec::new());
    };
    let toml::Value::Array(items) = value else {
        return Err(reader.error(key, format!("must be an array of tables, written [[{key}]]")));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            toml::Value::Table(t) => Ok(t),
            other => Err(ConfigError::new(
                format!("{key}[{i}]"),
                other.to_string(),
                "must be a table",
            )),
        })
        .collect()
}

fn parse_run(table: &toml::Table) -> Result<RunConfig, ConfigError> {
    let mut r = TableReader::new(table, "run");
    let duration = r.duration("duration")?;
    let packets = r.integer("packets", 1, i64::MAX)?;
    let length = match (duration, packets) {
        (Some(_), Some(_)) => {
            return Err(r.error("packets", "give either run.duration or run.packets, not both"))
        }
        (Some(0), None) => return Err(r.error("duration", "must be longer than zero")),
        (Some(d), None) => RunLength::Duration(d),
        (None, Some(p)) => RunLength::Packets(p as u64),
        (None, None) => {
            return Err(r.error(
                "duration",
                "is required: a run length such as \"100s\" (or give run.packets)",
            ))
        }
    };
    let warmup = r.duration("warmup")?.unwrap_or(0);
    if let RunLength::Duration(d) = length {
        if warmup >= d {
            return Err(r.error("warmup", "must be shorter than run.duration"));
        }
    }
    let seed = r.integer("seed", 0, i64::MAX)?.unwrap_or(1) as u64;
    let replications = r.integer("replications", 1, 100_000)?.unwrap_or(1) as u32;
    let bin = r.duration("bin")?.unwrap_or(1_000_000_000);
    if bin == 0 {
        return Err(r.error("bin", "must be longer than zero"));
    }
    if let RunLength::Duration(d) = length {
        if d / bin > MAX_BINS {
            return Err(r.error(
                "bin",
                format!("gives more than {MAX_BINS} time-series bins over run.duration; use a wider bin"),
            ));
        }
    }
    let ci = match r.string("ci")? {
        None | Some("student_t") => CiMethod::StudentT,
        Some("normal") => CiMethod::Normal,
        Some(_) => return Err(r.error("ci", "must be \"student_t\" or \"normal\" (1.96·s/√n)")),
    };
    let drain = r.bool("drain")?.unwrap_or(true);
    r.finish_with(RUN_KEYS)?;
    Ok(RunConfig {
        length,
        warmup,
        seed,
        replications,
        bin,
        ci,
        drain,
    })
}

/// The keys of `table` that a link whose discipline reads `this_link` is given: those it reads
/// and those no discipline in `elsewhere` reads (which it then reports as foreign).
fn keys_for_link(
    table: &toml::Table,
    this_link: &[schedlab_core::ParamInfo],
    elsewhere: &[&str],
) -> toml::Table {
    table
        .iter()
        .filter(|(key, _)| this_link.iter().any(|p| p.name == *key) || !elsewhere.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

fn parse_link(table: &toml::Table, index: usize) -> Result<LinkConfig, ConfigError> {
    let path = format!("link[{index}]");
    let mut r = TableReader::new(table, path.clone());
    let name = required(
        r_string(&mut r, "name")?,
        &r,
        "name",
        "the name used in source paths",
    )?;
    let rate = r.rate("rate")?;
    let per_packet = r.duration("service")?;
    if per_packet == Some(0) {
        return Err(r.error("service", "must be longer than zero (omit it for a plain link)"));
    }
    if rate.is_none() && per_packet.is_none() {
        return Err(r.error(
            "rate",
            "is required: a rate such as \"125kbit\", or a processing time per packet (service = \"300us\"), or both",
        ));
    }
    let service = ServiceTime {
        per_packet: per_packet.unwrap_or(0),
        rate,
    };
    let delay = r.duration("delay")?.unwrap_or(0);
    let buffer = r.size("buffer")?;
    if buffer == Some(0) {
        return Err(r.error("buffer", "must be at least 1 byte"));
    }
    let max_sojourn = r.duration("max_sojourn")?;
    if max_sojourn == Some(0) {
        return Err(r.error("max_sojourn", "must be longer than zero"));
    }
    let drop_policy = match r.table("drop_policy")? {
        None => None,
        Some(t) => {
            let kind = LinkDropPolicyKind::read(t, &format!("{path}.drop_policy"))?;
            if rate.is_none() {
                return Err(r.error(
                    "drop_policy",
                    "a link-dropping policy shares the link's bandwidth: the link needs a rate",
                ));
            }
            if buffer.is_none() {
                return Err(r.error(
                    "drop_policy",
                    "a link-dropping policy measures bandwidth over the buffer's drain time: the link needs a buffer (bytes)",
                ));
            }
            Some(kind)
        }
    };
    let conditioner = match r.table("conditioner")? {
        None => None,
        Some(t) => {
            let conditioner = Conditioner::read(t, &format!("{path}.conditioner"))?;
            // The simulator's packets carry a DSCP but no addresses, ports or protocol.
            for (i, rule) in conditioner.rules.iter().enumerate() {
                if rule.flow.is_some() {
                    return Err(ConfigError::new(
                        format!("{path}.conditioner.classify[{i}].flow"),
                        rule.flow.map_or_else(String::new, |f| f.to_string()),
                        "simulated packets keep their source's flow: a classifier rule here sets a class (flow rules work in the gateway)",
                    ));
                }
                if let Some(key) = rule.conditions.flow_key_field() {
                    let value = t
                        .get("classify")
                        .and_then(|c| c.get(i))
                        .and_then(|rule| rule.get(key))
                        .map_or_else(String::new, |v| v.to_string());
                    return Err(ConfigError::new(
                        format!("{path}.conditioner.classify[{i}].{key}"),
                        value,
                        "simulated packets carry a DSCP but no addresses, ports or protocol: classify on dscp here (multi-field rules work in the gateway)",
                    ));
                }
            }
            Some(conditioner)
        }
    };
    let buffer_packets = r.integer("buffer_packets", 1, i64::MAX)?;
    let loss = r.float("loss", 0.0, 1.0)?.unwrap_or(0.0);
    if loss >= 1.0 {
        return Err(r.error("loss", "must be a probability below 1"));
    }
    let mut scheduler = match r.table("scheduler")? {
        Some(t) => t.clone(),
        None => {
            let mut t = toml::Table::new();
            t.insert("kind".into(), toml::Value::String("fifo".into()));
            t
        }
    };
    for (key, value) in [
        ("buffer", buffer.map(|b| b as i64)),
        ("buffer_packets", buffer_packets),
    ] {
        if let Some(v) = value {
            if scheduler.contains_key(key) {
                return Err(r.error(
                    key,
                    format!("is also given as {path}.scheduler.{key}; give it once"),
                ));
            }
            scheduler.insert(key.into(), toml::Value::Integer(v));
        }
    }
    r.finish_with(LINK_KEYS)?;
    let flows = FlowTable::default();
    Ok(LinkConfig {
        name,
        rate,
        service,
        max_sojourn,
        drop_policy,
        conditioner,
        buffer,
        delay,
        scheduler,
        flows,
        loss,
    })
}

fn r_string(r: &mut TableReader<'_>, key: &'static str) -> Result<Option<String>, ConfigError> {
    Ok(r.string(key)?.map(str::to_string))
}

/// The link indices of a path (`source.path`, `source.ack_path`) at `key_path`.
fn link_route(hops: &[toml::Value], key_path: &str, links: &[LinkConfig]) -> Result<Vec<usize>, ConfigError> {
    let link_names: Vec<&str> = links.iter().map(|l| l.name.as_str()).collect();
    let mut route = Vec::with_capacity(hops.len());
    for (hop, value) in hops.iter().enumerate() {
        let hop_path = format!("{key_path}[{hop}]");
        let toml::Value::String(link_name) = value else {
            return Err(ConfigError::new(
                hop_path,
                value.to_string(),
                "must be a link name",
            ));
        };
        let Some(link) = links.iter().position(|l| &l.name == link_name) else {
            return Err(ConfigError::new(
                hop_path,
                value.to_string(),
                format!("no link has this name (links: {})", link_names.join(", ")),
            ));
        };
        if route.contains(&link) {
            return Err(ConfigError::new(
                hop_path,
                value.to_string(),
                "a path crosses each link once",
            ));
        }
        route.push(link);
    }
    Ok(route)
}

/// A source's `transport`, `ack_path` and `ack_delay` keys: the TCP transport, or for an
/// open-loop source the return path of its echoes (the round-trip time), if any.
fn parse_transport(
    r: &mut TableReader<'_>,
    path: &str,
    links: &[LinkConfig],
    arrivals: &ArrivalModel,
) -> Result<(Option<TransportConfig>, Option<AckReturn>), ConfigError> {
    let transport = r.table("transport")?;
    let ack_path = array(r, "ack_path")?;
    let ack_delay = r.duration("ack_delay")?;
    let Some(transport) = transport else {
        if matches!(arrivals, ArrivalModel::Bulk) {
            return Err(r.error(
                "arrivals",
                "model \"bulk\" needs a transport, e.g. transport = { kind = \"tcp\" }",
            ));
        }
        let echo = match (ack_path, ack_delay) {
            (Some(_), Some(_)) => {
                return Err(r.error("ack_delay", "give either ack_path or ack_delay, not both"))
            }
            (Some(hops), None) if !hops.is_empty() => Some(AckReturn::Path(link_route(
                hops,
                &join_path(path, "ack_path"),
                links,
            )?)),
            (Some(_), None) => return Err(r.error("ack_path", "must name at least one link")),
            (None, Some(delay)) => Some(AckReturn::Delay(delay)),
            (None, None) => None,
        };
        return Ok((None, echo));
    };
    let tcp = TcpConfig::from_table(transport, &join_path(path, "transport"))?;
    if matches!(arrivals, ArrivalModel::Trace { .. }) {
        return Err(r.error(
            "arrivals",
            "a TCP source's arrivals are application writes; trace replay is not one",
        ));
    }
    let ack_return = match (ack_path, ack_delay) {
        (Some(_), Some(_)) => return Err(r.error("ack_delay", "give either ack_path or ack_delay, not both")),
        (Some(hops), None) if !hops.is_empty() => {
            AckReturn::Path(link_route(hops, &join_path(path, "ack_path"), links)?)
        }
        (Some(_), None) => return Err(r.error("ack_path", "must name at least one link")),
        (None, Some(delay)) => AckReturn::Delay(delay),
        (None, None) => {
            return Err(r.error(
                "ack_path",
                "is required for a TCP source: the links ACKs cross (e.g. [\"reverse\"]), or give \
                 ack_delay = \"20ms\"",
            ))
        }
    };
    Ok((Some(TransportConfig { tcp, ack_return }), None))
}

fn parse_source(
    table: &toml::Table,
    index: usize,
    links: &[LinkConfig],
    base_dir: &Path,
    run: &RunConfig,
    class_names: &[(String, u8)],
) -> Result<SourceConfig, ConfigError> {
    let path = format!("source[{index}]");
    let mut r = TableReader::new(table, path.clone());
    let flow = r
        .integer("flow", 0, MAX_FLOW_ID as i64)?
        .map(|f| f as FlowId)
        .unwrap_or(index as FlowId);
    let name = r_string(&mut r, "name")?.unwrap_or_else(|| format!("flow{flow}"));
    let class = match r.value("class") {
        Some(toml::Value::String(name)) => match class_names.iter().find(|(n, _)| n == name) {
            Some((_, number)) => *number,
            None => {
                let known: Vec<&str> = class_names.iter().map(|(n, _)| n.as_str()).collect();
                return Err(r.error(
                    "class",
                    if known.is_empty() {
                        "names no class: declare it in a [classes] table (e.g. gold = 0), or give a number"
                            .to_string()
                    } else {
                        format!("names no class in [classes] (known: {})", known.join(", "))
                    },
                ));
            }
        },
        _ => r.integer("class", 0, 255)?.unwrap_or(0) as u8,
    };
    let dscp = r.integer("dscp", 0, 63)?.unwrap_or(0) as u8;
    let hops = match array(&mut r, "path")? {
        Some(a) if !a.is_empty() => a,
        Some(_) => return Err(r.error("path", "must name at least one link")),
        None => return Err(r.error("path", "is required: the links the flow crosses, in order")),
    };
    let route = link_route(hops, &join_path(&path, "path"), links)?;
    let arrivals_table = match r.table("arrivals")? {
        Some(t) => t,
        None => {
            return Err(r.error(
                "arrivals",
                "is required, e.g. { model = \"poisson\", rate_pps = 10 }",
            ))
        }
    };
    let arrivals = parse_arrivals(arrivals_table, &join_path(&path, "arrivals"), base_dir)?;
    let size = match r.table("size")? {
        Some(t) if arrivals.needs_size() => Some(parse_size(t, &join_path(&path, "size"), base_dir)?),
        Some(_) => {
            return Err(r.error(
                "size",
                "this arrival model sets its own packet sizes; remove the size table",
            ))
        }
        None if arrivals.needs_size() => {
            return Err(r.error("size", "is required, e.g. { dist = \"constant\", size = 1000 }"))
        }
        None => None,
    };
    let params = r.table("params")?.cloned().unwrap_or_default();
    let start = r.duration("start")?.unwrap_or(0);
    let stop = r.duration("stop")?;
    if let Some(stop) = stop {
        if stop <= start {
            return Err(r.error("stop", "must be later than the source's start"));
        }
    }
    if let RunLength::Duration(d) = run.length {
        if start >= d {
            return Err(r.error("start", "must be earlier than run.duration"));
        }
    }
    let deadline = r.duration("deadline")?;
    let mtu = size_u32(&mut r, "mtu", 1)?;
    let fragment_header = size_u32(&mut r, "fragment_header", 0)?;
    let fragmentation = match (mtu, fragment_header) {
        (None, None) => None,
        (None, Some(_)) => {
            return Err(r.error(
                "fragment_header",
                "applies to fragments only: give the source an mtu too",
            ))
        }
        (Some(mtu), header) => {
            let header = header.unwrap_or(Fragmentation::DEFAULT_HEADER);
            if header >= mtu {
                return Err(r.error(
                    "mtu",
                    format!(
                        "must exceed the fragment header ({header} bytes) so that a fragment carries data"
                    ),
                ));
            }
            Some(Fragmentation { mtu, header })
        }
    };
    let lateness = match r.table("lateness")? {
        Some(t) => Some(LatenessSpec::read(t, join_path(&path, "lateness"))?),
        None => None,
    };
    let (transport, echo) = parse_transport(&mut r, &path, links, &arrivals)?;
    if transport.is_some() && r.has("shaper") {
        return Err(r.error("shaper", "a TCP source is paced by its window; remove the shaper"));
    }
    if transport.is_some() && fragmentation.is_some() {
        return Err(r.error("mtu", "a TCP source sends segments of mss bytes; remove mtu"));
    }
    let mut source = SourceConfig {
        flow,
        name,
        class,
        dscp,
        path: route,
        arrivals,
        size,
        params,
        shaper: None,
        start,
        stop,
        deadline,
        transport,
        fragmentation,
        lateness,
        echo,
    };
    if let Some(t) = r.table("shaper")? {
        let shaper_path = join_path(&path, "shaper");
        let mut s = TableReader::new(t, shaper_path);
        let sigma = required(s.size("sigma")?, &s, "sigma", "the bucket depth σ in bytes")?;
        let rho = required(s.rate("rho")?, &s, "rho", "the token rate ρ such as \"100kbit\"")?;
        let largest = source.max_packet();
        if sigma < largest.max(1) {
            return Err(s.error(
                "sigma",
                format!("must hold the source's largest packet ({largest} bytes)"),
            ));
        }
        // (Its refill time is checked with the links' service times: `check_service_times`.)
        s.finish_with(&["sigma", "rho"])?;
        source.shaper = Some(ShaperConfig { sigma, rho });
    }
    r.finish_with(SOURCE_KEYS)?;
    Ok(source)
}

fn spacing(r: &mut TableReader<'_>) -> Result<Spacing, ConfigError> {
    let pps = positive(r, "rate_pps", "packets per second")?;
    let bits = r.rate("rate")?;
    match (pps, bits) {
        (Some(_), Some(_)) => Err(r.error("rate", "give either rate_pps or rate, not both")),
        (Some(p), None) => Ok(Spacing::PacketsPerSecond(p)),
        (None, Some(b)) => Ok(Spacing::BitRate(b)),
        (None, None) => Err(r.error(
            "rate_pps",
            "is required: a packet rate (rate_pps) or a bit rate (rate = \"250kbit\")",
        )),
    }
}

fn period(r: &mut TableReader<'_>, key: &'static str) -> Result<f64, ConfigError> {
    match r.duration(key)? {
        Some(0) => Err(r.error(key, "must be longer than zero")),
        Some(d) => Ok(d as f64 / 1e9),
        None => Err(r.error(key, "is required: a mean period such as \"500ms\"")),
    }
}

const MODELS: &str = "cbr, poisson, on_off, pareto_on_off, mmpp, mpeg, trace, bulk (TCP sources)";

fn parse_arrivals(table: &toml::Table, path: &str, base_dir: &Path) -> Result<ArrivalModel, ConfigError> {
    let mut r = TableReader::new(table, path);
    let model = required(r_string(&mut r, "model")?, &r, "model", MODELS)?;
    let (result, accepted): (ArrivalModel, &[&str]) = match model.as_str() {
        "cbr" => (
            ArrivalModel::Cbr {
                spacing: spacing(&mut r)?,
            },
            &["model", "rate_pps", "rate"],
        ),
        "poisson" => {
            let rate_pps = positive(&mut r, "rate_pps", "packets per second")?;
            (
                ArrivalModel::Poisson {
                    rate_pps: required(rate_pps, &r, "rate_pps", "mean packets per second")?,
                },
                &["model", "rate_pps"],
            )
        }
        "on_off" if r.has("on_packets") || r.has("off") => {
            let on_packets = r.integer("on_packets", 1, u32::MAX as i64)?;
            let on_packets = required(
                on_packets.map(|n| n as u32),
                &r,
                "on_packets",
                "with off, the number of packets in every On period, e.g. 20",
            )?;
            let off_ns = match r.duration("off")? {
                Some(0) => return Err(r.error("off", "must be longer than zero")),
                Some(d) => d,
                None => {
                    return Err(r.error(
                        "off",
                        "is required with on_packets: the length of every Off period, e.g. \"40ms\"",
                    ))
                }
            };
            for key in ["mean_on", "mean_off"] {
                if r.has(key) {
                    return Err(r.error(
                        key,
                        "cannot be combined with on_packets/off (fixed periods); give mean_on and mean_off or on_packets and off",
                    ));
                }
            }
            (
                ArrivalModel::PeriodicOnOff {
                    on_packets,
                    off_ns,
                    spacing: spacing(&mut r)?,
                },
                &["model", "on_packets", "off", "rate_pps", "rate"],
            )
        }
        "on_off" => {
            let on = PeriodDist::Exponential {
                mean: period(&mut r, "mean_on")?,
            };
            let off = PeriodDist::Exponential {
                mean: period(&mut r, "mean_off")?,
            };
            (
                ArrivalModel::OnOff {
                    on,
                    off,
                    spacing: spacing(&mut r)?,
                },
                &["model", "mean_on", "mean_off", "rate_pps", "rate"],
            )
        }
        "pareto_on_off" => {
            let shape = positive(&mut r, "shape", "Pareto shape α > 1")?;
            let shape = required(shape, &r, "shape", "the Pareto shape α > 1, e.g. 1.5")?;
            if shape <= 1.0 {
                return Err(r.error("shape", "must be greater than 1 (the mean is infinite otherwise)"));
            }
            let on = PeriodDist::Pareto {
                shape,
                mean: period(&mut r, "mean_on")?,
            };
            let off = PeriodDist::Pareto {
                shape,
                mean: period(&mut r, "mean_off")?,
            };
            (
                ArrivalModel::OnOff {
                    on,
                    off,
                    spacing: spacing(&mut r)?,
                },
                &["model", "shape", "mean_on", "mean_off", "rate_pps", "rate"],
            )
        }
        "mmpp" => (
            parse_mmpp(&mut r, path)?,
            &["model", "rates_pps", "transition_rates", "initial_state"],
        ),
        "mpeg" => (
            parse_mpeg(&mut r, path, base_dir)?,
            &["model", "gop", "gop_per_s", "i_size", "p_size", "b_size"],
        ),
        "trace" => (parse_trace(&mut r, path, base_dir)?, &["model", "file", "flow"]),
        "bulk" => (ArrivalModel::Bulk, &["model"]),
        _ => return Err(r.error("model", format!("unknown arrival model; known: {MODELS}"))),
    };
    r.finish_with(accepted)?;
    Ok(result)
}

fn parse_mmpp(r: &mut TableReader<'_>, path: &str) -> Result<ArrivalModel, ConfigError> {
    let rates = match array(r, "rates_pps")? {
        Some(a) if !a.is_empty() => a,
        _ => {
            return Err(r.error(
                "rates_pps",
                "is required: the Poisson rate of each state, e.g. [10, 100]",
            ))
        }
    };
    let rates_pps = rates
        .iter()
        .enumerate()
        .map(|(i, v)| {
            number_at(
                v,
                format!("{path}.rates_pps[{i}]"),
                "must be a non-negative number (packets per second)",
            )
        })
        .collect::<Result<Vec<f64>, _>>()?;
    let n = rates_pps.len();
    let matrix = match array(r, "transition_rates")? {
        Some(a) => a,
        None if n == 1 => &Vec::new(),
        None => {
            return Err(r.error(
                "transition_rates",
                format!("is required: an {n}×{n} array of rates per second"),
            ))
        }
    };
    let mut transition_rates = vec![vec![0.0; n]; n];
    if n > 1 || !matrix.is_empty() {
        if matrix.len() != n {
            return Err(r.error("transition_rates", format!("must have {n} rows, one per state")));
        }
        for (i, row) in matrix.iter().enumerate() {
            let row_path = format!("{path}.transition_rates[{i}]");
            let toml::Value::Array(cells) = row else {
                return Err(ConfigError::new(
                    row_path,
                    row.to_string(),
                    format!("must be an array of {n} rates"),
                ));
            };
            if cells.len() != n {
                return Err(ConfigError::new(
                    row_path,
                    row.to_string(),
                    format!("must have {n} entries"),
                ));
            }
            for (j, cell) in cells.iter().enumerate() {
                let cell_path = format!("{row_path}[{j}]");
                let v = number_at(cell, cell_path.clone(), "must be a non-negative rate per second")?;
                if i == j && v != 0.0 {
                    return Err(ConfigError::new(
                        cell_path,
                        cell.to_string(),
                        "the diagonal must be 0 (a state does not move to itself)",
                    ));
                }
                transition_rates[i][j] = v;
            }
        }
    }
    let initial_state = r.integer("initial_state", 0, n as i64 - 1)?.map(|s| s as usize);
    if initial_state.is_none() && n > 1 && stationary_distribution(&transition_rates).is_none() {
        return Err(r.error(
            "transition_rates",
            "the chain has no unique stationary distribution; give initial_state",
        ));
    }
    if rates_pps.iter().all(|&x| x == 0.0) {
        return Err(r.error("rates_pps", "at least one state must send packets"));
    }
    Ok(ArrivalModel::Mmpp {
        rates_pps,
        transition_rates,
        initial_state,
    })
}

fn parse_mpeg(r: &mut TableReader<'_>, path: &str, base_dir: &Path) -> Result<ArrivalModel, ConfigError> {
    let mut model = MpegModel::thesis();
    if let Some(gop) = r.string("gop")? {
        let frames: Option<Vec<FrameType>> = gop
            .chars()
            .map(|c| match c {
                'I' => Some(FrameType::I),
                'P' => Some(FrameType::P),
                'B' => Some(FrameType::B),
                _ => None,
            })
            .collect();
        match frames {
            Some(f) if !f.is_empty() => model.gop = f,
            _ => {
                return Err(r.error(
                    "gop",
                    "must be a non-empty string of I, P and B, e.g. \"IPBBPBBPBB\"",
                ))
            }
        }
    }
    if let Some(g) = positive(r, "gop_per_s", "groups of pictures per second")? {
        model.gop_per_second = g;
    }
    for (key, slot) in [
        ("i_size", &mut model.i_frame),
        ("p_size", &mut model.p_frame),
        ("b_size", &mut model.b_frame),
    ] {
        if let Some(t) = r.table(key)? {
            *slot = parse_size(t, &join_path(path, key), base_dir)?;
        }
    }
    Ok(ArrivalModel::Mpeg(model))
}

fn parse_trace(r: &mut TableReader<'_>, path: &str, base_dir: &Path) -> Result<ArrivalModel, ConfigError> {
    let file = required(
        r_string(r, "file")?,
        r,
        "file",
        "the trace CSV (time_s,flow,size_bytes[,class,deadline_s])",
    )?;
    let flow_label = match r.value("flow") {
        None => None,
        Some(toml::Value::Integer(i)) if *i >= 0 => Some(*i as u64),
        Some(_) => {
            return Err(r.error(
                "flow",
                "must be a flow label of the trace (a non-negative integer)",
            ))
        }
    };
    let full: PathBuf = base_dir.join(&file);
    let packets = crate::trace_source::load(&full, flow_label)
        .map_err(|e| ConfigError::new(join_path(path, "file"), format!("{file:?}"), e))?;
    if packets.is_empty() {
        return Err(r.error("flow", "selects no packet of the trace"));
    }
    Ok(ArrivalModel::Trace {
        packets: Arc::new(packets),
    })
}

const DISTS: &str = "constant, uniform, exponential, empirical, thesis_best_effort";

/// Parses a `size` table (`dist` = constant, uniform, exponential, empirical,
/// thesis_best_effort; optional `header` bytes added to every draw).
pub fn parse_size(table: &toml::Table, path: &str, base_dir: &Path) -> Result<SizeDist, ConfigError> {
    let mut r = TableReader::new(table, path);
    let dist = required(r_string(&mut r, "dist")?, &r, "dist", DISTS)?;
    let header = size_u32(&mut r, "header", 0)?.unwrap_or(0);
    let (shape, accepted): (SizeShape, &[&str]) = match dist.as_str() {
        "constant" => {
            let size = size_u32(&mut r, "size", 0)?;
            (
                SizeShape::Constant(required(size, &r, "size", "the packet size in bytes")?),
                &["dist", "header", "size"],
            )
        }
        "uniform" => {
            let min = size_u32(&mut r, "min", 0)?;
            let min = required(min, &r, "min", "the smallest size in bytes")?;
            let max = size_u32(&mut r, "max", 0)?;
            let max = required(max, &r, "max", "the largest size in bytes")?;
            if min > max {
                return Err(r.error("min", format!("must not exceed max = {max}")));
            }
            (SizeShape::Uniform { min, max }, &["dist", "header", "min", "max"])
        }
        "exponential" => {
            let mean = positive(&mut r, "mean", "bytes")?;
            let mean = required(mean, &r, "mean", "the mean size in bytes")?;
            let min = size_u32(&mut r, "min", 0)?.unwrap_or(1);
            let max = size_u32(&mut r, "max", 0)?.unwrap_or(65_535);
            if mean < min as f64 {
                return Err(r.error("mean", format!("must be at least min = {min}")));
            }
            if mean > max as f64 {
                return Err(r.error("mean", format!("must not exceed max = {max}")));
            }
            (
                SizeShape::TruncatedExponential { mean, min, max },
                &["dist", "header", "mean", "min", "max"],
            )
        }
        "empirical" => (
            parse_empirical(&mut r, path, base_dir)?,
            &["dist", "header", "file", "values", "weights"],
        ),
        "thesis_best_effort" => {
            if header != 0 {
                return Err(r.error("header", "thesis_best_effort has its fixed 40-byte header"));
            }
            return finish_size(r, SizeDist::thesis_best_effort(), &["dist"]);
        }
        _ => return Err(r.error("dist", format!("unknown size distribution; known: {DISTS}"))),
    };
    finish_size(r, SizeDist { shape, header }, accepted)
}

fn finish_size(r: TableReader<'_>, size: SizeDist, accepted: &[&str]) -> Result<SizeDist, ConfigError> {
    let smallest = match &size.shape {
        SizeShape::Constant(s) => *s as u64,
        SizeShape::Uniform { min, .. } | SizeShape::TruncatedExponential { min, .. } => *min as u64,
        SizeShape::Empirical { values, .. } => values.iter().copied().min().unwrap_or(0) as u64,
    } + size.header as u64;
    if smallest == 0 {
        return Err(r.error(
            "dist",
            "can produce 0-byte packets; every packet needs at least 1 byte",
        ));
    }
    if size.max() > u32::MAX as u64 {
        return Err(r.error("header", "makes packets larger than 4 GB"));
    }
    r.finish_with(accepted)?;
    Ok(size)
}

fn parse_empirical(r: &mut TableReader<'_>, path: &str, base_dir: &Path) -> Result<SizeShape, ConfigError> {
    let mut pairs: Vec<(u32, f64)> = Vec::new();
    if let Some(file) = r_string(r, "file")? {
        if r.has("values") {
            return Err(r.error("values", "give either file or values, not both"));
        }
        let full = base_dir.join(&file);
        let text = std::fs::read_to_string(&full).map_err(|e| {
            ConfigError::new(
                join_path(path, "file"),
                format!("{file:?}"),
                format!("cannot read {}: {e}", full.display()),
            )
        })?;
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            let bad = |field: &str, value: &str, rule: &str| {
                ConfigError::new(
                    join_path(path, "file"),
                    format!("{file:?}"),
                    format!("line {}, field {field} = {value:?}: {rule}", number + 1),
                )
            };
            if number == 0 && fields[0].parse::<f64>().is_err() {
                continue; // a header line such as "size,weight"
            }
            if fields.len() > 2 {
                return Err(bad("(line)", line, "expected size or size,weight"));
            }
            let size: u32 = fields[0]
                .parse()
                .ok()
                .filter(|&s| s > 0)
                .ok_or_else(|| bad("size", fields[0], "must be a whole number of bytes ≥ 1"))?;
            let weight: f64 = match fields.get(1) {
                None => 1.0,
                Some(w) => w
                    .parse()
                    .ok()
                    .filter(|w: &f64| w.is_finite() && *w >= 0.0)
                    .ok_or_else(|| bad("weight", w, "must be a non-negative number"))?,
            };
            pairs.push((size, weight));
        }
        if pairs.is_empty() {
            return Err(ConfigError::new(
                join_path(path, "file"),
                format!("{file:?}"),
                "holds no sizes",
            ));
        }
    } else {
        let values = match array(r, "values")? {
            Some(v) if !v.is_empty() => v,
            _ => {
                return Err(r.error(
                    "values",
                    "is required (or give file): the sizes, e.g. [64, 576, 1500]",
                ))
            }
        };
        let weights = array(r, "weights")?;
        if let Some(w) = weights {
            if w.len() != values.len() {
                return Err(r.error(
                    "weights",
                    format!("must have one weight per value ({})", values.len()),
                ));
            }
        }
        for (i, v) in values.iter().enumerate() {
            let size = match v {
                toml::Value::Integer(s) if (1..=u32::MAX as i64).contains(s) => *s as u32,
                _ => {
                    return Err(ConfigError::new(
                        format!("{path}.values[{i}]"),
                        v.to_string(),
                        "must be a whole number of bytes ≥ 1",
                    ))
                }
            };
            let weight = match weights {
                Some(w) => number_at(
                    &w[i],
                    format!("{path}.weights[{i}]"),
                    "must be a non-negative number",
                )?,
                None => 1.0,
            };
            pairs.push((size, weight));
        }
    }
    let total: f64 = pairs.iter().map(|p| p.1).sum();
    if total <= 0.0 || !total.is_finite() {
        return Err(r.error("weights", "must not all be zero"));
    }
    let mut acc = 0.0;
    let mut values = Vec::with_capacity(pairs.len());
    let mut cumulative = Vec::with_capacity(pairs.len());
    for (size, weight) in pairs {
        acc += weight / total;
        values.push(size);
        cumulative.push(acc);
    }
    if let Some(last) = cumulative.last_mut() {
        *last = 1.0;
    }
    Ok(SizeShape::Empirical { values, cumulative })
}
