//! The registry: every discipline by id, an enum over all of them for static dispatch, and
//! [`build_scheduler`] which turns a `[scheduler]` table into a running scheduler.
//!
//! To add a discipline: write its file under `disciplines/`, implement [`Discipline`] and add
//! one line to the `disciplines!` invocation below.

use crate::config::{join_path, BufferLimit, ConfigError, FlowTable, TableReader};
use crate::counters::Backlog;
use crate::counters::{Counters, Dropped};
use crate::discipline::{require_tail_drop, BuildContext, Discipline, DisciplineInfo};
use crate::disciplines::*;
use crate::packet::{FlowId, Packet};
use crate::scheduler::Scheduler;
use crate::time::{Rate, TimeNs};

/// Keys every `[scheduler]` table accepts besides the discipline's own.
pub const COMMON_SCHEDULER_KEYS: &[&str] = &["kind", "buffer", "buffer_packets", "drop_policy"];

macro_rules! disciplines {
    ($($variant:ident => $ty:ty),+ $(,)?) => {
        /// Any built-in discipline (static dispatch). Variants differ in size; a scheduler is
        /// built once per link, so boxing would only add an indirection per packet.
        #[derive(Clone, Debug)]
        #[allow(clippy::large_enum_variant)]
        pub enum AnyScheduler {
            $(
                #[doc = concat!("`", stringify!($ty), "`")]
                $variant($ty),
            )+
            /// A hierarchy node (`classes = [ … ]`): a discipline serving classes, each served by
            /// its own scheduler ([`crate::hierarchy`]).
            Hierarchy(Box<crate::hierarchy::Hierarchy>),
        }

        /// Self-descriptions of every built-in discipline, in registry order.
        pub const DISCIPLINES: &[DisciplineInfo] = &[$(<$ty as Discipline>::INFO),+];

        fn build_kind(
            kind: &str,
            reader: &mut TableReader<'_>,
            context: &BuildContext<'_>,
        ) -> Option<Result<AnyScheduler, ConfigError>> {
            $(
                if kind == <$ty as Discipline>::INFO.id {
                    return Some((|| {
                        require_tail_drop(&<$ty as Discipline>::INFO, &context.limit)?;
                        let config = <$ty as Discipline>::read_config(reader)?;
                        Ok(AnyScheduler::$variant(<$ty as Discipline>::build(config, context)?))
                    })());
                }
            )+
            None
        }

        macro_rules! dispatch {
            ($self:ident, $s:ident => $body:expr) => {
                match $self {
                    $(AnyScheduler::$variant($s) => $body,)+
                    AnyScheduler::Hierarchy($s) => $body,
                }
            };
        }
    };
}

disciplines! {
    Fifo => fifo::Fifo,
    Drr => drr::Drr,
    DrrPlus => drr_plus::DrrPlus,
    DrrPlusPlus => drr_plusplus::DrrPlusPlus,
    Dwcs => dwcs::Dwcs,
    Priority => priority::Priority,
    Wrr => wrr::Wrr,
    Ewrr => ewrr::Ewrr,
    Vd => vd::Vd,
    Scfq => scfq::Scfq,
    VirtualClock => virtual_clock::VirtualClock,
    Stfq => stfq::Stfq,
    Wfq => wfq::Wfq,
    Wf2qPlus => wf2q_plus::Wf2qPlus,
    DynamicPriority => dynamic_priority::DynamicPriority,
    Adaptive => adaptive::Adaptive,
    Qfq => qfq::Qfq,
    Srr => srr::Srr,
    Aliquem => aliquem::Aliquem,
}

impl Scheduler for AnyScheduler {
    fn id(&self) -> &'static str {
        dispatch!(self, s => s.id())
    }
    // The per-packet calls are inlined into every caller (the simulator's and the gateway's
    // loops, the bench): out of line, the match over every discipline made one function that
    // saved and restored six registers and passed the packet through memory on each call
    // (`fifo` in the core bench: 230 → 197 instructions per packet, cachegrind). `backlog`,
    // which the simulator reads after every enqueue and dequeue, too (the ns-2 scenario of
    // `bench/sim_ns2_scenario.sh`: 8 instructions per packet fewer). Inlining a discipline's
    // own `enqueue` and `dequeue` into these matches was measured there and not kept (DRR:
    // +75 instructions per packet with both, +14 and +18 with one of them).
    #[inline(always)]
    fn enqueue(&mut self, packet: Packet, now: TimeNs, drops: &mut Vec<Dropped>) {
        dispatch!(self, s => s.enqueue(packet, now, drops))
    }
    #[inline(always)]
    fn dequeue(&mut self, now: TimeNs, drops: &mut Vec<Dropped>) -> Option<Packet> {
        dispatch!(self, s => s.dequeue(now, drops))
    }
    fn peek(&mut self, now: TimeNs) -> Option<Packet> {
        dispatch!(self, s => s.peek(now))
    }
    fn counters(&self) -> &Counters {
        dispatch!(self, s => s.counters())
    }
    #[inline(always)]
    fn backlog(&self) -> Backlog {
        dispatch!(self, s => s.backlog())
    }
    fn flow_backlog(&self, flow: FlowId) -> Backlog {
        dispatch!(self, s => s.flow_backlog(flow))
    }
    fn next_wakeup(&self, now: TimeNs) -> Option<TimeNs> {
        dispatch!(self, s => s.next_wakeup(now))
    }
    fn is_work_conserving(&self) -> bool {
        dispatch!(self, s => s.is_work_conserving())
    }
    fn discipline_counters(&self) -> Vec<(&'static str, u64)> {
        dispatch!(self, s => s.discipline_counters())
    }
    fn flow_discipline_counters(&self, flow: FlowId) -> Vec<(&'static str, u64)> {
        dispatch!(self, s => s.flow_discipline_counters(flow))
    }
    fn not_served(&mut self, packet: &Packet) {
        dispatch!(self, s => s.not_served(packet))
    }
}

/// The self-description of discipline `id`.
pub fn discipline_info(id: &str) -> Option<&'static DisciplineInfo> {
    DISCIPLINES.iter().find(|info| info.id == id)
}

/// Builds a scheduler from a `[scheduler]` table found at `path` (e.g. `"scheduler"` or
/// `"link[0].scheduler"`): reads `kind`, the buffer keys and the discipline's parameters,
/// rejects unknown keys, and validates the flow table for that discipline. A table with
/// `classes = [ … ]` builds a hierarchy node ([`crate::hierarchy::Hierarchy`]), recursively.
pub fn build_scheduler(
    table: &toml::Table,
    path: &str,
    flows: &FlowTable,
    link_rate: Rate,
) -> Result<AnyScheduler, ConfigError> {
    if table.contains_key("classes") {
        return Ok(AnyScheduler::Hierarchy(Box::new(
            crate::hierarchy::Hierarchy::build(table, path, flows, link_rate)?,
        )));
    }
    let mut reader = TableReader::new(table, path);
    let kind = reader.string("kind")?.ok_or_else(|| {
        ConfigError::new(
            join_path(path, "kind"),
            "(missing)",
            "every scheduler needs a kind",
        )
    })?;
    let limit = BufferLimit::read(&mut reader)?;
    let context = BuildContext {
        limit,
        flows,
        link_rate,
    };
    // Disciplines name their own keys `scheduler.<key>`; re-root them at the real table path
    // (e.g. `link[2].scheduler.quantum`).
    let reroot = |mut error: ConfigError| {
        if !error.path.starts_with(path) {
            if let Some(rest) = error.path.strip_prefix("scheduler.") {
                error.path = join_path(path, rest);
            }
        }
        error
    };
    let scheduler = build_kind(kind, &mut reader, &context)
        .map(|r| r.map_err(reroot))
        .unwrap_or_else(|| {
            let ids: Vec<&str> = DISCIPLINES.iter().map(|d| d.id).collect();
            Err(reader.error("kind", format!("unknown discipline; known: {}", ids.join(", "))))
        })?;
    let info = discipline_info(kind).expect("built kinds are registered");
    let mut accepted: Vec<&str> = COMMON_SCHEDULER_KEYS.to_vec();
    accepted.extend(info.scheduler_params.iter().map(|p| p.name));
    reader.finish_with(&accepted)?;
    Ok(scheduler)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(text: &str) -> Result<AnyScheduler, ConfigError> {
        let table: toml::Table = text.parse().unwrap();
        build_scheduler(
            &table,
            "scheduler",
            &FlowTable::default(),
            Rate::from_bits_per_second(1_000_000).unwrap(),
        )
    }

    #[test]
    fn builds_by_kind() {
        assert_eq!(build("kind = \"drr\"\nquantum = 900").unwrap().id(), "drr");
        assert_eq!(build("kind = \"fifo\"\nbuffer = \"10KB\"").unwrap().id(), "fifo");
    }

    #[test]
    fn errors_name_the_key_and_value() {
        let e = build("kind = \"drrr\"").unwrap_err();
        assert_eq!(e.path, "scheduler.kind");
        assert_eq!(e.value, "\"drrr\"");
        assert!(e.rule.contains("known: fifo, drr"), "{e}");
        let e = build("kind = \"drr\"\nquantum = 0").unwrap_err();
        assert_eq!(
            e.to_string(),
            "scheduler.quantum = 0: must be an integer from 1 to 4294967295"
        );
        let e = build("kind = \"drr\"\nquantom = 10").unwrap_err();
        assert_eq!(e.path, "scheduler.quantom");
        assert!(
            e.rule
                .contains("accepted keys: kind, buffer, buffer_packets, drop_policy, quantum"),
            "{e}"
        );
        let e = build("kind = \"fifo\"\nquantum = 10").unwrap_err();
        assert_eq!(e.path, "scheduler.quantum");
        let e = build("quantum = 10").unwrap_err();
        assert_eq!(e.path, "scheduler.kind");
    }

    #[test]
    fn discipline_errors_name_the_real_table_path() {
        let table: toml::Table = "kind = \"fifo\"\ndrop_policy = \"longest_queue_drop\""
            .parse()
            .unwrap();
        let e = build_scheduler(
            &table,
            "link[2].scheduler",
            &FlowTable::default(),
            Rate::from_bits_per_second(1_000_000).unwrap(),
        )
        .unwrap_err();
        assert_eq!(e.path, "link[2].scheduler.drop_policy");
    }

    #[test]
    fn every_id_is_unique_and_lower_snake_case() {
        let mut ids: Vec<&str> = DISCIPLINES.iter().map(|d| d.id).collect();
        // Lower snake case; digits allowed after the first letter (`wf2q_plus`).
        assert!(ids
            .iter()
            .all(|id| id.starts_with(|c: char| c.is_ascii_lowercase())
                && id
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')));
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), DISCIPLINES.len());
    }

    /// The scheduler table that builds discipline `info` with default parameters.
    fn minimal_scheduler(info: &DisciplineInfo) -> toml::Table {
        let extra = match info.id {
            "vd" => "\nrounds = 8",
            "dynamic_priority" | "adaptive" => "\nshare = [0.5, 0.5]\ninterval = \"1ms\"",
            _ => "",
        };
        format!("kind = \"{}\"{extra}", info.id).parse().unwrap()
    }

    /// For every registered discipline: a flow key it does not declare (another discipline's
    /// key, or no discipline's) is an error naming the key, the discipline and exactly the keys
    /// it declares; every key it declares is read (a value of the wrong type is an error about
    /// that value, not an unknown key).
    #[test]
    fn every_discipline_rejects_flow_keys_it_does_not_read() {
        let rate = Rate::from_bits_per_second(1_000_000).unwrap();
        let mut all_keys: Vec<&str> = DISCIPLINES
            .iter()
            .flat_map(|d| d.flow_params.iter().map(|p| p.name))
            .collect();
        all_keys.push("no_such_key");
        for info in DISCIPLINES {
            let scheduler = minimal_scheduler(info);
            build_scheduler(&scheduler, "scheduler", &FlowTable::default(), rate)
                .unwrap_or_else(|e| panic!("{}: {e}", info.id));
            let declared: Vec<&str> = info.flow_params.iter().map(|p| p.name).collect();
            let reads = if declared.is_empty() {
                "no flow keys".to_string()
            } else {
                format!("only {}", declared.join(", "))
            };
            for key in all_keys.iter().filter(|k| !declared.contains(k)) {
                let mut flows = FlowTable::default();
                let mut table = toml::Table::new();
                table.insert(key.to_string(), toml::Value::Integer(1));
                flows.set(4, table, "flow[2]");
                let e = build_scheduler(&scheduler, "scheduler", &flows, rate).unwrap_err();
                assert_eq!(
                    e.to_string(),
                    format!("flow[2].{key} = 1: not a flow key of {}, which reads {reads} (another discipline's keys go in a sub-table named after it)", info.id),
                    "{}",
                    info.id
                );
            }
            for key in &declared {
                let mut table = toml::Table::new();
                table.insert(key.to_string(), toml::Value::Array(Vec::new()));
                let flows = FlowTable::uniform(table);
                let e = build_scheduler(&scheduler, "scheduler", &flows, rate).unwrap_err();
                assert_eq!(e.path, format!("flow_defaults.{key}"), "{}: {e}", info.id);
                assert!(!e.rule.contains("not a flow key"), "{}: {e}", info.id);
            }
        }
    }
}
