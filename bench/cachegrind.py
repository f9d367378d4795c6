"""Cachegrind counts of one run, and a base commit's tree beside this one: the building blocks of
the benches that compare instruction and miss counts with a base commit (independent of the
machine's load): `unused_stage.py` and `before_after.py`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Cachegrind's cache model: D1 as this machine's (32 KiB, 8-way), LL the size of one core's L2
#: (1 MiB, 16-way); the 32 MiB L3 holds every case of the benches.
CACHE_ARGS = ("--cache-sim=yes", "--D1=32768,8,64", "--LL=1048576,16,64")


def run(argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Runs `argv` with its output captured; exits naming the command and showing the end of
    its error output if it fails."""
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{' '.join(map(str, argv))} exited with {done.returncode}:\n{done.stderr[-3000:]}")
    return done


def totals(argv: list[str], env: dict[str, str] | None = None, out: Path | None = None) -> dict[str, int]:
    """Instructions (`Ir`), D1 misses and LL misses of one run of `argv` under cachegrind;
    `out` keeps cachegrind's per-line file (for `cg_annotate`)."""
    valgrind = ["valgrind", "--tool=cachegrind", *CACHE_ARGS, f"--cachegrind-out-file={out or os.devnull}"]
    stderr = run([*valgrind, *argv], env).stderr
    counts: dict[str, int] = {}
    for label, key in ((r"I\s+refs", "Ir"), (r"D1\s+misses", "D1"), (r"LL\s+misses", "LL")):
        matches = re.findall(rf"==\d+== {label}:\s+([\d,]+)", stderr)
        if not matches:
            sys.exit(f"cachegrind: no '{label}' line in cachegrind's output:\n{stderr[-2000:]}")
        counts[key] = int(matches[0].replace(",", ""))
    return counts


def base_tree(commit: str, place: Path) -> Path:
    """A detached worktree of `commit` at `place` (recreated), so that cargo reuses its build
    from one run to the next; remove it with [`remove_tree`]."""
    remove_tree(place)
    subprocess.run(["git", "worktree", "add", "--detach", "-q", str(place), commit], cwd=ROOT, check=True)
    return place


def remove_tree(place: Path) -> None:
    """Removes the worktree at `place` (if any) and git's record of it."""
    subprocess.run(["git", "worktree", "remove", "--force", str(place)], cwd=ROOT, capture_output=True, check=False)
    subprocess.run(["git", "worktree", "prune"], cwd=ROOT, capture_output=True, check=False)
