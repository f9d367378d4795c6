//! Adaptive CPU scheduling (`adaptive`): Wang, Lung and Majumdar, "Effective Fair Share
//! Resource Management Algorithms in Support of QoS", §3.2.2.2 and figure 2 (paper 001).
//!
//! One FIFO queue per packet group (class 0 = Gold, 1 = Silver, 2 = Bronze, …), served in a
//! strict priority order that a periodic scheduler re-assigns. Initially the order is that of
//! Fixed-Priority (class 0 first). At every wake-up:
//!
//! ```text
//! Update CPU usage of each queue
//! Find the queue with the smallest ratio of CPU usage and Share → highest priority (152)
//! Find the queue with the highest ratio of CPU usage and Share  → lowest priority (158)
//! The third queue → middle priority (155)
//! IF the ratio of GCU to Share for the highest priority group is < 0.9
//!   Multiply the scheduling time interval by 2
//! ELSE IF the ratio is greater than 1.1
//!   Multiply the scheduling time interval by 0.5
//! Sleep for the scheduled time interval
//! ```
//!
//! Names → code: `Share[i]` → `share` (parts per million in [`ClassShare::share`]); "CPU
//! usage" → [`ClassShare::usage`] (packets served since the start); `GCU[i]` of the period →
//! `period_usage[i] / Σ period_usage`; priorities 152 / 155 / 158 → positions 0 / 1 / 2 of
//! [`ClassShare::order`]; "the scheduling time interval" → [`ClassShare::interval`].
//!
//! Invariants: those of [`ClassShare`]; after a wake-up `order` is sorted by `usage / Share`
//! ascending (ties: lower class first). Work conserving (a priority order never idles the
//! server). If the first wake-up never comes (`interval` longer than the run) the discipline is
//! exactly Fixed-Priority (`priority` by class) — the paper's figure 6 "Max Time" case.
//!
//! Choices where the paper is silent:
//! * CPU usage is counted in packets served: with the paper's fixed `Ptime` this is exactly
//!   proportional to CPU time. (On a stage whose time depends on the size, usage is still
//!   counted per packet.) Usage is cumulative since the start of the run.
//! * With more than three classes the full order by ratio is used (smallest first), which is
//!   figure 2 for three.
//! * "GCU … for the highest priority group" is that of the group that held the highest
//!   priority during the period just ended, measured as its fraction of the packets served in
//!   the period (GCU relative to the CPU's busy time; the simulator reports the wall-time GCU
//!   per class at the stage). A period in which nothing was served leaves the interval as it
//!   is (there is no GCU to judge).
//! * The interval stays within [`min_interval`, `max_interval`] (defaults `interval / 64`
//!   and `interval · 64`).
//! * The scheduler wakes up at the first decision at or after its due time (a scheduler thread
//!   on a single non-preemptive CPU runs once the packet in service is done) and sleeps its
//!   interval from then.
//! * A class beyond the `share` vector is queued with the last class; `buffer` /
//!   `buffer_packets` bound the shared backlog with tail drop.

use crate::class_share::{ClassShare, SharePolicy, ShareScheduler, SHARE_PARAMS};
use crate::discipline::DisciplineInfo;
use crate::time::TimeNs;

/// The Adaptive CPU scheduler of paper 001.
pub type Adaptive = ShareScheduler<AdaptivePolicy>;

/// Figure 2's wake-up.
#[derive(Clone, Copy, Debug, Default)]
pub struct AdaptivePolicy;

impl SharePolicy for AdaptivePolicy {
    const INFO: DisciplineInfo = DisciplineInfo {
        id: "adaptive",
        name: "Adaptive (CPU share)",
        citation: "Wang, Lung, Majumdar, Effective Fair Share Resource Management Algorithms in Support of QoS, §3.2.2.2, fig. 2",
        summary: "Class queues in strict priority; a periodic scheduler ranks them by CPU usage / Share and doubles or halves its interval when the top group's GCU / Share leaves [0.9, 1.1]. Work conserving.",
        scheduler_params: SHARE_PARAMS,
        flow_params: &[],
        per_flow_queues: false,
    };

    fn wake_up(q: &mut ClassShare, now: TimeNs) {
        let top = q.order[0] as usize;
        let mut order = std::mem::take(&mut q.order);
        order.sort_unstable_by(|&a, &b| q.compare_ratio(a as usize, b as usize));
        q.order = order;
        let total: u64 = q.period_usage.iter().sum();
        if total > 0 {
            // GCU / Share = (period_usage[top] / total) / (share[top] / 10⁶), against 0.9 and 1.1.
            let gcu = q.period_usage[top] as u128 * 1_000_000 * 10;
            let share = q.share[top] as u128 * total as u128;
            if gcu < 9 * share {
                q.scale_interval(true);
            } else if gcu > 11 * share {
                q.scale_interval(false);
            }
        }
        q.sleep(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::class_share::testing::{self, packet};
    use crate::config::BufferLimit;
    use crate::disciplines::priority::{Priority, PriorityConfig};
    use crate::packet::Packet;
    use crate::scheduler::Scheduler;
    use crate::testkit;

    /// Hand-derived from figure 2. Share 40/30/30 %, interval 1 ms; 100-byte packets take
    /// 100 µs on the test link. Ten packets of each class are queued at time 0.
    /// * 0–1 ms: Fixed-Priority order (0, 1, 2): ten Gold packets, the last starting at
    ///   0.9 ms.
    /// * Wake-up at 1 ms: usage (10, 0, 0) → ratios 25, 0, 0 per 10⁶ → order (1, 2, 0).
    ///   The top group of the period was Gold with GCU 10/10 = 1 vs Share 0.4: ratio 2.5 > 1.1
    ///   → interval halved to 500 µs. Silver is served 1.0–1.5 ms (five packets).
    /// * Wake-up at 1.5 ms: usage (10, 5, 0) → ratios 25, 16.7, 0 → order (2, 1, 0); top of
    ///   the period was Silver, GCU 5/5 → halved to 250 µs. Bronze serves 1.5–1.75 ms (3).
    /// * Wake-up at 1.8 ms (the decision after 1.75 ms comes at 1.8 ms): usage (10, 5, 3)
    ///   → ratios 25, 16.7, 10 → order (2, 1, 0) again; Bronze's GCU 3/3 → 125 µs.
    #[test]
    fn figure_2_hand_derived_order() {
        let mut s = testing::build::<AdaptivePolicy>(
            &[400_000, 300_000, 300_000],
            (1_000_000, 1, u64::MAX),
            BufferLimit::UNLIMITED,
        );
        let classes = testing::ten_of_each_class_order(&mut s);
        let expected: Vec<u8> = [vec![0u8; 10], vec![1; 5], vec![2; 3]].concat();
        assert_eq!(&classes[..18], &expected[..]);
        assert_eq!(s.queues.usage.iter().sum::<u64>(), 30);
        assert!(s.queues.wakeups >= 3);
    }

    /// The interval rule alone: a period whose top group got GCU/Share inside [0.9, 1.1]
    /// keeps the interval; below 0.9 doubles it.
    #[test]
    fn interval_doubles_below_and_stays_inside_the_band() {
        let mut s = testing::build::<AdaptivePolicy>(
            &[500_000, 500_000],
            (1000, 10, 100_000),
            BufferLimit::UNLIMITED,
        );
        let mut drops = Vec::new();
        // Period 1: Gold 1 packet, Silver 1 packet (GCU of Gold = 0.5 = Share → unchanged).
        s.enqueue(packet(0, 0), 0, &mut drops);
        s.enqueue(packet(1, 1), 0, &mut drops);
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 0);
        assert_eq!(s.dequeue(10, &mut drops).unwrap().id, 1);
        s.enqueue(packet(2, 1), 1000, &mut drops);
        s.dequeue(1000, &mut drops);
        assert_eq!(s.interval(), 1000);
        // The wake-up at 1000 ranked usage (1, 1): a tie, so Gold stays first. Period 2
        // (1000–2000) served only Silver: Gold's GCU 0 < 0.9 · Share → doubled.
        assert_eq!(s.order(), &[0, 1]);
        s.enqueue(packet(3, 1), 2000, &mut drops);
        s.dequeue(2000, &mut drops);
        assert_eq!(s.interval(), 2000);
    }

    /// Interval longer than the run: identical send order to Fixed-Priority by class.
    #[test]
    fn degenerates_to_fixed_priority_when_the_interval_exceeds_the_run() {
        proptest::proptest!(|(trace in testkit::arb_trace(6, 200))| {
            let trace: Vec<Packet> = trace.into_iter().map(|p| Packet { class: (p.flow % 3) as u8, ..p }).collect();
            let mut s = testing::build::<AdaptivePolicy>(&[400_000, 300_000, 300_000], (u64::MAX / 4, 1, u64::MAX), BufferLimit::UNLIMITED);
            let mut p = testkit::build_with::<Priority>(PriorityConfig, [], BufferLimit::UNLIMITED);
            proptest::prop_assert_eq!(testkit::send_order(&mut s, &trace), testkit::send_order(&mut p, &trace));
        });
    }

    #[test]
    fn configuration_errors_name_the_key() {
        let build = |text: &str| {
            let table: toml::Table = text.parse().unwrap();
            crate::build_scheduler(&table, "scheduler", &crate::FlowTable::default(), testkit::link())
        };
        assert_eq!(
            build("kind = \"adaptive\"\ninterval = \"1ms\"").unwrap_err().path,
            "scheduler.share"
        );
        assert_eq!(
            build("kind = \"adaptive\"\nshare = [1]").unwrap_err().path,
            "scheduler.interval"
        );
        let e = build("kind = \"adaptive\"\nshare = [1]\ninterval = \"1ms\"\nmax_interval = \"1us\"")
            .unwrap_err();
        assert_eq!(e.path, "scheduler.max_interval");
        assert!(build("kind = \"adaptive\"\nshare = [0.5, 0.5]\ninterval = \"1ms\"").is_ok());
    }

    proptest::proptest! {
        /// Exactly once, FIFO per flow (a flow keeps one class), work conservation; the
        /// order stays a permutation.
        #[test]
        fn invariants(trace in testkit::arb_trace(6, 300), interval in 1_000u64..5_000_000, bytes in 1500u64..20_000) {
            testing::check_invariants::<AdaptivePolicy>(&trace, (interval, 1, interval * 64), bytes)?;
        }
    }
}
