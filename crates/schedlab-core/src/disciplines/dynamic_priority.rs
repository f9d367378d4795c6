//! Dynamic-Priority CPU scheduling (`dynamic_priority`): Wang, Lung and Majumdar, "Effective
//! Fair Share Resource Management Algorithms in Support of QoS", §3.2.2.1 and figure 1
//! (paper 001).
//!
//! One FIFO queue per packet group (class 0 = Gold, 1 = Silver, 2 = Bronze, …). The initial
//! order is Fixed-Priority's. A periodic scheduler chooses one "scheduling queue" for the next
//! period and raises it above the others (priority 152); when that queue has already consumed
//! more than its Share it also raises a second queue (151) and halves its own interval:
//!
//! ```text
//! Wakeup
//!   Set the priority of all the scheduled queue back to the lowest
//!   Update the CPU usage for each queue
//!   IF the scheduled queue consumes some CPU time
//!     Find the group with the smallest ratio of CPU usage and Share → next scheduling queue
//!   ELSE (there was no waiting packet for the group)
//!     IF only one queue did not consume CPU at previous period → choose it
//!     ELSE IF both the queues did not consume any CPU time
//!       Find the queue with smallest ratio of CPU usage and Share → choose it
//!       Reset the idle scheduling counters for each queue
//!     ELSE (all the remaining queues did consume CPU time)
//!       Find the queue with next smaller ratio of CPU usage / Share (of the other two)
//! Raise the priority of the chosen queue (to 152)
//! IF this queue has already consumed CPU > its group's Share
//!   Decrease the scheduling time interval by 1/2
//!   Find, of the other two queues, the one with smaller ratio of CPU usage and Share
//!   Raise the priority of this queue as well to 151
//! Sleep for the scheduled time interval
//! ```
//!
//! Names → code: `Share[i]` → `share` (parts per million); "CPU usage" →
//! [`ClassShare::usage`] (packets served since the start); "consumed CPU at previous period"
//! → [`ClassShare::period_usage`] `> 0`; "the scheduled queue" → `order[0]` during the period;
//! priorities 152 / 151 / lowest → positions 0 / 1 / the rest of [`ClassShare::order`].
//!
//! Invariants: those of [`ClassShare`]; after a wake-up `order[0]` is the chosen queue, and
//! the others follow in class order unless a second queue was raised. Work conserving.
//!
//! Choices where the paper is silent:
//! * "The queues" of the ELSE branch are the queues other than the scheduled one; "did not
//!   consume CPU" means it served no packet in the period just ended (the idle counters are
//!   these per-period counts, so "resetting" them is the start of the next period). With more
//!   than three classes: exactly one idle other → it; all others idle → smallest ratio of all;
//!   otherwise → smallest ratio among the others.
//! * "The lowest" priority of queues not raised keeps their Fixed-Priority order among
//!   themselves (class 0 first), as the initial setting.
//! * "Consumed CPU > its group's Share": its fraction of all packets served since the start
//!   exceeds `Share`. The interval is never doubled (figure 1 has no such step); it does not
//!   fall below `min_interval` (default `interval / 64`).
//! * CPU usage counts packets (exact for the paper's fixed `Ptime`); the scheduler's own CPU
//!   cost, which the paper blames for this policy's longer round-trip times, is not modelled.
//! * The scheduler wakes up at the first decision at or after its due time and sleeps its
//!   interval from then; a class beyond `share` is queued with the last class.

use crate::class_share::{ClassShare, SharePolicy, ShareScheduler, SHARE_PARAMS};
use crate::discipline::DisciplineInfo;
use crate::time::TimeNs;

/// The Dynamic-Priority CPU scheduler of paper 001.
pub type DynamicPriority = ShareScheduler<DynamicPriorityPolicy>;

/// Figure 1's wake-up.
#[derive(Clone, Copy, Debug, Default)]
pub struct DynamicPriorityPolicy;

impl SharePolicy for DynamicPriorityPolicy {
    const INFO: DisciplineInfo = DisciplineInfo {
        id: "dynamic_priority",
        name: "Dynamic-Priority (CPU share)",
        citation: "Wang, Lung, Majumdar, Effective Fair Share Resource Management Algorithms in Support of QoS, §3.2.2.1, fig. 1",
        summary: "Class queues in strict priority; a periodic scheduler raises the queue with the smallest CPU usage / Share (or an idle period's other queue) to the top, and a second one while the first is over its Share. Work conserving.",
        scheduler_params: SHARE_PARAMS,
        flow_params: &[],
        per_flow_queues: false,
    };

    fn wake_up(q: &mut ClassShare, now: TimeNs) {
        let classes = q.classes();
        let scheduled = q.order[0] as usize;
        let others = || (0..classes).filter(move |&c| c != scheduled);
        let chosen = if q.period_usage[scheduled] > 0 || classes == 1 {
            q.smallest_ratio(0..classes)
        } else {
            let idle = others().filter(|&c| q.period_usage[c] == 0).count();
            if idle == 1 {
                others().find(|&c| q.period_usage[c] == 0)
            } else if idle == classes - 1 {
                q.smallest_ratio(0..classes)
            } else {
                q.smallest_ratio(others())
            }
        }
        .expect("at least one class");
        let second = if q.over_share(chosen) {
            q.scale_interval(false);
            q.smallest_ratio((0..classes).filter(|&c| c != chosen))
        } else {
            None
        };
        q.raise(chosen, second);
        q.sleep(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::class_share::testing::{self, packet};
    use crate::config::BufferLimit;
    use crate::scheduler::Scheduler;
    use crate::testkit;

    /// Hand-derived from figure 1, Share 50/30/20 % (the paper's example), interval 1 ms,
    /// min 250 µs; 100-byte packets take 100 µs on the test link; ten packets of each class
    /// queued at time 0.
    /// * 0–1 ms: Fixed-Priority: ten Gold packets. Gold queue now empty.
    /// * Wake-up at 1 ms: the scheduled queue (Gold) consumed CPU → smallest ratio: usage
    ///   (10, 0, 0) → Silver and Bronze tie at 0 → Silver. Silver has not used more than its
    ///   Share (0 of 10) → no second queue; order (1, 0, 2). Ten Silver packets 1–2 ms.
    /// * Wake-up at 2 ms: Silver consumed → usage (10, 10, 0): ratios 20, 33, 0 → Bronze;
    ///   order (2, 0, 1). Bronze 2.0–3.0 ms (ten packets, queue then empty).
    /// * All 30 served: Gold ×10, Silver ×10, Bronze ×10 in that order.
    #[test]
    fn figure_1_hand_derived_order() {
        let mut s = testing::build::<DynamicPriorityPolicy>(
            &[500_000, 300_000, 200_000],
            (1_000_000, 250_000, 1_000_000),
            BufferLimit::UNLIMITED,
        );
        let classes = testing::ten_of_each_class_order(&mut s);
        let expected: Vec<u8> = [vec![0u8; 10], vec![1; 10], vec![2; 10]].concat();
        assert_eq!(classes, expected);
        assert_eq!(s.interval(), 1_000_000);
    }

    /// The over-Share branch: Gold alone is served in the first period, so at the wake-up it
    /// is not chosen (its ratio is the largest)… unless the others are idle: with only Gold
    /// backlogged, period usage (k, 0, 0) → Gold consumed → smallest ratio among all: Silver
    /// (tie with Bronze at 0, lower class). Silver has used 0 ≤ its Share → no halving.
    /// Then at the next wake-up Silver (scheduled) consumed nothing; of the others Gold
    /// consumed and Bronze did not → exactly one idle → Bronze is chosen.
    #[test]
    fn idle_scheduled_queue_gives_the_cpu_to_the_other_idle_queue() {
        let mut s = testing::build::<DynamicPriorityPolicy>(
            &[500_000, 300_000, 200_000],
            (1000, 100, 1000),
            BufferLimit::UNLIMITED,
        );
        let mut drops = Vec::new();
        for id in 0..30 {
            s.enqueue(packet(id, 0), 0, &mut drops);
        }
        for t in 0..10 {
            s.dequeue(t * 100, &mut drops);
        }
        s.dequeue(1000, &mut drops); // wake-up 1
        assert_eq!(s.order(), &[1, 0, 2]);
        for t in 11..20 {
            s.dequeue(t * 100, &mut drops);
        }
        s.dequeue(2000, &mut drops); // wake-up 2: Silver idle; Gold consumed, Bronze idle
        assert_eq!(s.order(), &[2, 0, 1]);
        // Gold has 100 % of the usage > 50 % Share, but it is not chosen; nothing halves.
        assert_eq!(s.interval(), 1000);
    }

    /// The over-Share branch. A queue chosen for the smallest usage / Share is never above its
    /// Share (with Σ Share = 1, u_i/s_i ≤ u_j/s_j for all j gives u_i/U ≤ s_i), so the branch
    /// is reached only through the idle rules.
    /// * Usage (3, 13, 13), Share (10, 45, 45) %, the scheduled Gold consumed: ratios 30,
    ///   28.9, 28.9 per 10⁶ → Silver (tie with Bronze, lower class); 13/29 = 44.8 % < 45 %
    ///   → no second queue, interval unchanged; order (1, 0, 2).
    /// * Then Silver (scheduled) consumed nothing, Gold consumed, Bronze did not: exactly one
    ///   idle other → Bronze, although 10/11 of the usage > 45 % → interval halved and the
    ///   smaller ratio of Gold (0) and Silver (1/0.45) → Gold raised second: order (2, 0, 1).
    #[test]
    fn a_chosen_queue_over_its_share_raises_a_second_and_halves_the_interval() {
        let mut s = testing::build::<DynamicPriorityPolicy>(
            &[100_000, 450_000, 450_000],
            (1000, 100, 1000),
            BufferLimit::UNLIMITED,
        );
        s.queues.usage = vec![3, 13, 13];
        s.queues.period_usage = vec![1, 0, 0];
        DynamicPriorityPolicy::wake_up(&mut s.queues, 1000);
        assert_eq!(s.order(), &[1, 0, 2]);
        assert_eq!(s.interval(), 1000);
        s.queues.usage = vec![0, 1, 10];
        s.queues.period_usage = vec![5, 0, 0];
        DynamicPriorityPolicy::wake_up(&mut s.queues, 2000);
        assert_eq!(s.order(), &[2, 0, 1]);
        assert_eq!(s.interval(), 500);
    }

    proptest::proptest! {
        /// Exactly once, FIFO per flow, work conservation; the order stays a permutation.
        #[test]
        fn invariants(trace in testkit::arb_trace(6, 300), interval in 1_000u64..5_000_000, bytes in 1500u64..20_000) {
            testing::check_invariants::<DynamicPriorityPolicy>(&trace, (interval, interval / 64 + 1, interval), bytes)?;
        }
    }
}
