"""Linux TCP bulk senders and receivers for ``schedlab measure`` (paper 004's figures 7–8 on
real packets).

The TCP here is Linux's, not schedlab's simulated NewReno: the sender is a kernel TCP socket
with congestion control ``reno`` (both simulated variants, ``newreno`` and ``sack``, map to it;
loss recovery is Linux's own, SACK as the namespace's defaults negotiate), ``TCP_MAXSEG`` set
to the source's ``mss`` (Linux takes its options, 12 bytes of timestamps, out of it), bound to
port ``port_base + flow`` so the gateway's rule puts its segments in the source's flow. ACKs
come back through the gateway's egress side, forwarded unscheduled.

``python -m schedlab.tcpbulk send ENDPOINTS`` (sources' namespace) starts each connection at
``origin + start_s``, writes bulk data until ``origin + stop_s``, and samples ``TCP_INFO``
every 10 ms into ``tcp_sent.csv``; ``python -m schedlab.tcpbulk receive ENDPOINTS`` (sink's
namespace) accepts the connections, reads and discards their bytes, and samples each one's
byte count every 10 ms into ``tcp_received.csv``. ENDPOINTS is the JSON list of
``schedlab._core.check_measurable``. Both write ``--ready`` when set up, wait for the origin
file, stop at their end or on SIGINT/SIGTERM (within 10 ms), and write their log through a
temporary file and a rename. Times are ``CLOCK_MONOTONIC`` ns relative to the origin.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import selectors
import signal
import socket
import struct
import sys
import time
from pathlib import Path

SAMPLE_S = 0.01
CONGESTION_CONTROL = {"newreno": b"reno", "sack": b"reno"}
SENT_HEADER = "source,time_ns,segments_sent,retransmissions,cwnd_bytes,ssthresh_bytes,srtt_ns,rto_ns,flight_bytes"
RECEIVED_HEADER = "source,time_ns,delivered_bytes"
# struct tcp_info (linux/tcp.h): byte offsets of the u32 fields read here.
_SND_MSS, _UNACKED, _RTT_US, _RTO_US, _SSTHRESH, _CWND, _TOTAL_RETRANS, _DATA_SEGS_OUT = 16, 24, 68, 8, 76, 80, 100, 156
_INFO_BYTES = 160
_INFINITE_SSTHRESH = 0x7FFFFFFF
_NO_SSTHRESH = 2**64 - 1
_stop = False


def _on_signal(*_) -> None:
    global _stop
    _stop = True


def _wait_origin(path: Path) -> int | None:
    while not path.exists():
        if _stop:
            return None
        time.sleep(0.005)
    return int(path.read_text())


def _write(path: Path, header: str, rows: list[tuple]) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(header + "\n" + "".join(",".join(map(str, row)) + "\n" for row in rows))
    partial.rename(path)


def tcp_info_row(source: int, now: int, sock: socket.socket) -> tuple:
    """One ``tcp_sent.csv`` row from ``TCP_INFO`` of ``sock``."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _INFO_BYTES).ljust(_INFO_BYTES, b"\0")

    def u32(offset: int) -> int:
        return struct.unpack_from("=I", info, offset)[0]

    mss = u32(_SND_MSS)
    ssthresh = u32(_SSTHRESH)
    ssthresh_bytes = _NO_SSTHRESH if ssthresh >= _INFINITE_SSTHRESH else ssthresh * mss
    return (
        source,
        now,
        u32(_DATA_SEGS_OUT),
        u32(_TOTAL_RETRANS),
        u32(_CWND) * mss,
        ssthresh_bytes,
        u32(_RTT_US) * 1000,
        u32(_RTO_US) * 1000,
        u32(_UNACKED) * mss,
    )


def send(endpoints: list[dict], destination: str, port: int, origin_file: Path, log: Path, ready: Path | None) -> None:
    """Runs every endpoint's bulk sender; see the module's doc."""
    if ready:
        ready.write_text("ready\n")
    origin = _wait_origin(origin_file)
    rows: list[tuple] = []
    if origin is not None:
        chunk = b"\0" * 65536
        selector = selectors.DefaultSelector()
        pending = sorted(endpoints, key=lambda e: e["start_s"])
        open_sockets: dict[int, tuple[dict, socket.socket]] = {}
        end = origin + int(max((e["stop_s"] for e in endpoints), default=0) * 1e9)
        next_sample = origin
        while not _stop:
            now = time.monotonic_ns()
            while pending and origin + int(pending[0]["start_s"] * 1e9) <= now:
                endpoint = pending.pop(0)
                sock = socket.socket(socket.AF_INET6 if ":" in destination else socket.AF_INET, socket.SOCK_STREAM)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, CONGESTION_CONTROL[endpoint["variant"]])
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, endpoint["mss"])
                sock.bind(("", endpoint["port"]))
                # Non-blocking from the start: a handshake that takes long (SYNs lost while the
                # testbed is stopped) must not hold the loop past SIGTERM. The socket becomes
                # writable once connected; a failed handshake then fails the first send.
                sock.setblocking(False)
                error = sock.connect_ex((destination, port))
                if error not in (0, errno.EINPROGRESS):
                    raise OSError(error, f"connect to {destination} port {port}: {os.strerror(error)}")
                selector.register(sock, selectors.EVENT_WRITE, endpoint)
                open_sockets[endpoint["source"]] = (endpoint, sock)
            for source, (endpoint, sock) in list(open_sockets.items()):
                if origin + int(endpoint["stop_s"] * 1e9) <= now:
                    rows.append(tcp_info_row(source, now - origin, sock))
                    selector.unregister(sock)
                    sock.close()
                    del open_sockets[source]
            if now >= next_sample:
                rows.extend(tcp_info_row(s, now - origin, sock) for s, (_, sock) in open_sockets.items())
                next_sample += int(SAMPLE_S * 1e9)
            if now >= end and not pending and not open_sockets:
                break
            if not open_sockets:
                time.sleep(0.001)
                continue
            for key, _ in selector.select(timeout=0.001):
                try:
                    key.fileobj.send(chunk)
                except (BlockingIOError, InterruptedError):
                    pass
        for _, sock in open_sockets.values():
            sock.close()
    _write(log, SENT_HEADER, rows)


def receive(endpoints: list[dict], port: int, until_s: float, origin_file: Path, log: Path, ready: Path | None) -> None:
    """Accepts and drains the endpoints' connections; see the module's doc."""
    by_port = {e["port"]: e["source"] for e in endpoints}
    listener = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    listener.bind(("::", port))
    listener.listen(len(endpoints) + 4)
    listener.setblocking(False)
    if ready:
        ready.write_text("ready\n")
    origin = _wait_origin(origin_file)
    rows: list[tuple] = []
    if origin is not None:
        selector = selectors.DefaultSelector()
        selector.register(listener, selectors.EVENT_READ, None)
        delivered = {e["source"]: 0 for e in endpoints}
        buffer = bytearray(1 << 20)
        end = origin + int(until_s * 1e9)
        next_sample = origin
        while not _stop:
            now = time.monotonic_ns()
            if now >= next_sample:
                rows.extend((s, now - origin, count) for s, count in sorted(delivered.items()))
                next_sample += int(SAMPLE_S * 1e9)
            if now >= end:
                break
            for key, _ in selector.select(timeout=0.001):
                if key.data is None:
                    connection, peer = listener.accept()
                    source = by_port.get(peer[1])
                    if source is None:
                        connection.close()  # not one of the scenario's senders
                        continue
                    connection.setblocking(False)
                    selector.register(connection, selectors.EVENT_READ, source)
                    continue
                try:
                    count = key.fileobj.recv_into(buffer)
                except (BlockingIOError, InterruptedError):
                    continue
                except ConnectionError:
                    count = 0
                if count == 0:
                    selector.unregister(key.fileobj)
                    key.fileobj.close()
                else:
                    delivered[key.data] += count
        now = time.monotonic_ns()
        rows.extend((s, now - origin, count) for s, count in sorted(delivered.items()))
    listener.close()
    _write(log, RECEIVED_HEADER, rows)


def main(argv: list[str] | None = None) -> int:
    """``python -m schedlab.tcpbulk {send,receive} ENDPOINTS …``."""
    parser = argparse.ArgumentParser(prog="python -m schedlab.tcpbulk", description=__doc__.split("\n\n")[0])
    parser.add_argument("role", choices=["send", "receive"])
    parser.add_argument("endpoints", help="JSON list of the TCP sources (schedlab._core.check_measurable)")
    parser.add_argument("--destination", default="198.18.0.2")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--until", type=float, default=0.0, help="receive: stop this many s after the origin")
    parser.add_argument("--origin-file", type=Path, required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--ready", type=Path)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    endpoints = json.loads(args.endpoints)
    if args.role == "send":
        send(endpoints, args.destination, args.port, args.origin_file, args.log, args.ready)
    else:
        receive(endpoints, args.port, args.until, args.origin_file, args.log, args.ready)
    return 0


if __name__ == "__main__":
    sys.exit(main())
