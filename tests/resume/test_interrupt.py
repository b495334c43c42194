"""`tgt collect` in a terminal, as a person sees it: no ETA until the first batch is timed, a bar
that moves while that batch is timed, and Ctrl-C answered at once, acted on within seconds,
and resumed by the same command.

The collection runs in a pseudo-terminal (so the bars are drawn) with a batch made long on
purpose (a precision it never reaches, a seconds cap per config); Ctrl-C is sent the way a
terminal sends it, to the whole foreground process group.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from test_kill_resume import HLO  # the same small convnet

from tpugraphs_tools.validate import validate_path

ANSI = re.compile(rb"\x1b\[[0-9;?]*[a-zA-Z]")
ROUND = re.compile(r"timing batch 1 \(\d+ configs\) · process \d/2 · round (\d+)")
# Before: a measurement process in the middle of a batch was given 10 s to exit, and then
# each of the others (~30 s in all for resnet50); killed at once, they are gone in ~2 s.
STOPPED_WITHIN_S = 8.0


def _command(hlo: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "tpugraphs_tools.cli", "collect", "--hlo", str(hlo),
            "--out", str(out), "--configs", "5", "--seed", "1", "--warmup", "0",
            "--min-sample-ms", "1", "--measure-processes", "2", "--loaded-copies", "2",
            *extra]


class Screen:
    """What a pseudo-terminal running a command has shown so far (escape codes removed)."""

    def __init__(self, command: list[str]) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 240, 0, 0))
        env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
        self.proc = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave,
                                     start_new_session=True, env={**env, "TERM": "xterm"})
        os.close(slave)
        self.master, self.raw = master, b""

    @property
    def text(self) -> str:
        return ANSI.sub(b"", self.raw).decode(errors="replace")

    def read_until(self, done, timeout: float) -> bool:
        """Read until ``done(text)`` or the command exits or ``timeout`` passes."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if done(self.text):
                return True
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # the command exited and the terminal closed
                    chunk = b""
                if not chunk:
                    return done(self.text)
                self.raw += chunk
        return done(self.text)

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        os.close(self.master)


def _rounds(text: str) -> list[int]:
    return [int(r) for r in ROUND.findall(text)]


@pytest.fixture
def hlo_file(tmp_path: Path) -> Path:
    path = tmp_path / "convnet.hlo"
    path.write_text(HLO)
    return path


def test_the_bar_moves_through_the_first_batch_and_ctrl_c_stops_it_in_seconds(
        hlo_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "data"
    # A batch that never reaches its precision runs to the seconds cap: long enough to watch.
    screen = Screen(_command(hlo_file, out, "--target-precision", "0.000001",
                             "--max-seconds-per-config", "60", "--max-rounds", "1000000"))
    try:
        moved = screen.read_until(lambda t: len(set(_rounds(t))) >= 3, timeout=240)
        assert moved, screen.text[-3000:]
        before = screen.text
        assert "ETA estimating… (after the first timing batch)" in before
        assert "ETA estimating… (after batch 1)" in before
        assert not re.search(r"ETA \d", before)  # no estimate before anything was timed
        sent = time.monotonic()
        os.killpg(screen.proc.pid, signal.SIGINT)  # what a terminal does on Ctrl-C
        screen.read_until(lambda t: "interrupted:" in t, timeout=60)
        screen.proc.wait(timeout=60)
        stopped = time.monotonic() - sent
    finally:
        screen.close()
    after = screen.text[len(before):]
    ack = re.search(r"stopping: (\d+) of 5 config rows kept \(committed or journaled\); the "
                    r"batch being timed is dropped; the same command resumes", after)
    assert ack, after
    assert after.index("stopping:") < after.index("interrupted:")
    assert screen.proc.returncode == 130
    assert stopped < STOPPED_WITHIN_S, f"{stopped:.1f} s from Ctrl-C to exit"
    kept = int(ack.group(1))
    assert kept >= 1  # the default config's row, journaled before the batch began
    done = subprocess.run(_command(hlo_file, out, "--max-rounds", "8"), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert f"{kept} config row(s) measured by an earlier run kept" in done.stdout
    report = validate_path(out)
    assert report.ok(), [f.message for f in report.findings]
