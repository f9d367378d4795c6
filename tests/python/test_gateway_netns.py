"""`schedlab gateway` on real packets, in network namespaces that each test creates and removes.

They need root (CI runs as root); without it they skip and say why. Traffic goes only to
addresses inside the test's own namespaces; every run is bounded in time and count.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from schedlab import testbed

pytestmark = pytest.mark.skipif(
    not testbed.can_admin_network(), reason="needs root or CAP_NET_ADMIN to create network namespaces"
)

# Sends `count` UDP datagrams of `payload` bytes from each source port, round robin, as fast
# as `interval` seconds between rounds allows; optionally raw malformed frames in between.
SENDER = textwrap.dedent(
    """
    import socket, sys, time
    ports, payload, count, interval, bad_every = eval(sys.argv[1])
    sockets = []
    for port in ports:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("198.18.0.1", port))
        sockets.append(s)
    raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    raw.bind(("src0", 0))
    mac = raw.getsockname()[4]
    # IPv4 with header length 2 words (invalid) and a truncated one.
    bad = [bytes(6 * [0xff]) + mac + bytes([8, 0, 0x42]) + bytes(40),
           bytes(6 * [0xff]) + mac + bytes([8, 0, 0x45, 0, 0x05, 0xdc]) + bytes(30)]
    data = bytes(payload)
    start = time.monotonic()
    for i in range(count):
        for s in sockets:
            s.sendto(data, ("198.18.0.2", 9000))
        if bad_every and i % bad_every == 0:
            raw.send(bad[(i // bad_every) % 2])
        delay = start + (i + 1) * interval - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    """
)


# Receive slots of the gateway's ingress ring (schedlab_gateway::linux::INGRESS_RING_SLOTS).
RING = 8192


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def _start_gateway(bed: testbed.Testbed, config: Path, stats: Path, *extra: str) -> subprocess.Popen:
    process = bed.spawn(
        bed.gateway,
        [
            sys.executable,
            "-m",
            "schedlab",
            "gateway",
            "-c",
            str(config),
            "-i",
            "gwin",
            "-e",
            "gwout",
            "--stats",
            str(stats),
            *extra,
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 10
    while not stats.exists():
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline, "the gateway did not start"
        time.sleep(0.05)
    return process


def _sender(bed: testbed.Testbed, ports, payload, count, interval, bad_every=0) -> subprocess.Popen:
    arguments = repr((ports, payload, count, interval, bad_every))
    return bed.spawn(bed.source, [sys.executable, "-c", SENDER, arguments])


def _stop(process: subprocess.Popen, stats: Path) -> dict:
    started = time.monotonic()
    process.send_signal(signal.SIGINT)
    process.wait(timeout=5)
    assert time.monotonic() - started < 1.0, "SIGINT must stop the gateway within one second"
    assert process.returncode == 0, process.stderr.read()
    return json.loads(stats.read_text())


def _check_exactly_once(stats: dict) -> None:
    total = stats["total"]
    assert stats["accounting_ok"] is True
    assert total["received_frames"] == total["in_packets"] + total["malformed_packets"] + total["passed_unscheduled"]
    assert total["in_packets"] == total["sent_packets"] + total["dropped_packets"] + total["queued_packets"]
    assert total["dropped_packets"] == sum(total["dropped"].values())
    for flow in stats["flows"]:
        assert flow["in_packets"] == flow["sent_packets"] + flow["dropped_packets"] + flow["queued_packets"], flow
    assert sum(f["in_packets"] for f in stats["flows"]) + total["dropped"]["flow_table_full"] == total["in_packets"]


def _pcap_records(path: Path) -> list[tuple[int, bytes]]:
    """(timestamp ns, frame) of every record of a little-endian nanosecond pcap file."""
    data = path.read_bytes()
    assert data[:4] == bytes.fromhex("4d3cb2a1"), "a nanosecond-resolution pcap"
    assert int.from_bytes(data[20:24], "little") == 1, "Ethernet link type"
    records, at = [], 24
    while at < len(data):
        seconds, fraction, captured, _ = (int.from_bytes(data[at + 4 * i : at + 4 * i + 4], "little") for i in range(4))
        records.append((seconds * 1_000_000_000 + fraction, data[at + 16 : at + 16 + captured]))
        at += 16 + captured
    return records


def test_exactly_once_under_overload_and_malformed_frames_counted(tmp_path):
    config = _write(
        tmp_path / "fifo.toml",
        """
        [link]
        rate = "2Mbit"
        [scheduler]
        kind = "fifo"
        buffer_packets = 20
        """,
    )
    stats = tmp_path / "stats.json"
    with testbed.Testbed() as bed:
        sink = bed.spawn(
            bed.sink,
            [
                sys.executable,
                "-c",
                "import socket,time;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);"
                "s.bind(('198.18.0.2',9000));time.sleep(30)",
            ],
        )
        capture = tmp_path / "sent.pcap"
        gateway = _start_gateway(bed, config, stats, "--pcap-out", str(capture))
        # 2 flows x 1,000 datagrams of 1,000 B payload in 0.5 s: 32 Mbit/s into 2 Mbit/s.
        assert _sender(bed, [5001, 5002], 972, 1000, 0.0005, bad_every=50).wait(timeout=30) == 0
        result = _stop(gateway, stats)
        sink.kill()
    total = result["total"]
    _check_exactly_once(result)
    assert total["in_packets"] >= 1990  # a few may be lost before the gateway (veth backlog)
    assert total["dropped"]["buffer_full"] > 1000
    assert total["malformed"]["bad_ip_header"] + total["malformed"]["truncated"] == 20
    assert total["malformed"]["bad_ip_header"] == 10
    # Forwarding continued around the malformed frames: about 0.5 s + drain at 2 Mbit/s.
    assert total["sent_packets"] >= 100
    # (IPv6 packets of the namespaces' own, e.g. MLD reports, may add flows of their own.)
    assert {f["key"] for f in result["flows"] if f["key"].startswith("udp")} == {
        "udp 198.18.0.1:5001 > 198.18.0.2:9000",
        "udp 198.18.0.1:5002 > 198.18.0.2:9000",
    }
    assert not testbed.namespaces(bed.prefix)
    # --pcap-out: every frame the gateway transmitted on gwout, scheduled or passed through,
    # stamped at transmission; the 1,000-byte IP packets leave 4 ms apart at 2 Mbit/s.
    records = _pcap_records(capture)
    assert len(records) == total["sent_packets"] + total["passed_unscheduled"]
    times = [t for t, _ in records]
    assert times == sorted(times)
    udp = [t for t, frame in records if len(frame) == 1014 and frame[23] == 17]
    assert len(udp) >= 100
    gaps = sorted(b - a for a, b in zip(udp, udp[1:], strict=False))
    assert 3_800_000 <= gaps[len(gaps) // 2] <= 4_200_000, gaps[len(gaps) // 2]
    assert not (tmp_path / "sent.pcap.partial").exists()


def test_drr_byte_shares_on_real_packets_follow_the_quanta(tmp_path):
    config = _write(
        tmp_path / "drr.toml",
        """
        [link]
        rate = "4Mbit"
        [scheduler]
        kind = "drr"
        quantum = 1500
        buffer_packets = 90
        drop_policy = "longest_queue_drop"
        [[flow]]
        id = 1
        quantum = 1500
        [[flow]]
        id = 2
        quantum = 3000
        [[flow]]
        id = 3
        quantum = 4500
        [gateway]
        [[gateway.rule]]
        flow = 1
        source_port = 5001
        [[gateway.rule]]
        flow = 2
        source_port = 5002
        [[gateway.rule]]
        flow = 3
        source_port = "5003-5003"
        protocol = "udp"
        """,
    )
    stats = tmp_path / "stats.json"
    with testbed.Testbed() as bed:
        gateway = _start_gateway(bed, config, stats)
        # Each flow offers 1,000-byte IP packets at 8 Mbit/s for 2.5 s (6 times the link in all).
        sender = _sender(bed, [5001, 5002, 5003], 972, 2500, 0.001)
        # Two snapshots while all three flows are backlogged.
        time.sleep(0.7)
        gateway.send_signal(signal.SIGUSR1)
        time.sleep(0.2)
        first = json.loads(stats.read_text())
        time.sleep(1.3)
        gateway.send_signal(signal.SIGUSR1)
        time.sleep(0.2)
        second = json.loads(stats.read_text())
        sender.wait(timeout=30)
        final = _stop(gateway, stats)
    _check_exactly_once(final)
    sent = {f["flow"]: f["sent_bytes"] for f in second["flows"]}
    before = {f["flow"]: f["sent_bytes"] for f in first["flows"]}
    shares = {flow: sent[flow] - before[flow] for flow in (1, 2, 3)}
    total = sum(shares.values())
    assert total > 4e6 / 8 * 1.0  # at least a second of full link in the window
    for flow, quantum in ((1, 1500), (2, 3000), (3, 4500)):
        assert shares[flow] / total == pytest.approx(quantum / 9000, abs=0.02), shares


def test_bad_configuration_and_missing_interface_exit_2(tmp_path, cli):
    bad = _write(
        tmp_path / "bad.toml", '[link]\nrate = "2Mbit"\n[scheduler]\nkind = "fifo"\n[gateway]\nmax_flows = 0\n'
    )
    result = cli("gateway", "-c", str(bad), "-i", "lo", "-e", "lo")
    assert result.returncode == 2
    assert "bad.toml:6: gateway.max_flows = 0" in result.stderr
    good = _write(tmp_path / "good.toml", '[link]\nrate = "2Mbit"\n[scheduler]\nkind = "fifo"\n')
    result = cli("gateway", "-c", str(good), "-i", "gwin", "-e", "gwout", "--busy-poll", "soon")
    assert result.returncode == 2
    assert "--busy-poll = soon" in result.stderr
    result = cli("gateway", "-c", str(good), "-i", "gwin", "-e", "gwout", "--busy-poll", "2s")
    assert result.returncode == 2
    assert "--busy-poll = 2s: must be at most 1s" in result.stderr
    result = cli("gateway", "-c", str(good), "-i", "schedlab-none0", "-e", "lo")
    assert result.returncode == 2
    assert "schedlab-none0: no such interface" in result.stderr


def test_frames_the_full_ring_dropped_are_reported(tmp_path):
    """While the gateway is stopped (SIGSTOP) its 8,192-slot receive ring fills; the kernel
    drops the rest, and the gateway reports them as ring_drops once it runs again."""
    config = _write(tmp_path / "fifo.toml", '[link]\nrate = "100Mbit"\n[scheduler]\nkind = "fifo"\n')
    stats = tmp_path / "stats.json"
    with testbed.Testbed() as bed:
        gateway = _start_gateway(bed, config, stats)
        # Resolve the sink's address first (ARP passes through the gateway), so that the
        # sender does not wait on an unresolved neighbour while the gateway is stopped.
        assert _sender(bed, [5001], 22, 5, 0.01).wait(timeout=30) == 0
        time.sleep(0.3)
        gateway.send_signal(signal.SIGSTOP)
        try:
            assert _sender(bed, [5001], 22, RING + 4000, 0).wait(timeout=60) == 0
        finally:
            gateway.send_signal(signal.SIGCONT)
        time.sleep(0.5)
        result = _stop(gateway, stats)
    total = result["total"]
    _check_exactly_once(result)
    udp = sum(f["in_packets"] for f in result["flows"] if f["key"].startswith("udp"))
    assert udp <= RING + 5
    assert total["ring_drops"] >= 4000
    assert udp + total["ring_drops"] >= RING + 4005


def test_busy_poll_keeps_the_loop_awake_between_frames(tmp_path):
    """With --busy-poll 20ms and a frame every millisecond the loop spins between frames
    instead of sleeping in ppoll once per frame; it still forwards every frame exactly once
    and stops within a second of SIGINT."""
    config = _write(tmp_path / "fifo.toml", '[link]\nrate = "100Mbit"\n[scheduler]\nkind = "fifo"\n')
    stats = tmp_path / "stats.json"

    def snapshot(gateway: subprocess.Popen) -> dict:
        before = stats.stat().st_mtime_ns
        gateway.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 5
        while stats.stat().st_mtime_ns == before and time.monotonic() < deadline:
            time.sleep(0.01)
        return json.loads(stats.read_text())

    with testbed.Testbed() as bed:
        gateway = _start_gateway(bed, config, stats, "--busy-poll", "20ms")
        assert _sender(bed, [5001], 22, 5, 0.01).wait(timeout=30) == 0
        time.sleep(0.2)
        first = snapshot(gateway)
        assert _sender(bed, [5001], 22, 300, 0.001).wait(timeout=30) == 0
        second = snapshot(gateway)
        result = _stop(gateway, stats)
    _check_exactly_once(result)
    assert result["io"]["busy_poll_s"] == pytest.approx(0.02)
    assert result["total"]["sent_packets"] >= 305
    # Without busy-poll the loop sleeps about once per frame (300 times).
    assert second["io"]["sleeps"] - first["io"]["sleeps"] < 100, (first["io"], second["io"])
    assert second["io"]["idle_spin_s"] > first["io"]["idle_spin_s"]
