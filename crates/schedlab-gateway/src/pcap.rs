//! Packet captures as replay traces: `schedlab replay --trace X.pcap` (pcap or pcapng, read
//! with the `pcap-file` crate), and the capture `schedlab gateway --pcap-out FILE` writes
//! ([`CaptureWriter`]).
//!
//! Every Ethernet frame of the capture goes through the gateway's parser and classifier
//! ([`crate::classify`]): the flow label is the flow id the gateway would give it (the
//! configuration's `[[gateway.rule]]`s, else one flow per 5-tuple, numbered in order of first
//! appearance), the class is the rule's class or the DSCP, the size is the IP length, and the
//! arrival time is the capture timestamp relative to the first packet. Frames the gateway
//! would not schedule (not IP, malformed, a new 5-tuple beyond `max_flows`) are skipped and
//! counted in [`PcapTrace`]. The replay streams ([`replay_pcap_files_watched`]): frames are
//! read one at a time ([`CaptureFrames`]), twice, and memory does not depend on the capture's
//! length.
//!
//! Choices: only Ethernet captures (link type 1) are read; pcapng timestamps follow each
//! interface's `if_tsresol` (default microseconds), which `pcap-file` 2.0 leaves to the caller;
//! a timestamp earlier than the previous packet's is an error naming the packet.

use std::io::{BufWriter, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};
use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption;
use pcap_file::pcapng::{Block, PcapNgReader};
use pcap_file::DataLink;
use schedlab_core::{FlowId, Packet, TimeNs};
use schedlab_sim::{InputError, Trace};

use crate::classify::{parse_frame, Classifier, Frame};

/// A capture turned into a trace, with what was skipped.
#[derive(Clone, Debug, Default)]
pub struct PcapTrace {
    /// The trace (labels = gateway flow ids).
    pub trace: Trace,
    /// Frames that are not IP.
    pub skipped_not_ip: u64,
    /// Malformed IP frames.
    pub skipped_malformed: u64,
    /// New 5-tuples beyond `max_flows`.
    pub skipped_flow_table_full: u64,
    /// Frames that became packets of the trace.
    pub packets: u64,
}

/// A pcap file (little-endian, Ethernet, nanosecond timestamps) of the frames the gateway transmits:
/// written to `FILE.partial` while the gateway runs and renamed to `FILE` by [`CaptureWriter::finish`]
/// so that a file named `FILE` is always complete. Buffered; one
/// record per frame, whole frames (snap length 65,535).
pub struct CaptureWriter {
    writer: Option<PcapWriter<BufWriter<std::fs::File>>>,
    path: PathBuf,
    partial: PathBuf,
    /// The wall-clock time (ns since the Unix epoch) of monotonic time 0 of the caller.
    epoch_offset: u128,
    /// The first write error (reported by `finish`; later frames are not written).
    failure: Option<String>,
    /// Frames written.
    pub frames: u64,
}

impl CaptureWriter {
    /// Creates `path.partial`. Timestamps are `epoch_offset_ns` + the time passed to
    /// [`record`](Self::record) (the caller's monotonic clock), i.e. wall-clock times.
    pub fn create(path: &Path, epoch_offset_ns: u128) -> Result<CaptureWriter, InputError> {
        let mut partial = path.as_os_str().to_owned();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        let file = std::fs::File::create(&partial).map_err(|e| error(path, format!("--pcap-out: {e}")))?;
        let header = PcapHeader {
            datalink: DataLink::ETHERNET,
            ts_resolution: pcap_file::TsResolution::NanoSecond,
            snaplen: 65_535,
            endianness: pcap_file::Endianness::Little,
            ..PcapHeader::default()
        };
        let writer = PcapWriter::with_header(BufWriter::new(file), header)
            .map_err(|e| error(path, format!("--pcap-out: {e}")))?;
        Ok(CaptureWriter {
            writer: Some(writer),
            path: path.to_path_buf(),
            partial,
            epoch_offset: epoch_offset_ns,
            failure: None,
            frames: 0,
        })
    }

    /// Records `frame`, transmitted at `time` ns of the caller's clock.
    pub fn record(&mut self, frame: &[u8], time: TimeNs) {
        if self.failure.is_some() {
            return;
        }
        let Some(writer) = self.writer.as_mut() else {
            return;
        };
        let at = self.epoch_offset + time as u128;
        let timestamp = Duration::new((at / 1_000_000_000) as u64, (at % 1_000_000_000) as u32);
        match writer.write_packet(&PcapPacket::new(timestamp, frame.len() as u32, frame)) {
            Ok(_) => self.frames += 1,
            Err(e) => self.failure = Some(e.to_string()),
        }
    }

    /// Flushes the file and renames it to its final name; an earlier write error is returned
    /// here (the partial file is then left under its `.partial` name).
    pub fn finish(mut self) -> Result<u64, InputError> {
        let writer = self.writer.take().expect("finish is called once");
        if let Some(failure) = self.failure.take() {
            return Err(error(&self.partial, format!("--pcap-out: {failure}")));
        }
        let file = writer.into_writer();
        file.into_inner()
            .map_err(|e| error(&self.partial, format!("--pcap-out: {}", e.error())))?
            .sync_all()
            .map_err(|e| error(&self.partial, format!("--pcap-out: {e}")))?;
        std::fs::rename(&self.partial, &self.path)
            .map_err(|e| error(&self.path, format!("--pcap-out: {e}")))?;
        Ok(self.frames)
    }
}

fn error(path: &Path, message: impl Into<String>) -> InputError {
    InputError::Io {
        path: path.display().to_string(),
        message: message.into(),
    }
}

/// The frames of a capture in file order, read one at a time: `(timestamp ns, frame bytes)`.
/// pcap and pcapng are told apart by the first four bytes.
pub struct CaptureFrames {
    path: PathBuf,
    format: CaptureFormat,
    /// Frames read so far (for error messages: "packet N").
    number: u64,
    /// Bytes of the file read so far, counted from the records (for progress).
    pub bytes_read: u64,
}

enum CaptureFormat {
    Pcap(PcapReader<std::io::BufReader<std::fs::File>>),
    /// The reader and, per interface of the current section, (link type, timestamp units
    /// per second).
    PcapNg(
        Box<PcapNgReader<std::io::BufReader<std::fs::File>>>,
        Vec<(DataLink, u128)>,
    ),
}

impl CaptureFrames {
    /// Opens `path`, reading its header.
    pub fn open(path: &Path) -> Result<CaptureFrames, InputError> {
        let mut file = std::fs::File::open(path).map_err(|e| error(path, e.to_string()))?;
        let mut magic = [0u8; 4];
        file.read_exact(&mut magic)
            .map_err(|_| error(path, "too short for a pcap or pcapng file"))?;
        let file = std::fs::File::open(path).map_err(|e| error(path, e.to_string()))?;
        let reader = std::io::BufReader::with_capacity(1 << 16, file);
        let format = if magic == [0x0a, 0x0d, 0x0d, 0x0a] {
            let reader =
                PcapNgReader::new(reader).map_err(|e| error(path, format!("not a pcapng file: {e}")))?;
            CaptureFormat::PcapNg(Box::new(reader), Vec::new())
        } else {
            let reader = PcapReader::new(reader)
                .map_err(|e| error(path, format!("not a pcap or pcapng file: {e}")))?;
            let link = reader.header().datalink;
            if link != DataLink::ETHERNET {
                return Err(error(
                    path,
                    format!("link type {link:?}; only Ethernet captures are read"),
                ));
            }
            CaptureFormat::Pcap(reader)
        };
        Ok(CaptureFrames {
            path: path.to_path_buf(),
            format,
            number: 0,
            bytes_read: 0,
        })
    }
}

impl Iterator for CaptureFrames {
    type Item = Result<(TimeNs, Vec<u8>), InputError>;

    fn next(&mut self) -> Option<Self::Item> {
        let path = &self.path;
        match &mut self.format {
            CaptureFormat::Pcap(reader) => {
                let packet = reader.next_packet()?;
                self.number += 1;
                let number = self.number;
                Some(
                    packet
                        .map(|packet| {
                            // The record header is 16 bytes.
                            self.bytes_read += 16 + packet.data.len() as u64;
                            (packet.timestamp.as_nanos() as TimeNs, packet.data.into_owned())
                        })
                        .map_err(|e| error(path, format!("packet {number}: {e}"))),
                )
            }
            CaptureFormat::PcapNg(reader, interfaces) => {
                loop {
                    let block = match reader.next_block()? {
                        Ok(block) => block,
                        Err(e) => {
                            return Some(Err(error(
                                path,
                                format!("block after packet {}: {e}", self.number),
                            )))
                        }
                    };
                    match block {
                        Block::SectionHeader(_) => interfaces.clear(),
                        Block::InterfaceDescription(idb) => {
                            let mut units = 1_000_000u128;
                            for option in &idb.options {
                                if let InterfaceDescriptionOption::IfTsResol(r) = option {
                                    units = if r & 0x80 == 0 {
                                        10u128.pow((*r as u32).min(30))
                                    } else {
                                        1u128 << (r & 0x7f).min(100)
                                    };
                                }
                            }
                            interfaces.push((idb.linktype, units));
                        }
                        Block::EnhancedPacket(epb) => {
                            self.number += 1;
                            let number = self.number;
                            let Some(&(link, units)) = interfaces.get(epb.interface_id as usize) else {
                                return Some(Err(error(
                                    path,
                                    format!("packet {number}: unknown interface {}", epb.interface_id),
                                )));
                            };
                            if link != DataLink::ETHERNET {
                                return Some(Err(error(
                                path,
                                format!("packet {number}: link type {link:?}; only Ethernet captures are read"),
                            )));
                            }
                            // An enhanced packet block is 32 bytes and its padded data.
                            self.bytes_read += 32 + epb.data.len().next_multiple_of(4) as u64;
                            let ns = epb.timestamp.as_nanos() * 1_000_000_000 / units;
                            return Some(Ok((ns as TimeNs, epb.data.into_owned())));
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}

/// Turns frames into trace packets one at a time: checks their timestamps, classifies them
/// (as the gateway would) and numbers their flows in order of first appearance.
struct FrameLabeler<'c> {
    classifier: &'c mut Classifier,
    read: PcapTrace,
    origin: Option<TimeNs>,
    previous: TimeNs,
    frames: u64,
}

impl<'c> FrameLabeler<'c> {
    fn new(classifier: &'c mut Classifier) -> FrameLabeler<'c> {
        FrameLabeler {
            classifier,
            read: PcapTrace::default(),
            origin: None,
            previous: 0,
            frames: 0,
        }
    }

    /// The packet descriptor of a frame (id = packets accepted before it), or `None` for a
    /// frame the gateway would skip.
    fn packet(&mut self, path: &Path, time: TimeNs, frame: &[u8]) -> Result<Option<Packet>, InputError> {
        self.frames += 1;
        let origin = *self.origin.get_or_insert(time);
        if time < self.previous {
            return Err(error(
                path,
                format!(
                    "packet {}: its timestamp is earlier than the previous packet's",
                    self.frames
                ),
            ));
        }
        self.previous = time;
        let packet = match parse_frame(frame) {
            Frame::Ip(p) => p,
            Frame::NonIp => {
                self.read.skipped_not_ip += 1;
                return Ok(None);
            }
            Frame::Malformed(_) => {
                self.read.skipped_malformed += 1;
                return Ok(None);
            }
        };
        let Ok((flow, class)) = self.classifier.classify(&packet) else {
            self.read.skipped_flow_table_full += 1;
            return Ok(None);
        };
        let trace = &mut self.read.trace;
        let id = trace.id_of(flow as u64).unwrap_or_else(|| {
            trace.labels.push(flow as u64);
            let id = (trace.labels.len() - 1) as FlowId;
            trace.ids.insert(flow as u64, id);
            id
        });
        let mut descriptor = Packet::new(self.read.packets, id, packet.ip_length, time - origin);
        descriptor.class = class;
        self.read.packets += 1;
        Ok(Some(descriptor))
    }
}

/// Reads `path` (pcap or pcapng, told apart by the first four bytes) into a trace held in
/// memory (the replay itself streams: [`replay_pcap_files_watched`]).
pub fn read_pcap(path: &Path, classifier: &mut Classifier) -> Result<PcapTrace, InputError> {
    let mut labeler = FrameLabeler::new(classifier);
    let mut packets = Vec::new();
    for frame in CaptureFrames::open(path)? {
        let (time, frame) = frame?;
        packets.extend(labeler.packet(path, time, &frame)?);
    }
    let mut read = labeler.read;
    read.trace.packets = packets;
    Ok(read)
}

/// `schedlab replay` with a capture: reads the configuration (its `[gateway]` rules classify
/// the capture) and the capture, replays, writes the departure CSV; streamed as the CSV replay
/// is ([`schedlab_sim::replay_files_watched`]):
/// the capture is read twice, once for its flows (which the scheduler's flow table needs before
/// the first packet), once to replay it, a frame at a time, writing each departure row once it
/// and every earlier packet are resolved; memory does not depend on the capture's length. The
/// returned trace holds the flow labels only. `watch` gets the percentage done (by bytes of
/// capture read: the first reading is the first 30 %) every [`WATCH_FRAMES`] frames; when it
/// returns false the replay stops with [`InputError::Interrupted`] and leaves no departure file.
pub fn replay_pcap_files_watched(
    config_path: &Path,
    trace_path: &Path,
    out_path: &Path,
    watch: &mut dyn FnMut(schedlab_sim::Progress) -> bool,
) -> Result<(schedlab_sim::Replay, PcapTrace), InputError> {
    const LABELS_SHARE: f64 = 0.3;
    let text = std::fs::read_to_string(config_path).map_err(|e| error(config_path, e.to_string()))?;
    let config = schedlab_sim::ReplayConfig::parse(&text, &config_path.display().to_string())?;
    let size = std::fs::metadata(trace_path).map(|m| m.len()).unwrap_or(0).max(1) as f64;
    let watch = std::cell::RefCell::new(watch);
    let progress = |share: (f64, f64), read: u64| {
        let done = 100.0 * (share.0 + share.1 * (read as f64 / size).clamp(0.0, 0.999));
        (watch.borrow_mut())(schedlab_sim::Progress {
            done: done.min(99.9),
            total: 100.0,
        })
    };
    // First reading: every frame checked and classified; the flows in order of first appearance.
    let (_, _, mut classifier) = crate::gateway::build(&config)?;
    let mut labeler = FrameLabeler::new(&mut classifier);
    let mut frames = CaptureFrames::open(trace_path)?;
    while let Some(frame) = frames.next() {
        let (time, frame) = frame?;
        labeler.packet(trace_path, time, &frame)?;
        if labeler.frames.is_multiple_of(WATCH_FRAMES) && !progress((0.0, LABELS_SHARE), frames.bytes_read) {
            return Err(InputError::Interrupted);
        }
    }
    let read = labeler.read;
    // Second reading: the same frames through a new classifier give the same flows in the same
    // order; the replay writes each row as it is resolved.
    let (_, _, mut classifier) = crate::gateway::build(&config)?;
    let mut labeler = FrameLabeler::new(&mut classifier);
    let mut frames = CaptureFrames::open(trace_path)?;
    let packets = std::iter::from_fn(|| loop {
        let (time, frame) = match frames.next()? {
            Ok(frame) => frame,
            Err(e) => return Some(Err(e)),
        };
        let packet = labeler.packet(trace_path, time, &frame);
        if labeler.frames.is_multiple_of(WATCH_FRAMES)
            && !progress((LABELS_SHARE, 1.0 - LABELS_SHARE), frames.bytes_read)
        {
            return Some(Err(InputError::Interrupted));
        }
        match packet {
            Ok(Some(packet)) => return Some(Ok(packet)),
            Ok(None) => continue,
            Err(e) => return Some(Err(e)),
        }
    });
    let replay =
        schedlab_sim::replay::replay_to_file(&config, &read.trace, packets, out_path, &mut |_| true)?;
    (watch.borrow_mut())(schedlab_sim::Progress {
        done: 100.0,
        total: 100.0,
    });
    Ok((replay, read))
}

/// Frames read between two calls of the watcher of [`replay_pcap_files_watched`].
pub const WATCH_FRAMES: u64 = 1 << 14;

/// Whether `path` names a capture (`.pcap`, `.pcapng`, `.cap`) rather than a trace CSV.
pub fn is_capture(path: &Path) -> bool {
    matches!(
        path.extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref(),
        Some("pcap" | "pcapng" | "cap")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::PacketBuilder;

    fn udp(port: u16, payload: usize) -> Vec<u8> {
        let mut frame = Vec::new();
        PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4([198, 18, 0, 1], [198, 18, 0, 2], 64)
            .udp(port, 9000)
            .write(&mut frame, &vec![0u8; payload])
            .unwrap();
        frame
    }

    #[test]
    fn pcap_packets_become_a_trace_by_five_tuple() {
        let dir = std::env::temp_dir().join(format!("schedlab-pcap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.pcap");
        {
            let file = std::fs::File::create(&path).unwrap();
            let mut writer = PcapWriter::with_header(file, PcapHeader::default()).unwrap();
            let frames = [
                (5, udp(5001, 472)),
                (5_000_005, udp(5002, 972)),
                (9_000_005, vec![0u8; 20]),
                (12_000_005, udp(5001, 72)),
            ];
            for (micros, frame) in &frames {
                writer
                    .write_packet(&PcapPacket::new(
                        Duration::from_micros(*micros),
                        frame.len() as u32,
                        frame,
                    ))
                    .unwrap();
            }
        }
        let mut classifier = Classifier::new(Vec::new(), 0, 10);
        let read = read_pcap(&path, &mut classifier).unwrap();
        let t = &read.trace;
        assert_eq!(t.labels, vec![0, 1]);
        let summary: Vec<(FlowId, u32, TimeNs)> =
            t.packets.iter().map(|p| (p.flow, p.size, p.arrival)).collect();
        assert_eq!(
            summary,
            vec![(0, 500, 0), (1, 1000, 5_000_000_000), (0, 100, 12_000_000_000)]
        );
        assert_eq!(read.skipped_malformed + read.skipped_not_ip, 1);
        // The same frames as pcapng with nanosecond timestamps (if_tsresol = 9).
        let path = dir.join("t.pcapng");
        {
            use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
            use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionBlock;
            use pcap_file::pcapng::PcapNgWriter;
            let file = std::fs::File::create(&path).unwrap();
            let mut writer = PcapNgWriter::new(file).unwrap();
            writer
                .write_block(&Block::InterfaceDescription(InterfaceDescriptionBlock {
                    linktype: DataLink::ETHERNET,
                    snaplen: 0,
                    options: vec![InterfaceDescriptionOption::IfTsResol(9)],
                }))
                .unwrap();
            for (nanos, frame) in [(1_000u64, udp(7, 100)), (2_500, udp(7, 100))] {
                writer
                    .write_block(&Block::EnhancedPacket(EnhancedPacketBlock {
                        interface_id: 0,
                        timestamp: Duration::from_nanos(nanos),
                        original_len: frame.len() as u32,
                        data: std::borrow::Cow::Owned(frame),
                        options: vec![],
                    }))
                    .unwrap();
            }
        }
        let read = read_pcap(&path, &mut Classifier::new(Vec::new(), 0, 10)).unwrap();
        let arrivals: Vec<TimeNs> = read.trace.packets.iter().map(|p| p.arrival).collect();
        assert_eq!(arrivals, vec![0, 1_500]);
        std::fs::write(dir.join("bad.pcap"), b"nonsense here").unwrap();
        let e = read_pcap(&dir.join("bad.pcap"), &mut classifier)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad.pcap: not a pcap or pcapng file"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_gateway_capture_is_complete_only_once_finished_and_reads_back_to_the_nanosecond() {
        let dir = std::env::temp_dir().join(format!("schedlab-capture-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.pcap");
        let mut capture = CaptureWriter::create(&path, 1_700_000_000_123_456_789).unwrap();
        capture.record(&udp(5001, 472), 7);
        capture.record(&udp(5002, 972), 1_000_000_011);
        capture.record(&udp(5001, 72), 1_000_000_012);
        assert!(
            !path.exists(),
            "the final name appears only when the capture is complete"
        );
        assert_eq!(capture.finish().unwrap(), 3);
        assert!(path.exists() && !dir.join("out.pcap.partial").exists());
        let read = read_pcap(&path, &mut Classifier::new(Vec::new(), 0, 10)).unwrap();
        let summary: Vec<(FlowId, u32, TimeNs)> = read
            .trace
            .packets
            .iter()
            .map(|p| (p.flow, p.size, p.arrival))
            .collect();
        assert_eq!(
            summary,
            vec![(0, 500, 0), (1, 1000, 1_000_000_004), (0, 100, 1_000_000_005)]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A capture of 40,000 frames from 30 5-tuples (and non-IP frames between them) through
    /// a small DRR buffer: the streamed replay writes the same departure file, byte for byte,
    /// as the replay of the capture read whole, drops and reordering included; a watcher that
    /// says stop leaves no file.
    #[test]
    fn the_streamed_capture_replay_equals_the_in_memory_one() {
        let dir = std::env::temp_dir().join(format!("schedlab-pcap-stream-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("c.toml");
        std::fs::write(
            &config,
            "[link]\nrate = \"10Mbit\"\n[scheduler]\nkind = \"drr\"\nquantum = 600\nbuffer = \"20KB\"\n\
             [gateway]\n[[gateway.rule]]\nflow = 7\nsource_port = 5001\n",
        )
        .unwrap();
        let path = dir.join("t.pcap");
        {
            let file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
            let mut writer = PcapWriter::with_header(file, PcapHeader::default()).unwrap();
            let mut state = 12345u64;
            let mut micros = 0u64;
            for i in 0..40_000u64 {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                micros += (state >> 60) * 30;
                let frame = if i % 997 == 0 {
                    vec![0u8; 20]
                } else {
                    udp(
                        5000 + ((state >> 33) % 30) as u16,
                        100 + ((state >> 40) % 1300) as usize,
                    )
                };
                let packet = PcapPacket::new(Duration::from_micros(micros), frame.len() as u32, &frame);
                writer.write_packet(&packet).unwrap();
            }
        }
        let text = std::fs::read_to_string(&config).unwrap();
        let parsed = schedlab_sim::ReplayConfig::parse(&text, "c.toml").unwrap();
        let (_, _, mut classifier) = crate::gateway::build(&parsed).unwrap();
        let whole = read_pcap(&path, &mut classifier).unwrap();
        let in_memory = schedlab_sim::replay(&parsed, &whole.trace).unwrap();
        let memory_file = dir.join("memory.csv");
        schedlab_sim::replay::write_departures(&in_memory.rows, &memory_file).unwrap();
        let streamed_file = dir.join("streamed.csv");
        let mut calls = 0;
        let (streamed, read) = replay_pcap_files_watched(&config, &path, &streamed_file, &mut |_| {
            calls += 1;
            true
        })
        .unwrap();
        assert!(calls >= 3, "the watcher is called while reading: {calls}");
        let dropped: u64 = in_memory.flows.iter().map(|f| f.dropped).sum();
        assert!(
            dropped > 0 && in_memory.flows.len() == 30,
            "drops and 30 flows: {dropped}"
        );
        assert_eq!(
            std::fs::read(&streamed_file).unwrap(),
            std::fs::read(&memory_file).unwrap()
        );
        assert_eq!(streamed.flows, in_memory.flows);
        assert_eq!(streamed.discipline_counters, in_memory.discipline_counters);
        assert!(streamed.rows.is_empty() && read.trace.packets.is_empty());
        assert_eq!(read.trace.labels, whole.trace.labels);
        assert_eq!(
            (read.skipped_not_ip + read.skipped_malformed, read.packets),
            (41, 39_959)
        );
        // Stopped in the second reading: no departure file, not even a partial one.
        let stopped_file = dir.join("stopped.csv");
        let mut polls = 0;
        let e = replay_pcap_files_watched(&config, &path, &stopped_file, &mut |p| {
            polls += 1;
            p.done < 50.0
        })
        .unwrap_err();
        assert_eq!(e, InputError::Interrupted);
        assert!(polls > 1);
        assert!(!stopped_file.exists() && !dir.join("stopped.csv.partial").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
