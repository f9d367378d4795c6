//! `schedlab gen` and `schedlab sink` on Linux: UDP endpoints around
//! [`crate::traffic::Schedule`] and [`crate::traffic::Header`].
//!
//! * **gen** sends every packet of the scenario's schedule at `origin + time` (an absolute
//!   `CLOCK_MONOTONIC` instant shared with the sink): `clock_nanosleep` to 50 µs before the
//!   send time, then a busy wait; the packets of a source that are due together (a burst, or a
//!   backlog after a late wake-up) leave with one `sendmmsg` call (up to 64). Each source sends from its own UDP socket bound to port
//!   `port_base + flow`, so the gateway can classify by port. Fragmentation is left to the
//!   kernel (`IP_PMTUDISC_DONT`): a datagram larger than the path MTU leaves as IP fragments,
//!   as the thesis's 15–17 kB MPEG frames did. Sends never block: a packet that the kernel
//!   refuses (socket buffer full, no buffer) is counted as a send error and not logged as sent.
//! * **sink** receives IPv4 and IPv6 on one dual-stack socket (`[::]:port`; IPv4 only where
//!   the host has no IPv6) with `recvmmsg` (64 datagrams per call, 8 MiB socket buffer), stamps
//!   each with `CLOCK_MONOTONIC` relative to the same origin, and logs it with its IP length
//!   (UDP payload + 28 bytes over IPv4, + 48 over IPv6, told apart by the sender's address).
//!
//! Both stop at their end time or on SIGINT/SIGTERM (within 50 ms), and write their log
//! through a temporary file and a rename.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use schedlab_core::TimeNs;
use serde_json::{json, Value};

use crate::linux::{
    load_scenario, message_headers, monotonic_ns, write_atomically, GatewayError, SignalGuard, STOP,
};
use crate::traffic::{
    received_csv, sent_csv, Header, ReceivedPacket, Schedule, SentPacket, HEADER_BYTES, IPV4_UDP_OVERHEAD,
    IPV6_UDP_OVERHEAD, MAX_PAYLOAD,
};

/// What `schedlab gen` sends.
#[derive(Clone, Debug)]
pub struct GenOptions {
    /// The scenario whose sources to run.
    pub scenario: PathBuf,
    /// Replication (selects the random streams, as in `schedlab run`).
    pub replication: u32,
    /// Source indices to run (all when empty).
    pub sources: Vec<usize>,
    /// The sink's address.
    pub destination: IpAddr,
    /// The sink's port.
    pub port: u16,
    /// Source `flow` sends from port `port_base + flow`.
    pub port_base: u16,
    /// When time 0 of the scenario is.
    pub origin: Origin,
    /// Where to write the sent log.
    pub log: Option<PathBuf>,
    /// A file to create once the sockets are bound and the schedule is ready.
    pub ready: Option<PathBuf>,
}

/// Time 0 of a measured run on `CLOCK_MONOTONIC`, shared by gen and sink.
#[derive(Clone, Debug)]
pub enum Origin {
    /// This instant, ns.
    At(TimeNs),
    /// 0.2 s after start-up.
    Soon,
    /// Read from this file (decimal ns) once it appears: a supervisor writes it when every
    /// process is ready, so that slow start-ups cannot make anyone late.
    File(PathBuf),
}

impl Origin {
    /// Waits for the origin (a file origin: up to 60 s); `None` if stopped by a signal.
    fn resolve(&self) -> Result<Option<TimeNs>, GatewayError> {
        match self {
            Origin::At(t) => Ok(Some(*t)),
            Origin::Soon => Ok(Some(monotonic_ns() + 200_000_000)),
            Origin::File(path) => {
                let deadline = monotonic_ns() + 60_000_000_000;
                loop {
                    if STOP.load(Ordering::Relaxed) {
                        return Ok(None);
                    }
                    if let Ok(text) = std::fs::read_to_string(path) {
                        return text.trim().parse().map(Some).map_err(|_| {
                            GatewayError::Io(format!(
                                "{}: must hold the origin in ns, found {text:?}",
                                path.display()
                            ))
                        });
                    }
                    if monotonic_ns() > deadline {
                        return Err(GatewayError::Io(format!(
                            "{}: no origin after 60 s",
                            path.display()
                        )));
                    }
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
            }
        }
    }
}

fn io_error(what: &str, error: std::io::Error) -> GatewayError {
    GatewayError::Io(format!("{what}: {error}"))
}

fn set_int_option(socket: &impl AsRawFd, level: i32, name: i32, value: i32) {
    // SAFETY: an int option on a live socket; failure only leaves the default.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            name,
            &value as *const i32 as *const libc::c_void,
            std::mem::size_of::<i32>() as libc::socklen_t,
        );
    }
}

/// Sleeps until the monotonic clock reads `target` (sleep, then a short busy wait), or until
/// a stop signal; returns false if stopped.
fn wait_until(target: TimeNs) -> bool {
    const SPIN: TimeNs = 50_000;
    loop {
        if STOP.load(Ordering::Relaxed) {
            return false;
        }
        let now = monotonic_ns();
        if now >= target {
            return true;
        }
        if target - now > SPIN {
            // Sleep in slices of at most 50 ms so that a signal is seen quickly.
            let wake = (target - SPIN).min(now + 50_000_000);
            let ts = libc::timespec {
                tv_sec: (wake / 1_000_000_000) as libc::time_t,
                tv_nsec: (wake % 1_000_000_000) as libc::c_long,
            };
            // SAFETY: absolute sleep on the monotonic clock with a valid timespec.
            unsafe {
                libc::clock_nanosleep(
                    libc::CLOCK_MONOTONIC,
                    libc::TIMER_ABSTIME,
                    &ts,
                    std::ptr::null_mut(),
                )
            };
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Sends the datagrams of `iovecs` on the connected `socket` with `sendmmsg` (retried after a
/// partial send or EINTR); returns how many the kernel took before it refused one (a full
/// socket buffer: the rest of the burst is a send error, never a stall).
fn send_burst(socket: &UdpSocket, iovecs: &mut [libc::iovec]) -> usize {
    let mut messages = message_headers(iovecs);
    let mut taken = 0;
    while taken < messages.len() {
        // SAFETY: the messages from `taken` on are valid and point to live buffers.
        let rc = unsafe {
            libc::sendmmsg(
                socket.as_raw_fd(),
                messages[taken..].as_mut_ptr(),
                (messages.len() - taken) as u32,
                0,
            )
        };
        if rc > 0 {
            taken += rc as usize;
        } else if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
    }
    taken
}

/// Runs the generator; returns its report (per source: packets, bytes, requested and achieved
/// rate, send lateness, send errors).
pub fn generate(options: &GenOptions) -> Result<Value, GatewayError> {
    let scenario = load_scenario(&options.scenario)?;
    for &index in &options.sources {
        if index >= scenario.sources.len() {
            return Err(GatewayError::Input(schedlab_sim::InputError::Io {
                path: options.scenario.display().to_string(),
                message: format!(
                    "--source {index}: the scenario has {} sources (0 to {})",
                    scenario.sources.len(),
                    scenario.sources.len().saturating_sub(1)
                ),
            }));
        }
    }
    let overhead = if options.destination.is_ipv4() {
        IPV4_UDP_OVERHEAD
    } else {
        IPV6_UDP_OVERHEAD
    };
    let unspecified: IpAddr = if options.destination.is_ipv4() {
        "0.0.0.0".parse().expect("address")
    } else {
        "::".parse().expect("address")
    };
    let mut sockets = Vec::with_capacity(scenario.sources.len());
    for (index, source) in scenario.sources.iter().enumerate() {
        // A TCP source is sent by Linux's TCP (schedlab measure), not by gen.
        if source.transport.is_some() || (!options.sources.is_empty() && !options.sources.contains(&index)) {
            sockets.push(None);
            continue;
        }
        let port = options.port_base as u32 + source.flow;
        let port = u16::try_from(port).map_err(|_| {
            GatewayError::Io(format!(
                "source[{index}]: port {port} (port base + flow) is above 65535"
            ))
        })?;
        let socket = UdpSocket::bind(SocketAddr::new(unspecified, port))
            .map_err(|e| io_error(&format!("binding UDP port {port} for source[{index}]"), e))?;
        socket
            .connect(SocketAddr::new(options.destination, options.port))
            .map_err(|e| io_error("connect", e))?;
        if options.destination.is_ipv4() {
            set_int_option(
                &socket,
                libc::IPPROTO_IP,
                libc::IP_MTU_DISCOVER,
                libc::IP_PMTUDISC_DONT,
            );
        } else {
            set_int_option(
                &socket,
                libc::IPPROTO_IPV6,
                libc::IPV6_MTU_DISCOVER,
                libc::IP_PMTUDISC_DONT,
            );
        }
        set_int_option(&socket, libc::SOL_SOCKET, libc::SO_SNDBUF, 4 << 20);
        // Never block: a full socket buffer (the path holds the sender's packets, e.g. in a
        // qdisc) is a send error, not a stall of the whole schedule.
        socket
            .set_nonblocking(true)
            .map_err(|e| io_error("O_NONBLOCK", e))?;
        sockets.push(Some(socket));
    }
    let _signals = SignalGuard::install();
    let schedule = Schedule::new(&scenario, options.replication, &options.sources);
    if let Some(path) = &options.ready {
        write_atomically(path, "ready\n").map_err(|e| io_error(&path.display().to_string(), e))?;
    }
    let Some(origin) = options.origin.resolve()? else {
        return Ok(json!({ "stopped": "before the origin" }));
    };
    let n = scenario.sources.len();
    let mut log: Vec<SentPacket> = Vec::new();
    let mut errors = vec![0u64; n];
    // A burst: the packets of one source due at the same instant (or already due when the
    // first of them leaves), sent with one sendmmsg call, at most BURST.
    const BURST: usize = 64;
    let mut payloads = vec![vec![0u8; MAX_PAYLOAD]; BURST];
    let mut burst = Vec::with_capacity(BURST);
    let mut schedule = schedule.peekable();
    while let Some(first) = schedule.next() {
        if !wait_until(origin + first.time) {
            break;
        }
        let sent = monotonic_ns().saturating_sub(origin);
        burst.clear();
        burst.push(first);
        while burst.len() < BURST {
            match schedule.peek() {
                Some(next) if next.source == first.source && next.time <= sent => {
                    burst.push(schedule.next().expect("peeked"));
                }
                _ => break,
            }
        }
        let mut iovecs: [libc::iovec; BURST] = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        }; BURST];
        for ((packet, payload), iovec) in burst.iter().zip(payloads.iter_mut()).zip(iovecs.iter_mut()) {
            let length = (packet.size.saturating_sub(overhead) as usize).clamp(HEADER_BYTES, MAX_PAYLOAD);
            Header {
                source: packet.source,
                sequence: packet.sequence,
                sent,
            }
            .write(&mut payload[..length]);
            *iovec = libc::iovec {
                iov_base: payload.as_mut_ptr() as *mut libc::c_void,
                iov_len: length,
            };
        }
        let socket = sockets[first.source as usize]
            .as_ref()
            .expect("a socket per scheduled source");
        let taken = send_burst(socket, &mut iovecs[..burst.len()]);
        for (index, (packet, iovec)) in burst.iter().zip(&iovecs).enumerate() {
            if index < taken {
                log.push(SentPacket {
                    source: packet.source,
                    sequence: packet.sequence,
                    scheduled: packet.time,
                    sent,
                    size: iovec.iov_len as u32 + overhead,
                });
            } else {
                errors[packet.source as usize] += 1;
            }
        }
    }
    if let Some(path) = &options.log {
        write_atomically(path, &sent_csv(&log)).map_err(|e| io_error(&path.display().to_string(), e))?;
    }
    let mut report = Vec::new();
    for (index, source) in scenario.sources.iter().enumerate() {
        let mine: Vec<&SentPacket> = log.iter().filter(|p| p.source == index as u32).collect();
        let bytes: u64 = mine.iter().map(|p| p.size as u64).sum();
        let span = |f: fn(&SentPacket) -> TimeNs| match (mine.first(), mine.last()) {
            (Some(a), Some(b)) if f(b) > f(a) => Some((f(b) - f(a)) as f64 / 1e9),
            _ => None,
        };
        let last_bytes = mine.last().map_or(0, |p| p.size as u64);
        let rate = |span: Option<f64>| span.map(|s| (bytes - last_bytes) as f64 * 8.0 / s);
        let lateness: Vec<u64> = mine.iter().map(|p| p.sent.saturating_sub(p.scheduled)).collect();
        report.push(json!({
            "source": index,
            "flow": source.flow,
            "name": source.name,
            "packets": mine.len(),
            "bytes": bytes,
            "requested_bps": rate(span(|p| p.scheduled)),
            "achieved_bps": rate(span(|p| p.sent)),
            "lateness_mean_s": (!lateness.is_empty()).then(|| lateness.iter().sum::<u64>() as f64 / lateness.len() as f64 / 1e9),
            "lateness_max_s": lateness.iter().max().map(|&m| m as f64 / 1e9),
            "send_errors": errors[index],
        }));
    }
    Ok(json!({ "origin_ns": origin, "sources": report }))
}

/// What `schedlab sink` receives.
#[derive(Clone, Debug)]
pub struct SinkOptions {
    /// UDP port to listen on (every IPv6 and IPv4 address).
    pub port: u16,
    /// Time 0, as given to gen.
    pub origin: Origin,
    /// Stop at this many ns after the origin (`None`: at SIGINT/SIGTERM).
    pub until: Option<TimeNs>,
    /// Where to write the received log.
    pub log: PathBuf,
    /// A file to create once the socket is bound (a supervisor starts the generator then).
    pub ready: Option<PathBuf>,
}

/// Runs the sink; returns a short report (datagrams received, foreign datagrams ignored).
pub fn sink(options: &SinkOptions) -> Result<Value, GatewayError> {
    // Dual stack (IPv4 arrives as v4-mapped IPv6 addresses); IPv4 alone without IPv6.
    let socket = UdpSocket::bind(SocketAddr::new("::".parse().expect("address"), options.port))
        .or_else(|_| UdpSocket::bind(SocketAddr::new("0.0.0.0".parse().expect("address"), options.port)))
        .map_err(|e| io_error(&format!("binding UDP port {}", options.port), e))?;
    set_int_option(&socket, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, 8 << 20);
    socket
        .set_read_timeout(Some(std::time::Duration::from_millis(50)))
        .map_err(|e| io_error("SO_RCVTIMEO", e))?;
    let _signals = SignalGuard::install();
    if let Some(path) = &options.ready {
        write_atomically(path, "ready\n").map_err(|e| io_error(&path.display().to_string(), e))?;
    }
    let Some(origin) = options.origin.resolve()? else {
        return Ok(json!({ "stopped": "before the origin" }));
    };
    const BATCH: usize = 64;
    let mut buffers = vec![vec![0u8; 65_536]; BATCH];
    let mut log: Vec<ReceivedPacket> = Vec::new();
    let mut foreign = 0u64;
    let mut iovecs: Vec<libc::iovec> = buffers
        .iter_mut()
        .map(|b| libc::iovec {
            iov_base: b.as_mut_ptr() as *mut libc::c_void,
            iov_len: b.len(),
        })
        .collect();
    // SAFETY: an all-zero sockaddr_storage is valid.
    let mut senders: Vec<libc::sockaddr_storage> = vec![unsafe { std::mem::zeroed() }; BATCH];
    let mut messages = message_headers(&mut iovecs);
    for (message, sender) in messages.iter_mut().zip(senders.iter_mut()) {
        message.msg_hdr.msg_name = sender as *mut libc::sockaddr_storage as *mut libc::c_void;
    }
    loop {
        if STOP.load(Ordering::Relaxed) {
            break;
        }
        if options.until.is_some_and(|u| monotonic_ns() >= origin + u) {
            break;
        }
        for message in messages.iter_mut() {
            message.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        }
        // SAFETY: BATCH valid messages whose buffers and address slots live as long as the
        // loop; blocks at most the socket's 50 ms receive timeout.
        let count = unsafe {
            libc::recvmmsg(
                socket.as_raw_fd(),
                messages.as_mut_ptr(),
                BATCH as u32,
                libc::MSG_WAITFORONE,
                std::ptr::null_mut(),
            )
        };
        let now = monotonic_ns().saturating_sub(origin);
        if count <= 0 {
            continue;
        }
        for ((message, buffer), sender) in messages.iter().zip(&buffers).zip(&senders).take(count as usize) {
            let length = message.msg_len as usize;
            let overhead = if over_ipv6(sender) {
                IPV6_UDP_OVERHEAD
            } else {
                IPV4_UDP_OVERHEAD
            };
            match Header::read(&buffer[..length]) {
                Some(header) => log.push(ReceivedPacket {
                    source: header.source,
                    sequence: header.sequence,
                    sent: header.sent,
                    received: now,
                    size: length as u32 + overhead,
                }),
                None => foreign += 1,
            }
        }
    }
    write_atomically(&options.log, &received_csv(&log))
        .map_err(|e| io_error(&options.log.display().to_string(), e))?;
    Ok(json!({ "received": log.len(), "foreign": foreign }))
}

/// Whether a datagram from `sender` came over IPv6: an IPv6 address that is not a v4-mapped
/// one (`::ffff:a.b.c.d`, how a dual-stack socket reports IPv4 senders).
fn over_ipv6(sender: &libc::sockaddr_storage) -> bool {
    if sender.ss_family as i32 != libc::AF_INET6 {
        return false;
    }
    // SAFETY: the family says the storage holds a sockaddr_in6.
    let address = unsafe { &*(sender as *const libc::sockaddr_storage as *const libc::sockaddr_in6) };
    let bytes = address.sin6_addr.s6_addr;
    !(bytes[..10].iter().all(|&b| b == 0) && bytes[10] == 0xff && bytes[11] == 0xff)
}
