"""The deployment recipe on one machine: a SuperLink and one SuperNode per centre folder on
127.0.0.1, then ``flwr run`` of any registered stage, several runs on one SuperLink session.

By default the recipe is the one real sites use (README, "Flower deployment"): TLS with a CA
made by ``openssl`` (the SuperLink's certificate for 127.0.0.1 signed by it; every SuperNode
and the ``flwr`` CLI trust it), SuperNode authentication (an ECDSA key pair per centre made by
``ssh-keygen``, the public keys registered with ``flwr supernode register`` before the nodes
connect, the SuperLink started with ``--enable-supernode-auth``), the SuperLink with
``--disable-runtime-dependency-installation`` and in-memory state (issue 30, B.4: SQLite state
lost replies under 10 SuperNodes). ``secure=False`` runs ``--insecure`` (127.0.0.1 only).
Every process is started in its own session and its whole process group is killed at the end,
whatever happened; each wait is bounded. Logs are left in the work folder, and a failed run
raises with the ServerApp's error (a centre's own error message included) and the end of every
SuperNode's log. Flower's own executables are taken from this interpreter's environment.

    python -m fedclust.flower.localhost WORKDIR --stage dec --params params.json CENTRE_DIR...
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

APP_DIR = Path(__file__).resolve().parents[3] / "deploy" / "flower"
HOST = "127.0.0.1"
CONNECTION = "local"


class RunFailed(RuntimeError):
    """A deployed run failed: the ServerApp's error and the SuperNodes' logs."""


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


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise FileNotFoundError(f"{name} is needed for the secure recipe (or run secure=False)")
    return path


def _log_tail(path: Path, lines: int = 15) -> str:
    if not path.exists():
        return ""
    tail = path.read_text(errors="replace").splitlines()[-lines:]
    return f"\n--- {path} (last {len(tail)} lines) ---\n" + "\n".join(tail)


def make_certificates(folder: Path) -> dict[str, Path]:
    """A CA and the SuperLink's certificate for 127.0.0.1 / localhost, with the openssl
    commands of the README (keys stay in ``folder``)."""
    folder.mkdir(parents=True, exist_ok=True)
    ssl = _tool("openssl")
    (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    cmds = [
        [ssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-keyout", "ca.key", "-out", "ca.crt", "-subj", "/CN=fedclust test CA"],
        [ssl, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key",
         "-out", "server.csr", "-subj", "/CN=localhost"],
        [ssl, "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
         "-CAcreateserial", "-days", "2", "-out", "server.pem", "-extfile", "san.ext"],
    ]  # fmt: skip
    for cmd in cmds:
        subprocess.run(cmd, cwd=folder, check=True, capture_output=True)
    return {k: folder / f for k, f in
            (("ca", "ca.crt"), ("cert", "server.pem"), ("key", "server.key"))}  # fmt: skip


def make_node_key(folder: Path, name: str) -> Path:
    """An ECDSA P-384 key pair in OpenSSH format (``<name>``, ``<name>.pub``) for SuperNode
    authentication; returns the private key's path."""
    folder.mkdir(parents=True, exist_ok=True)
    key = folder / name
    for p in (key, key.with_suffix(".pub")):
        p.unlink(missing_ok=True)
    subprocess.run([_tool("ssh-keygen"), "-t", "ecdsa", "-b", "384", "-N", "", "-q",
                    "-C", name, "-f", str(key)], check=True, capture_output=True)  # fmt: skip
    return key


def make_trusted_entities(folder: Path, key_id: str = "fpk_fedclust_reviewer") -> Path:
    """A ``--trusted-entities`` file trusting one Ed25519 signing key (``ssh-keygen``): a
    SuperNode started with it runs only app bundles signed by that key. Flower 1.40 attaches
    signatures to a bundle only when it comes from Flower Hub (``flwr app review`` signs it
    there); a bundle sent by ``flwr run`` from a folder is unsigned and refused."""
    folder.mkdir(parents=True, exist_ok=True)
    key = folder / "reviewer_ed25519"
    for p in (key, key.with_suffix(".pub")):
        p.unlink(missing_ok=True)
    subprocess.run([_tool("ssh-keygen"), "-t", "ed25519", "-N", "", "-q", "-C", key_id,
                    "-f", str(key)], check=True, capture_output=True)  # fmt: skip
    pub = key.with_suffix(".pub").read_text().strip()
    out = folder / "trusted_entities.yaml"
    out.write_text(f"{key_id}: {_toml_string(pub)}\n")
    return out


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string literal is a TOML basic string


_LIVE: list[LocalFederation] = []


def _close_live() -> None:
    for fed in list(_LIVE):
        with contextlib.suppress(Exception):
            fed.close()


def _on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM (a cancelled SLURM job, a killed test run): stop every SuperLink / SuperNode this
    process started — they run in sessions of their own, so the signal never reaches them —
    then die of the signal as before."""
    _close_live()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _clean_up_on_exit(fed: LocalFederation) -> None:
    """Register ``fed`` so that its processes are stopped at interpreter exit and on SIGTERM
    (installed only where SIGTERM still has its default action, in the main thread)."""
    if fed in _LIVE:
        return
    if not _LIVE:
        atexit.register(_close_live)
        if threading.current_thread() is threading.main_thread() and (
            signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        ):
            signal.signal(signal.SIGTERM, _on_sigterm)
    _LIVE.append(fed)


class LocalFederation:
    """A SuperLink and one SuperNode per centre folder on 127.0.0.1 (use as a context manager).

    ``centre_dirs``: one folder per centre (``fedclust.deployment.write_centres``); SuperNode i
    gets only folder i (``--node-config centre-dir=...``). ``secure``: TLS + SuperNode
    authentication (default), else ``--insecure``. ``node_args``: extra flower-supernode
    arguments per node (e.g. ``--trusted-entities``). ``database``: SQLite state at that path
    instead of the recipe's in-memory state (to compare, issue 30 B.4). ``poll_s``: run the
    SuperNodes through :mod:`fedclust.flower.supernode`, Flower's own entry point with its idle
    poll of 3 s capped at ``poll_s`` seconds (None: the stock ``flower-supernode``).
    """

    def __init__(
        self, workdir: str | os.PathLike, centre_dirs: Sequence[str | os.PathLike], *,
        secure: bool = True, app_dir: str | os.PathLike = APP_DIR, timeout: float = 180.0,
        node_args: Mapping[int, Sequence[str]] | None = None, database: str | None = None,
        poll_s: float | None = None,
    ) -> None:  # fmt: skip
        self.work = Path(workdir).resolve()
        self.centre_dirs = [Path(d).resolve() for d in centre_dirs]
        self.secure, self.app_dir, self.timeout = secure, Path(app_dir), float(timeout)
        self.node_args = dict(node_args or {})
        self.database = database  # None: in-memory state (the recipe); a path: SQLite
        self.poll_s = poll_s
        self.procs: dict[str, subprocess.Popen] = {}
        self.runs = 0
        self.certs: dict[str, Path] = {}
        bindir = str(Path(sys.executable).parent)
        self.env = {**os.environ, "FLWR_HOME": str(self.work / "home"),
                    "PATH": os.pathsep.join([bindir, os.environ.get("PATH", "")]),
                    "FLWR_TELEMETRY_ENABLED": "0",
                    # the SuperExec asks its SuperNode for new work every 1 s by default
                    "FLWR_SUPEREXEC_TASK_POLL_INTERVAL": "0.1"}  # fmt: skip
        if poll_s is not None:
            from .supernode import ENV

            self.env[ENV] = str(float(poll_s))

    # -- processes
    def _start(self, name: str, args: list[str]) -> subprocess.Popen:
        _clean_up_on_exit(self)
        log = open(self.work / f"{name}.log", "ab")
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                start_new_session=True)  # fmt: skip
        log.close()
        self.procs[name] = proc
        return proc

    def _stop(self, name: str, sig: int = signal.SIGTERM) -> None:
        proc = self.procs.get(name)
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def close(self) -> None:
        for name in reversed(list(self.procs)):
            self._stop(name)
        if self in _LIVE:
            _LIVE.remove(self)

    def __enter__(self) -> LocalFederation:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _flwr(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
        return subprocess.run([_bin("flwr"), *args], env=self.env, capture_output=True,
                              text=True, timeout=timeout)  # fmt: skip

    def _wait_port(self, port: int, proc: subprocess.Popen, name: str) -> None:
        t0 = time.monotonic()
        while True:
            with socket.socket() as s:
                if s.connect_ex((HOST, port)) == 0:
                    return
            if proc.poll() is not None:
                raise RunFailed(f"{name} exited with {proc.returncode}"
                                f"{_log_tail(self.work / f'{name}.log')}")  # fmt: skip
            if time.monotonic() - t0 > self.timeout:
                raise TimeoutError(f"nothing listens on {HOST}:{port} after {self.timeout:.0f}s")
            time.sleep(0.2)

    def start(self) -> None:
        (self.work / "home").mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        conn = f'[superlink]\ndefault = "{CONNECTION}"\n\n[superlink.{CONNECTION}]\n'
        conn += f'address = "{HOST}:{self.port}"\n'
        # in-memory state (no --database): SQLite state lost replies under 10 SuperNodes
        link = [_bin("flower-superlink"), "--host", HOST, "--port", str(self.port),
                "--disable-runtime-dependency-installation"]  # fmt: skip
        if self.database:
            link += ["--database", str(self.database)]
        if self.secure:
            self.certs = make_certificates(self.work / "certs")
            link += ["--ssl-ca-certfile", str(self.certs["ca"]), "--ssl-certfile",
                     str(self.certs["cert"]), "--ssl-keyfile", str(self.certs["key"]),
                     "--enable-supernode-auth"]  # fmt: skip
            conn += f"root-certificates = {_toml_string(str(self.certs['ca']))}\n"
        else:
            link.append("--insecure")
            conn += "insecure = true\n"
        (self.work / "home" / "config.toml").write_text(conn)
        self._wait_port(self.port, self._start("superlink", link), "superlink")
        for i, d in enumerate(self.centre_dirs):
            self.add_node(i, d)

    def add_node(self, i: int, centre_dir: Path, extra: Sequence[str] = ()) -> None:
        """Start SuperNode ``i`` for ``centre_dir`` (registering its key first when secure)."""
        exe = ([sys.executable, "-m", "fedclust.flower.supernode"] if self.poll_s is not None
               else [_bin("flower-supernode")])  # fmt: skip
        args = [*exe, "--superlink", f"{HOST}:{self.port}", "--host", HOST,
                "--port", str(free_port()),
                "--node-config", f"centre-dir={_toml_string(str(centre_dir))}"]  # fmt: skip
        if self.secure:
            key = make_node_key(self.work / "keys", f"supernode_{i}")
            reg = self._flwr("supernode", "register", str(key.with_suffix(".pub")), CONNECTION,
                             "--name", f"supernode_{i}")  # fmt: skip
            if reg.returncode != 0:
                raise RunFailed(f"flwr supernode register failed: {reg.stdout}{reg.stderr}")
            args += ["--root-certificates", str(self.certs["ca"]),
                     "--auth-supernode-private-key", str(key)]  # fmt: skip
        else:
            args.append("--insecure")
        args += [*self.node_args.get(i, ()), *extra]
        self._start(f"supernode_{i}", args)

    def kill(self, i: int, sig: int = signal.SIGKILL) -> None:
        """Stop SuperNode ``i`` (and its SuperExec) as a crash would (``SIGKILL``)."""
        self._stop(f"supernode_{i}", sig)

    # -- runs
    def node_logs(self) -> str:
        return "".join(_log_tail(self.work / f"{n}.log") for n in self.procs if n != "superlink")

    def run(
        self, stage: str, params: Mapping[str, Any], *, centres: int | None = None,
        timeout: float | None = None, on_progress: Callable[[list[dict]], None] | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        """``flwr run`` of ``stage`` with ``params``; wait for it and return its outputs
        (:func:`fedclust.deployment.read_outputs`). ``on_progress(rows)``: called with the
        ledger rows so far whenever new ones arrived (the test kills a node from it)."""
        from fedclust.deployment import read_outputs

        self.runs += 1
        out = self.work / "runs" / f"{self.runs:02d}_{stage}"
        out.mkdir(parents=True, exist_ok=True)
        cfg = {"stage": stage, "params": json.dumps(dict(params), sort_keys=True),
               "centres": int(centres or len(self.centre_dirs)), "out-dir": str(out)}  # fmt: skip
        overrides = out / "run_config.toml"
        overrides.write_text("".join(
            f"{k} = {_toml_string(v) if isinstance(v, str) else v}\n" for k, v in cfg.items()
        ))  # fmt: skip
        t0 = time.monotonic()
        res = self._flwr("run", str(self.app_dir), CONNECTION, "--run-config", str(overrides),
                         "--format", "json", timeout=self.timeout)  # fmt: skip
        (out / "flwr_run.log").write_text(res.stdout + res.stderr)
        if res.returncode != 0:
            raise RunFailed(f"flwr run failed ({res.returncode}): {res.stdout}{res.stderr}")
        limit = self.timeout if timeout is None else float(timeout)
        seen = 0
        while True:
            if (out / "done.json").exists():
                break
            if (out / "error.json").exists():
                err = json.loads((out / "error.json").read_text())
                raise RunFailed(f"stage {stage!r} failed: {err['error']}{self.node_logs()}")
            if self.procs["superlink"].poll() is not None:
                raise RunFailed(f"the SuperLink exited{_log_tail(self.work / 'superlink.log')}")
            if on_progress is not None and (out / "progress.jsonl").exists():
                rows = [json.loads(r) for r in
                        (out / "progress.jsonl").read_text().splitlines() if r.strip()]  # fmt: skip
                if len(rows) > seen:
                    seen = len(rows)
                    on_progress(rows)
            if time.monotonic() - t0 > limit:
                raise TimeoutError(
                    f"stage {stage!r}: no result after {limit:.0f}s "
                    f"(flwr run: {res.stdout.strip()}){self.node_logs()}"
                )
            time.sleep(0.2)
        (out / "wall_s").write_text(f"{time.monotonic() - t0:.2f}\n")
        return {**read_outputs(out), "done": json.loads((out / "done.json").read_text()),
                "wall_s": time.monotonic() - t0}  # fmt: skip


@contextlib.contextmanager
def local_federation(workdir: str | os.PathLike, centre_dirs: Sequence[str | os.PathLike],
                     **kw: Any) -> Iterator[LocalFederation]:  # fmt: skip
    with LocalFederation(workdir, centre_dirs, **kw) as fed:
        yield fed


def _checked_args(a: argparse.Namespace) -> dict[str, Any]:
    """What ``fedclust deploy`` can check before it starts a process (issue 30 C): the
    parameters file is a JSON object, the timeout > 0, every centre folder holds the stage's
    file and is given once, the work folder is a folder. Returns the parameters."""
    import math

    from fedclust.deployment import centre_file, get
    from fedclust.errors import ConfigError

    path = Path(a.params).expanduser()
    fix = 'a JSON object of the stage\'s parameters, e.g. {"km_grid": {"step": 0.5, "max": 10}}'
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        why = "does not exist" if isinstance(err, FileNotFoundError) else f"cannot be read ({err})"
        raise ConfigError(f"the parameters file {why}", where=f"--params {a.params}",
                          fix=fix) from None  # fmt: skip
    try:
        params = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"the parameters file is not JSON ({err})", where=f"--params {a.params}",
                          fix=fix) from None  # fmt: skip
    if not isinstance(params, dict):
        raise ConfigError(f"the parameters file holds a {type(params).__name__}, not an object",
                          where=f"--params {a.params}", fix=fix)  # fmt: skip
    if not (math.isfinite(a.timeout) and a.timeout > 0):
        raise ConfigError(f"--timeout {a.timeout} is not a positive number of seconds",
                          where="--timeout", fix="e.g. --timeout 600")  # fmt: skip
    stage, seen = get(a.stage), {}
    for d in a.centre_dirs:
        centre_file(stage, d)  # InputDataError naming the folder and the file
        real = Path(d).expanduser().resolve()
        if real in seen:
            raise ConfigError(
                f"centre folder {d} is given twice (as {seen[real]}): two SuperNodes would "
                "answer for the same centre and count its patients twice",
                where="fedclust deploy CENTRE_DIR...", fix="give each centre's folder once",
            )  # fmt: skip
        seen[real] = d
    work = Path(a.workdir).expanduser()
    if work.exists() and not work.is_dir():
        raise ConfigError(f"the work folder {a.workdir} is a file", where="fedclust deploy WORKDIR",
                          fix="name a folder (created when missing)")  # fmt: skip
    return params


def main(argv: Sequence[str] | None = None) -> None:
    from fedclust.deployment import MODULES

    ap = argparse.ArgumentParser(
        prog="fedclust deploy",
        description="Run a federated stage on a Flower deployment on 127.0.0.1: a SuperLink "
        "(TLS, SuperNode authentication, in-memory state) and one SuperNode per centre folder; "
        "prints the run's summary, leaves its outputs and logs in WORKDIR/runs.",
        epilog=f"stages: {', '.join(sorted(MODULES))}; a centre folder holds <stage>.npz "
        "(fedclust.deployment.write_centres)",
    )
    ap.add_argument("workdir")
    ap.add_argument("centre_dirs", nargs="+", help="one folder per centre")
    ap.add_argument("--stage", required=True, choices=sorted(MODULES))
    ap.add_argument("--params", required=True, help="the stage's parameters (a JSON file)")
    ap.add_argument("--insecure", action="store_true", help="no TLS, no SuperNode auth")
    ap.add_argument("--timeout", type=float, default=600.0)
    a = ap.parse_args(argv)
    params = _checked_args(a)
    with LocalFederation(a.workdir, a.centre_dirs, secure=not a.insecure,
                         timeout=a.timeout) as fed:  # fmt: skip
        done = fed.run(a.stage, params)
    print(json.dumps({**done["done"], "wall_s": round(done["wall_s"], 1),
                      "outputs": str(Path(a.workdir) / "runs")}))  # fmt: skip


if __name__ == "__main__":  # `python -m fedclust.flower.localhost`: as `fedclust deploy`
    from fedclust.cli import main as cli_main

    sys.exit(cli_main(["deploy", "--", *sys.argv[1:]]))
