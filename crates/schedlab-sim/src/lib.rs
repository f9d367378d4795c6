//! schedlab-sim
#![deny(missing_docs)]
pub mod traffic;
