"""``fedclust`` command line: a thin front end to the Snakemake workflow.

fedclust run [--config FILE] [--cores N] [--profile DIR] [-- extra snakemake args]
fedclust check-config FILE
fedclust where
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from .config import load_yaml, validate_config
from .errors import FedclustError

REPO = Path(__file__).resolve().parents[2]


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
    sub = p.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="run the workflow (snakemake) with a config")
    run.add_argument(
        "--config",
        default=str(REPO / "config" / "config.yaml"),
        help="config file (default: config/config.yaml, offline)",
    )
    run.add_argument("--cores", default="all", help="cores for local runs (default: all)")
    run.add_argument("--profile", help="snakemake profile, e.g. profiles/slurm")
    run.add_argument("--dry-run", "-n", action="store_true", help="only show what would run")
    run.add_argument("extra", nargs=argparse.REMAINDER, help="extra snakemake arguments after --")
    chk = sub.add_parser("check-config", help="validate a config file against config/schema.yaml")
    chk.add_argument("file")
    sub.add_parser("where", help="print the workflow directory")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.cmd == "check-config":
            validate_config(load_yaml(args.file), REPO / "config" / "schema.yaml", source=args.file)
            print(f"{args.file}: valid")
            return 0
        if args.cmd == "where":
            print(REPO)
            return 0
        validate_config(load_yaml(args.config), REPO / "config" / "schema.yaml", source=args.config)
    except FedclustError as err:
        print(f"fedclust: {err}", file=sys.stderr)
        return 2
    cmd = ["snakemake", "-s", str(REPO / "Snakefile"), "--configfile", args.config]
    cmd += ["--profile", args.profile] if args.profile else ["--cores", str(args.cores)]
    if args.dry_run:
        cmd.append("-n")
    cmd += [a for a in args.extra if a != "--"]
    print("+", " ".join(cmd), file=sys.stderr)
    return subprocess.call(cmd, cwd=os.getcwd())


if __name__ == "__main__":
    sys.exit(main())
