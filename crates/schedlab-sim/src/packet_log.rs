//! Per-packet output of the simulator (`schedlab run --packets FILE`): one row per measured
//! packet of the chosen flows, with the columns of the replay's departure table
//! (`flow,seq,size_bytes,arrival_s,start_s,departure_s,outcome`).
//!
//! In the simulator a packet may cross several links:
//! * `arrival_s` — the time it entered the network (left its source's shaper);
//! * `start_s` — the time its first bit went onto the *last* link of its path (empty if it
//!   never got there);
//! * `departure_s` — the time it reached its destination (last bit of the last link plus that
//!   link's propagation delay), or, for a packet that did not, the time it was dropped or lost;
//! * `outcome` — `sent`, `dropped` (refused, pushed out or discarded as late by a scheduler)
//!   or `lost` (random loss on a link, `loss` in the link table; a simulator-only outcome).
//!
//! `seq` is the packet's 0-based index among its flow's measured packets. Packets still in
//! the network when a run stops without draining (`drain = false`) have no row. TCP ACKs are
//! not packets of a flow and have no row.

use std::io::Write;
use std::path::Path;

use schedlab_core::{format_seconds, FlowId, TimeNs};

use crate::InputError;

/// What happened to a logged packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Still in the network.
    InFlight,
    /// Reached its destination.
    Sent {
        /// First bit onto the last link of the path, ns.
        start: TimeNs,
        /// Reception at the destination, ns.
        end: TimeNs,
    },
    /// Dropped by a scheduler at `at`.
    Dropped {
        /// Time of the drop, ns.
        at: TimeNs,
    },
    /// Lost on a link at `at` (random loss).
    Lost {
        /// Time of the loss, ns.
        at: TimeNs,
    },
}

/// One packet's row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketRecord {
    /// Flow id.
    pub flow: FlowId,
    /// 0-based index among the flow's logged packets.
    pub seq: u64,
    /// Size in bytes.
    pub size_bytes: u32,
    /// Entry into the network, ns.
    pub arrival: TimeNs,
    /// Start of transmission on the latest link reached so far, ns.
    pub start: Option<TimeNs>,
    /// What happened to it.
    pub fate: Fate,
}

/// Index of a packet's row (in its slot); [`PacketLog::NONE`] for packets not logged.
pub type RowIndex = u32;

/// The rows of one replication, for the chosen flows.
#[derive(Clone, Debug, Default)]
pub struct PacketLog {
    /// Flows to log (sorted); `None`: every flow.
    flows: Option<Vec<FlowId>>,
    /// Next `seq` per flow id.
    next_seq: Vec<u64>,
    /// The rows, in order of entry into the network.
    pub rows: Vec<PacketRecord>,
}

impl PacketLog {
    /// The row index of packets that are not logged.
    pub const NONE: RowIndex = RowIndex::MAX;

    /// A log of `flows` (every flow when `None`).
    pub fn new(flows: Option<&[FlowId]>) -> PacketLog {
        let flows = flows.map(|f| {
            let mut f = f.to_vec();
            f.sort_unstable();
            f.dedup();
            f
        });
        PacketLog {
            flows,
            next_seq: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// A measured packet of `flow` entered the network: its row index, or [`Self::NONE`].
    pub fn enter(&mut self, flow: FlowId, size_bytes: u32, arrival: TimeNs) -> RowIndex {
        if let Some(flows) = &self.flows {
            if flows.binary_search(&flow).is_err() {
                return Self::NONE;
            }
        }
        if self.rows.len() >= Self::NONE as usize {
            return Self::NONE;
        }
        let f = flow as usize;
        if f >= self.next_seq.len() {
            self.next_seq.resize(f + 1, 0);
        }
        let seq = self.next_seq[f];
        self.next_seq[f] += 1;
        self.rows.push(PacketRecord {
            flow,
            seq,
            size_bytes,
            arrival,
            start: None,
            fate: Fate::InFlight,
        });
        (self.rows.len() - 1) as RowIndex
    }

    /// The packet of row `row` starts transmission on a link at `now`.
    #[inline]
    pub fn start(&mut self, row: RowIndex, now: TimeNs) {
        if row != Self::NONE {
            self.rows[row as usize].start = Some(now);
        }
    }

    /// The packet of row `row` reached its destination at `now`.
    #[inline]
    pub fn delivered(&mut self, row: RowIndex, now: TimeNs) {
        if row != Self::NONE {
            let record = &mut self.rows[row as usize];
            record.fate = Fate::Sent {
                start: record.start.unwrap_or(record.arrival),
                end: now,
            };
        }
    }

    /// The packet of row `row` met its fate.
    #[inline]
    pub fn end(&mut self, row: RowIndex, fate: Fate) {
        if row != Self::NONE {
            self.rows[row as usize].fate = fate;
        }
    }

    /// Writes the rows (packets still in flight left out) as CSV to `path`, atomically: a
    /// failure leaves no file that looks complete. Returns the number of rows written.
    pub fn write(&self, path: &Path) -> Result<u64, InputError> {
        let io = |e: std::io::Error| InputError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        let partial = path.with_extension("csv.partial");
        let mut written = 0;
        {
            let file = std::fs::File::create(&partial).map_err(io)?;
            let mut out = std::io::BufWriter::new(file);
            writeln!(out, "flow,seq,size_bytes,arrival_s,start_s,departure_s,outcome").map_err(io)?;
            for row in &self.rows {
                let start = row.start.map(format_seconds).unwrap_or_default();
                let (departure, outcome) = match row.fate {
                    Fate::InFlight => continue,
                    Fate::Sent { end, .. } => (end, "sent"),
                    Fate::Dropped { at } => (at, "dropped"),
                    Fate::Lost { at } => (at, "lost"),
                };
                // A dropped packet's start is empty, as in the replay's table, unless it was
                // dropped at a later link than one it was sent on.
                let start = match row.fate {
                    Fate::Sent { start, .. } => format_seconds(start),
                    _ => start,
                };
                writeln!(
                    out,
                    "{},{},{},{},{},{},{}",
                    row.flow,
                    row.seq,
                    row.size_bytes,
                    format_seconds(row.arrival),
                    start,
                    format_seconds(departure),
                    outcome
                )
                .map_err(io)?;
                written += 1;
            }
            out.flush().map_err(io)?;
        }
        std::fs::rename(&partial, path).map_err(io)?;
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_follow_the_replay_columns_and_leave_out_packets_in_flight() {
        let mut log = PacketLog::new(Some(&[3, 1]));
        assert_eq!(log.enter(2, 100, 5), PacketLog::NONE);
        let a = log.enter(1, 100, 1_000_000);
        let b = log.enter(3, 200, 2_000_000);
        let c = log.enter(1, 300, 3_000_000);
        let d = log.enter(1, 400, 4_000_000);
        log.start(a, 1_500_000);
        log.end(
            a,
            Fate::Sent {
                start: 1_500_000,
                end: 2_500_000,
            },
        );
        log.end(b, Fate::Dropped { at: 2_000_000 });
        log.start(c, 3_000_000);
        log.end(c, Fate::Lost { at: 3_100_000 });
        log.start(d, 4_000_000);
        let dir = std::env::temp_dir().join(format!("schedlab-packet-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("packets.csv");
        assert_eq!(log.write(&path).unwrap(), 3);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "flow,seq,size_bytes,arrival_s,start_s,departure_s,outcome\n\
             1,0,100,0.001000000,0.001500000,0.002500000,sent\n\
             3,0,200,0.002000000,,0.002000000,dropped\n\
             1,1,300,0.003000000,0.003000000,0.003100000,lost\n"
        );
        assert!(!path.with_extension("csv.partial").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
