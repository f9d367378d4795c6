//! The user-space half of the gateway's forwarding loop, without sockets: the driver that
//! `valgrind --tool=cachegrind` counts instructions and cache misses of (load-independent),
//! to compare disciplines inside the same loop (docs/gateway.md, "Speed").
//!
//! ```sh
//! cargo build --release --example gateway_loop -p schedlab-gateway
//! valgrind --tool=cachegrind --cache-sim=yes target/release/examples/gateway_loop drr 200000
//! ```
//!
//! It does per packet what `linux::run` does between the receive ring and `sendmmsg`: parse
//! and classify the frame (`Gateway::on_ingress`, which copies it into a frame slot and
//! enqueues the descriptor), move packets onto the emulated link (`service`), and hand the due
//! departures over in batches of 64 and account them (`transmit_due`, the same call as the
//! real loop's; here every frame "leaves" without a socket). Traffic: 64-byte
//! IPv4/UDP packets of four flows, round robin, 5 µs apart, in batches of 64 (what the
//! receive ring hands over under load), through an emulated 10 Gbit/s link (as
//! `bench/gateway_vs_kernel.sh` configures it). Prints the packets forwarded and a checksum of
//! the departure order, so that the work cannot be optimised away.

use etherparse::PacketBuilder;
use schedlab_gateway::gateway::{build, Departure, Gateway};
use schedlab_sim::ReplayConfig;

const BATCH: usize = 64;
const FLOWS: u16 = 4;
const GAP_NS: u64 = 5_000;

fn frame(source_port: u16) -> Vec<u8> {
    let mut frame = Vec::new();
    PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4([198, 18, 0, 1], [198, 18, 0, 2], 64)
        .udp(source_port, 9000)
        .write(&mut frame, &[0u8; 36])
        .expect("a valid UDP frame");
    frame
}

fn main() {
    let mut args = std::env::args().skip(1);
    let kind = args.next().unwrap_or_else(|| "drr".into());
    let packets: u64 = match args.next().map(|a| a.parse()) {
        None => 200_000,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("error: PACKETS: {e}");
            std::process::exit(2);
        }
    };
    let text = format!("[link]\nrate = \"10Gbit\"\n[scheduler]\nkind = \"{kind}\"\nbuffer_packets = 1000\n");
    let config = match ReplayConfig::parse(&text, "gateway_loop.toml") {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let (gateway_config, scheduler, classifier) = match build(&config) {
        Ok(parts) => parts,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let mut gateway = Gateway::new(gateway_config, scheduler, classifier);
    let frames: Vec<Vec<u8>> = (0..FLOWS).map(|f| frame(20_000 + f)).collect();
    let mut due: Vec<Departure> = Vec::with_capacity(BATCH);
    let mut sent: Vec<bool> = Vec::with_capacity(BATCH);
    let mut now = 0;
    let mut received = 0u64;
    let mut forwarded = 0u64;
    let mut checksum = 0u64;
    while received < packets || gateway.next_deadline(now).is_some() {
        let batch = (packets - received).min(BATCH as u64);
        for _ in 0..batch {
            let index = (received % FLOWS as u64) as usize;
            gateway.on_ingress(&frames[index], now);
            received += 1;
        }
        now += GAP_NS * batch.max(1);
        gateway.service(now);
        forwarded += gateway.transmit_due(now, BATCH, &mut due, &mut sent, |frames, sent| {
            // Transmission stands in for sendmmsg: every frame leaves; the checksum of the
            // source ports keeps the order observable.
            sent.clear();
            for frame in frames {
                let port = u16::from_be_bytes([frame[34], frame[35]]);
                checksum = checksum.wrapping_mul(31).wrapping_add(port as u64);
                sent.push(true);
            }
            now
        }) as u64;
    }
    if let Err(e) = gateway.check_accounting() {
        eprintln!("error: accounting: {e}");
        std::process::exit(1);
    }
    println!("{kind}: {forwarded} of {received} packets forwarded, order checksum {checksum:x}");
}
