"""A SIGTERM to the process that runs a localhost deployment (a cancelled SLURM job, a killed
test run) stops its SuperLink / SuperNodes too: they run in sessions of their own, so before,
the signal never reached them and they kept polling after their parent died."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

SCRIPT = """
import sys, time
from fedclust.flower.localhost import LocalFederation
fed = LocalFederation(sys.argv[1], [])
proc = fed._start("sleeper", ["sleep", "300"])
print(proc.pid, flush=True)
time.sleep(300)
"""


def _alive(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().split(") ", 1)[1][0] != "Z"  # a zombie is dead, not yet reaped
    except (FileNotFoundError, IndexError):
        return False


def test_sigterm_to_the_parent_stops_the_processes_it_started(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", SCRIPT, str(tmp_path)],
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        pid = int(child.stdout.readline())
        assert _alive(pid)
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=30) == -signal.SIGTERM  # it still dies of the signal
        deadline = time.monotonic() + 15
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(pid)
    finally:
        child.kill()
        if "pid" in locals() and _alive(pid):
            os.kill(pid, signal.SIGKILL)
