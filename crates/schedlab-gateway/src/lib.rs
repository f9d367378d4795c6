//! # schedlab-gateway
//!
//! Real packets through the same scheduler objects that the simulator drives:
//! * [`classify`]: Ethernet frame → flow id and class (5-tuple or configured rules);
//! * [`gateway`]: the forwarding engine — scheduler, emulated bottleneck link with
//!   propagation delay, exactly-once accounting, the `--stats` document;
//! * `linux` (Linux only): AF_PACKET rings, signals, the `schedlab gateway` main loop.
#![deny(missing_docs)]

pub mod classify;
pub mod gateway;
#[cfg(target_os = "linux")]
pub mod linux;

pub use gateway::{build, Gateway, GatewayConfig, GatewayDropReason, Ingress};
