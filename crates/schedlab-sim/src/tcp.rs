//! TCP sources for the simulator (NewReno, and NewReno with SACK loss recovery): a sender and
//! a receiver state machine that the engine ([`crate::engine`]) drives with segments,
//! acknowledgements and timers.
//!
//! What is implemented, by RFC section:
//! * RFC 5681 §3.1 slow start (`cwnd += min(N, SMSS)` per new ACK) and congestion avoidance
//!   (`cwnd += SMSS·SMSS/cwnd` per new ACK, eq. 3, the division's remainder carried to the
//!   next ACK so that the window grows by one SMSS per window at any size); `ssthresh =
//!   max(FlightSize/2, 2·SMSS)` (eq. 4) on a loss; the initial window of §3.1 eq. 1 unless `initial_window` is given;
//!   §4.1 restart window after an idle period longer than the RTO; §4.2 delayed ACKs (an ACK
//!   for at least every second full segment, and within `delayed_ack`); §4.2 immediate ACKs for
//!   out-of-order segments and for segments that fill a hole.
//! * RFC 6582 (NewReno, `variant = "newreno"`) §3.2: fast retransmit on the third duplicate
//!   ACK when the ACK covers more than `recover`; `cwnd = ssthresh + 3·SMSS`; `cwnd += SMSS`
//!   per further duplicate ACK; a partial ACK retransmits the first unacknowledged segment,
//!   deflates the window by the amount acknowledged and adds back one SMSS, and resets the
//!   retransmission timer for the first partial ACK only (the "impatient" variant); a full ACK
//!   ends recovery with `cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS)` (option 1); after
//!   a timeout `recover = highest sequence sent`.
//! * RFC 2018 and RFC 6675 (`variant = "sack"`): the receiver reports up to
//!   [`MAX_SACK_BLOCKS`] blocks of out-of-order data on every ACK, the first holding the most
//!   recently received segment, then the most recently reported others (RFC 2018 §4). The
//!   sender keeps a scoreboard of SACKed bytes ([`RangeSet`]) and runs RFC 6675 §5: a
//!   duplicate ACK is one that SACKs new data without moving the cumulative ACK (§2);
//!   recovery starts at `DupThresh` = 3 duplicate ACKs or when `IsLost(HighACK + 1)` (§5
//!   step 2); on entry `ssthresh = cwnd = max(FlightSize/2, 2·SMSS)`, `RecoveryPoint =
//!   HighData`, the first unacknowledged segment is retransmitted and `HighRxt = RescueRxt =`
//!   its end (step 4); while `cwnd − pipe ≥ SMSS` segments come from `NextSeg()` rules 1–4
//!   (lost holes, new data, unSACKed holes below the highest SACKed byte, one rescue
//!   retransmission); a cumulative ACK at or above `RecoveryPoint` ends recovery with cwnd =
//!   ssthresh. Names: `HighACK` = `snd_una`, `HighData` = `snd_max`, `HighRxt` =
//!   `high_retransmitted`, `RescueRxt` = `rescue_retransmitted`, `RecoveryPoint` = `recover`,
//!   `SetPipe()` = [`TcpSender::pipe`], `IsLost()` below [`TcpSender::loss_limit`].
//! * RFC 6298: `SRTT`, `RTTVAR`, `RTO = SRTT + max(G, 4·RTTVAR)` with G = 1 ns, clamped to
//!   `[min_rto, max_rto]`, initial RTO `initial_rto`; Karn's rule (no sample from a segment
//!   that was retransmitted, one segment timed at a time); on expiry the RTO doubles (up to
//!   `max_rto`, §5.5), the earliest unacknowledged segment is resent, and the timer restarts.
//!   After a timeout the sender goes back to `SND.UNA` (go-back-N, as BSD and ns-2 do); with
//!   SACK it skips the bytes the scoreboard holds.
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
//! * SACK: the option's bytes are not added to the ACK's size (as in ns-2); no D-SACK, no
//!   limited transmit (RFC 3042); the receiver never reneges, so the scoreboard is kept
//!   across a timeout (RFC 6675 §5.1 leaves this to the implementation) and cleared only below
//!   the cumulative ACK; `IsLost(S)` holds when more than 2·SMSS bytes or 3 separate blocks are
//!   SACKed above S; outside recovery the window counts SACKed bytes as in flight (BSD-style,
//!   after a timeout). During recovery cwnd does not grow, and a cumulative ACK restarts the
//!   retransmission timer (RFC 6298 §5.3).
//! * The fast retransmission restarts the retransmission timer (RFC 6298 §5.1 restarts it only
//!   on a new ACK; BSD, Linux and ns-2 restart it when they resend the first unacknowledged
//!   segment). Without it a flow whose third duplicate ACK comes late in the timer's run times
//!   out one RTO after the *original* transmission, before the fast retransmission can be
//!   acknowledged.
//! * A timeout during a recovery (either variant) sets ssthresh to the smaller of the
//!   recovery's ssthresh and FlightSize/2: RFC 5681 eq. 4 asks for no more than FlightSize/2,
//!   and FlightSize then counts the segments sent during the recovery (as Linux keeps the
//!   recovery's ssthresh).

use std::collections::{BTreeMap, VecDeque};

use schedlab_core::config::ConfigError;
use schedlab_core::{TableReader, TimeNs};

/// The TCP variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpVariant {
    /// NewReno, RFC 6582.
    NewReno,
    /// NewReno's congestion control with SACK blocks (RFC 2018) and SACK-based loss recovery
    /// (RFC 6675).
    Sack,
}

/// Most SACK blocks one ACK carries (RFC 2018 §3: three when the timestamp option is used,
/// as by every current stack; ns-2's `Agent/TCPSink/Sack1` default too).
pub const MAX_SACK_BLOCKS: usize = 3;

/// An acknowledgement: the cumulative ACK and, with SACK, up to [`MAX_SACK_BLOCKS`] blocks
/// of data received above it (`[start, end)` byte ranges, most recent first).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ack {
    /// The next byte expected (RCV.NXT).
    pub cumulative: u64,
    blocks: [(u64, u64); MAX_SACK_BLOCKS],
    block_count: u8,
}

impl Ack {
    /// A cumulative acknowledgement of every byte before `cumulative`, without SACK blocks.
    pub fn cumulative(cumulative: u64) -> Ack {
        Ack {
            cumulative,
            ..Ack::default()
        }
    }

    /// The ACK with `block` appended (ignored beyond [`MAX_SACK_BLOCKS`]).
    pub fn with_block(mut self, block: (u64, u64)) -> Ack {
        if (self.block_count as usize) < MAX_SACK_BLOCKS {
            self.blocks[self.block_count as usize] = block;
            self.block_count += 1;
        }
        self
    }

    /// The SACK blocks, most recent first.
    pub fn blocks(&self) -> &[(u64, u64)] {
        &self.blocks[..self.block_count as usize]
    }
}

/// Disjoint, non-adjacent byte ranges `[start, end)`: the receiver's out-of-order data and
/// the sender's SACK scoreboard.
#[derive(Clone, Debug, Default)]
pub struct RangeSet {
    /// start → end.
    ranges: BTreeMap<u64, u64>,
}

impl RangeSet {
    /// Adds `[start, end)`, merging with the ranges it overlaps or touches; returns the bytes
    /// not covered before.
    pub fn insert(&mut self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        let new_bytes = (end - start) - self.covered(start, end);
        let (mut low, mut high) = (start, end);
        if let Some((s, e)) = self.ranges.range(..start).next_back().map(|(&s, &e)| (s, e)) {
            if e >= start {
                low = s;
                high = high.max(e);
                self.ranges.remove(&s);
            }
        }
        while let Some((s, e)) = self.ranges.range(start..=end).next().map(|(&s, &e)| (s, e)) {
            high = high.max(e);
            self.ranges.remove(&s);
        }
        self.ranges.insert(low, high);
        new_bytes
    }

    /// Forgets every byte below `seq`.
    pub fn remove_below(&mut self, seq: u64) {
        while let Some((&s, &e)) = self.ranges.first_key_value() {
            if s >= seq {
                break;
            }
            self.ranges.remove(&s);
            if e > seq {
                self.ranges.insert(seq, e);
                break;
            }
        }
    }

    /// The range holding byte `seq`.
    pub fn containing(&self, seq: u64) -> Option<(u64, u64)> {
        let (&s, &e) = self.ranges.range(..=seq).next_back()?;
        (e > seq).then_some((s, e))
    }

    /// The first byte at or after `seq` outside every range, and where the gap it starts
    /// ends (the next range's start, `u64::MAX` past the last range).
    pub fn next_gap(&self, seq: u64) -> (u64, u64) {
        let seq = self.containing(seq).map_or(seq, |(_, e)| e);
        let end = self.ranges.range(seq..).next().map_or(u64::MAX, |(&s, _)| s);
        (seq, end)
    }

    /// Bytes covered in `[start, end)`.
    pub fn covered(&self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        let mut total = 0;
        let first = self.containing(start).map_or(start, |(s, _)| s);
        for (&s, &e) in self.ranges.range(first..end) {
            total += e.min(end).saturating_sub(s.max(start));
        }
        total
    }

    /// The lowest and highest ranges, if any.
    pub fn first(&self) -> Option<(u64, u64)> {
        self.ranges.first_key_value().map(|(&s, &e)| (s, e))
    }

    /// The highest range, if any.
    pub fn last(&self) -> Option<(u64, u64)> {
        self.ranges.last_key_value().map(|(&s, &e)| (s, e))
    }

    /// The ranges from the highest down.
    pub fn descending(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().rev().map(|(&s, &e)| (s, e))
    }

    /// Whether no byte is covered.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

/// `DupThresh` of RFC 5681 and RFC 6675.
const DUP_THRESH: u64 = 3;

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
            Some("sack") => TcpVariant::Sack,
            Some(_) => {
                return Err(r.error(
                    "variant",
                    "must be \"newreno\" (RFC 6582) or \"sack\" (RFC 2018 blocks, RFC 6675 recovery)",
                ))
            }
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
    /// Congestion avoidance: the remainder of `SMSS·SMSS / cwnd` not yet added to cwnd.
    growth_remainder: u64,
    /// SACK: the scoreboard of SACKed bytes above `snd_una`.
    scoreboard: RangeSet,
    /// SACK: `HighRxt` of RFC 6675, the byte after the highest retransmitted in this recovery.
    high_retransmitted: u64,
    /// SACK: `RescueRxt` of RFC 6675.
    rescue_retransmitted: Option<u64>,
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
            growth_remainder: 0,
            scoreboard: RangeSet::default(),
            high_retransmitted: 0,
            rescue_retransmitted: None,
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
            let gap_end = self.scoreboard.next_gap(seq).1;
            let len = mss.min(self.snd_max - seq).min(gap_end - seq);
            if len == 0 {
                return None;
            }
            if self.config.variant == TcpVariant::Sack {
                // RFC 6675 §5 step 4.3: HighRxt = RescueRxt = the retransmission's end.
                self.high_retransmitted = seq + len;
                self.rescue_retransmitted = Some(seq + len);
            }
            Segment {
                seq,
                len: len as u32,
                retransmission: true,
            }
        } else if self.in_recovery && self.config.variant == TcpVariant::Sack {
            // RFC 6675 §5 step C: send while cwnd − pipe ≥ SMSS.
            if self.pipe() + mss > self.cwnd {
                return None;
            }
            self.next_sack_segment()?
        } else {
            let window = self.cwnd.min(self.config.receiver_window);
            let limit = self.snd_una + window;
            // With SACK, a go-back-N after a timeout skips the bytes the receiver holds.
            let (seq, gap_end) = if self.snd_nxt < self.snd_max {
                self.scoreboard.next_gap(self.snd_nxt)
            } else {
                (self.snd_nxt, u64::MAX)
            };
            self.snd_nxt = seq;
            let until = if seq < self.snd_max { gap_end } else { u64::MAX };
            let len = mss.min(self.written - seq.min(self.written)).min(until - seq);
            if len == 0 || seq + len > limit {
                return None;
            }
            let segment = Segment {
                seq,
                len: len as u32,
                retransmission: seq < self.snd_max,
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

    /// RFC 6675 `IsLost()` as a boundary: every unSACKed byte below the returned sequence
    /// number is deemed lost (more than `(DupThresh − 1)·SMSS` bytes, or `DupThresh`
    /// separate blocks, are SACKed above it); `snd_una` when none is.
    pub fn loss_limit(&self) -> u64 {
        let mss = self.config.mss as u64;
        let (mut bytes, mut blocks) = (0, 0);
        for (start, end) in self.scoreboard.descending() {
            bytes += end - start;
            blocks += 1;
            if bytes > (DUP_THRESH - 1) * mss || blocks >= DUP_THRESH {
                return start.max(self.snd_una);
            }
        }
        self.snd_una
    }

    /// RFC 6675 `SetPipe()`: the bytes the sender deems in the network — every unSACKed byte
    /// not deemed lost, plus every unSACKed byte retransmitted in this recovery (below
    /// `HighRxt`).
    pub fn pipe(&self) -> u64 {
        let lost = self.loss_limit().min(self.snd_max);
        let unsacked = |start: u64, end: u64| (end - start) - self.scoreboard.covered(start, end);
        let retransmitted = self.high_retransmitted.clamp(self.snd_una, self.snd_max);
        unsacked(lost, self.snd_max) + unsacked(self.snd_una, retransmitted)
    }

    /// RFC 6675 `NextSeg()`, rules 1–4, with the state updates of step C.2–C.3.
    fn next_sack_segment(&mut self) -> Option<Segment> {
        let mss = self.config.mss as u64;
        let from = self.high_retransmitted.max(self.snd_una);
        let (hole, hole_end) = self.scoreboard.next_gap(from);
        let hole_len = mss.min(hole_end.min(self.snd_max).saturating_sub(hole));
        let highest_sacked = self.scoreboard.last().map_or(0, |(_, end)| end);
        // Rule 1: the first unSACKed byte above HighRxt deemed lost.
        // Rule 3 (after rule 2): any unSACKed byte above HighRxt below the highest SACKed byte.
        let rule_1 = hole < self.loss_limit() && hole_len > 0;
        let new_len = mss
            .min(self.written.saturating_sub(self.snd_max))
            .min((self.snd_una + self.config.receiver_window).saturating_sub(self.snd_max));
        if !rule_1 && new_len > 0 {
            // Rule 2: new data.
            let seq = self.snd_max;
            self.snd_max += new_len;
            self.snd_nxt = self.snd_max;
            return Some(Segment {
                seq,
                len: new_len as u32,
                retransmission: false,
            });
        }
        if rule_1 || (hole < highest_sacked && hole_len > 0) {
            self.high_retransmitted = hole + hole_len;
            return Some(Segment {
                seq: hole,
                len: hole_len as u32,
                retransmission: true,
            });
        }
        // Rule 4: one rescue retransmission per recovery, ending at the highest unSACKed
        // byte (`highest` is the byte after it).
        if self
            .rescue_retransmitted
            .is_none_or(|rescue| self.snd_una > rescue)
        {
            let highest = match self.scoreboard.last() {
                Some((start, end)) if end >= self.snd_max => start,
                _ => self.snd_max,
            };
            let floor = self
                .scoreboard
                .descending()
                .find(|&(start, _)| start < highest)
                .map_or(self.snd_una, |(_, end)| end);
            let start = highest.saturating_sub(mss).max(floor).max(self.snd_una);
            if highest > start {
                self.rescue_retransmitted = self.recover;
                return Some(Segment {
                    seq: start,
                    len: (highest - start) as u32,
                    retransmission: true,
                });
            }
        }
        None
    }

    fn rtt_sample(&mut self, sample: u64) {
        // RFC 6298 §2.2–2.3 (β = 1/4, α = 1/8).
        match self.srtt {
            None => {
                self.srtt = Some(sample);
                self.rttvar = sample / 2;
            }
            Some(srtt) => {
                // (In 128 bits: a sample may be up to the clock's end, 2⁶³ ns.)
                self.rttvar = ((3 * self.rttvar as u128 + srtt.abs_diff(sample) as u128) / 4) as u64;
                self.srtt = Some(((7 * srtt as u128 + sample as u128) / 8) as u64);
            }
        }
        let rto = self
            .srtt
            .unwrap_or(sample)
            .saturating_add(self.rttvar.saturating_mul(4).max(1));
        self.rto = rto.clamp(self.config.min_rto, self.config.max_rto);
        self.backoff = 0;
        self.counters.rtt_samples += 1;
        self.counters.rtt_sum = self.counters.rtt_sum.saturating_add(sample);
    }

    /// A cumulative ACK of new data: RTT sample (Karn), `SND.UNA` moves; returns the bytes
    /// newly acknowledged.
    fn advance(&mut self, ack: u64, now: TimeNs) -> u64 {
        if let Some((end, sent)) = self.timed {
            if ack >= end {
                self.timed = None;
                self.rtt_sample(now - sent);
            }
        }
        let acked = ack - self.snd_una;
        self.snd_una = ack;
        self.snd_nxt = self.snd_nxt.max(ack);
        acked
    }

    /// RFC 5681 §3.1 growth outside recovery.
    fn grow(&mut self, acked: u64) {
        let mss = self.config.mss as u64;
        if self.cwnd < self.ssthresh {
            self.cwnd += acked.min(mss);
        } else {
            // The division's remainder is carried to the next ACK: truncating SMSS·SMSS/cwnd
            // would grow the window ever slower than one SMSS per window as cwnd grows
            // (by 40 % at cwnd = 600 SMSS, where the quotient is 1.67).
            let total = mss * mss + self.growth_remainder;
            self.growth_remainder = total % self.cwnd;
            self.cwnd += total / self.cwnd;
        }
    }

    /// An ACK reaches the sender at `now`.
    pub fn on_ack(&mut self, ack: &Ack, now: TimeNs) {
        match self.config.variant {
            TcpVariant::NewReno => self.on_ack_newreno(ack.cumulative, now),
            TcpVariant::Sack => self.on_ack_sack(ack, now),
        }
    }

    fn on_ack_newreno(&mut self, ack: u64, now: TimeNs) {
        let mss = self.config.mss as u64;
        if ack > self.snd_una && ack <= self.snd_max {
            let acked = self.advance(ack, now);
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
                self.grow(acked);
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
                // The fast retransmission restarts the retransmission timer (BSD, Linux, ns-2).
                self.rto_deadline = Some(now + self.rto);
                self.counters.fast_retransmits += 1;
            }
        }
    }

    /// RFC 6675 §5.
    fn on_ack_sack(&mut self, ack: &Ack, now: TimeNs) {
        let mss = self.config.mss as u64;
        let cumulative = ack.cumulative;
        if cumulative > self.snd_max || cumulative < self.snd_una {
            return;
        }
        let advanced = cumulative > self.snd_una;
        if advanced {
            let acked = self.advance(cumulative, now);
            self.scoreboard.remove_below(self.snd_una);
            self.duplicate_acks = 0;
            if self.in_recovery {
                // Step A: a cumulative ACK covering RecoveryPoint ends recovery.
                if Some(cumulative) >= self.recover {
                    self.in_recovery = false;
                    self.cwnd = self.ssthresh;
                }
            } else {
                self.grow(acked);
            }
            self.rto_deadline = (self.snd_una < self.snd_max).then(|| now + self.rto);
        }
        // Update(): SACKed bytes above the cumulative ACK and below HighData.
        let mut new_bytes = 0;
        for &(start, end) in ack.blocks() {
            let (start, end) = (start.max(self.snd_una), end.min(self.snd_max));
            new_bytes += self.scoreboard.insert(start, end);
        }
        // §2: a duplicate ACK SACKs new data without moving the cumulative ACK.
        if advanced || new_bytes == 0 || self.in_recovery || self.snd_una == self.snd_max {
            return;
        }
        self.duplicate_acks += 1;
        let may_recover = self.recover.is_none_or(|recover| self.snd_una >= recover);
        let is_lost = self.loss_limit() > self.snd_una;
        if may_recover && (self.duplicate_acks >= DUP_THRESH as u32 || is_lost) {
            // Step 4.
            let flight = self.snd_max - self.snd_una;
            self.ssthresh = (flight / 2).max(2 * mss);
            self.cwnd = self.ssthresh;
            self.recover = Some(self.snd_max);
            self.in_recovery = true;
            self.high_retransmitted = self.snd_una;
            self.retransmit_at = Some(self.snd_una);
            // The fast retransmission restarts the retransmission timer (BSD, Linux, ns-2).
            self.rto_deadline = Some(now + self.rto);
            self.counters.fast_retransmits += 1;
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
            // RFC 5681 eq. 4 sets ssthresh to no more than FlightSize/2. During a recovery
            // FlightSize counts the segments sent on inflated windows, up to twice the window
            // that overflowed; the recovery's own halving stands instead (as in Linux).
            let half = (self.flight_size() / 2).max(2 * mss);
            self.ssthresh = if self.in_recovery {
                self.ssthresh.min(half)
            } else {
                half
            };
        }
        self.cwnd = mss;
        self.in_recovery = false;
        self.duplicate_acks = 0;
        self.recover = Some(self.snd_max);
        self.retransmit_at = None;
        self.high_retransmitted = self.snd_una;
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
    /// Whether ACKs carry SACK blocks.
    sack: bool,
    /// RCV.NXT.
    rcv_nxt: u64,
    /// Out-of-order bytes received.
    out_of_order: RangeSet,
    /// A byte inside each of the blocks reported last, most recent first (RFC 2018 §4).
    reported: [u64; MAX_SACK_BLOCKS],
    reported_count: usize,
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
            sack: config.variant == TcpVariant::Sack,
            rcv_nxt: 0,
            out_of_order: RangeSet::default(),
            reported: [0; MAX_SACK_BLOCKS],
            reported_count: 0,
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
    pub fn on_segment(&mut self, seq: u64, len: u32, now: TimeNs) -> Option<Ack> {
        let end = seq + len as u64;
        if end <= self.rcv_nxt {
            // A duplicate: acknowledge at once.
            return Some(self.ack_now(None));
        }
        if seq > self.rcv_nxt {
            // Out of order: keep it, send a duplicate ACK at once (RFC 5681 §4.2) whose first
            // SACK block holds this segment (RFC 2018 §4).
            self.out_of_order.insert(seq, end);
            return Some(self.ack_now(Some(seq)));
        }
        self.rcv_nxt = end;
        let filled_hole = !self.out_of_order.is_empty();
        if let Some((start, stop)) = self.out_of_order.first() {
            if start <= self.rcv_nxt {
                self.rcv_nxt = self.rcv_nxt.max(stop);
            }
        }
        self.out_of_order.remove_below(self.rcv_nxt);
        match self.delayed_ack {
            Some(delay) if !filled_hole => {
                if len >= self.mss {
                    self.unacknowledged += 1;
                }
                if self.unacknowledged >= 2 {
                    Some(self.ack_now(None))
                } else {
                    if self.ack_deadline.is_none() {
                        self.ack_deadline = Some(now + delay);
                    }
                    None
                }
            }
            _ => Some(self.ack_now(None)),
        }
    }

    /// The ACK to send now; with SACK its blocks: the one holding `latest` (the segment just
    /// received out of order) first, then the blocks reported last that still lie above
    /// RCV.NXT (RFC 2018 §4).
    fn ack_now(&mut self, latest: Option<u64>) -> Ack {
        self.unacknowledged = 0;
        self.ack_deadline = None;
        let mut ack = Ack::cumulative(self.rcv_nxt);
        if !self.sack {
            return ack;
        }
        let candidates = latest
            .into_iter()
            .chain(self.reported[..self.reported_count].iter().copied());
        let mut reported = [0; MAX_SACK_BLOCKS];
        let mut count = 0;
        for byte in candidates {
            if count == MAX_SACK_BLOCKS {
                break;
            }
            let Some(block) = self.out_of_order.containing(byte) else {
                continue;
            };
            if ack.blocks().contains(&block) {
                continue;
            }
            ack = ack.with_block(block);
            reported[count] = block.0;
            count += 1;
        }
        self.reported = reported;
        self.reported_count = count;
        ack
    }

    /// The delayed-ACK timer at `now`: the ACK to send, if one was due.
    pub fn on_timer(&mut self, now: TimeNs) -> Option<Ack> {
        match self.ack_deadline {
            Some(deadline) if deadline <= now => Some(self.ack_now(None)),
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
    pub fn on_ack(&mut self, ack: &Ack, now: TimeNs) {
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
                sender.on_ack(&Ack::cumulative(sender.snd_una() + 1000), now + k);
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
            sender.on_ack(&Ack::cumulative(k * 1000), 1_000_000 * k);
            drain(&mut sender, 1_000_000 * k);
        }
        // Ten ACKs of one segment each at cwnd ≈ 10 segments: about one segment more.
        assert!((10_900..=11_000).contains(&sender.cwnd()), "{}", sender.cwnd());
    }

    #[test]
    fn congestion_avoidance_keeps_one_segment_per_window_at_large_windows() {
        // cwnd = 600 segments: SMSS·SMSS/cwnd = 1.67 bytes per ACK. A window's worth of ACKs
        // (600) must add one segment, not the 600 bytes that truncating to 1 would give.
        let mut sender = TcpSender::new(TcpConfig {
            initial_window: 600_000,
            ..config()
        });
        sender.ssthresh = 600_000;
        sender.write(u64::MAX, 0);
        drain(&mut sender, 0);
        for k in 1..=600 {
            sender.on_ack(&Ack::cumulative(k * 1000), 1_000_000 * k);
            drain(&mut sender, 1_000_000 * k);
        }
        // Exactly: the sum of 1e6/cwnd over the 600 ACKs, 998 bytes (cwnd grows meanwhile).
        assert!(
            (997..=1000).contains(&(sender.cwnd() - 600_000)),
            "{}",
            sender.cwnd()
        );
    }

    #[test]
    fn fast_retransmit_restarts_the_retransmission_timer() {
        for variant in [TcpVariant::NewReno, TcpVariant::Sack] {
            let mut sender = TcpSender::new(TcpConfig {
                variant,
                initial_window: 8000,
                ..config()
            });
            sender.write(u64::MAX, 0);
            drain(&mut sender, 0);
            assert_eq!(sender.rto_deadline(), Some(1_000_000_000));
            // Segment 0 lost; the duplicate ACKs arrive 900 ms after it was sent.
            for (k, now) in [(1u64, 900_000_000), (2, 900_000_001), (3, 900_000_002)] {
                let ack = Ack::cumulative(0).with_block((1000, 1000 + 1000 * k));
                sender.on_ack(&ack, now);
            }
            assert_eq!(sender.counters.fast_retransmits, 1, "{variant:?}");
            assert!(drain(&mut sender, 900_000_002)[0].retransmission);
            // The timer runs from the fast retransmission, not from segment 0's transmission:
            // it does not expire 100 ms later, before the retransmission could be acknowledged.
            assert_eq!(sender.rto_deadline(), Some(1_900_000_002), "{variant:?}");
            assert!(!sender.on_timer(1_000_000_000));
        }
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
        sender.on_ack(&Ack::cumulative(0), 10);
        assert!(drain(&mut sender, 10).is_empty());
        sender.on_ack(&Ack::cumulative(0), 11);
        sender.on_ack(&Ack::cumulative(0), 12);
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
        sender.on_ack(&Ack::cumulative(3000), 20);
        let segments = drain(&mut sender, 20);
        assert_eq!(segments[0].seq, 3000);
        assert!(segments[0].retransmission);
        // Full ACK: recovery ends with cwnd = min(ssthresh, flight + mss).
        sender.on_ack(&Ack::cumulative(sender.snd_max), 30);
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
        sender.on_ack(&Ack::cumulative(1000), deadline + 2_100_000_000);
        assert_eq!(sender.srtt(), None);
        assert_eq!(sender.counters.timeouts, 2);
    }

    #[test]
    fn a_timeout_during_recovery_keeps_the_recovery_ssthresh() {
        let mut sender = TcpSender::new(TcpConfig {
            initial_window: 8000,
            ..config()
        });
        sender.write(u64::MAX, 0);
        drain(&mut sender, 0);
        for k in 0..3 {
            sender.on_ack(&Ack::cumulative(0), 10 + k);
        }
        drain(&mut sender, 12);
        assert_eq!(sender.ssthresh(), 4000);
        // Eight more duplicate ACKs inflate the window: new data goes out and FlightSize
        // grows to 15 segments (cwnd = 4 + 3 + 8 segments).
        for k in 0..8 {
            sender.on_ack(&Ack::cumulative(0), 20 + k);
            drain(&mut sender, 20 + k);
        }
        assert_eq!(sender.flight_size(), 15_000);
        assert!(sender.on_timer(sender.rto_deadline().unwrap()));
        // FlightSize/2 would be 7500: the recovery's halving (4000) stands.
        assert_eq!(sender.ssthresh(), 4000);
        assert_eq!(sender.cwnd(), 1000);
    }

    #[test]
    fn rto_follows_rfc6298() {
        let mut sender = TcpSender::new(TcpConfig {
            min_rto: 1,
            ..config()
        });
        sender.write(u64::MAX, 0);
        drain(&mut sender, 0);
        sender.on_ack(&Ack::cumulative(1000), 100_000_000);
        // First sample R = 100 ms: SRTT = R, RTTVAR = R/2, RTO = R + 4·R/2 = 300 ms.
        assert_eq!(sender.srtt(), Some(100_000_000));
        assert_eq!(sender.rto(), 300_000_000);
        drain(&mut sender, 100_000_000);
        sender.on_ack(&Ack::cumulative(2000), 100_000_000);
        sender.on_ack(&Ack::cumulative(3000), 100_000_000 + 60_000_000);
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
        assert_eq!(receiver.on_segment(0, 1000, 0).map(|ack| ack.cumulative), None);
        assert_eq!(receiver.ack_deadline(), Some(40_000_000));
        assert_eq!(
            receiver.on_segment(1000, 1000, 1).map(|ack| ack.cumulative),
            Some(2000)
        );
        assert_eq!(
            receiver.on_segment(3000, 1000, 2).map(|ack| ack.cumulative),
            Some(2000)
        );
        // Filling the hole acknowledges at once, up to the end of the stored range.
        assert_eq!(
            receiver.on_segment(2000, 1000, 3).map(|ack| ack.cumulative),
            Some(4000)
        );
        assert_eq!(receiver.on_segment(4000, 1000, 4).map(|ack| ack.cumulative), None);
        assert_eq!(receiver.on_timer(40_000_003).map(|ack| ack.cumulative), None);
        assert_eq!(
            receiver.on_timer(40_000_004).map(|ack| ack.cumulative),
            Some(5000)
        );
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
        connection.on_ack(&Ack::cumulative(1000), 100);
        assert!(connection.completion_times.is_empty());
        connection.on_ack(&Ack::cumulative(2000), 200);
        assert_eq!(connection.completion_times, vec![200, 195]);
    }

    #[test]
    fn range_set_merges_and_measures() {
        let mut set = RangeSet::default();
        assert_eq!(set.insert(10, 20), 10);
        assert_eq!(set.insert(30, 40), 10);
        assert_eq!(set.insert(15, 32), 10); // 20..30 new; merges into 10..40
        assert_eq!(set.first(), Some((10, 40)));
        assert_eq!(set.insert(40, 50), 10); // touching: merged
        assert_eq!(set.last(), Some((10, 50)));
        assert_eq!(set.insert(60, 70), 10);
        assert_eq!(set.covered(0, 100), 50);
        assert_eq!(set.covered(45, 65), 10);
        assert_eq!(set.next_gap(12), (50, 60));
        assert_eq!(set.next_gap(5), (5, 10));
        assert_eq!(set.next_gap(70), (70, u64::MAX));
        set.remove_below(45);
        assert_eq!(set.first(), Some((45, 50)));
        assert_eq!(set.containing(65), Some((60, 70)));
        assert_eq!(set.containing(55), None);
    }

    #[test]
    fn sack_receiver_reports_the_latest_block_first_then_the_last_reported() {
        // RFC 2018 §4: segments 1, 3, 5, 7 of 0..8 arrive (0, 2, 4, 6 lost).
        let mut receiver = TcpReceiver::new(&TcpConfig {
            variant: TcpVariant::Sack,
            ..config()
        });
        let blocks = |ack: Option<Ack>| ack.unwrap().blocks().to_vec();
        assert_eq!(blocks(receiver.on_segment(1000, 1000, 0)), vec![(1000, 2000)]);
        assert_eq!(
            blocks(receiver.on_segment(3000, 1000, 1)),
            vec![(3000, 4000), (1000, 2000)]
        );
        assert_eq!(
            blocks(receiver.on_segment(5000, 1000, 2)),
            vec![(5000, 6000), (3000, 4000), (1000, 2000)]
        );
        // At most three blocks: the oldest drops out.
        assert_eq!(
            blocks(receiver.on_segment(7000, 1000, 3)),
            vec![(7000, 8000), (5000, 6000), (3000, 4000)]
        );
        // Segment 4 joins 3 and 5 into one block, reported first.
        assert_eq!(
            blocks(receiver.on_segment(4000, 1000, 4)),
            vec![(3000, 6000), (7000, 8000)]
        );
        // Segment 0 fills the first hole: the cumulative ACK jumps to 2000 and the blocks
        // reported last follow.
        let ack = receiver.on_segment(0, 1000, 5).unwrap();
        assert_eq!(ack.cumulative, 2000);
        assert_eq!(ack.blocks(), &[(3000, 6000), (7000, 8000)]);
        // NewReno's receiver sends no blocks.
        let mut plain = TcpReceiver::new(&config());
        assert!(plain.on_segment(1000, 1000, 0).unwrap().blocks().is_empty());
    }

    /// What one transfer through [`run_path`] did.
    #[derive(Debug)]
    struct PathRun {
        /// Time of the first retransmission and of the end of that recovery, ns.
        recovery: Option<(TimeNs, TimeNs)>,
        delivered: u64,
        counters: TcpCounters,
    }

    /// A sender and a receiver over a path with one-way delay `ONE_WAY` each way behind a
    /// bottleneck that serialises a segment in `TRANSMISSION`; the `n`-th data transmission
    /// (counting from 0, retransmissions included) is lost when `lose(n, segment)`. Runs
    /// until `bytes` are acknowledged or 3600 s have passed (consecutive timeouts
    /// back off exponentially: eight in a row take over a minute). With SACK, checks on every
    /// retransmission that the sender never resends a byte its scoreboard holds.
    fn run_path(variant: TcpVariant, bytes: u64, mut lose: impl FnMut(u64, &Segment) -> bool) -> PathRun {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        const ONE_WAY: TimeNs = 50_000_000;
        const TRANSMISSION: TimeNs = 1_000_000;
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
        enum Event {
            Data(u64, u32),
            Acknowledgement(u64, [(u64, u64); MAX_SACK_BLOCKS], u8),
        }
        let config = TcpConfig {
            variant,
            initial_window: 40_000,
            ..config()
        };
        let mut sender = TcpSender::new(config);
        let mut receiver = TcpReceiver::new(&config);
        sender.write(bytes, 0);
        let mut events = BinaryHeap::new();
        let (mut order, mut transmissions, mut link_free, mut now) = (0u64, 0u64, 0, 0);
        let mut first_retransmission = None;
        let mut recovery = None;
        loop {
            while let Some(segment) = sender.next_segment(now) {
                if segment.retransmission {
                    first_retransmission.get_or_insert(now);
                    if variant == TcpVariant::Sack {
                        let end = segment.seq + segment.len as u64;
                        assert_eq!(sender.scoreboard.covered(segment.seq, end), 0, "{segment:?}");
                    }
                }
                link_free = link_free.max(now) + TRANSMISSION;
                if !lose(transmissions, &segment) {
                    order += 1;
                    let event = Event::Data(segment.seq, segment.len);
                    events.push(Reverse((link_free + ONE_WAY, order, event)));
                }
                transmissions += 1;
            }
            if sender.snd_una() >= bytes || now > 3_600_000_000_000 {
                break;
            }
            let next = events.peek().map_or(TimeNs::MAX, |Reverse((t, _, _))| *t);
            match sender.rto_deadline() {
                Some(deadline) if deadline < next => {
                    now = deadline;
                    sender.on_timer(now);
                    continue;
                }
                _ => {}
            }
            let Some(Reverse((t, _, event))) = events.pop() else {
                break;
            };
            now = t;
            match event {
                Event::Data(seq, len) => {
                    if let Some(ack) = receiver.on_segment(seq, len, now) {
                        let mut blocks = [(0, 0); MAX_SACK_BLOCKS];
                        blocks[..ack.blocks().len()].copy_from_slice(ack.blocks());
                        order += 1;
                        let event = Event::Acknowledgement(ack.cumulative, blocks, ack.blocks().len() as u8);
                        events.push(Reverse((now + ONE_WAY, order, event)));
                    }
                }
                Event::Acknowledgement(cumulative, blocks, count) => {
                    let ack = blocks[..count as usize]
                        .iter()
                        .fold(Ack::cumulative(cumulative), |ack, &block| ack.with_block(block));
                    let was_recovering = sender.in_recovery;
                    sender.on_ack(&ack, now);
                    if was_recovering && !sender.in_recovery && recovery.is_none() {
                        recovery = first_retransmission.map(|first| (first, now));
                    }
                }
            }
        }
        PathRun {
            recovery,
            delivered: receiver.rcv_nxt(),
            counters: sender.counters,
        }
    }

    #[test]
    fn sack_recovers_three_losses_of_one_window_in_one_round_trip_newreno_in_three() {
        // Segments 1, 3 and 5 of the first window of 40 are lost. RTT = 2·50 ms + 1 ms.
        let round_trip = 101_000_000;
        let lost =
            |_: u64, segment: &Segment| !segment.retransmission && [1000, 3000, 5000].contains(&segment.seq);
        let sack = run_path(TcpVariant::Sack, 100_000, lost);
        let newreno = run_path(TcpVariant::NewReno, 100_000, lost);
        for run in [&sack, &newreno] {
            assert_eq!(run.delivered, 100_000, "{run:?}");
            assert_eq!(run.counters.timeouts, 0, "{run:?}");
            assert_eq!(run.counters.fast_retransmits, 1, "{run:?}");
            assert_eq!(run.counters.retransmissions, 3, "{run:?}");
        }
        let duration = |run: &PathRun| {
            let (start, end) = run.recovery.expect("a recovery");
            end - start
        };
        // SACK learns of all three holes from the first window's duplicate ACKs and resends
        // them as soon as the pipe has drained to the halved window (18 ms after the fast
        // retransmit here): the recovery ends within 1.5 round trips.
        assert!(
            (round_trip..round_trip * 3 / 2).contains(&duration(&sack)),
            "SACK recovery {} ns",
            duration(&sack)
        );
        // NewReno learns of one hole per partial ACK: three round trips.
        assert!(
            (3 * round_trip..3 * round_trip + 5_000_000).contains(&duration(&newreno)),
            "NewReno recovery {} ns",
            duration(&newreno)
        );
    }

    #[test]
    fn sack_rescue_retransmission_recovers_a_lost_tail_without_a_timeout() {
        // Segments 3 and 19 (the last of the transfer) are lost: three duplicate ACKs reveal
        // segment 3, and the rescue retransmission (RFC 6675 NextSeg rule 4) resends the
        // tail, which no SACK block reveals, in the same recovery.
        let lost =
            |_: u64, segment: &Segment| !segment.retransmission && [3000, 19_000].contains(&segment.seq);
        let sack = run_path(TcpVariant::Sack, 20_000, lost);
        assert_eq!(sack.delivered, 20_000);
        assert_eq!(sack.counters.timeouts, 0, "{sack:?}");
        assert_eq!(sack.counters.retransmissions, 2, "{sack:?}");
        let newreno = run_path(TcpVariant::NewReno, 20_000, lost);
        assert_eq!(newreno.delivered, 20_000);
        assert!(newreno.counters.retransmissions >= 2, "{newreno:?}");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Under any loss pattern both variants deliver every byte in order, and a SACK sender
        /// never resends a byte its scoreboard holds (checked inside `run_path`).
        #[test]
        fn every_byte_is_delivered_under_any_loss_pattern(
            losses in proptest::collection::vec(proptest::bool::weighted(0.15), 200),
            sack in proptest::bool::ANY,
        ) {
            let variant = if sack { TcpVariant::Sack } else { TcpVariant::NewReno };
            let run = run_path(variant, 50_000, |n, _| losses.get(n as usize).copied().unwrap_or(false));
            proptest::prop_assert_eq!(run.delivered, 50_000, "{:?}", run);
        }
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
