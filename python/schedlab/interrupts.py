"""Ctrl-C and SIGTERM: both stop a run within a second and leave no file that looks complete.

SIGINT raises ``KeyboardInterrupt`` (Python's default) and SIGTERM raises :class:`Terminated`
(a ``KeyboardInterrupt``) once :func:`install` has run. The Rust loops run Python's signal
handlers every few thousand events (``schedlab_sim::watch``), so the exception arrives while a
simulation or a replay is running, not after it. The command line exits with
:func:`exit_status`: 130 after SIGINT, 143 after SIGTERM (128 + the signal number, as a shell
reports a process killed by it).
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn


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


#: The exit statuses of an interrupted command: :func:`exit_status` of SIGINT and SIGTERM.
INTERRUPTED = (128 + signal.SIGINT, 128 + signal.SIGTERM)


def exit_now(status: int) -> NoReturn:
    """Ends the process with ``status`` once the atexit handlers have run and the standard
    streams are flushed, without the interpreter's teardown of the loaded modules (seconds on
    a loaded machine, when every process gets a small share of a core). For a process whose
    work is done and whose files are closed: a command that has handled Ctrl-C, a gateway
    that has written its stats."""
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


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
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextmanager
def deferred() -> Iterator[None]:
    """Holds SIGINT and SIGTERM back for the block: a signal that arrives inside it is
    recorded, and the first one is delivered when the block ends (its handler runs then:
    ``KeyboardInterrupt`` or :class:`Terminated`, or the default action). For short, bounded
    steps that an interrupt must not cut in half: starting a child process and recording it,
    stopping the children and removing what they ran in. Outside the main thread (where
    Python cannot set handlers) the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {
        sig: handler
        for sig in (signal.SIGINT, signal.SIGTERM)
        # A handler installed outside Python (None) or an ignored signal is left as it is.
        if (handler := signal.getsignal(sig)) is not None and handler is not signal.SIG_IGN
    }
    for sig in previous:
        signal.signal(sig, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if received:
            signal.raise_signal(received[0])
