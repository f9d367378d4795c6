"""A network-namespace testbed: sources — gateway — sink, joined by veth pairs.

::

    ns {prefix}src  [src0 198.18.0.1/24, 2001:db8:5c::1/64]
                      ==veth==  [gwin]  ns {prefix}gw  [gwout]  ==veth==
    ns {prefix}dst  [dst0 198.18.0.2/24, 2001:db8:5c::2/64]

* Every namespace name starts with :data:`PREFIX` (``schedlab-``) followed by a run tag, so
  that ``schedlab measure --cleanup`` can find what a killed run left behind; the veth pairs
  are created inside the namespaces (``ip -n``), never in the host's, and disappear with them.
  Nothing of the host (interfaces, routes, firewall, sysctls) is touched.
* Addresses come from the benchmarking range 198.18.0.0/15 (RFC 2544) and the documentation
  range 2001:db8::/32 (RFC 3849); they exist only inside these namespaces.
* The gateway forwards frames unchanged (layer 2), so both ends share one subnet and find each
  other with ARP / neighbour discovery through it. Checksum offload is turned off on the
  sending veth ends (``ethtool -K … tx off gso off``): a veth frame with a partial checksum would
  otherwise leave the gateway's packet socket with the checksum unfinished and be dropped
  by the sink's kernel.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field

PREFIX = "schedlab-"


def prefix() -> str:
    """The namespace prefix: ``SCHEDLAB_NETNS_PREFIX`` if set (it must start with ``schedlab-``,
    so that a test can scope ``--cleanup`` to its own runs), else :data:`PREFIX`."""
    chosen = os.environ.get("SCHEDLAB_NETNS_PREFIX", PREFIX)
    if not chosen.startswith(PREFIX):
        raise TestbedError(f"SCHEDLAB_NETNS_PREFIX = {chosen!r}: must start with {PREFIX!r}")
    return chosen


SOURCE_ADDRESS = "198.18.0.1"
SINK_ADDRESS = "198.18.0.2"
SOURCE_ADDRESS6 = "2001:db8:5c::1"
SINK_ADDRESS6 = "2001:db8:5c::2"


class TestbedError(RuntimeError):
    """A testbed command failed (the message names the command and its output)."""


def can_admin_network() -> bool:
    """Whether this process may create network namespaces (root or CAP_NET_ADMIN + CAP_SYS_ADMIN)."""
    if os.geteuid() == 0:
        return True
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("CapEff:"):
                    caps = int(line.split()[1], 16)
                    return bool(caps & (1 << 12)) and bool(caps & (1 << 21))
    except OSError:
        pass
    return False


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(list(args), capture_output=True, text=True, timeout=20)
    if check and result.returncode != 0:
        raise TestbedError(f"{' '.join(args)}: {result.stderr.strip() or result.stdout.strip()}")
    return result


def namespaces(start: str | None = None) -> list[str]:
    """Network namespaces whose name starts with ``start`` (default: :func:`prefix`)."""
    start = start or prefix()
    listing = _run("ip", "netns", "list", check=False).stdout
    return [line.split()[0] for line in listing.splitlines() if line.split() and line.split()[0].startswith(start)]


def cleanup(start: str | None = None) -> list[str]:
    """Kills the processes inside every namespace named ``start…`` (default: :func:`prefix`;
    by pid) and deletes the namespaces (and with them their veth pairs). Returns the
    namespaces removed."""
    found = namespaces(start)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = False
        for ns in found:
            for pid in _run("ip", "netns", "pids", ns, check=False).stdout.split():
                alive = True
                try:
                    os.kill(int(pid), sig)
                except (ProcessLookupError, ValueError):
                    pass
        if not alive:
            break
        time.sleep(0.5)
    for ns in found:
        _run("ip", "netns", "delete", ns, check=False)
    return found


@dataclass
class Testbed:
    """One source namespace, one gateway namespace, one sink namespace (see the module doc)."""

    tag: str = field(default_factory=lambda: f"{os.getpid()}-{time.monotonic_ns() % 100000}")
    #: ``"gateway"`` (gwin/gwout bare, for ``schedlab gateway``) or ``"bridge"`` (the kernel
    #: forwards between them: a Linux bridge ``br0``, the baseline of the benchmarks).
    mode: str = "gateway"
    processes: list[subprocess.Popen] = field(default_factory=list)

    @property
    def prefix(self) -> str:
        return f"{prefix()}{self.tag}-"

    @property
    def source(self) -> str:
        return f"{self.prefix}src"

    @property
    def gateway(self) -> str:
        return f"{self.prefix}gw"

    @property
    def sink(self) -> str:
        return f"{self.prefix}dst"

    def create(self) -> Testbed:
        """Creates the namespaces, veth pairs and addresses; on failure removes what it made."""
        try:
            for ns in (self.source, self.gateway, self.sink):
                _run("ip", "netns", "add", ns)
                _run("ip", "-n", ns, "link", "set", "lo", "up")
            _run(
                "ip",
                "-n",
                self.source,
                "link",
                "add",
                "src0",
                "type",
                "veth",
                "peer",
                "name",
                "gwin",
                "netns",
                self.gateway,
            )
            _run(
                "ip",
                "-n",
                self.sink,
                "link",
                "add",
                "dst0",
                "type",
                "veth",
                "peer",
                "name",
                "gwout",
                "netns",
                self.gateway,
            )
            _run("ip", "netns", "exec", self.gateway, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1")
            _run("ip", "netns", "exec", self.gateway, "sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1")
            for ns, dev, v4, v6 in (
                (self.source, "src0", SOURCE_ADDRESS, SOURCE_ADDRESS6),
                (self.sink, "dst0", SINK_ADDRESS, SINK_ADDRESS6),
            ):
                _run("ip", "-n", ns, "addr", "add", f"{v4}/24", "dev", dev)
                _run("ip", "-n", ns, "addr", "add", f"{v6}/64", "dev", dev, "nodad")
                _run("ip", "netns", "exec", ns, "ethtool", "-K", dev, "tx", "off", "gso", "off")
                _run("ip", "-n", ns, "link", "set", dev, "up")
            for dev in ("gwin", "gwout"):
                _run("ip", "-n", self.gateway, "link", "set", dev, "up")
            if self.mode == "bridge":
                _run("ip", "-n", self.gateway, "link", "add", "br0", "type", "bridge")
                for dev in ("gwin", "gwout"):
                    _run("ip", "-n", self.gateway, "link", "set", dev, "master", "br0")
                _run("ip", "-n", self.gateway, "link", "set", "br0", "up")
        except Exception:
            self.destroy()
            raise
        return self

    def spawn(self, ns: str, args: list[str], **kwargs) -> subprocess.Popen:
        """Starts ``args`` inside namespace ``ns``; :meth:`destroy` stops it."""
        process = subprocess.Popen(["ip", "netns", "exec", ns, *args], **kwargs)
        self.processes.append(process)
        return process

    def destroy(self) -> None:
        """Stops the processes it started and removes its namespaces."""
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        deadline = time.monotonic() + 2
        for process in self.processes:
            try:
                process.wait(timeout=max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        cleanup(self.prefix)

    def __enter__(self) -> Testbed:
        return self.create()

    def __exit__(self, *exc) -> None:
        self.destroy()
