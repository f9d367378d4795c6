//! Loss-tolerance windows: a stream's late packets counted against its loss-tolerance x/y.
//!
//! West, Schwan and Poellabauer (RTAS 1999, seed 002, §2): a stream with loss-tolerance x/y
//! may lose (or have late) at most x packets in any y consecutive ones; a violation is a
//! window that holds more. One [`LossWindow`] per stream measures it, and both DWCS's own
//! per-stream counters (`disciplines/dwcs.rs`) and the simulator's discipline-independent
//! lateness measure (`schedlab_sim::lateness`) use it, so the two count the same way.
//!
//! * **Sliding windows** (`loss_tolerance_violations`): at every packet, once the stream has
//!   y packets, the window of the last y packets is checked; it holds more than x late packets
//!   iff the (x + 1)-th most recent late packet lies inside it, so only the positions of the
//!   last x + 1 late packets are kept.
//! * **Fixed windows** (`fixed_window_violations`): consecutive, non-overlapping windows of y
//!   packets (packets 1..y, y+1..2y, …), counted once each when its (x + 1)-th late packet
//!   arrives.
//! * A 0/0 tolerance uses windows of one packet (every late packet is a violation).

use std::collections::VecDeque;

use crate::config::LossTolerance;

/// What one packet changed in a [`LossWindow`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowStep {
    /// The packet was late (or lost).
    pub late: bool,
    /// The sliding window ending at this packet holds more than x late packets.
    pub sliding_violation: bool,
    /// This packet is the (x + 1)-th late one of its fixed window.
    pub fixed_window_violation: bool,
    /// Consecutive late packets ending at this one (0 when it was on time).
    pub late_run: u64,
}

/// Totals of [`WindowStep`]s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LossWindowCounts {
    /// Late (or lost) packets.
    pub late_packets: u64,
    /// Packets at which the sliding window of the last y packets held more than x late ones.
    pub loss_tolerance_violations: u64,
    /// Fixed, non-overlapping windows of y packets with more than x late ones.
    pub fixed_window_violations: u64,
    /// Longest run of consecutive late packets.
    pub longest_late_run: u64,
}

impl LossWindowCounts {
    /// Adds one packet's step.
    pub fn add(&mut self, step: WindowStep) {
        self.late_packets += step.late as u64;
        self.loss_tolerance_violations += step.sliding_violation as u64;
        self.fixed_window_violations += step.fixed_window_violation as u64;
        self.longest_late_run = self.longest_late_run.max(step.late_run);
    }

    /// Adds `other`'s totals (the longest late run as a maximum), e.g. over a class's streams.
    pub fn merge(&mut self, other: &LossWindowCounts) {
        self.late_packets += other.late_packets;
        self.loss_tolerance_violations += other.loss_tolerance_violations;
        self.fixed_window_violations += other.fixed_window_violations;
        self.longest_late_run = self.longest_late_run.max(other.longest_late_run);
    }
}

/// The window state of one stream (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LossWindow {
    x: u64,
    /// y packets (1 for 0/0).
    window: u64,
    /// Packets recorded so far.
    packets: u64,
    /// Positions of the last x + 1 late packets, oldest first (unused when x ≥ y: no window
    /// can then hold more than x).
    recent_late: VecDeque<u64>,
    fixed_window_late: u64,
    late_run: u64,
}

impl LossWindow {
    /// The window of a stream with loss-tolerance `tolerance`.
    pub fn new(tolerance: LossTolerance) -> LossWindow {
        let (x, window) = (tolerance.x as u64, (tolerance.y as u64).max(1));
        let keep = if x < window { (x as usize + 1).min(64) } else { 0 };
        LossWindow {
            x,
            window,
            packets: 0,
            recent_late: VecDeque::with_capacity(keep),
            fixed_window_late: 0,
            late_run: 0,
        }
    }

    /// Records the stream's next packet, late or not, and says what it changed.
    pub fn packet(&mut self, late: bool) -> WindowStep {
        let position = self.packets;
        self.packets += 1;
        let mut step = WindowStep {
            late,
            ..WindowStep::default()
        };
        if late {
            self.late_run += 1;
            self.fixed_window_late += 1;
            step.fixed_window_violation = self.fixed_window_late == self.x + 1;
            if self.x < self.window {
                if self.recent_late.len() as u64 == self.x + 1 {
                    self.recent_late.pop_front();
                }
                self.recent_late.push_back(position);
            }
        } else {
            self.late_run = 0;
        }
        step.late_run = self.late_run;
        step.sliding_violation = self.packets >= self.window
            && self.recent_late.len() as u64 == self.x + 1
            && self
                .recent_late
                .front()
                .is_some_and(|&oldest| oldest + self.window > position);
        if self.packets.is_multiple_of(self.window) {
            self.fixed_window_late = 0;
        }
        step
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn counts(tolerance: &str, lateness: &[bool]) -> LossWindowCounts {
        let mut window = LossWindow::new(LossTolerance::parse(tolerance).unwrap());
        let mut counts = LossWindowCounts::default();
        for &late in lateness {
            counts.add(window.packet(late));
        }
        counts
    }

    #[test]
    fn sliding_windows_count_every_position_fixed_windows_once_each() {
        // 1/3, late at packets 2 and 3 (1-based), then on time: windows (1..3) and (2..4)
        // hold two late packets; window (3..5) one. Fixed windows: (1..3) once, (4..6) none.
        let c = counts("1/3", &[false, true, true, false, false, false]);
        assert_eq!(c.late_packets, 2);
        assert_eq!(c.loss_tolerance_violations, 2);
        assert_eq!(c.fixed_window_violations, 1);
        assert_eq!(c.longest_late_run, 2);
    }

    #[test]
    fn a_zero_over_zero_tolerance_counts_every_late_packet() {
        let c = counts("0/0", &[true, false, true, true]);
        assert_eq!(c.loss_tolerance_violations, 3);
        assert_eq!(c.fixed_window_violations, 3);
    }

    proptest! {
        /// The kept positions give the same count as looking at every window of y packets.
        #[test]
        fn sliding_count_equals_a_direct_count(
            x in 0u32..4, extra in 0u32..5, lateness in proptest::collection::vec(any::<bool>(), 0..80)
        ) {
            let y = x + extra;
            let c = counts(&format!("{x}/{y}"), &lateness);
            let span = y.max(1) as usize;
            let direct = (span..=lateness.len())
                .filter(|&end| lateness[end - span..end].iter().filter(|&&l| l).count() > x as usize)
                .count() as u64;
            // A fixed window (the last one possibly partial) counts once it holds x + 1.
            let fixed = lateness
                .chunks(span)
                .filter(|chunk| chunk.iter().filter(|&&l| l).count() > x as usize)
                .count() as u64;
            prop_assert_eq!(c.loss_tolerance_violations, direct);
            prop_assert_eq!(c.fixed_window_violations, fixed);
            prop_assert_eq!(c.late_packets, lateness.iter().filter(|&&l| l).count() as u64);
        }
    }
}
