"""Shared boilerplate for rule scripts: logging to the rule's log file, friendly errors."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # this checkout's library
# the one place the matplotlib backend is set: every rule script imports this module first
os.environ.setdefault("MPLBACKEND", "Agg")

from fedclust.errors import FedclustError


def run(main: Callable[[], None], snakemake) -> None:
    """Run ``main`` with logging to ``snakemake.log[0]`` (and stderr).

    A :class:`FedclustError` ends the job with its message (what, where, fix) and no traceback.
    """
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if snakemake.log:
        Path(snakemake.log[0]).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(snakemake.log[0], mode="w"))
    logging.basicConfig(
        level=logging.INFO,
        handlers=handlers,
        force=True,
        format=f"%(asctime)s [{snakemake.rule}] %(message)s",
    )
    try:
        from fedclust.federation import privacy
        from fedclust.federation.disclosure import configure

        config = getattr(snakemake, "config", None) or {}
        configure(config.get("disclosure"))
        # secure aggregation / DP of the rule's stage (federation.privacy; off by default)
        privacy.configure(config, privacy.stage_of_rule(str(snakemake.rule), list(config)))
        main()
    except FedclustError as err:
        logging.error("%s", err)
        sys.exit(1)


def files(namedlist) -> dict[str, str | list[str]]:
    """A rule's named ``input``/``output`` as a plain dict (a list for a named list of files), for
    the library's section builders, which look files up by name."""
    return {k: str(v) if isinstance(v, str) else [str(x) for x in v] for k, v in namedlist.items()}
