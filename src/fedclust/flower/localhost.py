"""Run the deployment engine on localhost: a SuperLink, one SuperNode per center file, ``flwr run``.

Insecure (no TLS) and bound to 127.0.0.1 only — a smoke test of the deployment path, never a
real federation (README, "Flower deployment", for TLS between sites). Every process is started
in its own session and its whole process group is killed at the end, whatever happened; each
step is bounded by a timeout.

    python -m fedclust.flower.localhost WORKDIR CENTER_FILE... [--rounds 1]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

APP_DIR = Path(__file__).resolve().parents[3] / "deploy" / "flower"
HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _bin(name: str) -> str:
    here = Path(sys.executable).parent / name
    path = str(here) if here.exists() else shutil.which(name)
    if path is None:
        raise FileNotFoundError(f"{name} not found: pip install 'fedclust[flower]'")
    return path


@contextlib.contextmanager
def _processes() -> Iterator[list[subprocess.Popen]]:
    procs: list[subprocess.Popen] = []
    try:
        yield procs
    finally:
        for p in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)


def _log_tail(proc: subprocess.Popen, lines: int = 15) -> str:
    """The end of a child's log (``start`` keeps its path on the process object)."""
    path = getattr(proc, "log_path", None)
    if path is None or not Path(path).exists():
        return ""
    tail = Path(path).read_text(errors="replace").splitlines()[-lines:]
    return f"\n--- {path} (last {len(tail)} lines) ---\n" + "\n".join(tail)


def _wait_port(port: int, timeout: float, proc: subprocess.Popen) -> None:
    t0 = time.monotonic()
    while True:
        with socket.socket() as s:
            if s.connect_ex((HOST, port)) == 0:
                return
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}{_log_tail(proc)}")
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"nothing listens on {HOST}:{port} after {timeout:.0f}s")
        time.sleep(0.2)


def _wait_for(path: Path, timeout: float, procs: Sequence[subprocess.Popen], what: str) -> None:
    t0 = time.monotonic()
    while not path.exists():
        dead = [p for p in procs if p.poll() is not None]
        if dead:
            logs = "".join(_log_tail(p) for p in dead)
            raise RuntimeError(f"{what}: {[p.args[0] for p in dead]} exited early{logs}")
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"{what}: nothing after {timeout:.0f}s")
        time.sleep(0.2)


def run_localhost(
    workdir: str | os.PathLike,
    center_files: Sequence[str | os.PathLike],
    run_config: dict[str, object],
    timeout: float = 180.0,
    app_dir: str | os.PathLike = APP_DIR,
) -> dict:
    """Start the SuperLink and one SuperNode per center file, ``flwr run`` the app, wait for its
    ``done.json``; return it. Logs are left in ``workdir``."""
    work = Path(workdir).resolve()
    (work / "home").mkdir(parents=True, exist_ok=True)
    out = work / "out"
    link = free_port()
    (work / "home" / "config.toml").write_text(
        f'[superlink]\ndefault = "local"\n\n[superlink.local]\naddress = "{HOST}:{link}"\n'
        "insecure = true\n"
    )
    # Flower's executables start each other (the SuperLink runs flower-superexec): find them in
    # this interpreter's environment, activated or not
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "FLWR_HOME": str(work / "home"),
           "PATH": os.pathsep.join([bindir, os.environ.get("PATH", "")])}  # fmt: skip
    cfg = {**run_config, "centers": len(center_files), "out-dir": str(out)}
    overrides = " ".join(f"{k}={json.dumps(v)}" for k, v in cfg.items())

    def start(name: str, args: list[str]) -> subprocess.Popen:
        log = open(work / f"{name}.log", "wb")
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)  # fmt: skip
        proc.log_path = work / f"{name}.log"  # type: ignore[attr-defined]
        return proc

    with _processes() as procs:
        procs.append(start("superlink", [
            _bin("flower-superlink"), "--insecure", "--host", HOST, "--port", str(link),
            "--database", str(work / "superlink.db"), "--disable-runtime-dependency-installation",
        ]))  # fmt: skip
        _wait_port(link, timeout, procs[0])
        for i, f in enumerate(center_files):
            procs.append(start(f"supernode_{i}", [
                _bin("flower-supernode"), "--insecure", "--superlink", f"{HOST}:{link}",
                "--host", HOST, "--port", str(free_port()),
                "--node-config", f"center-file={json.dumps(str(Path(f).resolve()))}",
            ]))  # fmt: skip
        run = subprocess.run(
            [_bin("flwr"), "run", str(app_dir), "local", "--run-config", overrides],
            env=env, capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
        (work / "flwr_run.log").write_text(run.stdout + run.stderr)
        if run.returncode != 0:
            raise RuntimeError(f"flwr run failed ({run.returncode}): {run.stdout}{run.stderr}")
        _wait_for(out / "done.json", timeout, procs, "the ServerApp's done.json")
    return json.loads((out / "done.json").read_text())


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workdir")
    ap.add_argument("center_files", nargs="+")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=180.0)
    a = ap.parse_args(argv)
    print(json.dumps(run_localhost(a.workdir, a.center_files, {"rounds": a.rounds}, a.timeout)))


if __name__ == "__main__":
    main()
