"""Output folders that cannot mix results: fingerprints, the run-info file and the folder guard.

Every output folder of ``schedlab run`` and ``schedlab sweep`` holds ``run-info.json``:

* ``kind`` (``run`` or ``sweep``), ``fingerprint`` and ``determines`` — the SHA-256 of, and
  the values of, everything that determines the results: the scenario's simulation tables
  (``[run]`` with its seed, ``[[link]]``, ``[[source]]``; for a sweep also ``[sweep]``), the
  contents of every file the scenario names (``file = ...``), and the schedlab version;
* ``status``: ``running`` while the command works, ``complete`` when every output is written,
  ``interrupted`` after Ctrl-C or SIGTERM, ``failed`` after an error;
* wall-clock facts (start time, wall time, executor) — kept out of the result tables so that
  those are byte-identical for the same scenario and seed.

Every point file of a sweep (``points/p0003_r002.json``) carries the fingerprint of its own
point and replication, and ``--resume`` reuses only files whose fingerprint matches.

A folder that is not empty and does not hold results of the same scenario is refused
(:class:`OutputFolderError`, exit 2 on the command line) unless ``force`` (which clears it
first) or, for a sweep, ``resume`` with the same base scenario.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from schedlab.scenario import ScenarioError

#: The name of the run-info file in every output folder.
RUN_INFO = "run-info.json"


class OutputFolderError(ScenarioError):
    """An output folder that cannot be written (it holds something else, or cannot be
    created); the message names the folder and says what to do."""


def _version() -> str:
    from schedlab import _core

    return _core.__version__


_HASHES: dict[tuple, str] = {}


def _file_hash(path: Path) -> str:
    """SHA-256 of a file's bytes (remembered per path, size and modification time)."""
    try:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        if key not in _HASHES:
            digest = hashlib.sha256()
            with path.open("rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
            _HASHES[key] = digest.hexdigest()
        return _HASHES[key]
    except OSError:
        return "(unreadable)"  # the validator names the file; nothing is reused for it


def _referenced_files(data: Any, base_dir: Path, found: dict[str, str]) -> None:
    """SHA-256 of every file named by a ``file = ...`` key anywhere in ``data``."""
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "file" and isinstance(value, str):
                found[value] = _file_hash(Path(value) if Path(value).is_absolute() else base_dir / value)
            else:
                _referenced_files(value, base_dir, found)
    elif isinstance(data, list):
        for item in data:
            _referenced_files(item, base_dir, found)


def determinants(data: dict, base_dir: Path, **extra: Any) -> dict:
    """Everything that determines a result: the scenario tables ``data``, the hashes of the
    files they name, the schedlab version, and ``extra`` (e.g. the replication)."""
    files: dict[str, str] = {}
    _referenced_files(data, base_dir, files)
    return {"scenario": data, "files": files, "version": _version(), **extra}


def fingerprint(determined: dict) -> str:
    """The SHA-256 of :func:`determinants` (canonical JSON: sorted keys, no spaces)."""
    text = json.dumps(determined, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def differences(old: Any, new: Any, path: str = "") -> list[str]:
    """The key paths where ``old`` and ``new`` differ, as ``path: old -> new`` lines."""
    if isinstance(old, dict) and isinstance(new, dict):
        lines = []
        for key in list(old) + [k for k in new if k not in old]:
            child = f"{path}.{key}" if path else str(key)
            if key not in new:
                lines.append(f"{child}: {old[key]!r} -> (absent)")
            elif key not in old:
                lines.append(f"{child}: (absent) -> {new[key]!r}")
            else:
                lines.extend(differences(old[key], new[key], child))
        return lines
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        lines = []
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            lines.extend(differences(a, b, f"{path}[{index}]"))
        return lines
    return [] if old == new else [f"{path}: {old!r} -> {new!r}"]


def read_run_info(out_dir: Path) -> dict | None:
    """The folder's run-info, None if it has none; a corrupt one is an OutputFolderError."""
    path = out_dir / RUN_INFO
    if not path.exists():
        return None
    try:
        info = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise OutputFolderError(f"{path}: cannot be read ({e}); use --force to clear the folder") from None
    if not isinstance(info, dict):
        raise OutputFolderError(f"{path}: is not a JSON object; use --force to clear the folder")
    return info


def write_run_info(out_dir: Path, info: dict) -> None:
    """Write ``run-info.json`` atomically (a reader never sees a half-written file)."""
    path = out_dir / RUN_INFO
    tmp = path.with_name(RUN_INFO + ".partial")
    tmp.write_text(json.dumps(info, indent=2, default=str))
    tmp.replace(path)


def _refuse_to_clear(out_dir: Path) -> None:
    resolved = out_dir.resolve()
    protected = {Path("/"), Path.home().resolve(), *Path.cwd().resolve().parents, Path.cwd().resolve()}
    if resolved in protected:
        raise OutputFolderError(f"--out {out_dir}: refusing to clear {resolved} (the root, home or current folder)")


def prepare(
    out_dir: str | Path,
    kind: str,
    determined: dict,
    force: bool = False,
    resume: bool = False,
) -> dict:
    """Make ``out_dir`` ready for a ``kind`` (``run``/``sweep``) whose results are determined
    by ``determined`` (see :func:`determinants`), and write its run-info with status
    ``running``. Returns the run-info dict (pass it to :func:`finish`).

    Refused with :class:`OutputFolderError`: a folder that cannot be created; a non-empty
    folder without a run-info, or whose run-info is of another kind or another scenario —
    unless ``force`` (the folder is cleared). With ``resume``, a folder of the same kind whose
    base scenario differs is refused with the differing keys."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputFolderError(f"--out {out_dir}: exists and is not a folder")
    print_fp = fingerprint(determined)
    if out_dir.is_dir() and any(out_dir.iterdir()):
        if force:
            _refuse_to_clear(out_dir)
            for entry in out_dir.iterdir():
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
        else:
            _check_same(out_dir, kind, determined, print_fp, resume)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputFolderError(f"--out {out_dir}: cannot be created: {e.strerror}") from None
    info = {
        "kind": kind,
        "status": "running",
        "fingerprint": print_fp,
        "determines": determined,
        "started_unix_s": time.time(),
        "pid": os.getpid(),
    }
    write_run_info(out_dir, info)
    return info


def _check_same(out_dir: Path, kind: str, determined: dict, print_fp: str, resume: bool) -> None:
    info = read_run_info(out_dir)
    if info is None:
        raise OutputFolderError(
            f"--out {out_dir}: the folder is not empty and holds no {RUN_INFO} (not results of this scenario);"
            " choose another folder or add --force to clear it"
        )
    if info.get("kind") != kind:
        raise OutputFolderError(
            f"--out {out_dir}: holds the results of a `{info.get('kind')}`, not of a `{kind}`;"
            " choose another folder or add --force to clear it"
        )
    if info.get("fingerprint") == print_fp:
        return
    old = info.get("determines", {})
    if resume:
        # A sweep may grow or change its [sweep] lists: points are then matched one by one.
        # What every point shares (the base scenario, the files, the version) must be equal.
        old_base = {**old, "scenario": {k: v for k, v in old.get("scenario", {}).items() if k != "sweep"}}
        new_base = {**determined, "scenario": {k: v for k, v in determined["scenario"].items() if k != "sweep"}}
        lines = differences(old_base, new_base)
        if not lines:
            return
        raise OutputFolderError(
            f"--out {out_dir}: cannot resume: the results there come from a different scenario:\n  "
            + "\n  ".join(lines[:20])
            + ("\n  ..." if len(lines) > 20 else "")
            + "\nchoose another folder or add --force to clear it"
        )
    lines = differences(old, determined)
    raise OutputFolderError(
        f"--out {out_dir}: holds the results of a different scenario:\n  "
        + "\n  ".join(lines[:20])
        + ("\n  ..." if len(lines) > 20 else "")
        + "\nchoose another folder, add --force to clear it"
        + (" or --resume to reuse matching points" if kind == "sweep" else "")
    )


def finish(out_dir: str | Path, info: dict, status: str, **facts: Any) -> None:
    """Record the final ``status`` (``complete``, ``interrupted``, ``failed``) and wall-clock
    ``facts`` in the folder's run-info."""
    info = {**info, "status": status, "wall_time_s": time.time() - info["started_unix_s"], **facts}
    write_run_info(Path(out_dir), info)
