//! What `schedlab gen` sends and `schedlab sink` receives, without I/O: the schedule of a
//! scenario's sources (the simulator's own generators and shapers, with the same random
//! streams as `schedlab run`), the datagram header, and the packet logs both write.
//!
//! ## Datagram header (24 bytes, big-endian, at the start of the UDP payload)
//! `magic u32 = 0x5343484c ("SCHL") | source index u32 | sequence u64 | send time u64 (ns of
//! CLOCK_MONOTONIC since the run's origin)`. The rest of the payload is zeros. A packet's
//! size in the scenario is its IP length, so the UDP payload is `size − 28` bytes over IPv4
//! (`size − 48` over IPv6), at least the header.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt::Write as _;
use std::path::Path;

use schedlab_core::TimeNs;
use schedlab_sim::scenario::{RunLength, Scenario};
use schedlab_sim::traffic::{source_rng, Generator, TokenBucket};

/// First bytes of every schedlab datagram.
pub const MAGIC: u32 = 0x5343_484c;
/// Bytes of the datagram header.
pub const HEADER_BYTES: usize = 24;
/// IPv4 + UDP header bytes.
pub const IPV4_UDP_OVERHEAD: u32 = 28;
/// IPv6 + UDP header bytes.
pub const IPV6_UDP_OVERHEAD: u32 = 48;
/// Largest UDP payload (65,535 − 8 − 20).
pub const MAX_PAYLOAD: usize = 65_507;

/// The header of a schedlab datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Index of the scenario source that sent it.
    pub source: u32,
    /// 0-based sequence number within the source.
    pub sequence: u64,
    /// Send time, ns since the origin.
    pub sent: TimeNs,
}

impl Header {
    /// Writes the header at the start of `payload` (at least [`HEADER_BYTES`] long).
    pub fn write(&self, payload: &mut [u8]) {
        payload[0..4].copy_from_slice(&MAGIC.to_be_bytes());
        payload[4..8].copy_from_slice(&self.source.to_be_bytes());
        payload[8..16].copy_from_slice(&self.sequence.to_be_bytes());
        payload[16..24].copy_from_slice(&self.sent.to_be_bytes());
    }

    /// Reads a header, or `None` if `payload` is not a schedlab datagram.
    pub fn read(payload: &[u8]) -> Option<Header> {
        if payload.len() < HEADER_BYTES || payload[0..4] != MAGIC.to_be_bytes() {
            return None;
        }
        let u64_at = |i: usize| u64::from_be_bytes(payload[i..i + 8].try_into().expect("8 bytes"));
        Some(Header {
            source: u32::from_be_bytes(payload[4..8].try_into().expect("4 bytes")),
            sequence: u64_at(8),
            sent: u64_at(16),
        })
    }
}

/// One packet of the schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scheduled {
    /// When it enters the network (after the source's shaper), ns since the origin.
    pub time: TimeNs,
    /// Source index.
    pub source: u32,
    /// Sequence number within the source.
    pub sequence: u64,
    /// IP length, bytes.
    pub size: u32,
}

/// The packets of a scenario's sources in time order (ties by source index), replication
/// `replication`: the same generators, random streams and shapers as the simulator's, so a
/// measured run offers exactly the packets the simulated run does.
pub struct Schedule {
    generators: Vec<(Generator, Option<TokenBucket>, TimeNs, u64)>,
    heads: BinaryHeap<Reverse<(TimeNs, u32, u32)>>,
}

impl Schedule {
    /// The schedule of `scenario`'s open-loop sources (those in `sources`, by index; all if
    /// empty). TCP sources are left out: on real packets Linux's TCP sends them
    /// (`schedlab measure`).
    pub fn new(scenario: &Scenario, replication: u32, sources: &[usize]) -> Schedule {
        let run = &scenario.run;
        let end = match run.length {
            RunLength::Duration(d) => d,
            RunLength::Packets(_) => u64::MAX,
        };
        let mut schedule = Schedule {
            generators: Vec::new(),
            heads: BinaryHeap::new(),
        };
        for (index, source) in scenario.sources.iter().enumerate() {
            let rng = source_rng(run.seed, replication as u64, index as u64);
            let generator = Generator::new(&source.arrivals, source.size.clone(), source.start, rng);
            let shaper = source.shaper.map(|s| TokenBucket::new(s.sigma, s.rho));
            let stop = source.stop.unwrap_or(u64::MAX).min(end);
            schedule.generators.push((generator, shaper, stop, 0));
            if source.transport.is_none() && (sources.is_empty() || sources.contains(&index)) {
                schedule.advance(index);
            }
        }
        schedule
    }

    fn advance(&mut self, index: usize) {
        let (generator, shaper, stop, _) = &mut self.generators[index];
        if let Some(emission) = generator.next_packet() {
            if emission.time < *stop {
                let time = match shaper {
                    Some(bucket) => bucket.release(emission.time, emission.size),
                    None => emission.time,
                };
                self.heads.push(Reverse((time, index as u32, emission.size)));
            }
        }
    }
}

impl Iterator for Schedule {
    type Item = Scheduled;

    fn next(&mut self) -> Option<Scheduled> {
        let Reverse((time, source, size)) = self.heads.pop()?;
        let entry = &mut self.generators[source as usize].3;
        let sequence = *entry;
        *entry += 1;
        self.advance(source as usize);
        Some(Scheduled {
            time,
            source,
            sequence,
            size,
        })
    }
}

/// A packet the generator sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentPacket {
    /// Source index.
    pub source: u32,
    /// Sequence number.
    pub sequence: u64,
    /// When the schedule said, ns since the origin.
    pub scheduled: TimeNs,
    /// When it was handed to the kernel, ns since the origin.
    pub sent: TimeNs,
    /// IP length, bytes.
    pub size: u32,
}

/// A datagram the sink received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReceivedPacket {
    /// Source index.
    pub source: u32,
    /// Sequence number.
    pub sequence: u64,
    /// Send time from its header, ns since the origin.
    pub sent: TimeNs,
    /// Receive time, ns since the origin.
    pub received: TimeNs,
    /// IP length, bytes (of the reassembled datagram).
    pub size: u32,
}

/// Header line of the sent log.
pub const SENT_HEADER: &str = "source,sequence,scheduled_ns,sent_ns,size_bytes";
/// Header line of the received log.
pub const RECEIVED_HEADER: &str = "source,sequence,sent_ns,received_ns,size_bytes";

fn log_csv(header: &str, rows: impl ExactSizeIterator<Item = [u64; 5]>) -> String {
    let mut out = String::with_capacity(40 * rows.len() + 64);
    out.push_str(header);
    out.push('\n');
    for [a, b, c, d, e] in rows {
        let _ = writeln!(out, "{a},{b},{c},{d},{e}");
    }
    out
}

/// The sent log as CSV text.
pub fn sent_csv(packets: &[SentPacket]) -> String {
    let rows = packets
        .iter()
        .map(|p| [p.source as u64, p.sequence, p.scheduled, p.sent, p.size as u64]);
    log_csv(SENT_HEADER, rows)
}

/// The received log as CSV text (in reception order).
pub fn received_csv(packets: &[ReceivedPacket]) -> String {
    let rows = packets
        .iter()
        .map(|p| [p.source as u64, p.sequence, p.sent, p.received, p.size as u64]);
    log_csv(RECEIVED_HEADER, rows)
}

fn parse_rows<const N: usize>(path: &Path, header: &str) -> Result<Vec<[u64; N]>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines();
    if lines.next() != Some(header) {
        return Err(format!("{}:1: the header must be {header}", path.display()));
    }
    let mut rows = Vec::new();
    for (index, line) in lines.enumerate() {
        let mut row = [0u64; N];
        let mut fields = line.split(',');
        for (column, cell) in row.iter_mut().enumerate() {
            let field = fields.next().unwrap_or("");
            *cell = field.parse().map_err(|_| {
                format!(
                    "{}:{}: column {} = {field:?}: must be a non-negative integer",
                    path.display(),
                    index + 2,
                    header.split(',').nth(column).unwrap_or("?")
                )
            })?;
        }
        rows.push(row);
    }
    Ok(rows)
}

/// Reads a sent log.
pub fn read_sent(path: &Path) -> Result<Vec<SentPacket>, String> {
    Ok(parse_rows::<5>(path, SENT_HEADER)?
        .into_iter()
        .map(|r| SentPacket {
            source: r[0] as u32,
            sequence: r[1],
            scheduled: r[2],
            sent: r[3],
            size: r[4] as u32,
        })
        .collect())
}

/// Reads a received log.
pub fn read_received(path: &Path) -> Result<Vec<ReceivedPacket>, String> {
    Ok(parse_rows::<5>(path, RECEIVED_HEADER)?
        .into_iter()
        .map(|r| ReceivedPacket {
            source: r[0] as u32,
            sequence: r[1],
            sent: r[2],
            received: r[3],
            size: r[4] as u32,
        })
        .collect())
}

/// Header of the TCP senders' log of `schedlab measure` (`tcp_sent.csv`): per TCP source,
/// the Linux sender's `TCP_INFO` sampled every 10 ms (time relative to the shared origin;
/// `ssthresh_bytes` = [`u64::MAX`] before the first loss).
pub const TCP_SENT_HEADER: &str =
    "source,time_ns,segments_sent,retransmissions,cwnd_bytes,ssthresh_bytes,srtt_ns,rto_ns,flight_bytes";
/// Header of the TCP receivers' log (`tcp_received.csv`): bytes each connection delivered to
/// the receiving application so far, sampled every 10 ms.
pub const TCP_RECEIVED_HEADER: &str = "source,time_ns,delivered_bytes";

/// A sample of a Linux TCP sender's state (`TCP_INFO`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpSenderSample {
    /// Source index.
    pub source: u32,
    /// Time after the origin, ns.
    pub time: TimeNs,
    /// Data segments sent, retransmissions included (`tcpi_data_segs_out`).
    pub segments_sent: u64,
    /// Retransmitted segments (`tcpi_total_retrans`).
    pub retransmissions: u64,
    /// Congestion window, bytes (`tcpi_snd_cwnd` × MSS).
    pub cwnd: u64,
    /// Slow-start threshold, bytes (`u64::MAX` before the first loss).
    pub ssthresh: u64,
    /// Smoothed RTT, ns (`tcpi_rtt`).
    pub srtt: u64,
    /// Retransmission timeout, ns (`tcpi_rto`).
    pub rto: u64,
    /// Bytes in flight (`tcpi_unacked` × MSS).
    pub flight: u64,
}

/// A sample of a TCP receiver: bytes delivered to the application so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpReceiverSample {
    /// Source index.
    pub source: u32,
    /// Time after the origin, ns.
    pub time: TimeNs,
    /// Bytes delivered in order so far.
    pub delivered: u64,
}

/// Reads a TCP senders' log.
pub fn read_tcp_sent(path: &Path) -> Result<Vec<TcpSenderSample>, String> {
    Ok(parse_rows::<9>(path, TCP_SENT_HEADER)?
        .into_iter()
        .map(|r| TcpSenderSample {
            source: r[0] as u32,
            time: r[1],
            segments_sent: r[2],
            retransmissions: r[3],
            cwnd: r[4],
            ssthresh: r[5],
            srtt: r[6],
            rto: r[7],
            flight: r[8],
        })
        .collect())
}

/// Reads a TCP receivers' log.
pub fn read_tcp_received(path: &Path) -> Result<Vec<TcpReceiverSample>, String> {
    Ok(parse_rows::<3>(path, TCP_RECEIVED_HEADER)?
        .into_iter()
        .map(|r| TcpReceiverSample {
            source: r[0] as u32,
            time: r[1],
            delivered: r[2],
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_rejects_foreign_payloads() {
        let header = Header {
            source: 3,
            sequence: 1 << 40,
            sent: 123_456_789,
        };
        let mut payload = vec![0u8; 100];
        header.write(&mut payload);
        assert_eq!(Header::read(&payload), Some(header));
        assert_eq!(Header::read(&payload[..23]), None);
        payload[0] = 0;
        assert_eq!(Header::read(&payload), None);
    }

    #[test]
    fn schedule_offers_exactly_the_simulators_packets() {
        let text = "[run]\nduration = \"2s\"\nseed = 7\n[[link]]\nname = \"l\"\nrate = \"1Mbit\"\n\
                    [[source]]\nflow = 0\npath = [\"l\"]\narrivals = { model = \"poisson\", rate_pps = 50 }\nsize = { dist = \"thesis_best_effort\" }\n\
                    [[source]]\nflow = 1\npath = [\"l\"]\narrivals = { model = \"cbr\", rate_pps = 20 }\nsize = { dist = \"constant\", size = 500 }\n";
        let scenario = schedlab_sim::validate_scenario_text(text, Path::new(".")).unwrap();
        let packets: Vec<Scheduled> = Schedule::new(&scenario, 0, &[]).collect();
        // Time order, and every source's own sequence numbers count up from 0.
        assert!(packets.windows(2).all(|w| w[0].time <= w[1].time));
        let cbr: Vec<&Scheduled> = packets.iter().filter(|p| p.source == 1).collect();
        assert_eq!(cbr.len(), 40);
        assert_eq!(cbr[3].time, 150_000_000);
        assert_eq!(cbr[3].sequence, 3);
        assert!(cbr.iter().all(|p| p.size == 500));
        // The simulator sees the same number of packets from the Poisson source.
        let simulated = schedlab_sim::run_scenario(&scenario).unwrap();
        let sent = simulated.flow_summaries()[0]["sent"].as_u64().unwrap();
        assert_eq!(packets.iter().filter(|p| p.source == 0).count() as u64, sent);
        // One source only.
        assert!(Schedule::new(&scenario, 0, &[1]).all(|p| p.source == 1));
    }

    #[test]
    fn logs_round_trip_and_bad_rows_name_file_line_and_column() {
        let dir = std::env::temp_dir().join(format!("schedlab-logs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sent = vec![SentPacket {
            source: 1,
            sequence: 2,
            scheduled: 3,
            sent: 4,
            size: 500,
        }];
        std::fs::write(dir.join("s.csv"), sent_csv(&sent)).unwrap();
        assert_eq!(read_sent(&dir.join("s.csv")).unwrap(), sent);
        std::fs::write(dir.join("r.csv"), format!("{RECEIVED_HEADER}\n1,2,3,x,5\n")).unwrap();
        let e = read_received(&dir.join("r.csv")).unwrap_err();
        assert!(
            e.ends_with("r.csv:2: column received_ns = \"x\": must be a non-negative integer"),
            "{e}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
