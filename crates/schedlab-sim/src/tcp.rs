//! TCP NewReno sources for the simulator: a sender and a receiver state machine that the
//! engine ([`crate::engine`]) drives with segments, acknowledgements and timers.
//!
//! What is implemented, by RFC section:
//! * RFC 5681 §3.1 slow start (`cwnd += min(N, SMSS)` per new ACK) and congestion avoidance
//!   (`cwnd += SMSS·SMSS/cwnd` per new ACK, eq. 3); `ssthresh = max(FlightSize/2, 2·SMSS)`
//!   (eq. 4) on a loss; the initial window of §3.1 eq. 1 unless `initial_window` is given;
//!   §4.1 restart window after an idle period longer than the RTO; §4.2 delayed ACKs (an ACK
//!   for at least every second full segment, and within `delayed_ack`); §4.2 immediate ACKs for
//!   out-of-order segments and for segments that fill a hole.
//! * RFC 6582 (NewReno) §3.2: fast retransmit on the third duplicate ACK when the ACK covers
//!   more than `recover`; `cwnd = ssthresh + 3·SMSS`; `cwnd += SMSS` per further duplicate
//!   ACK; a partial ACK retransmits the first unacknowledged segment, deflates the window by
//!   the amount acknowledged and adds back one SMSS, and resets the retransmission timer for
//!   the first partial ACK only (the "impatient" variant); a full ACK ends recovery with
//!   `cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS)` (option 1); after a timeout
//!   `recover = highest sequence sent`.
//! * RFC 6298: `SRTT`, `RTTVAR`, `RTO = SRTT + max(G, 4·RTTVAR)` with G = 1 ns, clamped to
//!   `[min_rto, max_rto]`, initial RTO `initial_rto`; Karn's rule (no sample from a segment
//!   that was retransmitted, one segment timed at a time); on expiry the RTO doubles (up to
//!   `max_rto`, §5.5), the earliest unacknowledged segment is resent, and the timer restarts.
//!   After a timeout the sender goes back to `SND.UNA` (go-back-N, as BSD and ns-2 do).
//!
//! Sequence numbers are byte offsets from 0 in a `u64` (no wrap-around). A data segment
//! carries `len` payload bytes; its packet is `len + header` bytes on the wire; an ACK packet
//! is `header` bytes.
//!
//! Choices where the RFCs are silent or leave options:
//! * No connection set-up or tear-down (no SYN/FIN): data flows from the source's start.
//! * Nagle's algorithm is off: the last, short segment of a transfer is sent at once.
//! * The receiver consumes data at once, so the advertised window is the constant
//!   `receiver_window`.
//! * Finite transfers of one source share one persistent connection (HTTP/1.1-style): each
//!   application write appends its bytes to the stream; its completion time is when the ACK
//!   covering its last byte reaches the sender, minus the time of the write.
//! * SACK (RFC 6675) is not implemented.

use std::collections::{BTreeMap, VecDeque};

use schedlab_core::config::ConfigError;
use schedlab_core::{TableReader, TimeNs};

/// The TCP variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpVariant {
    /// NewReno, RFC 6582.
    NewReno,
}

/// A TCP source's transport parameters (`source.transport`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpConfig {
    /// Variant (`variant`).
    pub variant: TcpVariant,
    /// Maximum segment size SMSS, payload bytes (`mss`).
    pub mss: u32,
    /// Header bytes added to every segment and making up an ACK (`header`).
    pub header: u32,
    /// Initial window IW, bytes (`initial_window`, given in segments).
    pub initial_window: u64,
    /// Receiver's advertised window, bytes (`receiver_window`).
    pub receiver_window: u64,
    /// Delayed-ACK timeout (`delayed_ack`); `None`: every segment is acknowledged at once.
    pub delayed_ack: Option<TimeNs>,
    /// Lower bound of the RTO, ns (`min_rto`).
    pub min_rto: TimeNs,
    /// RTO before the first RTT sample, ns (`initial_rto`).
    pub initial_rto: TimeNs,
    /// Upper bound of the RTO, ns (`max_rto`).
    pub max_rto: TimeNs,
}

const TRANSPORT_KEYS: &[&str] = &[
    "kind",
    "variant",
    "mss",
    "header",
    "initial_window",
    "receiver_window",
    "delayed_ack",
    "min_rto",
    "initial_rto",
    "max_rto",
];

impl TcpConfig {
    /// RFC 5681 §3.1 eq. 1: IW = min(4·SMSS, max(2·SMSS, 4380 bytes)).
    pub fn rfc5681_initial_window(mss: u32) -> u64 {
        let mss = mss as u64;
        (4 * mss).min((2 * mss).max(4380))
    }

    /// Reads a `transport` table at `path` (e.g. `source[3].transport`).
    pub fn from_table(table: &toml::Table, path: &str) -> Result<TcpConfig, ConfigError> {
        let mut r = TableReader::new(table, path);
        match r.string("kind")? {
            Some("tcp") => {}
            Some(_) => return Err(r.error("kind", "must be \"tcp\" (the only transport)")),
            None => return Err(r.error("kind", "is required: \"tcp\"")),
        }
        let variant = match r.string("variant")? {
            None | Some("newreno") => TcpVariant::NewReno,
            Some(_) => return Err(r.error("variant", "must be \"newreno\" (RFC 6582)")),
        };
        let mss = r.integer("mss", 1, 65_495)?.unwrap_or(1460) as u32;
        let header = r.integer("header", 1, 65_535)?.unwrap_or(40) as u32;
        let initial_window = match r.integer("initial_window", 1, 1_000_000)? {
            Some(segments) => segments as u64 * mss as u64,
            None => Self::rfc5681_initial_window(mss),
        };
        let receiver_window = r.size("receiver_window")?.unwrap_or(1 << 20);
        if receiver_window < mss as u64 {
            return Err(r.error(
                "receiver_window",
                format!("must hold at least one segment (mss = {mss} bytes)"),
            ));
        }
        let delayed_ack = r.duration("delayed_ack")?;
        if delayed_ack == Some(0) {
            return Err(r.error(
                "delayed_ack",
                "must be longer than zero (leave it out to acknowledge every segment)",
            ));
        }
        let min_rto = r.duration("min_rto")?.unwrap_or(1_000_000_000);
        let initial_rto = r.duration("initial_rto")?.unwrap_or(1_000_000_000);
        let max_rto = r.duration("max_rto")?.unwrap_or(60_000_000_000);
        if min_rto == 0 {
            return Err(r.error("min_rto", "must be longer than zero"));
        }
        if max_rto < min_rto {
            return Err(r.error("max_rto", "must be at least min_rto"));
        }
        if initial_rto < min_rto || initial_rto > max_rto {
            return Err(r.error("initial_rto", "must lie between min_rto and max_rto"));
        }
        r.finish_with(TRANSPORT_KEYS)?;
        Ok(TcpConfig {
            variant,
            mss,
            header,
            initial_window,
            receiver_window,
            delayed_ack,
            min_rto,
            initial_rto,
            max_rto,
        })
    }

    /// The largest packet on the wire, bytes.
    pub fn max_packet(&self) -> u64 {
        self.mss as u64 + self.header as u64
    }
}

/// A segment the sender puts on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// First byte.
    pub seq: u64,
    /// Payload bytes.
    pub len: u32,
    /// Whether these bytes were sent before.
    pub retransmission: bool,
}

/// Counters of one connection (all since the start of the run).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpCounters {
    /// Data segments sent (new and retransmitted).
    pub segments_sent: u64,
    /// Retransmitted segments.
    pub retransmissions: u64,
    /// Fast retransmits (entries into fast recovery).
    pub fast_retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Bytes delivered in order to the receiving application.
    pub delivered_bytes: u64,
    /// ACK packets sent by the receiver.
    pub acks_sent: u64,
    /// RTT samples taken.
    pub rtt_samples: u64,
    /// Sum of the RTT samples, ns.
    pub rtt_sum: u64,
}

/// The sending side of a connection.
#[derive(Clone, Debug)]
pub struct TcpSender {
    config: TcpConfig,
    /// SND.UNA: oldest unacknowledged byte.
    snd_una: u64,
    /// SND.NXT: next byte to send.
    snd_nxt: u64,
    /// Highest byte sent + 1.
    snd_max: u64,
    /// Bytes the application has written (`u64::MAX`: bulk, always has data).
    written: u64,
    /// cwnd, bytes.
    cwnd: u64,
    /// ssthresh, bytes.
    ssthresh: u64,
    duplicate_acks: u32,
    in_recovery: bool,
    /// `recover` of RFC 6582 (`None` before the first loss).
    recover: Option<u64>,
    /// Whether the current recovery has had a partial ACK (the timer reset rule).
    partial_ack_seen: bool,
    /// A retransmission of the segment at this byte is due now.
    retransmit_at: Option<u64>,
    srtt: Option<u64>,
    rttvar: u64,
    rto: u64,
    /// Consecutive timeouts without progress.
    backoff: u32,
    /// The segment being timed (Karn: one at a time, never a retransmitted one).
    timed: Option<(u64, TimeNs)>,
    /// When the retransmission timer expires.
    rto_deadline: Option<TimeNs>,
    last_send: TimeNs,
    /// Counters.
    pub counters: TcpCounters,
}

impl TcpSender {
    /// A sender with nothing written yet.
    pub fn new(config: TcpConfig) -> TcpSender {
        TcpSender {
            config,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            written: 0,
            cwnd: config.initial_window,
            ssthresh: u64::MAX,
            duplicate_acks: 0,
            in_recovery: false,
            recover: None,
            partial_ack_seen: false,
            retransmit_at: None,
            srtt: None,
            rttvar: 0,
            rto: config.initial_rto,
            backoff: 0,
            timed: None,
            rto_deadline: None,
            last_send: 0,
            counters: TcpCounters::default(),
        }
    }

    /// The application writes `bytes` more at `now` (`u64::MAX`: bulk, unlimited).
    pub fn write(&mut self, bytes: u64, now: TimeNs) {
        // RFC 5681 §4.1: after an idle period longer than the RTO, restart from
        // min(IW, cwnd).
        if self.snd_una == self.snd_max && self.snd_max > 0 && now.saturating_sub(self.last_send) > self.rto {
            self.cwnd = self.cwnd.min(self.config.initial_window);
        }
        self.written = self.written.saturating_add(bytes);
    }

    /// The application stops writing: no bytes beyond those already sent.
    pub fn close(&mut self) {
        self.written = self.written.min(self.snd_max);
    }

    /// Congestion window, bytes.
    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }

    /// Slow-start threshold, bytes (`u64::MAX` before the first loss).
    pub fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    /// Smoothed RTT, ns, once sampled.
    pub fn srtt(&self) -> Option<u64> {
        self.srtt
    }

    /// Current RTO, ns.
    pub fn rto(&self) -> u64 {
        self.rto
    }

    /// Bytes sent and not yet acknowledged.
    pub fn flight_size(&self) -> u64 {
        self.snd_max - self.snd_una
    }

    /// Oldest unacknowledged byte.
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }

    /// When the retransmission timer expires, if it runs.
    pub fn rto_deadline(&self) -> Option<TimeNs> {
        self.rto_deadline
    }

    /// The next segment to send at `now`, if the windows and the application allow one.
    pub fn next_segment(&mut self, now: TimeNs) -> Option<Segment> {
        let mss = self.config.mss as u64;
        let segment = if let Some(seq) = self.retransmit_at.take() {
            // Fast retransmit and partial-ACK retransmissions go out regardless of cwnd.
            let len = mss.min(self.snd_max - seq);
            if len == 0 {
                return None;
            }
            Segment {
                seq,
                len: len as u32,
                retransmission: true,
            }
        } else {
            let window = self.cwnd.min(self.config.receiver_window);
            let limit = self.snd_una + window;
            let len = mss.min(self.written - self.snd_nxt.min(self.written));
            if len == 0 || self.snd_nxt + len > limit {
                return None;
            }
            let segment = Segment {
                seq: self.snd_nxt,
                len: len as u32,
                retransmission: self.snd_nxt < self.snd_max,
            };
            self.snd_nxt += len;
            self.snd_max = self.snd_max.max(self.snd_nxt);
            segment
        };
        let end = segment.seq + segment.len as u64;
        if segment.retransmission {
            self.counters.retransmissions += 1;
            // Karn: a retransmission makes the timed segment's sample ambiguous.
            if self.timed.is_some_and(|(timed_end, _)| timed_end >= segment.seq) {
                self.timed = None;
            }
        } else if self.timed.is_none() {
            self.timed = Some((end, now));
        }
        self.counters.segments_sent += 1;
        self.last_send = now;
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rto);
        }
        Some(segment)
    }

    fn rtt_sample(&mut self, sample: u64) {
        // RFC 6298 §2.2–2.3 (β = 1/4, α = 1/8).
        match self.srtt {
            None => {
                self.srtt = Some(sample);
                self.rttvar = sample / 2;
            }
            Some(srtt) => {
                self.rttvar = (3 * self.rttvar + srtt.abs_diff(sample)) / 4;
                self.srtt = Some((7 * srtt + sample) / 8);
            }
        }
        let rto = self.srtt.unwrap_or(sample) + (4 * self.rttvar).max(1);
        self.rto = rto.clamp(self.config.min_rto, self.config.max_rto);
        self.backoff = 0;
        self.counters.rtt_samples += 1;
        self.counters.rtt_sum += sample;
    }

    /// An ACK with cumulative acknowledgement `ack` reaches the sender at `now`.
    pub fn on_ack(&mut self, ack: u64, now: TimeNs) {
        let mss = self.config.mss as u64;
        if ack > self.snd_una && ack <= self.snd_max {
            if let Some((end, sent)) = self.timed {
                if ack >= end {
                    self.timed = None;
                    self.rtt_sample(now - sent);
                }
            }
            let acked = ack - self.snd_una;
            self.snd_una = ack;
            self.snd_nxt = self.snd_nxt.max(ack);
            if self.in_recovery {
                if Some(ack) >= self.recover {
                    // Full ACK (RFC 6582 §3.2 step 3, option 1).
                    let flight = self.snd_max - self.snd_una;
                    self.cwnd = self.ssthresh.min(flight.max(mss) + mss);
                    self.in_recovery = false;
                    self.duplicate_acks = 0;
                } else {
                    // Partial ACK (step 4): retransmit the first unacknowledged segment,
                    // deflate by the amount acknowledged, add back one SMSS.
                    self.retransmit_at = Some(self.snd_una);
                    self.cwnd = self.cwnd.saturating_sub(acked);
                    if acked >= mss {
                        self.cwnd += mss;
                    }
                    self.cwnd = self.cwnd.max(mss);
                    if !self.partial_ack_seen {
                        self.partial_ack_seen = true;
                        self.rto_deadline = Some(now + self.rto);
                    }
                    return;
                }
            } else {
                self.duplicate_acks = 0;
                if self.cwnd < self.ssthresh {
                    self.cwnd += acked.min(mss);
                } else {
                    self.cwnd += (mss * mss / self.cwnd).max(1);
                }
            }
            self.rto_deadline = (self.snd_una < self.snd_max).then(|| now + self.rto);
        } else if ack == self.snd_una && self.snd_max > self.snd_una {
            self.duplicate_acks += 1;
            if self.in_recovery {
                self.cwnd += mss;
            } else if self.duplicate_acks == 3 && self.recover.is_none_or(|recover| ack > recover) {
                let flight = self.snd_max - self.snd_una;
                self.ssthresh = (flight / 2).max(2 * mss);
                self.recover = Some(self.snd_max);
                self.cwnd = self.ssthresh + 3 * mss;
                self.in_recovery = true;
                self.partial_ack_seen = false;
                self.retransmit_at = Some(self.snd_una);
                self.counters.fast_retransmits += 1;
            }
        }
    }

    /// The retransmission timer, if it has expired by `now`: halve, collapse the window to
    /// one segment, back off and go back to `SND.UNA`. Returns whether it fired.
    pub fn on_timer(&mut self, now: TimeNs) -> bool {
        let Some(deadline) = self.rto_deadline else {
            return false;
        };
        if deadline > now {
            return false;
        }
        if self.snd_una >= self.snd_max {
            self.rto_deadline = None;
            return false;
        }
        let mss = self.config.mss as u64;
        if self.backoff == 0 {
            self.ssthresh = (self.flight_size() / 2).max(2 * mss);
        }
        self.cwnd = mss;
        self.in_recovery = false;
        self.duplicate_acks = 0;
        self.recover = Some(self.snd_max);
        self.retransmit_at = None;
        self.snd_nxt = self.snd_una;
        self.timed = None;
        self.backoff += 1;
        self.rto = (self.rto.saturating_mul(2)).min(self.config.max_rto);
        self.rto_deadline = Some(now + self.rto);
        self.counters.timeouts += 1;
        true
    }
}

/// The receiving side of a connection.
#[derive(Clone, Debug)]
pub struct TcpReceiver {
    delayed_ack: Option<TimeNs>,
    mss: u32,
    /// RCV.NXT.
    rcv_nxt: u64,
    /// Out-of-order byte ranges received, start → end.
    out_of_order: BTreeMap<u64, u64>,
    /// Full segments received and not yet acknowledged (delayed ACKs).
    unacknowledged: u32,
    /// When a delayed ACK is due.
    ack_deadline: Option<TimeNs>,
}

impl TcpReceiver {
    /// A receiver expecting byte 0.
    pub fn new(config: &TcpConfig) -> TcpReceiver {
        TcpReceiver {
            delayed_ack: config.delayed_ack,
            mss: config.mss,
            rcv_nxt: 0,
            out_of_order: BTreeMap::new(),
            unacknowledged: 0,
            ack_deadline: None,
        }
    }

    /// RCV.NXT: bytes delivered in order so far.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    /// When a delayed ACK is due, if one is pending.
    pub fn ack_deadline(&self) -> Option<TimeNs> {
        self.ack_deadline
    }

    /// A segment `[seq, seq + len)` arrives at `now`; returns the acknowledgement to send now,
    /// if any (otherwise a delayed ACK may be pending, see [`TcpReceiver::on_timer`]).
    pub fn on_segment(&mut self, seq: u64, len: u32, now: TimeNs) -> Option<u64> {
        let end = seq + len as u64;
        if end <= self.rcv_nxt {
            // A duplicate: acknowledge at once.
            return Some(self.ack_now());
        }
        if seq > self.rcv_nxt {
            // Out of order: keep it, send a duplicate ACK at once (RFC 5681 §4.2).
            let entry = self.out_of_order.entry(seq).or_insert(end);
            *entry = (*entry).max(end);
            return Some(self.ack_now());
        }
        self.rcv_nxt = end;
        let filled_hole = !self.out_of_order.is_empty();
        while let Some((&start, &stop)) = self.out_of_order.first_key_value() {
            if start > self.rcv_nxt {
                break;
            }
            self.out_of_order.pop_first();
            self.rcv_nxt = self.rcv_nxt.max(stop);
        }
        match self.delayed_ack {
            Some(delay) if !filled_hole => {
                if len >= self.mss {
                    self.unacknowledged += 1;
                }
                if self.unacknowledged >= 2 {
                    Some(self.ack_now())
                } else {
                    if self.ack_deadline.is_none() {
                        self.ack_deadline = Some(now + delay);
                    }
                    None
                }
            }
            _ => Some(self.ack_now()),
        }
    }

    fn ack_now(&mut self) -> u64 {
        self.unacknowledged = 0;
        self.ack_deadline = None;
        self.rcv_nxt
    }

    /// The delayed-ACK timer at `now`: the ACK to send, if one was due.
    pub fn on_timer(&mut self, now: TimeNs) -> Option<u64> {
        match self.ack_deadline {
            Some(deadline) if deadline <= now => Some(self.ack_now()),
            _ => None,
        }
    }
}

/// One application transfer in flight.
#[derive(Clone, Copy, Debug)]
struct Transfer {
    /// Byte after its last.
    end: u64,
    /// When the application wrote it.
    written: TimeNs,
    /// Whether it was written inside the measurement window.
    measured: bool,
}

/// A connection: sender, receiver, the application's transfers and their completion times.
#[derive(Clone, Debug)]
pub struct TcpConnection {
    /// The sending side.
    pub sender: TcpSender,
    /// The receiving side.
    pub receiver: TcpReceiver,
    /// Whether the application is bulk (always has data).
    pub bulk: bool,
    transfers: VecDeque<Transfer>,
    written_total: u64,
    /// Completion times of the measured transfers, ns, in completion order.
    pub completion_times: Vec<u64>,
}

impl TcpConnection {
    /// A connection with `config`; `bulk` applications always have data.
    pub fn new(config: TcpConfig, bulk: bool) -> TcpConnection {
        let mut sender = TcpSender::new(config);
        if bulk {
            sender.write(u64::MAX, 0);
        }
        TcpConnection {
            sender,
            receiver: TcpReceiver::new(&config),
            bulk,
            transfers: VecDeque::new(),
            written_total: 0,
            completion_times: Vec::new(),
        }
    }

    /// The application writes a transfer of `bytes` at `now`.
    pub fn write(&mut self, bytes: u64, now: TimeNs, measured: bool) {
        self.written_total += bytes;
        self.transfers.push_back(Transfer {
            end: self.written_total,
            written: now,
            measured,
        });
        self.sender.write(bytes, now);
    }

    /// An ACK reaches the sender: updates the sender and completes transfers.
    pub fn on_ack(&mut self, ack: u64, now: TimeNs) {
        self.sender.on_ack(ack, now);
        let acked = self.sender.snd_una();
        while let Some(transfer) = self.transfers.front() {
            if transfer.end > acked {
                break;
            }
            if transfer.measured {
                self.completion_times.push(now - transfer.written);
            }
            self.transfers.pop_front();
        }
    }

    /// Transfers written in the window and not completed.
    pub fn unfinished_measured(&self) -> u64 {
        self.transfers.iter().filter(|t| t.measured).count() as u64
    }

    /// The counters, with the receiver's delivered bytes filled in.
    pub fn counters(&self) -> TcpCounters {
        TcpCounters {
            delivered_bytes: self.receiver.rcv_nxt(),
            ..self.sender.counters
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> TcpConfig {
        TcpConfig {
            variant: TcpVariant::NewReno,
            mss: 1000,
            header: 40,
            initial_window: 2000,
            receiver_window: 1 << 30,
            delayed_ack: None,
            min_rto: 200_000_000,
            initial_rto: 1_000_000_000,
            max_rto: 60_000_000_000,
        }
    }

    fn drain(sender: &mut TcpSender, now: TimeNs) -> Vec<Segment> {
        std::iter::from_fn(|| sender.next_segment(now)).collect()
    }

    #[test]
    fn slow_start_doubles_the_window_per_round_trip() {
        let mut sender = TcpSender::new(config());
        sender.write(u64::MAX, 0);
        let first = drain(&mut sender, 0);
        assert_eq!(first.len(), 2);
        for (round, expected) in [(1u64, 4usize), (2, 8), (3, 16)] {
            let now = round * 10_000_000;
            let mut sent = 0;
            let outstanding = sender.flight_size() / 1000;
            for k in 1..=outstanding {
                sender.on_ack(sender.snd_una() + 1000, now + k);
                sent += drain(&mut sender, now + k).len();
            }
            assert_eq!(sent, expected, "round {round}");
            assert_eq!(sender.cwnd(), 1000 * expected as u64);
        }
    }

    #[test]
    fn congestion_avoidance_adds_one_segment_per_window() {
        let mut sender = TcpSender::new(TcpConfig {
            initial_window: 10_000,
            ..config()
        });
        sender.ssthresh = 10_000;
        sender.write(u64::MAX, 0);
        drain(&mut sender, 0);
        for k in 1..=10 {
            sender.on_ack(k * 1000, 1_000_000 * k);
            drain(&mut sender, 1_000_000 * k);
        }
        // Ten ACKs of one segment each at cwnd ≈ 10 segments: about one segment more.
        assert!((10_900..=11_000).contains(&sender.cwnd()), "{}", sender.cwnd());
    }

    #[test]
    fn three_duplicate_acks_trigger_fast_retransmit_and_newreno_recovery() {
        let mut sender = TcpSender::new(TcpConfig {
            initial_window: 8000,
            ..config()
        });
        sender.write(u64::MAX, 0);
        assert_eq!(drain(&mut sender, 0).len(), 8);
        // Segments 0 and 3 are lost: ACKs for 1, 2 are duplicates of 0.
        sender.on_ack(0, 10);
        assert!(drain(&mut sender, 10).is_empty());
        sender.on_ack(0, 11);
        sender.on_ack(0, 12);
        let retransmitted = drain(&mut sender, 12);
        assert_eq!(
            retransmitted[0],
            Segment {
                seq: 0,
                len: 1000,
                retransmission: true
            }
        );
        assert_eq!(sender.ssthresh(), 4000);
        assert_eq!(sender.counters.fast_retransmits, 1);
        // Partial ACK up to byte 3000 (segment 3 lost): retransmit it at once.
        sender.on_ack(3000, 20);
        let segments = drain(&mut sender, 20);
        assert_eq!(segments[0].seq, 3000);
        assert!(segments[0].retransmission);
        // Full ACK: recovery ends with cwnd = min(ssthresh, flight + mss).
        sender.on_ack(sender.snd_max, 30);
        assert!(!sender.in_recovery);
        assert!(sender.cwnd() <= 4000);
    }

    #[test]
    fn timeout_backs_off_and_goes_back_to_snd_una() {
        let mut sender = TcpSender::new(config());
        sender.write(u64::MAX, 0);
        drain(&mut sender, 0);
        let deadline = sender.rto_deadline().unwrap();
        assert_eq!(deadline, 1_000_000_000);
        assert!(!sender.on_timer(deadline - 1));
        assert!(sender.on_timer(deadline));
        assert_eq!(sender.cwnd(), 1000);
        assert_eq!(sender.rto(), 2_000_000_000);
        let again = drain(&mut sender, deadline);
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].seq, 0);
        assert!(again[0].retransmission);
        // A second timeout doubles again, and the ACK of a retransmitted segment gives no RTT
        // sample (Karn).
        assert!(sender.on_timer(deadline + 2_000_000_000));
        assert_eq!(sender.rto(), 4_000_000_000);
        drain(&mut sender, deadline + 2_000_000_000);
        sender.on_ack(1000, deadline + 2_100_000_000);
        assert_eq!(sender.srtt(), None);
        assert_eq!(sender.counters.timeouts, 2);
    }

    #[test]
    fn rto_follows_rfc6298() {
        let mut sender = TcpSender::new(TcpConfig {
            min_rto: 1,
            ..config()
        });
        sender.write(u64::MAX, 0);
        drain(&mut sender, 0);
        sender.on_ack(1000, 100_000_000);
        // First sample R = 100 ms: SRTT = R, RTTVAR = R/2, RTO = R + 4·R/2 = 300 ms.
        assert_eq!(sender.srtt(), Some(100_000_000));
        assert_eq!(sender.rto(), 300_000_000);
        drain(&mut sender, 100_000_000);
        sender.on_ack(2000, 100_000_000);
        sender.on_ack(3000, 100_000_000 + 60_000_000);
        // Second sample R' = 60 ms: RTTVAR = 3/4·50 + 1/4·40 = 47.5 ms, SRTT = 7/8·100 +
        // 1/8·60 = 95 ms, RTO = 95 + 190 = 285 ms.
        assert_eq!(sender.srtt(), Some(95_000_000));
        assert_eq!(sender.rto(), 285_000_000);
    }

    #[test]
    fn receiver_acknowledges_out_of_order_at_once_and_delays_in_order_acks() {
        let mut receiver = TcpReceiver::new(&TcpConfig {
            delayed_ack: Some(40_000_000),
            ..config()
        });
        assert_eq!(receiver.on_segment(0, 1000, 0), None);
        assert_eq!(receiver.ack_deadline(), Some(40_000_000));
        assert_eq!(receiver.on_segment(1000, 1000, 1), Some(2000));
        assert_eq!(receiver.on_segment(3000, 1000, 2), Some(2000));
        // Filling the hole acknowledges at once, up to the end of the stored range.
        assert_eq!(receiver.on_segment(2000, 1000, 3), Some(4000));
        assert_eq!(receiver.on_segment(4000, 1000, 4), None);
        assert_eq!(receiver.on_timer(40_000_003), None);
        assert_eq!(receiver.on_timer(40_000_004), Some(5000));
    }

    #[test]
    fn transfers_complete_when_their_last_byte_is_acknowledged() {
        let mut connection = TcpConnection::new(config(), false);
        connection.write(1500, 0, true);
        connection.write(500, 5, true);
        let segments: Vec<Segment> = std::iter::from_fn(|| connection.sender.next_segment(5)).collect();
        assert_eq!(
            segments.iter().map(|s| s.len).collect::<Vec<_>>(),
            vec![1000, 1000]
        );
        connection.on_ack(1000, 100);
        assert!(connection.completion_times.is_empty());
        connection.on_ack(2000, 200);
        assert_eq!(connection.completion_times, vec![200, 195]);
    }

    #[test]
    fn transport_errors_name_the_key_and_the_value() {
        let table: toml::Table = "kind = \"tcp\"\nmss = 0".parse().unwrap();
        let error = TcpConfig::from_table(&table, "source[1].transport").unwrap_err();
        assert_eq!(error.path, "source[1].transport.mss");
        assert_eq!(error.value, "0");
        let table: toml::Table = "kind = \"tcp\"\nsack = true".parse().unwrap();
        let error = TcpConfig::from_table(&table, "source[1].transport").unwrap_err();
        assert!(error.path.ends_with("sack"), "{error:?}");
        let table: toml::Table = "kind = \"udp\"".parse().unwrap();
        let error = TcpConfig::from_table(&table, "t").unwrap_err();
        assert_eq!(error.path, "t.kind");
        let table: toml::Table = "kind = \"tcp\"\nmin_rto = \"2s\"\nmax_rto = \"1s\""
            .parse()
            .unwrap();
        assert_eq!(TcpConfig::from_table(&table, "t").unwrap_err().path, "t.max_rto");
        let table: toml::Table = "kind = \"tcp\"".parse().unwrap();
        let config = TcpConfig::from_table(&table, "t").unwrap();
        assert_eq!(config.initial_window, 4380);
        assert_eq!(config.max_packet(), 1500);
    }
}
