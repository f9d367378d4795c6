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
import re
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from schedlab import interrupts

PREFIX = "schedlab-"
#: Where ``ip netns`` keeps the namespaces' names (bind mounts of their ``nsfs`` files).
NETNS_DIR = "/var/run/netns"
#: Seconds the processes of a testbed get to exit after SIGTERM, before SIGKILL.
GRACE_S = 0.5
#: Seconds to wait for SIGKILLed processes to be gone (one stuck in the kernel is left to
#: the namespace's removal rather than waited for without end).
KILL_WAIT_S = 1.0
#: Seconds between two looks at whether the signalled processes are gone.
POLL_S = 0.02


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


def _run(*args: str, check: bool = True, stdin: str | None = None, timeout: float = 20) -> subprocess.CompletedProcess:
    """Runs one short command (``ip``, ``ethtool``, ``sysctl``) to its end: Ctrl-C and SIGTERM
    wait for it (an ``ip netns add`` cut off inside ``Popen`` would go on unseen and make a
    namespace after the cleanup has looked)."""
    with interrupts.deferred():
        result = subprocess.run(list(args), input=stdin, capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise TestbedError(f"{' '.join(args)}: {result.stderr.strip() or result.stdout.strip()}")
    return result


def _batch(ns: str | None, commands: list[str]) -> None:
    """Runs ``ip`` commands (one per item, without the leading ``ip``) in one ``ip -batch``,
    inside namespace ``ns`` (``ip -n``) or, with ``None``, outside; stops at the first that
    fails and raises :class:`TestbedError` with ``ip``'s message, which names the line."""
    where = ["-n", ns] if ns is not None else []
    result = _run("ip", *where, "-batch", "-", check=False, stdin="".join(f"{command}\n" for command in commands))
    if result.returncode != 0:
        message = result.stderr.strip() or result.stdout.strip()
        failed = re.search(r"Command failed -:(\d+)", message)
        line = int(failed.group(1)) if failed else 0
        command = f"ip {' '.join(where)} {commands[line - 1]}".replace("  ", " ") if 0 < line <= len(commands) else ""
        raise TestbedError(f"{command or 'ip -batch'}: {message.splitlines()[0] if message else 'failed'}")


def namespaces(start: str | None = None) -> list[str]:
    """Network namespaces whose name starts with ``start`` (default: :func:`prefix`)."""
    start = start or prefix()
    try:
        names = os.listdir(NETNS_DIR)
    except FileNotFoundError:
        return []
    return sorted(name for name in names if name.startswith(start))


def _identity(path: str) -> tuple[int, int] | None:
    """The (device, inode) of the namespace file ``path`` (a name in :data:`NETNS_DIR` or a
    process's ``/proc/PID/ns/net``); None once it is gone (an exited process has none)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _pids_in(identities: set[tuple[int, int]]) -> list[int]:
    """The processes whose network namespace is one of ``identities`` (as ``ip netns pids``)."""
    return [
        int(entry)
        for entry in os.listdir("/proc")
        if entry.isdigit() and _identity(f"/proc/{entry}/ns/net") in identities
    ]


Target = TypeVar("Target")


def _stop(
    scan: Callable[[], list[Target]],
    alive: Callable[[list[Target]], list[Target]],
    send: Callable[[Target, int], None],
) -> None:
    """Stops processes in two rounds, every process of a round signalled at once: SIGTERM
    and up to :data:`GRACE_S` for them to exit, then SIGKILL to those :func:`scan` still
    finds and up to :data:`KILL_WAIT_S`. ``alive`` keeps the processes of a list that have
    not exited yet; ``send`` signals one. Bounded: never more than the two waits and the
    polls between."""
    for sig, wait in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, KILL_WAIT_S)):
        left = scan()
        for target in left:
            send(target, sig)
        deadline = time.monotonic() + wait
        while left and time.monotonic() < deadline:
            time.sleep(POLL_S)
            left = alive(left)


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def cleanup(start: str | None = None) -> list[str]:
    """Stops the processes inside every namespace named ``start…`` (default: :func:`prefix`;
    by pid: SIGTERM, then SIGKILL, see :func:`_stop`) and deletes the namespaces (and with
    them their veth pairs). Returns the namespaces removed."""
    found = namespaces(start)
    if not found:
        return found
    identities = {identity for ns in found if (identity := _identity(f"{NETNS_DIR}/{ns}")) is not None}
    _stop(
        lambda: _pids_in(identities),
        lambda pids: [pid for pid in pids if _identity(f"/proc/{pid}/ns/net") in identities],
        _kill,
    )
    # One `ip` for all of them (-force: go on past a name already gone).
    _run("ip", "-force", "-batch", "-", check=False, stdin="".join(f"netns delete {ns}\n" for ns in found), timeout=5)
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
        """Creates the namespaces, veth pairs and addresses; on failure removes what it made.
        Seven commands: the ``ip`` steps of each namespace go in one ``ip -batch`` (which
        stops at the first failing line and names it)."""
        try:
            _batch(None, [f"netns add {ns}" for ns in (self.source, self.gateway, self.sink)])
            for ns, dev, peer, v4, v6 in (
                (self.source, "src0", "gwin", SOURCE_ADDRESS, SOURCE_ADDRESS6),
                (self.sink, "dst0", "gwout", SINK_ADDRESS, SINK_ADDRESS6),
            ):
                _batch(
                    ns,
                    [
                        "link set lo up",
                        f"link add {dev} type veth peer name {peer} netns {self.gateway}",
                        f"addr add {v4}/24 dev {dev}",
                        f"addr add {v6}/64 dev {dev} nodad",
                        f"link set {dev} up",
                    ],
                )
                _run("ip", "netns", "exec", ns, "ethtool", "-K", dev, "tx", "off", "gso", "off")
            _run(
                "ip",
                "netns",
                "exec",
                self.gateway,
                "sysctl",
                "-q",
                "-w",
                "net.ipv6.conf.all.disable_ipv6=1",
                "net.ipv6.conf.default.disable_ipv6=1",
            )
            gateway = ["link set lo up", "link set gwin up", "link set gwout up"]
            if self.mode == "bridge":
                gateway += ["link add br0 type bridge", "link set gwin master br0", "link set gwout master br0"]
                gateway += ["link set br0 up"]
            _batch(self.gateway, gateway)
        except BaseException:  # Ctrl-C too: nothing half-made is left
            self.destroy()
            raise
        return self

    def spawn(self, ns: str, args: list[str], **kwargs) -> subprocess.Popen:
        """Starts ``args`` inside namespace ``ns``; :meth:`destroy` stops it. Ctrl-C and
        SIGTERM wait until the process is recorded (an interrupt inside ``Popen`` would leave
        a child that :meth:`destroy` does not know)."""
        with interrupts.deferred():
            process = subprocess.Popen(["ip", "netns", "exec", ns, *args], **kwargs)
            self.processes.append(process)
        return process

    def destroy(self) -> None:
        """Stops the processes it started (all signalled at once: SIGTERM, a grace of
        :data:`GRACE_S`, SIGKILL) and removes its namespaces, with anything still in them.
        Bounded (about a second when a process needs SIGKILL), and not cut short by Ctrl-C
        or SIGTERM: those are delivered when it is done."""
        with interrupts.deferred():
            _stop(
                lambda: [process for process in self.processes if process.poll() is None],
                lambda processes: [process for process in processes if process.poll() is None],
                lambda process, sig: process.send_signal(sig),
            )
            cleanup(self.prefix)

    def __enter__(self) -> Testbed:
        return self.create()

    def __exit__(self, *exc) -> None:
        self.destroy()
