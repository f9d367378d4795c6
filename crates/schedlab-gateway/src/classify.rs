//! Frame parsing and classification: an Ethernet frame becomes a flow id and a class, or a
//! reason why it is not scheduled.
//!
//! * Parsing uses `etherparse` (IPv4 with options, IPv6 with extension headers, UDP, TCP).
//!   Frames that are not IP (ARP, anything else) and IPv6 neighbour discovery (ICMPv6 types
//!   133–137) are [`Frame::NonIp`] and pass unscheduled.
//!   Frames whose IP or transport headers are inconsistent (truncated, bad lengths, bad
//!   version or header length) are [`Frame::Malformed`] with a [`MalformedReason`].
//! * Classification: the first [`Rule`] that matches gives the flow id (and optionally the
//!   class); without a match the 5-tuple (source and destination address, protocol, ports)
//!   gets its own flow id, handed out densely from [`Classifier::first_dynamic_id`] upwards in
//!   order of first appearance, up to `max_flows` such flows (then
//!   [`Unscheduled::FlowTableFull`]: memory stays bounded under a flood of new 5-tuples).
//! * Fragments: only the first fragment carries the ports. The classifier remembers the flow of
//!   the first fragment of each (source, destination, protocol, identification) in a bounded
//!   table (the last 4,096 datagrams) so that every fragment of a datagram joins its flow; a
//!   later fragment whose first fragment was not seen is classified with ports 0.
//! * The class is the rule's `class` when it sets one, else the DSCP of the packet.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

use etherparse::err::packet::SliceError;
use etherparse::{NetSlice, SlicedPacket, TransportSlice};
use schedlab_core::config::TableReader;
use schedlab_core::{ConfigError, FlowId};

pub use schedlab_core::conditioning::{FlowKey, Match, Prefix, PROTOCOL_TCP, PROTOCOL_UDP};

/// Identifies the fragments of one datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FragmentKey {
    source: IpAddr,
    destination: IpAddr,
    protocol: u8,
    identification: u32,
}

/// A parsed IP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpPacket {
    /// Its 5-tuple.
    pub key: FlowKey,
    /// The DSCP (0–63).
    pub dscp: u8,
    /// Length of the IP packet (header and payload) in bytes: the size the scheduler and the
    /// emulated link see. The Ethernet header is not counted.
    pub ip_length: u32,
    /// For a fragment: the datagram it belongs to and whether it is the first fragment.
    pub fragment: Option<(FragmentKey, bool)>,
}

/// Why a frame could not be parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MalformedReason {
    /// The frame ends before a header does, or before the length an IP header announces.
    Truncated,
    /// An IPv4 or IPv6 header is invalid (version, header length, total length below the
    /// header length).
    BadIpHeader,
    /// An IPv4 authentication header or an IPv6 extension header is invalid.
    BadExtensionHeader,
    /// A TCP header is invalid (data offset).
    BadTransportHeader,
    /// The frame is longer than the capture slot (snap length), so it was received cut short.
    CaptureTruncated,
}

impl MalformedReason {
    /// Every reason, in counter order.
    pub const ALL: [MalformedReason; 5] = [
        MalformedReason::Truncated,
        MalformedReason::BadIpHeader,
        MalformedReason::BadExtensionHeader,
        MalformedReason::BadTransportHeader,
        MalformedReason::CaptureTruncated,
    ];

    /// The name used in the stats file.
    pub fn name(self) -> &'static str {
        match self {
            MalformedReason::Truncated => "truncated",
            MalformedReason::BadIpHeader => "bad_ip_header",
            MalformedReason::BadExtensionHeader => "bad_extension_header",
            MalformedReason::BadTransportHeader => "bad_transport_header",
            MalformedReason::CaptureTruncated => "capture_truncated",
        }
    }
}

/// What a frame is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame {
    /// An IP packet to schedule.
    Ip(IpPacket),
    /// Not IP (ARP, LLDP, …) or IPv6 neighbour discovery: passes unscheduled.
    NonIp,
    /// An IP frame that cannot be parsed: dropped and counted.
    Malformed(MalformedReason),
}

/// Parses an Ethernet frame (with optional VLAN tags).
pub fn parse_frame(frame: &[u8]) -> Frame {
    let sliced = match SlicedPacket::from_ethernet(frame) {
        Ok(s) => s,
        Err(e) => {
            return Frame::Malformed(match e {
                SliceError::Len(_) => MalformedReason::Truncated,
                SliceError::Ip(_) | SliceError::Ipv4(_) | SliceError::Ipv6(_) => MalformedReason::BadIpHeader,
                SliceError::Ipv4Exts(_) | SliceError::Ipv6Exts(_) => MalformedReason::BadExtensionHeader,
                SliceError::Tcp(_) => MalformedReason::BadTransportHeader,
                // A frame too short for its Ethernet/VLAN/MACsec header.
                SliceError::LinuxSll(_) | SliceError::Macsec(_) => MalformedReason::Truncated,
            });
        }
    };
    let (source, destination, protocol, dscp, ip_length, fragment) = match &sliced.net {
        Some(NetSlice::Ipv4(ip)) => {
            let header = ip.header();
            let protocol = ip.payload_ip_number().0;
            let fragment = ip.is_payload_fragmented().then(|| {
                let key = FragmentKey {
                    source: IpAddr::V4(header.source_addr()),
                    destination: IpAddr::V4(header.destination_addr()),
                    protocol,
                    identification: header.identification() as u32,
                };
                (key, u16::from(header.fragments_offset()) == 0)
            });
            (
                IpAddr::V4(header.source_addr()),
                IpAddr::V4(header.destination_addr()),
                protocol,
                u8::from(header.dcp()),
                header.total_len() as u32,
                fragment,
            )
        }
        Some(NetSlice::Ipv6(ip)) => {
            let header = ip.header();
            let protocol = ip.payload().ip_number.0;
            let fragment = ip.is_payload_fragmented().then(|| {
                let mut identification = 0;
                let mut first = true;
                for extension in ip.extensions().clone() {
                    if let etherparse::Ipv6ExtensionSlice::Fragment(f) = extension {
                        identification = f.identification();
                        first = u16::from(f.fragment_offset()) == 0;
                    }
                }
                let key = FragmentKey {
                    source: IpAddr::V6(header.source_addr()),
                    destination: IpAddr::V6(header.destination_addr()),
                    protocol,
                    identification,
                };
                (key, first)
            });
            (
                IpAddr::V6(header.source_addr()),
                IpAddr::V6(header.destination_addr()),
                protocol,
                u8::from(header.dscp()),
                40 + header.payload_length() as u32,
                fragment,
            )
        }
        Some(NetSlice::Arp(_)) | None => return Frame::NonIp,
    };
    // Neighbour discovery (router/neighbour solicitation and advertisement, redirect) is
    // the IPv6 counterpart of ARP: it passes unscheduled so that address resolution through
    // the gateway never waits behind, or is dropped by, a full queue.
    if let Some(TransportSlice::Icmpv6(icmp)) = &sliced.transport {
        if (133..=137).contains(&icmp.type_u8()) {
            return Frame::NonIp;
        }
    }
    let (source_port, destination_port) = match &sliced.transport {
        Some(TransportSlice::Udp(udp)) => (udp.source_port(), udp.destination_port()),
        Some(TransportSlice::Tcp(tcp)) => (tcp.source_port(), tcp.destination_port()),
        // A first fragment is not sliced further, but its payload starts with the ports.
        None if matches!(fragment, Some((_, true))) && matches!(protocol, PROTOCOL_UDP | PROTOCOL_TCP) => {
            match sliced
                .net
                .as_ref()
                .and_then(|n| n.ip_payload_ref())
                .map(|p| p.payload)
            {
                Some(p) if p.len() >= 4 => {
                    (u16::from_be_bytes([p[0], p[1]]), u16::from_be_bytes([p[2], p[3]]))
                }
                _ => (0, 0),
            }
        }
        _ => (0, 0),
    };
    Frame::Ip(IpPacket {
        key: FlowKey {
            source,
            destination,
            protocol,
            source_port,
            destination_port,
        },
        dscp,
        ip_length,
        fragment,
    })
}

/// One classification rule: every condition given must hold; the first matching rule wins.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The conditions (DSCP, prefixes, protocol, port ranges): the MF classifier of
    /// [`schedlab_core::conditioning`].
    pub conditions: Match,
    /// The flow id a matching packet gets (the `id` of its `[[flow]]` parameters).
    pub flow: FlowId,
    /// The class a matching packet gets (else its DSCP).
    pub class: Option<u8>,
}

/// Largest flow id a rule may name: per-flow state is kept in vectors indexed by flow id.
pub const MAX_RULE_FLOW_ID: u64 = 65_535;

/// Keys of a `[[gateway.rule]]` table besides the conditions ([`schedlab_core::conditioning::MATCH_KEYS`]).
pub const RULE_KEYS: &[&str] = &["flow", "class"];

impl Rule {
    /// Reads one `[[gateway.rule]]` table.
    pub fn read(table: &toml::Table, path: &str) -> Result<Rule, ConfigError> {
        let mut reader = TableReader::new(table, path.to_string());
        let flow = reader
            .integer("flow", 0, MAX_RULE_FLOW_ID as i64)?
            .ok_or_else(|| reader.error("flow", "every rule needs the flow id it assigns"))?
            as FlowId;
        let class = reader.integer("class", 0, 255)?.map(|c| c as u8);
        let conditions = Match::read(&mut reader)?;
        let keys: Vec<&str> = RULE_KEYS
            .iter()
            .chain(schedlab_core::conditioning::MATCH_KEYS)
            .copied()
            .collect();
        reader.finish_with(&keys)?;
        Ok(Rule {
            conditions,
            flow,
            class,
        })
    }

    /// Whether a packet with the 5-tuple `key` and `dscp` matches.
    pub fn matches(&self, key: &FlowKey, dscp: u8) -> bool {
        self.conditions.matches(Some(key), dscp)
    }
}

/// Why an IP packet gets no flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unscheduled {
    /// A new 5-tuple arrived while `max_flows` dynamic flows exist.
    FlowTableFull,
}

/// How many datagrams' first fragments the classifier remembers.
pub const FRAGMENT_MEMORY: usize = 4096;

/// Maps packets to flows (see the module documentation).
#[derive(Clone, Debug)]
pub struct Classifier {
    rules: Vec<Rule>,
    /// foldhash: a fast keyed hash (seeded per process, so flow keys an attacker chooses
    /// cannot be aimed at one bucket); SipHash, the standard one, took a fifth of the
    /// forwarding loop's instructions (docs/gateway.md, "Speed").
    dynamic: HashMap<FlowKey, FlowId, foldhash::fast::RandomState>,
    /// Key of each dynamic flow, by `id - first_dynamic_id`.
    dynamic_keys: Vec<FlowKey>,
    first_dynamic_id: FlowId,
    max_flows: usize,
    fragments: HashMap<FragmentKey, (FlowId, u8), foldhash::fast::RandomState>,
    fragment_order: VecDeque<FragmentKey>,
}

impl Classifier {
    /// A classifier with `rules`; dynamic (5-tuple) flows get ids from `first_dynamic_id`
    /// upwards, at most `max_flows` of them.
    pub fn new(rules: Vec<Rule>, first_dynamic_id: FlowId, max_flows: usize) -> Classifier {
        Classifier {
            rules,
            dynamic: HashMap::default(),
            dynamic_keys: Vec::new(),
            first_dynamic_id,
            max_flows,
            fragments: HashMap::default(),
            fragment_order: VecDeque::new(),
        }
    }

    /// The first id handed to a 5-tuple flow.
    pub fn first_dynamic_id(&self) -> FlowId {
        self.first_dynamic_id
    }

    /// The 5-tuple of a dynamic flow id.
    pub fn key_of(&self, flow: FlowId) -> Option<&FlowKey> {
        flow.checked_sub(self.first_dynamic_id)
            .and_then(|i| self.dynamic_keys.get(i as usize))
    }

    /// The rules.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The flow id and class of `packet`.
    pub fn classify(&mut self, packet: &IpPacket) -> Result<(FlowId, u8), Unscheduled> {
        if let Some((fragment, first)) = packet.fragment {
            if !first {
                if let Some(&known) = self.fragments.get(&fragment) {
                    return Ok(known);
                }
            }
        }
        let found = self.classify_key(&packet.key, packet.dscp)?;
        if let Some((fragment, true)) = packet.fragment {
            if self.fragments.insert(fragment, found).is_none() {
                self.fragment_order.push_back(fragment);
                if self.fragment_order.len() > FRAGMENT_MEMORY {
                    if let Some(old) = self.fragment_order.pop_front() {
                        self.fragments.remove(&old);
                    }
                }
            }
        }
        Ok(found)
    }

    fn classify_key(&mut self, key: &FlowKey, dscp: u8) -> Result<(FlowId, u8), Unscheduled> {
        if let Some(rule) = self.rules.iter().find(|r| r.matches(key, dscp)) {
            return Ok((rule.flow, rule.class.unwrap_or(dscp)));
        }
        if let Some(&flow) = self.dynamic.get(key) {
            return Ok((flow, dscp));
        }
        if self.dynamic_keys.len() >= self.max_flows {
            return Err(Unscheduled::FlowTableFull);
        }
        let flow = self.first_dynamic_id + self.dynamic_keys.len() as FlowId;
        self.dynamic.insert(*key, flow);
        self.dynamic_keys.push(*key);
        Ok((flow, dscp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::PacketBuilder;

    const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 1];
    const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 2];

    fn udp4(source_port: u16, payload: usize) -> Vec<u8> {
        let builder = PacketBuilder::ethernet2(MAC_A, MAC_B)
            .ipv4([198, 18, 0, 2], [198, 19, 0, 2], 64)
            .udp(source_port, 9000);
        let mut frame = Vec::new();
        builder.write(&mut frame, &vec![0u8; payload]).unwrap();
        frame
    }

    fn udp6(payload: usize) -> Vec<u8> {
        let builder = PacketBuilder::ethernet2(MAC_A, MAC_B)
            .ipv6(
                [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
                [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
                64,
            )
            .udp(7000, 9001);
        let mut frame = Vec::new();
        builder.write(&mut frame, &vec![0u8; payload]).unwrap();
        frame
    }

    #[test]
    fn parses_ipv4_and_ipv6_udp_with_ip_lengths() {
        let Frame::Ip(p) = parse_frame(&udp4(5000, 100)) else {
            panic!()
        };
        assert_eq!(p.ip_length, 20 + 8 + 100);
        assert_eq!(p.key.to_string(), "udp 198.18.0.2:5000 > 198.19.0.2:9000");
        assert_eq!(p.fragment, None);
        let Frame::Ip(p) = parse_frame(&udp6(100)) else {
            panic!()
        };
        assert_eq!(p.ip_length, 40 + 8 + 100);
        assert_eq!(p.key.to_string(), "udp [2001:db8::2]:7000 > [2001:db8:1::2]:9001");
    }

    #[test]
    fn non_ip_frames_and_malformed_frames_are_told_apart() {
        // ARP request.
        let mut arp = vec![0xff; 6];
        arp.extend(MAC_A);
        arp.extend([0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1]);
        arp.extend(MAC_A);
        arp.extend([198, 18, 0, 2, 0, 0, 0, 0, 0, 0, 198, 18, 0, 1]);
        assert_eq!(parse_frame(&arp), Frame::NonIp);
        // An LLDP-like ethertype.
        let mut other = udp4(1, 10);
        other[12..14].copy_from_slice(&[0x88, 0xcc]);
        assert_eq!(parse_frame(&other), Frame::NonIp);
        // IPv4 total length beyond the frame.
        let mut long = udp4(1, 10);
        long[14 + 2..14 + 4].copy_from_slice(&1000u16.to_be_bytes());
        assert_eq!(parse_frame(&long), Frame::Malformed(MalformedReason::Truncated));
        // Header length below 5 words.
        let mut ihl = udp4(1, 10);
        ihl[14] = 0x43;
        assert_eq!(parse_frame(&ihl), Frame::Malformed(MalformedReason::BadIpHeader));
        // Cut in the middle of the IP header.
        assert_eq!(
            parse_frame(&udp4(1, 10)[..14 + 12]),
            Frame::Malformed(MalformedReason::Truncated)
        );
        // Version 5 behind the IPv4 ethertype.
        let mut version = udp4(1, 10);
        version[14] = 0x55;
        assert!(matches!(parse_frame(&version), Frame::Malformed(_)));
    }

    #[test]
    fn neighbour_discovery_passes_but_other_icmpv6_is_scheduled() {
        let icmp6 = |kind: u8| {
            let mut frame = Vec::new();
            PacketBuilder::ethernet2(MAC_A, MAC_B)
                .ipv6(
                    [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                    [0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
                    255,
                )
                .icmpv6_raw(kind, 0, [0; 4])
                .write(&mut frame, &[0u8; 16])
                .unwrap();
            parse_frame(&frame)
        };
        assert_eq!(icmp6(133), Frame::NonIp);
        assert_eq!(icmp6(135), Frame::NonIp);
        let Frame::Ip(echo) = icmp6(128) else { panic!() };
        assert_eq!(echo.key.protocol, 58);
    }

    #[test]
    fn fragments_follow_the_flow_of_their_first_fragment() {
        let fragment = |offset_words: u16, more: bool, id: u16| {
            let mut frame = udp4(5000, 64);
            let flags = if more { 0x2000 } else { 0 } | offset_words;
            frame[14 + 4..14 + 6].copy_from_slice(&id.to_be_bytes());
            frame[14 + 6..14 + 8].copy_from_slice(&flags.to_be_bytes());
            frame
        };
        let rule = Rule {
            conditions: Match {
                protocol: Some(PROTOCOL_UDP),
                source_port: Some((5000, 5000)),
                ..Match::default()
            },
            flow: 7,
            class: Some(1),
        };
        let mut classifier = Classifier::new(vec![rule], 100, 10);
        let Frame::Ip(first) = parse_frame(&fragment(0, true, 42)) else {
            panic!()
        };
        assert_eq!(first.fragment.map(|f| f.1), Some(true));
        assert_eq!(classifier.classify(&first), Ok((7, 1)));
        let Frame::Ip(later) = parse_frame(&fragment(9, false, 42)) else {
            panic!()
        };
        assert_eq!(later.fragment.map(|f| f.1), Some(false));
        assert_eq!(later.key.source_port, 0);
        assert_eq!(classifier.classify(&later), Ok((7, 1)));
        // A later fragment of an unseen datagram: no ports, so the port rule cannot match.
        let Frame::Ip(orphan) = parse_frame(&fragment(9, false, 43)) else {
            panic!()
        };
        assert_eq!(classifier.classify(&orphan), Ok((100, 0)));
    }

    #[test]
    fn rules_then_dense_dynamic_ids_up_to_max_flows() {
        let table: toml::Table =
            "flow = 3\nsource = \"198.18.0.0/15\"\nsource_port = \"6000-6009\"\nprotocol = \"udp\""
                .parse()
                .unwrap();
        let rule = Rule::read(&table, "gateway.rule[0]").unwrap();
        let mut classifier = Classifier::new(vec![rule], 10, 2);
        let class_of = |c: &mut Classifier, port| {
            let Frame::Ip(p) = parse_frame(&udp4(port, 10)) else {
                panic!()
            };
            c.classify(&p)
        };
        assert_eq!(class_of(&mut classifier, 6005), Ok((3, 0)));
        assert_eq!(class_of(&mut classifier, 5000), Ok((10, 0)));
        assert_eq!(class_of(&mut classifier, 5001), Ok((11, 0)));
        assert_eq!(class_of(&mut classifier, 5000), Ok((10, 0)));
        assert_eq!(class_of(&mut classifier, 5002), Err(Unscheduled::FlowTableFull));
        assert_eq!(classifier.key_of(11).unwrap().source_port, 5001);
        assert_eq!(classifier.key_of(3), None);
    }

    #[test]
    fn rule_errors_name_the_key_and_value() {
        let read = |text: &str| {
            Rule::read(&text.parse().unwrap(), "gateway.rule[1]")
                .unwrap_err()
                .to_string()
        };
        assert!(read("flow = 1\nsource = \"10.0.0.0/40\"").contains("gateway.rule[1].source"));
        assert!(read("flow = 1\ndestination_port = \"9-3\"").contains("gateway.rule[1].destination_port"));
        assert!(read("flow = 1\nprotocol = \"sctp\"").contains("gateway.rule[1].protocol"));
        assert!(read("source = \"10.0.0.1\"").contains("gateway.rule[1].flow"));
        assert!(read("flow = 1\ndscp = 64").contains("gateway.rule[1].dscp = 64"));
        assert!(read("flow = 1\nsrc = \"10.0.0.1\"").contains("src"));
    }

    #[test]
    fn prefixes_match_by_leading_bits() {
        let p = Prefix::parse("198.18.0.0/15").unwrap();
        assert!(p.contains("198.19.255.1".parse().unwrap()));
        assert!(!p.contains("198.20.0.1".parse().unwrap()));
        assert!(!p.contains("2001:db8::1".parse().unwrap()));
        assert!(Prefix::parse("::/0")
            .unwrap()
            .contains("2001:db8::1".parse().unwrap()));
        assert!(Prefix::parse("2001:db8::/32")
            .unwrap()
            .contains("2001:db8:1::2".parse().unwrap()));
        assert!(Prefix::parse("nonsense").is_err());
    }
}
