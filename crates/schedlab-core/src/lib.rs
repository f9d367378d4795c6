//! # schedlab-core
//!
//! The packet descriptor ([`Packet`]), time and rate types ([`TimeNs`], [`Rate`]), the one
//! [`Scheduler`] trait, and one file per scheduling discipline under [`disciplines`].
//! Schedulers handle descriptors only, never payload bytes; the simulator, the replay tool and
//! the real gateway drive the same scheduler objects through the same trait.
//!
//! ```
//! use schedlab_core::{build_scheduler, run_link, FlowTable, Packet, Rate, Scheduler};
//!
//! let table: toml::Table = "kind = \"drr\"\nquantum = 500".parse().unwrap();
//! let rate = Rate::from_bits_per_second(8_000_000).unwrap(); // 1 byte per microsecond
//! let mut drr = build_scheduler(&table, "scheduler", &FlowTable::default(), rate).unwrap();
//! let packets = [Packet::new(0, 0, 1000, 0), Packet::new(1, 1, 500, 0)];
//! let run = run_link(&mut drr, rate, &packets).unwrap();
//! // Flow 0's 1000-byte head needs two quanta, so flow 1's packet goes first.
//! assert_eq!(run.send_order[0], (1, 0));
//! assert_eq!(drr.counters().flow(0).unwrap().sent_bytes, 1000);
//! ```
#![deny(missing_docs)]

pub mod class_share;
pub mod conditioning;
pub mod config;
pub mod counters;
pub mod discipline;
pub mod disciplines;
pub mod hierarchy;
pub mod indexed_heap;
pub mod link;
pub mod loss_window;
pub mod packet;
pub mod pool;
pub mod queues;
pub mod registry;
pub mod round_robin;
pub mod scheduler;
pub mod sorted_runs;
pub mod stage;
pub mod tag_calendar;
pub mod tagged_queues;
pub mod time;
pub mod virtual_time;

#[cfg(test)]
pub(crate) mod testkit;

pub use conditioning::{Colour, Conditioner, Marking, Verdict};
pub use config::{
    BufferLimit, ConfigError, DropPolicy, FlowParamTable, FlowParams, FlowTable, LossTolerance, TableReader,
};
pub use counters::{Backlog, Counters, DropReason, Dropped, FlowCounters};
pub use discipline::{BuildContext, Discipline, DisciplineInfo, ParamInfo};
pub use link::{drive_link, run_link, run_link_watched, LinkRun, LinkTotals, Outcome};
pub use packet::{FlowId, Packet, MAX_FLOW_ID};
pub use registry::{build_scheduler, discipline_info, AnyScheduler, DISCIPLINES};
pub use scheduler::Scheduler;
pub use stage::{overdue, LinkDropPolicy, LinkDropPolicyKind, ServiceTime};
pub use time::{format_seconds, parse_duration, parse_rate, parse_size, Rate, TimeNs};
