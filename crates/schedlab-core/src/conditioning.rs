//! DiffServ traffic conditioning: the classifier, meter, marker and absolute dropper of a
//! DiffServ router, as Yokota, Kato and Tominaga build it (paper 003, §4: "a Behavior Aggregate
//! (BA) Classifier and a Multi Field (MF) Classifier … a two-parameter token bucket (TB) meter,
//! and for out-of-profile packets, an absolute dropper"), with the elements of RFC 2475 §2.3.3
//! and the three-colour meters of RFC 2697 (srTCM) and RFC 2698 (trTCM).
//!
//! A [`Conditioner`] sits on a link in front of its scheduler (and its link-dropping policy);
//! the simulator and the gateway drive the same object. For each arriving packet:
//!
//! 1. **Classifier** — the first [`ClassifierRule`] whose conditions all hold sets the packet's
//!    class (and, optionally, its flow). A rule with only `dscp` is the BA classifier; a rule
//!    with addresses, protocol or ports is the MF classifier. No match: the packet keeps its
//!    class and flow.
//! 2. **Meter** — the first [`Profile`] whose selector (class, flow, or every packet) matches
//!    meters the packet and gives it a [`Colour`]. No matching profile: the packet passes
//!    unmetered with its colour unchanged.
//! 3. **Action** per colour ([`Action`]): pass, mark (set the DSCP and/or the class: the
//!    marker), or drop (the absolute dropper; [`crate::DropReason::OutOfProfile`]).
//!
//! The packet's DSCP and colour are not in the [`Packet`] descriptor: the driver keeps them
//! beside it in a [`Marking`] (the simulator per packet in flight, the gateway from the IP
//! header), so that a marking made at one link is what a BA classifier or a colour-aware meter
//! sees at the next.
//!
//! ## Meters (paper names → code)
//!
//! | paper / RFC | `kind` | parameters | colours |
//! |---|---|---|---|
//! | 003 §4 two-parameter TB meter (rate `r`, bucket `b`) | `token_bucket` | `rate`, `bucket` | green (in profile), red (out) |
//! | RFC 2697 srTCM (CIR, CBS, EBS; buckets C, E; counts Tc, Te) | `srtcm` | `cir`, `cbs`, `ebs` | green, yellow, red |
//! | RFC 2698 trTCM (PIR, PBS, CIR, CBS; buckets P, C; counts Tp, Tc) | `trtcm` | `cir`, `cbs`, `pir`, `pbs` | green, yellow, red |
//!
//! Every bucket starts full (RFC 2697 §3, RFC 2698 §3). Token arithmetic is exact: a count is
//! kept in bits × 10⁹ (a byte is 8·10⁹) and grows by `rate · Δt` (bit/s × ns), so the RFCs'
//! "incremented by one CIR times per second" is followed without rounding. srTCM: tokens that
//! C cannot hold overflow into E. With `colour_aware = true` the meter follows the RFCs'
//! colour-aware rules on the packet's incoming colour (a packet never gets a better colour);
//! colour-blind meters ignore it.
//!
//! Invariants (tested): over any interval starting at an arrival with full buckets, the
//! bytes coloured green are at most `CBS + CIR·t` (srTCM, trTCM, token bucket with `b`, `r`),
//! green and yellow together at most `CBS + EBS + CIR·t` (srTCM) and `PBS + PIR·t` (trTCM);
//! every packet gets exactly one colour and one action; a colour-aware meter never improves a
//! colour.
//!
//! Choices where the paper is silent:
//! * Paper 003 names its meter's parameters but not their units; `bucket` is in bytes like
//!   every size in schedlab (its "L^max × b" suggests packets: multiply by the MTU).
//! * A packet larger than a bucket's depth can never conform to it: it is red (RFC 2697/2698
//!   say the same by their inequalities).
//! * Default actions: green and yellow pass, red is dropped (the absolute dropper of
//!   out-of-profile packets); each can be set.
//! * Packets no rule classifies keep the class they arrived with (the simulator: the source's
//!   `class`; the gateway: its own rules or the DSCP).
//! * An unmarked packet is green (what a colour-aware meter assumes of uncoloured traffic).

use std::net::IpAddr;

use crate::config::{ConfigError, TableReader};
use crate::packet::{FlowId, Packet, MAX_FLOW_ID};
use crate::time::{Rate, TimeNs};

/// Token units per byte: counts are bits × 10⁹ so that `rate (bit/s) × Δt (ns)` adds exactly.
const UNITS_PER_BYTE: u128 = 8 * 1_000_000_000;

/// IP protocol number of TCP.
pub const PROTOCOL_TCP: u8 = 6;
/// IP protocol number of UDP.
pub const PROTOCOL_UDP: u8 = 17;

/// A token bucket of `depth` bytes filled at `rate`, full at time 0, with exact arithmetic.
/// The meters here and the simulator's (σ, ρ) shaper count tokens with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenBucket {
    depth: u128,
    rate: u128,
    tokens: u128,
    last: TimeNs,
}

impl TokenBucket {
    /// A full bucket of `depth` bytes filled at `rate`.
    pub fn new(depth: u64, rate: Rate) -> TokenBucket {
        let depth = depth as u128 * UNITS_PER_BYTE;
        TokenBucket {
            depth,
            rate: rate.bits_per_second() as u128,
            tokens: depth,
            last: 0,
        }
    }

    /// Depth in bytes.
    pub fn depth_bytes(&self) -> u64 {
        (self.depth / UNITS_PER_BYTE) as u64
    }

    /// Adds the tokens of the time from the last fill to `now` (a `now` before it adds none);
    /// returns the tokens beyond the depth that did not fit (for srTCM's overflow into E).
    #[inline]
    pub fn fill(&mut self, now: TimeNs) -> u128 {
        if now <= self.last {
            return 0;
        }
        let total = self.tokens + (now - self.last) as u128 * self.rate;
        self.last = now;
        self.tokens = total.min(self.depth);
        total - self.tokens
    }

    /// The time of the last fill (0 before any).
    pub fn last_fill(&self) -> TimeNs {
        self.last
    }

    /// Adds `units` of overflow from another bucket (srTCM's E), up to the depth.
    #[inline]
    fn add(&mut self, units: u128) {
        self.tokens = (self.tokens + units).min(self.depth);
    }

    /// Whether the bucket holds `size` bytes of tokens.
    #[inline]
    pub fn holds(&self, size: u32) -> bool {
        self.tokens >= size as u128 * UNITS_PER_BYTE
    }

    /// Takes `size` bytes of tokens (at most what the bucket holds).
    #[inline]
    pub fn take(&mut self, size: u32) {
        self.tokens -= (size as u128 * UNITS_PER_BYTE).min(self.tokens);
    }

    /// How long after the last fill until the bucket holds `size` bytes (`size` capped at
    /// the depth), ns, rounded up.
    pub fn wait_for(&self, size: u32) -> TimeNs {
        let need = (size as u128 * UNITS_PER_BYTE).min(self.depth);
        if self.tokens >= need {
            0
        } else {
            (need - self.tokens).div_ceil(self.rate) as TimeNs
        }
    }
}

/// A packet's colour (RFC 2697/2698; the two-parameter meter uses green and red only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Colour {
    /// Conforming (in profile).
    #[default]
    Green,
    /// Exceeding the committed but not the excess or peak profile.
    Yellow,
    /// Out of profile.
    Red,
}

impl Colour {
    /// Every colour, in counter order.
    pub const ALL: [Colour; 3] = [Colour::Green, Colour::Yellow, Colour::Red];

    /// The name used in output files.
    pub fn name(self) -> &'static str {
        match self {
            Colour::Green => "green",
            Colour::Yellow => "yellow",
            Colour::Red => "red",
        }
    }
}

/// What a driver keeps beside a packet for conditioning: its DSCP and its colour.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Marking {
    /// The DiffServ code point (0–63).
    pub dscp: u8,
    /// The colour a meter gave it (green when unmarked).
    pub colour: Colour,
}

/// The 5-tuple of an IP packet (ports 0 for protocols without ports).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowKey {
    /// Source address.
    pub source: IpAddr,
    /// Destination address.
    pub destination: IpAddr,
    /// IP protocol number.
    pub protocol: u8,
    /// Source port.
    pub source_port: u16,
    /// Destination port.
    pub destination_port: u16,
}

impl std::fmt::Display for FlowKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self.protocol {
            PROTOCOL_TCP => "tcp".to_string(),
            PROTOCOL_UDP => "udp".to_string(),
            other => format!("proto{other}"),
        };
        let endpoint = |address: IpAddr, port: u16| match address {
            IpAddr::V4(a) => format!("{a}:{port}"),
            IpAddr::V6(a) => format!("[{a}]:{port}"),
        };
        write!(
            f,
            "{name} {} > {}",
            endpoint(self.source, self.source_port),
            endpoint(self.destination, self.destination_port)
        )
    }
}

/// An address prefix (`198.18.0.0/15`, `2001:db8::/32`, or a host address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prefix {
    address: IpAddr,
    length: u8,
}

impl Prefix {
    /// Parses `address/length` (a bare address is a host prefix).
    pub fn parse(text: &str) -> Result<Prefix, String> {
        let (address, length) = match text.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (text, None),
        };
        let address: IpAddr = address
            .trim()
            .parse()
            .map_err(|_| "must be an IPv4 or IPv6 address with an optional /length".to_string())?;
        let max = if address.is_ipv4() { 32 } else { 128 };
        let length = match length {
            None => max,
            Some(l) => match l.trim().parse::<u8>() {
                Ok(l) if l <= max => l,
                _ => return Err(format!("the prefix length must be an integer from 0 to {max}")),
            },
        };
        Ok(Prefix { address, length })
    }

    /// Whether `address` lies in the prefix.
    pub fn contains(&self, address: IpAddr) -> bool {
        fn masked(bits: u128, length: u8, width: u8) -> u128 {
            if length == 0 {
                0
            } else {
                bits >> (width - length)
            }
        }
        match (self.address, address) {
            (IpAddr::V4(p), IpAddr::V4(a)) => {
                masked(u32::from(p) as u128, self.length, 32) == masked(u32::from(a) as u128, self.length, 32)
            }
            (IpAddr::V6(p), IpAddr::V6(a)) => {
                masked(u128::from(p), self.length, 128) == masked(u128::from(a), self.length, 128)
            }
            _ => false,
        }
    }
}

/// The conditions of a classifier rule; every condition given must hold. Only `dscp`: the BA
/// classifier; with addresses, protocol or ports: the MF classifier.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Match {
    /// DSCP to match.
    pub dscp: Option<u8>,
    /// Source prefix.
    pub source: Option<Prefix>,
    /// Destination prefix.
    pub destination: Option<Prefix>,
    /// IP protocol number.
    pub protocol: Option<u8>,
    /// Source port range (inclusive).
    pub source_port: Option<(u16, u16)>,
    /// Destination port range (inclusive).
    pub destination_port: Option<(u16, u16)>,
}

/// The keys of [`Match`] in a table.
pub const MATCH_KEYS: &[&str] = &[
    "dscp",
    "source",
    "destination",
    "protocol",
    "source_port",
    "destination_port",
];

fn port_range(reader: &mut TableReader<'_>, key: &'static str) -> Result<Option<(u16, u16)>, ConfigError> {
    const RULE: &str = "must be a port (0 to 65535) or a range \"LOW-HIGH\" with LOW <= HIGH";
    match reader.value(key) {
        None => Ok(None),
        Some(toml::Value::Integer(p)) if (0..=65_535).contains(p) => Ok(Some((*p as u16, *p as u16))),
        Some(toml::Value::String(s)) => {
            let parsed = s.split_once('-').and_then(|(a, b)| {
                let a: u16 = a.trim().parse().ok()?;
                let b: u16 = b.trim().parse().ok()?;
                (a <= b).then_some((a, b))
            });
            parsed.map(Some).ok_or_else(|| reader.error(key, RULE))
        }
        Some(_) => Err(reader.error(key, RULE)),
    }
}

fn prefix(reader: &mut TableReader<'_>, key: &'static str) -> Result<Option<Prefix>, ConfigError> {
    match reader.string(key)? {
        None => Ok(None),
        Some(text) => Prefix::parse(text)
            .map(Some)
            .map_err(|rule| reader.error(key, rule)),
    }
}

impl Match {
    /// Reads the [`MATCH_KEYS`] of a table (the caller finishes the reader).
    pub fn read(reader: &mut TableReader<'_>) -> Result<Match, ConfigError> {
        let dscp = reader.integer("dscp", 0, 63)?.map(|d| d as u8);
        let protocol = match reader.value("protocol") {
            None => None,
            Some(toml::Value::String(s)) if s == "udp" => Some(PROTOCOL_UDP),
            Some(toml::Value::String(s)) if s == "tcp" => Some(PROTOCOL_TCP),
            Some(toml::Value::String(s)) if s == "icmp" => Some(1),
            Some(toml::Value::String(s)) if s == "icmpv6" => Some(58),
            Some(toml::Value::Integer(p)) if (0..=255).contains(p) => Some(*p as u8),
            Some(_) => {
                return Err(reader.error(
                    "protocol",
                    "must be \"udp\", \"tcp\", \"icmp\", \"icmpv6\" or a protocol number from 0 to 255",
                ))
            }
        };
        Ok(Match {
            dscp,
            source: prefix(reader, "source")?,
            destination: prefix(reader, "destination")?,
            protocol,
            source_port: port_range(reader, "source_port")?,
            destination_port: port_range(reader, "destination_port")?,
        })
    }

    /// The first key of a condition on the 5-tuple (an MF rule), `None` for a DSCP-only rule.
    pub fn flow_key_field(&self) -> Option<&'static str> {
        [
            ("source", self.source.is_some()),
            ("destination", self.destination.is_some()),
            ("protocol", self.protocol.is_some()),
            ("source_port", self.source_port.is_some()),
            ("destination_port", self.destination_port.is_some()),
        ]
        .into_iter()
        .find_map(|(key, set)| set.then_some(key))
    }

    /// Whether the rule needs the 5-tuple (an MF rule) rather than only the DSCP.
    pub fn needs_flow_key(&self) -> bool {
        self.flow_key_field().is_some()
    }

    /// Whether a packet with `dscp` and 5-tuple `key` matches (without a key, only rules that
    /// do not need one can).
    pub fn matches(&self, key: Option<&FlowKey>, dscp: u8) -> bool {
        if self.dscp.is_some_and(|d| d != dscp) {
            return false;
        }
        let Some(key) = key else {
            return !self.needs_flow_key();
        };
        let in_range =
            |range: Option<(u16, u16)>, port: u16| range.is_none_or(|(a, b)| (a..=b).contains(&port));
        self.protocol.is_none_or(|p| p == key.protocol)
            && self.source.is_none_or(|p| p.contains(key.source))
            && self.destination.is_none_or(|p| p.contains(key.destination))
            && in_range(self.source_port, key.source_port)
            && in_range(self.destination_port, key.destination_port)
    }
}

/// A classifier rule of a conditioner: conditions, and the class and/or flow a match gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassifierRule {
    /// The conditions.
    pub conditions: Match,
    /// The class a matching packet is queued in.
    pub class: Option<u8>,
    /// The flow a matching packet joins.
    pub flow: Option<FlowId>,
}

/// Which meter and its parameters (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MeterKind {
    /// Paper 003's two-parameter token bucket: rate `r`, bucket `b` bytes.
    TokenBucket {
        /// Token rate.
        rate: Rate,
        /// Bucket depth, bytes.
        bucket: u64,
    },
    /// RFC 2697 single-rate three-colour marker.
    SingleRateThreeColour {
        /// Committed information rate.
        cir: Rate,
        /// Committed burst size, bytes.
        cbs: u64,
        /// Excess burst size, bytes.
        ebs: u64,
    },
    /// RFC 2698 two-rate three-colour marker.
    TwoRateThreeColour {
        /// Committed information rate.
        cir: Rate,
        /// Committed burst size, bytes.
        cbs: u64,
        /// Peak information rate (≥ `cir`).
        pir: Rate,
        /// Peak burst size, bytes.
        pbs: u64,
    },
}

/// A meter with its buckets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meter {
    kind: MeterKind,
    colour_aware: bool,
    /// token_bucket: the bucket; srTCM: C; trTCM: C.
    committed: TokenBucket,
    /// srTCM: E; trTCM: P; token_bucket: unused.
    second: TokenBucket,
}

impl Meter {
    /// A meter of `kind`, buckets full; `colour_aware` selects the RFCs' colour-aware mode.
    pub fn new(kind: MeterKind, colour_aware: bool) -> Meter {
        let (committed, second) = match kind {
            MeterKind::TokenBucket { rate, bucket } => {
                (TokenBucket::new(bucket, rate), TokenBucket::new(0, rate))
            }
            MeterKind::SingleRateThreeColour { cir, cbs, ebs } => {
                // E is filled only by C's overflow: its own rate is never used.
                (TokenBucket::new(cbs, cir), TokenBucket::new(ebs, cir))
            }
            MeterKind::TwoRateThreeColour { cir, cbs, pir, pbs } => {
                (TokenBucket::new(cbs, cir), TokenBucket::new(pbs, pir))
            }
        };
        Meter {
            kind,
            colour_aware,
            committed,
            second,
        }
    }

    /// The meter's parameters.
    pub fn kind(&self) -> &MeterKind {
        &self.kind
    }

    /// Colours a packet of `size` bytes arriving at `now` (in time order) whose incoming
    /// colour is `incoming` (ignored by a colour-blind meter), taking its tokens.
    #[inline]
    pub fn colour(&mut self, size: u32, now: TimeNs, incoming: Colour) -> Colour {
        let incoming = if self.colour_aware {
            incoming
        } else {
            Colour::Green
        };
        match self.kind {
            MeterKind::TokenBucket { .. } => {
                self.committed.fill(now);
                if incoming == Colour::Green && self.committed.holds(size) {
                    self.committed.take(size);
                    Colour::Green
                } else {
                    Colour::Red
                }
            }
            MeterKind::SingleRateThreeColour { .. } => {
                // RFC 2697 §3: C first; what C cannot hold goes to E. (E's own timestamp is
                // not used: it only receives C's overflow.)
                let overflow = self.committed.fill(now);
                self.second.add(overflow);
                if incoming == Colour::Green && self.committed.holds(size) {
                    self.committed.take(size);
                    Colour::Green
                } else if incoming != Colour::Red && self.second.holds(size) {
                    self.second.take(size);
                    Colour::Yellow
                } else {
                    Colour::Red
                }
            }
            MeterKind::TwoRateThreeColour { .. } => {
                // RFC 2698 §3: P and C fill independently.
                self.committed.fill(now);
                self.second.fill(now);
                if incoming == Colour::Red || !self.second.holds(size) {
                    Colour::Red
                } else if incoming == Colour::Yellow || !self.committed.holds(size) {
                    self.second.take(size);
                    Colour::Yellow
                } else {
                    self.second.take(size);
                    self.committed.take(size);
                    Colour::Green
                }
            }
        }
    }
}

/// What happens to a packet of a colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// It goes on unchanged.
    Pass,
    /// The marker: it goes on with a new DSCP and/or class.
    Mark {
        /// The new DSCP.
        dscp: Option<u8>,
        /// The new class.
        class: Option<u8>,
    },
    /// The absolute dropper ([`crate::DropReason::OutOfProfile`]).
    Drop,
}

/// Which packets a profile meters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selector {
    /// Every packet.
    All,
    /// Packets of one class (after classification).
    Class(u8),
    /// Packets of one flow (after classification).
    Flow(FlowId),
}

/// Packets and bytes of one profile by colour, and how many of them were dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ColourCounters {
    /// Packets metered, by colour ([`Colour::ALL`] order).
    pub packets: [u64; 3],
    /// Bytes metered, by colour.
    pub bytes: [u64; 3],
    /// Packets the profile's actions dropped.
    pub dropped: u64,
}

/// A meter, the packets it meters and the action per colour.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    /// Which packets.
    pub selector: Selector,
    /// The meter.
    pub meter: Meter,
    /// Action per colour ([`Colour::ALL`] order).
    pub actions: [Action; 3],
    /// Counters.
    pub counters: ColourCounters,
}

/// The keys of a `conditioner` table.
pub const CONDITIONER_KEYS: &[&str] = &["classify", "meter"];

/// The keys of a `conditioner.meter` table.
pub const METER_KEYS: &[&str] = &[
    "kind",
    "class",
    "flow",
    "colour_aware",
    "rate",
    "bucket",
    "cir",
    "cbs",
    "ebs",
    "pir",
    "pbs",
    "green",
    "yellow",
    "red",
];

/// What a conditioner decided about a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It goes on (possibly reclassified or marked).
    Pass,
    /// The absolute dropper discarded it.
    Drop,
}

/// A link's traffic conditioner (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conditioner {
    /// The classifier's rules, first match wins.
    pub rules: Vec<ClassifierRule>,
    /// The meters, first matching selector wins.
    pub profiles: Vec<Profile>,
}

fn read_action(
    reader: &mut TableReader<'_>,
    key: &'static str,
    default: Action,
) -> Result<Action, ConfigError> {
    const RULE: &str = "must be \"pass\", \"drop\" or a marker { dscp = 0..63, class = 0..255 }";
    match reader.value(key) {
        None => Ok(default),
        Some(toml::Value::String(s)) if s == "pass" => Ok(Action::Pass),
        Some(toml::Value::String(s)) if s == "drop" => Ok(Action::Drop),
        Some(toml::Value::Table(t)) => {
            let path = reader.path_of(key);
            let mut inner = TableReader::new(t, path);
            let dscp = inner.integer("dscp", 0, 63)?.map(|d| d as u8);
            let class = inner.integer("class", 0, 255)?.map(|c| c as u8);
            inner.finish_with(&["dscp", "class"])?;
            if dscp.is_none() && class.is_none() {
                return Err(reader.error(key, RULE));
            }
            Ok(Action::Mark { dscp, class })
        }
        Some(_) => Err(reader.error(key, RULE)),
    }
}

fn required_size(reader: &mut TableReader<'_>, key: &'static str, kind: &str) -> Result<u64, ConfigError> {
    match reader.size(key)? {
        Some(0) => Err(reader.error(key, "must be at least 1 byte")),
        Some(s) => Ok(s),
        None => Err(reader.error(key, format!("is required for a {kind} meter"))),
    }
}

fn required_rate(reader: &mut TableReader<'_>, key: &'static str, kind: &str) -> Result<Rate, ConfigError> {
    reader
        .rate(key)?
        .ok_or_else(|| reader.error(key, format!("is required for a {kind} meter")))
}

impl Profile {
    /// Reads one `conditioner.meter` table at `path`.
    pub fn read(table: &toml::Table, path: &str) -> Result<Profile, ConfigError> {
        let mut r = TableReader::new(table, path);
        let class = r.integer("class", 0, 255)?;
        let flow = r.integer("flow", 0, MAX_FLOW_ID as i64)?;
        let selector = match (class, flow) {
            (Some(_), Some(_)) => {
                return Err(r.error("flow", "a meter selects by class or by flow, not both"));
            }
            (Some(c), None) => Selector::Class(c as u8),
            (None, Some(f)) => Selector::Flow(f as FlowId),
            (None, None) => Selector::All,
        };
        let kind = match r.string("kind")? {
            Some("token_bucket") => MeterKind::TokenBucket {
                rate: required_rate(&mut r, "rate", "token_bucket")?,
                bucket: required_size(&mut r, "bucket", "token_bucket")?,
            },
            Some("srtcm") => MeterKind::SingleRateThreeColour {
                cir: required_rate(&mut r, "cir", "srtcm")?,
                cbs: required_size(&mut r, "cbs", "srtcm")?,
                ebs: required_size(&mut r, "ebs", "srtcm")?,
            },
            Some("trtcm") => {
                let cir = required_rate(&mut r, "cir", "trtcm")?;
                let cbs = required_size(&mut r, "cbs", "trtcm")?;
                let pir = required_rate(&mut r, "pir", "trtcm")?;
                let pbs = required_size(&mut r, "pbs", "trtcm")?;
                if pir.bits_per_second() < cir.bits_per_second() {
                    return Err(r.error("pir", "must be at least cir (RFC 2698 §2)"));
                }
                MeterKind::TwoRateThreeColour { cir, cbs, pir, pbs }
            }
            Some(_) => return Err(r.error("kind", "must be \"token_bucket\", \"srtcm\" or \"trtcm\"")),
            None => return Err(r.error("kind", "is required: \"token_bucket\", \"srtcm\" or \"trtcm\"")),
        };
        let colour_aware = r.bool("colour_aware")?.unwrap_or(false);
        let green = read_action(&mut r, "green", Action::Pass)?;
        let yellow = read_action(&mut r, "yellow", Action::Pass)?;
        let red = read_action(&mut r, "red", Action::Drop)?;
        // Keys of the other meter kinds are refused by name.
        let accepted: &[&str] = match kind {
            MeterKind::TokenBucket { .. } => &[
                "kind",
                "class",
                "flow",
                "colour_aware",
                "rate",
                "bucket",
                "green",
                "yellow",
                "red",
            ],
            MeterKind::SingleRateThreeColour { .. } => &[
                "kind",
                "class",
                "flow",
                "colour_aware",
                "cir",
                "cbs",
                "ebs",
                "green",
                "yellow",
                "red",
            ],
            MeterKind::TwoRateThreeColour { .. } => &[
                "kind",
                "class",
                "flow",
                "colour_aware",
                "cir",
                "cbs",
                "pir",
                "pbs",
                "green",
                "yellow",
                "red",
            ],
        };
        r.finish_with(accepted)?;
        Ok(Profile {
            selector,
            meter: Meter::new(kind, colour_aware),
            actions: [green, yellow, red],
            counters: ColourCounters::default(),
        })
    }

    #[inline]
    fn selects(&self, packet: &Packet) -> bool {
        match self.selector {
            Selector::All => true,
            Selector::Class(c) => packet.class == c,
            Selector::Flow(f) => packet.flow == f,
        }
    }
}

impl Conditioner {
    /// Reads a link's `conditioner` table at `path` (e.g. `link[0].conditioner`):
    /// `classify = [ { dscp = 46, class = 0 }, … ]` and `meter = [ { kind = "srtcm", … }, … ]`.
    pub fn read(table: &toml::Table, path: &str) -> Result<Conditioner, ConfigError> {
        let mut r = TableReader::new(table, path);
        let list = |r: &mut TableReader<'_>, key: &'static str| -> Result<Vec<toml::Table>, ConfigError> {
            match r.value(key) {
                None => Ok(Vec::new()),
                Some(toml::Value::Array(items)) => items
                    .iter()
                    .map(|v| match v {
                        toml::Value::Table(t) => Ok(t.clone()),
                        _ => Err(r.error(key, "must be an array of tables")),
                    })
                    .collect(),
                Some(_) => Err(r.error(key, "must be an array of tables")),
            }
        };
        let mut rules = Vec::new();
        for (i, t) in list(&mut r, "classify")?.iter().enumerate() {
            let mut rr = TableReader::new(t, format!("{path}.classify[{i}]"));
            let conditions = Match::read(&mut rr)?;
            let class = rr.integer("class", 0, 255)?.map(|c| c as u8);
            let flow = rr.integer("flow", 0, MAX_FLOW_ID as i64)?.map(|f| f as FlowId);
            if class.is_none() && flow.is_none() {
                return Err(rr.error("class", "a classifier rule sets a class, a flow or both"));
            }
            let keys: Vec<&str> = MATCH_KEYS.iter().chain(&["class", "flow"]).copied().collect();
            rr.finish_with(&keys)?;
            rules.push(ClassifierRule {
                conditions,
                class,
                flow,
            });
        }
        let mut profiles = Vec::new();
        for (i, t) in list(&mut r, "meter")?.iter().enumerate() {
            profiles.push(Profile::read(t, &format!("{path}.meter[{i}]"))?);
        }
        r.finish_with(CONDITIONER_KEYS)?;
        if rules.is_empty() && profiles.is_empty() {
            return Err(ConfigError::new(
                path,
                "{}",
                "a conditioner needs classify rules, meters or both",
            ));
        }
        Ok(Conditioner { rules, profiles })
    }

    /// Conditions `packet` arriving at `now`: classifies it (class, flow), meters it, applies
    /// its colour's action (a marker changes `marking.dscp` or `packet.class`), and records the
    /// colour in `marking`. `key` is the packet's 5-tuple when the driver has one.
    #[inline]
    pub fn condition(
        &mut self,
        packet: &mut Packet,
        marking: &mut Marking,
        key: Option<&FlowKey>,
        now: TimeNs,
    ) -> Verdict {
        if let Some(rule) = self
            .rules
            .iter()
            .find(|r| r.conditions.matches(key, marking.dscp))
        {
            if let Some(class) = rule.class {
                packet.class = class;
            }
            if let Some(flow) = rule.flow {
                packet.flow = flow;
            }
        }
        let Some(profile) = self.profiles.iter_mut().find(|p| p.selects(packet)) else {
            return Verdict::Pass;
        };
        let colour = profile.meter.colour(packet.size, now, marking.colour);
        marking.colour = colour;
        let c = colour as usize;
        profile.counters.packets[c] += 1;
        profile.counters.bytes[c] += packet.size as u64;
        match profile.actions[c] {
            Action::Pass => Verdict::Pass,
            Action::Mark { dscp, class } => {
                if let Some(dscp) = dscp {
                    marking.dscp = dscp;
                }
                if let Some(class) = class {
                    packet.class = class;
                }
                Verdict::Pass
            }
            Action::Drop => {
                profile.counters.dropped += 1;
                Verdict::Drop
            }
        }
    }

    /// Whether some rule needs the 5-tuple (an MF rule).
    pub fn needs_flow_key(&self) -> bool {
        self.rules.iter().any(|r| r.conditions.needs_flow_key())
    }

    /// The counters of every profile, in configuration order.
    pub fn counters(&self) -> Vec<ColourCounters> {
        self.profiles.iter().map(|p| p.counters).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Colour::{Green, Red, Yellow};

    /// 8 Mbit/s: one byte of tokens per microsecond.
    fn byte_per_us() -> Rate {
        Rate::from_bits_per_second(8_000_000).unwrap()
    }

    fn rate(bits: u64) -> Rate {
        Rate::from_bits_per_second(bits).unwrap()
    }

    const US: TimeNs = 1_000;

    /// RFC 2697 by hand: CIR 1 B/µs, CBS 1000, EBS 2000. A burst of 100-byte packets at 0:
    /// 10 green (C empties), 20 yellow (E empties), then red. 250 µs later C holds 250 bytes:
    /// 2 green, then red (C's refill went to C, E stays empty while C is not full).
    #[test]
    fn srtcm_colour_blind_follows_rfc_2697() {
        let kind = MeterKind::SingleRateThreeColour {
            cir: byte_per_us(),
            cbs: 1000,
            ebs: 2000,
        };
        let mut m = Meter::new(kind, false);
        let burst: Vec<Colour> = (0..31).map(|_| m.colour(100, 0, Green)).collect();
        assert_eq!(&burst[..10], &[Green; 10]);
        assert_eq!(&burst[10..30], &[Yellow; 20]);
        assert_eq!(burst[30], Red);
        let later: Vec<Colour> = (0..3).map(|_| m.colour(100, 250 * US, Red)).collect();
        // Colour-blind: the red pre-colour is ignored.
        assert_eq!(later, vec![Green, Green, Red]);
        // After 50 µs more C holds 100 bytes; after C fills (1000 µs), 2000 µs more fill E.
        assert_eq!(m.colour(100, 300 * US, Green), Green);
        assert_eq!(m.colour(1000, 1300 * US, Green), Green);
        assert_eq!(m.colour(1000, 4300 * US, Green), Green);
        assert_eq!(m.colour(2000, 4300 * US, Green), Yellow);
        assert_eq!(m.colour(1, 4300 * US, Green), Red);
    }

    /// RFC 2697 colour-aware: a yellow packet never takes C's tokens, a red one is red.
    #[test]
    fn srtcm_colour_aware_never_improves_a_colour() {
        let kind = MeterKind::SingleRateThreeColour {
            cir: byte_per_us(),
            cbs: 1000,
            ebs: 1000,
        };
        let mut m = Meter::new(kind, true);
        assert_eq!(m.colour(100, 0, Red), Red);
        assert_eq!(m.colour(100, 0, Yellow), Yellow); // E: 900 left
        assert_eq!(m.colour(1000, 0, Green), Green); // C untouched by the yellow packet
        assert_eq!(m.colour(100, 0, Green), Yellow); // C empty: E
        assert_eq!(m.colour(900, 0, Yellow), Red); // E has 800
    }

    /// RFC 2698 by hand: CIR 1 B/µs, CBS 500, PIR 2 B/µs, PBS 1000.
    #[test]
    fn trtcm_follows_rfc_2698() {
        let kind = MeterKind::TwoRateThreeColour {
            cir: byte_per_us(),
            cbs: 500,
            pir: rate(16_000_000),
            pbs: 1000,
        };
        let mut m = Meter::new(kind, false);
        let burst: Vec<Colour> = (0..11).map(|_| m.colour(100, 0, Green)).collect();
        assert_eq!(&burst[..5], &[Green; 5]); // Tc 500 → 0, Tp 1000 → 500
        assert_eq!(&burst[5..10], &[Yellow; 5]); // Tp 500 → 0
        assert_eq!(burst[10], Red); // Tp empty; red takes nothing
                                    // 100 µs: Tc 100, Tp 200.
        assert_eq!(m.colour(150, 100 * US, Green), Yellow); // Tc < 150 ≤ Tp: Tp 50
        assert_eq!(m.colour(100, 100 * US, Green), Red); // Tp 50 < 100
        assert_eq!(m.colour(50, 100 * US, Green), Green); // both hold 50
                                                          // colour-aware: yellow pre-colour stays yellow even with C full.
        let mut aware = Meter::new(kind, true);
        assert_eq!(aware.colour(100, 0, Yellow), Yellow);
        assert_eq!(aware.colour(500, 0, Green), Green); // C still full
        assert_eq!(aware.colour(100, 0, Red), Red);
    }

    /// Paper 003's two-parameter meter: in profile while the bucket holds the packet.
    #[test]
    fn token_bucket_meter_is_green_or_red() {
        let kind = MeterKind::TokenBucket {
            rate: byte_per_us(),
            bucket: 300,
        };
        let mut m = Meter::new(kind, false);
        assert_eq!(m.colour(200, 0, Green), Green);
        assert_eq!(m.colour(200, 0, Green), Red);
        assert_eq!(m.colour(200, 100 * US, Green), Green); // 100 + 100 refilled
        assert_eq!(m.colour(301, 10_000 * US, Green), Red); // larger than the bucket: never
    }

    /// A discrete model of RFC 2697 (one token per 1/CIR, here one byte per µs, arrivals at
    /// whole µs): the exact-arithmetic meter gives the same colours.
    fn discrete_srtcm(arrivals: &[(u64, u32)], cbs: u64, ebs: u64) -> Vec<Colour> {
        let (mut tc, mut te, mut t) = (cbs, ebs, 0u64);
        arrivals
            .iter()
            .map(|&(at, size)| {
                while t < at {
                    t += 1;
                    if tc < cbs {
                        tc += 1;
                    } else if te < ebs {
                        te += 1;
                    }
                }
                let b = size as u64;
                if tc >= b {
                    tc -= b;
                    Green
                } else if te >= b {
                    te -= b;
                    Yellow
                } else {
                    Red
                }
            })
            .collect()
    }

    fn conditioner(text: &str) -> Result<Conditioner, ConfigError> {
        Conditioner::read(&text.parse().unwrap(), "link[0].conditioner")
    }

    #[test]
    fn classifier_rules_first_match_wins_ba_and_mf() {
        let mut c = conditioner(
            "classify = [ { dscp = 46, class = 0 }, { protocol = \"udp\", destination_port = \"5000-5009\", class = 1, flow = 7 }, { dscp = 10, class = 2 } ]",
        )
        .unwrap();
        let key = FlowKey {
            source: "10.0.0.1".parse().unwrap(),
            destination: "10.0.0.2".parse().unwrap(),
            protocol: PROTOCOL_UDP,
            source_port: 1234,
            destination_port: 5003,
        };
        let run = |c: &mut Conditioner, dscp: u8, key: Option<&FlowKey>| {
            let mut p = Packet {
                class: 9,
                ..Packet::new(0, 3, 100, 0)
            };
            let mut m = Marking { dscp, colour: Green };
            assert_eq!(c.condition(&mut p, &mut m, key, 0), Verdict::Pass);
            (p.class, p.flow)
        };
        assert_eq!(run(&mut c, 46, Some(&key)), (0, 3)); // BA rule first
        assert_eq!(run(&mut c, 10, Some(&key)), (1, 7)); // MF before the later BA rule
        assert_eq!(run(&mut c, 10, None), (2, 3)); // no 5-tuple: MF rules cannot match
        assert_eq!(run(&mut c, 0, None), (9, 3)); // unmatched: unchanged
        assert!(c.needs_flow_key());
    }

    #[test]
    fn actions_mark_and_drop_and_count_per_colour() {
        let mut c = conditioner(
            "[[meter]]\nclass = 1\nkind = \"srtcm\"\ncir = \"8Mbit\"\ncbs = 200\nebs = 100\nyellow = { dscp = 12, class = 2 }\n",
        )
        .unwrap();
        let mut verdicts = Vec::new();
        for _ in 0..4 {
            let mut p = Packet {
                class: 1,
                ..Packet::new(0, 0, 100, 0)
            };
            let mut m = Marking::default();
            let v = c.condition(&mut p, &mut m, None, 0);
            verdicts.push((v, p.class, m.dscp, m.colour));
        }
        assert_eq!(
            verdicts,
            vec![
                (Verdict::Pass, 1, 0, Green),
                (Verdict::Pass, 1, 0, Green),
                (Verdict::Pass, 2, 12, Yellow),
                (Verdict::Drop, 1, 0, Red),
            ]
        );
        // A class-0 packet is not metered.
        let mut p = Packet::new(0, 0, 100, 0);
        let mut m = Marking::default();
        assert_eq!(c.condition(&mut p, &mut m, None, 0), Verdict::Pass);
        let counters = c.counters()[0];
        assert_eq!(counters.packets, [2, 1, 1]);
        assert_eq!(counters.bytes, [200, 100, 100]);
        assert_eq!(counters.dropped, 1);
    }

    #[test]
    fn bad_tables_name_the_key_and_value() {
        let e = conditioner("[[meter]]\nkind = \"srtcm\"\ncir = \"1Mbit\"\ncbs = 1000").unwrap_err();
        assert_eq!(e.path, "link[0].conditioner.meter[0].ebs");
        let e = conditioner(
            "[[meter]]\nkind = \"trtcm\"\ncir = \"2Mbit\"\ncbs = 1000\npir = \"1Mbit\"\npbs = 1000",
        )
        .unwrap_err();
        assert_eq!(
            (e.path.as_str(), e.value.as_str()),
            ("link[0].conditioner.meter[0].pir", "\"1Mbit\"")
        );
        let e = conditioner("[[meter]]\nkind = \"token_bucket\"\nrate = \"1Mbit\"\nbucket = 1000\ncbs = 5")
            .unwrap_err();
        assert_eq!(e.path, "link[0].conditioner.meter[0].cbs");
        let e = conditioner("[[meter]]\nkind = \"leaky\"").unwrap_err();
        assert_eq!(e.path, "link[0].conditioner.meter[0].kind");
        let e = conditioner(
            "[[meter]]\nkind = \"token_bucket\"\nrate = \"1Mbit\"\nbucket = 1000\nred = \"mark\"",
        )
        .unwrap_err();
        assert_eq!(e.path, "link[0].conditioner.meter[0].red");
        let e = conditioner("[[classify]]\ndscp = 64\nclass = 1").unwrap_err();
        assert_eq!(e.path, "link[0].conditioner.classify[0].dscp");
        let e = conditioner("[[classify]]\ndscp = 46").unwrap_err();
        assert_eq!(e.path, "link[0].conditioner.classify[0].class");
        let e = conditioner("[[classify]]\nsource = \"10.0.0.0/33\"\nclass = 1").unwrap_err();
        assert_eq!(e.path, "link[0].conditioner.classify[0].source");
        let e = conditioner("policer = 1").unwrap_err();
        assert_eq!(e.path, "link[0].conditioner.policer");
    }

    proptest::proptest! {
        /// The exact meter equals the RFC's discrete token counting at whole microseconds.
        #[test]
        fn srtcm_matches_the_discrete_rfc_algorithm(
            gaps in proptest::collection::vec((0u64..400, 1u32..600), 1..200),
            cbs in 1u64..2000, ebs in 1u64..2000,
        ) {
            let mut at = 0;
            let arrivals: Vec<(u64, u32)> = gaps.iter().map(|&(g, s)| { at += g; (at, s) }).collect();
            let mut m = Meter::new(MeterKind::SingleRateThreeColour { cir: byte_per_us(), cbs, ebs }, false);
            let ours: Vec<Colour> = arrivals.iter().map(|&(t, s)| m.colour(s, t * US, Green)).collect();
            proptest::prop_assert_eq!(ours, discrete_srtcm(&arrivals, cbs, ebs));
        }

        /// Conformance bounds over every interval [a_i, a_j]: green bytes ≤ CBS + CIR·t,
        /// green + yellow ≤ CBS + EBS + CIR·t (srTCM) and ≤ PBS + PIR·t (trTCM); a
        /// colour-aware meter never improves a colour.
        #[test]
        fn conformance_never_exceeds_the_token_bounds(
            gaps in proptest::collection::vec((0u64..300_000, 40u32..1500, 0usize..3), 1..120),
            cir in 1_000_000u64..20_000_000, extra in 0u64..20_000_000,
            cbs in 1500u64..10_000, ebs in 1u64..10_000, two_rate: bool, aware: bool,
        ) {
            let pir = cir + extra;
            let kind = if two_rate {
                MeterKind::TwoRateThreeColour { cir: rate(cir), cbs, pir: rate(pir), pbs: cbs + ebs }
            } else {
                MeterKind::SingleRateThreeColour { cir: rate(cir), cbs, ebs }
            };
            let mut m = Meter::new(kind, aware);
            let mut at = 0;
            let mut out = Vec::new();
            for &(g, size, pre) in &gaps {
                at += g;
                let incoming = Colour::ALL[pre];
                let colour = m.colour(size, at, incoming);
                if aware {
                    proptest::prop_assert!(colour >= incoming);
                }
                out.push((at, size, colour));
            }
            for i in 0..out.len() {
                let (mut green, mut coloured) = (0u128, 0u128);
                for &(t, size, colour) in &out[i..] {
                    let elapsed = (t - out[i].0) as u128;
                    if colour == Green { green += size as u128 * UNITS_PER_BYTE; }
                    if colour != Red { coloured += size as u128 * UNITS_PER_BYTE; }
                    proptest::prop_assert!(green <= cbs as u128 * UNITS_PER_BYTE + cir as u128 * elapsed);
                    let peak = if two_rate {
                        (cbs + ebs) as u128 * UNITS_PER_BYTE + pir as u128 * elapsed
                    } else {
                        (cbs + ebs) as u128 * UNITS_PER_BYTE + cir as u128 * elapsed
                    };
                    proptest::prop_assert!(coloured <= peak);
                }
            }
        }
    }
}
