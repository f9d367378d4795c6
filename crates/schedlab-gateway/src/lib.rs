//! # schedlab-gateway
//!
//! Real packets through the same scheduler objects that the simulator drives:
//! * [`classify`]: Ethernet frame → flow id and class (5-tuple or configured rules);
//! * [`gateway`]: the forwarding engine — scheduler, emulated bottleneck link with
//!   propagation delay, exactly-once accounting, the `--stats` document;
//! * [`traffic`]: the schedule `schedlab gen` sends (the simulator's generators), the
//!   datagram header, the packet logs;
//! * [`pcap`]: pcap/pcapng captures as replay traces (`schedlab replay --trace X.pcap`);
//! * [`measured`]: packet logs → the results of `schedlab run` (`schedlab measure`);
//! * `linux` (Linux only): AF_PACKET rings, signals, the `schedlab gateway` main loop, and
//!   the `gen` / `sink` loops.
#![deny(missing_docs)]

pub mod classify;
#[cfg(target_os = "linux")]
pub mod endpoints;
pub mod gateway;
#[cfg(target_os = "linux")]
pub mod linux;
pub mod measured;
pub mod pcap;
pub mod traffic;

pub use gateway::{build, Gateway, GatewayConfig, GatewayDropReason, Ingress};
