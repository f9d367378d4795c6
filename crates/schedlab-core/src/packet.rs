//! The packet descriptor every scheduler handles. Schedulers never see payload bytes.

use crate::time::TimeNs;

/// A flow identifier. Drivers hand out small dense integers (0, 1, 2, …) so that disciplines
/// can keep per-flow state in vectors; the replay tool and the simulator map the labels of
/// traces and scenarios onto them.
pub type FlowId = u32;

/// The largest flow identifier a scheduler accepts ([`crate::DropReason::InvalidPacket`]
/// beyond it): per-flow state is kept in vectors indexed by flow.
pub const MAX_FLOW_ID: FlowId = (1 << 24) - 1;

/// A packet descriptor: 48 bytes, `Copy` (checked at compile time below).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Packet {
    /// Unique identifier given by the driver (the replay tool uses the trace row index).
    pub id: u64,
    /// The flow the packet belongs to.
    pub flow: FlowId,
    /// Traffic class (DiffServ class, priority level hint); 0 when unused.
    pub class: u8,
    /// Size in bytes (as seen on the link).
    pub size: u32,
    /// Arrival time at the scheduler, in nanoseconds.
    pub arrival: TimeNs,
    /// Absolute deadline in nanoseconds, for deadline-aware disciplines.
    pub deadline: Option<TimeNs>,
}

impl Packet {
    /// A packet with no class and no deadline.
    pub fn new(id: u64, flow: FlowId, size: u32, arrival: TimeNs) -> Packet {
        Packet {
            id,
            flow,
            class: 0,
            size,
            arrival,
            deadline: None,
        }
    }
}

// The descriptor stays small: schedulers copy it into their queues.
const _: () = assert!(std::mem::size_of::<Packet>() == 48);
