//! Results of a measured run in the format of `schedlab run`: the packet logs of
//! `schedlab gen` and `schedlab sink` (and the gateway's stats) become the simulator's raw
//! replication, reduced by the simulator's own code ([`schedlab_sim::results::reduce`]) and
//! written by its writer, so `summary.json`, `flows.csv`, `timeseries.csv`, `delay_cdf.csv`
//! … have the same columns and `schedlab report` works unchanged.
//!
//! How the columns are filled from measurement:
//! * a packet is measured when its *scheduled* entry time lies in the window
//!   `[warmup, duration)` (as in the simulator); `sent` counts those, `received` those that
//!   reached the sink (first copy; later copies count as duplicates);
//! * delay = receive time − actual send time, both from `CLOCK_MONOTONIC` of one host
//!   (exact in namespaces of one machine; across hosts the clocks would have to be
//!   synchronised, the thesis's §4.5 problem);
//! * jitter / IPDV (RFC 3393: |D_k − D_(k−1)| of consecutive receptions) by the simulator's
//!   [`schedlab_sim::stats::Jitter`], in reception order;
//! * a measured packet that never arrived counts as dropped, under the reason the gateway
//!   reported most often for its flow; when the gateway reported no scheduler drop for the
//!   flow (the loss happened elsewhere, e.g. the sink's socket buffer), it stays in
//!   `in_flight`;
//! * link rows: the bottleneck's sent packets, bytes and drops are the gateway's counters over
//!   the whole run (warm-up included); utilisation is sent bytes at the link rate over the
//!   window; the queue length is the gateway's scheduler backlog (packets waiting, not the one
//!   on the emulated link, as in the simulator): `queue_max_*` its largest value,
//!   `queue_mean_*` its integral over the gateway's whole run (warm-up and the drain after the
//!   end included; the gateway is idle before the traffic) divided by the window's length;
//! * `shaper_delay_mean_s` is 0: the generator sends at the shaper's release times.
//!
//! * a TCP source (Linux's TCP, `schedlab measure`) has no packet log: its `tcp_flows` row
//!   and `tcp_timeseries.csv` come from the samples of its sender's `TCP_INFO` and of its
//!   receiver's byte count (every 10 ms; a value at time t is the last sample at or before t):
//!   `goodput_bps` and `delivered_bytes` from the receiver, `segments_sent` and
//!   `retransmissions` from the sender, the time series (cwnd, ssthresh, srtt, rto, flight,
//!   delivered) at every bin boundary. Linux does not count what the simulator's other TCP
//!   columns count (fast retransmits, timeouts, ACKs, RTT samples): they are empty. In
//!   `flows[]` such a source has no packet counts; its `received_bytes` is the bytes
//!   delivered in the window (so `throughput_bps` and the Jain index are over goodput) and
//!   `timeseries.csv` has its delivered bytes per bin.
//!
//! Per-flow figures that `schedlab run` has no column for (duplicates, reordered packets,
//! requested and achieved send rate, send lateness) go to `measure.json`.

use std::collections::HashSet;
use std::path::Path;

use schedlab_core::{DropReason, TimeNs};
use schedlab_sim::engine::{FlowSeries, LinkSnapshot, RawReplication};
use schedlab_sim::results::reduce;
use schedlab_sim::scenario::{RunLength, Scenario};
use schedlab_sim::stats::{Accumulator, DelayHistogram};
use schedlab_sim::SimResults;
use serde_json::{json, Value};

use schedlab_sim::engine::{TcpRaw, TcpSample};
use schedlab_sim::results::Cell;
use schedlab_sim::tcp::TcpCounters;

use crate::traffic::{ReceivedPacket, SentPacket, TcpReceiverSample, TcpSenderSample};

/// What one measured replication left behind.
#[derive(Clone, Debug, Default)]
pub struct MeasuredRun {
    /// Replication index.
    pub replication: u32,
    /// The generator's log.
    pub sent: Vec<SentPacket>,
    /// The sink's log, in reception order.
    pub received: Vec<ReceivedPacket>,
    /// The gateway's final stats document.
    pub gateway: Option<Value>,
    /// The TCP senders' samples (empty without TCP sources).
    pub tcp_sent: Vec<TcpSenderSample>,
    /// The TCP receivers' samples (empty without TCP sources).
    pub tcp_received: Vec<TcpReceiverSample>,
}

/// The TCP columns of the simulator that Linux does not count: empty in a measured run.
const TCP_UNMEASURED: [&str; 6] = [
    "fast_retransmits",
    "timeouts",
    "acks_sent",
    "acks_dropped",
    "rtt_samples",
    "rtt_mean_s",
];

/// The last sample of `source` at or before `time` in a log sorted by time per source.
fn at<T: Copy>(samples: &[T], source: u32, time: TimeNs, key: impl Fn(&T) -> (u32, TimeNs)) -> Option<T> {
    samples
        .iter()
        .filter(|s| key(s).0 == source && key(s).1 <= time)
        .max_by_key(|s| key(s).1)
        .copied()
}

/// The raw TCP outcome of source `s` from the logs of one run: counters at `warmup` and at
/// `end`, a sample at every bin boundary up to `end`.
fn tcp_raw(run: &MeasuredRun, s: u32, warmup: TimeNs, end: TimeNs, bin: TimeNs) -> TcpRaw {
    let sender = |t| at(&run.tcp_sent, s, t, |x: &TcpSenderSample| (x.source, x.time)).unwrap_or_default();
    let delivered = |t| {
        at(&run.tcp_received, s, t, |x: &TcpReceiverSample| {
            (x.source, x.time)
        })
        .map_or(0, |x| x.delivered)
    };
    let counters = |t| {
        let sample = sender(t);
        TcpCounters {
            segments_sent: sample.segments_sent,
            retransmissions: sample.retransmissions,
            delivered_bytes: delivered(t),
            ..TcpCounters::default()
        }
    };
    let series = (1..=end / bin)
        .map(|k| {
            let time = k * bin;
            let sample = sender(time);
            TcpSample {
                time,
                cwnd: sample.cwnd,
                ssthresh: sample.ssthresh,
                srtt: sample.srtt,
                rto: sample.rto,
                flight: sample.flight,
                delivered: delivered(time),
            }
        })
        .collect();
    TcpRaw {
        at_warmup: counters(warmup),
        at_end: counters(end),
        series,
        ..TcpRaw::default()
    }
}

fn reason_by_name(name: &str) -> Option<DropReason> {
    DropReason::ALL.into_iter().find(|r| r.name() == name)
}

/// Static names for the discipline counters read back from the gateway's stats (the
/// simulator's result type holds `&'static str`; the few names are interned once).
fn intern(name: &str) -> &'static str {
    use std::sync::Mutex;
    static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = names.iter().find(|n| **n == name) {
        return found;
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.push(leaked);
    leaked
}

/// Builds the results of a measured run of `scenario` whose bottleneck is link `bottleneck`;
/// returns them with the `measure.json` document.
pub fn measured_results(
    scenario: &Scenario,
    runs: &[MeasuredRun],
    bottleneck: usize,
) -> Result<(SimResults, Value), String> {
    let RunLength::Duration(duration) = scenario.run.length else {
        return Err("run.packets: a measured run needs run.duration".into());
    };
    let warmup = scenario.run.warmup;
    let n = scenario.sources.len();
    let mut histograms: Vec<_> = (0..n).map(|_| DelayHistogram::new()).collect();
    let mut replications = Vec::new();
    let mut extra = Vec::new();
    for run in runs {
        let mut flows: Vec<Accumulator> = (0..n).map(|_| Accumulator::default()).collect();
        let mut measured: Vec<(u64, u64)> = vec![(u64::MAX, 0); n];
        let mut requested_bytes = vec![0u64; n];
        let mut lateness_sum = vec![0u128; n];
        let mut lateness_max = vec![0u64; n];
        let mut sent_count = vec![0u64; n];
        for p in &run.sent {
            let s = p.source as usize;
            if s >= n {
                return Err(format!(
                    "sent log: source {} but the scenario has {n} sources",
                    p.source
                ));
            }
            sent_count[s] += 1;
            requested_bytes[s] += p.size as u64;
            let late = p.sent.saturating_sub(p.scheduled);
            lateness_sum[s] += late as u128;
            lateness_max[s] = lateness_max[s].max(late);
            if p.scheduled >= warmup && p.scheduled < duration {
                flows[s].on_sent(p.size, 0);
                measured[s].0 = measured[s].0.min(p.sequence);
                measured[s].1 = measured[s].1.max(p.sequence + 1);
            }
        }
        let mut seen: Vec<HashSet<u64>> = vec![HashSet::new(); n];
        let mut highest: Vec<Option<u64>> = vec![None; n];
        let mut duplicates = vec![0u64; n];
        let mut reordered = vec![0u64; n];
        let mut series = vec![FlowSeries::default(); n];
        let bin = scenario.run.bin.max(1);
        let mut last_receive = 0;
        for p in &run.received {
            let s = p.source as usize;
            if s >= n {
                continue;
            }
            if !seen[s].insert(p.sequence) {
                duplicates[s] += 1;
                continue;
            }
            if highest[s].is_some_and(|h| p.sequence < h) {
                reordered[s] += 1;
            }
            highest[s] = Some(highest[s].map_or(p.sequence, |h| h.max(p.sequence)));
            last_receive = last_receive.max(p.received);
            let k = (p.received / bin) as usize;
            let flow_series = &mut series[s];
            if k >= flow_series.bytes.len() {
                flow_series.bytes.resize(k + 1, 0);
                flow_series.packets.resize(k + 1, 0);
            }
            flow_series.bytes[k] += p.size as u64;
            flow_series.packets[k] += 1;
            if (measured[s].0..measured[s].1).contains(&p.sequence) {
                flows[s].on_received(p.size, p.received, p.received.saturating_sub(p.sent));
            }
        }
        let gateway_flow = |flow: u32| -> Option<&Value> {
            run.gateway
                .as_ref()?
                .get("flows")?
                .as_array()?
                .iter()
                .find(|f| f.get("flow").and_then(Value::as_u64) == Some(flow as u64))
        };
        for (s, source) in scenario.sources.iter().enumerate() {
            let lost = flows[s].sent.saturating_sub(flows[s].received);
            let reason = gateway_flow(source.flow)
                .and_then(|f| f.get("dropped")?.as_object().cloned())
                .and_then(|reasons| {
                    reasons
                        .iter()
                        .filter_map(|(name, count)| Some((reason_by_name(name)?, count.as_u64()?)))
                        .filter(|(_, count)| *count > 0)
                        .max_by_key(|(_, count)| *count)
                        .map(|(reason, _)| reason)
                });
            if let Some(reason) = reason {
                for _ in 0..lost {
                    flows[s].on_dropped(0, reason);
                }
            }
        }
        let mut tcp = Vec::with_capacity(n);
        for (s, source) in scenario.sources.iter().enumerate() {
            if source.transport.is_none() {
                tcp.push(None);
                continue;
            }
            let raw = tcp_raw(run, s as u32, warmup, duration, bin);
            flows[s].received_bytes = raw.at_end.delivered_bytes - raw.at_warmup.delivered_bytes;
            let mut previous = 0;
            series[s] = FlowSeries::default();
            for sample in &raw.series {
                series[s].bytes.push(sample.delivered.saturating_sub(previous));
                series[s].packets.push(0);
                previous = sample.delivered;
            }
            tcp.push(Some(raw));
        }
        let in_flight: Vec<u64> = flows
            .iter()
            .map(|f| f.sent - f.received - f.dropped_total())
            .collect();
        let mut present: Vec<u8> = scenario.sources.iter().map(|s| s.class).collect();
        present.sort_unstable();
        present.dedup();
        let classes = present
            .into_iter()
            .map(|class| {
                let mut acc = Accumulator::default();
                for (source, flow) in scenario.sources.iter().zip(&flows) {
                    if source.class == class {
                        acc.merge_counts(flow);
                    }
                }
                (class, acc)
            })
            .collect();
        let total = run.gateway.as_ref().and_then(|g| g.get("total"));
        let count = |key: &str| {
            total
                .and_then(|t| t.get(key))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        let queue = |key: &str| {
            run.gateway
                .as_ref()
                .and_then(|g| g.get("queue")?.get(key)?.as_u64())
                .unwrap_or(0)
        };
        let link_window = scenario
            .links
            .iter()
            .enumerate()
            .map(|(index, link)| {
                let start = LinkSnapshot {
                    time: warmup,
                    ..LinkSnapshot::default()
                };
                let mut end = LinkSnapshot {
                    time: duration,
                    ..LinkSnapshot::default()
                };
                if index == bottleneck {
                    // The gateway's backlog integral over its whole run: it is idle before
                    // the traffic starts, so this is the warm-up, the window and the drain.
                    end.area_packets = queue("area_packet_ns") as u128;
                    end.area_bytes = queue("area_byte_ns") as u128;
                    end.sent_packets = count("sent_packets");
                    end.sent_bytes = count("sent_bytes");
                    // build_from_scenario refuses a bottleneck without a rate.
                    let busy = link.rate.map_or(0, |rate| rate.transmission_time(end.sent_bytes));
                    end.busy = busy.min(duration - warmup);
                    for (i, reason) in DropReason::ALL.iter().enumerate() {
                        end.dropped[i] = total
                            .and_then(|t| t.get("dropped")?.get(reason.name())?.as_u64())
                            .unwrap_or(0);
                    }
                }
                (start, end)
            })
            .collect();
        let counters: Vec<Vec<(&'static str, u64)>> = (0..scenario.links.len())
            .map(|index| {
                let found = run
                    .gateway
                    .as_ref()
                    .and_then(|g| g.get("discipline_counters")?.as_object().cloned());
                match found {
                    Some(map) if index == bottleneck => map
                        .iter()
                        .filter_map(|(name, value)| Some((intern(name), value.as_u64()?)))
                        .collect(),
                    _ => Vec::new(),
                }
            })
            .collect();
        let links = scenario.links.len();
        let raw = RawReplication {
            replication: run.replication,
            stream_seeds: (0..n)
                .map(|i| {
                    schedlab_sim::traffic::stream_seed(scenario.run.seed, run.replication as u64, i as u64)
                })
                .collect(),
            flows,
            in_flight,
            flow_series: series,
            classes,
            link_window,
            link_max_backlog: (0..links)
                .map(|i| {
                    if i == bottleneck {
                        (queue("max_packets"), queue("max_bytes"))
                    } else {
                        (0, 0)
                    }
                })
                .collect(),
            link_series: vec![Vec::new(); links],
            link_class_window: vec![(Vec::new(), Vec::new()); links],
            link_meter_window: vec![(Vec::new(), Vec::new()); links],
            link_class_busy_series: vec![Vec::new(); links],
            link_idle_while_backlogged: vec![0; links],
            link_left_queued: vec![count("queued_packets"); links]
                .into_iter()
                .enumerate()
                .map(|(i, q)| if i == bottleneck { q } else { 0 })
                .collect(),
            discipline_counters: counters,
            tcp,
            lateness: vec![None; n],
            flow_discipline_counters: vec![Vec::new(); n],
            window_start: warmup,
            window_end: duration,
            end_time: last_receive.max(duration),
            events: run.received.len() as u64,
            packets: run.sent.len() as u64,
        };
        let mut result = reduce(scenario, raw, duration as f64 / 1e9, &mut histograms);
        for row in &mut result.tcp_flows {
            for (name, cell) in row.iter_mut() {
                // Empty, keeping the column's kind (a count has no confidence interval).
                if TCP_UNMEASURED.contains(name) {
                    *cell = match cell {
                        Cell::Real(_) => Cell::Real(None),
                        _ => Cell::Max(None),
                    };
                }
            }
        }
        replications.push(result);
        let span = |s: usize| -> f64 {
            let source = &scenario.sources[s];
            let stop = source.stop.unwrap_or(duration).min(duration);
            stop.saturating_sub(source.start) as f64 / 1e9
        };
        extra.push(json!({
            "replication": run.replication,
            "flows": scenario.sources.iter().enumerate().map(|(s, source)| json!({
                "flow": source.flow,
                "name": source.name,
                "sent_packets": sent_count[s],
                "sent_bytes": requested_bytes[s],
                "achieved_bps": (span(s) > 0.0).then(|| requested_bytes[s] as f64 * 8.0 / span(s)),
                "send_lateness_mean_s": (sent_count[s] > 0).then(|| lateness_sum[s] as f64 / sent_count[s] as f64 / 1e9),
                "send_lateness_max_s": lateness_max[s] as f64 / 1e9,
                "duplicates": duplicates[s],
                "reordered": reordered[s],
            })).collect::<Vec<_>>(),
            "gateway": run.gateway.clone(),
        }));
    }
    let results = SimResults {
        scenario: scenario.clone(),
        replications,
        wall_time_s: runs.len() as f64 * duration as f64 / 1e9,
        delay_histograms: histograms,
    };
    Ok((results, json!({ "measured": true, "replications": extra })))
}

/// Writes the results of [`measured_results`] into `out_dir`: the files of `schedlab run`
/// plus `measure.json`.
pub fn write_measured(results: &SimResults, extra: &Value, out_dir: &Path) -> std::io::Result<()> {
    results.write(out_dir)?;
    let text = serde_json::to_string_pretty(extra).map_err(std::io::Error::other)?;
    std::fs::write(out_dir.join("measure.json"), text + "\n")
}

/// The delay of each received measured packet of `source`, ns (for tests and reports).
pub fn delays(run: &MeasuredRun, source: u32) -> Vec<TimeNs> {
    run.received
        .iter()
        .filter(|p| p.source == source)
        .map(|p| p.received.saturating_sub(p.sent))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCENARIO: &str = "[run]\nduration = \"1s\"\nwarmup = \"0.2s\"\nseed = 1\nbin = \"0.5s\"\n\
        [[link]]\nname = \"l\"\nrate = \"1Mbit\"\nscheduler = { kind = \"drr\", quantum = 1500 }\n\
        [[source]]\nflow = 4\nname = \"A\"\npath = [\"l\"]\narrivals = { model = \"cbr\", rate_pps = 10 }\nsize = { dist = \"constant\", size = 500 }\n";

    #[test]
    fn logs_become_the_simulators_columns() {
        let scenario = schedlab_sim::validate_scenario_text(SCENARIO, Path::new(".")).unwrap();
        // Ten packets scheduled every 100 ms; packets 0 and 1 are in the warm-up. Packet 5 is
        // lost, packet 7 arrives twice, 8 before 6 (reordered: 6 arrives after 8).
        let sent: Vec<SentPacket> = (0..10)
            .map(|i| SentPacket {
                source: 0,
                sequence: i,
                scheduled: i * 100_000_000,
                sent: i * 100_000_000 + 1000,
                size: 500,
            })
            .collect();
        let receive = |i: u64, delay: u64| ReceivedPacket {
            source: 0,
            sequence: i,
            sent: i * 100_000_000 + 1000,
            received: i * 100_000_000 + 1000 + delay,
            size: 500,
        };
        let received = vec![
            receive(0, 4_000_000),
            receive(1, 4_000_000),
            receive(2, 4_000_000),
            receive(3, 6_000_000),
            receive(4, 4_000_000),
            receive(8, 4_000_000),
            receive(6, 250_000_000),
            receive(7, 4_000_000),
            receive(7, 4_000_000),
            receive(9, 4_000_000),
        ];
        let gateway = json!({"total": {"sent_packets": 9, "sent_bytes": 4500, "dropped": {"buffer_full": 1}},
                             "flows": [{"flow": 4, "dropped": {"buffer_full": 1, "late": 0}}],
                             "queue": {"area_packet_ns": 1_600_000_000u64, "area_byte_ns": 800_000_000_000u64,
                                       "max_packets": 3, "max_bytes": 1500},
                             "discipline_counters": {}});
        let run = MeasuredRun {
            replication: 0,
            sent,
            received,
            gateway: Some(gateway),
            ..MeasuredRun::default()
        };
        let (results, extra) = measured_results(&scenario, &[run], 0).unwrap();
        let flow = &results.flow_summaries()[0];
        assert_eq!(flow["flow"], 4);
        assert_eq!(flow["sent"], 8);
        assert_eq!(flow["received"], 7);
        assert_eq!(flow["dropped_buffer_full"], 1);
        assert_eq!(flow["in_flight"], 0);
        // Delays: 4 ms five times, 6 ms, 250 ms over seven packets.
        let mean = (5.0 * 0.004 + 0.006 + 0.25) / 7.0;
        assert!((flow["delay_mean_s"].as_f64().unwrap() - mean).abs() < 1e-12);
        assert_eq!(extra["replications"][0]["flows"][0]["duplicates"], 1);
        assert_eq!(extra["replications"][0]["flows"][0]["reordered"], 2);
        assert_eq!(extra["replications"][0]["flows"][0]["send_lateness_max_s"], 1e-6);
        let link = &results.link_summaries()[0];
        assert_eq!(link["sent_packets"], 9);
        // The gateway's backlog integral over the 0.8 s window (warm-up 0.2 s of 1 s).
        assert_eq!(link["queue_mean_packets"], 2.0);
        assert_eq!(link["queue_mean_bytes"], 1000.0);
        assert_eq!(link["queue_max_packets"], 3.0);
        assert_eq!(link["queue_max_bytes"], 1500.0);
        let dir = std::env::temp_dir().join(format!("schedlab-measured-{}", std::process::id()));
        write_measured(&results, &extra, &dir).unwrap();
        for file in [
            "summary.json",
            "flows.csv",
            "timeseries.csv",
            "delay_cdf.csv",
            "measure.json",
        ] {
            assert!(dir.join(file).exists(), "{file}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    const TCP_SCENARIO: &str = "[run]\nduration = \"2s\"\nwarmup = \"0.5s\"\nseed = 1\nbin = \"0.5s\"\n\
        [[link]]\nname = \"l\"\nrate = \"10Mbit\"\nscheduler = { kind = \"drr\", quantum = 1500 }\n\
        [[source]]\nflow = 1\nname = \"T\"\npath = [\"l\"]\ntransport = { kind = \"tcp\", mss = 1448 }\n\
        arrivals = { model = \"bulk\" }\nack_delay = \"1ms\"\n";

    #[test]
    fn tcp_samples_become_the_simulators_tcp_columns() {
        let scenario = schedlab_sim::validate_scenario_text(TCP_SCENARIO, Path::new(".")).unwrap();
        // The receiver delivers 100,000 bytes every 100 ms (8 Mbit/s); samples every 100 ms.
        let tcp_received = (0..=25)
            .map(|k| TcpReceiverSample {
                source: 0,
                time: k * 100_000_000,
                delivered: k * 100_000,
            })
            .collect();
        // The sender: 70 segments per 100 ms, one retransmission per 100 ms after 1 s.
        let tcp_sent = (0..=25)
            .map(|k| TcpSenderSample {
                source: 0,
                time: k * 100_000_000,
                segments_sent: 70 * k,
                retransmissions: k.saturating_sub(10),
                cwnd: 14_480,
                ssthresh: u64::MAX,
                srtt: 2_000_000,
                rto: 204_000_000,
                flight: 7_240,
            })
            .collect();
        let run = MeasuredRun {
            tcp_sent,
            tcp_received,
            ..MeasuredRun::default()
        };
        let (results, _) = measured_results(&scenario, &[run], 0).unwrap();
        let replication = &results.replications[0];
        let row: std::collections::HashMap<_, _> = replication.tcp_flows[0].iter().cloned().collect();
        // Window 0.5 s to 2 s: 1,500,000 bytes delivered, 8 Mbit/s.
        assert_eq!(row["delivered_bytes"], Cell::Count(1_500_000));
        assert_eq!(row["goodput_bps"], Cell::Real(Some(8_000_000.0)));
        assert_eq!(row["segments_sent"], Cell::Count(70 * 15));
        assert_eq!(row["retransmissions"], Cell::Count(10));
        // What Linux does not count is empty, not zero.
        assert_eq!(row["timeouts"], Cell::Max(None));
        assert_eq!(row["rtt_mean_s"], Cell::Real(None));
        // A sample at every bin boundary, and flows[] carries goodput as throughput.
        let series = &replication.tcp_series[0];
        assert_eq!(
            series.iter().map(|s| s.time).collect::<Vec<_>>(),
            [500_000_000, 1_000_000_000, 1_500_000_000, 2_000_000_000]
        );
        assert_eq!(series[1].delivered, 1_000_000);
        assert_eq!(series[1].cwnd, 14_480);
        let flow = &results.flow_summaries()[0];
        assert_eq!(flow["throughput_bps"], 8_000_000.0);
    }
}
