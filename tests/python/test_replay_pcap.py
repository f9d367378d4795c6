"""`schedlab replay --trace X.pcap`: a capture is classified as the gateway would and replayed."""

from __future__ import annotations

import csv
import struct


def _udp_frame(source_port: int, payload: int) -> bytes:
    ip_length = 20 + 8 + payload
    ip = struct.pack(
        "!BBHHHBBH4s4s", 0x45, 0, ip_length, 0, 0, 64, 17, 0, bytes([198, 18, 0, 1]), bytes([198, 18, 0, 2])
    )
    udp = struct.pack("!HHHH", source_port, 9000, 8 + payload, 0)
    return bytes(6 * [2]) + bytes(6 * [4]) + b"\x08\x00" + ip + udp + bytes(payload)


def _pcap(path, packets) -> None:
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for micros, frame in packets:
            f.write(struct.pack("<IIII", micros // 1_000_000, micros % 1_000_000, len(frame), len(frame)))
            f.write(frame)


def test_replay_of_a_pcap_uses_gateway_rules_and_ip_lengths(tmp_path, cli):
    config = tmp_path / "c.toml"
    config.write_text(
        '[link]\nrate = "8Mbit"\n[scheduler]\nkind = "drr"\nquantum = 500\n'
        "[[flow]]\nid = 7\nquantum = 1000\n"
        "[gateway]\n[[gateway.rule]]\nflow = 7\nsource_port = 5001\n"
    )
    capture = tmp_path / "t.pcap"
    # Flow 7 (port 5001, quantum 1000) and a 5-tuple flow (port 5002, quantum 500): 500-byte IP
    # packets at time 0, so DRR sends two of flow 7's per one of the other's.
    _pcap(capture, [(0, _udp_frame(5001, 472))] * 4 + [(0, _udp_frame(5002, 472))] * 2 + [(0, b"\x00" * 20)])
    out = tmp_path / "d.csv"
    result = cli("replay", "--config", str(config), "--trace", str(capture), "--out", str(out), "--json")
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(out.open()))
    assert [r["flow"] for r in sorted(rows, key=lambda r: float(r["start_s"]))] == ["7", "7", "8", "7", "7", "8"]
    assert {r["size_bytes"] for r in rows} == {"500"}
    assert '"not_ip": 1' in result.stdout or '"malformed": 1' in result.stdout
