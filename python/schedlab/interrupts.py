"""Ctrl-C and SIGTERM: both stop a run within a second and leave no file that looks complete.

SIGINT raises ``KeyboardInterrupt`` (Python's default) and SIGTERM raises :class:`Terminated`
(a ``KeyboardInterrupt``) once :func:`install` has run. The Rust loops run Python's signal
handlers every few thousand events (``schedlab_sim::watch``), so the exception arrives while a
simulation or a replay is running, not after it. The command line exits with
:func:`exit_status`: 130 after SIGINT, 143 after SIGTERM (128 + the signal number, as a shell
reports a process killed by it).
"""

from __future__ import annotations

import signal


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when the process receives SIGTERM."""


def _terminate(signum, frame) -> None:
    raise Terminated(f"signal {signum}")


def install() -> None:
    """Make SIGTERM raise :class:`Terminated` (SIGINT keeps raising ``KeyboardInterrupt``)."""
    signal.signal(signal.SIGTERM, _terminate)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        return  # a background job started with SIGINT ignored keeps ignoring it
    signal.signal(signal.SIGINT, signal.default_int_handler)


def exit_status(error: KeyboardInterrupt) -> int:
    """130 for SIGINT, 143 for SIGTERM."""
    return 128 + (signal.SIGTERM if isinstance(error, Terminated) else signal.SIGINT)


def stop_children() -> None:
    """Terminate this process's worker processes (a local sweep's pool), without waiting."""
    import multiprocessing

    for child in multiprocessing.active_children():
        child.terminate()


def worker_signals() -> None:
    """In a sweep's worker process: SIGTERM kills it (the parent's :class:`Terminated` handler,
    inherited by fork, would let it survive :func:`stop_children`); Ctrl-C on the terminal
    interrupts its task, and the parent stops the pool."""
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
