//! The router model of Wang, Lung and Majumdar, "Effective Fair Share Resource Management
//! Algorithms in Support of QoS" (paper 001, §3): what a link or processing stage does around
//! its scheduler.
//!
//! A router there has two resources, a CPU that processes every packet in a fixed time
//! (`Ptime` = 300 µs) and an output link of 2 Mbit/s. Packets of three groups (Gold, Silver,
//! Bronze = classes 0, 1, 2) wait for the CPU in class queues and are dropped when they waited
//! longer than 20 ms; a processed packet is dropped at the output link "if there is not enough
//! bandwidth available for its group to transmit this packet" (§3.2.1). In schedlab both
//! resources are links; the pieces here are shared by the simulator and the gateway:
//!
//! * [`ServiceTime`]: how long a packet holds the server — a fixed time per packet
//!   (`service = "300us"`, the paper's `Ptime`) plus its serialisation time at `rate`, either
//!   part optional but not both absent. `rate` is the per-byte time.
//! * [`LinkDropPolicy`]: the paper's link-dropping policies (`default_link`, `fixed_link`,
//!   `dynamic_link`), an admission test before the scheduler ([`crate::DropReason::NoBandwidth`]).
//! * [`overdue`]: the sojourn limit (`max_sojourn = "20ms"`, [`crate::DropReason::Sojourn`]).
//!
//! ## The link-dropping policies as implemented
//!
//! The paper does not say how the destination thread measures "available bandwidth". Here a
//! link's bandwidth over its buffer horizon `H = buffer / rate` (the time the link needs to
//! send a full buffer) is the measure: a group's *committed* work is a virtual queue that
//! fills with every admitted packet and drains at the group's rate; the available bandwidth is
//! what is left of the horizon.
//!
//! * `default_link` — one virtual queue for all classes, draining at the link rate: a packet
//!   of `s` bytes is admitted iff `backlog + s <= buffer`. With a FIFO scheduler this is the
//!   plain tail drop of the link's buffer.
//! * `fixed_link` (`link_share = [0.5, 0.3, 0.2]`, the paper's Link-Share vector) — one
//!   virtual queue per class `i`, draining at `link_share[i] · rate`, admitting while its
//!   backlog stays within `link_share[i] · buffer`. Capacity a class leaves unused is *not*
//!   lent to the others (the "bandwidth wastage" of §4.1 and figure 3).
//! * `dynamic_link` (`n1`, `n2`) — one shared virtual queue; of the buffer horizon, the last
//!   fraction `n1` is reserved for Gold and the last `n1 + n2` for Gold and Silver: Silver
//!   (class 1) is admitted iff the free part after it stays ≥ `n1 · buffer`, Bronze (class ≥ 2)
//!   iff it stays ≥ `(n1 + n2) · buffer`, Gold iff it fits.
//!
//! Invariants: a group's committed backlog never exceeds its part of the buffer; an admitted
//! packet adds exactly its size; the backlog drains linearly at the group's rate; admission is
//! a pure function of (class, size, arrival time, earlier admissions).
//!
//! Choices where the paper is silent:
//! * "Available bandwidth" is measured over the buffer horizon, as above; a link with a
//!   dropping policy therefore needs both `rate` and `buffer`.
//! * The thresholds of `dynamic_link` are cumulative: with `n1 = 2 %`, `n2 = 0.5 %` "2 % of the
//!   link capacity is reserved for Gold, 2.5 for both Gold and Silver" (§4.1), so Bronze's
//!   threshold is `n1 + n2`, Silver's `n1` (the text's "n1 is for Silver, n2 for Bronze").
//! * Classes beyond the vector of `fixed_link` are refused when a scenario is read; at run
//!   time (trace classes) a class beyond it belongs to the last group, as any class ≥ 2 is
//!   Bronze for `dynamic_link`.
//! * A packet is overdue when `now − arrival > max_sojourn` at the moment the server takes it
//!   (a packet that waited exactly the limit is served); the check is made when the server is
//!   free, as the prototype's CPU thread would.
//! * Time sums are in integer nanoseconds: a group's virtual queue is kept as the time at which
//!   it empties, and a packet adds its serialisation time at the group's rate (rounded up).

use crate::class_share::read_fractions;
use crate::config::{ConfigError, TableReader};
use crate::packet::Packet;
use crate::time::{Rate, TimeNs};

/// How long a packet holds a link or processing stage: `per_packet` plus the serialisation
/// time at `rate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceTime {
    /// Fixed time per packet, ns (the paper's `Ptime`; 0 for a plain link).
    pub per_packet: TimeNs,
    /// Per-byte time as a rate (`None` for a stage whose time does not depend on the size).
    pub rate: Option<Rate>,
}

impl ServiceTime {
    /// A plain link: serialisation at `rate`, nothing per packet.
    pub fn link(rate: Rate) -> ServiceTime {
        ServiceTime {
            per_packet: 0,
            rate: Some(rate),
        }
    }

    /// Time a packet of `size` bytes holds the server, ns (saturating at `TimeNs::MAX`, as
    /// `Rate::transmission_time` does: beyond 584 years).
    #[inline(always)]
    pub fn of(&self, size: u32) -> TimeNs {
        match self.rate {
            Some(rate) => self
                .per_packet
                .saturating_add(rate.transmission_time(size as u64)),
            None => self.per_packet,
        }
    }
}

/// Whether `packet`, taken by the server at `now`, waited longer than `max_sojourn`.
#[inline(always)]
pub fn overdue(packet: &Packet, now: TimeNs, max_sojourn: TimeNs) -> bool {
    now.saturating_sub(packet.arrival) > max_sojourn
}

/// The keys of a link's `drop_policy` table.
pub const DROP_POLICY_KEYS: &[&str] = &["kind", "link_share", "n1", "n2"];

/// Which link-dropping policy, with its parameters (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
pub enum LinkDropPolicyKind {
    /// Shared capacity, no differentiation.
    DefaultLink,
    /// The Link-Share vector: fraction of the link per class (class 0 first), summing to 1.
    FixedLink {
        /// `link_share[i]`, fractions in (0, 1].
        link_share: Vec<f64>,
    },
    /// Reserves: the last `n1` of the capacity for Gold, the last `n1 + n2` for Gold and Silver.
    DynamicLink {
        /// Silver's drop threshold, a fraction of the capacity.
        n1: f64,
        /// Bronze's additional drop threshold, a fraction of the capacity.
        n2: f64,
    },
}

impl LinkDropPolicyKind {
    /// Reads a `drop_policy = { kind = …, … }` table at `path` (e.g. `link[1].drop_policy`).
    pub fn read(table: &toml::Table, path: &str) -> Result<LinkDropPolicyKind, ConfigError> {
        let mut r = TableReader::new(table, path);
        let kind = match r.string("kind")? {
            Some("default_link") => LinkDropPolicyKind::DefaultLink,
            Some("fixed_link") => {
                let link_share = read_fractions(&mut r, "link_share", "[0.5, 0.3, 0.2]")?;
                LinkDropPolicyKind::FixedLink { link_share }
            }
            Some("dynamic_link") => {
                let n1 = r.float("n1", 0.0, 1.0)?;
                let n2 = r.float("n2", 0.0, 1.0)?;
                let (Some(n1), Some(n2)) = (n1, n2) else {
                    let missing = if n1.is_none() { "n1" } else { "n2" };
                    return Err(r.error(
                        missing,
                        "is required: dynamic_link needs n1 (Silver's threshold) and n2 (Bronze's, added to n1), fractions of the capacity",
                    ));
                };
                if n1 + n2 >= 1.0 {
                    return Err(r.error(
                        "n2",
                        "n1 + n2 must be below 1 (the reserves leave some capacity to share)",
                    ));
                }
                LinkDropPolicyKind::DynamicLink { n1, n2 }
            }
            Some(_) => {
                return Err(r.error(
                    "kind",
                    "must be \"default_link\", \"fixed_link\" or \"dynamic_link\"",
                ))
            }
            None => {
                return Err(r.error(
                    "kind",
                    "is required: \"default_link\", \"fixed_link\" or \"dynamic_link\"",
                ))
            }
        };
        r.finish_with(DROP_POLICY_KEYS)?;
        Ok(kind)
    }

    /// The highest class the policy distinguishes (`None`: any class).
    pub fn classes(&self) -> Option<usize> {
        match self {
            LinkDropPolicyKind::FixedLink { link_share } => Some(link_share.len()),
            _ => None,
        }
    }
}

/// One group's committed work: a virtual queue draining at `rate`.
#[derive(Clone, Copy, Debug)]
struct Group {
    /// Drain rate.
    rate: Rate,
    /// Time the virtual queue empties (≤ now: empty).
    empties_at: TimeNs,
    /// The group's horizon, ns: its backlog may not exceed this much time of work.
    horizon: TimeNs,
}

impl Group {
    /// Admits `size` bytes at `now` if the backlog after it stays within `horizon − reserve`.
    #[inline]
    fn admit(&mut self, size: u32, now: TimeNs, reserve: TimeNs) -> bool {
        let start = self.empties_at.max(now);
        // (Saturating: a horizon, the time to send the buffer, may be up to 584 years.)
        let end = start.saturating_add(self.rate.transmission_time(size as u64));
        if (end - now).saturating_add(reserve) <= self.horizon {
            self.empties_at = end;
            true
        } else {
            false
        }
    }
}

/// A link-dropping policy with its state (see the module documentation).
#[derive(Clone, Debug)]
pub struct LinkDropPolicy {
    groups: Vec<Group>,
    /// `dynamic_link`: reserve times below which Silver and Bronze are refused.
    reserves: [TimeNs; 2],
    dynamic: bool,
}

impl LinkDropPolicy {
    /// The policy `kind` on a link of `rate` with a buffer of `buffer` bytes.
    pub fn new(kind: &LinkDropPolicyKind, rate: Rate, buffer: u64) -> LinkDropPolicy {
        let horizon = rate.transmission_time(buffer);
        let fraction = |f: f64| (horizon as f64 * f).round() as TimeNs;
        match kind {
            LinkDropPolicyKind::DefaultLink => LinkDropPolicy {
                groups: vec![Group {
                    rate,
                    empties_at: 0,
                    horizon,
                }],
                reserves: [0, 0],
                dynamic: false,
            },
            LinkDropPolicyKind::FixedLink { link_share } => LinkDropPolicy {
                groups: link_share
                    .iter()
                    .map(|&share| {
                        let bits = ((rate.bits_per_second() as f64 * share).round() as u64).max(1);
                        Group {
                            rate: Rate::from_bits_per_second(bits).expect("at least 1 bit/s"),
                            empties_at: 0,
                            // The group's buffer share drains in the same horizon at its rate.
                            horizon,
                        }
                    })
                    .collect(),
                reserves: [0, 0],
                dynamic: false,
            },
            LinkDropPolicyKind::DynamicLink { n1, n2 } => LinkDropPolicy {
                groups: vec![Group {
                    rate,
                    empties_at: 0,
                    horizon,
                }],
                reserves: [fraction(*n1), fraction(n1 + n2)],
                dynamic: true,
            },
        }
    }

    /// Whether the link has bandwidth for `packet` (of its class) at `now`; an admitted packet
    /// is committed.
    #[inline]
    pub fn admit(&mut self, packet: &Packet, now: TimeNs) -> bool {
        let class = packet.class as usize;
        if self.dynamic {
            let reserve = match class {
                0 => 0,
                1 => self.reserves[0],
                _ => self.reserves[1],
            };
            self.groups[0].admit(packet.size, now, reserve)
        } else {
            let last = self.groups.len() - 1;
            self.groups[class.min(last)].admit(packet.size, now, 0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate() -> Rate {
        // 8 Mbit/s: one byte per microsecond.
        Rate::from_bits_per_second(8_000_000).unwrap()
    }

    fn packet(class: u8, size: u32) -> Packet {
        Packet {
            class,
            ..Packet::new(0, 0, size, 0)
        }
    }

    fn kind(text: &str) -> Result<LinkDropPolicyKind, ConfigError> {
        LinkDropPolicyKind::read(&text.parse().unwrap(), "link[0].drop_policy")
    }

    #[test]
    fn service_time_is_per_packet_plus_serialisation() {
        let cpu = ServiceTime {
            per_packet: 300_000,
            rate: None,
        };
        assert_eq!(cpu.of(40), 300_000);
        assert_eq!(cpu.of(1500), 300_000);
        let both = ServiceTime {
            per_packet: 300_000,
            rate: Some(rate()),
        };
        assert_eq!(both.of(1500), 300_000 + 1_500_000);
        assert_eq!(ServiceTime::link(rate()).of(100), 100_000);
    }

    #[test]
    fn overdue_is_strictly_longer_than_the_limit() {
        let p = Packet::new(0, 0, 100, 1_000);
        assert!(!overdue(&p, 21_000, 20_000));
        assert!(overdue(&p, 21_001, 20_000));
        assert!(!overdue(&p, 500, 20_000)); // clock before arrival: never overdue
    }

    /// Default-Link on a 1000-byte buffer at 1 byte/µs is tail drop of a fluid FIFO: 600 + 400
    /// fit at time 0, 1 more byte does not; after 250 µs, 250 bytes have drained.
    #[test]
    fn default_link_is_a_shared_fluid_buffer() {
        let mut p = LinkDropPolicy::new(&LinkDropPolicyKind::DefaultLink, rate(), 1000);
        assert!(p.admit(&packet(2, 600), 0));
        assert!(p.admit(&packet(0, 400), 0));
        assert!(!p.admit(&packet(0, 1), 0));
        assert!(!p.admit(&packet(1, 251), 250_000));
        assert!(p.admit(&packet(1, 250), 250_000));
        assert!(p.admit(&packet(1, 1000), 2_000_000)); // drained
    }

    /// Fixed-Link [0.5, 0.3, 0.2] on 1000 bytes: Bronze gets 200 bytes at 0.2 B/µs; Gold's
    /// unused part is not lent to Bronze.
    #[test]
    fn fixed_link_splits_the_capacity_and_does_not_lend() {
        let k = kind("kind = \"fixed_link\"\nlink_share = [0.5, 0.3, 0.2]").unwrap();
        let mut p = LinkDropPolicy::new(&k, rate(), 1000);
        assert!(p.admit(&packet(2, 200), 0));
        assert!(!p.admit(&packet(2, 1), 0)); // Gold idle, Bronze still refused
        assert!(p.admit(&packet(0, 500), 0));
        assert!(!p.admit(&packet(0, 1), 0));
        assert!(p.admit(&packet(1, 300), 0));
        // 100 µs later Bronze has drained 0.2 · 100 = 20 bytes.
        assert!(!p.admit(&packet(2, 21), 100_000));
        assert!(p.admit(&packet(2, 20), 100_000));
        // A class beyond the vector is Bronze.
        assert!(!p.admit(&packet(7, 1), 100_000));
    }

    /// Dynamic-Link n1 = 10 %, n2 = 20 % on 1000 bytes: Bronze stops at 700 committed bytes,
    /// Silver at 900, Gold at 1000.
    #[test]
    fn dynamic_link_reserves_are_cumulative() {
        let k = kind("kind = \"dynamic_link\"\nn1 = 0.1\nn2 = 0.2").unwrap();
        let mut p = LinkDropPolicy::new(&k, rate(), 1000);
        assert!(p.admit(&packet(2, 700), 0));
        assert!(!p.admit(&packet(2, 1), 0));
        assert!(p.admit(&packet(1, 200), 0));
        assert!(!p.admit(&packet(1, 1), 0));
        assert!(p.admit(&packet(0, 100), 0));
        assert!(!p.admit(&packet(0, 1), 0));
        assert!(p.admit(&packet(5, 1), 301_000)); // 301 bytes drained: Bronze fits again
    }

    #[test]
    fn bad_tables_name_the_key_and_value() {
        let e = kind("kind = \"fixed_link\"\nlink_share = [0.5, 0.6]").unwrap_err();
        assert_eq!(e.path, "link[0].drop_policy.link_share");
        assert!(e.rule.contains("summing to 1"), "{e}");
        let e = kind("kind = \"fixed_link\"").unwrap_err();
        assert_eq!(e.path, "link[0].drop_policy.link_share");
        let e = kind("kind = \"dynamic_link\"\nn1 = 0.02").unwrap_err();
        assert_eq!(e.path, "link[0].drop_policy.n2");
        let e = kind("kind = \"dynamic_link\"\nn1 = 0.6\nn2 = 0.5").unwrap_err();
        assert_eq!(e.path, "link[0].drop_policy.n2");
        let e = kind("kind = \"red\"").unwrap_err();
        assert_eq!(
            (e.path.as_str(), e.value.as_str()),
            ("link[0].drop_policy.kind", "\"red\"")
        );
        let e = kind("kind = \"default_link\"\nn1 = 0.1").unwrap_err();
        assert_eq!(e.path, "link[0].drop_policy.n1");
        assert!(e.rule.contains("accepted keys"), "{e}");
    }

    proptest::proptest! {
        /// Whatever the arrivals, a group's committed backlog never exceeds its horizon
        /// (checked against an independent byte-count model of Default-Link).
        #[test]
        fn default_link_matches_a_byte_count_model(
            arrivals in proptest::collection::vec((0u64..2_000_000, 1u32..1500, 0u8..3), 1..200),
        ) {
            let mut policy = LinkDropPolicy::new(&LinkDropPolicyKind::DefaultLink, rate(), 3000);
            let mut now = 0;
            // Bytes committed, draining at 1 byte per µs (exact at whole microseconds).
            let mut backlog: u64 = 0;
            for (gap, size, class) in arrivals {
                let gap = gap / 1000 * 1000;
                now += gap;
                backlog = backlog.saturating_sub(gap / 1000);
                let admitted = policy.admit(&packet(class, size), now);
                proptest::prop_assert_eq!(admitted, backlog + size as u64 <= 3000);
                if admitted {
                    backlog += size as u64;
                }
            }
        }
    }
}
