//! # schedlab-sim
//!
//! Trace replay over one link ([`replay`]) and, built on the same schedulers, the
//! discrete-event simulator.
#![deny(missing_docs)]

pub mod error;
pub mod replay;
pub mod trace;

pub use error::InputError;
pub use replay::{replay, replay_files, Replay, ReplayConfig};
pub use trace::{Trace, TraceError};
