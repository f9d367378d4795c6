//! Hierarchical scheduling: a class of a discipline served by any discipline, and the
//! threshold dropper on a class queue.
//!
//! Papers: Yokota, Kato, Tominaga, "A New Round Robin Scheduling Algorithm for Multimedia
//! Traffic and Differentiated Services Router Implementation" (paper 003), §4 and figure 4:
//! a DiffServ router's queueing element is "decomposed into queues, schedulers, and
//! algorithmic droppers" — FIFO class queues under EWRR, priority classes ahead of best
//! effort (§5.2), and "a threshold-dropper, which simply discards packets when the queue
//! length exceeds a predefined threshold". Wang, Lung, Majumdar (paper 001), §3: Gold,
//! Silver and Bronze class queues under a CPU policy. The recursive form follows RFC 3290
//! §7 (a scheduler's inputs may be the outputs of other schedulers) and Linux's classful
//! qdiscs (HTB, DRR, PRIO with a child qdisc per class).
//!
//! Configuration (one recursive form, at any depth):
//!
//! ```toml
//! scheduler = { kind = "priority", classes = [
//!     { kind = "fifo", threshold = "64KB" },                          # packet class 0 (EF)
//!     { kind = "ewrr", packet_classes = [1, 2, 3], classes = [        # AF1..AF3 under EWRR
//!         { kind = "fifo", packet_classes = [1], params = { weight_bytes = 1500 } },
//!         { kind = "fifo", packet_classes = [2], params = { weight_bytes = 1500 } },
//!         { kind = "drr", packet_classes = [3], params = { weight_bytes = 3000 } },
//!     ] },
//! ] }
//! ```
//!
//! Names → code:
//! * the node's discipline (`kind` beside `classes`) → `parent`, an [`AnyScheduler`] whose
//!   "flows" are the node's classes: class `i` is flow `i` (and packet class `i`) to it, and
//!   its per-flow keys for class `i` are the class's `params` table (`quantum`,
//!   `weight_bytes`, `share`, `priority`, …);
//! * a class → [`ClassQueue`]: its own scheduler (`kind` and that discipline's keys, or
//!   another `classes` list), its threshold dropper (`threshold` in bytes, the paper's unit,
//!   and/or `threshold_packets`) and the packet classes it takes (`packet_classes`, default
//!   `[i]` for the `i`-th class);
//! * the "queue length" of the threshold dropper → the class's backlog (all its packets, in
//!   whatever sub-queues its scheduler keeps).
//!
//! How it works: an arriving packet goes to its class's scheduler; if that scheduler keeps
//! it, the parent is given a *token* — a copy of the descriptor with `flow` and `class` set
//! to the class index. When the parent dequeues a token of class `i`, class `i`'s scheduler
//! dequeues the packet that is sent. So the parent decides *which class* sends next and the
//! class decides *which of its packets*, through the same [`Scheduler`] trait at every level.
//!
//! Invariants: every packet given to `enqueue` comes back exactly once (sent, or dropped with
//! the reason of the component that dropped it); the node's counters hold exactly the packets
//! in its classes; per class, the parent holds one token per packet the class holds plus
//! `stale[i]` tokens of packets the class itself dropped after queueing them (push-out, late);
//! FIFO within a flow whenever the flow's class scheduler keeps it (every discipline does);
//! the node is work conserving when its parent is (class schedulers must be work conserving).
//! A one-class hierarchy sends exactly what its class scheduler alone sends (tested).
//!
//! Choices where the papers are silent:
//! * The threshold dropper refuses an arriving packet when the class's backlog *with it*
//!   would exceed the threshold, so the queue length never exceeds the threshold (drop reason
//!   `threshold`). It is checked before the class's scheduler sees the packet; the class's
//!   own `buffer` (the discipline's buffer, reason `buffer_full`) still applies after it.
//! * A token carries the size of the packet whose arrival made it. With FIFO class queues
//!   (paper 003's, and a one-flow class) the token's size is that of the packet sent, so the
//!   parent's byte accounting is exact. A class whose scheduler reorders its packets (DRR
//!   among flows) sends packets in another order than their tokens: the parent's count of a
//!   class's bytes then differs from the bytes sent by at most the class's backlog, and is
//!   exact whenever the class empties — long-run shares are the parent's, the order within
//!   the class its own.
//! * When the parent drops a token (DWCS late, a parent's own limit), the class drops the
//!   packet it would have sent next, with the parent's reason.
//! * A packet class that no class lists goes to the last class (as Fixed-Link treats a class
//!   beyond its vector); a class listed twice is a configuration error.
//! * The node's `buffer` / `buffer_packets` (the link's buffer merged into the scheduler
//!   table) bound the node's total backlog (reason `buffer_full`); only tail drop is offered
//!   at a node (`drop_policy = "longest_queue_drop"` belongs to a class with per-flow queues).
//! * A class scheduler must be work conserving (a class holding packets back while its token
//!   says "send" would stall the parent); non-work-conserving disciplines are refused as
//!   classes, and may be the parent.
//! * Leaf flows' keys (`[flow_defaults]`, `[[flow]]`, a source's `params`) go to every class
//!   scheduler; in a tree of different disciplines, put each discipline's keys in a sub-table
//!   named after it (`params = { drr = { quantum = 3000 } }`), as for a sweep over kinds.
//! * The node reports its parent's id (`id()`, so results name the node's kind) and its
//!   parent's own counters (`discipline_counters`), not its classes'.

use crate::config::{join_path, BufferLimit, ConfigError, DropPolicy, FlowTable, TableReader};
use crate::counters::{Counters, DropReason, Dropped};
use crate::packet::{FlowId, Packet, MAX_FLOW_ID};
use crate::registry::{build_scheduler, discipline_info, AnyScheduler};
use crate::scheduler::Scheduler;
use crate::time::{Rate, TimeNs};

/// Keys of a class entry besides its scheduler's own (`kind`, the discipline's keys,
/// `buffer`, `classes`, …).
pub const CLASS_KEYS: &[&str] = &["params", "threshold", "threshold_packets", "packet_classes"];

/// The threshold dropper of a class queue (paper 003 §4): the most bytes and/or packets the
/// class may hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Threshold {
    /// Largest backlog in bytes (`threshold`).
    pub bytes: Option<u64>,
    /// Largest backlog in packets (`threshold_packets`).
    pub packets: Option<u64>,
}

impl Threshold {
    /// Whether a class holding `packets` packets and `bytes` bytes may take one more packet
    /// of `size` bytes.
    #[inline]
    pub fn admits(&self, packets: u64, bytes: u64, size: u32) -> bool {
        self.bytes.is_none_or(|limit| bytes + size as u64 <= limit)
            && self.packets.is_none_or(|limit| packets < limit)
    }
}

/// One class of a hierarchy node: its scheduler and its threshold dropper.
#[derive(Clone, Debug)]
pub struct ClassQueue {
    /// The class's scheduler (any discipline, or another hierarchy node).
    pub scheduler: AnyScheduler,
    /// The class queue's threshold dropper (`None`: no threshold).
    pub threshold: Option<Threshold>,
}

/// A hierarchy node: a parent discipline serving classes, each served by its own scheduler
/// (see the module documentation).
#[derive(Clone, Debug)]
pub struct Hierarchy {
    parent: AnyScheduler,
    classes: Vec<ClassQueue>,
    /// Packet class → index of the class that takes it.
    class_of: [u8; 256],
    /// Per class: tokens in the parent whose packet the class already dropped.
    stale: Vec<u64>,
    counters: Counters,
    limit: BufferLimit,
    /// Drops found while peeking, reported by the next enqueue or dequeue.
    pending: Vec<Dropped>,
    /// Drops reported by a class scheduler or the parent, sorted out before reporting.
    scratch: Vec<Dropped>,
    /// A packet a class gave up while the node was peeking, sent by the next dequeue.
    held: Option<Packet>,
}

impl Hierarchy {
    /// Builds the node of the scheduler table `table` at `path` (`scheduler`,
    /// `link[1].scheduler`, `scheduler.classes[1]`), which has a `classes` array. Errors name
    /// the path of the bad key (`scheduler.classes[1].quantum`).
    pub fn build(
        table: &toml::Table,
        path: &str,
        flows: &FlowTable,
        link_rate: Rate,
    ) -> Result<Hierarchy, ConfigError> {
        let node = Hierarchy::build_node(table, path, flows, link_rate)?;
        // Each class scheduler read the flow keys of its discipline; a key that no class of
        // the tree reads is a mistake (a typo, a key of a discipline not in the tree).
        let mut read = Vec::new();
        node.leaf_flow_keys(&mut read);
        if let Some((table_path, key)) = flows.keys().find(|(_, key)| !read.contains(key)) {
            read.sort_unstable();
            read.dedup();
            let value = flows_value(flows, table_path, key);
            return Err(ConfigError::new(
                join_path(table_path, key),
                value,
                format!(
                    "not a flow key of any class scheduler of {path}, which read {}",
                    if read.is_empty() {
                        "no flow keys".to_string()
                    } else {
                        format!("only {}", read.join(", "))
                    }
                ),
            ));
        }
        Ok(node)
    }

    /// The flow keys the leaf schedulers of this tree read.
    fn leaf_flow_keys(&self, keys: &mut Vec<&'static str>) {
        for class in &self.classes {
            match &class.scheduler {
                AnyScheduler::Hierarchy(node) => node.leaf_flow_keys(keys),
                leaf => {
                    if let Some(info) = discipline_info(leaf.id()) {
                        keys.extend(info.flow_params.iter().map(|p| p.name));
                    }
                }
            }
        }
    }

    /// Builds one node; its class schedulers see only their own disciplines' flow keys.
    fn build_node(
        table: &toml::Table,
        path: &str,
        flows: &FlowTable,
        link_rate: Rate,
    ) -> Result<Hierarchy, ConfigError> {
        let classes_path = join_path(path, "classes");
        let entries = match table.get("classes") {
            Some(toml::Value::Array(entries)) => entries,
            Some(other) => {
                return Err(ConfigError::new(
                    classes_path,
                    other.to_string(),
                    "must be an array of class tables, e.g. [ { kind = \"fifo\" }, { kind = \"drr\" } ]",
                ))
            }
            None => {
                return Err(ConfigError::new(
                    classes_path,
                    "(missing)",
                    "a hierarchy node needs classes",
                ))
            }
        };
        if entries.is_empty() || entries.len() > 256 {
            return Err(ConfigError::new(
                classes_path,
                format!("{} classes", entries.len()),
                "a node has 1 to 256 classes",
            ));
        }
        // The node's own buffer keys bound its total backlog; the parent holds only tokens.
        let mut parent_table = table.clone();
        parent_table.remove("classes");
        let mut reader = TableReader::new(table, path);
        let limit = BufferLimit::read(&mut reader)?;
        if limit.policy != DropPolicy::TailDrop {
            return Err(reader.error(
                "drop_policy",
                "a hierarchy node drops at its classes: give \"longest_queue_drop\" to a class whose discipline has per-flow queues",
            ));
        }
        for key in ["buffer", "buffer_packets", "drop_policy"] {
            parent_table.remove(key);
        }
        let mut class_flows = FlowTable::uniform(toml::Table::new());
        class_flows.defaults_path = classes_path.clone();
        let mut classes = Vec::with_capacity(entries.len());
        let mut class_of = [u8::MAX; 256];
        let mut claimed = [false; 256];
        for (index, entry) in entries.iter().enumerate() {
            let class_path = format!("{classes_path}[{index}]");
            let toml::Value::Table(entry) = entry else {
                return Err(ConfigError::new(
                    class_path,
                    entry.to_string(),
                    "a class is a table such as { kind = \"fifo\" }",
                ));
            };
            let mut reader = TableReader::new(entry, class_path.clone());
            if let Some(params) = reader.table("params")? {
                class_flows.set(index as FlowId, params.clone(), join_path(&class_path, "params"));
            }
            let bytes = reader.size("threshold")?;
            if bytes == Some(0) {
                return Err(reader.error("threshold", "must be at least 1 byte"));
            }
            let packets = reader
                .integer("threshold_packets", 1, i64::MAX)?
                .map(|p| p as u64);
            let threshold = (bytes.is_some() || packets.is_some()).then_some(Threshold { bytes, packets });
            let packet_classes: Vec<u8> = match reader.value("packet_classes") {
                None => vec![index as u8],
                Some(toml::Value::Array(values)) if !values.is_empty() => {
                    let mut list = Vec::with_capacity(values.len());
                    for value in values {
                        match value.as_integer() {
                            Some(class @ 0..=255) => list.push(class as u8),
                            _ => {
                                return Err(reader.error(
                                    "packet_classes",
                                    "must be a non-empty list of packet classes 0 to 255, e.g. [1, 2, 3]",
                                ))
                            }
                        }
                    }
                    list
                }
                Some(_) => {
                    return Err(reader.error(
                        "packet_classes",
                        "must be a non-empty list of packet classes 0 to 255, e.g. [1, 2, 3]",
                    ))
                }
            };
            for class in packet_classes {
                if claimed[class as usize] {
                    return Err(reader.error(
                        "packet_classes",
                        format!("packet class {class} is already taken by another class of this node"),
                    ));
                }
                claimed[class as usize] = true;
                class_of[class as usize] = index as u8;
            }
            let mut child_table = entry.clone();
            for key in CLASS_KEYS {
                child_table.remove(*key);
            }
            let scheduler = if child_table.contains_key("classes") {
                AnyScheduler::Hierarchy(Box::new(Hierarchy::build_node(
                    &child_table,
                    &class_path,
                    flows,
                    link_rate,
                )?))
            } else {
                let reads: Vec<&str> = child_table
                    .get("kind")
                    .and_then(toml::Value::as_str)
                    .and_then(discipline_info)
                    .map(|info| info.flow_params.iter().map(|p| p.name).collect())
                    .unwrap_or_default();
                build_scheduler(&child_table, &class_path, &flows.keeping(&reads), link_rate)?
            };
            if !scheduler.is_work_conserving() {
                return Err(ConfigError::new(
                    join_path(&class_path, "kind"),
                    format!("{:?}", scheduler.id()),
                    "a class's scheduler must be work conserving (it may hold packets back only as the node's own kind)",
                ));
            }
            classes.push(ClassQueue { scheduler, threshold });
        }
        let last = (classes.len() - 1) as u8;
        for class in class_of.iter_mut() {
            if *class == u8::MAX {
                *class = last;
            }
        }
        let parent = build_scheduler(&parent_table, path, &class_flows, link_rate)?;
        let count = classes.len();
        Ok(Hierarchy {
            parent,
            classes,
            class_of,
            stale: vec![0; count],
            counters: Counters::default(),
            limit,
            pending: Vec::new(),
            scratch: Vec::new(),
            held: None,
        })
    }

    /// The node's classes, in configuration order.
    pub fn classes(&self) -> &[ClassQueue] {
        &self.classes
    }

    /// The discipline that serves the classes.
    pub fn parent(&self) -> &AnyScheduler {
        &self.parent
    }

    /// The index of the class that takes packets of packet class `class`.
    pub fn class_index(&self, class: u8) -> usize {
        self.class_of[class as usize] as usize
    }

    /// The token the parent holds for `packet` of class `index`.
    #[inline]
    fn token(packet: &Packet, index: usize) -> Packet {
        Packet {
            flow: index as FlowId,
            class: index as u8,
            ..*packet
        }
    }

    /// Records and reports drops a class scheduler made while handling something else: each
    /// was queued, so its token in the parent is stale.
    fn settle_class_drops(&mut self, index: usize, drops: &mut Vec<Dropped>) {
        for dropped in self.scratch.drain(..) {
            self.stale[index] += 1;
            self.counters.record_drop(&dropped.packet, dropped.reason, true);
            drops.push(dropped);
        }
    }

    /// The parent dropped tokens (in `self.scratch`): each class concerned drops the packet
    /// it would have sent next, with the parent's reason.
    fn settle_parent_drops(&mut self, now: TimeNs, drops: &mut Vec<Dropped>) {
        let tokens: Vec<Dropped> = self.scratch.drain(..).collect();
        for token in tokens {
            let index = token.packet.flow as usize;
            if self.stale[index] > 0 {
                self.stale[index] -= 1;
                continue;
            }
            if let Some(packet) = self.classes[index].scheduler.dequeue(now, &mut self.scratch) {
                self.counters.record_drop(&packet, token.reason, true);
                drops.push(Dropped {
                    packet,
                    reason: token.reason,
                });
            }
            self.settle_class_drops(index, drops);
        }
    }
}

/// The value of `key` in the flow table at `table_path`, as TOML text.
fn flows_value(flows: &FlowTable, table_path: &str, key: &str) -> String {
    std::iter::once(&flows.defaults)
        .chain(
            flows
                .overrides
                .values()
                .filter(|(_, p)| p == table_path)
                .map(|(t, _)| t),
        )
        .find_map(|table| table.get(key))
        .map_or_else(|| "(missing)".to_string(), ToString::to_string)
}

impl Scheduler for Hierarchy {
    fn id(&self) -> &'static str {
        self.parent.id()
    }

    fn enqueue(&mut self, packet: Packet, now: TimeNs, drops: &mut Vec<Dropped>) {
        drops.append(&mut self.pending);
        if packet.flow > MAX_FLOW_ID {
            self.counters.refuse_invalid_flow(packet, drops);
            return;
        }
        self.counters.record_arrival(&packet);
        let backlog = self.counters.backlog();
        let index = self.class_of[packet.class as usize] as usize;
        let refused = if !self
            .limit
            .fits(backlog.packets + 1, backlog.bytes + packet.size as u64)
        {
            Some(DropReason::BufferFull)
        } else {
            let class = &self.classes[index];
            let held = class.scheduler.backlog();
            class
                .threshold
                .filter(|t| !t.admits(held.packets, held.bytes, packet.size))
                .map(|_| DropReason::Threshold)
        };
        if let Some(reason) = refused {
            self.counters.record_drop(&packet, reason, false);
            drops.push(Dropped { packet, reason });
            return;
        }
        self.scratch.clear();
        self.classes[index]
            .scheduler
            .enqueue(packet, now, &mut self.scratch);
        let mut accepted = true;
        for dropped in self.scratch.drain(..) {
            let arriving = dropped.packet.id == packet.id && dropped.packet.flow == packet.flow;
            if arriving && accepted {
                accepted = false;
            } else {
                self.stale[index] += 1;
            }
            self.counters
                .record_drop(&dropped.packet, dropped.reason, !arriving);
            drops.push(dropped);
        }
        if accepted {
            self.counters.record_queued(&packet);
            self.parent
                .enqueue(Self::token(&packet, index), now, &mut self.scratch);
            self.settle_parent_drops(now, drops);
        }
    }

    fn dequeue(&mut self, now: TimeNs, drops: &mut Vec<Dropped>) -> Option<Packet> {
        drops.append(&mut self.pending);
        if let Some(packet) = self.held.take() {
            self.counters.record_sent(&packet);
            return Some(packet);
        }
        loop {
            self.scratch.clear();
            let token = self.parent.dequeue(now, &mut self.scratch);
            self.settle_parent_drops(now, drops);
            let token = token?;
            let index = token.flow as usize;
            if self.stale[index] > 0 {
                self.stale[index] -= 1;
                self.parent.not_served(&token);
                continue;
            }
            let sent = self.classes[index].scheduler.dequeue(now, &mut self.scratch);
            self.settle_class_drops(index, drops);
            match sent {
                Some(packet) => {
                    self.counters.record_sent(&packet);
                    return Some(packet);
                }
                None => {
                    // The class dropped what this token stood for (counted stale just now).
                    self.stale[index] = self.stale[index].saturating_sub(1);
                    self.parent.not_served(&token);
                }
            }
        }
    }

    fn peek(&mut self, now: TimeNs) -> Option<Packet> {
        if self.held.is_some() {
            return self.held;
        }
        loop {
            let token = self.parent.peek(now)?;
            let index = token.flow as usize;
            let mut drops = std::mem::take(&mut self.pending);
            if self.stale[index] == 0 {
                if let Some(packet) = self.classes[index].scheduler.peek(now) {
                    self.pending = drops;
                    return Some(packet);
                }
                // The class holds none of the packets counted in it: it dropped them while
                // peeking (DWCS's late heads) and reports them in its next call — ask for them.
                self.scratch.clear();
                let sent = self.classes[index].scheduler.dequeue(now, &mut self.scratch);
                self.settle_class_drops(index, &mut drops);
                if let Some(packet) = sent {
                    // Not expected after an empty peek; keep the packet for the next dequeue.
                    self.scratch.clear();
                    self.parent.dequeue(now, &mut self.scratch);
                    self.settle_parent_drops(now, &mut drops);
                    self.pending = drops;
                    self.held = Some(packet);
                    return self.held;
                }
                if self.stale[index] == 0 {
                    self.pending = drops;
                    return None;
                }
            }
            // A stale token: take it out as the next dequeue would, keeping the drops.
            self.scratch.clear();
            let taken = self.parent.dequeue(now, &mut self.scratch);
            self.settle_parent_drops(now, &mut drops);
            self.pending = drops;
            let taken = taken?;
            let index = taken.flow as usize;
            self.stale[index] = self.stale[index].saturating_sub(1);
            self.parent.not_served(&taken);
        }
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn next_wakeup(&self, now: TimeNs) -> Option<TimeNs> {
        self.parent.next_wakeup(now)
    }

    fn is_work_conserving(&self) -> bool {
        self.parent.is_work_conserving()
    }

    fn not_served(&mut self, packet: &Packet) {
        let index = self.class_of[packet.class as usize] as usize;
        self.parent.not_served(&Self::token(packet, index));
        self.classes[index].scheduler.not_served(packet);
    }

    fn discipline_counters(&self) -> Vec<(&'static str, u64)> {
        self.parent.discipline_counters()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::{run_link, Outcome};
    use crate::testkit;
    use proptest::prelude::*;

    fn build_with(text: &str, flows: &FlowTable) -> Result<AnyScheduler, ConfigError> {
        let table: toml::Table = text.parse().unwrap();
        build_scheduler(&table, "scheduler", flows, testkit::link())
    }

    fn build(text: &str) -> Result<AnyScheduler, ConfigError> {
        build_with(text, &FlowTable::default())
    }

    fn packet(id: u64, flow: FlowId, class: u8, size: u32, arrival: TimeNs) -> Packet {
        Packet {
            class,
            ..Packet::new(id, flow, size, arrival)
        }
    }

    /// Threshold 1000 bytes on a FIFO class, 400-byte packets on the 1 byte/µs test link.
    /// t = 0: p0..p4 arrive before the first dequeue: p0, p1 fit (800), p2, p3, p4 would make
    /// 1200 and are dropped. The link takes p0 at 0 (backlog 400), p5 at 100 µs fits (800),
    /// p6 at 200 µs does not (1200). p1 starts at 400 µs (backlog 400: p5), so p7 at 500 µs
    /// fits. Sent: p0, p1, p5, p7; `threshold` drops: p2, p3, p4, p6.
    #[test]
    fn threshold_drops_hand_derived() {
        let mut node = build(
            "kind = \"priority\"\nclasses = [ { kind = \"fifo\", threshold = 1000 }, { kind = \"fifo\" } ]",
        )
        .unwrap();
        let trace: Vec<Packet> = [0, 0, 0, 0, 0, 100_000, 200_000, 500_000]
            .iter()
            .enumerate()
            .map(|(id, &t)| packet(id as u64, 1, 0, 400, t))
            .collect();
        let run = run_link(&mut node, testkit::link(), &trace).unwrap();
        let sent: Vec<usize> = run.send_order.iter().map(|(i, _)| *i).collect();
        assert_eq!(sent, vec![0, 1, 5, 7]);
        for i in [2, 3, 4, 6] {
            assert!(
                matches!(
                    run.outcomes[i],
                    Some(Outcome::Dropped {
                        reason: DropReason::Threshold,
                        ..
                    })
                ),
                "packet {i}: {:?}",
                run.outcomes[i]
            );
        }
        let flow = node.counters().flow(1).unwrap();
        assert_eq!(flow.dropped(DropReason::Threshold), 4);
        assert_eq!(flow.sent_packets, 4);
    }

    /// `threshold_packets = 2` on class 1 only: class 0 (no threshold) keeps all three of its
    /// packets while class 1 keeps two of three; counts per reason and per flow.
    #[test]
    fn packet_threshold_applies_to_its_class_only() {
        let mut node = build(
            "kind = \"priority\"\nclasses = [ { kind = \"fifo\" }, { kind = \"fifo\", threshold_packets = 2 } ]",
        )
        .unwrap();
        let trace: Vec<Packet> = (0..6)
            .map(|id| packet(id, (id % 2) as FlowId, (id % 2) as u8, 100, 0))
            .collect();
        let run = run_link(&mut node, testkit::link(), &trace).unwrap();
        let sent: Vec<usize> = run.send_order.iter().map(|(i, _)| *i).collect();
        // Strict priority: class 0's packets 0, 2, 4 first, then class 1's 1, 3 (5 dropped).
        assert_eq!(sent, vec![0, 2, 4, 1, 3]);
        assert_eq!(node.counters().flow(1).unwrap().dropped(DropReason::Threshold), 1);
        assert_eq!(node.counters().flow(0).unwrap().dropped_total(), 0);
    }

    /// HTB-style: DRR between two classes with quanta 2000 : 1000 bytes; class 0 is DRR among
    /// flows 0 and 1 with quanta 1500 : 500, class 1 one FIFO flow. All backlogged with
    /// 500-byte packets: class 0 gets 2/3 of the link and divides it 3 : 1, so flows 0, 1, 2
    /// get 1/2, 1/6 and 1/3 (exact after whole rounds: 6 packets per round, 120 rounds).
    #[test]
    fn a_class_share_is_divided_among_its_children() {
        let mut flows = FlowTable::default();
        flows.set(0, testkit::params("quantum = 1500"), "flow[0]");
        flows.set(1, testkit::params("quantum = 500"), "flow[1]");
        let mut node = build_with(
            "kind = \"drr\"\nclasses = [ { kind = \"drr\", params = { quantum = 2000 } }, \
             { kind = \"fifo\", params = { quantum = 1000 } } ]",
            &flows,
        )
        .unwrap();
        let mut drops = Vec::new();
        let mut id = 0;
        for _ in 0..400 {
            for (flow, class) in [(0, 0), (1, 0), (2, 1)] {
                node.enqueue(packet(id, flow, class, 500, 0), 0, &mut drops);
                id += 1;
            }
        }
        assert!(drops.is_empty());
        let mut served = [0u64; 3];
        for k in 0..720 {
            let p = node.dequeue(k, &mut drops).unwrap();
            served[p.flow as usize] += p.size as u64;
        }
        let total: u64 = served.iter().sum();
        assert_eq!(total, 360_000);
        assert_eq!(served, [180_000, 60_000, 120_000]);
    }

    /// Paper 003's DiffServ queueing: EF strictly first, then EWRR among three AF classes with
    /// W = 1500 bytes each, classes given as packet-class lists at two levels.
    #[test]
    fn priority_over_ewrr_serves_ef_first_then_shares_equally() {
        let mut node = build(
            "kind = \"priority\"\nclasses = [ { kind = \"fifo\" }, { kind = \"ewrr\", packet_classes = [1, 2, 3], classes = [ \
             { kind = \"fifo\", packet_classes = [1], params = { weight_bytes = 1500 } }, \
             { kind = \"fifo\", packet_classes = [2], params = { weight_bytes = 1500 } }, \
             { kind = \"fifo\", packet_classes = [3], params = { weight_bytes = 1500 } } ] } ]",
        )
        .unwrap();
        let mut drops = Vec::new();
        let mut id = 0;
        for _ in 0..300 {
            for class in 0..4u8 {
                node.enqueue(packet(id, class as FlowId, class, 500, 0), 0, &mut drops);
                id += 1;
            }
        }
        let mut served = [0u64; 4];
        for k in 0..300 {
            let p = node.dequeue(k, &mut drops).unwrap();
            assert_eq!(p.class, 0, "EF first");
            served[0] += p.size as u64;
        }
        for k in 0..810 {
            let p = node.dequeue(k, &mut drops).unwrap();
            served[p.class as usize] += p.size as u64;
        }
        assert_eq!(served[1], served[2]);
        assert_eq!(served[2], served[3]);
        assert_eq!(served[1], 135_000);
    }

    #[test]
    fn config_errors_name_the_path_of_the_bad_key() {
        let cases = [
            (
                "kind = \"priority\"\nclasses = [ { kind = \"fifo\" }, { kind = \"drr\", quantum = 0 } ]",
                "scheduler.classes[1].quantum",
            ),
            (
                "kind = \"drr\"\nclasses = [ { kind = \"fifo\", params = { quantum = 0 } } ]",
                "scheduler.classes[0].params.quantum",
            ),
            (
                "kind = \"drr\"\nclasses = [ { kind = \"fifo\", params = { weight = 2 } } ]",
                "scheduler.classes[0].params.weight",
            ),
            ("kind = \"priority\"\nclasses = [ { kind = \"fifoo\" } ]", "scheduler.classes[0].kind"),
            ("kind = \"priority\"\nclasses = [ { quantum = 3 } ]", "scheduler.classes[0].kind"),
            ("kind = \"priority\"\nclasses = [ { kind = \"fifo\", threshold = 0 } ]", "scheduler.classes[0].threshold"),
            (
                "kind = \"priority\"\nclasses = [ { kind = \"fifo\", threshold_packets = -1 } ]",
                "scheduler.classes[0].threshold_packets",
            ),
            (
                "kind = \"priority\"\nclasses = [ { kind = \"fifo\", colour = 1 } ]",
                "scheduler.classes[0].colour",
            ),
            (
                "kind = \"priority\"\nclasses = [ { kind = \"fifo\" }, { kind = \"fifo\", packet_classes = [0] } ]",
                "scheduler.classes[1].packet_classes",
            ),
            (
                "kind = \"priority\"\nclasses = [ { kind = \"fifo\", packet_classes = [300] } ]",
                "scheduler.classes[0].packet_classes",
            ),
            ("kind = \"priority\"\nclasses = []", "scheduler.classes"),
            ("kind = \"priority\"\nclasses = 3", "scheduler.classes"),
            (
                "kind = \"priority\"\nclasses = [ { kind = \"drr\", classes = [ { kind = \"fifo\" }, { kind = \"wfq\", mtu = 0 } ] } ]",
                "scheduler.classes[0].classes[1].mtu",
            ),
            ("kind = \"prio\"\nclasses = [ { kind = \"fifo\" } ]", "scheduler.kind"),
            (
                "kind = \"drr\"\ndrop_policy = \"longest_queue_drop\"\nclasses = [ { kind = \"fifo\" } ]",
                "scheduler.drop_policy",
            ),
        ];
        for (text, path) in cases {
            let e = build(text).unwrap_err();
            assert_eq!(e.path, path, "{text}: {e}");
        }
        // A leaf flow key no class reads names the flow table and the keys the tree reads.
        let mut flows = FlowTable::default();
        flows.set(
            3,
            testkit::params("quantum = 500\nweight = 2"),
            "source[3].params",
        );
        let e = build_with(
            "kind = \"priority\"\nclasses = [ { kind = \"fifo\" }, { kind = \"drr\" } ]",
            &flows,
        )
        .unwrap_err();
        assert_eq!(e.path, "source[3].params.weight");
        assert!(e.rule.contains("only quantum"), "{e}");
        // Below a link, paths keep the link's prefix.
        let table: toml::Table = "kind = \"drr\"\nclasses = [ { kind = \"drr\", quantum = 0 } ]"
            .parse()
            .unwrap();
        let e = build_scheduler(
            &table,
            "link[2].scheduler",
            &FlowTable::default(),
            testkit::link(),
        )
        .unwrap_err();
        assert_eq!(e.path, "link[2].scheduler.classes[0].quantum");
    }

    /// Unlisted packet classes go to the last class; the node's own buffer bounds the total.
    #[test]
    fn unlisted_classes_go_to_the_last_class_and_the_node_buffer_is_shared() {
        let node = build("kind = \"priority\"\nclasses = [ { kind = \"fifo\" }, { kind = \"fifo\", packet_classes = [5] } ]")
            .unwrap();
        let AnyScheduler::Hierarchy(node) = node else {
            panic!("a hierarchy")
        };
        assert_eq!(node.class_index(0), 0);
        assert_eq!(node.class_index(5), 1);
        assert_eq!(node.class_index(7), 1);
        let mut node = build(
            "kind = \"priority\"\nbuffer = 1000\nclasses = [ { kind = \"fifo\" }, { kind = \"fifo\" } ]",
        )
        .unwrap();
        let mut drops = Vec::new();
        node.enqueue(packet(0, 0, 1, 600, 0), 0, &mut drops);
        node.enqueue(packet(1, 1, 0, 600, 0), 0, &mut drops);
        assert_eq!(drops.len(), 1);
        assert_eq!(drops[0].reason, DropReason::BufferFull);
        assert_eq!(drops[0].packet.id, 1);
    }

    /// Leaves with their own buffers: a class's push-outs (DRR longest-queue drop) leave stale
    /// tokens in the parent, which are skipped; every packet still comes back exactly once.
    #[test]
    fn class_push_outs_are_reported_once() {
        let mut node = build(
            "kind = \"drr\"\nclasses = [ { kind = \"drr\", buffer = 1000, drop_policy = \"longest_queue_drop\" }, { kind = \"fifo\" } ]",
        )
        .unwrap();
        let mut trace = Vec::new();
        for (id, flow) in [0, 0, 1, 1, 1, 1].into_iter().enumerate() {
            trace.push(packet(id as u64, flow, 0, 400, 0));
        }
        trace.push(packet(6, 5, 1, 400, 0));
        testkit::check_invariants(&mut node, &trace, true).unwrap();
        let pushed: u64 = node
            .counters()
            .flows()
            .iter()
            .map(|f| f.dropped(DropReason::PushedOut))
            .sum();
        let refused: u64 = node
            .counters()
            .flows()
            .iter()
            .map(|f| f.dropped(DropReason::BufferFull))
            .sum();
        assert_eq!(
            pushed + refused,
            4,
            "6 packets of 400 bytes into 1000 bytes: 2 stay"
        );
        assert!(pushed > 0);
    }

    const LEAVES: &[&str] = &[
        "kind = \"fifo\", buffer = 6000",
        "kind = \"drr\", quantum = 700, buffer = 6000, drop_policy = \"longest_queue_drop\"",
        "kind = \"wfq\"",
        "kind = \"ewrr\"",
        "kind = \"priority\"",
        "kind = \"scfq\", buffer_packets = 5",
    ];
    const PARENTS: &[&str] = &["fifo", "drr", "priority", "wfq", "ewrr"];

    proptest! {
        /// A one-class hierarchy sends exactly what its leaf alone sends, departure for
        /// departure, drop for drop, whatever the parent.
        #[test]
        fn one_class_hierarchy_equals_its_leaf(
            trace in testkit::arb_trace(4, 120),
            leaf in 0..LEAVES.len(),
            parent in 0..PARENTS.len(),
        ) {
            let leaf_text = LEAVES[leaf].replace(", ", "\n");
            let mut alone = build(&leaf_text).unwrap();
            let mut node = build(&format!("kind = \"{}\"\nclasses = [ {{ {} }} ]", PARENTS[parent], LEAVES[leaf])).unwrap();
            let expected = run_link(&mut alone, testkit::link(), &trace).unwrap();
            let got = testkit::check_invariants(&mut node, &trace, true)?;
            prop_assert_eq!(got.send_order, expected.send_order);
            prop_assert_eq!(got.outcomes, expected.outcomes);
        }

        /// Two-level trees keep the invariants (exactly once, FIFO per flow, work conserving,
        /// counters agree), with thresholds, class buffers and push-outs.
        #[test]
        fn trees_keep_the_invariants(
            trace in testkit::arb_trace(6, 150),
            parent in 0..PARENTS.len(),
            threshold in 1500u64..8000,
        ) {
            let mut node = build(&format!(
                "kind = \"{}\"\nbuffer = 20000\nclasses = [ {{ kind = \"fifo\", threshold = {threshold} }}, \
                 {{ kind = \"drr\", buffer = 5000, drop_policy = \"longest_queue_drop\", packet_classes = [1, 2] }}, \
                 {{ kind = \"priority\", packet_classes = [3], classes = [ {{ kind = \"wfq\", packet_classes = [3] }}, {{ kind = \"fifo\", threshold_packets = 3 }} ] }} ]",
                PARENTS[parent]
            )).unwrap();
            testkit::check_invariants(&mut node, &trace, true)?;
        }
    }
}
