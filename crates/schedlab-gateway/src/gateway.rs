//! The gateway's forwarding engine, without I/O: frames in, a scheduler over their
//! descriptors, an emulated bottleneck link, frames out. [`crate::linux`] feeds it from
//! AF_PACKET rings; the tests here feed it directly.
//!
//! ## The emulated link
//! The output is paced as dummynet and tc pace a link of rate `R`: a packet starts its
//! transmission when the link is free and it has arrived, `start = max(link_free_at,
//! arrival)`, and occupies the link for `size·8/R` (size = IP length, see
//! [`crate::classify::IpPacket::ip_length`]); it leaves the gateway `propagation_delay` after
//! its last bit, at `release = start + size·8/R + propagation_delay`. Times are nanoseconds of
//! a monotonic clock. Because `start` is computed from the emulated schedule and not from the
//! moment the gateway happened to wake up, a late wake-up does not slow the link down; the
//! lateness of each actual transmission against its `release` is recorded as the pacing error.
//!
//! ## Accounting (exactly once)
//! Every frame received on the ingress side is counted once as `received_frames` and ends in
//! exactly one of: passed unscheduled (not IP), malformed (dropped, by reason), or `in` (an IP
//! packet given to the flow table). For `in`, per flow and in total, at any instant:
//! `in = sent + dropped (by reason) + queued`, where `queued` counts packets held by the
//! scheduler and packets on the emulated link (dequeued, not yet released).
//!
//! ## Bounded memory
//! Queued frames are bounded by the scheduler's buffer limit; when the `[scheduler]` table sets
//! neither `buffer` nor `buffer_packets`, the gateway sets `buffer = 1 MiB`
//! ([`DEFAULT_BUFFER_BYTES`]). Independently, the frames held (scheduler plus emulated link)
//! never exceed `memory_limit` bytes (default 64 MiB): an arrival beyond it is dropped with
//! reason `memory_limit`. The flow table holds at most `max_flows` 5-tuple flows (default
//! 1,024) and fragments are remembered for 4,096 datagrams.

use std::collections::VecDeque;

use hdrhistogram::Histogram;
use schedlab_core::config::TableReader;
use schedlab_core::{
    AnyScheduler, Colour, Conditioner, ConfigError, DropReason, Dropped, FlowId, Marking, Packet, Rate,
    Scheduler, TimeNs, Verdict,
};
use schedlab_sim::stats::DelayHistogram;
use schedlab_sim::{InputError, ReplayConfig, Scenario};
use serde_json::{json, Map, Value};

use crate::classify::{parse_frame, Classifier, Frame, MalformedReason, Rule, MAX_RULE_FLOW_ID};

/// Buffer the gateway gives a scheduler whose table sets no limit, bytes.
pub const DEFAULT_BUFFER_BYTES: u64 = 1 << 20;
/// Default of `[gateway] memory_limit`, bytes.
pub const DEFAULT_MEMORY_LIMIT: u64 = 64 << 20;
/// Largest `[gateway] busy_poll` / `--busy-poll`, ns: a longer spin is a dedicated core (the
/// loop wakes at least every 50 ms anyway).
pub const MAX_BUSY_POLL: TimeNs = 1_000_000_000;

/// Checks a busy-poll window (`[gateway] busy_poll` or `--busy-poll`), ns: the window, or the
/// rule it breaks.
pub fn check_busy_poll(window: TimeNs) -> Result<TimeNs, &'static str> {
    if window <= MAX_BUSY_POLL {
        Ok(window)
    } else {
        Err("must be at most 1s")
    }
}
/// Default of `[gateway] max_flows`.
pub const DEFAULT_MAX_FLOWS: usize = 1024;

/// Keys of the `[gateway]` table.
pub const GATEWAY_KEYS: &[&str] = &[
    "propagation_delay",
    "busy_poll",
    "max_flows",
    "memory_limit",
    "rule",
    "conditioner",
];

/// Why the gateway dropped a classified packet: the scheduler's reasons and the gateway's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GatewayDropReason {
    /// Dropped by the scheduler.
    Scheduler(DropReason),
    /// A new 5-tuple found the flow table full (`max_flows`).
    FlowTableFull,
    /// The frames held would exceed `memory_limit`.
    MemoryLimit,
    /// The egress socket refused the frame (for example larger than the egress MTU).
    TransmitError,
}

const REASON_COUNT: usize = 9;

impl GatewayDropReason {
    /// Every reason, in counter order.
    pub const ALL: [GatewayDropReason; REASON_COUNT] = [
        GatewayDropReason::Scheduler(DropReason::BufferFull),
        GatewayDropReason::Scheduler(DropReason::PushedOut),
        GatewayDropReason::Scheduler(DropReason::Late),
        GatewayDropReason::Scheduler(DropReason::InvalidPacket),
        GatewayDropReason::FlowTableFull,
        GatewayDropReason::MemoryLimit,
        GatewayDropReason::TransmitError,
        GatewayDropReason::Scheduler(DropReason::OutOfProfile),
        GatewayDropReason::Scheduler(DropReason::Threshold),
    ];

    /// The name used in the stats file.
    pub fn name(self) -> &'static str {
        match self {
            GatewayDropReason::Scheduler(reason) => reason.name(),
            GatewayDropReason::FlowTableFull => "flow_table_full",
            GatewayDropReason::MemoryLimit => "memory_limit",
            GatewayDropReason::TransmitError => "transmit_error",
        }
    }

    fn index(self) -> usize {
        match self {
            GatewayDropReason::Scheduler(DropReason::OutOfProfile) => 7,
            GatewayDropReason::Scheduler(DropReason::Threshold) => 8,
            GatewayDropReason::Scheduler(reason) => {
                DropReason::ALL.iter().position(|r| *r == reason).unwrap_or(3)
            }
            GatewayDropReason::FlowTableFull => 4,
            GatewayDropReason::MemoryLimit => 5,
            GatewayDropReason::TransmitError => 6,
        }
    }
}

/// Packet and byte counters of one flow, or of all classified packets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Packets classified into the flow.
    pub in_packets: u64,
    /// Their bytes (IP length).
    pub in_bytes: u64,
    /// Packets transmitted on the egress interface.
    pub sent_packets: u64,
    /// Their bytes.
    pub sent_bytes: u64,
    /// Packets dropped, by [`GatewayDropReason::ALL`] order.
    pub dropped_packets: [u64; REASON_COUNT],
    /// Bytes dropped.
    pub dropped_bytes: u64,
    /// Packets on the emulated link (dequeued, not yet transmitted).
    pub on_link_packets: u64,
    /// Their bytes.
    pub on_link_bytes: u64,
}

impl Tally {
    fn drop(&mut self, reason: GatewayDropReason, size: u64) {
        self.dropped_packets[reason.index()] += 1;
        self.dropped_bytes += size;
    }

    /// Packets dropped for any reason.
    pub fn dropped_total(&self) -> u64 {
        self.dropped_packets.iter().sum()
    }
}

/// The parsed `[gateway]` configuration plus the link of the replay configuration.
#[derive(Clone, Debug)]
pub struct GatewayConfig {
    /// Bottleneck rate.
    pub rate: Rate,
    /// Added after each packet's last bit, ns.
    pub propagation_delay: TimeNs,
    /// `[gateway] busy_poll`: how long the I/O loop keeps spinning on its receive rings after
    /// the last frame before it sleeps, ns (`None`: the default of
    /// `crate::linux::DEFAULT_BUSY_POLL`; `--busy-poll` overrides both).
    pub busy_poll: Option<TimeNs>,
    /// Most 5-tuple flows.
    pub max_flows: usize,
    /// Most frame bytes held.
    pub memory_limit: u64,
    /// Classification rules, first match wins.
    pub rules: Vec<Rule>,
    /// The DiffServ conditioner after classification (`[gateway.conditioner]`, the core's
    /// [`Conditioner`]: its rules may match the 5-tuple and set the flow), fresh.
    pub conditioner: Option<Conditioner>,
}

/// Reads the gateway's configuration: the same file as `schedlab replay` (`[link]`,
/// `[scheduler]`, `[flow_defaults]`, `[[flow]]`) plus the optional `[gateway]` table, and
/// builds the scheduler. `[[flow]]` ids are the flow ids that rules assign.
pub fn build(config: &ReplayConfig) -> Result<(GatewayConfig, AnyScheduler, Classifier), InputError> {
    let empty = toml::Table::new();
    let table = config.gateway.as_ref().unwrap_or(&empty);
    let mut reader = TableReader::new(table, "gateway");
    let read = |reader: &mut TableReader<'_>| -> Result<GatewayConfig, ConfigError> {
        let propagation_delay = reader.duration("propagation_delay")?.unwrap_or(0);
        let busy_poll = reader
            .duration("busy_poll")?
            .map(|window| check_busy_poll(window).map_err(|rule| reader.error("busy_poll", rule)))
            .transpose()?;
        let max_flows = reader
            .integer("max_flows", 1, 1 << 20)?
            .unwrap_or(DEFAULT_MAX_FLOWS as i64) as usize;
        let memory_limit = reader.size("memory_limit")?.unwrap_or(DEFAULT_MEMORY_LIMIT);
        if memory_limit < 65_536 {
            return Err(reader.error("memory_limit", "must be at least 64KiB (one largest frame)"));
        }
        let mut rules = Vec::new();
        match reader.value("rule") {
            None => {}
            Some(toml::Value::Array(items)) => {
                for (index, item) in items.iter().enumerate() {
                    let path = format!("gateway.rule[{index}]");
                    let toml::Value::Table(t) = item else {
                        return Err(ConfigError::new(
                            path,
                            item.to_string(),
                            "must be a table ([[gateway.rule]])",
                        ));
                    };
                    rules.push(Rule::read(t, &path)?);
                }
            }
            Some(_) => return Err(reader.error("rule", "must be an array of tables ([[gateway.rule]])")),
        }
        let conditioner = match reader.table("conditioner")? {
            Some(t) => Some(Conditioner::read(t, "gateway.conditioner")?),
            None => None,
        };
        Ok(GatewayConfig {
            rate: config.rate,
            propagation_delay,
            busy_poll,
            max_flows,
            memory_limit,
            rules,
            conditioner,
        })
    };
    let gateway = read(&mut reader).map_err(|e| config.error(e))?;
    reader.finish_with(GATEWAY_KEYS).map_err(|e| config.error(e))?;
    for (label, _, index) in &config.flows {
        if *label > MAX_RULE_FLOW_ID {
            return Err(config.error(ConfigError::new(
                format!("flow[{index}].id"),
                label.to_string(),
                format!("a gateway flow id must be at most {MAX_RULE_FLOW_ID} (the ids rules assign)"),
            )));
        }
    }
    let highest = gateway
        .rules
        .iter()
        .map(|r| r.flow as u64)
        .chain(config.flows.iter().map(|f| f.0))
        .max();
    let first_dynamic = highest.map_or(0, |h| h + 1) as FlowId;
    let mut with_buffer = config.clone();
    if !with_buffer.scheduler.contains_key("buffer") && !with_buffer.scheduler.contains_key("buffer_packets")
    {
        with_buffer
            .scheduler
            .insert("buffer".into(), toml::Value::Integer(DEFAULT_BUFFER_BYTES as i64));
    }
    let scheduler = with_buffer.build_scheduler(|label| Some(label as FlowId), first_dynamic)?;
    let classifier = Classifier::new(gateway.rules.clone(), first_dynamic, gateway.max_flows);
    Ok((gateway, scheduler, classifier))
}

/// The bottleneck of a single-bottleneck scenario: the last link of every source's path,
/// which must be the same link.
pub fn bottleneck(scenario: &Scenario) -> Result<usize, ConfigError> {
    let mut found = None;
    for (index, source) in scenario.sources.iter().enumerate() {
        if source.transport.is_some() && !matches!(source.arrivals, schedlab_sim::traffic::ArrivalModel::Bulk)
        {
            return Err(ConfigError::new(
                format!("source[{index}].arrivals.model"),
                format!("{:?}", schedlab_sim::scenario::model_name(&source.arrivals)),
                "a measured TCP source is a bulk transfer (Linux TCP sends for the whole run); \
                 finite transfers run in the simulator",
            ));
        }
        if source.lateness.is_some() {
            return Err(ConfigError::new(
                format!("source[{index}].lateness"),
                "{ … }",
                "the lateness measure needs each packet's service start on the first link, which only the simulator knows; run the scenario with schedlab run",
            ));
        }
        let last = *source.path.last().ok_or_else(|| {
            ConfigError::new(
                format!("source[{index}].path"),
                "[]",
                "a measured source needs a path",
            )
        })?;
        match found {
            None => found = Some(last),
            Some(link) if link == last => {}
            Some(link) => {
                return Err(ConfigError::new(
                    format!("source[{index}].path"),
                    format!("{:?}", scenario.links[last].name),
                    format!(
                        "a measured scenario has one bottleneck: every path must end at the same link \
                         ({:?} for the sources before)",
                        scenario.links[link].name
                    ),
                ))
            }
        }
    }
    found.ok_or_else(|| {
        ConfigError::new(
            "source",
            "(none)",
            "a measured scenario needs at least one source",
        )
    })
}

/// The gateway of a scenario's bottleneck link ([`bottleneck`]): its rate, propagation delay,
/// scheduler and per-flow parameters, and one rule per source (UDP, or TCP for a TCP source,
/// from port `port_base + flow` → the source's flow id and class), as `schedlab measure` uses
/// it. A TCP source's ACKs come back from the egress side and are forwarded unscheduled.
/// Links before the bottleneck (access links) are not emulated.
pub fn build_from_scenario(
    scenario: &Scenario,
    port_base: u16,
) -> Result<(GatewayConfig, AnyScheduler, Classifier), ConfigError> {
    let index = bottleneck(scenario)?;
    let mut link = scenario.links[index].clone();
    // The router-model keys of paper 001 are simulated only for now: refuse them here rather
    // than measure a different link than the scenario describes.
    let path = |key: &str| format!("link[{index}].{key}");
    if link.service.per_packet > 0 {
        return Err(ConfigError::new(
            path("service"),
            format!("\"{}ns\"", link.service.per_packet),
            "the gateway emulates a link at a rate; processing stages run in the simulator only",
        ));
    }
    if let Some(max_sojourn) = link.max_sojourn {
        return Err(ConfigError::new(
            path("max_sojourn"),
            format!("\"{max_sojourn}ns\""),
            "the sojourn limit runs in the simulator only",
        ));
    }
    if link.drop_policy.is_some() {
        return Err(ConfigError::new(
            path("drop_policy"),
            "(a link-dropping policy)",
            "link-dropping policies run in the simulator only",
        ));
    }
    if link.conditioner.is_some() {
        return Err(ConfigError::new(
            path("conditioner"),
            "(a traffic conditioner)",
            "schedlab measure does not carry a conditioner's counts into its results yet; \
             run it in the simulator, or in schedlab gateway as [gateway.conditioner]",
        ));
    }
    let rate = link.rate.ok_or_else(|| {
        ConfigError::new(path("rate"), "(missing)", "the gateway emulates a link at a rate")
    })?;
    if !link.scheduler.contains_key("buffer") && !link.scheduler.contains_key("buffer_packets") {
        link.scheduler
            .insert("buffer".into(), toml::Value::Integer(DEFAULT_BUFFER_BYTES as i64));
    }
    let scheduler = link.build_scheduler(index)?;
    let mut rules = Vec::new();
    for (i, source) in scenario.sources.iter().enumerate() {
        let port = port_base as u64 + source.flow as u64;
        if port > 65_535 || source.flow as u64 > MAX_RULE_FLOW_ID {
            return Err(ConfigError::new(
                format!("source[{i}].flow"),
                source.flow.to_string(),
                format!(
                    "a measured flow id must be at most {}",
                    (65_535 - port_base as u64).min(MAX_RULE_FLOW_ID)
                ),
            ));
        }
        let protocol = if source.transport.is_some() {
            crate::classify::PROTOCOL_TCP
        } else {
            crate::classify::PROTOCOL_UDP
        };
        rules.push(Rule {
            conditions: schedlab_core::conditioning::Match {
                protocol: Some(protocol),
                source_port: Some((port as u16, port as u16)),
                ..Default::default()
            },
            flow: source.flow,
            class: Some(source.class),
        });
    }
    let first_dynamic = scenario.sources.iter().map(|s| s.flow).max().map_or(0, |m| m + 1);
    let config = GatewayConfig {
        rate,
        propagation_delay: link.delay,
        busy_poll: None,
        max_flows: DEFAULT_MAX_FLOWS,
        memory_limit: DEFAULT_MEMORY_LIMIT,
        rules: rules.clone(),
        conditioner: None,
    };
    Ok((
        config,
        scheduler,
        Classifier::new(rules, first_dynamic, DEFAULT_MAX_FLOWS),
    ))
}

/// A TCP source of a measured scenario: what `schedlab measure` needs to run a Linux TCP bulk
/// sender for it in the sources' namespace (from port `port`, which the gateway's rule of
/// [`build_from_scenario`] maps to `flow`) and a receiver in the sink's.
#[derive(Clone, Debug, PartialEq)]
pub struct TcpEndpoint {
    /// Index of the source in the scenario.
    pub source: usize,
    /// Its flow id.
    pub flow: u32,
    /// The sender's TCP port (`port_base + flow`).
    pub port: u16,
    /// When it starts sending, seconds after the scenario's time 0.
    pub start_s: f64,
    /// When it stops, seconds (the source's `stop`, else the run's duration).
    pub stop_s: f64,
    /// Maximum segment size, payload bytes (set with `TCP_MAXSEG`).
    pub mss: u32,
    /// The scenario's variant (`newreno` or `sack`); both run Linux's `reno` congestion
    /// control with Linux's own loss recovery.
    pub variant: &'static str,
}

/// The TCP sources of a measured scenario (checked by [`bottleneck`]), in scenario order.
pub fn tcp_endpoints(scenario: &Scenario, port_base: u16) -> Vec<TcpEndpoint> {
    let duration = match scenario.run.length {
        schedlab_sim::scenario::RunLength::Duration(d) => d,
        _ => 0,
    };
    scenario
        .sources
        .iter()
        .enumerate()
        .filter_map(|(index, source)| {
            let transport = source.transport.as_ref()?;
            let stop = source.stop.map_or(duration, |s| s.min(duration));
            Some(TcpEndpoint {
                source: index,
                flow: source.flow,
                port: (port_base as u64 + source.flow as u64).min(65_535) as u16,
                start_s: source.start as f64 / 1e9,
                stop_s: stop as f64 / 1e9,
                mss: transport.tcp.mss,
                variant: match transport.tcp.variant {
                    schedlab_sim::tcp::TcpVariant::NewReno => "newreno",
                    schedlab_sim::tcp::TcpVariant::Sack => "sack",
                },
            })
        })
        .collect()
}

/// What the caller does with a frame it gave to [`Gateway::on_ingress`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ingress {
    /// Queued in the scheduler (or dropped and counted): nothing to do now.
    Scheduled,
    /// Not IP: transmit it unchanged, now.
    PassThrough,
}

/// A frame whose emulated transmission has ended: transmit it, then call
/// [`Gateway::complete`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Departure {
    /// Frame slot.
    pub slot: u32,
    /// Flow.
    pub flow: FlowId,
    /// IP length.
    pub size: u32,
    /// When the emulated link releases it, ns.
    pub release: TimeNs,
}

/// The forwarding engine.
pub struct Gateway {
    config: GatewayConfig,
    scheduler: AnyScheduler,
    classifier: Classifier,
    conditioner: Option<Conditioner>,
    frames: Vec<Vec<u8>>,
    free_slots: Vec<u32>,
    held_bytes: u64,
    link: VecDeque<Departure>,
    link_free_at: TimeNs,
    drops: Vec<Dropped>,
    flows: Vec<Tally>,
    total: Tally,
    received_frames: u64,
    passed_unscheduled: u64,
    reverse_frames: u64,
    malformed: [u64; 5],
    fragments: u64,
    pacing_error: DelayHistogram,
    pacing_error_sum: u128,
    pacing_error_max: u64,
    queue: QueueLength,
    ring_drops: u64,
}

/// The scheduler's backlog over time (packets waiting, not the one on the emulated link, as
/// the simulator's link queue): ∫ backlog dt since start and the largest backlog.
#[derive(Clone, Copy, Debug, Default)]
struct QueueLength {
    area_packets: u128,
    area_bytes: u128,
    changed_at: TimeNs,
    packets: u64,
    bytes: u64,
    max_packets: u64,
    max_bytes: u64,
}

impl QueueLength {
    /// Integrates the backlog up to `now`, then records the backlog from now on.
    fn set(&mut self, now: TimeNs, backlog: schedlab_core::Backlog) {
        let dt = now.saturating_sub(self.changed_at) as u128;
        self.area_packets += self.packets as u128 * dt;
        self.area_bytes += self.bytes as u128 * dt;
        self.changed_at = self.changed_at.max(now);
        self.packets = backlog.packets;
        self.bytes = backlog.bytes;
        self.max_packets = self.max_packets.max(backlog.packets);
        self.max_bytes = self.max_bytes.max(backlog.bytes);
    }

    /// (∫ packets dt, ∫ bytes dt) up to `now`, packet·ns and byte·ns.
    fn areas(&self, now: TimeNs) -> (u128, u128) {
        let dt = now.saturating_sub(self.changed_at) as u128;
        (
            self.area_packets + self.packets as u128 * dt,
            self.area_bytes + self.bytes as u128 * dt,
        )
    }
}

impl Gateway {
    /// An engine with the given configuration, scheduler and classifier (see [`build`]).
    pub fn new(config: GatewayConfig, scheduler: AnyScheduler, classifier: Classifier) -> Gateway {
        Gateway {
            conditioner: config.conditioner.clone(),
            config,
            scheduler,
            classifier,
            frames: Vec::new(),
            free_slots: Vec::new(),
            held_bytes: 0,
            link: VecDeque::new(),
            link_free_at: 0,
            drops: Vec::new(),
            flows: Vec::new(),
            total: Tally::default(),
            received_frames: 0,
            passed_unscheduled: 0,
            reverse_frames: 0,
            malformed: [0; 5],
            fragments: 0,
            pacing_error: DelayHistogram::new(),
            pacing_error_sum: 0,
            pacing_error_max: 0,
            queue: QueueLength::default(),
            ring_drops: 0,
        }
    }

    /// Counts frames the kernel dropped on the ingress side because the receive ring was full
    /// (the gateway was not scheduled in time): they never reached the gateway, so they are
    /// outside its exactly-once identities, and reported as `ring_drops`.
    pub fn on_ring_drops(&mut self, frames: u64) {
        self.ring_drops += frames;
    }

    /// The configuration.
    pub fn config(&self) -> &GatewayConfig {
        &self.config
    }

    /// The scheduler.
    pub fn scheduler(&self) -> &AnyScheduler {
        &self.scheduler
    }

    fn flow_tally(&mut self, flow: FlowId) -> &mut Tally {
        let index = flow as usize;
        if index >= self.flows.len() {
            self.flows.resize(index + 1, Tally::default());
        }
        &mut self.flows[index]
    }

    fn store(&mut self, frame: &[u8]) -> u32 {
        self.held_bytes += frame.len() as u64;
        match self.free_slots.pop() {
            Some(slot) => {
                let buffer = &mut self.frames[slot as usize];
                buffer.clear();
                buffer.extend_from_slice(frame);
                slot
            }
            None => {
                self.frames.push(frame.to_vec());
                (self.frames.len() - 1) as u32
            }
        }
    }

    fn release_slot(&mut self, slot: u32) {
        let buffer = &mut self.frames[slot as usize];
        self.held_bytes -= buffer.len() as u64;
        // Keep at most a jumbo frame's capacity per slot so that one burst of large frames
        // does not pin memory.
        if buffer.capacity() > 16_384 {
            *buffer = Vec::new();
        }
        self.free_slots.push(slot);
    }

    /// Counts a frame forwarded unscheduled from the egress side back to the ingress side.
    pub fn on_reverse(&mut self) {
        self.reverse_frames += 1;
    }

    /// Counts a frame that arrived on the ingress side but was cut short by the capture
    /// (longer than the receive slot).
    pub fn on_capture_truncated(&mut self) {
        self.received_frames += 1;
        self.malformed[4] += 1;
    }

    /// Takes a frame received on the ingress interface at `now`.
    pub fn on_ingress(&mut self, frame: &[u8], now: TimeNs) -> Ingress {
        self.received_frames += 1;
        let packet = match parse_frame(frame) {
            Frame::NonIp => {
                self.passed_unscheduled += 1;
                return Ingress::PassThrough;
            }
            Frame::Malformed(reason) => {
                self.malformed[MalformedReason::ALL
                    .iter()
                    .position(|r| *r == reason)
                    .unwrap_or(0)] += 1;
                return Ingress::Scheduled;
            }
            Frame::Ip(packet) => packet,
        };
        if packet.fragment.is_some() {
            self.fragments += 1;
        }
        let size = packet.ip_length as u64;
        self.total.in_packets += 1;
        self.total.in_bytes += size;
        let (flow, class) = match self.classifier.classify(&packet) {
            Ok(found) => found,
            Err(_) => {
                self.total.drop(GatewayDropReason::FlowTableFull, size);
                return Ingress::Scheduled;
            }
        };
        let mut descriptor = Packet::new(0, flow, packet.ip_length, now);
        descriptor.class = class;
        if let Some(conditioner) = &mut self.conditioner {
            // The frame's bytes are not rewritten: a marker's DSCP is seen by this conditioner
            // only (the class it sets is what the scheduler queues by).
            let mut marking = Marking {
                dscp: packet.dscp,
                colour: Colour::Green,
            };
            if conditioner.condition(&mut descriptor, &mut marking, Some(&packet.key), now) == Verdict::Drop {
                let reason = GatewayDropReason::Scheduler(DropReason::OutOfProfile);
                let tally = self.flow_tally(descriptor.flow);
                tally.in_packets += 1;
                tally.in_bytes += size;
                tally.drop(reason, size);
                self.total.drop(reason, size);
                return Ingress::Scheduled;
            }
        }
        let flow = descriptor.flow;
        let tally = self.flow_tally(flow);
        tally.in_packets += 1;
        tally.in_bytes += size;
        if self.held_bytes + frame.len() as u64 > self.config.memory_limit {
            self.flow_tally(flow).drop(GatewayDropReason::MemoryLimit, size);
            self.total.drop(GatewayDropReason::MemoryLimit, size);
            return Ingress::Scheduled;
        }
        let slot = self.store(frame);
        descriptor.id = slot as u64;
        self.drops.clear();
        self.scheduler.enqueue(descriptor, now, &mut self.drops);
        self.settle_drops();
        self.queue.set(now, self.scheduler.backlog());
        Ingress::Scheduled
    }

    fn settle_drops(&mut self) {
        if self.drops.is_empty() {
            return;
        }
        let drops = std::mem::take(&mut self.drops);
        for dropped in &drops {
            let reason = GatewayDropReason::Scheduler(dropped.reason);
            let size = dropped.packet.size as u64;
            self.flow_tally(dropped.packet.flow).drop(reason, size);
            self.total.drop(reason, size);
            self.release_slot(dropped.packet.id as u32);
        }
        self.drops = drops;
        self.drops.clear();
    }

    /// Moves packets from the scheduler onto the emulated link while it is free at `now`.
    pub fn service(&mut self, now: TimeNs) {
        while self.link_free_at <= now && self.scheduler.backlog().packets > 0 {
            self.drops.clear();
            let next = self.scheduler.dequeue(now, &mut self.drops);
            self.settle_drops();
            let Some(packet) = next else { break };
            let start = self.link_free_at.max(packet.arrival);
            let end = start + self.config.rate.transmission_time(packet.size as u64);
            self.link_free_at = end;
            let departure = Departure {
                slot: packet.id as u32,
                flow: packet.flow,
                size: packet.size,
                release: end + self.config.propagation_delay,
            };
            self.total.on_link_packets += 1;
            self.total.on_link_bytes += packet.size as u64;
            let tally = self.flow_tally(packet.flow);
            tally.on_link_packets += 1;
            tally.on_link_bytes += packet.size as u64;
            self.link.push_back(departure);
        }
        self.queue.set(now, self.scheduler.backlog());
    }

    /// The next time something is due: a release from the link, or the link becoming free
    /// (or the discipline's wake-up) while packets are queued. `None` when idle.
    pub fn next_deadline(&self, now: TimeNs) -> Option<TimeNs> {
        let release = self.link.front().map(|d| d.release);
        let dequeue = (self.scheduler.backlog().packets > 0).then(|| {
            let free = self.link_free_at.max(now);
            match self.scheduler.next_wakeup(now) {
                Some(w) => w.max(free),
                // A free link with a backlog the discipline would not release now and no
                // wake-up time: ask again in 100 us rather than spin.
                None if free <= now => now + 100_000,
                None => free,
            }
        });
        match (release, dequeue) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Moves up to `max` departures due at `now` into `out`.
    pub fn take_due(&mut self, now: TimeNs, max: usize, out: &mut Vec<Departure>) {
        while out.len() < max {
            match self.link.front() {
                Some(d) if d.release <= now => out.push(self.link.pop_front().expect("front exists")),
                _ => break,
            }
        }
    }

    /// Transmits every departure due at `now`, in batches of at most `max`: `transmit(frames,
    /// sent)` sends one batch, sets `sent[i]` to whether frame `i` left, and returns the time
    /// the batch was sent; each departure is then accounted ([`Gateway::complete`]). Returns
    /// how many departures were handled. `due` and `sent` are the caller's buffers.
    pub fn transmit_due(
        &mut self,
        now: TimeNs,
        max: usize,
        due: &mut Vec<Departure>,
        sent: &mut Vec<bool>,
        mut transmit: impl FnMut(&[&[u8]], &mut Vec<bool>) -> TimeNs,
    ) -> usize {
        let mut handled = 0;
        loop {
            due.clear();
            self.take_due(now, max, due);
            if due.is_empty() {
                return handled;
            }
            let frames: Vec<&[u8]> = due.iter().map(|d| self.frame(d.slot)).collect();
            let done = transmit(&frames, sent);
            for (departure, ok) in due.iter().zip(sent.iter()) {
                self.complete(*departure, *ok, done);
            }
            handled += due.len();
        }
    }

    /// The frame in `slot`.
    pub fn frame(&self, slot: u32) -> &[u8] {
        &self.frames[slot as usize]
    }

    /// Records the transmission (or its failure) of `departure` at `now`.
    pub fn complete(&mut self, departure: Departure, transmitted: bool, now: TimeNs) {
        let size = departure.size as u64;
        for tally in [&mut self.total, {
            let index = departure.flow as usize;
            &mut self.flows[index]
        }] {
            tally.on_link_packets -= 1;
            tally.on_link_bytes -= size;
            if transmitted {
                tally.sent_packets += 1;
                tally.sent_bytes += size;
            } else {
                tally.drop(GatewayDropReason::TransmitError, size);
            }
        }
        if transmitted {
            let late = now.saturating_sub(departure.release);
            self.pacing_error.record(late);
            self.pacing_error_sum += late as u128;
            self.pacing_error_max = self.pacing_error_max.max(late);
        }
        self.release_slot(departure.slot);
    }

    /// Counters of every flow seen, by flow id.
    pub fn flow_tallies(&self) -> impl Iterator<Item = (FlowId, &Tally)> {
        self.flows
            .iter()
            .enumerate()
            .filter(|(_, t)| t.in_packets > 0)
            .map(|(i, t)| (i as FlowId, t))
    }

    /// Counters over all classified packets.
    pub fn total(&self) -> &Tally {
        &self.total
    }

    /// Frames received on the ingress side.
    pub fn received_frames(&self) -> u64 {
        self.received_frames
    }

    /// Malformed frames, by [`MalformedReason::ALL`] order.
    pub fn malformed(&self) -> [u64; 5] {
        self.malformed
    }

    /// Checks the exactly-once identities (see the module documentation); `Err` names the
    /// first that fails.
    pub fn check_accounting(&self) -> Result<(), String> {
        let queued = |t: &Tally, backlog: u64| backlog + t.on_link_packets;
        let frames = self.passed_unscheduled + self.malformed.iter().sum::<u64>() + self.total.in_packets;
        if frames != self.received_frames {
            return Err(format!(
                "received {} frames but {} are accounted for",
                self.received_frames, frames
            ));
        }
        let total_queued = queued(&self.total, self.scheduler.backlog().packets);
        if self.total.in_packets != self.total.sent_packets + self.total.dropped_total() + total_queued {
            return Err(format!("total: {:?} with {} queued", self.total, total_queued));
        }
        for (flow, tally) in self.flow_tallies() {
            let flow_queued = queued(tally, self.scheduler.flow_backlog(flow).packets);
            if tally.in_packets != tally.sent_packets + tally.dropped_total() + flow_queued {
                return Err(format!("flow {flow}: {tally:?} with {flow_queued} queued"));
            }
        }
        Ok(())
    }

    fn tally_json(&self, tally: &Tally, queued_packets: u64, queued_bytes: u64) -> Map<String, Value> {
        let mut dropped = Map::new();
        for reason in GatewayDropReason::ALL {
            dropped.insert(reason.name().into(), json!(tally.dropped_packets[reason.index()]));
        }
        let mut map = Map::new();
        map.insert("in_packets".into(), json!(tally.in_packets));
        map.insert("in_bytes".into(), json!(tally.in_bytes));
        map.insert("sent_packets".into(), json!(tally.sent_packets));
        map.insert("sent_bytes".into(), json!(tally.sent_bytes));
        map.insert("dropped_packets".into(), json!(tally.dropped_total()));
        map.insert("dropped_bytes".into(), json!(tally.dropped_bytes));
        map.insert("dropped".into(), Value::Object(dropped));
        map.insert(
            "queued_packets".into(),
            json!(queued_packets + tally.on_link_packets),
        );
        map.insert("queued_bytes".into(), json!(queued_bytes + tally.on_link_bytes));
        map
    }

    /// The stats document written by `--stats` (see `docs/gateway.md`).
    pub fn stats_json(&self, uptime: TimeNs) -> Value {
        let backlog = self.scheduler.backlog();
        let mut total = self.tally_json(&self.total, backlog.packets, backlog.bytes);
        total.insert("received_frames".into(), json!(self.received_frames));
        total.insert("passed_unscheduled".into(), json!(self.passed_unscheduled));
        total.insert("fragments".into(), json!(self.fragments));
        total.insert("reverse_frames".into(), json!(self.reverse_frames));
        total.insert("ring_drops".into(), json!(self.ring_drops));
        let mut malformed = Map::new();
        for (reason, count) in MalformedReason::ALL.iter().zip(self.malformed) {
            malformed.insert(reason.name().into(), json!(count));
        }
        total.insert(
            "malformed_packets".into(),
            json!(self.malformed.iter().sum::<u64>()),
        );
        total.insert("malformed".into(), Value::Object(malformed));
        let flows: Vec<Value> = self
            .flow_tallies()
            .map(|(flow, tally)| {
                let b = self.scheduler.flow_backlog(flow);
                let mut row = Map::new();
                row.insert("flow".into(), json!(flow));
                row.insert(
                    "key".into(),
                    json!(self.classifier.key_of(flow).map(|k| k.to_string())),
                );
                row.extend(self.tally_json(tally, b.packets, b.bytes));
                Value::Object(row)
            })
            .collect();
        let error: Histogram<u64> = self.pacing_error.to_hdr();
        let count = error.len();
        let seconds = |ns: u64| ns as f64 / 1e9;
        let pacing = if count == 0 {
            json!({ "packets": 0 })
        } else {
            json!({
                "packets": count,
                "mean_s": self.pacing_error_sum as f64 / count as f64 / 1e9,
                "p50_s": seconds(error.value_at_quantile(0.5)),
                "p99_s": seconds(error.value_at_quantile(0.99)),
                "max_s": seconds(self.pacing_error_max),
            })
        };
        let counters: Map<String, Value> = self
            .scheduler
            .discipline_counters()
            .into_iter()
            .map(|(name, value)| (name.to_string(), json!(value)))
            .collect();
        let (area_packets, area_bytes) = self.queue.areas(uptime);
        let per_second = |area: u128| {
            if uptime > 0 {
                area as f64 / uptime as f64
            } else {
                0.0
            }
        };
        json!({
            "schedlab_version": env!("CARGO_PKG_VERSION"),
            "discipline": self.scheduler.id(),
            "rate_bps": self.config.rate.bits_per_second(),
            "propagation_delay_s": seconds(self.config.propagation_delay),
            "uptime_s": seconds(uptime),
            "accounting_ok": self.check_accounting().is_ok(),
            "total": Value::Object(total),
            "flows": flows,
            "pacing_error": pacing,
            "queue": {
                "area_packet_ns": u64::try_from(area_packets).unwrap_or(u64::MAX),
                "area_byte_ns": u64::try_from(area_bytes).unwrap_or(u64::MAX),
                "mean_packets": per_second(area_packets),
                "mean_bytes": per_second(area_bytes),
                "max_packets": self.queue.max_packets,
                "max_bytes": self.queue.max_bytes,
            },
            "discipline_counters": Value::Object(counters),
            "meters": self.meters_json(),
        })
    }

    /// Per meter of the conditioner: packets and bytes by colour and its drops.
    fn meters_json(&self) -> Vec<Value> {
        let Some(conditioner) = &self.conditioner else {
            return Vec::new();
        };
        conditioner
            .counters()
            .iter()
            .enumerate()
            .map(|(meter, counters)| {
                let mut row = Map::new();
                row.insert("meter".into(), json!(meter));
                for colour in Colour::ALL {
                    let c = colour as usize;
                    row.insert(format!("{}_packets", colour.name()), json!(counters.packets[c]));
                    row.insert(format!("{}_bytes", colour.name()), json!(counters.bytes[c]));
                }
                row.insert("dropped".into(), json!(counters.dropped));
                Value::Object(row)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::PacketBuilder;

    fn engine(text: &str) -> Gateway {
        let config = ReplayConfig::parse(text, "g.toml").unwrap();
        let (gateway, scheduler, classifier) = build(&config).unwrap();
        Gateway::new(gateway, scheduler, classifier)
    }

    #[test]
    fn a_tcp_bulk_source_gets_a_tcp_rule_and_an_endpoint_and_finite_transfers_are_refused() {
        let text = "[run]\nduration = \"3s\"\n[[link]]\nname = \"l\"\nrate = \"10Mbit\"\n\
            scheduler = { kind = \"drr\", quantum = 1500 }\n\
            [[source]]\nflow = 2\nname = \"U\"\npath = [\"l\"]\narrivals = { model = \"cbr\", rate_pps = 10 }\n\
            size = { dist = \"constant\", size = 500 }\n\
            [[source]]\nflow = 5\nname = \"T\"\npath = [\"l\"]\nstart = \"1s\"\n\
            transport = { kind = \"tcp\", mss = 1448, variant = \"sack\" }\narrivals = { model = \"bulk\" }\nack_delay = \"1ms\"\n";
        let scenario = schedlab_sim::validate_scenario_text(text, std::path::Path::new(".")).unwrap();
        let (config, _, _) = build_from_scenario(&scenario, 20_000).unwrap();
        let protocols: Vec<_> = config
            .rules
            .iter()
            .map(|r| (r.flow, r.conditions.protocol, r.conditions.source_port))
            .collect();
        assert_eq!(
            protocols,
            [
                (2, Some(crate::classify::PROTOCOL_UDP), Some((20_002, 20_002))),
                (5, Some(crate::classify::PROTOCOL_TCP), Some((20_005, 20_005)))
            ]
        );
        let endpoints = tcp_endpoints(&scenario, 20_000);
        assert_eq!(
            endpoints,
            [TcpEndpoint {
                source: 1,
                flow: 5,
                port: 20_005,
                start_s: 1.0,
                stop_s: 3.0,
                mss: 1448,
                variant: "sack"
            }]
        );
        let finite = text.replace(
            "arrivals = { model = \"bulk\" }",
            "arrivals = { model = \"poisson\", rate_pps = 10 }\nsize = { dist = \"constant\", size = 10000 }",
        );
        let scenario = schedlab_sim::validate_scenario_text(&finite, std::path::Path::new(".")).unwrap();
        let error = bottleneck(&scenario).unwrap_err().to_string();
        assert!(
            error.contains("source[1].arrivals.model") && error.contains("poisson"),
            "{error}"
        );
    }

    fn udp(source_port: u16, payload: usize) -> Vec<u8> {
        let mut frame = Vec::new();
        PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4([198, 18, 0, 2], [198, 19, 0, 2], 64)
            .udp(source_port, 9000)
            .write(&mut frame, &vec![0u8; payload])
            .unwrap();
        frame
    }

    /// Runs the engine in virtual time: returns (flow, release) of every departure.
    fn drain(g: &mut Gateway, mut now: TimeNs) -> Vec<(FlowId, TimeNs)> {
        let mut out = Vec::new();
        let mut due = Vec::new();
        while let Some(t) = g.next_deadline(now) {
            now = now.max(t);
            g.service(now);
            due.clear();
            g.take_due(now, 64, &mut due);
            for d in due.drain(..) {
                out.push((d.flow, d.release));
                g.complete(d, true, now);
            }
            g.check_accounting().unwrap();
        }
        out
    }

    const FIFO: &str =
        "[link]\nrate = \"8Mbit\"\n[scheduler]\nkind = \"fifo\"\n[gateway]\npropagation_delay = \"1ms\"\n";

    #[test]
    fn paces_at_the_link_rate_plus_propagation_delay() {
        let mut g = engine(FIFO);
        // 972-byte payload: IP length 1000 B = 1 ms at 8 Mbit/s.
        for _ in 0..3 {
            assert_eq!(g.on_ingress(&udp(5000, 972), 0), Ingress::Scheduled);
        }
        assert_eq!(g.on_ingress(&udp(5000, 972), 10_000_000), Ingress::Scheduled);
        let releases: Vec<TimeNs> = drain(&mut g, 0).iter().map(|d| d.1).collect();
        assert_eq!(releases, vec![2_000_000, 3_000_000, 4_000_000, 12_000_000]);
        let stats = g.stats_json(0);
        assert_eq!(stats["total"]["sent_packets"], 4);
        assert_eq!(stats["total"]["sent_bytes"], 4000);
        assert_eq!(stats["flows"][0]["key"], "udp 198.18.0.2:5000 > 198.19.0.2:9000");
        assert_eq!(stats["accounting_ok"], true);
    }

    #[test]
    fn late_wakeups_do_not_slow_the_link() {
        let mut g = engine(FIFO);
        for _ in 0..4 {
            g.on_ingress(&udp(5000, 972), 0);
        }
        // The gateway only gets to run at 2.5 ms: the first three packets' emulated
        // transmissions still end at 1, 2, 3 ms, so releases stay at 2, 3, 4, 5 ms.
        g.service(2_500_000);
        let mut due = Vec::new();
        g.take_due(2_500_000, 64, &mut due);
        assert_eq!(due.iter().map(|d| d.release).collect::<Vec<_>>(), vec![2_000_000]);
        for d in due.drain(..) {
            g.complete(d, true, 2_500_000);
        }
        let rest: Vec<TimeNs> = drain(&mut g, 2_500_000).iter().map(|d| d.1).collect();
        assert_eq!(rest, vec![3_000_000, 4_000_000, 5_000_000]);
        assert_eq!(g.stats_json(0)["pacing_error"]["max_s"], 0.0005);
        // The backlog as the gateway held it: 4 packets until its wake-up at 2.5 ms, then 1
        // until 3 ms: 10.5 packet·ms; over 5 ms of uptime a mean of 2.1 packets.
        let queue = &g.stats_json(5_000_000)["queue"];
        assert_eq!(queue["area_packet_ns"], 10_500_000);
        assert_eq!(queue["area_byte_ns"], 10_500_000_000u64);
        assert_eq!(queue["mean_packets"], 2.1);
        assert_eq!(queue["max_packets"], 4);
        assert_eq!(queue["max_bytes"], 4000);
    }

    #[test]
    fn non_ip_passes_and_malformed_is_counted_while_forwarding_continues() {
        let mut g = engine(FIFO);
        let mut arp = vec![0xff; 6];
        arp.extend([2, 0, 0, 0, 0, 1, 0x08, 0x06]);
        arp.extend([0u8; 28]);
        assert_eq!(g.on_ingress(&arp, 0), Ingress::PassThrough);
        let mut bad = udp(5000, 100);
        bad[14] = 0x42;
        g.on_ingress(&bad, 0);
        g.on_ingress(&udp(5000, 100)[..30], 0);
        g.on_ingress(&udp(5000, 100), 0);
        g.check_accounting().unwrap();
        assert_eq!(drain(&mut g, 0).len(), 1);
        let stats = g.stats_json(0);
        assert_eq!(stats["total"]["received_frames"], 4);
        assert_eq!(stats["total"]["passed_unscheduled"], 1);
        assert_eq!(stats["total"]["malformed"]["bad_ip_header"], 1);
        assert_eq!(stats["total"]["malformed"]["truncated"], 1);
        assert_eq!(stats["total"]["sent_packets"], 1);
    }

    #[test]
    fn drr_shares_follow_the_quanta_and_every_packet_is_accounted_once() {
        let mut g = engine(
            "[link]\nrate = \"10Mbit\"\n[scheduler]\nkind = \"drr\"\nquantum = 1500\nbuffer_packets = 60\ndrop_policy = \"longest_queue_drop\"\n\
             [[flow]]\nid = 1\nquantum = 3000\n[[flow]]\nid = 2\nquantum = 1500\n\
             [gateway]\n[[gateway.rule]]\nflow = 1\nsource_port = 5001\n[[gateway.rule]]\nflow = 2\nsource_port = 5002\n",
        );
        // Both flows offer 1000-byte packets at 4x the link rate for 1 s.
        let mut sent = [0u64; 3];
        let mut due = Vec::new();
        let mut now = 0;
        while now < 1_000_000_000 {
            g.on_ingress(&udp(5001, 972), now);
            g.on_ingress(&udp(5002, 972), now);
            g.service(now);
            due.clear();
            g.take_due(now, 64, &mut due);
            for d in due.drain(..) {
                sent[d.flow as usize] += d.size as u64;
                g.complete(d, true, now);
            }
            g.check_accounting().unwrap();
            now += 400_000;
        }
        let ratio = sent[1] as f64 / sent[2] as f64;
        assert!((ratio - 2.0).abs() < 0.02, "{ratio}");
        let total = g.total();
        assert!(total.dropped_total() > 0);
        assert_eq!(g.stats_json(0)["accounting_ok"], true);
    }

    /// A hierarchy on real frames: strict priority over two FIFO classes, class 1 (UDP from
    /// port 5001, set by the conditioner's MF rule) behind a 2000-byte threshold dropper: of a
    /// burst of five 1000-byte packets it keeps two and drops three (reason `threshold`);
    /// class 0 goes first.
    #[test]
    fn a_hierarchy_with_a_threshold_dropper_runs_on_real_frames() {
        let mut g = engine(
            "[link]\nrate = \"10Mbit\"\n[scheduler]\nkind = \"priority\"\n\
             classes = [ { kind = \"fifo\" }, { kind = \"fifo\", threshold = 2000 } ]\n\
             [gateway.conditioner]\nclassify = [ { protocol = \"udp\", source_port = 5001, class = 1, flow = 7 } ]\n",
        );
        for _ in 0..5 {
            g.on_ingress(&udp(5001, 972), 0);
        }
        g.on_ingress(&udp(5002, 972), 0);
        g.check_accounting().unwrap();
        let stats = g.stats_json(0);
        assert_eq!(stats["total"]["dropped"]["threshold"], 3);
        let order: Vec<FlowId> = drain(&mut g, 0).iter().map(|d| d.0).collect();
        assert_eq!(order.len(), 3);
        assert_ne!(order[0], 7, "class 0 first: {order:?}");
        assert_eq!(&order[1..], &[7, 7]);
        g.check_accounting().unwrap();
    }

    /// The core's conditioner on real frames: an MF rule (UDP from port 5001) puts the packets
    /// in flow 7, class 1; a 3000-byte token bucket passes three 1000-byte packets of a burst
    /// and the absolute dropper drops the other two; port 5002 is not metered.
    #[test]
    fn the_conditioner_classifies_meters_and_drops_out_of_profile_frames() {
        let mut g = engine(
            "[link]\nrate = \"10Mbit\"\n[scheduler]\nkind = \"priority\"\n\
             [gateway.conditioner]\nclassify = [ { protocol = \"udp\", source_port = 5001, class = 1, flow = 7 } ]\n\
             meter = [ { class = 1, kind = \"token_bucket\", rate = \"1Mbit\", bucket = 3000 } ]\n",
        );
        for _ in 0..5 {
            g.on_ingress(&udp(5001, 972), 0);
            g.on_ingress(&udp(5002, 972), 0);
        }
        g.check_accounting().unwrap();
        let stats = g.stats_json(0);
        assert_eq!(stats["total"]["dropped"]["out_of_profile"], 2);
        let meter = &stats["meters"][0];
        assert_eq!(
            (meter["green_packets"].as_u64(), meter["red_packets"].as_u64()),
            (Some(3), Some(2))
        );
        assert_eq!(meter["green_bytes"], 3000);
        assert_eq!(meter["dropped"], 2);
        let flow1 = stats["flows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["flow"] == 7)
            .unwrap();
        assert_eq!(flow1["in_packets"], 5);
        assert_eq!(flow1["dropped"]["out_of_profile"], 2);
        // Priority by class: the conditioner's class 1 goes after the unmetered class-0 flow.
        let order: Vec<FlowId> = drain(&mut g, 0).iter().map(|d| d.0).collect();
        assert_eq!(order.len(), 8);
        assert!(order[..5].iter().all(|&f| f != 7), "{order:?}");
        let e = build(&ReplayConfig::parse("[link]\nrate = \"1Mbit\"\n[scheduler]\nkind = \"fifo\"\n[gateway.conditioner]\nmeter = [ { kind = \"srtcm\" } ]\n", "g.toml").unwrap())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("gateway.conditioner.meter[0].cir"), "{e}");
    }

    #[test]
    fn memory_and_flow_table_limits_drop_with_their_reason() {
        let mut g = engine(
            "[link]\nrate = \"1Mbit\"\n[scheduler]\nkind = \"fifo\"\nbuffer = \"10MB\"\n\
             [gateway]\nmemory_limit = \"64KiB\"\nmax_flows = 1\n",
        );
        for _ in 0..100 {
            g.on_ingress(&udp(5000, 1000), 0);
        }
        g.on_ingress(&udp(5001, 1000), 0);
        let stats = g.stats_json(0);
        assert_eq!(stats["total"]["dropped"]["flow_table_full"], 1);
        let kept = stats["total"]["queued_packets"].as_u64().unwrap();
        assert_eq!(kept, 65_536 / 1042);
        assert_eq!(
            stats["total"]["dropped"]["memory_limit"].as_u64().unwrap(),
            100 - kept
        );
        g.check_accounting().unwrap();
    }

    #[test]
    fn busy_poll_is_read_with_its_unit_and_absent_by_default() {
        let base = "[link]\nrate = \"8Mbit\"\n[scheduler]\nkind = \"fifo\"\n";
        let read = |text: &str| {
            build(&ReplayConfig::parse(text, "g.toml").unwrap())
                .unwrap()
                .0
                .busy_poll
        };
        assert_eq!(read(base), None);
        assert_eq!(
            read(&format!("{base}[gateway]\nbusy_poll = \"200us\"\n")),
            Some(200_000)
        );
        assert_eq!(read(&format!("{base}[gateway]\nbusy_poll = \"0us\"\n")), Some(0));
    }

    #[test]
    fn configuration_errors_name_file_key_and_value() {
        let error = |text: &str| {
            ReplayConfig::parse(text, "g.toml")
                .and_then(|c| build(&c).map(|_| ()))
                .unwrap_err()
                .to_string()
        };
        let base = "[link]\nrate = \"8Mbit\"\n[scheduler]\nkind = \"fifo\"\n";
        let e = error(&format!("{base}[gateway]\npropagation_delay = \"soon\"\n"));
        assert!(
            e.starts_with("g.toml:6: gateway.propagation_delay = \"soon\": "),
            "{e}"
        );
        assert!(
            error(&format!("{base}[gateway]\nmax_flow = 3\n")).contains("gateway.max_flow = 3: unknown key")
        );
        assert!(error(&format!("{base}[[flow]]\nid = 70000\n")).contains("flow[0].id = 70000"));
        assert!(error(&format!("{base}[gateway]\nbusy_poll = \"2s\"\n"))
            .contains("gateway.busy_poll = \"2s\": must be at most 1s"),);
        assert!(error(&format!("{base}[gateway]\nbusy_poll = 200\n"))
            .contains("gateway.busy_poll = 200: must be a duration with a unit"));
        assert!(error(&format!(
            "{base}[gateway]\n[[gateway.rule]]\nflow = 1\nsource = \"x\"\n"
        ))
        .contains("gateway.rule[0].source = \"x\""));
    }
}
