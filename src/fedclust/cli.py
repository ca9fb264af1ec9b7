"""``fedclust`` command line: a thin front end to the Snakemake workflow.

fedclust [--workflow DIR] run [--config FILE] [--cores N] [--profile DIR] [-- extra args]
fedclust check-config FILE
fedclust [--workflow DIR] where
fedclust deploy WORKDIR CENTRE_DIR... --stage NAME --params FILE [--insecure]

The workflow folder (``Snakefile`` + ``config/``) is ``--workflow``, else the working directory
or one of its parents, else this checkout (editable install). A non-editable install (``pip
install .``) ships the schema as package data, so ``check-config`` works anywhere.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from . import deployrun
from .config import SCHEMA, load_config_file, validate_config
from .errors import ConfigError, FedclustError

CHECKOUT = Path(__file__).resolve().parents[2]  # the repository, for an editable install


def is_workflow(path: Path) -> bool:
    return (path / "Snakefile").is_file() and (path / "config" / "schema.yaml").is_file()


def find_workflow(flag: str | None = None, cwd: str | os.PathLike | None = None) -> Path:
    """The workflow folder: ``flag``, else ``cwd`` or a parent, else this checkout."""
    if flag:
        path = Path(flag).expanduser().resolve()
        if not is_workflow(path):
            raise ConfigError(
                "--workflow does not point to a fedclust workflow (Snakefile + config/schema.yaml)",
                where=str(path),
                fix="pass the folder of the fedclust repository",
            )
        return path
    here = Path(cwd or os.getcwd()).resolve()
    for cand in (here, *here.parents, CHECKOUT):
        if is_workflow(cand):
            return cand
    raise ConfigError(
        "no fedclust workflow found (a folder with Snakefile and config/schema.yaml)",
        where=str(here),
        fix="run fedclust inside a clone of the fedclust repository, or pass --workflow DIR",
    )


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fedclust",
        description="Federated clustering and learning on sensitive biomedical data: run the "
        "workflow, check a config. The workflow itself is `snakemake` in the repository root; "
        "this command only saves typing.",
        epilog="Examples: `fedclust run --cores 2` (default offline config); "
        "`fedclust run --config config/thesis.yaml --profile profiles/slurm`; "
        "`fedclust check-config my.yaml`. Offline data mirror: set FEDCLUST_DATA_MIRROR.",
    )
    p.add_argument(
        "--workflow",
        help="the fedclust workflow folder (default: the working directory or a parent)",
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="run the workflow (snakemake) with a config")
    run.add_argument(
        "--config",
        default=None,
        help="config file (default: <workflow>/config/config.yaml, offline)",
    )
    run.add_argument("--cores", default="all", help="cores for local runs (default: all)")
    run.add_argument("--profile", help="snakemake profile, e.g. profiles/slurm")
    run.add_argument("--dry-run", "-n", action="store_true", help="only show what would run")
    run.add_argument("extra", nargs=argparse.REMAINDER, help="extra snakemake arguments after --")
    chk = sub.add_parser("check-config", help="validate a config file against config/schema.yaml")
    chk.add_argument("file")
    sub.add_parser("where", help="print the workflow directory")
    dep = sub.add_parser(
        "deploy",
        help="run a federated stage on a Flower deployment on this machine (a SuperLink and "
        "one SuperNode per centre folder, TLS and SuperNode authentication; README, 'Flower "
        "deployment'); arguments: see `fedclust deploy -- --help`",
    )
    dep.add_argument("args", nargs=argparse.REMAINDER)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.cmd == "deploy":
        from .flower.localhost import RunFailed
        from .flower.localhost import main as deploy

        try:
            deploy([a for a in args.args if a != "--"])
        except (FedclustError, RunFailed, TimeoutError) as err:
            print(f"fedclust: {err}", file=sys.stderr)
            return 2
        return 0
    try:
        if args.cmd == "check-config":
            schema = SCHEMA
            if args.workflow:
                schema = find_workflow(args.workflow) / "config" / "schema.yaml"
            cfg = validate_config(load_config_file(args.file), schema, source=args.file)
            deployrun.check(cfg)  # an enabled deployment's stages and units (issue 30 B.1)
            print(f"{args.file}: valid")
            return 0
        repo = find_workflow(args.workflow)
        if args.cmd == "where":
            print(repo)
            return 0
        config = args.config or str(repo / "config" / "config.yaml")
        cfg = validate_config(load_config_file(config), repo / "config" / "schema.yaml",
                              source=config)  # fmt: skip
        deployrun.check(cfg)
    except FedclustError as err:
        print(f"fedclust: {err}", file=sys.stderr)
        return 2
    # this environment's Snakemake (works outside an activated venv; issue 30 item 9)
    cmd = [sys.executable, "-m", "snakemake", "-s", str(repo / "Snakefile"), "--configfile", config]
    cmd += ["--profile", args.profile] if args.profile else ["--cores", str(args.cores)]
    if args.dry_run:
        cmd.append("-n")
    cmd += [a for a in args.extra if a != "--"]
    print("+", " ".join(cmd), file=sys.stderr)
    return subprocess.call(cmd, cwd=os.getcwd())


if __name__ == "__main__":
    sys.exit(main())
