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
//! counted in [`PcapTrace`].
//!
//! Choices: only Ethernet captures (link type 1) are read; pcapng timestamps follow each
//! interface's `if_tsresol` (default microseconds), which `pcap-file` 2.0 leaves to the caller;
//! a timestamp earlier than the previous packet's is an error naming the packet.

use std::collections::HashMap;
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
}

/// A pcap file (little-endian, Ethernet, nanosecond timestamps) of the frames the gateway transmits:
/// written to `FILE.partial` while the gateway runs and renamed to `FILE` by [`finish`]
/// (`CaptureWriter::finish`), so that a file named `FILE` is always complete. Buffered; one
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

/// Reads `path` (pcap or pcapng, told apart by the first four bytes) into a trace.
pub fn read_pcap(path: &Path, classifier: &mut Classifier) -> Result<PcapTrace, InputError> {
    let mut file = std::fs::File::open(path).map_err(|e| error(path, e.to_string()))?;
    let mut magic = [0u8; 4];
    file.read_exact(&mut magic)
        .map_err(|_| error(path, "too short for a pcap or pcapng file"))?;
    let file = std::fs::File::open(path).map_err(|e| error(path, e.to_string()))?;
    let reader = std::io::BufReader::new(file);
    let mut frames: Vec<(TimeNs, Vec<u8>)> = Vec::new();
    if magic == [0x0a, 0x0d, 0x0d, 0x0a] {
        let mut reader =
            PcapNgReader::new(reader).map_err(|e| error(path, format!("not a pcapng file: {e}")))?;
        // Per interface: (link type, timestamp units per second).
        let mut interfaces: Vec<(DataLink, u128)> = Vec::new();
        let mut number = 0u64;
        while let Some(block) = reader.next_block() {
            let block = block.map_err(|e| error(path, format!("block after packet {number}: {e}")))?;
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
                    number += 1;
                    let Some(&(link, units)) = interfaces.get(epb.interface_id as usize) else {
                        return Err(error(
                            path,
                            format!("packet {number}: unknown interface {}", epb.interface_id),
                        ));
                    };
                    if link != DataLink::ETHERNET {
                        return Err(error(
                            path,
                            format!("packet {number}: link type {link:?}; only Ethernet captures are read"),
                        ));
                    }
                    let raw = epb.timestamp.as_nanos();
                    let ns = raw * 1_000_000_000 / units;
                    frames.push((ns as TimeNs, epb.data.into_owned()));
                }
                _ => {}
            }
        }
    } else {
        let mut reader =
            PcapReader::new(reader).map_err(|e| error(path, format!("not a pcap or pcapng file: {e}")))?;
        let link = reader.header().datalink;
        if link != DataLink::ETHERNET {
            return Err(error(
                path,
                format!("link type {link:?}; only Ethernet captures are read"),
            ));
        }
        let mut number = 0u64;
        while let Some(packet) = reader.next_packet() {
            number += 1;
            let packet = packet.map_err(|e| error(path, format!("packet {number}: {e}")))?;
            frames.push((packet.timestamp.as_nanos() as TimeNs, packet.data.into_owned()));
        }
    }
    to_trace(path, &frames, classifier)
}

/// `schedlab replay` with a capture: reads the configuration (its `[gateway]` rules classify
/// the capture), the capture, replays, writes the departure CSV.
pub fn replay_pcap_files(
    config_path: &Path,
    trace_path: &Path,
    out_path: &Path,
) -> Result<(schedlab_sim::Replay, PcapTrace), InputError> {
    let text = std::fs::read_to_string(config_path).map_err(|e| error(config_path, e.to_string()))?;
    let config = schedlab_sim::ReplayConfig::parse(&text, &config_path.display().to_string())?;
    let (_, _, mut classifier) = crate::gateway::build(&config)?;
    let read = read_pcap(trace_path, &mut classifier)?;
    let result = schedlab_sim::replay(&config, &read.trace)?;
    schedlab_sim::replay::write_departures(&result.rows, out_path)?;
    Ok((result, read))
}

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

fn to_trace(
    path: &Path,
    frames: &[(TimeNs, Vec<u8>)],
    classifier: &mut Classifier,
) -> Result<PcapTrace, InputError> {
    let mut result = PcapTrace::default();
    let origin = frames.first().map_or(0, |f| f.0);
    let mut previous = origin;
    let mut ids: HashMap<u64, FlowId> = HashMap::new();
    for (index, (time, frame)) in frames.iter().enumerate() {
        if *time < previous {
            return Err(error(
                path,
                format!(
                    "packet {}: its timestamp is earlier than the previous packet's",
                    index + 1
                ),
            ));
        }
        previous = *time;
        let packet = match parse_frame(frame) {
            Frame::Ip(p) => p,
            Frame::NonIp => {
                result.skipped_not_ip += 1;
                continue;
            }
            Frame::Malformed(_) => {
                result.skipped_malformed += 1;
                continue;
            }
        };
        let Ok((flow, class)) = classifier.classify(&packet) else {
            result.skipped_flow_table_full += 1;
            continue;
        };
        let label = flow as u64;
        let trace = &mut result.trace;
        let id = *ids.entry(label).or_insert_with(|| {
            trace.labels.push(label);
            (trace.labels.len() - 1) as FlowId
        });
        let mut descriptor = Packet::new(trace.packets.len() as u64, id, packet.ip_length, time - origin);
        descriptor.class = class;
        trace.packets.push(descriptor);
    }
    result.trace.ids = ids;
    Ok(result)
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
}
