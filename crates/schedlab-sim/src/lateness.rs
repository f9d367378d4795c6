//! Lateness of a flow's packets against per-flow deadlines, measured the same way whatever the
//! discipline: a source's `lateness = { deadline_gap, deadline_offset, loss_tolerance }`.
//!
//! West, Schwan and Poellabauer (RTAS 1999, seed 002, §5, figures 4 and 9-10) compare DWCS with
//! FIFO by the deadlines each misses and by the loss-tolerance violations. FIFO has no deadlines
//! of its own, so the simulator applies the deadlines to the packets as they start service on
//! the first link of the flow's path, with DWCS's own bookkeeping (`dwcs.rs`, module docs):
//!
//! * the deadline is the latest time a packet may *commence* service (the paper's §1); a
//!   packet starting at `s > d` is late;
//! * deadline of packet k: the first packet's is `arrival + deadline_offset`; a packet that was
//!   already queued when its predecessor started service gets `D(k−1) + deadline_gap`; one that
//!   arrived later (the flow was idle) gets `max(arrival + deadline_offset, D(k−1) +
//!   deadline_gap)`;
//! * a late packet misses its deadline once per gap it is late, ⌈(s − d)/gap⌉ times (the paper:
//!   "a packet can miss its deadline more than once … the number of times a packet is delayed
//!   by more than 500 time units"), and its deadline moves on by as many gaps, D(k) = d +
//!   m·gap, so the next packet's deadline follows the moved one (DWCS's rule (B) for a packet
//!   that is not dropped). The measure is therefore each packet's lateness relative to its
//!   predecessor, not to the flow's start;
//! * a loss-tolerance violation is counted at every packet whose window of the last y packets
//!   holds more than x late ones, once the flow has y packets (sliding windows, as DWCS counts
//!   `loss_tolerance_violations`); `fixed_window_violations` counts the consecutive,
//!   non-overlapping windows (packets 1..y, y+1..2y, …) with more than x late. A 0/0
//!   tolerance uses windows of one packet. Both are counted by the core's
//!   [`LossWindow`], the same code that counts DWCS's own violations.
//!
//! For DWCS with non-droppable streams and `check_every = 1` the deadlines missed equal the
//! discipline's own per-stream count. Packets a scheduler drops (buffer, late drops of
//! droppable DWCS streams) never start service and are not metered: for droppable streams use
//! the discipline's own counters. Counts cover measured packets (those entering in the
//! measurement window); the deadline chain follows every packet.

use schedlab_core::config::{ConfigError, LossTolerance, TableReader};
use schedlab_core::loss_window::{LossWindow, LossWindowCounts};
use schedlab_core::time::TimeNs;

/// The keys of a source's `lateness` table.
pub const LATENESS_KEYS: &[&str] = &["deadline_gap", "deadline_offset", "loss_tolerance"];

/// A flow's deadlines and loss-tolerance for the lateness measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LatenessSpec {
    /// Time between consecutive deadlines, ns (> 0).
    pub deadline_gap: TimeNs,
    /// Deadline of the first packet (and of one arriving at an idle flow) after its arrival at
    /// the link, ns (default: the gap).
    pub deadline_offset: TimeNs,
    /// x/y: at most x late packets in any y consecutive ones (default 1/1: never violated).
    pub loss_tolerance: LossTolerance,
}

impl LatenessSpec {
    /// Reads a `lateness` table; every error names the key and the value.
    pub fn read(table: &toml::Table, path: String) -> Result<LatenessSpec, ConfigError> {
        let mut reader = TableReader::new(table, path);
        let deadline_gap = match reader.duration("deadline_gap")? {
            Some(0) => return Err(reader.error("deadline_gap", "must be longer than zero")),
            Some(gap) => gap,
            None => {
                return Err(reader.error(
                    "deadline_gap",
                    "is required: the time between consecutive deadlines, e.g. \"500us\"",
                ))
            }
        };
        let deadline_offset = reader.duration("deadline_offset")?.unwrap_or(deadline_gap);
        let loss_tolerance = match reader.string("loss_tolerance")? {
            None => LossTolerance { x: 1, y: 1 },
            Some(text) => LossTolerance::parse(text).map_err(|rule| reader.error("loss_tolerance", rule))?,
        };
        reader.finish_with(LATENESS_KEYS)?;
        Ok(LatenessSpec {
            deadline_gap,
            deadline_offset,
            loss_tolerance,
        })
    }
}

/// What the meter counted (measured packets only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatenessCounts {
    /// Packets metered (started service on the flow's first link).
    pub packets: u64,
    /// Deadlines missed: ⌈(start − deadline)/gap⌉ summed over late packets.
    pub deadlines_missed: u64,
    /// Packets that started service after their deadline, and the loss-tolerance windows they
    /// violate (sliding and fixed), counted as DWCS counts its own.
    pub window: LossWindowCounts,
}

impl LatenessCounts {
    /// Adds `other`'s counts (the longest late run as a maximum), e.g. over a class's flows.
    pub fn merge(&mut self, other: &LatenessCounts) {
        self.packets += other.packets;
        self.deadlines_missed += other.deadlines_missed;
        self.window.merge(&other.window);
    }
}

/// The lateness state of one flow (see the module docs).
#[derive(Clone, Debug)]
pub struct LatenessMeter {
    spec: LatenessSpec,
    /// Deadline of the last packet (moved on by the gaps it missed), ns.
    deadline: TimeNs,
    /// Service start of the last packet, ns.
    last_start: TimeNs,
    started: bool,
    /// Late packets against the loss-tolerance, every packet (measured or not) included.
    window: LossWindow,
    counts: LatenessCounts,
}

impl LatenessMeter {
    /// A meter before the flow's first packet.
    pub fn new(spec: LatenessSpec) -> LatenessMeter {
        LatenessMeter {
            spec,
            deadline: 0,
            last_start: 0,
            started: false,
            window: LossWindow::new(spec.loss_tolerance),
            counts: LatenessCounts::default(),
        }
    }

    /// A packet that arrived at the link at `arrival` starts service at `start`; it counts
    /// when `measured`.
    pub fn record(&mut self, arrival: TimeNs, start: TimeNs, measured: bool) {
        let spec = &self.spec;
        let from_arrival = arrival.saturating_add(spec.deadline_offset);
        let deadline = if !self.started {
            from_arrival
        } else if arrival <= self.last_start {
            self.deadline + spec.deadline_gap
        } else {
            from_arrival.max(self.deadline + spec.deadline_gap)
        };
        let misses = if start > deadline {
            (start - deadline).div_ceil(spec.deadline_gap)
        } else {
            0
        };
        self.deadline = deadline + misses * spec.deadline_gap;
        self.last_start = start;
        self.started = true;
        let step = self.window.packet(misses > 0);
        if measured {
            self.counts.packets += 1;
            self.counts.deadlines_missed += misses;
            self.counts.window.add(step);
        }
    }

    /// The counts so far.
    pub fn counts(&self) -> LatenessCounts {
        self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meter(gap: TimeNs, offset: TimeNs, x: u32, y: u32) -> LatenessMeter {
        LatenessMeter::new(LatenessSpec {
            deadline_gap: gap,
            deadline_offset: offset,
            loss_tolerance: LossTolerance { x, y },
        })
    }

    #[test]
    fn backlogged_flow_deadlines_follow_the_gap_and_move_on_when_missed() {
        // Gap 10, offset 10, all five packets queued at 0. Deadlines 10, 20, …; starts chosen
        // by hand: 0 (on time, D = 10), 25 (d = 20, late by 5: 1 miss, D = 30), 40 (d = 40,
        // on time: commencing at the deadline is on time), 71 (d = 50, late by 21: 3 misses,
        // D = 80), 85 (d = 90, on time).
        let mut m = meter(10, 10, 1, 2);
        for start in [0, 25, 40, 71, 85] {
            m.record(0, start, true);
        }
        let c = m.counts();
        assert_eq!(c.packets, 5);
        assert_eq!(c.deadlines_missed, 4);
        assert_eq!(c.window.late_packets, 2);
        assert_eq!(c.window.longest_late_run, 1);
        // Windows of 2: (on, late), (late, on), (on, late), (late, on): never more than 1 late.
        assert_eq!(c.window.loss_tolerance_violations, 0);
    }

    #[test]
    fn sliding_window_counts_every_packet_whose_window_is_over_tolerance() {
        // 1/3: packets late, late, on, late, late, late. Full windows ending at each packet:
        // [L,L,O]=2 (violation), [L,O,L]=2 (v), [O,L,L]=2 (v), [L,L,L]=3 (v). Fixed windows
        // (L,L,O) and (L,L,L): both violated.
        let mut m = meter(10, 0, 1, 3);
        // Deadlines with offset 0, queued from 0: 0, 10, 20, … ; a start 1 after a deadline
        // is late once and moves the chain on by one gap.
        let starts = [1, 21, 30, 51, 71, 91];
        for start in starts {
            m.record(0, start, true);
        }
        let c = m.counts();
        assert_eq!(c.window.late_packets, 5);
        assert_eq!(c.window.loss_tolerance_violations, 4);
        assert_eq!(c.window.fixed_window_violations, 2);
        assert_eq!(c.window.longest_late_run, 3);
    }

    #[test]
    fn an_idle_flow_restarts_from_its_arrival_but_never_shortens_the_spacing() {
        let mut m = meter(100, 50, 1, 1);
        m.record(0, 0, true); // d = 50
        m.record(60, 60, true); // idle: max(60 + 50, 50 + 100) = 150, on time
        m.record(1000, 1200, true); // idle: max(1050, 250) = 1050, late by 150: 2 misses
        let c = m.counts();
        assert_eq!(c.deadlines_missed, 2);
        assert_eq!(c.window.late_packets, 1);
    }

    #[test]
    fn unmeasured_packets_move_the_chain_but_are_not_counted() {
        let mut m = meter(10, 10, 0, 1);
        m.record(0, 30, false); // late, not counted; D = 30
        m.record(0, 35, true); // d = 40: on time
        let c = m.counts();
        assert_eq!(
            c,
            LatenessCounts {
                packets: 1,
                ..LatenessCounts::default()
            }
        );
    }

    #[test]
    fn bad_tables_name_the_key() {
        let table: toml::Table = toml::from_str("deadline_gap = \"0s\"").unwrap();
        let e = LatenessSpec::read(&table, "source[0].lateness".into()).unwrap_err();
        assert!(e.to_string().contains("source[0].lateness.deadline_gap"), "{e}");
        let table: toml::Table = toml::from_str("deadline_gap = \"1ms\"\nloss_tolerance = \"3/2\"").unwrap();
        let e = LatenessSpec::read(&table, "source[0].lateness".into()).unwrap_err();
        assert!(e.to_string().contains("loss_tolerance"), "{e}");
        let table: toml::Table = toml::from_str("deadline_gap = \"1ms\"\ngap = 1").unwrap();
        let e = LatenessSpec::read(&table, "source[0].lateness".into()).unwrap_err();
        assert!(e.to_string().contains("source[0].lateness.gap"), "{e}");
        let table: toml::Table = toml::from_str("loss_tolerance = \"1/2\"").unwrap();
        assert!(LatenessSpec::read(&table, "l".into()).is_err());
    }
}
