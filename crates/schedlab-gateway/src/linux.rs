//! Linux I/O of `schedlab gateway`: memory-mapped AF_PACKET receive rings, batched transmit
//! with `sendmmsg`, signals, and the forwarding loop around [`crate::Gateway`].
//!
//! ## Why AF_PACKET with a TPACKET_V2 ring
//! * A TPACKET_V2 receive ring hands every frame to user space as soon as the kernel has
//!   copied it (the frame's status word flips to `TP_STATUS_USER`), and the loop drains every
//!   ready frame per wake-up, so receive is batched under load without adding delay at low
//!   load. TPACKET_V3 retires a block only when it is full or when its timer (at least 1 ms)
//!   expires, which adds up to a millisecond per packet at low load, twenty times the
//!   gateway's 50 us latency budget.
//! * AF_XDP needs an XDP program loaded on the interface (eBPF object, libbpf or hand-built
//!   bytecode) and, on veth, runs in generic (copy) mode, so it buys no copy over AF_PACKET
//!   on the testbed this gateway is built for. It was not measured here (see
//!   `docs/gateway.md`).
//! * Transmit: `sendmmsg` on the AF_PACKET socket of the egress interface with
//!   `PACKET_QDISC_BYPASS` (the gateway is the queue; the kernel's qdisc layer would only add
//!   a second one). Each socket sets `PACKET_IGNORE_OUTGOING` so it never receives what the
//!   gateway itself sends.
//!
//! The gateway is a transparent forwarder at layer 2: frames leave unchanged (MAC addresses,
//! TTL), like a dummynet bridge, so hosts on both sides share one IP subnet and resolve each
//! other with ARP / neighbour discovery through the gateway. Ingress → egress is scheduled;
//! everything egress → ingress (replies, ARP) and every non-IP frame passes unscheduled.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use schedlab_core::TimeNs;
use schedlab_sim::{InputError, ReplayConfig};

use crate::gateway::{build, build_from_scenario, Departure, Gateway, Ingress};
use crate::pcap::CaptureWriter;

/// Reads and validates a scenario file (errors name the file and line).
pub fn load_scenario(path: &Path) -> Result<schedlab_sim::Scenario, InputError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| InputError::Io {
        path: file.clone(),
        message: e.to_string(),
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    schedlab_sim::validate_scenario_text(&text, base).map_err(|e| e.into_input_error(&file, &text))
}

/// A configuration error about a scenario file.
pub fn scenario_input_error(path: &Path, error: schedlab_core::ConfigError) -> InputError {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).unwrap_or_default();
    InputError::config(&file, &text, error)
}

/// Size of one receive slot; a frame longer than this minus the slot header is counted as
/// `capture_truncated` and dropped. 2,048 bytes hold a 1,500-byte-MTU Ethernet frame.
pub const FRAME_SLOT: usize = 2048;
/// Receive slots on the ingress interface (16 MiB of ring): 27 ms of 64-byte frames at 300,000
/// frames/s, so that a gateway descheduled for a few time slices on a shared machine does not
/// lose frames in the ring (2,048 slots, 7 ms at that rate, did).
pub const INGRESS_RING_SLOTS: usize = 8192;
/// Receive slots on the egress interface (4 MiB), which carries only the reverse direction
/// (replies, ACKs, ARP).
pub const EGRESS_RING_SLOTS: usize = 2048;
/// Most frames handled per interface and wake-up, and per `sendmmsg`.
pub const BATCH: usize = 64;
/// Below this much time to the next deadline, the loop spins instead of sleeping, ns.
pub const SPIN_NS: u64 = 30_000;
/// Default busy-poll window (`--busy-poll`, `[gateway] busy_poll`), ns: see [`run`].
pub const DEFAULT_BUSY_POLL: TimeNs = 0;

/// A failure of `schedlab gateway`.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// Bad configuration (exit 2).
    #[error(transparent)]
    Input(#[from] InputError),
    /// An interface that cannot be opened (exit 2): missing, or no permission.
    #[error("{interface}: {message}")]
    Interface {
        /// The interface name.
        interface: String,
        /// What went wrong.
        message: String,
    },
    /// An I/O failure while running (exit 1); the stats were still written when possible.
    #[error("{0}")]
    Io(String),
}

/// The monotonic clock, ns.
pub fn monotonic_ns() -> TimeNs {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we pass; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn last_error(what: &str) -> String {
    format!("{what}: {}", io::Error::last_os_error())
}

fn set_option<T>(fd: i32, level: i32, name: i32, value: &T) -> io::Result<()> {
    // SAFETY: `value` points to a live T of the given size for the duration of the call.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            value as *const T as *const libc::c_void,
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// One `mmsghdr` per iovec (for `sendmmsg` / `recvmmsg`); the headers point into `iovecs`,
/// which must outlive them.
pub(crate) fn message_headers(iovecs: &mut [libc::iovec]) -> Vec<libc::mmsghdr> {
    iovecs
        .iter_mut()
        .map(|iov| {
            // SAFETY: an all-zero mmsghdr is valid (no name, no control data).
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_iov = iov as *mut libc::iovec;
            m.msg_hdr.msg_iovlen = 1;
            m
        })
        .collect()
}

/// An AF_PACKET socket bound to one interface, in promiscuous mode, with a TPACKET_V2
/// receive ring.
pub struct PacketSocket {
    fd: OwnedFd,
    ring: *mut u8,
    ring_len: usize,
    slots: usize,
    next: usize,
    interface: String,
}

impl PacketSocket {
    /// Opens `interface` with a receive ring of `slots` frames of [`FRAME_SLOT`] bytes (needs
    /// CAP_NET_RAW; `slots` a multiple of 32, one 64 KiB block).
    pub fn open(interface: &str, slots: usize) -> Result<PacketSocket, GatewayError> {
        let fail = |message: String| GatewayError::Interface {
            interface: interface.to_string(),
            message,
        };
        let name = CString::new(interface).map_err(|_| fail("interface name contains a NUL byte".into()))?;
        // SAFETY: plain libc calls with valid arguments; every result is checked.
        let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if index == 0 {
            return Err(fail("no such interface in this network namespace".into()));
        }
        let protocol = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: see above.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                protocol as i32,
            )
        };
        if raw < 0 {
            let error = io::Error::last_os_error();
            let hint = if error.raw_os_error() == Some(libc::EPERM) {
                " (the gateway needs root or CAP_NET_RAW)"
            } else {
                ""
            };
            return Err(fail(format!("cannot open an AF_PACKET socket: {error}{hint}")));
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let s = fd.as_raw_fd();
        set_option(
            s,
            libc::SOL_PACKET,
            libc::PACKET_VERSION,
            &(libc::tpacket_versions::TPACKET_V2 as i32),
        )
        .map_err(|e| fail(format!("TPACKET_V2: {e}")))?;
        set_option(s, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, &1i32)
            .map_err(|e| fail(format!("PACKET_IGNORE_OUTGOING: {e}")))?;
        set_option(s, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, &1i32)
            .map_err(|e| fail(format!("PACKET_QDISC_BYPASS: {e}")))?;
        let block = 1 << 16;
        let request = libc::tpacket_req {
            tp_block_size: block as u32,
            tp_block_nr: (slots * FRAME_SLOT / block) as u32,
            tp_frame_size: FRAME_SLOT as u32,
            tp_frame_nr: slots as u32,
        };
        set_option(s, libc::SOL_PACKET, libc::PACKET_RX_RING, &request)
            .map_err(|e| fail(format!("PACKET_RX_RING: {e}")))?;
        let ring_len = slots * FRAME_SLOT;
        // SAFETY: maps the ring the kernel just allocated for this socket.
        let ring = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ring_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                s,
                0,
            )
        };
        if ring == libc::MAP_FAILED {
            return Err(fail(last_error("mmap of the receive ring")));
        }
        let socket = PacketSocket {
            fd,
            ring: ring as *mut u8,
            ring_len,
            slots,
            next: 0,
            interface: interface.to_string(),
        };
        // SAFETY: zeroed sockaddr_ll / packet_mreq are valid; the fields we need are set.
        let mut address: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        address.sll_family = libc::AF_PACKET as u16;
        address.sll_protocol = protocol;
        address.sll_ifindex = index as i32;
        // SAFETY: `address` is a valid sockaddr_ll of the size given.
        let rc = unsafe {
            libc::bind(
                s,
                &address as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(fail(last_error("bind")));
        }
        let mut membership: libc::packet_mreq = unsafe { std::mem::zeroed() };
        membership.mr_ifindex = index as i32;
        membership.mr_type = libc::PACKET_MR_PROMISC as u16;
        set_option(s, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &membership)
            .map_err(|e| fail(format!("promiscuous mode: {e}")))?;
        Ok(socket)
    }

    fn slot(&self, index: usize) -> *mut libc::tpacket2_hdr {
        // SAFETY: index < self.slots, so the slot lies inside the mapping.
        unsafe { self.ring.add(index * FRAME_SLOT) as *mut libc::tpacket2_hdr }
    }

    /// Whether a received frame is waiting.
    pub fn ready(&self) -> bool {
        let header = self.slot(self.next);
        // SAFETY: the status word is shared with the kernel; read it volatile.
        let status = unsafe { std::ptr::read_volatile(&(*header).tp_status) };
        status & libc::TP_STATUS_USER != 0
    }

    /// Hands up to `max` received frames to `each(frame, cut_short)`; returns how many.
    pub fn receive(&mut self, max: usize, mut each: impl FnMut(&[u8], bool)) -> usize {
        let mut count = 0;
        while count < max && self.ready() {
            let header = self.slot(self.next);
            std::sync::atomic::fence(Ordering::Acquire);
            // SAFETY: the kernel filled this slot (status USER) and will not touch it until
            // we give it back below; tp_mac + tp_snaplen lie within the slot.
            unsafe {
                let h = &*header;
                let data = std::slice::from_raw_parts(
                    (header as *const u8).add(h.tp_mac as usize),
                    h.tp_snaplen as usize,
                );
                each(data, h.tp_snaplen < h.tp_len);
            }
            std::sync::atomic::fence(Ordering::Release);
            // SAFETY: returning the slot to the kernel.
            unsafe { std::ptr::write_volatile(&mut (*header).tp_status, libc::TP_STATUS_KERNEL) };
            self.next = (self.next + 1) % self.slots;
            count += 1;
        }
        count
    }

    /// Sends `frames` with one `sendmmsg` call (repeated after a partial send); returns for
    /// each frame whether the kernel took it.
    pub fn send(&self, frames: &[&[u8]], sent: &mut Vec<bool>) {
        sent.clear();
        let mut iovecs: Vec<libc::iovec> = frames
            .iter()
            .map(|f| libc::iovec {
                iov_base: f.as_ptr() as *mut libc::c_void,
                iov_len: f.len(),
            })
            .collect();
        let mut messages = message_headers(&mut iovecs);
        let mut start = 0;
        while start < messages.len() {
            // SAFETY: the messages from `start` on are valid and point to live buffers.
            let rc = unsafe {
                libc::sendmmsg(
                    self.fd.as_raw_fd(),
                    messages[start..].as_mut_ptr(),
                    (messages.len() - start) as u32,
                    0,
                )
            };
            if rc <= 0 {
                if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                // The frame at `start` was refused (too long, no buffer): count it, go on.
                sent.push(false);
                start += 1;
            } else {
                sent.extend(std::iter::repeat_n(true, rc as usize));
                start += rc as usize;
            }
        }
    }

    /// Frames the kernel dropped since the last call because the receive ring was full (the
    /// gateway never saw them; `PACKET_STATISTICS`, which resets on reading).
    pub fn take_ring_drops(&self) -> u64 {
        let mut stats = libc::tpacket_stats {
            tp_packets: 0,
            tp_drops: 0,
        };
        let mut length = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: `stats` is a tpacket_stats of the length given, live for the call.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                &mut stats as *mut libc::tpacket_stats as *mut libc::c_void,
                &mut length,
            )
        };
        if rc == 0 {
            stats.tp_drops as u64
        } else {
            0
        }
    }

    /// The interface name.
    pub fn interface(&self) -> &str {
        &self.interface
    }
}

impl Drop for PacketSocket {
    fn drop(&mut self) {
        // SAFETY: unmapping the ring mapped in `open`.
        unsafe { libc::munmap(self.ring as *mut libc::c_void, self.ring_len) };
    }
}

pub(crate) static STOP: AtomicBool = AtomicBool::new(false);
static DUMP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

extern "C" fn on_dump(_: libc::c_int) {
    DUMP.store(true, Ordering::SeqCst);
}

/// SIGINT/SIGTERM set the stop flag, SIGUSR1 the dump flag, until dropped (the previous
/// handlers come back, so an embedding Python process keeps its own).
pub(crate) struct SignalGuard {
    previous: Vec<(libc::c_int, libc::sigaction)>,
}

impl SignalGuard {
    pub(crate) fn install() -> SignalGuard {
        STOP.store(false, Ordering::SeqCst);
        DUMP.store(false, Ordering::SeqCst);
        let mut previous = Vec::new();
        for (signal, handler) in [
            (libc::SIGINT, on_stop as extern "C" fn(libc::c_int)),
            (libc::SIGTERM, on_stop),
            (libc::SIGUSR1, on_dump),
        ] {
            // SAFETY: installing an async-signal-safe handler (one atomic store).
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = handler as usize;
                libc::sigemptyset(&mut action.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, &action, &mut old) == 0 {
                    previous.push((signal, old));
                }
            }
        }
        SignalGuard { previous }
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        for (signal, old) in &self.previous {
            // SAFETY: restoring the handler saved in `install`.
            unsafe { libc::sigaction(*signal, old, std::ptr::null_mut()) };
        }
    }
}

/// Where the gateway's scheduler and link come from.
#[derive(Clone, Debug)]
pub enum GatewaySetup {
    /// A configuration file (`[link]`, `[scheduler]`, `[[flow]]`, `[gateway]`).
    Config(PathBuf),
    /// The bottleneck link of a scenario (see [`crate::gateway::build_from_scenario`]).
    Scenario {
        /// The scenario file.
        path: PathBuf,
        /// `schedlab gen`'s first source port (source `flow` sends from `port_base + flow`).
        port_base: u16,
    },
}

/// What `schedlab gateway` runs.
#[derive(Clone, Debug)]
pub struct GatewayOptions {
    /// The scheduler, link and classification.
    pub setup: GatewaySetup,
    /// The interface whose traffic is scheduled.
    pub ingress: String,
    /// The interface the bottleneck transmits on.
    pub egress: String,
    /// Where to write the stats JSON (on exit and on SIGUSR1).
    pub stats: Option<PathBuf>,
    /// Stop after this long, ns (none: until SIGINT/SIGTERM).
    pub duration: Option<TimeNs>,
    /// Capture every frame transmitted on the egress interface (scheduled and passed through)
    /// into this pcap file, timestamped at transmission ([`crate::pcap::CaptureWriter`]).
    pub pcap_out: Option<PathBuf>,
    /// `--busy-poll`: the busy-poll window, ns, overriding `[gateway] busy_poll` (see [`run`]).
    pub busy_poll: Option<TimeNs>,
}

/// What the I/O loop did, for the stats file's `io` object.
#[derive(Clone, Copy, Debug, Default)]
struct LoopCounters {
    /// The busy-poll window in force, ns.
    busy_poll: TimeNs,
    /// Times the loop slept in `ppoll`.
    sleeps: u64,
    /// Time spent spinning with nothing to do (busy-poll and the pacing spin), ns.
    spin_ns: u64,
}

impl LoopCounters {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "busy_poll_s": self.busy_poll as f64 / 1e9,
            "sleeps": self.sleeps,
            "idle_spin_s": self.spin_ns as f64 / 1e9,
        })
    }
}

/// The wall-clock time (ns since the Unix epoch) minus the monotonic clock: added to a
/// monotonic time it gives the wall-clock time of a capture record.
fn wall_clock_offset() -> u128 {
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    wall.saturating_sub(monotonic_ns() as u128)
}

/// Writes `text` to `path` through a temporary file and a rename, so that a reader never
/// sees a half-written file.
pub fn write_atomically(path: &Path, text: &str) -> io::Result<()> {
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    std::fs::write(&partial, text)?;
    std::fs::rename(&partial, path)
}

/// The stats document: the engine's ([`Gateway::stats_json`]) plus the loop's `io` object.
fn stats_json(gateway: &Gateway, counters: &LoopCounters, uptime: TimeNs) -> serde_json::Value {
    let mut stats = gateway.stats_json(uptime);
    if let Some(map) = stats.as_object_mut() {
        map.insert("io".into(), counters.json());
    }
    stats
}

fn write_stats(
    gateway: &Gateway,
    counters: &LoopCounters,
    path: Option<&Path>,
    uptime: TimeNs,
) -> Result<(), GatewayError> {
    let Some(path) = path else { return Ok(()) };
    let text = serde_json::to_string_pretty(&stats_json(gateway, counters, uptime))
        .map_err(|e| GatewayError::Io(e.to_string()))?;
    write_atomically(path, &(text + "\n")).map_err(|e| GatewayError::Io(format!("{}: {e}", path.display())))
}

/// Runs the gateway until SIGINT/SIGTERM (or `duration`), then writes the stats and returns
/// the final stats document.
///
/// ## The loop
/// Each turn drains up to [`BATCH`] frames from each receive ring, moves what the emulated
/// link may take from the scheduler onto it, and transmits every due departure (one
/// `sendmmsg` per batch). When a turn found nothing to do, the loop waits for the next frame
/// or deadline in one of three ways:
/// * **busy-poll**: within the busy-poll window after the last turn that did work
///   (`--busy-poll` / `[gateway] busy_poll`, default [`DEFAULT_BUSY_POLL`]), it spins on the
///   status words of both rings (`std::hint::spin_loop`), as Linux's `SO_BUSY_POLL` and
///   DPDK's poll-mode drivers do: a frame is seen within a fraction of a microsecond instead of
///   after a wake-up from `ppoll` (tens of microseconds, more on a loaded machine). The cost is
///   CPU: while packets arrive less than the window apart the process never sleeps (one core
///   at 100 %); at a packet every `T > window` it spins `window / T` of the time;
/// * **pacing spin**: less than [`SPIN_NS`] before the next deadline it spins, so departures
///   leave on time;
/// * otherwise it sleeps in `ppoll` on both sockets until [`SPIN_NS`] before the deadline
///   (at most 50 ms; signals interrupt it).
pub fn run(options: &GatewayOptions) -> Result<serde_json::Value, GatewayError> {
    let (gateway_config, scheduler, classifier) = match &options.setup {
        GatewaySetup::Config(path) => {
            let file = path.display().to_string();
            let text = std::fs::read_to_string(path).map_err(|e| InputError::Io {
                path: file.clone(),
                message: e.to_string(),
            })?;
            build(&ReplayConfig::parse(&text, &file)?)?
        }
        GatewaySetup::Scenario { path, port_base } => {
            let scenario = load_scenario(path)?;
            build_from_scenario(&scenario, *port_base).map_err(|e| scenario_input_error(path, e))?
        }
    };
    let busy_poll = options
        .busy_poll
        .or(gateway_config.busy_poll)
        .unwrap_or(DEFAULT_BUSY_POLL);
    let mut counters = LoopCounters {
        busy_poll,
        ..LoopCounters::default()
    };
    let mut gateway = Gateway::new(gateway_config, scheduler, classifier);
    if options.ingress == options.egress {
        return Err(GatewayError::Interface {
            interface: options.ingress.clone(),
            message: "ingress and egress must be different interfaces".into(),
        });
    }
    let mut inside = PacketSocket::open(&options.ingress, INGRESS_RING_SLOTS)?;
    let mut outside = PacketSocket::open(&options.egress, EGRESS_RING_SLOTS)?;
    // Frames dropped before the loop runs are not the gateway's.
    inside.take_ring_drops();
    let mut capture = match &options.pcap_out {
        Some(path) => Some(CaptureWriter::create(path, wall_clock_offset())?),
        None => None,
    };
    let _signals = SignalGuard::install();
    // Let timed sleeps end on time instead of up to 50 us late.
    // SAFETY: prctl with an integer argument.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let origin = monotonic_ns();
    let clock = || monotonic_ns() - origin;
    let stop_at = options.duration;
    // A stats file as soon as the sockets are open tells a supervisor that the gateway runs.
    write_stats(&gateway, &counters, options.stats.as_deref(), 0)?;
    let mut due: Vec<Departure> = Vec::with_capacity(BATCH);
    let mut sent = Vec::with_capacity(BATCH);
    let mut reverse_sent = Vec::with_capacity(1);
    // When a turn last did work: the busy-poll window runs from here.
    let mut last_work = 0;
    loop {
        if STOP.load(Ordering::SeqCst) {
            break;
        }
        if DUMP.swap(false, Ordering::SeqCst) {
            gateway.on_ring_drops(inside.take_ring_drops());
            write_stats(&gateway, &counters, options.stats.as_deref(), clock())?;
        }
        let now = clock();
        if stop_at.is_some_and(|d| now >= d) {
            break;
        }
        let mut work = inside.receive(BATCH, |frame, cut_short| {
            if cut_short {
                gateway.on_capture_truncated();
            } else if gateway.on_ingress(frame, now) == Ingress::PassThrough {
                outside.send(&[frame], &mut reverse_sent);
                if let Some(capture) = capture.as_mut() {
                    if reverse_sent.first() == Some(&true) {
                        capture.record(frame, origin + now);
                    }
                }
            }
        });
        work += outside.receive(BATCH, |frame, _| {
            gateway.on_reverse();
            inside.send(&[frame], &mut reverse_sent);
        });
        let now = clock();
        gateway.service(now);
        work += gateway.transmit_due(now, BATCH, &mut due, &mut sent, |frames, sent| {
            outside.send(frames, sent);
            let now = clock();
            if let Some(capture) = capture.as_mut() {
                for (frame, ok) in frames.iter().zip(sent.iter()) {
                    if *ok {
                        capture.record(frame, origin + now);
                    }
                }
            }
            now
        });
        if work > 0 {
            last_work = now;
            continue;
        }
        let now = clock();
        let mut deadline = gateway.next_deadline(now).unwrap_or(now + 50_000_000);
        // Wake at least every 50 ms (signals also interrupt the sleep) and at the end.
        deadline = deadline.min(now + 50_000_000);
        if let Some(d) = stop_at {
            deadline = deadline.min(d);
        }
        let busy_until = last_work.saturating_add(busy_poll);
        let spin_until = if now < busy_until {
            Some(deadline.min(busy_until))
        } else if deadline <= now + SPIN_NS {
            Some(deadline)
        } else {
            None
        };
        match spin_until {
            Some(until) => {
                let mut spun = now;
                while spun < until && !inside.ready() && !outside.ready() && !STOP.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                    spun = clock();
                }
                counters.spin_ns += spun.saturating_sub(now);
            }
            None => {
                let wait = deadline - now - SPIN_NS;
                let timeout = libc::timespec {
                    tv_sec: (wait / 1_000_000_000) as libc::time_t,
                    tv_nsec: (wait % 1_000_000_000) as libc::c_long,
                };
                let mut fds = [
                    libc::pollfd {
                        fd: inside.fd.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    },
                    libc::pollfd {
                        fd: outside.fd.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    },
                ];
                counters.sleeps += 1;
                // SAFETY: two valid pollfds; the timeout outlives the call.
                unsafe { libc::ppoll(fds.as_mut_ptr(), 2, &timeout, std::ptr::null()) };
            }
        }
    }
    let uptime = clock();
    gateway.on_ring_drops(inside.take_ring_drops());
    write_stats(&gateway, &counters, options.stats.as_deref(), uptime)?;
    if let Some(capture) = capture {
        capture.finish()?;
    }
    Ok(stats_json(&gateway, &counters, uptime))
}
