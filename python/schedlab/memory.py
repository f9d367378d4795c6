"""Will a run fit in memory? ``schedlab run`` and ``schedlab sweep`` compare the estimate of
the Rust validator (``schedlab_sim::memory``: the program, each flow, each replication's
per-flow statistics, the time series) with the memory available — ``MemAvailable`` of
``/proc/meminfo``, or less when the process's cgroup has a memory limit — and refuse, before
writing anything, a run that will not fit (exit 2, with the estimate). ``--no-memory-check``
runs anyway."""

from __future__ import annotations

from pathlib import Path

import schedlab

#: The cgroup (v2, then v1) files of a memory limit and the usage it counts.
CGROUP_LIMITS = (
    ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
    ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
)


def _read_int(path: str) -> int | None:
    try:
        text = Path(path).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def available_bytes() -> tuple[int | None, str]:
    """The bytes a new run can use and where that figure comes from: ``MemAvailable`` of
    ``/proc/meminfo``, or the room left under the cgroup's memory limit when that is smaller.
    ``(None, reason)`` when neither can be read (then nothing is refused)."""
    available, source = None, "no /proc/meminfo"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                available, source = int(line.split()[1]) * 1024, "MemAvailable in /proc/meminfo"
                break
    except OSError:
        pass
    for limit_path, usage_path in CGROUP_LIMITS:
        limit, usage = _read_int(limit_path), _read_int(usage_path)
        # cgroup v1 writes a huge number for "no limit".
        if limit is None or usage is None or limit >= 1 << 60:
            continue
        room = max(limit - usage, 0)
        if available is None or room < available:
            available, source = room, f"the cgroup limit {limit_path} less its usage"
        break
    return available, source


def gigabytes(n: int) -> str:
    """``n`` bytes as ``12.3 GB`` (10^9 bytes)."""
    return f"{n / 1e9:,.1f} GB" if n >= 1e9 else f"{n / 1e6:,.0f} MB"


def check(needed: int, what: str, detail: str) -> None:
    """Raise :class:`schedlab.InputError` when ``needed`` bytes (the estimate for ``what``,
    explained by ``detail``) exceed the available memory."""
    available, source = available_bytes()
    if available is None or needed <= available:
        return
    raise schedlab.InputError(
        f"{what} needs about {gigabytes(needed)} of memory ({detail}), but {gigabytes(available)} is available"
        f" ({source}): use fewer flows, replications or time bins (a longer [run] bin),"
        " or --no-memory-check to run anyway"
    )


def describe(estimate: dict) -> str:
    """The parts of a ``memory_estimate`` (from :func:`schedlab.api.validate`) in words."""
    return (
        f"estimate: {gigabytes(estimate['fixed_bytes'])} for the program and the flows"
        f" + {estimate['replications']} replication(s) x {gigabytes(estimate['per_replication_bytes'])}"
    )
