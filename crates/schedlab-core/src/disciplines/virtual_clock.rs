//! Virtual Clock (`virtual_clock`).
//!
//! L. Zhang, "Virtual Clock: A New Traffic Control Algorithm for Packet Switching Networks",
//! Proc. ACM SIGCOMM '90, pp. 19–29, 1990 (the data-forwarding part of the algorithm); as
//! stated in Zhang's thesis (seed 000) §2.3.2, eq. (2.1).
//!
//! Paper name → code (flow i):
//! * `AR_i`, the reserved average rate → [`VirtualClockFlow::rate`] (bit/s; see below);
//! * `Vtick_i = 1/AR_i` per packet → [`VirtualTime::transmission_time`]`(L, AR_i)`, the
//!   packet's transmission time at the reserved rate, so packets of any size are stamped
//!   (computed by the flow's [`ByteTime`], prepared when the flow is first seen, with one
//!   64-bit division per packet instead of a 128-bit one for rates below 2^32 bit/s);
//! * `auxVC_i = max(AT_i, auxVC_i) + Vtick_i` at each arrival (AT_i = arrival time) →
//!   [`VirtualClockFlow::aux_virtual_clock`], updated in [`VirtualClock::enqueue`];
//! * "the system forwards all packets according to their auxVC" → [`TaggedQueues::pop_min`]
//!   on the stamp, ties in arrival order.
//!
//! Units: stamps are real time in nanoseconds, fixed point ([`VirtualTime`], 2^-32 ns
//! resolution; `Vtick` rounded up).
//!
//! Invariants: a flow's stamps increase packet by packet; only head-of-line stamps are in the
//! priority structure, a [`TagCalendar`] whose first day is chosen at build (see
//! `stamp_day_shift`; the calendar then adapts it to the heads' spacing): while the flows keep up with their reserved rates the heads lie within
//! one `Vtick` above the stamp in service, a few thousand days, and a packet costs O(1); a
//! newly backlogged flow's stamp may fall below the stamp in service (`max(AT_i, auxVC_i)`
//! uses real time), and such stamps, like any outside the calendar's window, go to the 4-ary
//! heap beside it: O(log active flows). The order is exact either way.
//!
//! Guarantee: a flow that sends no faster than its reserved rate is served as by a TDM link of
//! that rate (its packets leave within one maximum packet time of their stamp when the
//! reservations do not exceed the link, L. Zhang 1990; Xie & Lam 1995). There is no fairness
//! across flows: a flow that used idle capacity is punished later (the thesis's §2.3.3
//! example, reproduced in the tests).
//!
//! Choices where the paper is silent:
//! * **Reserved rate.** A flow's `rate` if it has one, else `share/Σshares × link rate`
//!   (rounded down to whole bit/s, at least 1). `Σshares` ([`VirtualClock::share_sum`]) is
//!   fixed when the scheduler is built: the shares of the configured flows (`[[flow]]` tables
//!   or sources' `params`) that have no `rate`. So when every flow is configured, the
//!   weight-derived rates are exactly w_i/Σw of the link (ns.py's `VirtualClockServer` with
//!   those rates gives the same departures). A flow that is not configured and appears at run
//!   time is reserved the rate it would get as one more configured flow with the defaults'
//!   share, `share_d/(Σshares + share_d) × link rate` (the whole link if no flow is
//!   configured); the configured flows' rates are not reduced (Virtual Clock has no admission
//!   control), so the reservations exceed the link once unconfigured flows appear: configure
//!   every flow, or give rates, for strict reservations.
//! * A flow's `rate` above the link rate is a configuration error.
//! * The flow-monitoring half of the paper (`VirtualClock_i` against real time every `AI_i`,
//!   advisories to the source) is not implemented; only `auxVC` orders packets.
//! * Longest-queue drop weighs queue lengths by 1/reserved rate; a pushed-out tail returns
//!   its flow's `auxVC` to the stamp of the flow's previous packet (queued or sent).

use crate::config::{ConfigError, FlowParamTable, FlowParams, TableReader};
use crate::counters::{Counters, Dropped};
use crate::discipline::{BuildContext, Discipline, DisciplineInfo, ParamInfo};
use crate::packet::{FlowId, Packet, MAX_FLOW_ID};
use crate::queues::Admission;
use crate::scheduler::Scheduler;
use crate::tag_calendar::TagCalendar;
use crate::tagged_queues::{share_param, PacketTag, TaggedQueues, DEFAULT_SHARE};
use crate::time::{Rate, TimeNs};
use crate::virtual_time::{ByteTime, VirtualTime};

/// Parameters of [`VirtualClock`] (none besides the buffer; rates and weights are per flow).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VirtualClockConfig;

/// Per-flow Virtual Clock state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VirtualClockFlow {
    /// `AR_i`: the reserved rate.
    pub rate: Rate,
    /// `auxVC_i`: the stamp of the flow's most recently admitted packet, in ns.
    pub aux_virtual_clock: VirtualTime,
}

/// A flow's state as the queues keep it: [`VirtualClockFlow`] with its rate prepared as a
/// [`ByteTime`] (no rate until the flow is seen). 32 bytes (an `Option<VirtualClockFlow>` takes 48), so that the queues' slot of
/// a flow fits one cache line.
#[derive(Clone, Copy, Debug, Default)]
struct FlowState {
    /// `AR_i`, prepared for `Vtick` (no rate until the flow is seen).
    byte_time: ByteTime,
    aux_virtual_clock: VirtualTime,
}

const _: () = assert!(std::mem::size_of::<FlowState>() == 32);

/// A Virtual Clock flow's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VirtualClockFlowParams {
    /// `AR_i` (key `rate`); `None`: derived from `share`.
    pub rate: Option<Rate>,
    /// The flow's relative share of the link when it has no `rate` (key `share`).
    pub share: u32,
}

impl FlowParams for VirtualClockFlowParams {
    fn read(reader: &mut TableReader<'_>, inherited: &Self) -> Result<Self, ConfigError> {
        Ok(VirtualClockFlowParams {
            rate: reader.rate("rate")?.or(inherited.rate),
            share: reader.positive_u32("share")?.unwrap_or(inherited.share),
        })
    }
}

/// Virtual Clock scheduler.
#[derive(Clone, Debug)]
pub struct VirtualClock {
    queues: TaggedQueues<FlowState, TagCalendar>,
    table: FlowParamTable<VirtualClockFlowParams>,
    link_rate: Rate,
    share_sum: u64,
}

/// A full-size packet (bytes) for the calendar's day width.
const FULL_PACKET_BYTES: u64 = 1500;

/// The calendar's first day for stamps (until it adapts the day to the heads' spacing, see
/// [`TagCalendar`]) when the smallest reserved rate is `least_rate`: the power of
/// two (in raw units) at most 1/2,048 of a full-size packet's `Vtick` at that rate, so that
/// the heads, which lie within one `Vtick` above the stamp in service while the flows keep
/// up with their rates, spread over 2,048 to 4,096 days (SCFQ's and STFQ's half-unit days
/// give 3,000 to a 1,500-byte packet at weight 1).
fn stamp_day_shift(least_rate: Rate) -> u32 {
    let day = (VirtualTime::transmission_time(FULL_PACKET_BYTES, least_rate).raw() >> 11).max(1);
    u128::BITS - 1 - day.leading_zeros()
}

/// Σshares over the configured flows without a `rate`.
fn share_sum(flows: &FlowParamTable<VirtualClockFlowParams>) -> u64 {
    flows
        .configured()
        .filter(|(_, params)| params.rate.is_none())
        .map(|(_, params)| params.share as u64)
        .sum()
}

impl VirtualClock {
    /// `Σshares` over the configured flows without a rate, the denominator of the
    /// share-derived reserved rates (fixed at build).
    pub fn share_sum(&self) -> u64 {
        self.share_sum
    }

    /// `AR_i` of any flow (seen or not): its `rate`, else `share/Σshares × link rate`, where
    /// an unconfigured flow counts its own share in the sum (see the module docs).
    pub fn reserved_rate(&self, flow: FlowId) -> Rate {
        self.reserved_rate_of(self.table.get(flow), self.table.is_configured(flow))
    }

    /// `AR_i` of a flow with `params`, configured or not.
    fn reserved_rate_of(&self, params: &VirtualClockFlowParams, configured: bool) -> Rate {
        params.rate.unwrap_or_else(|| {
            let share = params.share as u128;
            let sum = if configured {
                self.share_sum as u128
            } else {
                self.share_sum as u128 + share
            };
            let bits = share * self.link_rate.bits_per_second() as u128 / sum.max(1);
            Rate::from_bits_per_second((bits as u64).max(1)).expect("at least 1 bit/s")
        })
    }

    /// The smallest reserved rate of any flow: of the configured flows and of a flow that is
    /// not configured.
    fn least_reserved_rate(&self) -> Rate {
        self.table
            .configured()
            .map(|(_, params)| self.reserved_rate_of(params, true))
            .fold(self.reserved_rate_of(self.table.defaults(), false), Rate::min)
    }

    /// The state of `flow`, if seen.
    pub fn flow(&self, flow: FlowId) -> Option<VirtualClockFlow> {
        let state = self.queues.state(flow)?;
        Some(VirtualClockFlow {
            rate: state.byte_time.rate()?,
            aux_virtual_clock: state.aux_virtual_clock,
        })
    }

    /// The stamps of the packets queued for `flow`, head first.
    pub fn queued_stamps(&self, flow: FlowId) -> Vec<VirtualTime> {
        self.queues.tags(flow).map(|tag| tag.key).collect()
    }

    fn ensure_flow(&mut self, flow: FlowId) {
        if self.queues.state_mut(flow).byte_time.rate().is_none() {
            let rate = self.reserved_rate(flow);
            self.queues.state_mut(flow).byte_time = ByteTime::new(rate);
        }
    }
}

impl Discipline for VirtualClock {
    type Config = VirtualClockConfig;
    const INFO: DisciplineInfo = DisciplineInfo {
        id: "virtual_clock",
        name: "Virtual Clock",
        citation: "L. Zhang, ACM SIGCOMM 1990",
        summary: "Stamps each packet auxVC = max(arrival, auxVC) + L/rate and serves the least stamp: each flow is served as by a TDM slot of its reserved rate; no fairness for flows that used idle capacity.",
        scheduler_params: &[],
        flow_params: &[
            ParamInfo {
                name: "rate",
                unit: "bit/s",
                default: "share/Σshares × link rate",
                description: "reserved rate AR_i; at most the link rate",
            },
            share_param("relative share of the link for flows without a rate; Σshares is over the configured flows without a rate (an unconfigured flow adds its own share)"),
        ],
        per_flow_queues: true,
    };

    fn read_config(_reader: &mut TableReader<'_>) -> Result<VirtualClockConfig, ConfigError> {
        Ok(VirtualClockConfig)
    }

    fn build(_config: VirtualClockConfig, context: &BuildContext<'_>) -> Result<VirtualClock, ConfigError> {
        let link_rate = context.link_rate;
        let base = VirtualClockFlowParams {
            rate: None,
            share: DEFAULT_SHARE,
        };
        let table = context.flows.parse(&Self::INFO, &base)?;
        table.validate(|params| match params.rate {
            Some(rate) if rate > link_rate => Err((
                "rate",
                format!("\"{rate}\""),
                format!("must not exceed the link rate ({link_rate})"),
            )),
            _ => Ok(()),
        })?;
        let mut scheduler = VirtualClock {
            queues: TaggedQueues::new(context.limit),
            link_rate,
            share_sum: share_sum(&table),
            table,
        };
        let day_shift = stamp_day_shift(scheduler.least_reserved_rate());
        scheduler.queues = TaggedQueues::with_heads(context.limit, TagCalendar::with_day_shift(day_shift));
        Ok(scheduler)
    }
}

impl Scheduler for VirtualClock {
    fn id(&self) -> &'static str {
        Self::INFO.id
    }

    fn enqueue(&mut self, packet: Packet, now: TimeNs, drops: &mut Vec<Dropped>) {
        let flow = packet.flow;
        let size = packet.size as u64;
        if flow <= MAX_FLOW_ID {
            self.ensure_flow(flow);
        }
        let admission = self.queues.admit_restoring(
            packet,
            |state| state.byte_time.rate().map_or(1, Rate::bits_per_second),
            |state, previous_stamp| {
                if state.byte_time.rate().is_some() {
                    state.aux_virtual_clock = previous_stamp;
                }
            },
            drops,
        );
        if admission == Admission::Queued {
            self.queues.push_tag_with(flow, |state| {
                debug_assert!(state.byte_time.rate().is_some(), "state created above");
                // auxVC_i = max(AT_i, auxVC_i) + Vtick_i
                let stamp = state
                    .aux_virtual_clock
                    .max(VirtualTime::from_integer(now))
                    .saturating_add(state.byte_time.of(size));
                state.aux_virtual_clock = stamp;
                PacketTag {
                    key: stamp,
                    finish: stamp,
                }
            });
        }
    }

    fn dequeue(&mut self, _now: TimeNs, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        self.queues.pop_min().map(|(packet, _)| packet)
    }

    fn peek(&mut self, _now: TimeNs) -> Option<Packet> {
        self.queues.peek_min().map(|(packet, _)| packet)
    }

    fn counters(&self) -> &Counters {
        self.queues.counters()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{BufferLimit, DropPolicy, FlowTable};
    use crate::disciplines::scfq::{Scfq, ScfqConfig};
    use crate::link::{run_link, Outcome};
    use crate::testkit;

    fn table(flows: &[(FlowId, String)], defaults: &str) -> FlowTable {
        let mut table = FlowTable::uniform(testkit::params(defaults));
        for (flow, params) in flows {
            table.set(*flow, testkit::params(params), format!("flow[{flow}]"));
        }
        table
    }

    fn virtual_clock(table: &FlowTable, link_rate: Rate, limit: BufferLimit) -> VirtualClock {
        let context = BuildContext {
            limit,
            flows: table,
            link_rate,
        };
        VirtualClock::build(VirtualClockConfig, &context).unwrap()
    }

    fn weight(w: u32) -> String {
        format!("share = {w}")
    }

    fn rate(bits: u64) -> String {
        format!("rate = {bits}")
    }

    #[test]
    fn reserved_rates_from_weights_are_fixed_at_build() {
        // Configured: flow 0 share 1, flow 1 share 3, flow 2 rate 2 Mbit/s (not in Σ);
        // defaults share 4, not counted for the configured flows. Σshares = 1 + 3 = 4.
        let t = table(
            &[(0, weight(1)), (1, weight(3)), (2, rate(2_000_000))],
            &weight(4),
        );
        let link = Rate::from_bits_per_second(8_000_000).unwrap();
        let s = virtual_clock(&t, link, BufferLimit::UNLIMITED);
        assert_eq!(s.share_sum(), 4);
        assert_eq!(s.reserved_rate(0).bits_per_second(), 2_000_000);
        assert_eq!(s.reserved_rate(1).bits_per_second(), 6_000_000);
        assert_eq!(s.reserved_rate(2).bits_per_second(), 2_000_000);
        // Any unconfigured flow: as one more configured flow of share 4, 4/8 of the link.
        assert_eq!(s.reserved_rate(99).bits_per_second(), 4_000_000);
        assert_eq!(s.reserved_rate(12345).bits_per_second(), 4_000_000);
        // Defaults with a rate are not counted, and configured flows inherit that rate.
        let t = table(&[(0, weight(1)), (1, rate(1_000_000))], &rate(500_000));
        let s = virtual_clock(&t, link, BufferLimit::UNLIMITED);
        assert_eq!(s.share_sum(), 0);
        assert_eq!(s.reserved_rate(0).bits_per_second(), 500_000);
        assert_eq!(s.reserved_rate(1).bits_per_second(), 1_000_000);
        assert_eq!(s.reserved_rate(7).bits_per_second(), 500_000);
    }

    #[test]
    fn a_rate_above_the_link_is_a_config_error() {
        let t = table(&[(5, rate(9_000_000))], "");
        let context = BuildContext {
            limit: BufferLimit::UNLIMITED,
            flows: &t,
            link_rate: Rate::from_bits_per_second(8_000_000).unwrap(),
        };
        let e = VirtualClock::build(VirtualClockConfig, &context).unwrap_err();
        assert_eq!(
            e.to_string(),
            "flow[5].rate = \"9000000bit\": must not exceed the link rate (8000000bit)"
        );
    }

    /// Zhang's thesis §2.3.3 (after [HZ95] fig. 6): link of one packet per second (1000-byte
    /// packets at 8000 bit/s), two connections each reserving 0.5 packet/s (4000 bit/s for
    /// Virtual Clock, weight 500 for SCFQ so that L/r = 2 s as in the thesis). Connection 1
    /// sends 1000 packets, one per second from t = 0, then one every 2 s; connection 2 sends
    /// one every 2 s from t = 900 s.
    ///
    /// The prose says connection 2 starts "at time 901" and connection 1 slows "from time
    /// 900"; the equations put connection 2's first packet at 900 (v̂(900) in F̂_2^1,
    /// max(900, 0) in auxVC_2^1) and connection 1's 901st at 901 (v̂(901) in F̂_1^901). We
    /// follow the equations: connection 1's packet 900+j arrives at 899 + 2j s, connection
    /// 2's packet k at 900 + 2(k−1) s. The thesis writes auxVC_2^k = 900 + 2(k−1), dropping
    /// Vtick; eq. (2.1) gives 900 + 2k, and with it exactly 450 of connection 2's stamps fall
    /// below auxVC_1^901 = 1802, the thesis's count.
    fn thesis_trace(connection_2_gap_seconds: u64, connection_2_packets: u64) -> Vec<Packet> {
        const SECOND: TimeNs = 1_000_000_000;
        let mut packets = Vec::new();
        for k in 1..=1000u64 {
            let at = if k <= 900 { k - 1 } else { 899 + 2 * (k - 900) };
            packets.push(Packet::new(0, 1, 1000, at * SECOND));
        }
        for k in 1..=connection_2_packets {
            packets.push(Packet::new(
                0,
                2,
                1000,
                (900 + connection_2_gap_seconds * (k - 1)) * SECOND,
            ));
        }
        // Time order; at equal times connection 1 first (stable sort keeps it first).
        packets.sort_by_key(|p| p.arrival);
        for (id, p) in packets.iter_mut().enumerate() {
            p.id = id as u64;
        }
        packets
    }

    fn thesis_link() -> Rate {
        Rate::from_bits_per_second(8000).unwrap()
    }

    fn thesis_virtual_clock() -> VirtualClock {
        let t = table(&[(1, rate(4000)), (2, rate(4000))], "");
        virtual_clock(&t, thesis_link(), BufferLimit::UNLIMITED)
    }

    fn thesis_scfq() -> Scfq {
        let t = table(&[(1, weight(500)), (2, weight(500))], "");
        let context = BuildContext {
            limit: BufferLimit::UNLIMITED,
            flows: &t,
            link_rate: thesis_link(),
        };
        Scfq::build(ScfqConfig, &context).unwrap()
    }

    fn seconds(s: u64) -> VirtualTime {
        VirtualTime::from_integer(s * 1_000_000_000)
    }

    #[test]
    fn zhang_thesis_example_tags() {
        let trace = thesis_trace(2, 500);
        // Virtual Clock stamps (in ns) straight from eq. (2.1).
        let mut vc = thesis_virtual_clock();
        let mut drops = Vec::new();
        let (mut count_1, mut count_2) = (0, 0);
        let mut stamps_2 = Vec::new();
        let mut stamp_1_901 = VirtualTime::ZERO;
        for p in &trace {
            vc.enqueue(*p, p.arrival, &mut drops);
            let stamp = vc.flow(p.flow).unwrap().aux_virtual_clock;
            if p.flow == 1 {
                count_1 += 1;
                if count_1 == 900 {
                    assert_eq!(stamp, seconds(1800), "auxVC_1^900 = 1800");
                }
                if count_1 > 900 {
                    assert_eq!(
                        stamp,
                        seconds(1800 + 2 * (count_1 - 900)),
                        "auxVC_1^(900+k) = 1800 + 2k"
                    );
                }
                if count_1 == 901 {
                    stamp_1_901 = stamp;
                }
            } else {
                count_2 += 1;
                assert_eq!(stamp, seconds(900 + 2 * count_2), "auxVC_2^k = 900 + 2k");
                stamps_2.push(stamp);
            }
        }
        let ahead = stamps_2.iter().filter(|s| **s < stamp_1_901).count();
        assert_eq!(
            ahead, 450,
            "connection 2's packets stamped before connection 1's 901st"
        );

        // SCFQ tags: drive the link by hand; arrivals are at least 1 s apart and each packet
        // takes 1 s, so every packet is dequeued the moment it arrives.
        let mut scfq = thesis_scfq();
        let (mut count_1, mut count_2) = (0, 0);
        let mut expected = Vec::new();
        for p in &trace {
            scfq.enqueue(*p, p.arrival, &mut drops);
            let tag = *scfq.queued_tags(p.flow).last().unwrap();
            let n = if p.flow == 1 {
                count_1 += 1;
                count_1
            } else {
                count_2 += 1;
                count_2
            };
            match (p.flow, n) {
                (1, 900) => expected.push(("F̂_1^900", tag, 1800)),
                (2, 1) => expected.push(("F̂_2^1", tag, 1802)),
                (1, 901) => expected.push(("F̂_1^901", tag, 1804)),
                (2, 2) => expected.push(("F̂_2^2", tag, 1806)),
                _ => {}
            }
            assert_eq!(scfq.dequeue(p.arrival, &mut drops).unwrap().id, p.id);
            if (p.flow, n) == (1, 900) {
                assert_eq!(
                    scfq.virtual_time(),
                    VirtualTime::from_integer(1800),
                    "v̂(900) = 1800"
                );
            }
        }
        for (name, tag, value) in expected {
            assert_eq!(tag, VirtualTime::from_integer(value), "{name}");
        }

        // On this trace the two connections together never exceed the link, so no queue
        // forms: both disciplines send every packet the moment it arrives. The service-order
        // difference of the example needs contention (next test).
        for run in [
            run_link(&mut thesis_virtual_clock(), thesis_link(), &trace).unwrap(),
            run_link(&mut thesis_scfq(), thesis_link(), &trace).unwrap(),
        ] {
            assert_eq!(run.send_order.len(), trace.len());
            for (index, start) in &run.send_order {
                assert_eq!(*start, trace[*index].arrival);
            }
        }
    }

    /// The example with contention, as in [HZ95]: connection 2 sends back to back (one packet
    /// per second, the link rate) from t = 900 s. Its stamps are the same 900 + 2k (Vtick
    /// dominates the arrival times), so Virtual Clock serves 450 of its packets before
    /// connection 1's 901st (stamp 1802; connection 2's 451st also has 1802 and arrived later).
    /// SCFQ interleaves: F̂_2^1 = 1802 then F̂_1^901 = 1804, and from then on no packet of
    /// connection 1 waits longer than its SCFQ delay bound σ/ρ + L/ρ + (N−1)·L/C = 2 + 2 + 1 s
    /// (latency-rate bound with a one-packet burst, thesis §2.3.1).
    #[test]
    fn zhang_thesis_example_service_order() {
        let trace = thesis_trace(1, 700);
        let index_of_901st = trace
            .iter()
            .enumerate()
            .filter(|(_, p)| p.flow == 1)
            .nth(900)
            .unwrap()
            .0;
        let connection_2_before = |run: &crate::link::LinkRun| {
            run.send_order
                .iter()
                .take_while(|(index, _)| *index != index_of_901st)
                .filter(|(index, _)| trace[*index].flow == 2)
                .count()
        };

        let vc = run_link(&mut thesis_virtual_clock(), thesis_link(), &trace).unwrap();
        assert_eq!(connection_2_before(&vc), 450);
        let Some(Outcome::Sent { start, .. }) = vc.outcomes[index_of_901st] else {
            panic!("901st packet not sent")
        };
        assert_eq!(
            start,
            1350 * 1_000_000_000,
            "sent at 1350 s, 449 s after it arrived"
        );

        let scfq = run_link(&mut thesis_scfq(), thesis_link(), &trace).unwrap();
        assert_eq!(
            connection_2_before(&scfq),
            1,
            "F̂_2^1 = 1802 goes first, then F̂_1^901"
        );
        let worst_delay = trace
            .iter()
            .enumerate()
            .filter(|(_, p)| p.flow == 1 && p.arrival >= 900 * 1_000_000_000)
            .map(|(index, p)| match scfq.outcomes[index] {
                Some(Outcome::Sent { end, .. }) => end - p.arrival,
                other => panic!("packet {index}: {other:?}"),
            })
            .max()
            .unwrap();
        assert!(
            worst_delay <= 5 * 1_000_000_000,
            "SCFQ delay {worst_delay} ns > 5 s"
        );
    }

    #[test]
    fn push_out_rolls_back_the_stamp() {
        let limit = BufferLimit {
            packets: Some(3),
            policy: DropPolicy::LongestQueueDrop,
            ..BufferLimit::UNLIMITED
        };
        let t = table(&[(0, rate(8_000)), (1, rate(8_000)), (2, rate(8_000))], "");
        let mut s = virtual_clock(&t, Rate::from_bits_per_second(16_000).unwrap(), limit);
        let mut drops = Vec::new();
        // 8000 bit/s = 1 byte per ms: a 100-byte packet's Vtick is 100 ms.
        let ms = |m: u64| VirtualTime::from_integer(m * 1_000_000);
        s.enqueue(Packet::new(0, 0, 100, 0), 0, &mut drops);
        s.enqueue(Packet::new(1, 0, 300, 0), 0, &mut drops);
        s.enqueue(Packet::new(2, 1, 100, 0), 0, &mut drops);
        assert_eq!(s.queued_stamps(0), vec![ms(100), ms(400)]);
        s.enqueue(Packet::new(3, 2, 100, 0), 0, &mut drops); // pushes out id 1
        assert_eq!(drops[0].packet.id, 1);
        assert_eq!(s.flow(0).unwrap().aux_virtual_clock, ms(100));
        assert_eq!(s.dequeue(0, &mut drops).unwrap().id, 0);
        // auxVC = max(1 ms, 100 ms) + 50 ms.
        s.enqueue(Packet::new(4, 0, 50, 1_000_000), 1_000_000, &mut drops);
        assert_eq!(s.queued_stamps(0), vec![ms(150)]);
    }

    proptest::proptest! {
        #[test]
        fn invariants(trace in testkit::arb_trace(5, 300), lqd in proptest::bool::ANY) {
            let limit = testkit::byte_limit(8000, lqd);
            let t = table(&[(1, weight(2)), (2, rate(3_000_000)), (3, weight(8))], "");
            let mut s = virtual_clock(&t, testkit::link(), limit);
            testkit::check_invariants(&mut s, &trace, true)?;
        }

        /// Backlogged from t = 0, the stamps are Σ L/r_i, so after any number of packets the
        /// flows' normalised services differ by at most one packet:
        /// |W_i/r_i − W_j/r_j| ≤ max(L_i^max/r_i, L_j^max/r_j) (in seconds; the served set is
        /// a prefix of the stamp order).
        #[test]
        fn byte_shares_follow_rates(
            weights in proptest::collection::vec(1u32..=8, 3),
            sizes in proptest::collection::vec(40u32..=1500, 64),
            n in 1usize..600,
        ) {
            let t = table(&[(0, weight(weights[0])), (1, weight(weights[1])), (2, weight(weights[2]))], "");
            let mut s = virtual_clock(&t, testkit::link(), BufferLimit::UNLIMITED);
            let (served, largest) = testkit::three_backlogged_flows(&mut s, &sizes, n);
            let rates: Vec<f64> = (0..3).map(|f| s.reserved_rate(f).bits_per_second() as f64 / 8.0).collect(); // bytes/s
            testkit::check_pairwise_fairness(&served, &rates, &largest, testkit::PairBound::Max, 1e-12)?;
        }
    }
}
