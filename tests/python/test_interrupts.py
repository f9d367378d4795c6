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


@pytest.mark.parametrize(("raised", "status"), [(KeyboardInterrupt, 130), (interrupts.Terminated, 143)])
def test_a_signal_outside_a_commands_block_still_exits_with_its_status(handlers, monkeypatch, raised, status):
    """Ctrl-C or SIGTERM while a command imports what it needs, before its interruptible
    block, reaches typer (whose recent versions exit with 130 for both) or click (older
    typer: "Aborted!" and exit 1); `schedlab` exits with 130 for SIGINT, 143 for SIGTERM, as
    it does inside the block."""
    from schedlab import cli

    def interrupted():
        raise raised("signal")

    def exit_now(code):
        raise SystemExit(f"exit_now {code}")

    monkeypatch.setattr("schedlab.disciplines", interrupted)
    monkeypatch.setattr(interrupts, "exit_now", exit_now)
    monkeypatch.setattr("sys.argv", ["schedlab", "list"])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    assert exited.value.code == f"exit_now {status}"


@pytest.mark.parametrize("handled", ["typer", "click"])
def test_the_interrupt_behind_typer_and_click_exits(handled):
    """Both shapes of a handled interrupt: typer's ``Exit(130) from KeyboardInterrupt`` and
    click's ``Abort() from KeyboardInterrupt`` followed by ``sys.exit(1)``."""
    import click
    import typer

    from schedlab import cli

    signal_raised = interrupts.Terminated("signal 15")
    try:
        try:
            try:
                raise signal_raised
            except KeyboardInterrupt as e:
                raise (typer.Exit(130) if handled == "typer" else click.exceptions.Abort()) from e
        except (typer.Exit, click.exceptions.Abort):
            raise SystemExit(130 if handled == "typer" else 1) from None
    except SystemExit as exit:
        assert cli._interrupt_behind(exit) is signal_raised
    assert cli._interrupt_behind(SystemExit(2)) is None


def test_other_exits_keep_their_status(handlers, monkeypatch):
    """A usage error (click's exit 2) is not taken for an interrupt."""
    from schedlab import cli

    monkeypatch.setattr("sys.argv", ["schedlab", "list", "--no-such-option"])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    assert exited.value.code == 2
