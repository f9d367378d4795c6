"""`schedlab.interrupts.deferred`: the steps that Ctrl-C must not cut in half (starting a
child and recording it, an `ip` command, removing a testbed) get the signal when they are done.
No root needed: the namespace tests (`*_netns.py`) check the whole `schedlab measure`."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from schedlab import interrupts, testbed


@pytest.fixture
def handlers():
    """Ctrl-C and SIGTERM as in a `schedlab` command (pytest may have inherited an ignored
    SIGINT as a background job); pytest's own handlers come back afterwards."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    interrupts.install()
    yield
    for sig, handler in previous.items():
        signal.signal(sig, handler)


@pytest.mark.parametrize(
    ("signum", "raised"), [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, interrupts.Terminated)]
)
def test_a_signal_inside_the_block_arrives_when_it_ends(handlers, signum, raised):
    steps = []
    with pytest.raises(raised):
        with interrupts.deferred():
            os.kill(os.getpid(), signum)
            steps.append("after the signal")
        steps.append("after the block")
    assert steps == ["after the signal"]
    # The handlers are the command's again.
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGTERM) is interrupts._terminate


def test_nested_blocks_deliver_once_at_the_outer_end(handlers):
    steps = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts.deferred():
            with interrupts.deferred():
                os.kill(os.getpid(), signal.SIGINT)
            steps.append("after the inner block")
    assert steps == ["after the inner block"]


def test_an_ignored_sigint_stays_ignored(handlers):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with interrupts.deferred():
        os.kill(os.getpid(), signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_spawn_records_the_process_when_ctrl_c_lands_inside_popen(handlers, monkeypatch):
    started = []

    def popen_interrupted_after_the_fork(args, **kwargs):
        started.append(args)
        os.kill(os.getpid(), signal.SIGINT)  # as if Ctrl-C came while Popen read the exec pipe
        return "the child"

    monkeypatch.setattr(subprocess, "Popen", popen_interrupted_after_the_fork)
    bed = testbed.Testbed(tag="unit")
    with pytest.raises(KeyboardInterrupt):
        bed.spawn(bed.gateway, ["true"])
    assert bed.processes == ["the child"], "destroy must know every process that was started"
    assert started == [["ip", "netns", "exec", bed.gateway, "true"]]
