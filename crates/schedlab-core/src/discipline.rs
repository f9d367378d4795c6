//! How a discipline plugs into the registry: the [`Discipline`] trait, its build context and
//! the self-description used by `schedlab list` and the docs.

use crate::config::{BufferLimit, ConfigError, FlowTable, TableReader};
use crate::scheduler::Scheduler;
use crate::time::Rate;

/// One parameter of a discipline, for `schedlab list` and error hints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamInfo {
    /// Key in the TOML table.
    pub name: &'static str,
    /// Unit or type (`bytes`, `bit/s`, `duration`, `x/y`, `integer`, …).
    pub unit: &'static str,
    /// Default, as text (`"required"` when there is none).
    pub default: &'static str,
    /// What it means.
    pub description: &'static str,
}

/// What a discipline says about itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DisciplineInfo {
    /// Registry id, the `kind` in TOML (`"drr"`).
    pub id: &'static str,
    /// Human name (`"Deficit Round Robin"`).
    pub name: &'static str,
    /// The paper it implements.
    pub citation: &'static str,
    /// One sentence on what it guarantees.
    pub summary: &'static str,
    /// Keys of the `[scheduler]` table besides `kind`, `buffer`, `buffer_packets`,
    /// `drop_policy`.
    pub scheduler_params: &'static [ParamInfo],
    /// Per-flow keys it reads (from `[flow_defaults]`, `[[flow]]` or a source's `params`).
    pub flow_params: &'static [ParamInfo],
    /// Whether it supports `drop_policy = "longest_queue_drop"` (per-flow queues).
    pub per_flow_queues: bool,
}

/// What a discipline is built from besides its own parameters.
#[derive(Clone, Copy, Debug)]
pub struct BuildContext<'a> {
    /// Buffer limit and drop policy.
    pub limit: BufferLimit,
    /// Per-flow parameters (defaults and overrides).
    pub flows: &'a FlowTable,
    /// Rate of the link the scheduler feeds.
    pub link_rate: Rate,
}

/// A discipline that can be built from configuration.
pub trait Discipline: Scheduler + Sized {
    /// Its parameters.
    type Config;
    /// Its self-description.
    const INFO: DisciplineInfo;
    /// Reads its parameters from the `[scheduler]` table (the common keys are already taken).
    fn read_config(reader: &mut TableReader<'_>) -> Result<Self::Config, ConfigError>;
    /// Builds it, validating the configuration and every flow override up front.
    fn build(config: Self::Config, context: &BuildContext<'_>) -> Result<Self, ConfigError>;
}

/// Rejects `drop_policy = "longest_queue_drop"` for a discipline without per-flow queues.
pub fn require_tail_drop(info: &DisciplineInfo, limit: &BufferLimit) -> Result<(), ConfigError> {
    if limit.policy == crate::config::DropPolicy::LongestQueueDrop && !info.per_flow_queues {
        return Err(ConfigError::new(
            "scheduler.drop_policy",
            "\"longest_queue_drop\"",
            format!("{} has no per-flow queues; use \"tail_drop\"", info.id),
        ));
    }
    Ok(())
}
