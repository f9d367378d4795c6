"""`schedlab.testbed`: what `Testbed.create` builds, in both modes, and what a failing `ip`
step reports. The namespace test is root only (CI runs as root) and scopes its namespaces
with its own SCHEDLAB_NETNS_PREFIX."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from schedlab import testbed

needs_root = pytest.mark.skipif(
    not testbed.can_admin_network(), reason="needs root or CAP_NET_ADMIN to create network namespaces"
)


def _links(ns: str) -> dict[str, dict]:
    shown = subprocess.run(["ip", "-n", ns, "-json", "addr", "show"], capture_output=True, text=True, check=True)
    return {link["ifname"]: link for link in json.loads(shown.stdout)}


def _addresses(link: dict) -> set[str]:
    return {f"{a['local']}/{a['prefixlen']}" for a in link.get("addr_info", []) if a.get("scope") == "global"}


@needs_root
@pytest.mark.parametrize("mode", ["gateway", "bridge"])
def test_create_builds_the_three_namespaces_and_destroy_removes_them(monkeypatch, mode):
    prefix = f"schedlab-tb{os.getpid()}-"
    monkeypatch.setenv("SCHEDLAB_NETNS_PREFIX", prefix)
    bed = testbed.Testbed(mode=mode)
    try:
        bed.create()
        assert testbed.namespaces(prefix) == sorted([bed.source, bed.gateway, bed.sink])
        source, gateway, sink = _links(bed.source), _links(bed.gateway), _links(bed.sink)
        assert _addresses(source["src0"]) == {f"{testbed.SOURCE_ADDRESS}/24", f"{testbed.SOURCE_ADDRESS6}/64"}
        assert _addresses(sink["dst0"]) == {f"{testbed.SINK_ADDRESS}/24", f"{testbed.SINK_ADDRESS6}/64"}
        for links, names in ((source, ("lo", "src0")), (sink, ("lo", "dst0")), (gateway, ("lo", "gwin", "gwout"))):
            for name in names:
                assert "UP" in links[name]["flags"], (name, links[name]["flags"])
        assert ("br0" in gateway) == (mode == "bridge")
        if mode == "bridge":
            assert gateway["gwin"]["master"] == gateway["gwout"]["master"] == "br0"
        assert _addresses(gateway["gwin"]) == _addresses(gateway["gwout"]) == set()
        disabled = subprocess.run(
            ["ip", "netns", "exec", bed.gateway, "sysctl", "-n", "net.ipv6.conf.all.disable_ipv6"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert disabled.stdout.strip() == "1"
        offloads = subprocess.run(
            ["ip", "netns", "exec", bed.source, "ethtool", "-k", "src0"], capture_output=True, text=True, check=True
        )
        assert "tx-checksumming: off" in offloads.stdout
        assert "generic-segmentation-offload: off" in offloads.stdout
    finally:
        bed.destroy()
    assert testbed.namespaces(prefix) == []


def test_a_failing_ip_step_names_its_command():
    """`ip -batch` stops at the first failing line; the error names that line's command and
    ip's message (read-only commands: no root needed)."""
    with pytest.raises(testbed.TestbedError) as failed:
        testbed._batch(None, ["link show lo", "link show schedlab-no-such-link", "link show lo"])
    assert str(failed.value).startswith("ip link show schedlab-no-such-link: ")
    assert "does not exist" in str(failed.value)
